//! `Graph`: the handle applications hold. Opens the store, runs migrations, loads the label
//! index, starts the writer, and hands out snapshots and write transactions.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::{mpsc, Arc};

use parking_lot::{Mutex, RwLock};

use crate::error::EngineError;
use crate::events::{EventInput, EventOutcome};
use crate::labels::LabelIndex;
use crate::migrate;
use crate::model::WorkspaceId;
use crate::oneshot;
use crate::readmodel::{self, Builder, ReadModels};
use crate::record::{Record, RecordScan};
use crate::record_io as record;
use crate::snapshot::Snapshot;
use crate::store::{Store, StoreOptions};
use crate::txn::WriteTxn;
use crate::validate::{self, ValidationReport};
use crate::writer::{Completion, GroupLimits, Job, Shared, Writer};

/// Numbers the graphs opened in this process (`Shared::instance`).
static NEXT_INSTANCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
/// Options of `Graph::open`.
#[derive(Clone, Debug)]
pub struct GraphOptions {
    pub store: StoreOptions,
    /// Most write closures committed together in one batch and one fsync.
    pub max_group_jobs: usize,
    /// A group is closed early once it holds this many pending key writes. Small groups let a
    /// burst of writes flow through the pipeline (the writer prepares one group while the
    /// committer writes the previous one); fsyncs stay shared because the syncer batches them.
    pub max_group_writes: usize,
    /// The application's record types, used to re-encode the records of a store older than
    /// format 4 (see `migrate`). Kinds missing here keep their old encoding (still readable)
    /// and the store stays at format 3 until a later open registers them.
    pub records: crate::RecordKinds,
    /// Most bytes of the in-memory read models of all workspaces together (columns and
    /// adjacency for scans, counts and traversals; see `readmodel`). A workspace whose model
    /// does not fit in what the others leave is served by the ordinary RocksDB reads. 0 turns
    /// the models off.
    pub read_model_bytes: usize,
}

impl Default for GraphOptions {
    fn default() -> Self {
        GraphOptions {
            store: StoreOptions::default(),
            max_group_jobs: 512,
            max_group_writes: 2_048,
            records: crate::RecordKinds::new(),
            read_model_bytes: 512 << 20,
        }
    }
}

/// The graph store. Cheap to clone (all clones share one database); the database closes when
/// the last clone is dropped, after every queued write has been committed.
#[derive(Clone, Debug)]
pub struct Graph {
    shared: Arc<Shared>,
    writer: Arc<Writer>,
    /// The read models' background builder (stopped when the last handle goes).
    _builder: Arc<Builder>,
}

