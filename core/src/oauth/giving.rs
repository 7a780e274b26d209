//! What a person may hand over to a client at the consent step: never more than they could
//! give otherwise. Owners mint agent keys, so they may give any grant the workspace's policy
//! does not forbid, and every mode. Members cannot mint keys; what they may give is what their
//! own session can already do: the capabilities without side effects and the route grants
//! (each of those routes admits a member's session), in `dry_run` and `execute` (for
//! side-effect-free capabilities `execute` only reads).

use crate::auth::user::Role;
use crate::capabilities::{Capability, Mode, SideEffect};
use crate::keys::RouteGrant;
use crate::workspaces::Policy;

/// The grants and modes a person may hand over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Giveable {
    /// `capability:<id>` grants, then route grants, in table order.
    pub grants: Vec<String>,
    pub modes: Vec<Mode>,
}

impl Giveable {
    /// The grants and modes of a person of `role` in a workspace with `policy`.
    pub fn of(role: Role, policy: &Policy) -> Giveable {
        let capability = |c: &Capability| match role {
            Role::Owner => !policy.forbid.iter().any(|f| f == c.id()),
            Role::Member => {
                c.side_effect() == SideEffect::None && !policy.forbid.iter().any(|f| f == c.id())
            }
        };
        let grants = Capability::ALL
            .iter()
            .filter(|c| capability(c))
            .map(|c| format!("capability:{}", c.id()))
            .chain(RouteGrant::ALL.iter().map(|g| g.as_str().to_owned()))
            .collect();
        let modes = match role {
            Role::Owner => Mode::ALL.to_vec(),
            Role::Member => vec![Mode::DryRun, Mode::Execute],
        };
        Giveable { grants, modes }
    }

    /// The first of `grants` this person may not give.
    pub fn first_not_giveable<'a>(&self, grants: &'a [String]) -> Option<&'a str> {
        grants
            .iter()
            .find(|g| !self.grants.contains(g))
            .map(String::as_str)
    }

    /// The first of `modes` this person may not give (unknown names included).
    pub fn first_mode_not_giveable<'a>(&self, modes: &'a [String]) -> Option<&'a str> {
        modes
            .iter()
            .find(|m| Mode::parse(m).is_none_or(|m| !self.modes.contains(&m)))
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_give_less_than_owners() {
        let policy = Policy::default();
        let owner = Giveable::of(Role::Owner, &policy);
        let member = Giveable::of(Role::Member, &policy);
        assert!(owner.grants.contains(&"capability:crm.mutate".to_owned()));
        assert!(!member.grants.contains(&"capability:crm.mutate".to_owned()));
        assert!(member.grants.contains(&"capability:context.get".to_owned()));
        assert!(member.grants.contains(&"customers:read".to_owned()));
        assert!(member.grants.iter().all(|g| owner.grants.contains(g)));
        assert_eq!(
            member.first_mode_not_giveable(&["dry_run".into(), "queue".into()]),
            Some("queue")
        );
        assert_eq!(
            owner.first_mode_not_giveable(&["yolo".into()]),
            Some("yolo")
        );
    }

    #[test]
    fn forbidden_capabilities_are_not_giveable() {
        let policy = Policy {
            forbid: vec!["context.get".into()],
            ..Policy::default()
        };
        let owner = Giveable::of(Role::Owner, &policy);
        let asked = ["capability:context.get".to_owned()];
        assert_eq!(
            owner.first_not_giveable(&asked),
            Some("capability:context.get")
        );
    }
}
