//! The capability table: every capability id of SPEC.md as one enum, the only place the ids
//! are spelled, with the terms every floor may need (credit cost, side effect, approval, the
//! integration it requires). The gateway's registry adds each [`Capability`]'s contract
//! (schemas, examples) and executor; everything else (keys, workspace policy, plans, context,
//! MCP, tests) reads this table.

use serde::Serialize;

use crate::integration_kind::Kind as IntegrationKind;

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

    /// Action credits charged when queued or committed (a dry run costs nothing).
    pub const fn credit_cost(self) -> u64 {
        match self {
            Capability::ContextGet
            | Capability::AccountGet
            | Capability::EventsIngest
            | Capability::MemoryWrite
            | Capability::ScoreChurn
            | Capability::ScoreConversion => 1,
            Capability::PlanGoal
            | Capability::DraftOutreach
            | Capability::CrmMutate
            | Capability::CioWrite => 2,
            Capability::QueueOutreach => 3,
            Capability::ExecuteOutreach | Capability::QueueCall | Capability::ReportGenerate => 5,
            Capability::ExecuteCall => 10,
        }
    }

    pub const fn side_effect(self) -> SideEffect {
        match self {
            Capability::ContextGet
            | Capability::AccountGet
            | Capability::ScoreChurn
            | Capability::ScoreConversion
            | Capability::PlanGoal
            | Capability::DraftOutreach => SideEffect::None,
            Capability::EventsIngest => SideEffect::EventIngest,
            Capability::MemoryWrite => SideEffect::Memory,
            Capability::QueueOutreach | Capability::ExecuteOutreach => SideEffect::OutboundEmail,
            Capability::QueueCall | Capability::ExecuteCall => SideEffect::VoiceCall,
            Capability::CrmMutate => SideEffect::CrmMutation,
            Capability::CioWrite => SideEffect::CampaignWrite,
            Capability::ReportGenerate => SideEffect::ReportWrite,
        }
    }

    pub const fn approval(self) -> ApprovalKind {
        match self.side_effect() {
            SideEffect::None => ApprovalKind::None,
            SideEffect::Memory | SideEffect::EventIngest | SideEffect::ReportWrite => {
                ApprovalKind::Direct
            }
            _ => match self {
                Capability::QueueOutreach | Capability::QueueCall => ApprovalKind::QueueRequired,
                _ => ApprovalKind::ApprovalGated,
            },
        }
    }

    /// The integration that must be connected before this capability can queue or execute
    /// (`dry_run` works without it and shows what would be sent).
    pub const fn requires_integration(self) -> Option<IntegrationKind> {
        match self {
            Capability::QueueOutreach | Capability::ExecuteOutreach => Some(IntegrationKind::Smtp),
            Capability::QueueCall | Capability::ExecuteCall => Some(IntegrationKind::Voice),
            Capability::CioWrite => Some(IntegrationKind::Customerio),
            _ => None,
        }
    }

    /// Whether invoking it is an agent decision about a customer: a side effect other than
    /// recording an observation (events.ingest is history, not a decision).
    pub const fn is_decision(self) -> bool {
        !matches!(
            self.side_effect(),
            SideEffect::None | SideEffect::EventIngest
        )
    }
}

/// What a capability changes when it commits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SideEffect {
    None,
    Memory,
    EventIngest,
    OutboundEmail,
    VoiceCall,
    CrmMutation,
    CampaignWrite,
    ReportWrite,
}

/// How execution is gated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalKind {
    /// Read-only: nothing to approve.
    None,
    /// Low-risk writeback: commits in execute mode.
    Direct,
    /// Only ever queued for a person to approve.
    QueueRequired,
    /// Execute commits only with key auto_run, workspace policy and approval-system auto-approval.
    ApprovalGated,
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

/// The capability ids an integration unlocks (they need it connected to queue or execute).
pub fn requiring(kind: IntegrationKind) -> Vec<&'static str> {
    Capability::ALL
        .into_iter()
        .filter(|c| c.requires_integration() == Some(kind))
        .map(Capability::id)
        .collect()
}

/// Whether invoking the capability `id` is an agent decision ([`Capability::is_decision`]).
pub fn is_decision(id: &str) -> bool {
    Capability::parse(id).is_some_and(Capability::is_decision)
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
