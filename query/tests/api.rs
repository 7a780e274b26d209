//! The public API's contract: result JSON, EXPLAIN/PROFILE, budgets and write statistics.

mod common;

use std::time::{Duration, Instant};

use common::plain_model;
use svc_query::model::ModelGraph;
use svc_query::{parse, run_read, run_write, Limits, Params};

fn read(
    g: &ModelGraph,
    text: &str,
    limits: &Limits,
) -> Result<svc_query::QueryResult, svc_query::QueryError> {
    run_read(g, &parse(text).expect("parses"), &Params::new(), limits)
}

#[test]
fn nodes_and_relationships_serialise_as_documented() {
    let g = plain_model();
    let r = read(
        &g,
        "MATCH (c:Customer {name: 'Ann'})-[r:REFERRED]->(b) RETURN c, r, b.name AS b",
        &Limits::default(),
    )
    .expect("runs");
    let json = serde_json::to_value(&r).expect("serialises");
    assert_eq!(json["columns"], serde_json::json!(["c", "r", "b"]));
    let row = &json["rows"][0];
    let c = &row[0];
    assert!(c["id"].is_u64(), "{c}");
    assert_eq!(c["labels"], serde_json::json!(["Customer"]));
    assert_eq!(c["properties"]["name"], "Ann");
    assert_eq!(c["properties"]["lastSeen"], "2024-05-03T10:00:00Z");
    let rel = &row[1];
    assert_eq!(rel["type"], "REFERRED");
    assert_eq!(rel["start"], c["id"]);
    assert!(rel["end"].is_u64() && rel["id"].is_u64(), "{rel}");
    assert_eq!(rel["properties"]["since"], 2021);
    assert_eq!(row[2], "Bob");
    assert_eq!(json["stats"]["rows"], 1);
    assert!(json.get("plan").is_none(), "no plan unless EXPLAIN/PROFILE");
}

#[test]
fn explain_plans_without_running_and_profile_counts_rows() {
    let g = plain_model().reindexed(svc_query::model::DOMAIN_INDEXES);
    let r = read(&g, "EXPLAIN MATCH (c:Customer {email: 'ann@example.com'})-[:HAS_TOUCHPOINT]->(t) RETURN t.action", &Limits::default())
        .expect("explains");
    assert!(r.rows.is_empty());
    let plan = r.plan.expect("plan");
    assert_eq!(plan.operator, "ProduceResults");
    let ops = plan.operators();
    assert!(
        ops.contains(&"NodeIndexSeek") && ops.contains(&"Expand"),
        "{}",
        plan.render()
    );
    assert!(plan.rows.is_none());

    let r = read(&g, "PROFILE MATCH (c:Customer {email: 'ann@example.com'})-[:HAS_TOUCHPOINT]->(t) RETURN t.action", &Limits::default())
        .expect("profiles");
    assert_eq!(r.rows.len(), 3);
    let plan = r.plan.expect("plan");
    assert_eq!(plan.rows, Some(3));
    fn find<'a>(p: &'a svc_query::PlanTree, name: &str) -> Option<&'a svc_query::PlanTree> {
        if p.operator == name {
            return Some(p);
        }
        p.children.iter().find_map(|c| find(c, name))
    }
    assert_eq!(
        find(&plan, "NodeIndexSeek").and_then(|p| p.rows),
        Some(1),
        "{}",
        plan.render()
    );
    assert_eq!(
        find(&plan, "Expand").and_then(|p| p.rows),
        Some(3),
        "{}",
        plan.render()
    );
    assert!(find(&plan, "Expand").and_then(|p| p.time_us).is_some());
}

#[test]
fn the_row_cap_is_an_error_not_a_truncation() {
    let g = plain_model();
    let limits = Limits {
        max_rows: 3,
        ..Limits::default()
    };
    let e = read(&g, "MATCH (n) RETURN n", &limits).expect_err("too many rows");
    assert_eq!(e.code(), "row_limit");
    assert_eq!(
        read(&g, "MATCH (n) RETURN n LIMIT 3", &limits)
            .expect("fits")
            .rows
            .len(),
        3
    );
}

#[test]
fn the_time_budget_stops_a_runaway_query() {
    let g = plain_model();
    let limits = Limits {
        time: Duration::from_millis(50),
        ..Limits::default()
    };
    let start = Instant::now();
    let e = read(
        &g,
        "MATCH (a), (b), (c), (d), (e), (f) RETURN count(*)",
        &limits,
    )
    .expect_err("too slow");
    assert_eq!(e.code(), "timeout");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "took {:?}",
        start.elapsed()
    );
}

#[test]
fn buffering_operators_are_capped() {
    let g = plain_model();
    let limits = Limits {
        max_buffered_rows: 100,
        ..Limits::default()
    };
    let e = read(
        &g,
        "MATCH (a), (b), (c) RETURN a.name ORDER BY a.name",
        &limits,
    )
    .expect_err("sort too big");
    assert_eq!(e.code(), "row_limit");
    let e = read(
        &g,
        "MATCH (a), (b), (c) RETURN DISTINCT id(a), id(b), id(c)",
        &Limits {
            max_rows: 100_000,
            ..limits
        },
    )
    .expect_err("distinct too big");
    assert_eq!(e.code(), "row_limit");
}

