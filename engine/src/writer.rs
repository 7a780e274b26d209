//! The single writer thread and group commit.
//!
//! Every write closure runs on one thread, in arrival order, so read-check-write sequences
//! (identity resolution, credit charging) are atomic without locks. Closures that arrive while
//! the previous group is being written share one WriteBatch; a separate syncer thread fsyncs
//! the WAL once for everything written so far and only then acknowledges, so durability is
//! paid once per group instead of once per write.
//!
//! Under load three threads form a pipeline: the writer runs closures and prepares group N+1
//! while the committer writes group N into the store (memtable inserts are a third of the
//! work), and the syncer fsyncs. At most one group is in flight between writer and committer;
//! the next group reads through it (see `txn`). When no other work is waiting the writer commits
//! a group itself, so a lone caller does not pay for a thread hop.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::{self, JoinHandle, ThreadId};

use parking_lot::{Mutex, RwLock};

use crate::error::EngineError;
use crate::labels::LabelIndex;
use crate::store::Store;
use crate::txn::{self, Overlay, ReadCache, WriteTxn};

/// Delivers a closure's outcome once its group is durable (or has failed).
pub(crate) type Completion = Box<dyn FnOnce(Result<(), EngineError>) + Send>;
/// A write closure, already wrapped to roll itself back on failure.
pub(crate) type Job = Box<dyn for<'a> FnOnce(&mut WriteTxn<'a>) -> Completion + Send>;

/// State shared by readers, the writer and the syncer.
#[derive(Debug)]
pub(crate) struct Shared {
    pub store: Store,
    pub labels: LabelIndex,
    /// Held exclusively while a commit becomes visible (store write + label bitmaps), shared
    /// while a snapshot is taken, so a snapshot sees every commit entirely or not at all.
    pub visibility: RwLock<()>,
    /// Set when a write or an fsync failed: later writes are refused rather than risk
    /// acknowledging something that is not durable.
    pub poisoned: Mutex<Option<String>>,
    /// In-memory read models, told about every commit's touched nodes (see `readmodel`).
    pub readmodel: crate::readmodel::ReadModels,
    /// This open graph, distinct from every other opened in the process (plan caches key on it).
    pub instance: u64,
    /// Per workspace, bumped under `visibility` by every commit that changes its index catalog
    /// or its statistics: a snapshot carries the versions it saw (`GraphRead::plan_scope`,
    /// `GraphRead::statistics_version`).
    pub epochs: crate::epochs::Epochs,
    /// Declared indexes per workspace at its current catalog version (`Snapshot::index_kind`).
    pub catalogs: crate::catalog::CatalogCache,
}

impl Shared {
    fn check_healthy(&self) -> Result<(), EngineError> {
        match &*self.poisoned.lock() {
            Some(why) => Err(EngineError::Closed(why.clone())),
            None => Ok(()),
        }
    }

    fn poison(&self, why: &EngineError) {
        self.poisoned
            .lock()
            .get_or_insert_with(|| format!("an earlier write failed: {why}"));
    }

    /// Makes a prepared group visible: one atomic batch, then the label bitmaps.
    fn commit(&self, overlay: &Overlay) -> Result<(), EngineError> {
        self.check_healthy()?;
        let commit = txn::prepare_commit(&self.store, overlay)?;
        if commit.batch.is_empty() {
            return Ok(());
        }
        let touched = self.readmodel.touched(overlay);
        let _visible = self.visibility.write();
        if let Err(e) = self.store.write(commit.batch) {
            self.poison(&e);
            return Err(e);
        }
        self.labels.apply(&commit.label_deltas);
        self.epochs
            .bump(&commit.schema_changed, &commit.statistics_changed);
        self.readmodel.record(overlay, touched);
        Ok(())
    }
}

/// A group's outcome and the callers waiting for it to be durable.
type Group = (Result<(), EngineError>, Vec<Completion>);
/// A prepared group on its way to the committer, with the group before it (already committed)
/// for the committer to free: dropping a large overlay is not free, and the writer is the
/// pipeline's bottleneck.
type Prepared = (Arc<Overlay>, Vec<Completion>, Option<Arc<Overlay>>);

/// Limits of one group: closures and pending key writes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GroupLimits {
    pub max_jobs: usize,
    pub max_pending_writes: usize,
}

#[derive(Debug)]
pub(crate) struct Writer {
    sender: Option<Sender<Job>>,
    threads: Vec<JoinHandle<()>>,
    writer_thread: ThreadId,
}

