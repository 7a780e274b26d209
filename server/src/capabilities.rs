//! The capability table's keys: every capability id of SPEC.md as one enum, the only place the
//! ids are spelled. The gateway's registry maps each [`Capability`] to its contract and
//! executor; everything else (keys, workspace policy, MCP, tests) iterates [`Capability::ALL`].

/// One capability of the gateway (SPEC.md, "What the service does" 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    ContextGet,
    AccountGet,
    EventsIngest,
    MemoryWrite,
    ScoreChurn,
    ScoreConversion,
    PlanGoal,
    DraftOutreach,
    QueueOutreach,
    ExecuteOutreach,
    QueueCall,
    ExecuteCall,
    CrmMutate,
    CioWrite,
    ReportGenerate,
}

impl Capability {
    /// Every capability, in SPEC.md's order (the order of the catalogue).
    pub const ALL: [Capability; 15] = [
        Capability::ContextGet,
        Capability::AccountGet,
        Capability::EventsIngest,
        Capability::MemoryWrite,
        Capability::ScoreChurn,
        Capability::ScoreConversion,
        Capability::PlanGoal,
        Capability::DraftOutreach,
        Capability::QueueOutreach,
        Capability::ExecuteOutreach,
        Capability::QueueCall,
        Capability::ExecuteCall,
        Capability::CrmMutate,
        Capability::CioWrite,
        Capability::ReportGenerate,
    ];

    /// The stable wire id.
    pub const fn id(self) -> &'static str {
        match self {
            Capability::ContextGet => "context.get",
            Capability::AccountGet => "account.get",
            Capability::EventsIngest => "events.ingest",
            Capability::MemoryWrite => "memory.write",
            Capability::ScoreChurn => "score.churn",
            Capability::ScoreConversion => "score.conversion",
            Capability::PlanGoal => "plan.goal",
            Capability::DraftOutreach => "draft.outreach",
            Capability::QueueOutreach => "queue.outreach",
            Capability::ExecuteOutreach => "execute.outreach",
            Capability::QueueCall => "queue.call",
            Capability::ExecuteCall => "execute.call",
            Capability::CrmMutate => "crm.mutate",
            Capability::CioWrite => "cio.write",
            Capability::ReportGenerate => "report.generate",
        }
    }

    pub fn parse(id: &str) -> Option<Capability> {
        Capability::ALL.into_iter().find(|c| c.id() == id)
    }
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// The fifteen capability ids, in catalogue order.
pub fn ids() -> impl Iterator<Item = &'static str> {
    Capability::ALL.into_iter().map(Capability::id)
}

pub fn is_known(id: &str) -> bool {
    Capability::parse(id).is_some()
}

/// The grant a key needs to call a capability: `capability:<id>`.
pub fn grant_for(id: &str) -> String {
    format!("capability:{id}")
}

/// The capability id a grant names, when it is a well-formed grant of a known capability.
pub fn capability_of_grant(grant: &str) -> Option<&'static str> {
    Capability::parse(grant.strip_prefix("capability:")?).map(Capability::id)
}

/// How an invocation runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    DryRun,
    Queue,
    Execute,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::DryRun, Mode::Queue, Mode::Execute];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::DryRun => "dry_run",
            Mode::Queue => "queue",
            Mode::Execute => "execute",
        }
    }

    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// Legacy scopes have the form `v1:<area>:<verb>` with lower-case words.
pub fn is_legacy_scope(scope: &str) -> bool {
    let mut parts = scope.split(':');
    let word = |p: Option<&str>| {
        p.is_some_and(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
    };
    parts.next() == Some("v1") && word(parts.next()) && word(parts.next()) && parts.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_round_trip_for_every_capability() {
        for c in Capability::ALL {
            assert_eq!(capability_of_grant(&grant_for(c.id())), Some(c.id()));
            assert_eq!(Capability::parse(c.id()), Some(c));
        }
        let first = Capability::ALL[0].id();
        assert_eq!(capability_of_grant("capability:nope"), None);
        assert_eq!(capability_of_grant(first), None);
    }

    #[test]
    fn modes_parse_only_their_wire_names() {
        for m in Mode::ALL {
            assert_eq!(Mode::parse(m.as_str()), Some(m));
        }
        assert_eq!(Mode::parse("DRY_RUN"), None);
    }

    #[test]
    fn legacy_scope_shape() {
        assert!(is_legacy_scope("v1:context:read"));
        assert!(is_legacy_scope("v1:events:write"));
        assert!(!is_legacy_scope("v2:context:read"));
        assert!(!is_legacy_scope("v1:context"));
        assert!(!is_legacy_scope("v1:context:read:x"));
        assert!(!is_legacy_scope("v1:Context:read"));
    }
}
