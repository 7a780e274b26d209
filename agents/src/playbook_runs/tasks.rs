//! The running runs' background tasks, one per run: started, woken, told to go on or to end,
//! and stopped together at shutdown. What a task does is the executor's (`executor::drive`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::runs::run_key;
use svc_core::store::WorkspaceId;

/// How long shutdown waits for a task in the middle of a lead.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(30);

pub(super) type TaskKey = (WorkspaceId, String);

struct Slot {
    wake: Arc<Notify>,
    /// Set when the run was resumed while its task was deciding to end: it goes on instead.
    rerun: bool,
    handle: Option<JoinHandle<()>>,
}

/// The running runs' tasks (one per run), held by `AgentState`.
#[derive(Default)]
pub struct Tasks {
    slots: Mutex<HashMap<TaskKey, Slot>>,
    stopping: AtomicBool,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("tasks", &self.slots.lock().len())
            .finish()
    }
}

impl Tasks {
    /// Makes sure the run has a task (starting one, or telling an ending one to go on).
    /// `start` spawns the task, given the notifier that wakes it.
    pub fn ensure(
        &self,
        ws: WorkspaceId,
        playbook_id: &str,
        run_id: &str,
        start: impl FnOnce(Arc<Notify>) -> JoinHandle<()>,
    ) {
        if self.stopping.load(Ordering::SeqCst) {
            return;
        }
        let key = (ws, run_key(playbook_id, run_id));
        // The lock is held across the spawn, so the task cannot look for its slot before the
        // slot exists.
        let mut slots = self.slots.lock();
        if let Some(slot) = slots.get_mut(&key) {
            slot.rerun = true;
            slot.wake.notify_one();
            return;
        }
        let wake = Arc::new(Notify::new());
        let handle = start(wake.clone());
        slots.insert(
            key,
            Slot {
                wake,
                rerun: false,
                handle: Some(handle),
            },
        );
    }

    /// Wakes the run's task from its cadence wait (after a pause or cancel).
    pub fn wake(&self, ws: WorkspaceId, playbook_id: &str, run_id: &str) {
        if let Some(slot) = self.slots.lock().get(&(ws, run_key(playbook_id, run_id))) {
            slot.wake.notify_one();
        }
    }

    /// Whether a task drives the run (for tests and metrics).
    pub fn is_driving(&self, ws: WorkspaceId, playbook_id: &str, run_id: &str) -> bool {
        self.slots
            .lock()
            .contains_key(&(ws, run_key(playbook_id, run_id)))
    }

    /// Called by a task whose run is no longer running: true when it should end.
    pub(super) fn finish(&self, key: &TaskKey) -> bool {
        let mut slots = self.slots.lock();
        match slots.get_mut(key) {
            Some(slot) if slot.rerun && !self.stopping.load(Ordering::SeqCst) => {
                slot.rerun = false;
                false
            }
            _ => {
                slots.remove(key);
                true
            }
        }
    }

    pub(super) fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Stops every task between two steps and waits for them (runs stay `running` and resume
    /// at the next start).
    pub async fn shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        let handles: Vec<JoinHandle<()>> = self
            .slots
            .lock()
            .values_mut()
            .filter_map(|s| {
                s.wake.notify_one();
                s.handle.take()
            })
            .collect();
        for h in handles {
            if tokio::time::timeout(SHUTDOWN_WAIT, h).await.is_err() {
                tracing::warn!("a playbook run task did not stop in time");
            }
        }
    }
}
