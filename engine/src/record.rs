//! Typed domain records (users, workspaces, keys, ledger rows, ...) kept in the same database
//! as the graph, so a record and graph changes can commit in one atomic batch.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// A record type. Records are stored as JSON under (workspace, KIND, id); `indexes` names the
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

use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys;
use crate::model::WorkspaceId;
use crate::store::KvRead;

pub(crate) fn decode_record<T: Record>(bytes: &[u8]) -> Result<T, EngineError> {
    serde_json::from_slice(bytes)
        .map_err(|e| EngineError::Record(format!("{} record: {e}", T::KIND)))
}

pub(crate) fn encode_record<T: Record>(record: &T) -> Result<Vec<u8>, EngineError> {
    serde_json::to_vec(record).map_err(|e| EngineError::Record(format!("{} record: {e}", T::KIND)))
}

pub(crate) fn get_record<T: Record>(
    kv: &dyn KvRead,
    ws: WorkspaceId,
    id: &str,
) -> Result<Option<T>, EngineError> {
    kv.get(Cf::Records, &keys::record_key(ws, T::KIND, id))?
        .map(|b| decode_record(&b))
        .transpose()
}

/// Ids of the records of kind `T` whose index `index` holds `value`.
pub(crate) fn find_record_ids<T: Record>(
    kv: &dyn KvRead,
    ws: WorkspaceId,
    index: &str,
    value: &str,
) -> Result<Vec<String>, EngineError> {
    let prefix = keys::record_index_prefix(ws, T::KIND, index, value);
    let end = keys::prefix_end(&prefix);
    let mut ids = Vec::new();
    kv.scan(
        Cf::RecordIndex,
        &prefix,
        end.as_deref(),
        false,
        &mut |k, _| {
            if let Some(id) = keys::record_index_id(k, prefix.len()) {
                ids.push(id);
            }
            true
        },
    )?;
    Ok(ids)
}

pub(crate) fn find_records<T: Record>(
    kv: &dyn KvRead,
    ws: WorkspaceId,
    index: &str,
    value: &str,
) -> Result<Vec<T>, EngineError> {
    let mut out = Vec::new();
    for id in find_record_ids::<T>(kv, ws, index, value)? {
        match get_record::<T>(kv, ws, &id)? {
            Some(r) => out.push(r),
            None => {
                return Err(EngineError::Corrupt {
                    context: "record index",
                    detail: format!("{} index {index} names missing record {id}", T::KIND),
                })
            }
        }
    }
    Ok(out)
}

pub(crate) fn scan_records<T: Record>(
    kv: &dyn KvRead,
    ws: WorkspaceId,
    scan: &RecordScan,
) -> Result<Vec<T>, EngineError> {
    let kind_prefix = keys::record_prefix(ws, T::KIND);
    let mut prefix = kind_prefix.clone();
    prefix.extend_from_slice(scan.prefix.as_bytes());
    let mut lower = prefix.clone();
    let mut upper = keys::prefix_end(&prefix);
    if let Some(after) = &scan.after {
        let after_key = keys::record_key(ws, T::KIND, after);
        if scan.reverse {
            if upper.as_ref().is_none_or(|u| after_key < *u) {
                upper = Some(after_key);
            }
        } else {
            let mut next = after_key;
            next.push(0);
            if next > lower {
                lower = next;
            }
        }
    }
    let limit = scan.limit.unwrap_or(usize::MAX);
    let mut out = Vec::new();
    let mut failure = None;
    if limit == 0 {
        return Ok(out);
    }
    kv.scan(
        Cf::Records,
        &lower,
        upper.as_deref(),
        scan.reverse,
        &mut |_, v| match decode_record::<T>(v) {
            Ok(r) => {
                out.push(r);
                out.len() < limit
            }
            Err(e) => {
                failure = Some(e);
                false
            }
        },
    )?;
    match failure {
        Some(e) => Err(e),
        None => Ok(out),
    }
}
