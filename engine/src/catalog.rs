//! Declared property indexes: a per-workspace catalog of (label, property) indexes that users
//! add with `CREATE INDEX` and remove with `DROP INDEX`, next to the built-in ones of `schema`.
//!
//! A catalog row lives in `Cf::Meta` under tag 0x03 (layout in docs/storage-format.md). Its
//! state moves POPULATING -> ONLINE -> (dropped: DROPPING -> gone):
//! - declaring writes the row in POPULATING; from that commit on every node write maintains
//!   the index (writes run one after another on the writer thread, so no write slips between);
//! - a builder backfills the nodes that existed before, in bounded batches, each batch one
//!   atomic write that also advances the row's cursor (resumable after a restart), and flips
//!   the row to ONLINE in the batch that finds nothing left;
//! - readers (the planner) use a declared index only when the row they see in their snapshot
//!   is ONLINE, and that commit came after every backfill batch: never a partial index;
//! - dropping flips the row to DROPPING (no longer used, no longer maintained); the builder
//!   deletes the entries in batches, then the counters and the row.

use crate::columns::Cf;
use crate::error::EngineError;
use crate::graph::Graph;
use crate::keys;
use crate::model::WorkspaceId;
use crate::read::IndexKind;
use crate::schema;
use crate::store::KvRead;

/// The tag of catalog keys in `Cf::Meta`.
pub const CATALOG_TAG: u8 = 0x03;
const ROW_VERSION: u8 = 1;

/// Where a declared index is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexState {
    /// Maintained for new writes; the backfill has reached node ids below `next`.
    Populating { next: u64 },
    /// Complete and used by the planner.
    Online,
    /// Dropped: neither used nor maintained; its entries are being deleted.
    Dropping,
}

impl IndexState {
    /// The state's name as `SHOW INDEXES` reports it.
    pub fn name(self) -> &'static str {
        match self {
            IndexState::Populating { .. } => "POPULATING",
            IndexState::Online => "ONLINE",
            IndexState::Dropping => "DROPPING",
        }
    }
}

/// One index of a workspace, built-in or declared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexInfo {
    pub name: String,
    pub label: String,
    pub property: String,
    pub kind: IndexKind,
    pub state: IndexState,
    pub built_in: bool,
}

/// A `CREATE INDEX` request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexSpec {
    /// None: `index_<label>_<property>`.
    pub name: Option<String>,
    pub label: String,
    pub property: String,
    pub kind: IndexKind,
    pub if_not_exists: bool,
}

/// What `declare_index` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Declared {
    /// A new index, now POPULATING.
    Created(String),
    /// `IF NOT EXISTS` and an index with that name or on that (label, property) exists.
    Exists(String),
}

/// Nodes backfilled (or entries deleted) per atomic batch.
pub const BUILD_BATCH: usize = 2_000;

fn built_in_name(label: &str, property: &str) -> String {
    format!("builtin_{label}_{property}")
}

pub(crate) fn catalog_prefix(ws: WorkspaceId) -> Vec<u8> {
    let mut k = vec![CATALOG_TAG];
    k.extend_from_slice(&keys::workspace_prefix(ws));
    k
}

pub(crate) fn catalog_key(ws: WorkspaceId, label: &str, property: &str) -> Vec<u8> {
    let mut k = catalog_prefix(ws);
    keys::put_str(&mut k, label);
    k.extend_from_slice(property.as_bytes());
    k
}

fn kind_byte(kind: IndexKind) -> u8 {
    match kind {
        IndexKind::Equality => 1,
        IndexKind::Ordered => 2,
    }
}

/// Row value: version, kind, state (1 populating, 2 online, 3 dropping), cursor u64, name.
pub(crate) fn encode_row(info: &IndexInfo) -> Vec<u8> {
    let (state, next) = match info.state {
        IndexState::Populating { next } => (1, next),
        IndexState::Online => (2, 0),
        IndexState::Dropping => (3, 0),
    };
    let mut v = vec![ROW_VERSION, kind_byte(info.kind), state];
    keys::put_u64(&mut v, next);
    v.extend_from_slice(info.name.as_bytes());
    v
}

fn corrupt(detail: String) -> EngineError {
    EngineError::Corrupt {
        context: "index catalog row",
        detail,
    }
}

