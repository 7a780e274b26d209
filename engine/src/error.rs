//! The engine's one error type.

use crate::model::{EdgeId, NodeId};

#[derive(Clone, Debug, thiserror::Error)]
pub enum EngineError {
    #[error("storage error: {0}")]
    Storage(String),
    #[error("corrupt data in {context}: {detail}")]
    Corrupt {
        context: &'static str,
        detail: String,
    },
    #[error("the data directory has format version {found}, newer than this build ({supported})")]
    FormatTooNew { found: u32, supported: u32 },
    #[error("node {0} does not exist")]
    NodeNotFound(NodeId),
    #[error("edge {0} does not exist")]
    EdgeNotFound(EdgeId),
    #[error("node {0} still has relationships; use DETACH DELETE to delete it with them")]
    NodeHasEdges(NodeId),
    #[error("invalid {what}: {detail}")]
    Invalid { what: &'static str, detail: String },
    #[error("the event carries no usable identity key (email, phone, external id or a known customer id)")]
    NoIdentity,
    #[error("record encoding failed: {0}")]
    Record(String),
    #[error("the store is closed or its writer has stopped: {0}")]
    Closed(String),
    #[error("the write transaction panicked: {0}")]
    Panicked(String),
}

/// What kind of failure an [`EngineError`] is, so that callers (the server's HTTP mapping,
/// the query engine) decide by kind instead of listing variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The storage failed or holds data this build cannot read: an operator's problem, never
    /// the caller's (storage errors, corruption, a newer format, a record that does not
    /// encode or decode, a panicked write).
    Fault,
    /// The store is closed or its writer stopped (shutting down, or poisoned by a failed
    /// fsync): retry later, elsewhere.
    Unavailable,
    /// The operation does not fit the graph's current state (a node or edge that does not
    /// exist, a node that still has relationships).
    Graph,
    /// The input itself is invalid (a value, an event without an identity).
    Input,
}

impl EngineError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            EngineError::Storage(_)
            | EngineError::Corrupt { .. }
            | EngineError::FormatTooNew { .. }
            | EngineError::Record(_)
            | EngineError::Panicked(_) => ErrorKind::Fault,
            EngineError::Closed(_) => ErrorKind::Unavailable,
            EngineError::NodeNotFound(_)
            | EngineError::EdgeNotFound(_)
            | EngineError::NodeHasEdges(_) => ErrorKind::Graph,
            EngineError::Invalid { .. } | EngineError::NoIdentity => ErrorKind::Input,
        }
    }

    #[cfg(feature = "storage")]
    pub(crate) fn invalid(what: &'static str, detail: impl Into<String>) -> Self {
        EngineError::Invalid {
            what,
            detail: detail.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_its_kind() {
        let cases = [
            (EngineError::Storage("io".into()), ErrorKind::Fault),
            (
                EngineError::Corrupt {
                    context: "node",
                    detail: "short".into(),
                },
                ErrorKind::Fault,
            ),
            (
                EngineError::FormatTooNew {
                    found: 9,
                    supported: 3,
                },
                ErrorKind::Fault,
            ),
            (EngineError::Record("json".into()), ErrorKind::Fault),
            (EngineError::Panicked("boom".into()), ErrorKind::Fault),
            (
                EngineError::Closed("stopped".into()),
                ErrorKind::Unavailable,
            ),
            (EngineError::NodeNotFound(NodeId(1)), ErrorKind::Graph),
            (EngineError::EdgeNotFound(EdgeId(1)), ErrorKind::Graph),
            (EngineError::NodeHasEdges(NodeId(1)), ErrorKind::Graph),
            (
                EngineError::Invalid {
                    what: "value",
                    detail: "NaN".into(),
                },
                ErrorKind::Input,
            ),
            (EngineError::NoIdentity, ErrorKind::Input),
        ];
        for (e, kind) in cases {
            assert_eq!(e.kind(), kind, "{e}");
        }
    }
}
