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
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use svc_engine::{GraphRead, PlanScope, Value};

use crate::ast::{Mode, Statement};
use crate::batch::Analysis;
use crate::error::QueryError;
use crate::exec::BatchMemo;
use crate::plan::{self, Assumptions, Checks, Planned};
use crate::result::{Limits, Params, QueryResult};

/// Longest statement text the cache keeps (longer ones run uncached).
pub const MAX_TEXT: usize = 4 * 1024;
/// Statement text the cache holds per entry of its capacity, on average: the shared cache
/// keeps at most 2048 plans and 256 KiB of their text, whichever binds first.
const TEXT_BYTES_PER_ENTRY: usize = 128;
/// Entries of the process-wide cache ([`PlanCache::shared`]).
pub const SHARED_CAPACITY: usize = 2048;
/// Deepest parameter value (nested lists and maps) the cache keys on; deeper ones run
/// uncached rather than recurse further.
const MAX_PARAM_DEPTH: usize = 32;
/// Largest parameters (values plus string bytes / 16) the cache keeps a copy of: a statement
/// run with a long list runs uncached rather than pin the list in memory.
const MAX_PARAM_SIZE: usize = 4096;

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
            if p.assumed.hold(g) {
                self.hits.fetch_add(1, Ordering::Relaxed);
                crate::temporal::begin_statement();
                return crate::execute_read(
                    g,
                    &p.planned,
                    Some((&p.analysis, &p.memo)),
                    limits,
                    start,
                    false,
                );
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
            _ => return crate::execute_read(g, &planned, None, limits, start, false),
        };
        let p = Arc::new(Prepared {
            text: text.into(),
            params: params.clone(),
            scope,
            memo: BatchMemo::new(planned.operators),
            planned,
            analysis,
            assumed: assumed.into_checks(),
            used: AtomicU64::new(self.clock.fetch_add(1, Ordering::Relaxed)),
        });
        self.insert(key, Arc::clone(&p));
        crate::execute_read(
            g,
            &p.planned,
            Some((&p.analysis, &p.memo)),
            limits,
            start,
            false,
        )
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

/// The bucket of (scope, text, params); None when a parameter nests too deep to key on. The
/// catalog version is left out so that a statement's entry over an older catalog is found
/// and replaced.
fn key_of(scope: PlanScope, text: &str, params: &Params) -> Option<u64> {
    // Keyed per process: bucket collisions cannot be worked out from outside.
    static KEYS: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
    let mut h = KEYS
        .get_or_init(std::collections::hash_map::RandomState::new)
        .build_hasher();
    (scope.graph, scope.workspace, text).hash(&mut h);
    let mut budget = MAX_PARAM_SIZE;
    for (name, v) in params {
        name.hash(&mut h);
        if !hash_value(v, &mut h, 0, &mut budget) {
            return None;
        }
    }
    Some(h.finish())
}

/// Hashes `v` into `h`; false when it nests deeper than `MAX_PARAM_DEPTH` or outgrows
/// `budget`.
fn hash_value(v: &Value, h: &mut impl Hasher, depth: usize, budget: &mut usize) -> bool {
    let size = match v {
        Value::String(s) => 1 + s.len() / 16,
        _ => 1,
    };
    if depth > MAX_PARAM_DEPTH || *budget < size {
        return false;
    }
    *budget -= size;
    std::mem::discriminant(v).hash(h);
    match v {
        Value::Null => {}
        Value::Bool(b) => b.hash(h),
        Value::Int(i) => i.hash(h),
        Value::Float(f) => f.to_bits().hash(h),
        Value::String(s) => s.hash(h),
        Value::List(items) => {
            items.len().hash(h);
            return items.iter().all(|x| hash_value(x, h, depth + 1, budget));
        }
        Value::Map(m) => {
            m.len().hash(h);
            return m.iter().all(|(k, x)| {
                k.hash(h);
                hash_value(x, h, depth + 1, budget)
            });
        }
        // Temporal values: their Debug text is exact (every field, zone names included).
        other => format!("{other:?}").hash(h),
    }
    true
}

fn same_params(a: &Params, b: &Params) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && same_value(va, vb, 0))
}

