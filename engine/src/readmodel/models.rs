//! Model versions per workspace, the commit hook's delta, and the background builder (the
//! storage side of the read model; see `mod.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Instant;

use parking_lot::Mutex;
use roaring::RoaringTreemap;

use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys;
use crate::model::{NodeId, WorkspaceId};
use crate::read::{GraphRead, Hop, PropertyTest};
use crate::txn::{Overlay, Space};
use crate::writer::Shared;

use super::base::{Base, BuildStop};
use super::eval;
use super::view::{ModelView, ReadModelState};

/// Touched nodes beyond this share of the base's nodes (and at least `REBUILD_MIN`) start a
/// rebuild.
const REBUILD_FRACTION: u64 = 16;
pub(super) const REBUILD_MIN: u64 = 4_096;
/// After a build that took `d`, the workspace's next rebuild starts no sooner than
/// `REBUILD_PAUSE * d` later (so rebuilds take at most 1 / (1 + REBUILD_PAUSE) of the time).
const REBUILD_PAUSE: u32 = 9;

/// Ids touched after a base was taken.
type Delta = Arc<Mutex<RoaringTreemap>>;

/// One base and the delta since it.
#[derive(Debug)]
pub(crate) struct Version {
    base: Arc<Base>,
    delta: Delta,
    /// `base.bytes()`, counted once.
    bytes: usize,
    /// The last view made, with the delta's size then: the delta only grows, so the same size
    /// is the same set, and the snapshots taken between two commits share one view instead of
    /// each zeroing a touched bitset over the whole base.
    last_view: Mutex<Option<(u64, ModelView)>>,
}

impl Version {
    /// The touched ids now (a superset of those touched before any snapshot holding this).
    fn delta(&self) -> RoaringTreemap {
        self.delta.lock().clone()
    }

    pub fn count_where(
        &self,
        snap: &dyn GraphRead,
        label: &str,
        tests: &[PropertyTest],
    ) -> Result<u64, EngineError> {
        eval::count_where(&self.base, &self.delta(), snap, label, tests)
    }

    pub fn reach(
        &self,
        snap: &dyn GraphRead,
        starts: &[NodeId],
        hops: &[Hop],
    ) -> Result<u64, EngineError> {
        eval::reach(&self.base, &self.delta(), snap, starts, hops)
    }

    /// The base with the nodes touched so far, for the query engine's batch executor.
    pub fn view(&self) -> ModelView {
        let delta = self.delta.lock();
        let mut last = self.last_view.lock();
        match &*last {
            Some((len, view)) if *len == delta.len() => view.clone(),
            _ => {
                let view = ModelView::new(Arc::clone(&self.base), delta.iter());
                *last = Some((delta.len(), view.clone()));
                view
            }
        }
    }

    /// Heap bytes of the base.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether the delta has outgrown what a rebuild is worth.
    fn stale(&self) -> bool {
        let limit = (self.base.ids.len() as u64 / REBUILD_FRACTION).max(REBUILD_MIN);
        self.delta.lock().len() > limit
    }
}

/// Build state of one workspace.
#[derive(Debug, Default)]
struct Workspace {
    current: Option<Arc<Version>>,
    /// The delta of the base being built, recorded from the build's snapshot on.
    building: Option<Delta>,
    /// The last build went over the budget: not retried (until the process restarts).
    over_budget: bool,
    /// No rebuild before this (`REBUILD_PAUSE`).
    rebuild_after: Option<Instant>,
}

/// Every workspace's model, the writer's hook and the background builder's queue.
#[derive(Debug)]
pub(crate) struct ReadModels {
    budget: usize,
    /// Whether any workspace records touches (the commit hook is free otherwise).
    active: AtomicBool,
    workspaces: Mutex<HashMap<WorkspaceId, Workspace>>,
    requests: Mutex<Option<Sender<WorkspaceId>>>,
    stop: AtomicBool,
}

impl ReadModels {
    /// Models limited to `budget` bytes all together (0: no models).
    pub fn new(budget: usize) -> ReadModels {
        ReadModels {
            budget,
            active: AtomicBool::new(false),
            workspaces: Mutex::new(HashMap::new()),
            requests: Mutex::new(None),
            stop: AtomicBool::new(false),
        }
    }

    /// The current version of `ws`. Called under the visibility lock (with the snapshot).
    pub fn current(&self, ws: WorkspaceId) -> Option<Arc<Version>> {
        if self.budget == 0 {
            return None;
        }
        self.workspaces
            .lock()
            .get(&ws)
            .and_then(|w| w.current.clone())
    }

