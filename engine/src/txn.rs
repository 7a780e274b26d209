//! Write transactions: an overlay of pending writes over the store, with savepoints.
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
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

use roaring::RoaringTreemap;

use crate::bitmap::Delta;
use crate::codec::{self, EdgeRecord, NodeRecord};
use crate::columns::Cf;
use crate::error::EngineError;
use crate::identity::{self, EventInput, EventOutcome, IdentityKeys};
use crate::keys::{self, IdentityKind};
use crate::labels::LabelIndex;
use crate::model::{
    AdjacentEdge, Direction, Edge, EdgeId, Node, NodeId, Properties, Value, WorkspaceId,
};
use crate::read::{GraphRead, GraphWrite, IndexKind, Order};
use crate::record::{Record, RecordScan};
use crate::record_io as record;
use crate::schema;
use crate::store::{Batch, KvRead, Store};
use crate::view::{self, LabelSource, View};

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
    /// Pending writes of this group.
    overlay: Overlay,
    /// For each write, what the overlay held before (outer None: nothing), to roll back.
    undo: Vec<(OverlayKey, Option<Option<Vec<u8>>>)>,
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
    ) -> Self {
        WriteTxn {
            store,
            labels,
            in_flight,
            overlay: BTreeMap::new(),
            undo: Vec::new(),
        }
    }

    fn set(&mut self, space: Space, key: Vec<u8>, value: Option<Vec<u8>>) {
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
        let k = (Space::CountDelta, key);
        let before = self
            .overlay
            .get(&k)
            .and_then(|v| v.as_deref())
            .and_then(keys::read_count)
            .unwrap_or(0);
        let (space, key) = k;
        self.set(
            space,
            key,
            Some(keys::count_bytes(before.wrapping_add(delta)).to_vec()),
        );
    }

    pub(crate) fn savepoint(&self) -> usize {
        self.undo.len()
    }

    pub(crate) fn rollback_to(&mut self, savepoint: usize) {
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
    for ((space, key), value) in overlay {
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
    }
    Ok(Commit {
        batch,
        label_deltas,
    })
}

