//! Reading and writing typed records (see `record`) over any key-value source.

use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys;
use crate::model::WorkspaceId;
use crate::record::{Record, RecordScan};
use crate::store::KvRead;

pub(crate) use crate::record_encoding::{decode as decode_record, encode as encode_record};

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
