//! Write transactions: an overlay of pending writes over the store, with savepoints, the
//! generic graph and record operations, and the derived state (indexes, counters) they keep
//! exact. Event recording and identity resolution are built on top, in `events`.
//!
//! Transactions run only on the engine's writer thread (see `writer`), one after another, so a
//! read-check-write inside one closure is atomic without locks. Several closures share one
//! group (one WriteBatch, one fsync); a closure that fails is rolled back to its savepoint and
//! leaves no trace in the group.
//!
//! While one group is being written to the store, the next is already being prepared: its
//! transaction reads through the previous group's overlay (`in_flight`) before the store, so it
//! sees those writes whether or not they have landed yet.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use roaring::RoaringTreemap;

use crate::bitmap::Delta;
use crate::codec::{EdgeRecord, NodeRecord};
use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys;
use crate::labels::LabelIndex;
use crate::model::{EdgeId, NodeId, WorkspaceId};
use crate::store::{Batch, KvRead, Store};
use crate::view::{self, LabelSource, View};

mod catalog_ops;
mod graph_ops;
mod identity_index;
mod indexes;
mod read_cache;
mod records;

pub(crate) use read_cache::ReadCache;

pub(crate) use graph_ops::{check_name, check_properties};
pub(crate) use identity_index::customer_identities;

/// Where an overlay entry lives: a column family, the label membership that commit turns
/// into bitmap deltas, or a counter delta of `Cf::Counts` (an i64 that commit merges into the
/// stored total, so no write ever reads a counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Space {
    Kv(Cf),
    LabelMember,
    CountDelta,
}

type OverlayKey = (Space, Vec<u8>);

/// The pending writes of a group, in key order; a `None` value is a delete.
pub(crate) type Overlay = BTreeMap<OverlayKey, Option<Vec<u8>>>;

/// A group of writes being prepared on the writer thread.
pub struct WriteTxn<'a> {
    store: &'a Store,
    labels: &'a LabelIndex,
    /// The previous group's writes, handed to the committer and perhaps not yet in the store.
    /// Reads look here after the overlay and before the store.
    in_flight: Option<Arc<Overlay>>,
    /// Committed values the writer has read before (see `read_cache`); consulted after the
    /// pending layers and before the store.
    cache: Option<&'a RefCell<ReadCache>>,
    /// Pending writes of this group.
    overlay: Overlay,
    /// For each write, what the overlay held before (outer None: nothing), to roll back.
    undo: Vec<(OverlayKey, Option<Option<Vec<u8>>>)>,
    /// Declared indexes per workspace as this group sees them (`catalog_ops`), so that node
    /// writes do not scan the catalog each time; dropped on any catalog write and rollback.
    declared_cache: std::collections::HashMap<WorkspaceId, Vec<crate::catalog::IndexInfo>>,
}

impl std::fmt::Debug for WriteTxn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteTxn")
            .field("pending", &self.overlay.len())
            .finish()
    }
}

/// What commit hands to the store and to the in-memory label index.
pub(crate) struct Commit<'a> {
    pub batch: Batch<'a>,
    pub label_deltas: BTreeMap<(WorkspaceId, String), Delta>,
    /// The workspaces whose index catalog rows the batch writes (an index declared, built or
    /// dropped): query plans made before it may use an index that is gone, or miss a new one.
    pub schema_changed: Vec<WorkspaceId>,
    /// The workspaces whose statistics the batch changes (label membership, hence label and
    /// node counts, or index entry counts): what cached plans assumed may no longer hold.
    pub statistics_changed: Vec<WorkspaceId>,
}

fn label_member_key(ws: WorkspaceId, label: &str, node: NodeId) -> Vec<u8> {
    let mut k = keys::workspace_prefix(ws);
    keys::put_str(&mut k, label);
    keys::put_u64(&mut k, node.0);
    k
}

fn decode_label_member_key(k: &[u8]) -> Option<(WorkspaceId, String, NodeId)> {
    let ws = WorkspaceId(keys::read_u64(k)?);
    let (label, rest) = keys::read_str(k.get(8..)?)?;
    (rest.len() == 8).then_some(())?;
    Some((ws, label, NodeId(keys::read_u64(rest)?)))
}

