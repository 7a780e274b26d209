//! The declared property indexes, in one place. Every node write keeps exactly these entries.

use crate::read::IndexKind;

/// One declared index over (label, property).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexDecl {
    pub label: &'static str,
    pub property: &'static str,
    pub kind: IndexKind,
}

const fn eq(label: &'static str, property: &'static str) -> IndexDecl {
    IndexDecl {
        label,
        property,
        kind: IndexKind::Equality,
    }
}

const fn ord(label: &'static str, property: &'static str) -> IndexDecl {
    IndexDecl {
        label,
        property,
        kind: IndexKind::Ordered,
    }
}

/// Equality indexes serve exact lookups (names, ids, the raw identity properties: the identity
/// index in `identity` holds their normalised form for resolution); ordered indexes serve range
/// scans and top-k on numbers and datetimes.
pub const INDEXES: &[IndexDecl] = &[
    eq("Customer", "email"),
    eq("Customer", "phone"),
    eq("Customer", "externalId"),
    eq("Customer", "name"),
    eq("Customer", "cio_id"),
    eq("Campaign", "campaignId"),
    eq("Campaign", "name"),
    eq("Stage", "name"),
    eq("Opportunity", "name"),
    eq("Opportunity", "opportunityId"),
    ord("Customer", "score"),
    ord("Customer", "lastSeen"),
    ord("Touchpoint", "ts"),
    ord("Opportunity", "score"),
    ord("Opportunity", "amount"),
    ord("Opportunity", "progress"),
    ord("Stage", "progress"),
];

/// The index declared for (label, property), if any.
pub fn index_for(label: &str, property: &str) -> Option<&'static IndexDecl> {
    INDEXES
        .iter()
        .find(|d| d.label == label && d.property == property)
}

/// Indexes that apply to a node carrying `labels`.
pub fn indexes_for_labels<'a>(
    labels: &'a [String],
) -> impl Iterator<Item = &'static IndexDecl> + 'a {
    INDEXES
        .iter()
        .filter(move |d| labels.iter().any(|l| l == d.label))
}

/// The label of customers, the nodes identity resolution works on.
pub const CUSTOMER: &str = "Customer";
pub const TOUCHPOINT: &str = "Touchpoint";
pub const CAMPAIGN: &str = "Campaign";
pub const HAS_TOUCHPOINT: &str = "HAS_TOUCHPOINT";
pub const INFLUENCED_BY: &str = "INFLUENCED_BY";

/// Internal label bitmap holding every node of a workspace (user labels are never empty).
#[cfg(feature = "storage")]
pub(crate) const ALL_NODES: &str = "";

/// Longest label, relationship type or property key accepted, in bytes.
pub const MAX_NAME_BYTES: usize = 255;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_are_unique() {
        for (i, a) in INDEXES.iter().enumerate() {
            assert!(INDEXES[i + 1..]
                .iter()
                .all(|b| (a.label, a.property) != (b.label, b.property)));
            assert_eq!(index_for(a.label, a.property), Some(a));
        }
        assert_eq!(index_for("Customer", "nope"), None);
    }
}