    /// Why `ws` has (or has not) a model now: what a slow query's log line and the service's
    /// metrics report.
    pub fn state(&self, ws: WorkspaceId) -> ReadModelState {
        if self.budget == 0 {
            return ReadModelState::Off;
        }
        let w = self.workspaces.lock();
        let Some(w) = w.get(&ws) else {
            return ReadModelState::NotBuilt;
        };
        match &w.current {
            Some(v) => ReadModelState::Ready {
                bytes: v.bytes,
                touched: v.delta.lock().len(),
            },
            None if w.over_budget => ReadModelState::OverBudget {
                budget: self.budget,
            },
            None if w.building.is_some() => ReadModelState::Building,
            None => ReadModelState::NotBuilt,
        }
    }

    /// The state of every workspace a model was asked for (built, building, over budget),
    /// for the service's metrics and logs.
    pub fn states(&self) -> Vec<(WorkspaceId, ReadModelState)> {
        let mut ids: Vec<WorkspaceId> = self.workspaces.lock().keys().copied().collect();
        ids.sort_by_key(|w| w.0);
        ids.into_iter().map(|ws| (ws, self.state(ws))).collect()
    }

    /// Asks the background builder for a first model of `ws` (no-op when one exists, is being
    /// built, or is over budget).
    pub fn request(&self, ws: WorkspaceId) {
        if self.budget == 0 {
            return;
        }
        {
            let w = self.workspaces.lock();
            if w.get(&ws)
                .is_some_and(|w| w.current.is_some() || w.building.is_some() || w.over_budget)
            {
                return;
            }
        }
        if let Some(tx) = &*self.requests.lock() {
            let _ = tx.send(ws);
        }
    }

    /// Whether `ws` has no model yet (and is not over budget) or its delta is large.
    fn needs_build(&self, ws: WorkspaceId) -> bool {
        let w = self.workspaces.lock();
        let Some(w) = w.get(&ws) else { return true };
        if w.building.is_some() {
            return false;
        }
        match &w.current {
            None => !w.over_budget,
            Some(v) => v.stale() && w.rebuild_after.is_none_or(|t| Instant::now() >= t),
        }
    }

    /// The ids of nodes a prepared group touches, by workspace; None when no model records
    /// (yet). Runs before the commit takes the visibility lock.
    pub fn touched(&self, overlay: &Overlay) -> Option<Vec<(WorkspaceId, u64)>> {
        self.active
            .load(Ordering::Acquire)
            .then(|| touched_ids(overlay))
    }

    /// Adds a commit's touched ids (from `touched`) to the deltas. Called with the visibility
    /// lock held, after the commit reached the store, so any later snapshot finds them. A build
    /// may have started recording between `touched` and the lock (it sets `active` under the
    /// same lock, shared): the ids are then listed here.
    pub fn record(&self, overlay: &Overlay, touched: Option<Vec<(WorkspaceId, u64)>>) {
        let touched = match touched {
            Some(t) => t,
            None if self.active.load(Ordering::Acquire) => touched_ids(overlay),
            None => return,
        };
        if touched.is_empty() {
            return;
        }
        let workspaces = self.workspaces.lock();
        let mut i = 0;
        while i < touched.len() {
            let ws = touched[i].0;
            let end = i + touched[i..].iter().take_while(|(w, _)| *w == ws).count();
            if let Some(w) = workspaces.get(&ws) {
                for delta in w.current.iter().map(|v| &v.delta).chain(w.building.iter()) {
                    let mut d = delta.lock();
                    for (_, id) in &touched[i..end] {
                        d.insert(*id);
                    }
                }
            }
            i = end;
        }
    }

    /// A query is about to use `version` of `ws`: when its delta has outgrown it, the
    /// background builder is asked for a new base (it decides whether one is due).
    pub fn note_use(&self, ws: WorkspaceId, version: &Version) {
        if version.stale() {
            if let Some(tx) = &*self.requests.lock() {
                let _ = tx.send(ws);
            }
        }
    }
}