/// Decodes a catalog entry; None for keys of other tags.
pub(crate) fn decode_row(
    key: &[u8],
    value: &[u8],
) -> Result<Option<(WorkspaceId, IndexInfo)>, EngineError> {
    if key.first() != Some(&CATALOG_TAG) {
        return Ok(None);
    }
    let bad = || corrupt(format!("{key:?} = {value:?}"));
    let ws = WorkspaceId(keys::read_u64(key.get(1..9).ok_or_else(bad)?).ok_or_else(bad)?);
    let (label, rest) = keys::read_str(&key[9..]).ok_or_else(bad)?;
    let property = String::from_utf8(rest.to_vec()).map_err(|_| bad())?;
    if value.len() < 11 || value[0] != ROW_VERSION {
        return Err(bad());
    }
    let kind = match value[1] {
        1 => IndexKind::Equality,
        2 => IndexKind::Ordered,
        _ => return Err(bad()),
    };
    let next = keys::read_u64(&value[3..11]).ok_or_else(bad)?;
    let state = match value[2] {
        1 => IndexState::Populating { next },
        2 => IndexState::Online,
        3 => IndexState::Dropping,
        _ => return Err(bad()),
    };
    let name = String::from_utf8(value[11..].to_vec()).map_err(|_| bad())?;
    Ok(Some((
        ws,
        IndexInfo {
            name,
            label,
            property,
            kind,
            state,
            built_in: false,
        },
    )))
}

/// Visits the catalog rows under `prefix` (one workspace's, or every workspace's) in key order
/// until `visit` answers false.
fn scan_rows(
    kv: &dyn KvRead,
    prefix: &[u8],
    visit: &mut dyn FnMut(WorkspaceId, IndexInfo) -> bool,
) -> Result<(), EngineError> {
    let end = keys::prefix_end(prefix);
    let mut failure = None;
    kv.scan(
        Cf::Meta,
        prefix,
        end.as_deref(),
        false,
        &mut |k, v| match decode_row(k, v) {
            Ok(Some((ws, info))) => visit(ws, info),
            Ok(None) => true,
            Err(e) => {
                failure = Some(e);
                false
            }
        },
    )?;
    failure.map_or(Ok(()), Err)
}

/// The declared indexes of `ws` as `kv` sees them.
pub(crate) fn declared(kv: &dyn KvRead, ws: WorkspaceId) -> Result<Vec<IndexInfo>, EngineError> {
    let mut rows = Vec::new();
    scan_rows(kv, &catalog_prefix(ws), &mut |_, info| {
        rows.push(info);
        true
    })?;
    Ok(rows)
}

/// The declared row of (label, property) in `ws`, if any.
pub(crate) fn declared_row(
    kv: &dyn KvRead,
    ws: WorkspaceId,
    label: &str,
    property: &str,
) -> Result<Option<IndexInfo>, EngineError> {
    let key = catalog_key(ws, label, property);
    match kv.get(Cf::Meta, &key)? {
        Some(v) => Ok(decode_row(&key, &v)?.map(|(_, info)| info)),
        None => Ok(None),
    }
}

/// The ONLINE declared indexes of one workspace: (label, property, kind).
pub(crate) type OnlineIndexes = std::sync::Arc<Vec<(String, String, IndexKind)>>;

/// The ONLINE declared indexes of each workspace as of one catalog version (`schema_epoch`),
/// so that a snapshot answers `index_kind` from memory: every snapshot taken at one version
/// sees the same catalog, as catalog rows change only in commits that bump the version.
#[derive(Debug, Default)]
pub(crate) struct CatalogCache {
    by_ws: parking_lot::Mutex<std::collections::HashMap<WorkspaceId, (u64, OnlineIndexes)>>,
}

impl CatalogCache {
    /// The ONLINE declared indexes of `ws` at catalog version `epoch`, read through `kv` (a
    /// view at that version) the first time.
    pub(crate) fn online(
        &self,
        kv: &dyn KvRead,
        ws: WorkspaceId,
        epoch: u64,
    ) -> Result<OnlineIndexes, EngineError> {
        if let Some((at, rows)) = self.by_ws.lock().get(&ws) {
            if *at == epoch {
                return Ok(std::sync::Arc::clone(rows));
            }
        }
        let rows: OnlineIndexes = std::sync::Arc::new(
            declared(kv, ws)?
                .into_iter()
                .filter(|i| i.state == IndexState::Online)
                .map(|i| (i.label, i.property, i.kind))
                .collect(),
        );
        let mut by_ws = self.by_ws.lock();
        // An older snapshot must not replace a newer version's entry.
        if by_ws.get(&ws).is_none_or(|(at, _)| *at < epoch) {
            by_ws.insert(ws, (epoch, std::sync::Arc::clone(&rows)));
        }
        Ok(rows)
    }
}

