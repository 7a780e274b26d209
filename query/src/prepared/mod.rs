//! The plan cache: a read statement's text, parsed and planned once, run many times.
//!
//! A short read spends most of its time before it reads anything: parsing (3-7 µs for the
//! corpus' point lookups), planning (2-5 µs) and analysing the plan for the batch executor
//! (1-2 µs), against well under a microsecond for a label count and a few for an index seek.
//! [`PlanCache::run_read`] keeps the result of those steps, keyed by what they depend on:
//!
//! - the statement's text, exactly;
//! - the parameters' values: they are folded into the plan as constants (an index seek holds
//!   its key), so each parameter set is a plan of its own. Floats compare by their bits, so
//!   `0.0` and `-0.0` never share a plan;
//! - the graph and workspace ([`GraphRead::plan_scope`]): no workspace ever gets a plan made
//!   over another's, even one with the same text;
//! - the index catalog's version (in the scope): declaring, building or dropping an index
//!   makes every plan of the workspace planned again;
//! - the statistics the planner read ([`plan::Assumptions`]): label counts within a factor of
//!   two, and whether an ordered index holds a whole label (which decides a top-k index read).
//!   They are checked again only when the workspace's statistics changed since they last held
//!   ([`GraphRead::statistics_version`]): a hit over unchanged statistics reads none of them.
//!
//! What a plan does not depend on: the read model (an operator the model answers keeps the
//! ordinary plan as its fallback, and whether a subtree runs batch-at-a-time is decided per
//! run), and [`Limits`] (the time budget starts with each run). A statement that folds the
//! clock (`datetime()`) at plan time, `EXPLAIN`, `PROFILE`, a handle with no scope (a write
//! transaction, the in-memory model) and a statement that fails to plan are never cached: they
//! take the ordinary `parse` + [`crate::run_read`] path, so answers and errors are the same
//! either way.
//!
//! The cache is bounded ([`PlanCache::new`]'s capacity, [`MAX_TEXT`] bytes of text per entry,
//! and 128 bytes of text per entry of capacity in all, since a plan's memory grows with its text);
//! when full, the least recently used entry goes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use svc_engine::{GraphRead, PlanScope};

use crate::ast::{Mode, Statement};
use crate::batch::Analysis;
use crate::error::QueryError;
use crate::exec::BatchMemo;
use crate::plan::{self, Assumptions, Checks, Planned};
use crate::result::{Limits, Params, QueryResult};

mod key;
mod trees;

use key::{key_of, same_params};

/// Longest statement text the cache keeps (longer ones run uncached).
pub const MAX_TEXT: usize = 4 * 1024;
/// Statement text the cache holds per entry of its capacity, on average: the shared cache
/// keeps at most 2048 plans and 256 KiB of their text, whichever binds first.
const TEXT_BYTES_PER_ENTRY: usize = 128;
/// Entries of the process-wide cache ([`PlanCache::shared`]).
pub const SHARED_CAPACITY: usize = 2048;

/// A planned read statement and what it assumed.
struct Prepared {
    text: Box<str>,
    params: Params,
    scope: PlanScope,
    planned: Planned,
    analysis: Analysis,
    /// Which operators the batch executor declines (filled by the runs).
    memo: BatchMemo,
    assumed: Checks,
    /// The statistics version (`GraphRead::statistics_version`) at which `assumed` last held,
    /// plus one (0: none): a run at that version needs no check.
    verified: AtomicU64,
    /// Last use, for eviction (the cache's clock).
    used: AtomicU64,
}

/// Counters of a cache, for tests and metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlanCacheStats {
    /// Runs that reused a plan.
    pub hits: u64,
    /// Runs that planned (and cached the plan when it could be).
    pub misses: u64,
    /// Plans found but planned again: the statistics they assumed no longer hold.
    pub stale: u64,
    /// Plans found whose assumptions were checked (their workspace's statistics changed since
    /// they last held); the other hits check nothing.
    pub checked: u64,
    /// Plans held now.
    pub entries: usize,
}

/// Parsed statements by text, and the bytes of text they hold.
type Parsed = (HashMap<Box<str>, Arc<Statement>>, usize);

