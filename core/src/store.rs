//! The server's only door to the engine: typed records, consistent reads
//! ([`Store::read`], one snapshot of a workspace on the blocking pool) and atomic writes
//! ([`Store::write`], one transaction on the engine's writer, which also keeps the graph-write
//! generations that derived caches compare).
//!
//! Everything that touches `svc_engine` goes through here, so the rest of the server depends on
//! this small surface instead of the engine's exact signatures, and nothing outside holds the
//! engine handle. Engine calls block, so every async entry point hops onto the blocking pool.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
/// A workspace's share of a [`Store::write`] transaction (from [`Tx::workspace`]); domain code
/// names it from here, never from the engine, because the store is the one way to get one.
pub use svc_engine::WorkspaceTxn;
pub use svc_engine::{EngineError, Record, RecordScan, Snapshot, WorkspaceId};
use svc_engine::{Graph, GraphOptions, RecordKinds, ValidationReport, WriteTxn};

use crate::error::{Error, Result};
use crate::plumbing::ids::{PublicIds, KEY_BYTES};

mod indexes;

/// Records are plain serde types; this bound collects what the async wrappers need.
pub trait StoredRecord: Record + Send + 'static {}
impl<T: Record + Send + 'static> StoredRecord for T {}

/// Handle to the open store. Cheap to clone. After [`Store::close`] every call fails with
/// `unavailable`, and the database closes as soon as in-flight calls have finished.
#[derive(Clone)]
pub struct Store {
    graph: Arc<RwLock<Option<Graph>>>,
    generations: Arc<GraphGenerations>,
    /// An index builder thread runs (`indexes`): at most one per store.
    index_builder: Arc<AtomicBool>,
    /// Index work was announced since the running builder last looked.
    index_work: Arc<AtomicBool>,
    /// Bumped after every credential revocation, so that what outlives one request (open
    /// streams) checks its credential again at once.
    revocations: Arc<tokio::sync::watch::Sender<u64>>,
    /// The public ids of this store's nodes and edges (the deployment's key, the store's
    /// legacy ceiling).
    ids: PublicIds,
}

/// Per-workspace count of committed writes that may have changed graph nodes. Caches of figures
/// derived from the graph (reporting) compare it before serving: read the generation, then take
/// the snapshot, and a cached value is current while the generation has not moved.
///
/// [`Store::write`] bumps it for every workspace its transaction opened with
/// [`Tx::workspace`]. Over-counting (a write that touched only records) only costs a
/// recomputation.
#[derive(Debug, Default)]
struct GraphGenerations {
    by_workspace: Mutex<HashMap<WorkspaceId, u64>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

/// How long a graceful stop waits for calls still running when it closes the store.
const CLOSE_WAIT: Duration = Duration::from_secs(30);

/// The budget of a read's first, inline attempt ([`Store::read_inline_first`]).
pub const INLINE_SLICE: Duration = Duration::from_millis(1);

impl Store {
    /// Opens without the application's record types: enough for a store this build created
    /// (tests, tools). A store of an older format keeps its old records undecoded until it is
    /// opened with the registry ([`Store::open_with`]; the engine resumes the migration then).
    /// Its public ids use a random key: they mean something only to this handle.
    pub fn open(path: &Path) -> Result<Store> {
        Store::open_with(
            path,
            Store::default_read_model_bytes(),
            RecordKinds::new(),
            None,
        )
    }

    /// The engine's default bound on the read models' memory (`GraphOptions`).
    pub fn default_read_model_bytes() -> usize {
        GraphOptions::default().read_model_bytes
    }

    /// Opens with the read models' memory bound (`Config::read_model_bytes`) and the registry
    /// of every record type the application stores, which re-encodes an older store's records
    /// (the service's registry lives with its composition root, which knows every domain),
    /// and the deployment's id key (`plumbing::ids::KEY_FILE`; None: a random one).
    pub fn open_with(
        path: &Path,
        read_model_bytes: usize,
        records: RecordKinds,
        id_key: Option<&[u8; KEY_BYTES]>,
    ) -> Result<Store> {
        let mut store = Store::try_open_with(path, read_model_bytes, records)?;
        // Recorded on the first open with opaque ids; every later open reads it back.
        let ceiling = store.engine()?.legacy_id_ceiling()?;
        store.ids = match id_key {
            Some(key) => PublicIds::new(key, ceiling),
            None => PublicIds::random(ceiling),
        };
        // Resume index builds a restart interrupted. The first batch runs here, so a store
        // with nothing pending (the usual case) starts no thread that could hold the engine
        // while the caller closes it again.
        if store
            .engine()?
            .build_indexes_step(svc_engine::catalog::BUILD_BATCH)?
        {
            store.spawn_index_builder();
        }
        Ok(store)
    }