impl Writer {
    pub fn start(shared: Arc<Shared>, limits: GroupLimits) -> Result<Writer, EngineError> {
        let (job_tx, job_rx) = mpsc::channel::<Job>();
        let (commit_tx, commit_rx) = mpsc::channel::<Prepared>();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let (sync_tx, sync_rx) = mpsc::channel::<Group>();
        let spawn_err = |e: std::io::Error| {
            EngineError::Storage(format!("cannot start the writer thread: {e}"))
        };
        let s = Arc::clone(&shared);
        let writer = thread::Builder::new()
            .name("svc-engine-writer".into())
            .spawn({
                let sync_tx = sync_tx.clone();
                move || writer_loop(&s, job_rx, commit_tx, done_rx, sync_tx, limits)
            })
            .map_err(spawn_err)?;
        let writer_thread = writer.thread().id();
        let s = Arc::clone(&shared);
        let committer = thread::Builder::new()
            .name("svc-engine-committer".into())
            .spawn(move || committer_loop(&s, commit_rx, done_tx, sync_tx))
            .map_err(spawn_err)?;
        let syncer = thread::Builder::new()
            .name("svc-engine-syncer".into())
            .spawn(move || syncer_loop(&shared, sync_rx))
            .map_err(spawn_err)?;
        Ok(Writer {
            sender: Some(job_tx),
            threads: vec![writer, committer, syncer],
            writer_thread,
        })
    }

    pub fn submit(&self, job: Job) -> Result<(), EngineError> {
        let closed = || EngineError::Closed("the writer thread has stopped".into());
        self.sender
            .as_ref()
            .ok_or_else(closed)?
            .send(job)
            .map_err(|_| closed())
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the channel lets the writer finish queued work and exit; the syncer follows.
        self.sender = None;
        if thread::current().id() == self.writer_thread {
            // The last handle was dropped inside a write closure: the thread ends by itself.
            return;
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn writer_loop(
    shared: &Shared,
    jobs: Receiver<Job>,
    commits: Sender<Prepared>,
    committed: Receiver<()>,
    sync: Sender<Group>,
    limits: GroupLimits,
) {
    // The last group handed to the committer, and whether its commit is still unconfirmed.
    let mut in_flight: Option<Arc<Overlay>> = None;
    let mut unconfirmed = false;
    // A job taken from the queue to learn whether more work is waiting.
    let mut next: Option<Job> = None;
    let cache = std::cell::RefCell::new(ReadCache::default());
    loop {
        let first = match next.take() {
            Some(job) => job,
            None => match jobs.recv() {
                Ok(job) => job,
                Err(_) => break,
            },
        };
        let mut txn = WriteTxn::new(
            &shared.store,
            &shared.labels,
            in_flight.clone(),
            Some(&cache),
        );
        let mut done = vec![first(&mut txn)];
        while done.len() < limits.max_jobs && txn.pending() < limits.max_pending_writes {
            match jobs.try_recv() {
                Ok(job) => done.push(job(&mut txn)),
                Err(_) => break,
            }
        }
        let overlay = txn.into_overlay();
        // From here on the group is the in-flight layer or committed (see `txn::read_cache`).
        cache.borrow_mut().apply(&overlay);
        next = jobs.try_recv().ok();
        // One group in flight at most: the next transaction then needs only this one layer.
        if unconfirmed {
            if committed.recv().is_err() {
                break;
            }
            unconfirmed = false;
        }
        if next.is_none() {
            // Nothing else is waiting, so there is nothing to overlap with: commit here and
            // spare lone writers the hop to the committer thread.
            in_flight = None;
            let result = shared.commit(&overlay);
            if result.is_err() {
                cache.borrow_mut().clear();
            }
            if sync.send((result, done)).is_err() {
                break;
            }
        } else {
            let overlay = Arc::new(overlay);
            let retired = in_flight.replace(Arc::clone(&overlay));
            if commits.send((overlay, done, retired)).is_err() {
                break;
            }
            unconfirmed = true;
        }
    }
}

fn committer_loop(
    shared: &Shared,
    groups: Receiver<Prepared>,
    committed: Sender<()>,
    sync: Sender<Group>,
) {
    while let Ok((overlay, done, retired)) = groups.recv() {
        let result = shared.commit(&overlay);
        // To the syncer before confirming, so groups reach it in commit order.
        let sent = sync.send((result, done));
        // The writer may stop listening once it is shutting down; the group is written anyway.
        let _ = committed.send(());
        drop((overlay, retired));
        if sent.is_err() {
            break;
        }
    }
}

fn syncer_loop(shared: &Shared, groups: Receiver<Group>) {
    while let Ok(first) = groups.recv() {
        let mut batch = vec![first];
        while let Ok(more) = groups.try_recv() {
            batch.push(more);
        }
        let synced = if batch.iter().any(|(r, _)| r.is_ok()) {
            // After a failed fsync nothing is acknowledged any more, not even groups committed
            // before the failure was known: whether the failed writes reached the disk is
            // unknown (a later fsync may succeed without them), and these groups may have read
            // what those writes wrote.
            shared
                .check_healthy()
                .and_then(|()| shared.store.sync_wal())
        } else {
            Ok(())
        };
        if let Err(e) = &synced {
            shared.poison(e);
        }
        for (result, completions) in batch {
            let outcome = result.and_then(|()| synced.clone());
            for c in completions {
                c(outcome.clone());
            }
        }
    }
}
