//! The in-memory read model: columns and CSR adjacency per workspace, for the scans, counts
//! and traversals that would otherwise read thousands of nodes from RocksDB one by one.
//!
//! RocksDB stays the durable truth; the model is a cache that is exact at every snapshot:
//! - A *version* is a `Base` (built by one sequential walk of a snapshot taken at commit point
//!   S) plus a *delta*: the ids of every node a commit touched after S (its record, labels or
//!   adjacency changed). The writer adds to the delta inside the visibility lock, so a snapshot
//!   taken later sees every commit before it in the delta (and perhaps later ones too, which is
//!   harmless: touched nodes are read from the snapshot itself).
//! - A snapshot holds the version that was current when it was taken; queries answer untouched
//!   nodes from the base and touched ones from the snapshot (`eval`).
//! - When a query uses a version whose delta outgrows `REBUILD_FRACTION` of the base, a new
//!   base is built in the background (its own delta starts at its own snapshot) and replaces
//!   the version; snapshots holding the old one keep using it. Rebuilds are asked for by
//!   queries, not by commits, and a workspace's next rebuild waits `REBUILD_PAUSE` times as long
//!   as its last build took: a workspace ingesting while dashboards read it spends at most about
//!   a tenth of one core on rebuilds (the commit hook only adds ids to a bitmap), instead of
//!   rebuilding after every few thousand writes (which halved ingest on two cores).
//! - No version (never built, building, over the memory budget of `GraphOptions`): the read
//!   methods answer None and the query engine runs its ordinary plan.

//!
//! Layout: `base` (the columns and CSR of one snapshot, and how they are built), `column`,
//! `eval` (counts and reaches over base + delta), `seek` (equality seeks from the columns), `view` (the read-only view the query engine's
//! batch executor reads: always compiled, so the query crate and the fuzz targets can use it
//! without RocksDB), `models` (versions, the commit hook and the builder; storage only).

mod base;
mod column;
#[cfg(feature = "storage")]
mod eval;
#[cfg(feature = "storage")]
mod models;
mod seek;
#[cfg(all(test, feature = "storage"))]
mod tests;
mod view;

#[cfg(feature = "storage")]
pub(crate) use models::*;
pub use view::{ColumnView, CsrView, LabelView, ModelView, ReadModelState, NO_CODE};