/// Node ids whose record, label membership or adjacency a group writes, sorted by workspace.
fn touched_ids(overlay: &Overlay) -> Vec<(WorkspaceId, u64)> {
    let mut out = Vec::new();
    for (space, key) in overlay.keys() {
        let id = match space {
            Space::Kv(Cf::Nodes) | Space::Kv(Cf::Adjacency) | Space::LabelMember => {
                // Node and adjacency keys start with ws | node; label members with ws | label
                // | node (the node is the last 8 bytes).
                let node_at = match space {
                    Space::LabelMember => key.len().checked_sub(8),
                    _ => Some(8),
                };
                match (keys::read_u64(key), node_at.and_then(|at| key.get(at..))) {
                    (Some(ws), Some(rest)) => keys::read_u64(rest).map(|id| (WorkspaceId(ws), id)),
                    _ => None,
                }
            }
            _ => None,
        };
        out.extend(id);
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Builds the model of `ws` now, on the calling thread, and installs it. Returns the bytes of
/// the new base, or None when it would exceed the budget (or models are off). With `wait`, a
/// build already running is waited for and followed by a new one; without, it answers None.
pub(crate) fn build_now(
    shared: &Shared,
    ws: WorkspaceId,
    wait: bool,
) -> Result<Option<usize>, EngineError> {
    let models = &shared.readmodel;
    if models.budget == 0 {
        return Ok(None);
    }
    let delta: Delta = Default::default();
    let (snap, budget) = loop {
        // Taken together with registering the delta, so no commit falls between the two.
        let _g = shared.visibility.read();
        let mut w = models.workspaces.lock();
        let entry = w.entry(ws).or_default();
        if entry.building.is_none() {
            entry.building = Some(Arc::clone(&delta));
            models.active.store(true, Ordering::Release);
            // The budget is shared by every workspace: what the others hold is not available.
            // (This workspace's old version is replaced, so it does not count; both exist
            // while the new one is built.)
            let others: usize = w
                .iter()
                .filter(|(id, _)| **id != ws)
                .filter_map(|(_, x)| x.current.as_ref().map(|v| v.bytes))
                .sum();
            break (
                shared.store.snapshot(),
                models.budget.saturating_sub(others),
            );
        }
        if !wait {
            return Ok(None);
        }
        drop((w, _g));
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    let started = Instant::now();
    let built = Base::build(&snap, ws, budget, &models.stop);
    drop(snap);
    let mut w = models.workspaces.lock();
    let entry = w.entry(ws).or_default();
    entry.building = None;
    entry.rebuild_after = Some(Instant::now() + started.elapsed() * REBUILD_PAUSE);
    match built {
        Ok(base) => {
            let bytes = base.bytes();
            entry.current = Some(Arc::new(Version {
                base: Arc::new(base),
                delta,
                bytes,
                last_view: Mutex::new(None),
            }));
            entry.over_budget = false;
            Ok(Some(bytes))
        }
        Err(BuildStop::OverBudget) => {
            entry.current = None;
            entry.over_budget = true;
            Ok(None)
        }
        Err(BuildStop::Stopped) => Ok(None),
        Err(BuildStop::Failed(e)) => Err(e),
    }
}

/// The background builder thread: builds the models requested through `ReadModels::request`
/// and the rebuilds the commit hook asks for. Stopped and joined when the last `Graph` handle
/// is dropped.
#[derive(Debug)]
pub(crate) struct Builder {
    shared: Weak<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Builder {
    pub fn start(shared: &Arc<Shared>) -> Result<Builder, EngineError> {
        let (tx, rx) = mpsc::channel::<WorkspaceId>();
        *shared.readmodel.requests.lock() = Some(tx);
        let s = Arc::clone(shared);
        let thread = std::thread::Builder::new()
            .name("svc-engine-readmodel".into())
            .spawn(move || builder_loop(&s, rx))
            .map_err(|e| {
                EngineError::Storage(format!("cannot start the read-model thread: {e}"))
            })?;
        Ok(Builder {
            shared: Arc::downgrade(shared),
            thread: Mutex::new(Some(thread)),
        })
    }
}

impl Drop for Builder {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.readmodel.stop.store(true, Ordering::Relaxed);
            shared.readmodel.requests.lock().take();
        }
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}

fn builder_loop(shared: &Shared, requests: Receiver<WorkspaceId>) {
    while let Ok(ws) = requests.recv() {
        if shared.readmodel.stop.load(Ordering::Relaxed) {
            break;
        }
        // Requests pile up while a build runs; one build answers all of them.
        if !shared.readmodel.needs_build(ws) {
            continue;
        }
        // A failed build leaves the workspace without a model: queries use the ordinary path.
        let _ = build_now(shared, ws, false);
    }
}
