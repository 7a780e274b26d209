//! svc-engine: a native property-graph store on RocksDB.
//!
//! - Nodes with labels and typed properties, directed typed edges with adjacency in both
//!   directions, all scoped by workspace (every key starts with it).
//! - A roaring-bitmap label index, declared property indexes (equality and ordered, see
//!   `schema`), and an identity index for resolving customers by email, phone or external id.
//! - Event recording (`events`): identity resolution and the customer, touchpoint and campaign
//!   an event writes, built on the generic write transaction (`txn`).
//! - Durable, atomic writes through one writer thread with group commit (`Graph::write`), and
//!   consistent read snapshots (`Graph::snapshot`) implementing [`GraphRead`].
//! - Typed domain records ([`Record`]) in the same database, committed atomically with graph
//!   changes.
//!
//! Everything that touches RocksDB is behind the default `storage` feature; without it the
//! crate is the data model and the [`GraphRead`] / [`GraphWrite`] interfaces alone.
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

#[cfg(feature = "storage")]
mod bitmap;
#[cfg(feature = "storage")]
pub mod catalog;
#[cfg(feature = "storage")]
mod codec;
pub mod columns;
#[cfg(feature = "storage")]
mod epochs;
mod error;
mod events;
#[cfg(all(test, feature = "storage"))]
mod faults;
#[cfg(feature = "storage")]
mod graph;
mod identity;
pub mod keys;
#[cfg(feature = "storage")]
mod labels;
#[cfg(feature = "storage")]
mod migrate;
mod model;
#[cfg(feature = "storage")]
mod oneshot;
mod read;
mod readmodel;
mod record;
#[cfg(feature = "storage")]
pub mod record_encoding;
#[cfg(feature = "storage")]
mod record_io;
#[cfg(feature = "storage")]
mod record_kinds;
pub mod schema;
#[cfg(feature = "storage")]
mod snapshot;
#[cfg(feature = "storage")]
mod store;
#[cfg(feature = "storage")]
mod txn;
#[cfg(feature = "storage")]
mod validate;
#[cfg(feature = "storage")]
mod view;
#[cfg(feature = "storage")]
mod writer;

pub use error::{EngineError, ErrorKind};
#[cfg(feature = "storage")]
pub use events::MergeOutcome;
pub use events::{EventInput, EventOutcome};
#[cfg(feature = "storage")]
pub use graph::{Graph, GraphOptions};
pub use identity::{normalize_email, normalize_external_id, normalize_phone, IdentityKeys};
pub use keys::IdentityKind;
#[cfg(feature = "storage")]
pub use migrate::{downgrade_to_format_three, record_census, RecordCensus, FORMAT_VERSION};
pub use model::{
    AdjacentEdge, Direction, DurationValue, Edge, EdgeId, Node, NodeId, Properties, Value,
    WorkspaceId, ZonedDateTime,
};
#[cfg(feature = "storage")]
pub use oneshot::Receiver as WriteOutcome;
pub use read::{
    compare_values, model_node_property, values_equal, Comparison, GraphRead, GraphWrite, Hop,
    IndexKind, IndexStats, Order, PlanScope, PropertyTest,
};
pub use readmodel::{ColumnView, CsrView, LabelView, ModelView, ReadModelState, NO_CODE};
pub use record::{Record, RecordScan};
#[cfg(feature = "storage")]
pub use record_kinds::RecordKinds;
#[cfg(feature = "storage")]
pub use snapshot::Snapshot;
#[cfg(feature = "storage")]
pub use store::StoreOptions;
#[cfg(feature = "storage")]
pub use txn::{WorkspaceTxn, WriteTxn};
#[cfg(feature = "storage")]
pub use validate::ValidationReport;