impl<'a> WriteTxn<'a> {
    pub(crate) fn new(
        store: &'a Store,
        labels: &'a LabelIndex,
        in_flight: Option<Arc<Overlay>>,
        cache: Option<&'a RefCell<ReadCache>>,
    ) -> Self {
        WriteTxn {
            store,
            labels,
            in_flight,
            cache,
            overlay: BTreeMap::new(),
            undo: Vec::new(),
            declared_cache: Default::default(),
        }
    }

    fn set(&mut self, space: Space, key: Vec<u8>, value: Option<Vec<u8>>) {
        if space == Space::Kv(Cf::Meta) && key.first() == Some(&crate::catalog::CATALOG_TAG) {
            self.declared_cache.clear();
        }
        let prev = self.overlay.insert((space, key.clone()), value);
        self.undo.push(((space, key), prev));
    }

    pub(crate) fn put(&mut self, cf: Cf, key: Vec<u8>, value: Vec<u8>) {
        self.set(Space::Kv(cf), key, Some(value));
    }

    pub(crate) fn delete(&mut self, cf: Cf, key: Vec<u8>) {
        self.set(Space::Kv(cf), key, None);
    }

    /// Adds `delta` to a counter of `Cf::Counts` (undone by rollback like any write).
    pub(crate) fn count_add(&mut self, key: Vec<u8>, delta: i64) {
        use std::collections::btree_map::Entry;
        // One search of the overlay (a get then an insert took two; ~7 counters per event).
        match self.overlay.entry((Space::CountDelta, key)) {
            Entry::Occupied(mut e) => {
                let before = e.get().as_deref().and_then(keys::read_count).unwrap_or(0);
                let value = keys::count_bytes(before.wrapping_add(delta)).to_vec();
                let prev = e.insert(Some(value));
                self.undo.push((e.key().clone(), Some(prev)));
            }
            Entry::Vacant(e) => {
                self.undo.push((e.key().clone(), None));
                e.insert(Some(keys::count_bytes(delta).to_vec()));
            }
        }
    }

    pub(crate) fn savepoint(&self) -> usize {
        self.undo.len()
    }

    pub(crate) fn rollback_to(&mut self, savepoint: usize) {
        self.declared_cache.clear();
        while self.undo.len() > savepoint {
            let Some((key, prev)) = self.undo.pop() else {
                break;
            };
            match prev {
                Some(v) => {
                    self.overlay.insert(key, v);
                }
                None => {
                    self.overlay.remove(&key);
                }
            }
        }
    }