/// The kind of the index a reader may use for (label, property): a built-in one, or a
/// declared one that is ONLINE in this reader's view.
pub(crate) fn usable_kind(
    kv: &dyn KvRead,
    ws: WorkspaceId,
    label: &str,
    property: &str,
) -> Option<IndexKind> {
    if let Some(d) = schema::index_for(label, property) {
        return Some(d.kind);
    }
    match declared_row(kv, ws, label, property) {
        Ok(Some(info)) if info.state == IndexState::Online => Some(info.kind),
        _ => None,
    }
}

/// Every index of `ws`: the built-in ones, then the declared ones.
pub(crate) fn all_indexes(kv: &dyn KvRead, ws: WorkspaceId) -> Result<Vec<IndexInfo>, EngineError> {
    let mut out: Vec<IndexInfo> = schema::INDEXES
        .iter()
        .map(|d| IndexInfo {
            name: built_in_name(d.label, d.property),
            label: d.label.to_owned(),
            property: d.property.to_owned(),
            kind: d.kind,
            state: IndexState::Online,
            built_in: true,
        })
        .collect();
    out.extend(declared(kv, ws)?);
    Ok(out)
}

fn invalid(detail: impl Into<String>) -> EngineError {
    EngineError::Invalid {
        what: "index",
        detail: detail.into(),
    }
}

fn check_name(what: &str, s: &str) -> Result<(), EngineError> {
    if s.is_empty() || s.len() > schema::MAX_NAME_BYTES {
        return Err(invalid(format!(
            "the {what} must be 1 to {} bytes",
            schema::MAX_NAME_BYTES
        )));
    }
    Ok(())
}

/// Validates and writes a new catalog row (POPULATING) unless one exists: the body of
/// `Graph::declare_index`, run inside one write transaction.
fn declare_in(
    kv: &dyn KvRead,
    ws: WorkspaceId,
    spec: &IndexSpec,
) -> Result<Result<Declared, IndexInfo>, EngineError> {
    check_name("label", &spec.label)?;
    check_name("property", &spec.property)?;
    let name = spec
        .name
        .clone()
        .unwrap_or_else(|| format!("index_{}_{}", spec.label, spec.property));
    check_name("index name", &name)?;
    let existing = all_indexes(kv, ws)?;
    let same_target = existing
        .iter()
        .find(|i| i.label == spec.label && i.property == spec.property);
    let same_name = existing.iter().find(|i| i.name == name);
    if let Some(i) = same_target.or(same_name) {
        if i.state == IndexState::Dropping {
            return Err(invalid(format!(
                "index {} is still being dropped; try again shortly",
                i.name
            )));
        }
        if spec.if_not_exists {
            return Ok(Ok(Declared::Exists(i.name.clone())));
        }
        return Err(match same_name {
            Some(_) => invalid(format!("an index named {name} already exists")),
            None => invalid(format!(
                "index {} already covers (:{})[{}]",
                i.name, i.label, i.property
            )),
        });
    }
    Ok(Err(IndexInfo {
        name,
        label: spec.label.clone(),
        property: spec.property.clone(),
        kind: spec.kind,
        state: IndexState::Populating { next: 0 },
        built_in: false,
    }))
}

impl Graph {
    /// Declares an index on (label, property) of `ws`. Returns once its catalog row is durable
    /// in state POPULATING: every later write maintains it; `build_indexes_step` (or
    /// `spawn_index_builder`) backfills the existing nodes and brings it ONLINE.
    pub fn declare_index(&self, ws: WorkspaceId, spec: IndexSpec) -> Result<Declared, EngineError> {
        self.write(move |tx| {
            let mut w = tx.workspace(ws);
            match declare_in(w.kv(), ws, &spec)? {
                Ok(found) => Ok(found),
                Err(row) => {
                    w.put_catalog_row(&row);
                    Ok(Declared::Created(row.name))
                }
            }
        })
    }

    /// Drops the declared index `name` of `ws`: from this commit on it is neither used nor
    /// maintained; the builder deletes its entries. Returns false when there is no such index
    /// (an error unless `if_exists`). Built-in indexes cannot be dropped.
    pub fn drop_index(
        &self,
        ws: WorkspaceId,
        name: String,
        if_exists: bool,
    ) -> Result<bool, EngineError> {
        self.write(move |tx| {
            let mut w = tx.workspace(ws);
            let all = all_indexes(w.kv(), ws)?;
            match all.into_iter().find(|i| i.name == name) {
                Some(i) if i.built_in => Err(invalid(format!(
                    "{name} is a built-in index and cannot be dropped"
                ))),
                Some(i) if i.state == IndexState::Dropping => Ok(true),
                Some(mut i) => {
                    i.state = IndexState::Dropping;
                    w.put_catalog_row(&i);
                    Ok(true)
                }
                None if if_exists => Ok(false),
                None => Err(invalid(format!("there is no index named {name}"))),
            }
        })
    }