impl KvRead for WriteTxn<'_> {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
        let k = (Space::Kv(cf), key.to_vec());
        match self.overlay.get(&k) {
            Some(v) => Ok(v.clone()),
            None => match self.in_flight.as_ref().and_then(|f| f.get(&k)) {
                Some(v) => Ok(v.clone()),
                None => self.store.get(cf, key),
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

/// How identity resolution answered, before anything is written.
struct Resolution {
    id: NodeId,
    is_new: bool,
    old: Option<NodeRecord>,
    new: NodeRecord,
}

/// What a node merge did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeOutcome {
    /// Edges re-pointed from the duplicate to the canonical node.
    pub edges_moved: u64,
}

fn check_name(what: &'static str, name: &str) -> Result<(), EngineError> {
    if name.is_empty() {
        return Err(EngineError::invalid(what, "must not be empty"));
    }
    if name.len() > schema::MAX_NAME_BYTES {
        return Err(EngineError::invalid(
            what,
            format!("longer than {} bytes", schema::MAX_NAME_BYTES),
        ));
    }
    Ok(())
}

fn check_properties(properties: &Properties) -> Result<(), EngineError> {
    for (k, v) in properties {
        check_name("property key", k)?;
        codec::check_storable(v)?;
    }
    Ok(())
}

/// A node's property-index entries: (index key, its value-count key).
fn index_entries(
    ws: WorkspaceId,
    id: NodeId,
    rec: Option<&NodeRecord>,
) -> BTreeSet<(Vec<u8>, Vec<u8>)> {
    let Some(rec) = rec else {
        return BTreeSet::new();
    };
    schema::indexes_for_labels(&rec.labels)
        .filter_map(|d| {
            let v = keys::index_value(rec.properties.get(d.property)?)?;
            Some((
                keys::prop_index_key(ws, d.label, d.property, &v, id),
                keys::index_count_key(ws, d.label, d.property, v[0]),
            ))
        })
        .collect()
}

fn customer_identities(rec: Option<&NodeRecord>) -> BTreeSet<(IdentityKind, String)> {
    rec.filter(|r| r.labels.iter().any(|l| l == schema::CUSTOMER))
        .map(|r| identity::identities_of(&r.properties).into_iter().collect())
        .unwrap_or_default()
}

fn label_set(rec: Option<&NodeRecord>) -> BTreeSet<&str> {
    let mut set: BTreeSet<&str> = BTreeSet::new();
    if let Some(r) = rec {
        set.insert(schema::ALL_NODES);
        set.extend(r.labels.iter().map(String::as_str));
    }
    set
}

impl<'t, 'a> WorkspaceTxn<'t, 'a> {
    pub fn workspace_id(&self) -> WorkspaceId {
        self.ws
    }

    fn view(&self) -> View<'_> {
        View {
            kv: &*self.txn,
            labels: &*self.txn,
            ws: self.ws,
        }
    }

    fn alloc_id(&mut self) -> Result<u64, EngineError> {
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

    fn node_record(&self, id: NodeId) -> Result<NodeRecord, EngineError> {
        view::load_node(&*self.txn, self.ws, id)?.ok_or(EngineError::NodeNotFound(id))
    }

    fn edge_record(&self, id: EdgeId) -> Result<EdgeRecord, EngineError> {
        view::load_edge(&*self.txn, self.ws, id)?.ok_or(EngineError::EdgeNotFound(id))
    }

    /// Writes a node's new state (None: deleted) and keeps every index in step with it.
    fn write_node(
        &mut self,
        id: NodeId,
        old: Option<&NodeRecord>,
        new: Option<&NodeRecord>,
    ) -> Result<(), EngineError> {
        let key = keys::node_key(self.ws, id);
        match new {
            Some(n) => self.txn.put(Cf::Nodes, key, codec::encode_node(n)),
            None => self.txn.delete(Cf::Nodes, key),
        }
        if let (Some(o), Some(n)) = (old, new) {
            if o.labels == n.labels {
                return self.update_indexes(id, o, n);
            }
        }
        if let (Some(o), Some(n)) = (old, new) {
            let added: Vec<&str> = n
                .labels
                .iter()
                .filter(|l| !o.labels.contains(l))
                .map(String::as_str)
                .collect();
            let removed: Vec<&str> = o
                .labels
                .iter()
                .filter(|l| !n.labels.contains(l))
                .map(String::as_str)
                .collect();
            self.relabel_edges(id, &added, &removed)?;
        }
        let (old_labels, new_labels) = (label_set(old), label_set(new));
        for l in old_labels.difference(&new_labels) {
            self.txn
                .set(Space::LabelMember, label_member_key(self.ws, l, id), None);
        }
        for l in new_labels.difference(&old_labels) {
            self.txn.set(
                Space::LabelMember,
                label_member_key(self.ws, l, id),
                Some(Vec::new()),
            );
        }
        let (old_idx, new_idx) = (
            index_entries(self.ws, id, old),
            index_entries(self.ws, id, new),
        );
        for (k, count) in old_idx.difference(&new_idx) {
            self.txn.delete(Cf::PropIndex, k.clone());
            self.txn.count_add(count.clone(), -1);
        }
        for (k, count) in new_idx.difference(&old_idx) {
            self.txn.put(Cf::PropIndex, k.clone(), Vec::new());
            self.txn.count_add(count.clone(), 1);
        }
        self.sync_identity(id, old, new)
    }

    /// `write_node` for a node whose labels stay: only the index entries of properties that
    /// changed are touched (the common case: a customer's `lastSeen` moving on each event).
    fn update_indexes(
        &mut self,
        id: NodeId,
        old: &NodeRecord,
        new: &NodeRecord,
    ) -> Result<(), EngineError> {
        for d in schema::indexes_for_labels(&new.labels) {
            let (before, after) = (
                old.properties.get(d.property),
                new.properties.get(d.property),
            );
            if before == after {
                continue;
            }
            let entry = |v: Option<&Value>| {
                keys::index_value(v?).map(|v| {
                    (
                        keys::prop_index_key(self.ws, d.label, d.property, &v, id),
                        v[0],
                    )
                })
            };
            let (before, after) = (entry(before), entry(after));
            if before == after {
                continue;
            }
            let tags = (before.as_ref().map(|b| b.1), after.as_ref().map(|a| a.1));
            if let Some((k, _)) = before {
                self.txn.delete(Cf::PropIndex, k);
            }
            if let Some((k, _)) = after {
                self.txn.put(Cf::PropIndex, k, Vec::new());
            }
            if tags.0 != tags.1 {
                let count = |tag| keys::index_count_key(self.ws, d.label, d.property, tag);
                if let Some(t) = tags.0 {
                    self.txn.count_add(count(t), -1);
                }
                if let Some(t) = tags.1 {
                    self.txn.count_add(count(t), 1);
                }
            }
        }
        let identity_changed = IdentityKind::ALL
            .into_iter()
            .any(|k| old.properties.get(k.property()) != new.properties.get(k.property()));
        if identity_changed {
            self.sync_identity(id, Some(old), Some(new))?;
        }
        Ok(())
    }

    /// Keeps the identity index exact: entries this node held for values it no longer carries
    /// are dropped; values it now carries are claimed when no other customer holds them.
    fn sync_identity(
        &mut self,
        id: NodeId,
        old: Option<&NodeRecord>,
        new: Option<&NodeRecord>,
    ) -> Result<(), EngineError> {
        let (before, after) = (customer_identities(old), customer_identities(new));
        if before == after {
            return Ok(());
        }
        for (kind, value) in before.difference(&after) {
            let key = keys::identity_key(self.ws, *kind, value);
            if self.txn.get(Cf::Identity, &key)?.as_deref() == Some(&id.0.to_be_bytes()[..]) {
                self.txn.delete(Cf::Identity, key);
            }
        }
        for (kind, value) in after.difference(&before) {
            let key = keys::identity_key(self.ws, *kind, value);
            if self.txn.get(Cf::Identity, &key)?.is_none() {
                self.txn.put(Cf::Identity, key, id.0.to_be_bytes().to_vec());
            }
        }
        Ok(())
    }

    fn put_adjacency(&mut self, id: EdgeId, e: &EdgeRecord, present: bool) {
        let out = keys::AdjacencyKey {
            ws: self.ws,
            node: e.start,
            direction: Direction::Outgoing,
            rel_type: e.rel_type.clone(),
            neighbour: e.end,
            edge: id,
        };
        let inc = keys::AdjacencyKey {
            ws: self.ws,
            node: e.end,
            direction: Direction::Incoming,
            rel_type: e.rel_type.clone(),
            neighbour: e.start,
            edge: id,
        };
        for k in [out, inc] {
            let key = keys::adjacency_key(&k);
            if present {
                self.txn.put(Cf::Adjacency, key, Vec::new());
            } else {
                self.txn.delete(Cf::Adjacency, key);
            }
            self.txn.count_add(
                keys::degree_key_of_adjacency(&k),
                if present { 1 } else { -1 },
            );
        }
    }

    /// `ends`: the labels of the start and the end node as stored now.
    fn insert_edge(&mut self, id: EdgeId, e: &EdgeRecord, ends: (&[String], &[String])) {
        self.txn.put(
            Cf::Edges,
            keys::edge_key(self.ws, id),
            codec::encode_edge(e),
        );
        self.put_adjacency(id, e, true);
        self.count_edge(e, ends, 1);
    }

    fn remove_edge(&mut self, id: EdgeId, e: &EdgeRecord) -> Result<(), EngineError> {
        self.txn.delete(Cf::Edges, keys::edge_key(self.ws, id));
        self.put_adjacency(id, e, false);
        let (start, end) = (self.labels_of(e.start)?, self.labels_of(e.end)?);
        self.count_edge(e, (&start, &end), -1);
        Ok(())
    }

    /// The labels of a node as stored now (none when it does not exist).
    fn labels_of(&self, id: NodeId) -> Result<Vec<String>, EngineError> {
        Ok(view::load_node(&*self.txn, self.ws, id)?
            .map(|r| r.labels)
            .unwrap_or_default())
    }

    /// The per-type and per-endpoint-label counters of one relationship, +1 or -1.
    fn count_edge(&mut self, e: &EdgeRecord, (start, end): (&[String], &[String]), delta: i64) {
        let ws = self.ws;
        self.txn
            .count_add(keys::type_count_key(ws, &e.rel_type), delta);
        for (labels, side) in [(start, Direction::Outgoing), (end, Direction::Incoming)] {
            for l in labels {
                self.txn
                    .count_add(keys::endpoint_label_key(ws, &e.rel_type, side, l), delta);
            }
        }
    }

    /// A node's labels changed: the endpoint-label counters of every relationship it has
    /// follow (one counter update per type, direction and label).
    fn relabel_edges(
        &mut self,
        id: NodeId,
        added: &[&str],
        removed: &[&str],
    ) -> Result<(), EngineError> {
        if added.is_empty() && removed.is_empty() {
            return Ok(());
        }
        // (outgoing?, type) -> number of adjacency entries
        let mut per_type: BTreeMap<(bool, String), i64> = BTreeMap::new();
        view::scan_adjacency(
            &*self.txn,
            &keys::adjacency_prefix(self.ws, id, None, None),
            |a| {
                *per_type
                    .entry((a.direction == Direction::Outgoing, a.rel_type))
                    .or_default() += 1;
                true
            },
        )?;
        for ((outgoing, rel_type), n) in per_type {
            let side = if outgoing {
                Direction::Outgoing
            } else {
                Direction::Incoming
            };
            for (labels, sign) in [(added, 1), (removed, -1)] {
                for l in labels {
                    self.txn.count_add(
                        keys::endpoint_label_key(self.ws, &rel_type, side, l),
                        sign * n,
                    );
                }
            }
        }
        Ok(())
    }

    /// Every edge touching `id`, each once (a self-loop appears in both directions).
    fn edges_of(&self, id: NodeId) -> Result<Vec<EdgeId>, EngineError> {
        let mut ids = BTreeSet::new();
        view::scan_adjacency(
            &*self.txn,
            &keys::adjacency_prefix(self.ws, id, None, None),
            |a| {
                ids.insert(a.edge);
                true
            },
        )?;
        Ok(ids.into_iter().collect())
    }

    fn identity_holder(
        &self,
        kind: IdentityKind,
        value: &str,
    ) -> Result<Option<NodeId>, EngineError> {
        let Some(b) = self
            .txn
            .get(Cf::Identity, &keys::identity_key(self.ws, kind, value))?
        else {
            return Ok(None);
        };
        keys::read_u64(&b)
            .map(|v| Some(NodeId(v)))
            .ok_or_else(|| EngineError::Corrupt {
                context: "identity index",
                detail: format!("{b:?}"),
            })
    }

    /// Decides which customer an event's keys name (priority email > phone > external id),
    /// and the keys it gains, without writing anything.
    fn plan_identity(&mut self, keys_in: &IdentityKeys) -> Result<Resolution, EngineError> {
        let mut owners = Vec::new();
        for (kind, value) in keys_in.normalized() {
            let owner = self.identity_holder(kind, &value)?;
            owners.push((kind, value, owner));
        }
        let direct = match keys_in.customer_id {
            Some(id) => view::load_node(&*self.txn, self.ws, id)?
                .filter(|r| r.labels.iter().any(|l| l == schema::CUSTOMER))
                .map(|r| (id, r)),
            None => None,
        };
        let matched = match direct {
            Some(found) => Some(found),
            None => match owners.iter().find_map(|(_, _, o)| *o) {
                Some(id) => Some((id, self.node_record(id)?)),
                None => None,
            },
        };
        match matched {
            None => {
                if owners.is_empty() {
                    return Err(EngineError::NoIdentity);
                }
                let mut properties = Properties::new();
                for (kind, value, _) in &owners {
                    properties.insert(kind.property().to_owned(), Value::String(value.clone()));
                }
                let id = NodeId(self.alloc_id()?);
                Ok(Resolution {
                    id,
                    is_new: true,
                    old: None,
                    new: NodeRecord {
                        labels: vec![schema::CUSTOMER.to_owned()],
                        properties,
                    },
                })
            }
            Some((id, old)) => {
                let mut new = old.clone();
                for (kind, value, owner) in owners {
                    let absent = new
                        .properties
                        .get(kind.property())
                        .is_none_or(Value::is_null);
                    if owner.is_none() && absent {
                        new.properties
                            .insert(kind.property().to_owned(), Value::String(value));
                    }
                }
                Ok(Resolution {
                    id,
                    is_new: false,
                    old: Some(old),
                    new,
                })
            }
        }
    }

    /// Identity resolution: the customer the keys name, created when none matches, enriched
    /// with keys it lacks that nobody else holds. Returns (customer, created).
    pub fn resolve_identity(
        &mut self,
        keys_in: &IdentityKeys,
    ) -> Result<(NodeId, bool), EngineError> {
        let r = self.plan_identity(keys_in)?;
        if r.old.as_ref() != Some(&r.new) {
            self.write_node(r.id, r.old.as_ref(), Some(&r.new))?;
        }
        Ok((r.id, r.is_new))
    }

    /// Records one event: resolves the customer, creates the touchpoint, its HAS_TOUCHPOINT
    /// edge, the campaign (merged by id) with INFLUENCED_BY, and moves `lastSeen` forward.
    pub fn record_event(&mut self, ev: &EventInput) -> Result<EventOutcome, EngineError> {
        check_name("event name", &ev.action)?;
        if let Some(c) = &ev.channel {
            check_name("channel", c)?;
        }
        if let Some(c) = &ev.campaign_id {
            check_name("campaign id", c)?;
        }
        check_properties(&ev.properties)?;

        let mut r = self.plan_identity(&ev.keys)?;
        let newer = match r.new.properties.get("lastSeen") {
            Some(Value::DateTime(seen)) => ev.ts > *seen,
            _ => true,
        };
        if newer {
            r.new
                .properties
                .insert("lastSeen".into(), Value::DateTime(ev.ts));
        }
        let mut mutated = 0u32;
        if r.old.as_ref() != Some(&r.new) {
            self.write_node(r.id, r.old.as_ref(), Some(&r.new))?;
            mutated += 1;
        }

        let mut tp = Properties::new();
        tp.insert("action".into(), Value::String(ev.action.clone()));
        if let Some(c) = &ev.channel {
            tp.insert("channel".into(), Value::String(c.clone()));
        }
        tp.insert("ts".into(), Value::DateTime(ev.ts));
        if let Some(c) = &ev.campaign_id {
            tp.insert("campaignId".into(), Value::String(c.clone()));
        }
        if !ev.properties.is_empty() {
            tp.insert("properties".into(), Value::Map(ev.properties.clone()));
        }
        let tp_rec = NodeRecord {
            labels: vec![schema::TOUCHPOINT.to_owned()],
            properties: tp,
        };
        let tp_id = NodeId(self.alloc_id()?);
        self.write_node(tp_id, None, Some(&tp_rec))?;
        mutated += 1;
        // Both ends were just written by this transaction: no existence checks needed.
        let has_tp = EdgeId(self.alloc_id()?);
        self.insert_edge(
            has_tp,
            &EdgeRecord {
                rel_type: schema::HAS_TOUCHPOINT.into(),
                start: r.id,
                end: tp_id,
                properties: Properties::new(),
            },
            (&r.new.labels, &tp_rec.labels),
        );

        if let Some(campaign) = &ev.campaign_id {
            let value = Value::String(campaign.clone());
            let existing = self
                .view()
                .index_seek(schema::CAMPAIGN, "campaignId", &value)?
                .unwrap_or_default();
            let (campaign_id, campaign_labels) = match existing.first() {
                Some(id) => (*id, self.labels_of(*id)?),
                None => {
                    let mut p = Properties::new();
                    p.insert("campaignId".into(), value);
                    mutated += 1;
                    (
                        self.create_node(&[schema::CAMPAIGN], p)?,
                        vec![schema::CAMPAIGN.to_owned()],
                    )
                }
            };
            let influenced = EdgeId(self.alloc_id()?);
            let edge = EdgeRecord {
                rel_type: schema::INFLUENCED_BY.into(),
                start: tp_id,
                end: campaign_id,
                properties: Properties::new(),
            };
            self.insert_edge(influenced, &edge, (&tp_rec.labels, &campaign_labels));
        }
        Ok(EventOutcome {
            customer_id: r.id,
            touchpoint_id: tp_id,
            is_new: r.is_new,
            nodes_mutated: mutated,
        })
    }

    /// Merges `duplicate` into `canonical`: every edge of the duplicate is re-pointed to the
    /// canonical node, properties and labels the canonical node lacks are copied, identity
    /// keys held by the duplicate move to the canonical node, then the duplicate is deleted.
    pub fn merge_nodes(
        &mut self,
        canonical: NodeId,
        duplicate: NodeId,
    ) -> Result<MergeOutcome, EngineError> {
        if canonical == duplicate {
            return Err(EngineError::invalid(
                "merge",
                "a node cannot be merged into itself",
            ));
        }
        let canon_old = self.node_record(canonical)?;
        let dup = self.node_record(duplicate)?;
        let edge_ids = self.edges_of(duplicate)?;
        for eid in &edge_ids {
            let old = self.edge_record(*eid)?;
            let mut moved = old.clone();
            if moved.start == duplicate {
                moved.start = canonical;
            }
            if moved.end == duplicate {
                moved.end = canonical;
            }
            self.remove_edge(*eid, &old)?;
            let ends = (self.labels_of(moved.start)?, self.labels_of(moved.end)?);
            self.insert_edge(*eid, &moved, (&ends.0, &ends.1));
        }
        // Identity keys the duplicate holds now answer with the canonical node.
        for (kind, value) in customer_identities(Some(&dup)) {
            if self.identity_holder(kind, &value)? == Some(duplicate) {
                self.txn.put(
                    Cf::Identity,
                    keys::identity_key(self.ws, kind, &value),
                    canonical.0.to_be_bytes().to_vec(),
                );
            }
        }
        let mut canon = canon_old.clone();
        for l in &dup.labels {
            if !canon.labels.contains(l) {
                canon.labels.push(l.clone());
            }
        }
        for (k, v) in &dup.properties {
            if canon.properties.get(k).is_none_or(Value::is_null) {
                canon.properties.insert(k.clone(), v.clone());
            }
        }
        if let (Some(Value::DateTime(a)), Some(Value::DateTime(b))) = (
            canon.properties.get("lastSeen"),
            dup.properties.get("lastSeen"),
        ) {
            let latest = (*a).max(*b);
            canon
                .properties
                .insert("lastSeen".into(), Value::DateTime(latest));
        }
        self.write_node(canonical, Some(&canon_old), Some(&canon))?;
        self.write_node(duplicate, Some(&dup), None)?;
        Ok(MergeOutcome {
            edges_moved: edge_ids.len() as u64,
        })
    }

    // ---- typed records ----

    pub fn get_record<T: Record>(&self, id: &str) -> Result<Option<T>, EngineError> {
        record::get_record(&*self.txn, self.ws, id)
    }

    pub fn find_records<T: Record>(&self, index: &str, value: &str) -> Result<Vec<T>, EngineError> {
        record::find_records(&*self.txn, self.ws, index, value)
    }

    pub fn scan_records<T: Record>(&self, scan: &RecordScan) -> Result<Vec<T>, EngineError> {
        record::scan_records(&*self.txn, self.ws, scan)
    }

    /// Inserts or replaces a record and keeps its secondary lookups exact.
    pub fn put_record<T: Record>(&mut self, rec: &T) -> Result<(), EngineError> {
        let id = rec.id();
        if id.is_empty() {
            return Err(EngineError::invalid(
                "record id",
                format!("{} record with an empty id", T::KIND),
            ));
        }
        let old_indexes: BTreeSet<(&'static str, String)> = match self.get_record::<T>(&id)? {
            Some(old) => old.indexes().into_iter().collect(),
            None => BTreeSet::new(),
        };
        let new_indexes: BTreeSet<(&'static str, String)> = rec.indexes().into_iter().collect();
        for (name, value) in old_indexes.difference(&new_indexes) {
            self.txn.delete(
                Cf::RecordIndex,
                keys::record_index_key(self.ws, T::KIND, name, value, &id),
            );
        }
        for (name, value) in new_indexes.difference(&old_indexes) {
            self.txn.put(
                Cf::RecordIndex,
                keys::record_index_key(self.ws, T::KIND, name, value, &id),
                Vec::new(),
            );
        }
        self.txn.put(
            Cf::Records,
            keys::record_key(self.ws, T::KIND, &id),
            record::encode_record(rec)?,
        );
        Ok(())
    }

    /// Deletes a record and its lookups; false when it did not exist.
    pub fn delete_record<T: Record>(&mut self, id: &str) -> Result<bool, EngineError> {
        let Some(old) = self.get_record::<T>(id)? else {
            return Ok(false);
        };
        for (name, value) in old.indexes() {
            self.txn.delete(
                Cf::RecordIndex,
                keys::record_index_key(self.ws, T::KIND, name, &value, id),
            );
        }
        self.txn
            .delete(Cf::Records, keys::record_key(self.ws, T::KIND, id));
        Ok(true)
    }
}

impl GraphRead for WorkspaceTxn<'_, '_> {
    fn node(&self, id: NodeId) -> Result<Option<Node>, EngineError> {
        self.view().node(id)
    }
    fn edge(&self, id: EdgeId) -> Result<Option<Edge>, EngineError> {
        self.view().edge(id)
    }
    fn label_count(&self, label: &str) -> Result<u64, EngineError> {
        self.view().label_count(label)
    }
    fn label_scan(&self, label: &str) -> Result<Vec<NodeId>, EngineError> {
        self.view().label_scan(label)
    }
    fn all_nodes(&self) -> Result<Vec<NodeId>, EngineError> {
        self.view().all_nodes()
    }
    fn node_count(&self) -> Result<u64, EngineError> {
        self.view().node_count()
    }
    fn adjacent(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
    ) -> Result<Vec<AdjacentEdge>, EngineError> {
        self.view().adjacent(id, direction, rel_type)
    }
    fn degree(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
    ) -> Result<u64, EngineError> {
        self.view().degree(id, direction, rel_type)
    }
    fn index_kind(&self, label: &str, property: &str) -> Option<IndexKind> {
        self.view().index_kind(label, property)
    }
    fn index_seek(
        &self,
        label: &str,
        property: &str,
        value: &Value,
    ) -> Result<Option<Vec<NodeId>>, EngineError> {
        self.view().index_seek(label, property, value)
    }
    fn index_range(
        &self,
        label: &str,
        property: &str,
        lower: Bound<&Value>,
        upper: Bound<&Value>,
        order: Order,
        limit: Option<usize>,
    ) -> Result<Option<Vec<NodeId>>, EngineError> {
        self.view()
            .index_range(label, property, lower, upper, order, limit)
    }
}

impl GraphWrite for WorkspaceTxn<'_, '_> {
    fn create_node(
        &mut self,
        labels: &[&str],
        properties: Properties,
    ) -> Result<NodeId, EngineError> {
        let mut unique: Vec<String> = Vec::with_capacity(labels.len());
        for l in labels {
            check_name("label", l)?;
            if !unique.iter().any(|u| u == l) {
                unique.push((*l).to_owned());
            }
        }
        let mut properties = properties;
        properties.retain(|_, v| !v.is_null());
        check_properties(&properties)?;
        let id = NodeId(self.alloc_id()?);
        self.write_node(
            id,
            None,
            Some(&NodeRecord {
                labels: unique,
                properties,
            }),
        )?;
        Ok(id)
    }

    fn set_node_property(
        &mut self,
        id: NodeId,
        key: &str,
        value: Value,
    ) -> Result<(), EngineError> {
        check_name("property key", key)?;
        codec::check_storable(&value)?;
        let old = self.node_record(id)?;
        let mut new = old.clone();
        if value.is_null() {
            new.properties.remove(key);
        } else {
            new.properties.insert(key.to_owned(), value);
        }
        if new != old {
            self.write_node(id, Some(&old), Some(&new))?;
        }
        Ok(())
    }

    fn replace_node_properties(
        &mut self,
        id: NodeId,
        properties: Properties,
    ) -> Result<(), EngineError> {
        let mut properties = properties;
        properties.retain(|_, v| !v.is_null());
        check_properties(&properties)?;
        let old = self.node_record(id)?;
        let new = NodeRecord {
            labels: old.labels.clone(),
            properties,
        };
        self.write_node(id, Some(&old), Some(&new))
    }

    fn add_node_label(&mut self, id: NodeId, label: &str) -> Result<(), EngineError> {
        check_name("label", label)?;
        let old = self.node_record(id)?;
        if old.labels.iter().any(|l| l == label) {
            return Ok(());
        }
        let mut new = old.clone();
        new.labels.push(label.to_owned());
        self.write_node(id, Some(&old), Some(&new))
    }

    fn remove_node_label(&mut self, id: NodeId, label: &str) -> Result<(), EngineError> {
        let old = self.node_record(id)?;
        if !old.labels.iter().any(|l| l == label) {
            return Ok(());
        }
        let mut new = old.clone();
        new.labels.retain(|l| l != label);
        self.write_node(id, Some(&old), Some(&new))
    }

    fn delete_node(&mut self, id: NodeId) -> Result<(), EngineError> {
        let old = self.node_record(id)?;
        if !self.edges_of(id)?.is_empty() {
            return Err(EngineError::NodeHasEdges(id));
        }
        self.write_node(id, Some(&old), None)
    }

    fn detach_delete_node(&mut self, id: NodeId) -> Result<(), EngineError> {
        let old = self.node_record(id)?;
        for eid in self.edges_of(id)? {
            let e = self.edge_record(eid)?;
            self.remove_edge(eid, &e)?;
        }
        self.write_node(id, Some(&old), None)
    }

    fn create_edge(
        &mut self,
        start: NodeId,
        end: NodeId,
        rel_type: &str,
        properties: Properties,
    ) -> Result<EdgeId, EngineError> {
        check_name("relationship type", rel_type)?;
        let mut properties = properties;
        properties.retain(|_, v| !v.is_null());
        check_properties(&properties)?;
        let mut ends = Vec::with_capacity(2);
        for n in [start, end] {
            match view::load_node(&*self.txn, self.ws, n)? {
                Some(r) => ends.push(r.labels),
                None => return Err(EngineError::NodeNotFound(n)),
            }
        }
        let id = EdgeId(self.alloc_id()?);
        self.insert_edge(
            id,
            &EdgeRecord {
                rel_type: rel_type.to_owned(),
                start,
                end,
                properties,
            },
            (&ends[0], &ends[1]),
        );
        Ok(id)
    }

    fn set_edge_property(
        &mut self,
        id: EdgeId,
        key: &str,
        value: Value,
    ) -> Result<(), EngineError> {
        check_name("property key", key)?;
        codec::check_storable(&value)?;
        let mut e = self.edge_record(id)?;
        if value.is_null() {
            e.properties.remove(key);
        } else {
            e.properties.insert(key.to_owned(), value);
        }
        self.txn.put(
            Cf::Edges,
            keys::edge_key(self.ws, id),
            codec::encode_edge(&e),
        );
        Ok(())
    }

    fn replace_edge_properties(
        &mut self,
        id: EdgeId,
        properties: Properties,
    ) -> Result<(), EngineError> {
        let mut properties = properties;
        properties.retain(|_, v| !v.is_null());
        check_properties(&properties)?;
        let mut e = self.edge_record(id)?;
        e.properties = properties;
        self.txn.put(
            Cf::Edges,
            keys::edge_key(self.ws, id),
            codec::encode_edge(&e),
        );
        Ok(())
    }

    fn delete_edge(&mut self, id: EdgeId) -> Result<(), EngineError> {
        let e = self.edge_record(id)?;
        self.remove_edge(id, &e)
    }
}
