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

impl EngineError {
    #[cfg(feature = "storage")]
    pub(crate) fn invalid(what: &'static str, detail: impl Into<String>) -> Self {
        EngineError::Invalid {
            what,
            detail: detail.into(),
        }
    }
}