    /// [`Store::open_with`] keeping the engine's error, so the operator's tools can tell a
    /// store locked by a running service from a damaged one.
    pub fn try_open(path: &Path, records: RecordKinds) -> std::result::Result<Store, EngineError> {
        Store::try_open_with(path, Store::default_read_model_bytes(), records)
    }

    fn try_open_with(
        path: &Path,
        read_model_bytes: usize,
        records: RecordKinds,
    ) -> std::result::Result<Store, EngineError> {
        let options = GraphOptions {
            records,
            read_model_bytes,
            ..GraphOptions::default()
        };
        let graph = Graph::open(path, options)?;
        Ok(Store {
            graph: Arc::new(RwLock::new(Some(graph))),
            generations: Arc::default(),
            index_builder: Arc::default(),
            index_work: Arc::default(),
            revocations: Arc::new(tokio::sync::watch::Sender::new(0)),
            // A store from `try_open` (the operator's tools) renders no public ids.
            ids: PublicIds::random(0),
        })
    }

    /// The read model's state of every workspace a model was asked for (metrics, logs);
    /// empty while the store is closing.
    pub fn read_model_states(&self) -> Vec<(WorkspaceId, svc_engine::ReadModelState)> {
        self.engine()
            .map(|g| g.read_model_states())
            .unwrap_or_default()
    }

    /// The public ids of this store's nodes and edges.
    pub fn ids(&self) -> &PublicIds {
        &self.ids
    }

    /// Announces that a credential was revoked (after the revocation is durable).
    pub fn note_revocation(&self) {
        self.revocations.send_modify(|n| *n += 1);
    }

    /// Changes whenever a credential is revoked ([`Store::note_revocation`]).
    pub fn revocations(&self) -> tokio::sync::watch::Receiver<u64> {
        self.revocations.subscribe()
    }

    /// The workspace's graph-write generation (see [`GraphGenerations`]).
    pub fn graph_generation(&self, ws: WorkspaceId) -> u64 {
        self.generations
            .by_workspace
            .lock()
            .get(&ws)
            .copied()
            .unwrap_or(0)
    }

    /// Records that a committed write may have changed the workspace's graph.
    fn note_graph_write(&self, ws: WorkspaceId) {
        *self.generations.by_workspace.lock().entry(ws).or_insert(0) += 1;
    }

    /// The engine handle; it never leaves the store.
    fn engine(&self) -> Result<Graph> {
        self.graph
            .read()
            .clone()
            .ok_or_else(|| Error::from(EngineError::Closed("the service is shutting down".into())))
    }

    /// The engine handle for the crate's unit tests, which inspect the engine directly.
    /// The engine handle, for the unit tests of this crate and the crates above
    /// (`test-support`); production code goes through the store.
    #[cfg(any(test, feature = "test-support"))]
    pub fn graph(&self) -> Result<Graph> {
        self.engine()
    }