/// A bounded cache of read plans (see the module documentation).
pub struct PlanCache {
    capacity: usize,
    /// Entries by the hash of (scope minus schema, text, parameters); collisions share a bucket.
    map: Mutex<HashMap<u64, Vec<Arc<Prepared>>>>,
    clock: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    stale: AtomicU64,
    checked: AtomicU64,
    /// Parsed statements by text (`statement`): parsing depends on the text alone. With the
    /// bytes of text held (bounded as the plans' text is: a statement's tree grows with it).
    parsed: Mutex<Parsed>,
}

impl std::fmt::Debug for PlanCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanCache")
            .field("capacity", &self.capacity)
            .field("stats", &self.stats())
            .finish()
    }
}

impl PlanCache {
    /// A cache holding at most `capacity` plans (at least one).
    pub fn new(capacity: usize) -> PlanCache {
        PlanCache {
            capacity: capacity.max(1),
            map: Mutex::new(HashMap::new()),
            clock: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            stale: AtomicU64::new(0),
            checked: AtomicU64::new(0),
            parsed: Mutex::new((HashMap::new(), 0)),
        }
    }

    /// `parse(text)`, kept: a caller that must look at a statement before running it (to
    /// choose between the read and the write path) parses each text once. Errors are not
    /// kept. At most the cache's capacity of texts, each of at most [`MAX_TEXT`] bytes and
    /// as many bytes in all as the plans' text budget, are held; when full, they are all
    /// dropped (parsing them again is cheap).
    pub fn statement(&self, text: &str) -> Result<Arc<Statement>, QueryError> {
        let parsed = || self.parsed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(stmt) = parsed().0.get(text) {
            return Ok(Arc::clone(stmt));
        }
        let stmt = Arc::new(crate::parse(text)?);
        let budget = self.capacity.saturating_mul(TEXT_BYTES_PER_ENTRY);
        if text.len() <= MAX_TEXT.min(budget) {
            let mut guard = parsed();
            let (map, bytes) = &mut *guard;
            if map.len() >= self.capacity || *bytes + text.len() > budget {
                map.clear();
                *bytes = 0;
            }
            if map.insert(text.into(), Arc::clone(&stmt)).is_none() {
                *bytes += text.len();
            }
        }
        Ok(stmt)
    }

