//! The label index: one roaring bitmap of node ids per (workspace, label).
//!
//! The bitmaps live in memory (counting a label is a cardinality) and on disk in `Cf::Labels`,
//! where each commit appends a merge delta instead of rewriting the bitmap. Bitmaps are shared
//! copy-on-write with snapshots, so a snapshot keeps the membership of its moment.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;
use roaring::RoaringTreemap;

use crate::bitmap::{self, Delta};
use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys;
use crate::model::WorkspaceId;
use crate::store::KvRead;

/// Bitmaps of one workspace, by label; the map is shared copy-on-write too, so taking a
/// snapshot copies one pointer (a commit copies the map of a workspace a snapshot still holds).
pub(crate) type WorkspaceLabels = Arc<HashMap<String, Arc<RoaringTreemap>>>;

#[derive(Debug, Default)]
pub(crate) struct LabelIndex {
    by_workspace: RwLock<HashMap<WorkspaceId, WorkspaceLabels>>,
}

impl LabelIndex {
    /// Reads every persisted bitmap (RocksDB folds pending deltas into each value on read).
    pub fn load(kv: &dyn KvRead) -> Result<LabelIndex, EngineError> {
        let mut map: HashMap<WorkspaceId, WorkspaceLabels> = HashMap::new();
        let mut failure = None;
        kv.scan(Cf::Labels, &[], None, false, &mut |k, v| match (
            keys::decode_label_key(k),
            bitmap::decode_full(v),
        ) {
            (Some((ws, label)), Some(bits)) => {
                Arc::make_mut(map.entry(ws).or_default()).insert(label, Arc::new(bits));
                true
            }
            _ => {
                failure = Some(EngineError::Corrupt {
                    context: "label bitmap",
                    detail: format!("key {k:?}"),
                });
                false
            }
        })?;
        match failure {
            Some(e) => Err(e),
            None => Ok(LabelIndex {
                by_workspace: RwLock::new(map),
            }),
        }
    }

    /// The current bitmaps of one workspace (cheap: the bitmaps themselves are shared).
    pub fn workspace(&self, ws: WorkspaceId) -> WorkspaceLabels {
        self.by_workspace
            .read()
            .get(&ws)
            .cloned()
            .unwrap_or_default()
    }

    pub fn get(&self, ws: WorkspaceId, label: &str) -> Option<Arc<RoaringTreemap>> {
        self.by_workspace
            .read()
            .get(&ws)
            .and_then(|m| m.get(label))
            .cloned()
    }

    /// Every (workspace, label) bitmap, for validation.
    pub fn all(&self) -> HashMap<WorkspaceId, WorkspaceLabels> {
        self.by_workspace.read().clone()
    }

    /// Applies committed deltas. Callers hold the visibility lock, so snapshots see either all
    /// of a commit or none of it.
    pub fn apply(&self, deltas: &BTreeMap<(WorkspaceId, String), Delta>) {
        let mut guard = self.by_workspace.write();
        for ((ws, label), delta) in deltas {
            let labels = Arc::make_mut(guard.entry(*ws).or_default());
            let bits = labels.entry(label.clone()).or_default();
            delta.apply_to(Arc::make_mut(bits));
            if bits.is_empty() {
                labels.remove(label);
            }
        }
    }
}