    /// Runs `f` on one consistent snapshot of `ws`, on the blocking pool: everything `f` reads
    /// is as of one moment, whatever commits meanwhile.
    pub async fn read<R, F>(&self, ws: WorkspaceId, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&Snapshot<'_>) -> Result<R> + Send + 'static,
    {
        let graph = self.engine()?;
        blocking(move || f(&graph.snapshot(ws))).await
    }

    /// Runs a budgeted read on the calling task first, with `INLINE_SLICE` as its budget
    /// (`f` gets `Some(slice)`); when `f` gives up on that budget (`Ok(None)`), runs it again
    /// on the blocking pool with its own full budget (`f` gets `None`), on a fresh snapshot.
    ///
    /// Why: most graph queries answer in microseconds, and the hop to the blocking pool and
    /// back (two thread wake-ups) cost more than the query itself. `f` must stop by itself
    /// soon after the slice (the query crate checks its deadline every few hundred steps), so
    /// an async worker is held for about a millisecond at most; a long query loses only that
    /// first attempt, which wrote nothing.
    pub async fn read_inline_first<R, F>(&self, ws: WorkspaceId, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: Fn(&Snapshot<'_>, Option<Duration>) -> Result<Option<R>> + Send + 'static,
    {
        let graph = self.engine()?;
        if let Some(r) = f(&graph.snapshot(ws), Some(INLINE_SLICE))? {
            return Ok(r);
        }
        blocking(move || {
            f(&graph.snapshot(ws), None)?
                .ok_or_else(|| Error::internal("a read gave up on its full budget"))
        })
        .await
    }

    /// An online checkpoint of the whole store into `dest` (a new directory), for backups.
    /// Blocks (the operator's tools call it on the blocking pool).
    pub fn checkpoint(&self, dest: &Path) -> Result<()> {
        Ok(self.engine()?.checkpoint(dest)?)
    }

    /// Checks every index and adjacency entry against the data (`svcd admin validate`).
    /// Blocks, like [`Store::checkpoint`].
    pub fn validate(&self) -> Result<ValidationReport> {
        Ok(self.engine()?.validate()?)
    }

    /// Lets go of the engine: the database closes once calls still running have returned.
    pub fn close(&self) {
        if let Some(graph) = self.graph.write().take() {
            graph.close();
        }
    }

    /// [`Store::close`], then waits (at most `CLOSE_WAIT`) for the calls still running to
    /// return and the database to close, so that the directory may be opened again at once
    /// (a restart in the same process). False when it was still held after the wait.
    pub async fn close_and_wait(&self) -> bool {
        let Some(graph) = self.graph.write().take() else {
            return true;
        };
        tokio::task::spawn_blocking(move || graph.close_and_wait(CLOSE_WAIT))
            .await
            .unwrap_or(false)
    }

    pub async fn get<T: StoredRecord>(
        &self,
        ws: WorkspaceId,
        id: impl Into<String>,
    ) -> Result<Option<T>> {
        // Point reads take microseconds (memtable or block cache): cheaper inline than the hop
        // to the blocking pool and back.
        Ok(self.engine()?.get_record::<T>(ws, &id.into())?)
    }

    pub async fn find<T: StoredRecord>(
        &self,
        ws: WorkspaceId,
        index: &'static str,
        value: impl Into<String>,
    ) -> Result<Vec<T>> {
        Ok(self.engine()?.find_records::<T>(ws, index, &value.into())?)
    }

    pub async fn scan<T: StoredRecord>(&self, ws: WorkspaceId, scan: RecordScan) -> Result<Vec<T>> {
        let graph = self.engine()?;
        blocking(move || Ok(graph.scan_records::<T>(ws, &scan)?)).await
    }

    /// Proves the store accepts durable writes (readiness): rewrites one small record.
    pub async fn probe_write(&self) -> Result<()> {
        let probe = Probe {
            at: crate::plumbing::clock::now_rfc3339(),
        };
        self.write(move |tx| tx.put(WorkspaceId::GLOBAL, &probe))
            .await
    }

    /// Runs `f` atomically on the engine's writer: its reads see every earlier commit, and its
    /// writes commit together (durably) or, when it returns `Err`, not at all.
    pub async fn write<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Tx<'_, '_>) -> Result<R> + Send + 'static,
    {
        // Awaited without a blocking-pool thread: the engine wakes this task once the group
        // holding `f` is durable.
        let (out, touched) = self
            .engine()?
            .write_async(move |txn: &mut WriteTxn<'_>| {
                let mut touched = Vec::new();
                let out = f(&mut Tx {
                    txn,
                    touched: &mut touched,
                })?;
                Ok::<_, Error>((out, touched))
            })
            .await?;
        for ws in touched {
            self.note_graph_write(ws);
        }
        Ok(out)
    }
}

/// The readiness probe's record.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Probe {
    at: String,
}

impl Record for Probe {
    const KIND: &'static str = "probe";
    fn id(&self) -> String {
        "readyz".to_owned()
    }
}

/// A write transaction as the domain modules see it.
#[derive(Debug)]
pub struct Tx<'t, 'a> {
    txn: &'t mut WriteTxn<'a>,
    /// Workspaces whose graph this transaction opened (their generation moves on commit).
    touched: &'t mut Vec<WorkspaceId>,
}

impl<'a> Tx<'_, 'a> {
    pub fn get<T: Record>(&mut self, ws: WorkspaceId, id: &str) -> Result<Option<T>> {
        Ok(self.txn.workspace(ws).get_record::<T>(id)?)
    }

    pub fn find<T: Record>(
        &mut self,
        ws: WorkspaceId,
        index: &'static str,
        value: &str,
    ) -> Result<Vec<T>> {
        Ok(self.txn.workspace(ws).find_records::<T>(index, value)?)
    }

