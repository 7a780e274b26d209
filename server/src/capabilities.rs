//! The capability ids of SPEC.md and the invocation modes, as far as key validation needs them.
//! The gateway (issue 5) grows this into the full descriptor catalogue.

/// The fifteen initial capability ids (SPEC.md, "What the service does" 5).
pub const CAPABILITY_IDS: [&str; 15] = [
    "context.get",
    "account.get",
    "events.ingest",
    "memory.write",
    "score.churn",
    "score.conversion",
    "plan.goal",
    "draft.outreach",
    "queue.outreach",
    "execute.outreach",
    "queue.call",
    "execute.call",
    "crm.mutate",
    "cio.write",
    "report.generate",
];

pub fn is_known(id: &str) -> bool {
    CAPABILITY_IDS.contains(&id)
}

/// The grant a key needs to call a capability: `capability:<id>`.
pub fn grant_for(id: &str) -> String {
    format!("capability:{id}")
}

/// The capability id a grant names, when it is a well-formed grant of a known capability.
pub fn capability_of_grant(grant: &str) -> Option<&'static str> {
    let id = grant.strip_prefix("capability:")?;
    CAPABILITY_IDS.iter().copied().find(|known| *known == id)
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
        for id in CAPABILITY_IDS {
            assert_eq!(capability_of_grant(&grant_for(id)), Some(id));
        }
        assert_eq!(capability_of_grant("capability:nope"), None);
        assert_eq!(capability_of_grant("context.get"), None);
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