    /// The process-wide cache ([`SHARED_CAPACITY`] plans), for callers with no cache of their
    /// own.
    pub fn shared() -> &'static PlanCache {
        static SHARED: OnceLock<PlanCache> = OnceLock::new();
        SHARED.get_or_init(|| PlanCache::new(SHARED_CAPACITY))
    }

    pub fn stats(&self) -> PlanCacheStats {
        PlanCacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            stale: self.stale.load(Ordering::Relaxed),
            checked: self.checked.load(Ordering::Relaxed),
            entries: self.lock().values().map(Vec::len).sum(),
        }
    }

    /// Drops every plan.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// Runs the read statement `text`: the same answer, or the same error, as
    /// `run_read(g, &parse(text)?, params, limits)`, with the parse and the plan reused from
    /// an earlier run with the same text and parameters over the same workspace and catalog.
    pub fn run_read<G: GraphRead>(
        &self,
        g: &G,
        text: &str,
        params: &Params,
        limits: &Limits,
    ) -> Result<QueryResult, QueryError> {
        let start = Instant::now();
        let Some(scope) = g.plan_scope().filter(|_| text.len() <= MAX_TEXT) else {
            return crate::run_read(g, &crate::parse(text)?, params, limits);
        };
        let Some(key) = key_of(scope, text, params) else {
            return crate::run_read(g, &crate::parse(text)?, params, limits);
        };
        if let Some(p) = self.find(key, scope, text, params) {
            if p.still_holds(g, &self.checked) {
                self.hits.fetch_add(1, Ordering::Relaxed);
                crate::temporal::begin_statement();
                return run_prepared(g, &p, limits, start);
            }
            self.stale.fetch_add(1, Ordering::Relaxed);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let stmt = self.statement(text)?;
        if stmt.mode != Mode::Run || stmt.first_write_clause().is_some() {
            return crate::run_read(g, &stmt, params, limits);
        }
        crate::temporal::begin_statement();
        let assumed = Assumptions::default();
        let planned = plan::plan_assuming(g, &stmt, params, limits, start + limits.time, &assumed)?;
        let analysis = match planned.stages.as_slice() {
            [plan::Stage::Read(p)] if assumed.reusable() => {
                crate::exec::analyse(p, planned.width, &planned.out_slots)
            }
            _ => return crate::execute_read(g, &planned, None, limits, start, false, None),
        };
        let p = Arc::new(Prepared {
            text: text.into(),
            params: params.clone(),
            scope,
            memo: BatchMemo::new(planned.operators),
            planned,
            analysis,
            assumed: assumed.into_checks(),
            // Planned over `g`: what it assumed holds at `g`'s version.
            verified: AtomicU64::new(verified(g.statistics_version())),
            used: AtomicU64::new(self.clock.fetch_add(1, Ordering::Relaxed)),
        });
        self.insert(key, Arc::clone(&p));
        run_prepared(g, &p, limits, start)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Vec<Arc<Prepared>>>> {
        // A panic elsewhere while holding the lock leaves the map consistent (every change
        // is one insert or remove).
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn find(
        &self,
        key: u64,
        scope: PlanScope,
        text: &str,
        params: &Params,
    ) -> Option<Arc<Prepared>> {
        let map = self.lock();
        let p = map
            .get(&key)?
            .iter()
            .find(|p| p.scope == scope && *p.text == *text && same_params(&p.params, params))?;
        p.used.store(
            self.clock.fetch_add(1, Ordering::Relaxed),
            Ordering::Relaxed,
        );
        Some(Arc::clone(p))
    }

    fn insert(&self, key: u64, p: Arc<Prepared>) {
        let mut map = self.lock();
        // The same statement over an older catalog, or with stale statistics, is replaced.
        if let Some(bucket) = map.get_mut(&key) {
            bucket.retain(|q| {
                !(q.scope.graph == p.scope.graph
                    && q.scope.workspace == p.scope.workspace
                    && q.text == p.text
                    && same_params(&q.params, &p.params))
            });
        }
        let held: usize = map.values().map(Vec::len).sum();
        let bytes: usize = map.values().flatten().map(|q| q.text.len()).sum();
        let budget = self.capacity.saturating_mul(TEXT_BYTES_PER_ENTRY);
        if held >= self.capacity || bytes + p.text.len() > budget {
            // The least recently used go: at least an eighth at once (a run of new statements
            // pays for one scan of the cache every capacity/8 of them, not one each), and as
            // many as the text budget needs. A plan's memory grows with its text (a 600-byte
            // chain of 120 hops holds about 100 KB), so the budget bounds the cache's memory,
            // not only its count.
            let mut stamps: Vec<(u64, usize)> = map
                .values()
                .flatten()
                .map(|q| (q.used.load(Ordering::Relaxed), q.text.len()))
                .collect();
            stamps.sort_unstable();
            let at_least = (held / 8).max((held + 1).saturating_sub(self.capacity));
            let (mut gone, mut left, mut threshold) = (0, bytes, None);
            for (stamp, len) in stamps {
                if gone >= at_least && left + p.text.len() <= budget {
                    break;
                }
                gone += 1;
                left -= len;
                threshold = Some(stamp);
            }
            if let Some(threshold) = threshold {
                map.retain(|_, bucket| {
                    bucket.retain(|q| q.used.load(Ordering::Relaxed) > threshold);
                    !bucket.is_empty()
                });
            }
        }
        map.entry(key).or_default().push(p);
    }
}

impl Prepared {
    /// Whether the plan's assumptions hold over `g`: known when they were checked at `g`'s
    /// statistics version (the same statistics), else checked now (and the version noted).
    fn still_holds(&self, g: &dyn GraphRead, checked: &AtomicU64) -> bool {
        let version = verified(g.statistics_version());
        if version != 0 && self.verified.load(Ordering::Relaxed) == version {
            return true;
        }
        checked.fetch_add(1, Ordering::Relaxed);
        let holds = self.assumed.hold(g);
        if holds {
            // Racing runs may store another version that held: any one that held is right.
            self.verified.store(version, Ordering::Relaxed);
        }
        holds
    }
}

/// Runs a cached plan, with its batch tree kept on this thread (`trees`).
fn run_prepared(
    g: &dyn GraphRead,
    p: &Arc<Prepared>,
    limits: &Limits,
    start: Instant,
) -> Result<QueryResult, QueryError> {
    trees::with_tree(p, |p, tree| {
        crate::execute_read(
            g,
            &p.planned,
            Some((&p.analysis, &p.memo)),
            limits,
            start,
            false,
            tree,
        )
    })
}

/// A statistics version as `Prepared::verified` keeps it (0: unknown).
fn verified(version: Option<u64>) -> u64 {
    version.map_or(0, |v| v.wrapping_add(1))
}

#[cfg(test)]
mod tests;