    pub fn put<T: Record>(&mut self, ws: WorkspaceId, record: &T) -> Result<()> {
        self.txn.workspace(ws).put_record(record)?;
        Ok(())
    }

    pub fn delete<T: Record>(&mut self, ws: WorkspaceId, id: &str) -> Result<()> {
        self.remove::<T>(ws, id).map(|_| ())
    }

    /// [`Tx::delete`], answering whether the record existed.
    pub fn remove<T: Record>(&mut self, ws: WorkspaceId, id: &str) -> Result<bool> {
        Ok(self.txn.workspace(ws).delete_record::<T>(id)?)
    }

    /// Graph and record operations on one workspace (event ingestion, merges, graph writes),
    /// committed in the same batch as everything else of this transaction.
    pub fn workspace(&mut self, ws: WorkspaceId) -> WorkspaceTxn<'_, 'a> {
        if !self.touched.contains(&ws) {
            self.touched.push(ws);
        }
        self.txn.workspace(ws)
    }

    /// Runs `f`; when it fails, every write it made is undone and the rest of the transaction
    /// carries on (one bad item of a batch never spoils the good ones).
    pub fn attempt<R>(&mut self, f: impl FnOnce(&mut Tx<'_, 'a>) -> Result<R>) -> Result<R> {
        let touched = &mut *self.touched;
        self.txn.attempt(|txn| f(&mut Tx { txn, touched }))
    }
}

async fn blocking<R, F>(f: F) -> Result<R>
where
    R: Send + 'static,
    F: FnOnce() -> Result<R> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::internal(format!("store task failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_engine::{GraphWrite, Properties};

    #[tokio::test]
    async fn a_read_that_gives_up_inline_runs_again_on_the_blocking_pool() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let ws = WorkspaceId(3);
        // A quick read answers from its inline attempt.
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let answer = store
            .read_inline_first(ws, move |_, slice| {
                log.lock().push(slice);
                Ok(Some(7))
            })
            .await
            .expect("read");
        assert_eq!((answer, seen.lock().clone()), (7, vec![Some(INLINE_SLICE)]));
        // One that gives up on the slice runs once more, on another thread, with no slice.
        let caller = std::thread::current().id();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let ran_on = store
            .read_inline_first(ws, move |_, slice| {
                log.lock().push(slice);
                Ok(slice.is_none().then(|| std::thread::current().id()))
            })
            .await
            .expect("read");
        assert_eq!(seen.lock().clone(), vec![Some(INLINE_SLICE), None]);
        assert_ne!(ran_on, caller);
        // An error of the inline attempt is the answer: nothing runs twice.
        let runs = Arc::new(Mutex::new(0));
        let count = runs.clone();
        let err = store
            .read_inline_first(ws, move |_, _| -> Result<Option<()>> {
                *count.lock() += 1;
                Err(Error::internal("boom"))
            })
            .await
            .expect_err("fails");
        assert_eq!((err.code, *runs.lock()), (crate::error::Code::Internal, 1));
    }

    #[tokio::test]
    async fn the_legacy_ceiling_is_recorded_once_on_the_first_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = [1u8; KEY_BYTES];
        let open = || {
            Store::open_with(
                dir.path(),
                Store::default_read_model_bytes(),
                RecordKinds::new(),
                Some(&key),
            )
            .expect("open")
        };
        let store = open();
        assert_eq!(
            store.ids().legacy_ceiling(),
            0,
            "a new store has no legacy ids"
        );
        let node = store
            .write(|tx| {
                Ok(tx
                    .workspace(WorkspaceId(1))
                    .create_node(&["Customer"], Properties::new())?)
            })
            .await
            .expect("write");
        let wire = store.ids().customer(node);
        assert!(store.close_and_wait().await);
        let store = open();
        assert_eq!(store.ids().legacy_ceiling(), 0, "written once");
        assert_eq!(
            store.ids().parse_customer(&wire),
            Some(node),
            "same key, same ids"
        );
        // A store from before opaque ids (no ceiling yet) records the sequence on this open.
        store
            .graph()
            .expect("graph")
            .forget_legacy_id_ceiling()
            .expect("forget");
        assert!(store.close_and_wait().await);
        let store = open();
        assert_eq!(store.ids().legacy_ceiling(), node.0 + 1);
        assert_eq!(
            store.ids().parse_customer(&format!("cus_{}", node.0)),
            Some(node)
        );
        assert_eq!(store.ids().parse_customer(&wire), Some(node));
    }
}