    /// Every index of `ws` as of now: built-in ones first, then declared ones with their state.
    pub fn indexes(&self, ws: WorkspaceId) -> Result<Vec<IndexInfo>, EngineError> {
        self.snapshot(ws).indexes()
    }

    /// One bounded, atomic unit of index building: backfills up to `batch` nodes of the first
    /// POPULATING index (flipping it ONLINE when none are left) or deletes up to `batch`
    /// entries of the first DROPPING one. Returns false when there was nothing to do.
    pub fn build_indexes_step(&self, batch: usize) -> Result<bool, EngineError> {
        let batch = batch.max(1);
        self.write(move |tx| {
            let Some((ws, row)) = first_pending(tx.kv())? else {
                return Ok(false);
            };
            let mut w = tx.workspace(ws);
            match row.state {
                IndexState::Populating { next } => w.backfill_index(&row, next, batch)?,
                IndexState::Dropping => w.drop_index_entries(&row, batch)?,
                IndexState::Online => {}
            }
            Ok(true)
        })
    }

    /// Runs `build_indexes_step` until no index is pending, on a thread of its own. Call it
    /// after declaring or dropping, and once after opening (to resume work a restart stopped).
    pub fn spawn_index_builder(&self) -> std::thread::JoinHandle<Result<(), EngineError>> {
        let graph = self.clone();
        std::thread::spawn(move || {
            while graph.build_indexes_step(BUILD_BATCH)? {}
            Ok(())
        })
    }
}

/// The first declared index of any workspace that is POPULATING or DROPPING.
fn first_pending(kv: &dyn KvRead) -> Result<Option<(WorkspaceId, IndexInfo)>, EngineError> {
    let mut found = None;
    scan_rows(kv, &[CATALOG_TAG], &mut |ws, info| {
        if info.state != IndexState::Online {
            found = Some((ws, info));
        }
        found.is_none()
    })?;
    Ok(found)
}

/// Every declared index of every workspace (validation).
pub(crate) fn all_declared(kv: &dyn KvRead) -> Result<Vec<(WorkspaceId, IndexInfo)>, EngineError> {
    let mut rows = Vec::new();
    scan_rows(kv, &[CATALOG_TAG], &mut |ws, info| {
        rows.push((ws, info));
        true
    })?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Graph, GraphOptions, GraphRead};

    #[test]
    fn snapshots_see_the_catalog_of_their_version_from_memory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let g = Graph::open(dir.path(), GraphOptions::default()).expect("open");
        let ws = WorkspaceId(3);
        let kind = |s: &crate::Snapshot<'_>| s.index_kind("Customer", "tier");
        let epoch = |s: &crate::Snapshot<'_>| s.plan_scope().map(|p| p.schema);
        let s0 = g.snapshot(ws);
        assert_eq!(kind(&s0), None);
        assert_eq!(kind(&g.snapshot(ws)), None);
        g.declare_index(
            ws,
            IndexSpec {
                name: Some("tier".into()),
                label: "Customer".into(),
                property: "tier".into(),
                kind: IndexKind::Ordered,
                if_not_exists: false,
            },
        )
        .expect("declare");
        let s1 = g.snapshot(ws);
        assert_eq!(kind(&s1), None, "populating: not usable yet");
        while g.build_indexes_step(100).expect("build") {}
        let s2 = g.snapshot(ws);
        assert_eq!(kind(&s2), Some(IndexKind::Ordered));
        assert!(g.drop_index(ws, "tier".into(), false).expect("drop"));
        let s3 = g.snapshot(ws);
        assert_eq!(kind(&s3), None);
        // Older snapshots keep their version's answer; another workspace never had it.
        assert_eq!(
            (kind(&s0), kind(&s1), kind(&s2)),
            (None, None, Some(IndexKind::Ordered))
        );
        assert_eq!(
            g.snapshot(WorkspaceId(4)).index_kind("Customer", "tier"),
            None
        );
        let epochs = [epoch(&s0), epoch(&s1), epoch(&s2), epoch(&s3)];
        assert!(epochs.windows(2).all(|w| w[0] < w[1]), "{epochs:?}");
        // Another workspace's catalog version never moved: its plans stay.
        assert_eq!(epoch(&g.snapshot(WorkspaceId(4))), Some(0));
        // Built-in indexes need no catalog.
        assert_eq!(s0.index_kind("Customer", "score"), Some(IndexKind::Ordered));
    }
}