    /// Runs `f`; when it fails, every write it made is undone and the rest of the transaction
    /// carries on (a bad item of a batch never spoils the good ones).
    pub fn attempt<R, E>(
        &mut self,
        f: impl FnOnce(&mut WriteTxn<'a>) -> Result<R, E>,
    ) -> Result<R, E> {
        let sp = self.savepoint();
        let out = f(self);
        if out.is_err() {
            self.rollback_to(sp);
        }
        out
    }

    /// Graph and record operations on one workspace.
    pub fn workspace(&mut self, ws: WorkspaceId) -> WorkspaceTxn<'_, 'a> {
        WorkspaceTxn { txn: self, ws }
    }

    /// Number of pending writes (the writer closes a group when it grows large).
    pub(crate) fn pending(&self) -> usize {
        self.overlay.len()
    }

    /// Everything pending, for the committer.
    pub(crate) fn into_overlay(self) -> Overlay {
        self.overlay
    }

    /// Pending entries of `space` in `[lower, upper)`, the in-flight group's first and this
    /// group's on top (later writes win), or None when neither holds any.
    fn pending_range(
        &self,
        space: Space,
        lower: &[u8],
        upper: impl Fn(&[u8]) -> bool,
    ) -> Option<BTreeMap<&[u8], &Option<Vec<u8>>>> {
        let mut merged: Option<BTreeMap<&[u8], &Option<Vec<u8>>>> = None;
        for layer in self.in_flight.as_deref().into_iter().chain([&self.overlay]) {
            let entries = layer
                .range((Bound::Included((space, lower.to_vec())), Bound::Unbounded))
                .take_while(|((s, k), _)| *s == space && upper(k));
            for ((_, k), v) in entries {
                merged.get_or_insert_with(BTreeMap::new).insert(k, v);
            }
        }
        merged
    }
}

/// The batch and label deltas of a prepared group.
pub(crate) fn prepare_commit<'s>(
    store: &'s Store,
    overlay: &Overlay,
) -> Result<Commit<'s>, EngineError> {
    let mut batch = store.batch();
    let mut label_deltas: BTreeMap<(WorkspaceId, String), Delta> = BTreeMap::new();
    let (mut schema_changed, mut statistics_changed) = (Vec::new(), Vec::new());
    for ((space, key), value) in overlay {
        if *space == Space::Kv(Cf::Meta) && key.first() == Some(&crate::catalog::CATALOG_TAG) {
            // Catalog keys: the tag, then the workspace.
            if let Some(ws) = key.get(1..).and_then(keys::read_u64) {
                schema_changed.push(WorkspaceId(ws));
            }
        }
        if *space == Space::CountDelta && value.as_deref().and_then(keys::read_count) != Some(0) {
            statistics_changed.extend(keys::index_count_workspace(key));
        }
        match space {
            Space::Kv(cf) => match value {
                Some(v) => batch.put(*cf, key, v)?,
                None => batch.delete(*cf, key)?,
            },
            Space::LabelMember => {
                let (ws, label, node) =
                    decode_label_member_key(key).ok_or_else(|| EngineError::Corrupt {
                        context: "label membership",
                        detail: format!("{key:?}"),
                    })?;
                let delta = label_deltas.entry((ws, label)).or_default();
                match value {
                    Some(_) => delta.add(node.0),
                    None => delta.remove(node.0),
                }
            }
            Space::CountDelta => {
                if let Some(v) = value {
                    if keys::read_count(v).is_some_and(|d| d != 0) {
                        batch.merge(Cf::Counts, key, v)?;
                    }
                }
            }
        }
    }
    for ((ws, label), delta) in &label_deltas {
        batch.merge(Cf::Labels, &keys::label_key(*ws, label), &delta.encode())?;
        statistics_changed.push(*ws);
    }
    for changed in [&mut schema_changed, &mut statistics_changed] {
        changed.sort_unstable();
        changed.dedup();
    }
    Ok(Commit {
        batch,
        label_deltas,
        schema_changed,
        statistics_changed,
    })
}

impl WriteTxn<'_> {
    /// The recorded legacy id ceiling; the first call records the id sequence's value then
    /// (0 for a store that never allocated an id).
    pub(crate) fn legacy_id_ceiling(&mut self) -> Result<u64, EngineError> {
        let read = |b: Vec<u8>, context| {
            keys::read_u64(&b).ok_or_else(|| EngineError::Corrupt {
                context,
                detail: format!("{b:?}"),
            })
        };
        if let Some(b) = self.get(Cf::Meta, keys::meta::LEGACY_ID_CEILING)? {
            return read(b, "legacy id ceiling");
        }
        let next = match self.get(Cf::Meta, keys::meta::NEXT_ID)? {
            Some(b) => read(b, "id sequence")?,
            None => 0,
        };
        self.put(
            Cf::Meta,
            keys::meta::LEGACY_ID_CEILING.to_vec(),
            next.to_be_bytes().to_vec(),
        );
        Ok(next)
    }

    pub(crate) fn forget_legacy_id_ceiling(&mut self) -> Result<(), EngineError> {
        self.delete(Cf::Meta, keys::meta::LEGACY_ID_CEILING.to_vec());
        Ok(())
    }
}