/// Equality that tells apart everything a plan could: variants (`1` and `1.0`), float bits.
fn same_value(a: &Value, b: &Value, depth: usize) -> bool {
    if depth > MAX_PARAM_DEPTH {
        return false;
    }
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q, depth + 1))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kp, p), (kq, q))| kp == kq && same_value(p, q, depth + 1))
        }
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (x, y) => std::mem::discriminant(x) == std::mem::discriminant(y) && x == y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_engine::catalog::IndexSpec;
    use svc_engine::{Graph, GraphOptions, IndexKind, WorkspaceId};

    const WS: WorkspaceId = WorkspaceId(1);

    fn graph() -> (tempfile::TempDir, Graph) {
        let dir = tempfile::tempdir().expect("tempdir");
        let g = Graph::open(dir.path(), GraphOptions::default()).expect("open");
        (dir, g)
    }

    fn write(g: &Graph, ws: WorkspaceId, text: &str) {
        let stmt = crate::parse(text).expect("parse");
        g.write(move |tx| {
            let mut w = tx.workspace(ws);
            crate::run_write(&mut w, &stmt, &Params::new(), &Limits::default())
        })
        .expect("write");
    }

    /// The cached answer, checked against `parse` + `run_read` over the same snapshot.
    fn run(c: &PlanCache, g: &Graph, ws: WorkspaceId, text: &str, params: &Params) -> String {
        run_on(c, &g.snapshot(ws), text, params)
    }

    fn run_on(
        c: &PlanCache,
        snap: &svc_engine::Snapshot<'_>,
        text: &str,
        params: &Params,
    ) -> String {
        let limits = Limits::default();
        let got = c.run_read(snap, text, params, &limits);
        let want = crate::parse(text).and_then(|s| crate::run_read(snap, &s, params, &limits));
        let show = |r: Result<QueryResult, QueryError>| match r {
            Ok(r) => serde_json::to_string(&(r.columns, r.rows)).expect("json"),
            Err(e) => format!("error {}: {e}", e.code()),
        };
        let (got, want) = (show(got), show(want));
        assert_eq!(got, want, "{text}");
        got
    }

    fn counts(c: &PlanCache) -> (u64, u64, u64, usize) {
        let s = c.stats();
        (s.hits, s.misses, s.stale, s.entries)
    }

    fn params(pairs: &[(&str, Value)]) -> Params {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn a_second_run_reuses_the_plan() {
        let (_d, g) = graph();
        write(&g, WS, "CREATE (:Customer {email: 'a@x', name: 'Ann'})");
        let c = PlanCache::new(8);
        let q = "MATCH (c:Customer {email: 'a@x'}) RETURN c.name AS name";
        assert_eq!(
            run(&c, &g, WS, q, &Params::new()),
            r#"[["name"],[["Ann"]]]"#
        );
        assert_eq!(counts(&c), (0, 1, 0, 1));
        run(&c, &g, WS, q, &Params::new());
        assert_eq!(counts(&c), (1, 1, 0, 1));
        // New data is read by the reused plan.
        write(&g, WS, "CREATE (:Customer {email: 'a@x', name: 'Bob'})");
        assert_eq!(
            run(&c, &g, WS, &format!("{q} ORDER BY name"), &Params::new()),
            r#"[["name"],[["Ann"],["Bob"]]]"#
        );
        run(&c, &g, WS, q, &Params::new());
        assert_eq!(counts(&c), (2, 2, 0, 2));
    }

    #[test]
    fn parameters_are_part_of_the_key() {
        let (_d, g) = graph();
        write(
            &g,
            WS,
            "CREATE (:Customer {email: 'a@x', name: 'Ann', score: 1}), \
             (:Customer {email: 'b@x', name: 'Bob', score: 1.0})",
        );
        let c = PlanCache::new(8);
        let q = "MATCH (c:Customer {email: $e}) RETURN c.name AS name";
        let a = params(&[("e", Value::String("a@x".into()))]);
        let b = params(&[("e", Value::String("b@x".into()))]);
        assert_eq!(run(&c, &g, WS, q, &a), r#"[["name"],[["Ann"]]]"#);
        assert_eq!(run(&c, &g, WS, q, &b), r#"[["name"],[["Bob"]]]"#);
        assert_eq!(run(&c, &g, WS, q, &a), r#"[["name"],[["Ann"]]]"#);
        assert_eq!(counts(&c), (1, 2, 0, 2));
        // 1 and 1.0, 0.0 and -0.0: plans of their own (a folded constant may tell them apart).
        let q = "MATCH (c:Customer) WHERE c.score = $s RETURN c.name AS name, 1 / $s AS r";
        run(&c, &g, WS, q, &params(&[("s", Value::Int(1))]));
        run(&c, &g, WS, q, &params(&[("s", Value::Float(1.0))]));
        assert_eq!(
            run(&c, &g, WS, q, &params(&[("s", Value::Float(0.0))])),
            r#"[["name","r"],[]]"#
        );
        run(&c, &g, WS, q, &params(&[("s", Value::Float(-0.0))]));
        assert_eq!(counts(&c).3, 6);
        // A missing parameter is the same error, and nothing is cached for it.
        assert!(run(&c, &g, WS, q, &Params::new()).starts_with("error unknown_parameter"));
        assert_eq!(counts(&c).3, 6);
    }

    #[test]
    fn workspaces_never_share_a_plan() {
        let (_d, g) = graph();
        let other = WorkspaceId(2);
        write(&g, WS, "CREATE (:Customer {name: 'Ann'})");
        write(
            &g,
            other,
            "CREATE (:Customer {name: 'Zed'}), (:Customer {name: 'Yan'})",
        );
        let c = PlanCache::new(8);
        let q = "MATCH (c:Customer) RETURN c.name AS name ORDER BY name";
        assert_eq!(
            run(&c, &g, WS, q, &Params::new()),
            r#"[["name"],[["Ann"]]]"#
        );
        assert_eq!(
            run(&c, &g, other, q, &Params::new()),
            r#"[["name"],[["Yan"],["Zed"]]]"#
        );
        assert_eq!(counts(&c), (0, 2, 0, 2));
        // Nor two graphs with the same workspace id.
        let (_d2, g2) = graph();
        write(&g2, WS, "CREATE (:Customer {name: 'Eve'})");
        assert_eq!(
            run(&c, &g2, WS, q, &Params::new()),
            r#"[["name"],[["Eve"]]]"#
        );
        assert_eq!(
            run(&c, &g, WS, q, &Params::new()),
            r#"[["name"],[["Ann"]]]"#
        );
        assert_eq!(counts(&c), (1, 3, 0, 3));
    }

    #[test]
    fn declaring_and_dropping_an_index_plans_again() {
        let (_d, g) = graph();
        write(
            &g,
            WS,
            "CREATE (:Customer {tier: 'gold', name: 'Ann'}), (:Customer {tier: 'tin', name: 'Bob'})",
        );
        let c = PlanCache::new(8);
        let q = "MATCH (c:Customer) WHERE c.tier = 'gold' RETURN c.name AS name";
        let seeks = |g: &Graph| {
            let stmt = crate::parse(q).expect("parse");
            let tree = crate::explain(&g.snapshot(WS), &stmt, &Params::new(), &Limits::default())
                .expect("explain");
            format!("{tree:?}").contains("NodeIndexSeek")
        };
        assert!(!seeks(&g));
        run(&c, &g, WS, q, &Params::new());
        run(&c, &g, WS, q, &Params::new());
        assert_eq!(counts(&c), (1, 1, 0, 1));
        g.declare_index(
            WS,
            IndexSpec {
                name: Some("tier".into()),
                label: "Customer".into(),
                property: "tier".into(),
                kind: IndexKind::Equality,
                if_not_exists: false,
            },
        )
        .expect("declare");
        // Populating: a new catalog, planned again (no seek yet).
        assert_eq!(
            run(&c, &g, WS, q, &Params::new()),
            r#"[["name"],[["Ann"]]]"#
        );
        assert_eq!(counts(&c), (1, 2, 0, 1));
        while g.build_indexes_step(100).expect("build") {}
        assert!(seeks(&g));
        assert_eq!(
            run(&c, &g, WS, q, &Params::new()),
            r#"[["name"],[["Ann"]]]"#
        );
        assert_eq!(
            run(&c, &g, WS, q, &Params::new()),
            r#"[["name"],[["Ann"]]]"#
        );
        assert_eq!(counts(&c), (2, 3, 0, 1));
        // Dropped, and its entries deleted: the cached seek must not run.
        assert!(g.drop_index(WS, "tier".into(), false).expect("drop"));
        while g.build_indexes_step(100).expect("build") {}
        assert!(!seeks(&g));
        assert_eq!(
            run(&c, &g, WS, q, &Params::new()),
            r#"[["name"],[["Ann"]]]"#
        );
        assert_eq!(counts(&c), (2, 4, 0, 1));
    }

    #[test]
    fn the_read_model_coming_and_going_changes_no_answer() {
        let (_d, g) = graph();
        write(
            &g,
            WS,
            "CREATE (a:Customer {name: 'Ann', score: 5})-[:HAS_TOUCHPOINT]->(:Touchpoint {action: 'open'}), \
             (:Customer {name: 'Bob', score: 9})",
        );
        let c = PlanCache::new(8);
        let qs = [
            "MATCH (c:Customer) WHERE c.score > 4 RETURN count(c) AS n",
            "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(t) RETURN c.name AS name, t.action AS a",
            "MATCH (c:Customer) RETURN c.name AS name ORDER BY c.score DESC LIMIT 1",
        ];
        // Taken before any model: it keeps having none (a query only asks for one to be built).
        let without = g.snapshot(WS);
        assert!(!without.has_read_model());
        let before: Vec<String> = qs
            .iter()
            .map(|q| run_on(&c, &without, q, &Params::new()))
            .collect();
        assert!(g.prepare_read_model(WS).expect("model").is_some());
        let with = g.snapshot(WS);
        assert!(with.has_read_model());
        let after: Vec<String> = qs
            .iter()
            .map(|q| run_on(&c, &with, q, &Params::new()))
            .collect();
        assert_eq!(before, after);
        // And back: the plan made over the model runs over the snapshot without one.
        for q in qs {
            run_on(&c, &without, q, &Params::new());
        }
        assert_eq!(counts(&c), (6, 3, 0, 3));
        write(&g, WS, "MATCH (c:Customer {name: 'Bob'}) SET c.score = 1");
        assert_eq!(run(&c, &g, WS, qs[0], &Params::new()), r#"[["n"],[[1]]]"#);
    }

    #[test]
    fn statistics_drift_and_a_broken_whole_label_plan_again() {
        let (_d, g) = graph();
        write(&g, WS, "CREATE (:A {k: 1}), (:B {k: 1})");
        let c = PlanCache::new(8);
        let q = "MATCH (a:A), (b:B) WHERE a.k = b.k RETURN count(*) AS n";
        assert_eq!(run(&c, &g, WS, q, &Params::new()), r#"[["n"],[[1]]]"#);
        write(&g, WS, "UNWIND range(1, 5) AS i CREATE (:A {k: i})");
        assert_eq!(run(&c, &g, WS, q, &Params::new()), r#"[["n"],[[2]]]"#);
        assert_eq!(counts(&c), (0, 2, 1, 1));
        // Top-k by an ordered index over the whole label holds while every score is a number.
        write(
            &g,
            WS,
            "CREATE (:Customer {name: 'Ann', score: 3}), (:Customer {name: 'Bob', score: 2})",
        );
        let q = "MATCH (c:Customer) RETURN c.name AS name ORDER BY c.score LIMIT 1";
        assert_eq!(
            run(&c, &g, WS, q, &Params::new()),
            r#"[["name"],[["Bob"]]]"#
        );
        assert_eq!(
            run(&c, &g, WS, q, &Params::new()),
            r#"[["name"],[["Bob"]]]"#
        );
        let (hits, misses, stale, _) = counts(&c);
        // A node without a score sorts last, but no longer lets the index stand for the label.
        write(&g, WS, "CREATE (:Customer {name: 'Cy', score: 'x'})");
        run(&c, &g, WS, q, &Params::new());
        assert_eq!(counts(&c), (hits, misses + 1, stale + 1, 2));
    }

    #[test]
    fn what_is_never_cached() {
        let (_d, g) = graph();
        write(&g, WS, "CREATE (:Customer {name: 'Ann'})");
        let c = PlanCache::new(8);
        for q in [
            "RETURN datetime() AS now",
            "RETURN date() AS today",
            "EXPLAIN MATCH (c:Customer) RETURN c.name",
            "MATCH (c:Customer) RETURN c.nme AS n, x",
        ] {
            for _ in 0..2 {
                c.run_read(&g.snapshot(WS), q, &Params::new(), &Limits::default())
                    .ok();
            }
        }
        assert_eq!(counts(&c), (0, 8, 0, 0));
        let err = c
            .run_read(
                &g.snapshot(WS),
                "MATCH (c:Customer) SET c.x = 1",
                &Params::new(),
                &Limits::default(),
            )
            .expect_err("a write");
        assert_eq!(err.code(), "write_not_allowed");
        // rand() is evaluated per row, not folded: its plan is reused and still random.
        let q = "UNWIND range(1, 20) AS i RETURN collect(rand()) AS r";
        let a = run_rand(&c, &g, q);
        assert_ne!(a, run_rand(&c, &g, q));
        // An in-memory graph has no scope: it runs uncached.
        let model = crate::model::ModelGraph::new();
        c.run_read(
            &model,
            "RETURN 1 AS one",
            &Params::new(),
            &Limits::default(),
        )
        .expect("run");
        assert_eq!(counts(&c).3, 1);
    }

    fn run_rand(c: &PlanCache, g: &Graph, q: &str) -> String {
        let r = c
            .run_read(&g.snapshot(WS), q, &Params::new(), &Limits::default())
            .expect("run");
        serde_json::to_string(&r.rows).expect("json")
    }

    #[test]
    fn statements_are_parsed_once_and_errors_every_time() {
        let c = PlanCache::new(2);
        let a = c.statement("MATCH (n) RETURN n").expect("parse");
        let b = c.statement("MATCH (n) RETURN n").expect("parse");
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(*a, crate::parse("MATCH (n) RETURN n").expect("parse"));
        assert!(!c.statement("CREATE (n)").expect("parse").is_read_only());
        for _ in 0..2 {
            let err = c.statement("MATCH (n RETURN n").expect_err("syntax");
            assert_eq!(err.code(), "syntax_error");
        }
        // Full: dropped and refilled, never more than the capacity, nor its text budget.
        c.statement("RETURN 1").expect("parse");
        assert!(c.parsed.lock().expect("lock").0.len() <= 2);
        let long = format!("RETURN '{}' AS x", "y".repeat(200));
        c.statement(&long).expect("parse");
        let held = c.parsed.lock().expect("lock").1;
        assert!(held <= 2 * TEXT_BYTES_PER_ENTRY, "{held} bytes");
        let again = c.statement("MATCH (n) RETURN n").expect("parse");
        assert_eq!(*again, *a);
    }

    #[test]
    fn large_parameters_run_uncached() {
        let (_d, g) = graph();
        write(&g, WS, "CREATE (:Customer {name: 'Ann'})");
        let c = PlanCache::new(4);
        let q = "MATCH (c:Customer) WHERE c.name IN $names RETURN c.name AS name";
        let names = |n: usize| {
            let list = (0..n)
                .map(|i| Value::String(format!("n{i}")))
                .chain([Value::String("Ann".into())]);
            params(&[("names", Value::List(list.collect()))])
        };
        for _ in 0..2 {
            assert_eq!(
                run(&c, &g, WS, q, &names(10_000)),
                r#"[["name"],[["Ann"]]]"#
            );
        }
        assert_eq!(counts(&c), (0, 0, 0, 0));
        run(&c, &g, WS, q, &names(10));
        run(&c, &g, WS, q, &names(10));
        assert_eq!(counts(&c), (1, 1, 0, 1));
    }

    #[test]
    fn a_full_cache_drops_its_least_recently_used_eighth() {
        let (_d, g) = graph();
        let c = PlanCache::new(16);
        for i in 0..16 {
            run(&c, &g, WS, &format!("RETURN {i} AS x"), &Params::new());
        }
        // 0 and 1 used again: 2 and 3 are now the least recently used.
        run(&c, &g, WS, "RETURN 0 AS x", &Params::new());
        run(&c, &g, WS, "RETURN 1 AS x", &Params::new());
        run(&c, &g, WS, "RETURN 16 AS x", &Params::new());
        assert_eq!(counts(&c), (2, 17, 0, 15));
        for i in [0, 1, 4, 15, 16] {
            run(&c, &g, WS, &format!("RETURN {i} AS x"), &Params::new());
        }
        assert_eq!(counts(&c), (7, 17, 0, 15));
    }

    #[test]
    fn the_cache_holds_a_bounded_amount_of_text() {
        let (_d, g) = graph();
        // 16 entries of capacity: 2 KiB of text in all.
        let c = PlanCache::new(16);
        let long = |i: usize| format!("RETURN '{}' AS x{i}", "y".repeat(480));
        for i in 0..10 {
            run(&c, &g, WS, &long(i), &Params::new());
        }
        let held = counts(&c).3;
        assert!(
            held * long(0).len() <= 16 * TEXT_BYTES_PER_ENTRY,
            "{held} held"
        );
        assert!(held >= 1);
        // The newest stays and is reused.
        run(&c, &g, WS, &long(9), &Params::new());
        assert_eq!(counts(&c).0, 1);
        // Texts over MAX_TEXT are never kept.
        let huge = format!("RETURN '{}' AS x", "z".repeat(MAX_TEXT));
        run(&c, &g, WS, &huge, &Params::new());
        run(&c, &g, WS, &huge, &Params::new());
        assert_eq!(counts(&c).0, 1);
    }

    #[test]
    fn the_least_recently_used_plan_goes_first() {
        let (_d, g) = graph();
        let c = PlanCache::new(2);
        for q in [
            "RETURN 1 AS x",
            "RETURN 2 AS x",
            "RETURN 1 AS x",
            "RETURN 3 AS x",
        ] {
            run(&c, &g, WS, q, &Params::new());
        }
        assert_eq!(counts(&c), (1, 3, 0, 2));
        // "RETURN 2" was the least recently used: gone; "RETURN 1" still there.
        run(&c, &g, WS, "RETURN 1 AS x", &Params::new());
        run(&c, &g, WS, "RETURN 2 AS x", &Params::new());
        assert_eq!(counts(&c), (2, 4, 0, 2));
    }

    #[test]
    fn a_cached_plan_shows_ids_with_each_run_s_codec() {
        let (_d, g) = graph();
        write(
            &g,
            WS,
            "CREATE (:Customer {name: 'Ann'})-[:KNOWS]->(:Customer {name: 'Bob'})",
        );
        let c = PlanCache::new(4);
        let snap = g.snapshot(WS);
        let q = "MATCH (a)-[r:KNOWS]->(b) RETURN id(a) AS a, id(r) AS r, b AS node";
        let mut seen = Vec::new();
        for ids in [
            crate::IdCodec::default(),
            crate::IdCodec::keyed([7; 16]),
            crate::IdCodec::keyed([9; 16]),
        ] {
            let limits = Limits {
                ids,
                ..Limits::default()
            };
            let got = c
                .run_read(&snap, q, &Params::new(), &limits)
                .expect("cached");
            let stmt = crate::parse(q).expect("parse");
            let want = crate::run_read(&snap, &stmt, &Params::new(), &limits).expect("run");
            assert_eq!(got.rows, want.rows);
            seen.push(got.rows);
        }
        assert_eq!(counts(&c), (2, 1, 0, 1));
        assert!(seen[0] != seen[1] && seen[1] != seen[2]);
    }

    #[test]
    fn the_time_budget_still_applies_to_a_cached_plan() {
        let (_d, g) = graph();
        write(&g, WS, "UNWIND range(1, 30) AS i CREATE (:N {i: i})");
        let c = PlanCache::new(2);
        let q = "MATCH (a:N), (b:N), (d:N) RETURN count(*) AS n";
        let snap = g.snapshot(WS);
        c.run_read(&snap, q, &Params::new(), &Limits::default())
            .expect("first");
        let none = Limits {
            time: std::time::Duration::ZERO,
            ..Limits::default()
        };
        let err = c
            .run_read(&snap, q, &Params::new(), &none)
            .expect_err("no time");
        assert_eq!(err.code(), "timeout");
        assert_eq!(counts(&c).0, 1);
    }
}
