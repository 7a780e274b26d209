//! Graph access for the customer, graph-export and graph-query domains: consistent snapshots on
//! the blocking pool, the read-only guard inside write transactions, and node rendering.

pub mod export;
pub mod path;
pub mod query;

use svc_engine::{GraphRead, Node, NodeId, Snapshot, WorkspaceTxn};

use crate::error::Result;
use crate::store::{Store, WorkspaceId};
use crate::workspaces::{WorkspaceSettings, SETTINGS_ID};

/// Runs `f` on one consistent snapshot of `ws`, on the blocking pool.
pub async fn with_snapshot<R, F>(store: &Store, ws: WorkspaceId, f: F) -> Result<R>
where
    R: Send + 'static,
    F: FnOnce(&Snapshot<'_>) -> Result<R> + Send + 'static,
{
    store.read(ws, f).await
}

/// Refuses writes to a read-only workspace, checked inside the write so that it is atomic with
/// it. A workspace without a settings record (never the case for registered workspaces) is
/// writable.
pub fn ensure_writable(w: &WorkspaceTxn<'_, '_>) -> Result<()> {
    match w.get_record::<WorkspaceSettings>(SETTINGS_ID)? {
        Some(settings) => settings.ensure_writable(),
        None => Ok(()),
    }
}

/// The node `id` if it exists and carries `label`.
pub fn node_with_label<R: GraphRead + ?Sized>(
    r: &R,
    id: NodeId,
    label: &str,
) -> Result<Option<Node>> {
    Ok(r.node(id)?.filter(|n| n.has_label(label)))
}