fn writer_gone() -> EngineError {
    EngineError::Closed("the writer stopped before answering".into())
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

impl Graph {
    /// Opens (creating when missing) the store at `path`.
    pub fn open(path: impl AsRef<Path>, options: GraphOptions) -> Result<Graph, EngineError> {
        let path = path.as_ref();
        std::fs::create_dir_all(path)
            .map_err(|e| EngineError::Storage(format!("cannot create {}: {e}", path.display())))?;
        let store = Store::open(path, &options.store)?;
        migrate::run(&store, &options.records)?;
        let labels = LabelIndex::load(&store)?;
        let shared = Arc::new(Shared {
            store,
            labels,
            visibility: RwLock::new(()),
            poisoned: Mutex::new(None),
            readmodel: ReadModels::new(options.read_model_bytes),
            instance: NEXT_INSTANCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            epochs: Default::default(),
            catalogs: Default::default(),
        });
        let limits = GroupLimits {
            max_jobs: options.max_group_jobs.max(1),
            max_pending_writes: options.max_group_writes.max(1),
        };
        let writer = Arc::new(Writer::start(Arc::clone(&shared), limits)?);
        let builder = Arc::new(Builder::start(&shared)?);
        Ok(Graph {
            shared,
            writer,
            _builder: builder,
        })
    }

    /// A consistent view of one workspace: every commit is in it entirely or not at all.
    pub fn snapshot(&self, ws: WorkspaceId) -> Snapshot<'_> {
        let _g = self.shared.visibility.read();
        let versions = self.shared.epochs.get(ws);
        let scope = crate::read::PlanScope {
            graph: self.shared.instance,
            workspace: ws.0,
            schema: versions.schema,
        };
        Snapshot::new(
            self.shared.store.snapshot(),
            self.shared.labels.workspace(ws),
            scope,
            versions.statistics,
            &self.shared.readmodel,
            &self.shared.catalogs,
        )
    }

    /// Builds the in-memory read model of `ws` now (blocking) instead of on first use in the
    /// background; snapshots taken afterwards use it. Returns its size in bytes, or None when
    /// it would exceed `GraphOptions::read_model_bytes`.
    pub fn prepare_read_model(&self, ws: WorkspaceId) -> Result<Option<usize>, EngineError> {
        readmodel::build_now(&self.shared, ws, true)
    }

    /// Whether `ws` has a read model now, and if not why (a query that cannot use one reads
    /// RocksDB node by node: what logs and metrics report).
    pub fn read_model_state(&self, ws: WorkspaceId) -> crate::readmodel::ReadModelState {
        self.shared.readmodel.state(ws)
    }

    /// `read_model_state` of every workspace a model was asked for, by workspace id.
    pub fn read_model_states(&self) -> Vec<(WorkspaceId, crate::readmodel::ReadModelState)> {
        self.shared.readmodel.states()
    }

    /// Runs `f` on the writer thread and returns once its writes are durable (group commit:
    /// closures arriving together share one batch and one fsync). Reads inside `f` see all
    /// committed data and `f`'s own writes; nothing else runs in between, so read-check-write
    /// is atomic. When `f` fails (or panics) none of its writes happen.
    ///
    /// Blocking; async callers use `write_async`.
    pub fn write<R, E, F>(&self, f: F) -> Result<R, E>
    where
        F: for<'a> FnOnce(&mut WriteTxn<'a>) -> Result<R, E> + Send + 'static,
        R: Send + 'static,
        E: From<EngineError> + Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel::<Result<R, E>>(1);
        self.submit(f, move |result| {
            let _ = tx.send(result);
        })?;
        rx.recv().unwrap_or_else(|_| Err(E::from(writer_gone())))
    }

    /// `write` for async callers: the returned future resolves once `f`'s writes are durable,
    /// without holding a thread meanwhile. Dropping the future does not cancel the write.
    pub fn write_async<R, E, F>(&self, f: F) -> impl Future<Output = Result<R, E>> + Send
    where
        F: for<'a> FnOnce(&mut WriteTxn<'a>) -> Result<R, E> + Send + 'static,
        R: Send + 'static,
        E: From<EngineError> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel::<Result<R, E>>();
        let submitted = self.submit(f, move |result| tx.send(result));
        async move {
            submitted?;
            rx.await.unwrap_or_else(|| Err(E::from(writer_gone())))
        }
    }

    /// Queues `f` for the writer thread; `deliver` gets its outcome once the group is durable
    /// (or has failed).
    fn submit<R, E, F>(
        &self,
        f: F,
        deliver: impl FnOnce(Result<R, E>) + Send + 'static,
    ) -> Result<(), E>
    where
        F: for<'a> FnOnce(&mut WriteTxn<'a>) -> Result<R, E> + Send + 'static,
        R: Send + 'static,
        E: From<EngineError> + Send + 'static,
    {
        let job: Job = Box::new(move |txn: &mut WriteTxn<'_>| -> Completion {
            let sp = txn.savepoint();
            let out = match catch_unwind(AssertUnwindSafe(|| f(txn))) {
                Ok(out) => out,
                Err(p) => Err(E::from(EngineError::Panicked(panic_message(&*p)))),
            };
            if out.is_err() {
                txn.rollback_to(sp);
            }
            Box::new(move |committed: Result<(), EngineError>| {
                deliver(match (committed, out) {
                    (Ok(()), out) => out,
                    (Err(_), Err(e)) => Err(e),
                    (Err(e), Ok(_)) => Err(E::from(e)),
                })
            })
        });
        self.writer.submit(job).map_err(E::from)
    }

    /// Records one event durably (see `WorkspaceTxn::record_event`).
    pub fn record_event(
        &self,
        ws: WorkspaceId,
        event: EventInput,
    ) -> Result<EventOutcome, EngineError> {
        self.write(move |txn| txn.workspace(ws).record_event(&event))
    }

    /// Records events in order, in one durable batch; each item succeeds or fails on its own.
    pub fn record_events(
        &self,
        ws: WorkspaceId,
        events: Vec<EventInput>,
    ) -> Result<Vec<Result<EventOutcome, EngineError>>, EngineError> {
        self.write(move |txn| {
            Ok(events
                .iter()
                .map(|ev| txn.attempt(|t| t.workspace(ws).record_event(ev)))
                .collect())
        })
    }

    /// A record as last committed.
    pub fn get_record<T: Record>(
        &self,
        ws: WorkspaceId,
        id: &str,
    ) -> Result<Option<T>, EngineError> {
        record::get_record(&self.shared.store, ws, id)
    }

    /// Records whose secondary lookup `index` holds `value`.
    pub fn find_records<T: Record>(
        &self,
        ws: WorkspaceId,
        index: &str,
        value: &str,
    ) -> Result<Vec<T>, EngineError> {
        record::find_records(&self.shared.store, ws, index, value)
    }

    /// Records of one kind in id order.
    pub fn scan_records<T: Record>(
        &self,
        ws: WorkspaceId,
        scan: &RecordScan,
    ) -> Result<Vec<T>, EngineError> {
        record::scan_records(&self.shared.store, ws, scan)
    }

    /// Cross-checks every index against the primary data.
    pub fn validate(&self) -> Result<ValidationReport, EngineError> {
        validate::validate(&self.shared)
    }

    /// Writes a consistent copy of the store into `dest` (which must not exist), while writes
    /// go on: every write acknowledged before the call is in the copy, and the copy opens with
    /// [`Graph::open`] (online backup).
    pub fn checkpoint(&self, dest: impl AsRef<Path>) -> Result<(), EngineError> {
        self.shared.store.checkpoint(dest.as_ref())
    }

    /// The format version of the open store.
    pub fn format_version(&self) -> Result<Option<u32>, EngineError> {
        migrate::stored_version(&self.shared.store)
    }

    /// The store's legacy id ceiling: the id sequence's value the first time this was asked
    /// (recorded then, durably; 0 for a store that had allocated no id). The service accepts
    /// the old decimal public ids only below it.
    pub fn legacy_id_ceiling(&self) -> Result<u64, EngineError> {
        self.write(|txn| txn.legacy_id_ceiling())
    }

    /// Forgets the legacy id ceiling, leaving the store as one from before opaque public ids
    /// was (for the tests that recreate one: the next [`Graph::legacy_id_ceiling`] records
    /// the id sequence's value again).
    #[doc(hidden)]
    pub fn forget_legacy_id_ceiling(&self) -> Result<(), EngineError> {
        self.write(|txn| txn.forget_legacy_id_ceiling())
    }

    /// Whether writes are accepted (false after a failed write or fsync).
    pub fn is_writable(&self) -> bool {
        self.shared.poisoned.lock().is_none()
    }

    /// The shared state, for unit tests that inject store faults.
    #[cfg(test)]
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Drops this handle; the store closes once no clone is left.
    pub fn close(self) {}

    /// Drops this handle and waits until the store has closed (no clone left, no call still
    /// running, background threads stopped), so the same directory can be opened again at
    /// once. False when something still held it after `timeout`.
    pub fn close_and_wait(self, timeout: std::time::Duration) -> bool {
        let shared = Arc::downgrade(&self.shared);
        drop(self);
        let deadline = std::time::Instant::now() + timeout;
        while shared.strong_count() > 0 {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        true
    }
}
