//! svc-engine: a native property-graph store on RocksDB.
//!
//! - Nodes with labels and typed properties, directed typed edges with adjacency in both
//!   directions, all scoped by workspace (every key starts with it).
//! - A roaring-bitmap label index, declared property indexes (equality and ordered, see
//!   `schema`), and an identity index for resolving customers by email, phone or external id.
//! - Durable, atomic writes through one writer thread with group commit (`Graph::write`), and
//!   consistent read snapshots (`Graph::snapshot`) implementing [`GraphRead`].
//! - Typed domain records ([`Record`]) in the same database, committed atomically with graph
//!   changes.
//!
//! ```no_run
//! use svc_engine::{EventInput, Graph, GraphOptions, GraphRead, IdentityKeys, WorkspaceId};
//! let graph = Graph::open("./data", GraphOptions::default())?;
//! let ws = WorkspaceId(1);
//! let ev = EventInput {
//!     keys: IdentityKeys { email: Some("ada@example.com".into()), ..Default::default() },
//!     action: "page_viewed".into(),
//!     ts: 1_735_689_600_000_000,
//!     ..Default::default()
//! };
//! let outcome = graph.record_event(ws, ev)?;
//! assert_eq!(graph.snapshot(ws).label_count("Customer")?, 1);
//! # Ok::<(), svc_engine::EngineError>(())
//! ```

mod bitmap;
mod codec;
pub mod columns;
mod error;
mod graph;
mod identity;
pub mod keys;
mod labels;
mod migrate;
mod model;
mod read;
mod record;
pub mod schema;
mod snapshot;
mod store;
mod txn;
mod validate;
mod view;
mod writer;

pub use error::EngineError;
pub use graph::{Graph, GraphOptions};
pub use identity::{
    normalize_email, normalize_external_id, normalize_phone, EventInput, EventOutcome, IdentityKeys,
};
pub use keys::IdentityKind;
pub use migrate::FORMAT_VERSION;
pub use model::{
    AdjacentEdge, Direction, Edge, EdgeId, Node, NodeId, Properties, Value, WorkspaceId,
};
pub use read::{GraphRead, GraphWrite, IndexKind, Order};
pub use record::{Record, RecordScan};
pub use snapshot::Snapshot;
pub use store::StoreOptions;
pub use txn::{MergeOutcome, WorkspaceTxn, WriteTxn};
pub use validate::ValidationReport;