#[test]
fn hop_limit_is_configurable() {
    let g = plain_model();
    let text = "MATCH (a:Customer {name: 'Ann'})-[:REFERRED*1..3]->(b) RETURN count(b)";
    assert_eq!(
        read(
            &g,
            text,
            &Limits {
                max_hops: 2,
                ..Limits::default()
            }
        )
        .expect_err("3 > 2")
        .code(),
        "hop_limit"
    );
    assert_eq!(
        read(&g, text, &Limits::default()).expect("within").rows[0][0],
        svc_query::ResultValue::Int(3)
    );
}

#[test]
fn write_statistics_count_what_changed() {
    let mut g = ModelGraph::new();
    let stmt =
        parse("CREATE (a:X:Y {p: 1, q: null})-[:R {w: 2}]->(b:X) RETURN a.p").expect("parses");
    let r = run_write(&mut g, &stmt, &Params::new(), &Limits::default()).expect("writes");
    assert_eq!(r.stats.nodes_created, 2);
    assert_eq!(r.stats.relationships_created, 1);
    assert_eq!(r.stats.properties_set, 2);
    assert_eq!(r.stats.labels_added, 3);
    assert!(r.stats.contains_updates());
    let stmt = parse("MATCH (a:Y) SET a.p = 5 REMOVE a:Y WITH a MATCH (x:X) DETACH DELETE x")
        .expect("parses");
    let r = run_write(&mut g, &stmt, &Params::new(), &Limits::default()).expect("writes");
    assert_eq!((r.stats.properties_set, r.stats.labels_removed), (1, 1));
    assert_eq!(
        (r.stats.nodes_deleted, r.stats.relationships_deleted),
        (2, 1)
    );
    assert!(r.columns.is_empty() && r.rows.is_empty());
    let count = run_read(
        &g,
        &parse("MATCH (n) RETURN count(n)").expect("parses"),
        &Params::new(),
        &Limits::default(),
    )
    .expect("reads");
    assert_eq!(count.rows, vec![vec![svc_query::ResultValue::Int(0)]]);
}

#[test]
fn read_only_statements_also_run_on_the_write_path() {
    let mut g = plain_model();
    let before = g.clone();
    let stmt = parse("MATCH (c:Customer) RETURN count(c)").expect("parses");
    let r = run_write(&mut g, &stmt, &Params::new(), &Limits::default()).expect("runs");
    assert_eq!(r.rows, vec![vec![svc_query::ResultValue::Int(5)]]);
    assert!(!r.stats.contains_updates());
    assert_eq!(g, before);
}

#[test]
fn errors_carry_codes_and_positions() {
    let e = parse("MATCH (n)\nCALL db.labels()").expect_err("unsupported");
    assert_eq!(e.code(), "unsupported");
    let p = e.position().expect("position");
    assert_eq!((p.line, p.column), (2, 1));
    assert!(e.to_string().contains("line 2, column 1"), "{e}");
    let g = plain_model();
    let e = read(&g, "MATCH (n) RETURN n.x + $missing", &Limits::default()).expect_err("param");
    assert_eq!(e.code(), "unknown_parameter");
    assert!(e.position().is_none());
}

#[test]
fn label_checks_stay_exact_when_answered_from_the_label_list() {
    // Hundreds of far-end label checks switch the executor from loading nodes to the label's
    // id list; the answers must not change.
    let mut g = ModelGraph::new();
    let list: Vec<String> = (0..300).map(|i| i.to_string()).collect();
    let create = format!(
        "UNWIND [{}] AS i CREATE (:A {{i: i}})-[:R]->(:B {{i: i}})",
        list.join(", ")
    );
    run_write(
        &mut g,
        &parse(&create).expect("parses"),
        &Params::new(),
        &Limits::default(),
    )
    .expect("creates");
    let relabel = parse("MATCH (b:B) WHERE b.i % 2 = 0 REMOVE b:B SET b:C").expect("parses");
    run_write(&mut g, &relabel, &Params::new(), &Limits::default()).expect("relabels");
    let count = |text: &str| read(&g, text, &Limits::default()).expect("runs").rows[0][0].clone();
    assert_eq!(
        count("MATCH (a:A)-[:R]->(b:B) RETURN count(*)"),
        svc_query::ResultValue::Int(150)
    );
    assert_eq!(
        count("MATCH (a:A)-->(c:C) RETURN count(*)"),
        svc_query::ResultValue::Int(150)
    );
    assert_eq!(
        count("MATCH (a)-->(x:A) RETURN count(*)"),
        svc_query::ResultValue::Int(0)
    );
    assert_eq!(
        count("MATCH (a:A)-->(x:B:C) RETURN count(*)"),
        svc_query::ResultValue::Int(0)
    );
}
