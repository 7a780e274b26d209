//! Read snapshots: one workspace's graph and records at one moment, while writes continue.

use std::borrow::Cow;
use std::ops::Bound;
use std::sync::Arc;

use roaring::RoaringTreemap;

use crate::catalog::{CatalogCache, OnlineIndexes};
use crate::codec;
use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys;
use crate::labels::WorkspaceLabels;
use crate::model::{AdjacentEdge, Direction, Edge, EdgeId, Node, NodeId, Value, WorkspaceId};
use crate::read::{GraphRead, Hop, IndexKind, IndexStats, Order, PlanScope, PropertyTest};
use crate::readmodel::{ReadModels, Version};
use crate::record::{Record, RecordScan};
use crate::record_io as record;
use crate::store::{KvRead, Step, StoreSnapshot};
use crate::view::{LabelSource, View};

struct SnapshotLabels(WorkspaceLabels);

impl LabelSource for SnapshotLabels {
    fn label_bitmap(
        &self,
        _ws: WorkspaceId,
        label: &str,
    ) -> Result<Cow<'_, RoaringTreemap>, EngineError> {
        Ok(match self.0.get(label) {
            Some(b) => Cow::Borrowed(&**b),
            None => Cow::Owned(RoaringTreemap::new()),
        })
    }
}

/// A consistent view of one workspace. Cheap to take; holds RocksDB's snapshot until dropped.
pub struct Snapshot<'g> {
    snap: StoreSnapshot<'g>,
    labels: SnapshotLabels,
    ws: WorkspaceId,
    /// What query plans made over this snapshot may be reused with (`GraphRead::plan_scope`).
    scope: PlanScope,
    /// The workspace's statistics version (`GraphRead::statistics_version`).
    statistics: u64,
    /// The graph's cache of declared indexes, and this snapshot's entry of it (made on first
    /// use; None when reading the catalog failed: then each call reads its row).
    catalogs: &'g CatalogCache,
    online: std::sync::OnceLock<Option<OnlineIndexes>>,
    models: &'g ReadModels,
    /// The workspace's read model when the snapshot was taken (see `readmodel`).
    model: Option<Arc<Version>>,
    /// Its view for the batch executor, made on first use (the touched set then is a superset
    /// of the commits this snapshot sees, which is all exactness needs).
    view: std::sync::OnceLock<Option<crate::readmodel::ModelView>>,
}

impl std::fmt::Debug for Snapshot<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("ws", &self.ws).finish()
    }
}

impl<'g> Snapshot<'g> {
    /// Called under the visibility lock, so the model's delta holds every commit before it.
    pub(crate) fn new(
        snap: StoreSnapshot<'g>,
        labels: WorkspaceLabels,
        scope: PlanScope,
        statistics: u64,
        models: &'g ReadModels,
        catalogs: &'g CatalogCache,
    ) -> Self {
        let ws = WorkspaceId(scope.workspace);
        Snapshot {
            snap,
            labels: SnapshotLabels(labels),
            ws,
            scope,
            statistics,
            catalogs,
            online: std::sync::OnceLock::new(),
            models,
            model: models.current(ws),
            view: std::sync::OnceLock::new(),
        }
    }

    /// Whether this snapshot has a read model to answer scans and traversals from.
    pub fn has_read_model(&self) -> bool {
        self.model.is_some()
    }

    /// Heap bytes of the read model this snapshot uses (None: it has none).
    pub fn read_model_bytes(&self) -> Option<usize> {
        self.model.as_ref().map(|m| m.bytes())
    }

    /// The read model, or None after asking for one to be built in the background (and a
    /// rebuild when the model's delta has outgrown it).
    fn model(&self) -> Option<&Version> {
        match self.model.as_deref() {
            None => self.models.request(self.ws),
            Some(version) => self.models.note_use(self.ws, version),
        }
        self.model.as_deref()
    }

    /// Every index of this workspace as of this snapshot (built-in, then declared).
    pub fn indexes(&self) -> Result<Vec<crate::catalog::IndexInfo>, EngineError> {
        crate::catalog::all_indexes(&self.snap, self.ws)
    }

