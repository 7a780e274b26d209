//! Fault injection for the store, compiled into unit tests only: the store consults these
//! before each batch write and each WAL fsync, so tests can make exactly one of them fail (or
//! hold an fsync open, then fail it) and watch what the writer acknowledges.

use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::{Condvar, Mutex};

use crate::error::EngineError;

#[derive(Debug, Default)]
pub(crate) struct Faults {
    plan: Mutex<Plan>,
    changed: Condvar,
    /// Batch writes attempted so far (successful or not).
    writes: AtomicUsize,
}

#[derive(Debug, Default)]
struct Plan {
    fail_next_write: bool,
    next_sync: SyncFault,
    /// An fsync is waiting in `before_sync` for `release`.
    held: bool,
    released: bool,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum SyncFault {
    #[default]
    None,
    Fail,
    HoldThenFail,
}

impl Faults {
    pub fn fail_next_write(&self) {
        self.plan.lock().fail_next_write = true;
    }

    pub fn fail_next_sync(&self) {
        self.plan.lock().next_sync = SyncFault::Fail;
    }

    /// The next fsync waits until [`Faults::release`], then fails.
    pub fn hold_next_sync_then_fail(&self) {
        let mut plan = self.plan.lock();
        plan.next_sync = SyncFault::HoldThenFail;
        plan.released = false;
    }

    /// Blocks until an fsync is held.
    pub fn wait_until_sync_held(&self) {
        let mut plan = self.plan.lock();
        while !plan.held {
            self.changed.wait(&mut plan);
        }
    }

    pub fn release(&self) {
        self.plan.lock().released = true;
        self.changed.notify_all();
    }

    pub fn writes(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }

    pub(crate) fn before_write(&self) -> Result<(), EngineError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        let mut plan = self.plan.lock();
        if std::mem::take(&mut plan.fail_next_write) {
            return Err(EngineError::Storage("injected write failure".into()));
        }
        Ok(())
    }

    pub(crate) fn before_sync(&self) -> Result<(), EngineError> {
        let mut plan = self.plan.lock();
        match std::mem::take(&mut plan.next_sync) {
            SyncFault::None => Ok(()),
            SyncFault::Fail => Err(EngineError::Storage("injected fsync failure".into())),
            SyncFault::HoldThenFail => {
                plan.held = true;
                self.changed.notify_all();
                while !plan.released {
                    self.changed.wait(&mut plan);
                }
                plan.held = false;
                Err(EngineError::Storage("injected fsync failure".into()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::thread;
    use std::time::{Duration, Instant};

    use crate::model::WorkspaceId;
    use crate::{EngineError, Graph, GraphOptions, Record};

    const WS: WorkspaceId = WorkspaceId(7);

    #[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
    struct Note {
        id: String,
    }

    impl Record for Note {
        const KIND: &'static str = "note";
        fn id(&self) -> String {
            self.id.clone()
        }
        fn indexes(&self) -> Vec<(&'static str, String)> {
            Vec::new()
        }
    }

    fn put(graph: &Graph, id: &str) -> Result<(), EngineError> {
        let note = Note { id: id.to_owned() };
        graph.write(move |txn| txn.workspace(WS).put_record(&note))
    }

    /// `put` on its own thread, so the test can act while it waits for its fsync.
    fn put_in_background(graph: &Graph, id: &str) -> thread::JoinHandle<Result<(), EngineError>> {
        let (graph, id) = (graph.clone(), id.to_owned());
        thread::spawn(move || put(&graph, &id))
    }

    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            thread::sleep(Duration::from_millis(2));
        }
    }

    fn assert_refused(outcome: Result<(), EngineError>, what: &str) {
        assert!(outcome.is_err(), "{what} was acknowledged");
    }

    #[test]
    fn a_failed_fsync_fails_its_group_and_every_later_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open");
        put(&graph, "before").expect("a healthy write");

        graph.shared().store.faults.fail_next_sync();
        assert_refused(put(&graph, "failed group"), "the write whose fsync failed");
        assert!(!graph.is_writable());
        for i in 0..3 {
            let later = put(&graph, &format!("later {i}"));
            assert!(
                matches!(later, Err(EngineError::Closed(_))),
                "a later write: {later:?}"
            );
        }
        // Reads still work, and what was durable before the failure is there.
        let before = graph.get_record::<Note>(WS, "before").expect("read");
        assert!(before.is_some());
    }

    /// A group committed while another group's fsync is failing reaches the syncer after the
    /// failure: it must not be acknowledged by the next, successful, fsync.
    #[test]
    fn a_group_committed_during_a_failing_fsync_is_not_acknowledged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open");
        put(&graph, "before").expect("a healthy write");
        let faults = &graph.shared().store.faults;

        faults.hold_next_sync_then_fail();
        let failing = put_in_background(&graph, "failing");
        faults.wait_until_sync_held();
        let writes = faults.writes();
        let queued = put_in_background(&graph, "queued behind the failure");
        wait_for("the second group's commit", || faults.writes() > writes);
        faults.release();

        assert_refused(
            failing.join().expect("thread"),
            "the group whose fsync failed",
        );
        assert_refused(
            queued.join().expect("thread"),
            "a group committed before the failure was known",
        );
        assert_refused(put(&graph, "after"), "a write after the failure");
        assert!(!graph.is_writable());
    }

    #[test]
    fn a_failed_batch_write_fails_its_callers_and_poisons_the_writer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open");
        graph.shared().store.faults.fail_next_write();
        assert_refused(put(&graph, "unwritten"), "the write whose batch failed");
        assert_refused(put(&graph, "after"), "a write after the failure");
        assert_eq!(
            graph.get_record::<Note>(WS, "unwritten").expect("read"),
            None
        );
    }

    /// Many writers at once (groups through the committer thread): once an fsync fails, no
    /// caller still waiting gets an acknowledgement, and nothing after it does either.
    #[test]
    fn concurrent_writers_get_no_acknowledgement_after_a_failed_fsync() {
        let dir = tempfile::tempdir().expect("tempdir");
        let graph = Arc::new(Graph::open(dir.path(), GraphOptions::default()).expect("open"));
        let faults = &graph.shared().store.faults;
        faults.hold_next_sync_then_fail();
        let workers: Vec<_> = (0..8)
            .map(|t| {
                let graph = Arc::clone(&graph);
                thread::spawn(move || {
                    (0..50)
                        .map(|i| put(&graph, &format!("w{t}-{i}")).is_ok())
                        .collect::<Vec<bool>>()
                })
            })
            .collect();
        faults.wait_until_sync_held();
        thread::sleep(Duration::from_millis(50));
        faults.release();
        for w in workers {
            // Each worker waits for every write: none of them can have been acknowledged,
            // since the very first fsync failed.
            let acked = w.join().expect("thread");
            assert!(acked.iter().all(|ok| !ok), "{acked:?}");
        }
        assert!(!graph.is_writable());
    }
}