impl KvRead for WriteTxn<'_> {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
        let k = (Space::Kv(cf), key.to_vec());
        match self.overlay.get(&k) {
            Some(v) => Ok(v.clone()),
            None => match self.in_flight.as_ref().and_then(|f| f.get(&k)) {
                Some(v) => Ok(v.clone()),
                None => match self.cache.filter(|_| ReadCache::caches(cf)) {
                    Some(cache) => {
                        if let Some(v) = cache.borrow().get(cf, key) {
                            return Ok(v);
                        }
                        let v = self.store.get(cf, key)?;
                        cache.borrow_mut().fill(cf, key, &v);
                        Ok(v)
                    }
                    None => self.store.get(cf, key),
                },
            },
        }
    }

    fn scan(
        &self,
        cf: Cf,
        lower: &[u8],
        upper: Option<&[u8]>,
        reverse: bool,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), EngineError> {
        let Some(pending) =
            self.pending_range(Space::Kv(cf), lower, |k| upper.is_none_or(|u| k < u))
        else {
            return self.store.scan(cf, lower, upper, reverse, visit);
        };
        // Small scans only happen inside writes (adjacency of a node, a record prefix), so
        // materialising the merged range is simpler than a merging iterator and cheap enough.
        let mut merged: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        self.store.scan(cf, lower, upper, false, &mut |k, v| {
            merged.insert(k.to_vec(), v.to_vec());
            true
        })?;
        for (k, v) in pending {
            match v {
                Some(v) => merged.insert(k.to_vec(), v.clone()),
                None => merged.remove(k),
            };
        }
        let mut go = |(k, v): (&Vec<u8>, &Vec<u8>)| visit(k, v);
        if reverse {
            for e in merged.iter().rev() {
                if !go(e) {
                    break;
                }
            }
        } else {
            for e in merged.iter() {
                if !go(e) {
                    break;
                }
            }
        }
        Ok(())
    }
}

impl LabelSource for WriteTxn<'_> {
    fn label_bitmap(
        &self,
        ws: WorkspaceId,
        label: &str,
    ) -> Result<Cow<'_, RoaringTreemap>, EngineError> {
        let mut prefix = keys::workspace_prefix(ws);
        keys::put_str(&mut prefix, label);
        let committed = self.labels.get(ws, label);
        let mut bits = committed.map(|b| (*b).clone()).unwrap_or_default();
        // The in-flight group may or may not be in `committed` yet; replaying its membership
        // changes is harmless either way, because each one sets a final state.
        let pending = self.pending_range(Space::LabelMember, &prefix, |k| k.starts_with(&prefix));
        for (k, v) in pending.into_iter().flatten() {
            let Some((_, _, node)) = decode_label_member_key(k) else {
                continue;
            };
            match v {
                Some(_) => bits.insert(node.0),
                None => bits.remove(node.0),
            };
        }
        Ok(Cow::Owned(bits))
    }
}

/// Writes to one workspace inside a write transaction. Reads see the transaction's own writes.
pub struct WorkspaceTxn<'t, 'a> {
    txn: &'t mut WriteTxn<'a>,
    ws: WorkspaceId,
}

impl std::fmt::Debug for WorkspaceTxn<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceTxn")
            .field("ws", &self.ws)
            .finish()
    }
}

impl<'t, 'a> WorkspaceTxn<'t, 'a> {
    pub fn workspace_id(&self) -> WorkspaceId {
        self.ws
    }

    pub(crate) fn view(&self) -> View<'_> {
        View {
            kv: &*self.txn,
            labels: &*self.txn,
            ws: self.ws,
        }
    }

    pub(crate) fn alloc_id(&mut self) -> Result<u64, EngineError> {
        let next = match self.txn.get(Cf::Meta, keys::meta::NEXT_ID)? {
            Some(b) => keys::read_u64(&b).ok_or_else(|| EngineError::Corrupt {
                context: "id sequence",
                detail: format!("{b:?}"),
            })?,
            None => 1,
        };
        self.txn.put(
            Cf::Meta,
            keys::meta::NEXT_ID.to_vec(),
            (next + 1).to_be_bytes().to_vec(),
        );
        Ok(next)
    }

    /// A node's record as this transaction sees it (None when it does not exist).
    pub(crate) fn load_node(&self, id: NodeId) -> Result<Option<NodeRecord>, EngineError> {
        view::load_node(&*self.txn, self.ws, id)
    }

    pub(crate) fn node_record(&self, id: NodeId) -> Result<NodeRecord, EngineError> {
        view::load_node(&*self.txn, self.ws, id)?.ok_or(EngineError::NodeNotFound(id))
    }

    pub(crate) fn edge_record(&self, id: EdgeId) -> Result<EdgeRecord, EngineError> {
        view::load_edge(&*self.txn, self.ws, id)?.ok_or(EngineError::EdgeNotFound(id))
    }
}