    pub fn workspace_id(&self) -> WorkspaceId {
        self.ws
    }

    fn view(&self) -> View<'_> {
        View {
            kv: &self.snap,
            labels: &self.labels,
            ws: self.ws,
        }
    }

    pub fn get_record<T: Record>(&self, id: &str) -> Result<Option<T>, EngineError> {
        record::get_record(&self.snap, self.ws, id)
    }

    pub fn find_records<T: Record>(&self, index: &str, value: &str) -> Result<Vec<T>, EngineError> {
        record::find_records(&self.snap, self.ws, index, value)
    }

    pub fn scan_records<T: Record>(&self, scan: &RecordScan) -> Result<Vec<T>, EngineError> {
        record::scan_records(&self.snap, self.ws, scan)
    }
}

impl GraphRead for Snapshot<'_> {
    fn node(&self, id: NodeId) -> Result<Option<Node>, EngineError> {
        self.view().node(id)
    }
    fn edge(&self, id: EdgeId) -> Result<Option<Edge>, EngineError> {
        self.view().edge(id)
    }
    /// Every node of the workspace is in the all-nodes bitmap (`validate` checks it).
    fn node_exists(&self, id: NodeId) -> Result<bool, EngineError> {
        Ok(self
            .labels
            .0
            .get(crate::schema::ALL_NODES)
            .is_some_and(|b| b.contains(id.0)))
    }
    fn node_property(&self, id: NodeId, key: &str) -> Result<Option<Option<Value>>, EngineError> {
        // Without a model, no build is asked for here: a few point reads are not worth one.
        if self.model.is_none() {
            return Ok(None);
        }
        Ok(self
            .model_view_ref()
            .and_then(|m| crate::read::model_node_property(m, id, key)))
    }
    fn label_count(&self, label: &str) -> Result<u64, EngineError> {
        self.view().label_count(label)
    }
    fn label_scan(&self, label: &str) -> Result<Vec<NodeId>, EngineError> {
        self.view().label_scan(label)
    }
    fn has_label(&self, id: NodeId, label: &str) -> Result<bool, EngineError> {
        self.view().has_label(id, label)
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
    /// From the writer's degree counters: one point read for a type, a short scan of the
    /// node's counters for all types.
    fn degree(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
    ) -> Result<u64, EngineError> {
        let count = |b: &[u8]| {
            keys::read_count(b).ok_or_else(|| EngineError::Corrupt {
                context: "degree counter",
                detail: format!("{b:?}"),
            })
        };
        let total = match rel_type {
            Some(t) => match self
                .snap
                .get(Cf::Counts, &keys::degree_key(self.ws, id, direction, t))?
            {
                Some(b) => count(&b)?,
                None => 0,
            },
            None => {
                let prefix = keys::degree_prefix(self.ws, id, direction);
                let end = keys::prefix_end(&prefix);
                let (mut total, mut bad) = (0i64, None);
                self.snap
                    .scan(Cf::Counts, &prefix, end.as_deref(), false, &mut |_, v| {
                        match count(v) {
                            Ok(n) => total += n,
                            Err(e) => bad = Some(e),
                        }
                        bad.is_none()
                    })?;
                if let Some(e) = bad {
                    return Err(e);
                }
                total
            }
        };
        Ok(u64::try_from(total).unwrap_or(0))
    }
    fn count_adjacent(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
        neighbour_label: Option<&str>,
    ) -> Result<u64, EngineError> {
        let Some(label) = neighbour_label else {
            return self.degree(id, direction, rel_type);
        };
        if label == crate::schema::ALL_NODES {
            return Ok(0);
        }
        if let Some(t) = rel_type {
            // When every relationship of the type has a `label` node at the far end, the
            // degree is the answer.
            let far = match direction {
                Direction::Outgoing => Direction::Incoming,
                Direction::Incoming => Direction::Outgoing,
            };
            let total = self.counter(&keys::type_count_key(self.ws, t))?;
            let with = self.counter(&keys::endpoint_label_key(self.ws, t, far, label))?;
            if total == with {
                return self.degree(id, direction, rel_type);
            }
        }
        let bits = self.labels.label_bitmap(self.ws, label)?;
        let prefix = keys::adjacency_prefix(self.ws, id, Some(direction), rel_type);
        let end = keys::prefix_end(&prefix);
        let mut n = 0u64;
        // The neighbour is the second-to-last u64 of an adjacency key: no decoding needed.
        self.snap.scan(
            Cf::Adjacency,
            &prefix,
            end.as_deref(),
            false,
            &mut |k, _| {
                let neighbour = k
                    .len()
                    .checked_sub(16)
                    .and_then(|at| keys::read_u64(&k[at..]));
                if neighbour.is_some_and(|nb| bits.contains(nb)) {
                    n += 1;
                }
                true
            },
        )?;
        Ok(n)
    }
    fn scan_label_values(
        &self,
        label: &str,
        keys: &[&str],
        visit: &mut dyn FnMut(NodeId, &[Option<Value>]) -> bool,
    ) -> Result<(), EngineError> {
        /// Ids further apart than this are sought; closer ones are reached by stepping (a step
        /// costs a fraction of a seek, and ids of other labels and of edges lie in between).
        const STEP_GAP: u64 = 32;
        if label == crate::schema::ALL_NODES {
            return Ok(());
        }
        let bits = self.labels.label_bitmap(self.ws, label)?;
        let mut ids = bits.iter().peekable();
        let Some(&first) = ids.peek() else {
            return Ok(());
        };
        // The record format stores keys in ascending order: decode in that order.
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by_key(|i| keys[*i]);
        order.dedup_by_key(|i| keys[*i]);
        let sorted: Vec<&str> = order.iter().map(|i| keys[*i]).collect();
        let canonical: Vec<usize> = (0..keys.len())
            .map(|i| keys.iter().position(|k| *k == keys[i]).unwrap_or(i))
            .collect();
        let mut decoded = vec![None; sorted.len()];
        let mut values: Vec<Option<Value>> = vec![None; keys.len()];
        let upper = keys::prefix_end(&keys::workspace_prefix(self.ws));
        let mut failure = None;
        let ws = self.ws;
        let target = |id: u64, at: u64| {
            if id - at > STEP_GAP {
                Step::Seek(keys::node_key(ws, NodeId(id)))
            } else {
                Step::Next
            }
        };
        self.snap.walk(
            Cf::Nodes,
            &keys::node_key(self.ws, NodeId(first)),
            upper.as_deref(),
            &mut |k, v| {
                let Some(at) = keys::decode_id_key(k).map(|(_, id)| id) else {
                    failure = Some(EngineError::Corrupt {
                        context: "node key",
                        detail: format!("{k:?}"),
                    });
                    return Step::Stop;
                };
                // Ids of the bitmap without a record cannot happen in a consistent store;
                // skip them rather than stop.
                while ids.next_if(|id| *id < at).is_some() {}
                let Some(&want) = ids.peek() else {
                    return Step::Stop;
                };
                if want > at {
                    return target(want, at);
                }
                ids.next();
                if let Err(e) = codec::node_values(v, &sorted, &mut decoded) {
                    failure = Some(e);
                    return Step::Stop;
                }
                for (slot, &i) in order.iter().enumerate() {
                    values[i] = decoded[slot].take();
                }
                // A key asked for twice gets its value twice.
                for (i, &j) in canonical.iter().enumerate() {
                    if i != j {
                        values[i] = values[j].clone();
                    }
                }
                if !visit(NodeId(at), &values) {
                    return Step::Stop;
                }
                match ids.peek() {
                    Some(&next) => target(next, at),
                    None => Step::Stop,
                }
            },
        )?;
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
    fn index_stats(&self, label: &str, property: &str) -> Result<Option<IndexStats>, EngineError> {
        if self.index_kind(label, property).is_none() {
            return Ok(None);
        }
        let mut counts = [0u64; keys::INDEX_VALUE_TAGS.len()];
        for (slot, tag) in counts.iter_mut().zip(keys::INDEX_VALUE_TAGS) {
            let key = keys::index_count_key(self.ws, label, property, tag);
            if let Some(b) = self.snap.get(Cf::Counts, &key)? {
                let n = keys::read_count(&b).ok_or_else(|| EngineError::Corrupt {
                    context: "index counter",
                    detail: format!("{b:?}"),
                })?;
                *slot = u64::try_from(n).unwrap_or(0);
            }
        }
        let [booleans, numbers, datetimes, strings, rest @ ..] = counts;
        Ok(Some(IndexStats {
            booleans,
            numbers,
            datetimes,
            strings,
            other_temporals: rest.iter().sum(),
        }))
    }
    /// From memory: the built-in indexes, then the graph's cached catalog at this snapshot's
    /// version (no RocksDB read on the planner's path).
    fn index_kind(&self, label: &str, property: &str) -> Option<IndexKind> {
        if let Some(d) = crate::schema::index_for(label, property) {
            return Some(d.kind);
        }
        let online = self.online.get_or_init(|| {
            self.catalogs
                .online(&self.snap, self.ws, self.scope.schema)
                .ok()
        });
        match online {
            Some(rows) => rows
                .iter()
                .find(|(l, p, _)| l == label && p == property)
                .map(|(_, _, kind)| *kind),
            None => self.view().index_kind(label, property),
        }
    }
    fn plan_scope(&self) -> Option<PlanScope> {
        Some(self.scope)
    }
    fn statistics_version(&self) -> Option<u64> {
        Some(self.statistics)
    }
    fn count_label_where(
        &self,
        label: &str,
        tests: &[PropertyTest],
    ) -> Result<Option<u64>, EngineError> {
        match self.model() {
            Some(m) => m.count_where(self, label, tests).map(Some),
            None => Ok(None),
        }
    }
    fn model_view(&self) -> Option<crate::readmodel::ModelView> {
        self.model_view_ref().cloned()
    }
    fn reach_count(&self, starts: &[NodeId], hops: &[Hop]) -> Result<Option<u64>, EngineError> {
        match self.model() {
            Some(m) => m.reach(self, starts, hops).map(Some),
            None => Ok(None),
        }
    }
    fn index_seek(
        &self,
        label: &str,
        property: &str,
        value: &Value,
    ) -> Result<Option<Vec<NodeId>>, EngineError> {
        if let Some(ids) = self.model_seek(label, property, value) {
            return Ok(Some(ids));
        }
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

impl Snapshot<'_> {
    /// The model view, made on first use (`model_view` without the clone).
    fn model_view_ref(&self) -> Option<&crate::readmodel::ModelView> {
        self.view
            .get_or_init(|| self.model().map(Version::view))
            .as_ref()
    }

    /// An equality seek answered by the read model, when it is exact for this snapshot (no
    /// node touched since its base was taken) and the index exists: the same nodes, in the
    /// same (ascending id) order, as the index would give, without a RocksDB seek. None: read
    /// the index.
    pub(crate) fn model_seek(
        &self,
        label: &str,
        property: &str,
        value: &Value,
    ) -> Option<Vec<NodeId>> {
        // Without a model, no build is asked for here: a point read is not worth one.
        self.model.as_ref()?;
        let m = self.model_view_ref()?;
        if !m.untouched() || self.index_kind(label, property).is_none() {
            return None;
        }
        let Some(rows) = m.label(label) else {
            // No node of the base carries the label, and no commit since added one.
            return Some(Vec::new());
        };
        let dense = rows.seek(property, value)?;
        Some(dense.into_iter().map(|d| m.id(d)).collect())
    }

    /// One counter of `Cf::Counts` (0 when absent).
    fn counter(&self, key: &[u8]) -> Result<i64, EngineError> {
        match self.snap.get(Cf::Counts, key)? {
            Some(b) => keys::read_count(&b).ok_or_else(|| EngineError::Corrupt {
                context: "counter",
                detail: format!("{b:?}"),
            }),
            None => Ok(0),
        }
    }

    /// The customer identity resolution would answer for these keys, without creating or
    /// enriching anything (priority: a known customer id, then email, phone, external id).
    pub fn find_customer(
        &self,
        keys_in: &crate::identity::IdentityKeys,
    ) -> Result<Option<NodeId>, EngineError> {
        if let Some(id) = keys_in.customer_id {
            if self
                .node(id)?
                .is_some_and(|n| n.has_label(crate::schema::CUSTOMER))
            {
                return Ok(Some(id));
            }
        }
        for (kind, value) in keys_in.normalized() {
            if let Some(b) = self.snap.get(
                Cf::Identity,
                &crate::keys::identity_key(self.ws, kind, &value),
            )? {
                let id = crate::keys::read_u64(&b).ok_or_else(|| EngineError::Corrupt {
                    context: "identity index",
                    detail: format!("{b:?}"),
                })?;
                return Ok(Some(NodeId(id)));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::graph::{Graph, GraphOptions};
    use crate::model::{NodeId, Properties, Value, WorkspaceId};
    use crate::read::{GraphRead, GraphWrite};
    use crate::EngineError;

    const WS: WorkspaceId = WorkspaceId(5);

    fn name(s: &str) -> Properties {
        [("name".to_owned(), Value::String(s.into()))]
            .into_iter()
            .collect()
    }

    fn string(s: &str) -> Option<Option<Value>> {
        Some(Some(Value::String(s.into())))
    }

    #[test]
    fn property_reads_from_the_model_and_existence_agree_with_the_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let g = Graph::open(dir.path(), GraphOptions::default()).expect("open");
        let (ann, bob, bare, elsewhere) = g
            .write(|t| -> Result<_, EngineError> {
                let mut w = t.workspace(WS);
                let mut p = name("Ann");
                p.insert("score".into(), Value::Int(3));
                let ann = w.create_node(&["Customer", "Lead"], p)?;
                let bob = w.create_node(&["Customer"], name("Bob"))?;
                let bare = w.create_node(&[], name("Bare"))?;
                let elsewhere = t
                    .workspace(WorkspaceId(6))
                    .create_node(&["Customer"], name("Eve"))?;
                Ok((ann, bob, bare, elsewhere))
            })
            .expect("write");
        // No model yet: no answer (and the caller loads the node).
        assert_eq!(
            g.snapshot(WS).node_property(ann, "name").expect("read"),
            None
        );
        assert!(g.prepare_read_model(WS).expect("model").is_some());
        let s1 = g.snapshot(WS);
        let prop = |s: &crate::Snapshot<'_>, id, key| s.node_property(id, key).expect("read");
        assert_eq!(prop(&s1, ann, "name"), string("Ann"));
        assert_eq!(prop(&s1, ann, "score"), Some(Some(Value::Int(3))));
        assert_eq!(prop(&s1, ann, "nope"), Some(None));
        assert_eq!(prop(&s1, bob, "score"), Some(None));
        // An unlabelled node has no columns; another workspace's node is not here.
        assert_eq!(prop(&s1, bare, "name"), None);
        assert_eq!(prop(&s1, elsewhere, "name"), None);
        let exists = |s: &crate::Snapshot<'_>, id| s.node_exists(id).expect("exists");
        assert!(exists(&s1, ann) && exists(&s1, bare));
        assert!(!exists(&s1, elsewhere) && !exists(&s1, NodeId(1 << 40)));
        g.write(move |t| -> Result<_, EngineError> {
            let mut w = t.workspace(WS);
            w.set_node_property(ann, "name", Value::String("Ann 2".into()))?;
            w.delete_node(bob)
        })
        .expect("write");
        // Touched since the model: read from the store, not from the model.
        let s2 = g.snapshot(WS);
        assert_eq!(prop(&s2, ann, "name"), None);
        assert!(!exists(&s2, bob));
        assert_eq!(prop(&s2, bob, "name"), None);
        // The older snapshot keeps its moment.
        assert_eq!(prop(&s1, ann, "name"), string("Ann"));
        assert!(exists(&s1, bob));
    }

    #[test]
    fn equality_seeks_from_the_model_are_the_index_seeks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let g = Graph::open(dir.path(), GraphOptions::default()).expect("open");
        let first = g
            .write(|t| -> Result<_, EngineError> {
                let mut first = None;
                for i in 0..90u32 {
                    let mut p = Properties::new();
                    // phone: strings only; score: integers only; externalId: floats only;
                    // email: strings and integers (a column the model does not answer).
                    if i % 5 != 0 {
                        p.insert(
                            "phone".into(),
                            Value::String(["a", "b", "c", ""][i as usize % 4].into()),
                        );
                    }
                    if i % 7 != 0 {
                        p.insert("score".into(), Value::Int(i64::from(i % 5) - 2));
                    }
                    if i % 3 != 0 {
                        p.insert(
                            "externalId".into(),
                            Value::Float([-0.0, 0.0, 0.5, 1.0, 2.0][i as usize % 5]),
                        );
                    }
                    p.insert(
                        "email".into(),
                        if i % 2 == 0 {
                            Value::Int(1)
                        } else {
                            Value::String("a".into())
                        },
                    );
                    let labels: &[&str] = if i % 11 == 0 {
                        &["Lead"]
                    } else {
                        &["Customer"]
                    };
                    let id = t.workspace(WS).create_node(labels, p.clone())?;
                    if i % 11 != 0 {
                        first.get_or_insert(id);
                    }
                    t.workspace(WorkspaceId(6)).create_node(&["Customer"], p)?;
                }
                Ok(first.expect("created"))
            })
            .expect("write");
        assert!(g.prepare_read_model(WS).expect("model").is_some());
        let queries = [
            Value::String("a".into()),
            Value::String("b".into()),
            Value::String(String::new()),
            Value::String("zz".into()),
            Value::Int(1),
            Value::Int(0),
            Value::Int(-2),
            Value::Float(1.0),
            Value::Float(-0.0),
            Value::Float(0.5),
            Value::Float(f64::NAN),
            Value::Bool(true),
            Value::Null,
        ];
        let check = |s: &crate::Snapshot<'_>, answered: bool| {
            for key in ["phone", "score", "externalId", "email"] {
                for q in &queries {
                    let want = s.view().index_seek("Customer", key, q).expect("index");
                    let got = s.index_seek("Customer", key, q).expect("seek");
                    assert_eq!(got, want, "{key} = {q:?}");
                    let numeric = matches!(q, Value::Int(_) | Value::Float(_));
                    let typed = matches!(q, Value::String(_))
                        || (numeric && !matches!(q, Value::Float(f) if f.is_nan()));
                    if answered && key != "email" && typed {
                        assert_eq!(s.model_seek("Customer", key, q), want, "{key} = {q:?}");
                    }
                }
            }
            // No index on the property: neither answers.
            assert_eq!(s.model_seek("Customer", "nope", &queries[0]), None);
            assert_eq!(
                s.index_seek("Customer", "nope", &queries[0]).expect("seek"),
                None
            );
        };
        let s1 = g.snapshot(WS);
        check(&s1, true);
        assert!(!s1
            .index_seek("Customer", "phone", &queries[0])
            .expect("seek")
            .expect("indexed")
            .is_empty());
        g.write(move |t| -> Result<_, EngineError> {
            t.workspace(WS)
                .set_node_property(first, "phone", Value::String("zz".into()))
        })
        .expect("write");
        // Touched since the model: the index answers (and sees the write).
        let s2 = g.snapshot(WS);
        assert_eq!(s2.model_seek("Customer", "phone", &queries[3]), None);
        check(&s2, false);
        assert_eq!(
            s2.index_seek("Customer", "phone", &queries[3])
                .expect("seek"),
            Some(vec![first])
        );
        check(&s1, true);
    }
}
