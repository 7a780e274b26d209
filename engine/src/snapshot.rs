//! Read snapshots: one workspace's graph and records at one moment, while writes continue.

use std::borrow::Cow;
use std::ops::Bound;

use roaring::RoaringTreemap;

use crate::error::EngineError;
use crate::labels::WorkspaceLabels;
use crate::model::{AdjacentEdge, Direction, Edge, EdgeId, Node, NodeId, Value, WorkspaceId};
use crate::read::{GraphRead, IndexKind, Order};
use crate::record::{Record, RecordScan};
use crate::record_io as record;
use crate::store::StoreSnapshot;
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
}

impl std::fmt::Debug for Snapshot<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("ws", &self.ws).finish()
    }
}

impl<'g> Snapshot<'g> {
    pub(crate) fn new(snap: StoreSnapshot<'g>, labels: WorkspaceLabels, ws: WorkspaceId) -> Self {
        Snapshot {
            snap,
            labels: SnapshotLabels(labels),
            ws,
        }
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

impl Snapshot<'_> {
    /// The customer identity resolution would answer for these keys, without creating or
    /// enriching anything (priority: a known customer id, then email, phone, external id).
    pub fn find_customer(
        &self,
        keys_in: &crate::identity::IdentityKeys,
    ) -> Result<Option<NodeId>, EngineError> {
        use crate::columns::Cf;
        use crate::store::KvRead;
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
