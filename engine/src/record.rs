//! Typed domain records (users, workspaces, keys, ledger rows, ...) kept in the same database
//! as the graph, so a record and graph changes can commit in one atomic batch.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// A record type. Records are stored under (workspace, KIND, id), encoded as described in
/// `record_encoding` (postcard since format 4); `indexes` names the
/// secondary lookups (index name, value) kept exact on every put and delete.
pub trait Record: Serialize + DeserializeOwned {
    /// Stable kind name, part of every key of this record type (e.g. "user").
    const KIND: &'static str;
    /// The record's id within its workspace and kind. Ids sort bytewise in scans, so
    /// time-ordered ids give time-ordered scans.
    fn id(&self) -> String;
    /// Secondary lookups: (index name, value). Values need not be unique.
    fn indexes(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

/// Which records of a kind a scan returns, in id order.
#[derive(Clone, Debug, Default)]
pub struct RecordScan {
    /// Only ids starting with this prefix.
    pub prefix: String,
    /// Only ids strictly after this one (in scan order), for pagination.
    pub after: Option<String>,
    /// Newest-first when ids are time-ordered.
    pub reverse: bool,
    pub limit: Option<usize>,
}
