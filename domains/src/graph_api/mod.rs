//! Graph access for the customer, graph-export and graph-query domains: the read-only guard
//! inside write transactions, node rendering, and (submodules) export, paths, queries and
//! value conversion. Consistent reads are `Store::read`.

pub mod access;
pub mod export;
pub mod path;
pub mod query;
pub mod schema;
pub mod values;

use svc_core::store::WorkspaceTxn;
use svc_engine::{GraphRead, Node, NodeId};

use svc_core::error::Result;
use svc_core::workspaces::{WorkspaceSettings, SETTINGS_ID};

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
