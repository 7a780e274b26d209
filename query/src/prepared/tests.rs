use super::*;
use svc_engine::catalog::IndexSpec;
use svc_engine::{Graph, GraphOptions, IndexKind, Value, WorkspaceId};

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

fn run_on(c: &PlanCache, snap: &svc_engine::Snapshot<'_>, text: &str, params: &Params) -> String {
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

/// Declares an equality index on `Customer.tier` in `ws`.
fn declare_tier(g: &Graph, ws: WorkspaceId) {
    g.declare_index(
        ws,
        IndexSpec {
            name: Some("tier".into()),
            label: "Customer".into(),
            property: "tier".into(),
            kind: IndexKind::Equality,
            if_not_exists: false,
        },
    )
    .expect("declare");
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
    declare_tier(&g, WS);
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

#[test]
fn a_hit_checks_its_assumptions_only_after_its_workspace_s_statistics_change() {
    let (_d, g) = graph();
    let other = WorkspaceId(2);
    write(
        &g,
        WS,
        "CREATE (:Customer {name: 'Ann', score: 3}), (:Customer {name: 'Bob', score: 2})",
    );
    write(&g, other, "CREATE (:Customer {name: 'Zed', score: 1})");
    let c = PlanCache::new(8);
    let checked = |c: &PlanCache| c.stats().checked;
    // A top-k over the ordered index, which assumes every score is a number.
    let q = "MATCH (c:Customer) RETURN c.name AS name ORDER BY c.score LIMIT 1";
    let bob = r#"[["name"],[["Bob"]]]"#;
    assert_eq!(run(&c, &g, WS, q, &Params::new()), bob);
    assert_eq!(run(&c, &g, WS, q, &Params::new()), bob);
    assert_eq!((counts(&c), checked(&c)), ((1, 1, 0, 1), 0));
    // Another workspace's nodes and index, and an unindexed property here, change none of
    // the statistics the plan read: nothing is checked or planned again.
    write(&g, other, "CREATE (:Customer {name: 'Yan', score: 0})");
    declare_tier(&g, other);
    while g.build_indexes_step(100).expect("build") {}
    write(&g, WS, "MATCH (c:Customer {name: 'Ann'}) SET c.note = 'x'");
    assert_eq!(run(&c, &g, WS, q, &Params::new()), bob);
    assert_eq!((counts(&c), checked(&c)), ((2, 1, 0, 1), 0));
    // A new node changes the label count: checked once (it still holds), then known again.
    write(&g, WS, "CREATE (:Customer {name: 'Cy', score: 5})");
    assert_eq!(run(&c, &g, WS, q, &Params::new()), bob);
    assert_eq!(run(&c, &g, WS, q, &Params::new()), bob);
    assert_eq!((counts(&c), checked(&c)), ((4, 1, 0, 1), 1));
    // A score that is not a number changes the index counts: checked, and no longer holds
    // (strings sort before numbers).
    write(&g, WS, "MATCH (c:Customer {name: 'Cy'}) SET c.score = 'x'");
    assert_eq!(run(&c, &g, WS, q, &Params::new()), r#"[["name"],[["Cy"]]]"#);
    assert_eq!((counts(&c), checked(&c)), ((4, 2, 1, 1), 2));
}
