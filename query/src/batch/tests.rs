//! The batch path really runs (the differential tests would pass vacuously if every query fell
//! back to the row path), and answers as the row path does on shapes of issue 25.

use super::RUNS;
use crate::fuzzing::fixture_models;
use crate::{parse, run_read, Limits, ModelSwitch, Params};

fn runs() -> (u64, u64) {
    RUNS.with(|r| r.get())
}

/// Runs `q` on the batch path; returns its rows as text and checks against the row path.
fn batch(q: &str) -> String {
    let (plain, _) = fixture_models();
    let stmt = parse(q).expect("parses");
    let before = runs();
    let b = run_read(
        &ModelSwitch::batch(&plain).expect("model"),
        &stmt,
        &Params::new(),
        &Limits::default(),
    )
    .expect("batch runs");
    let after = runs();
    assert_eq!(
        after.1, before.1,
        "{q}: the batch failed over to the row path"
    );
    assert!(after.0 > before.0, "{q}: no batch ran");
    let r = run_read(
        &ModelSwitch::rows(&plain),
        &stmt,
        &Params::new(),
        &Limits::default(),
    )
    .expect("rows run");
    assert_eq!(format!("{:?}", b.rows), format!("{:?}", r.rows), "{q}");
    format!("{:?}", b.rows)
}

#[test]
fn the_issue_shapes_run_on_the_batch_path() {
    for q in [
        "MATCH (c:Customer) RETURN c.name AS n, c.score AS s ORDER BY s DESC LIMIT 2",
        "MATCH (t:Touchpoint) RETURN t.channel, count(*), max(t.ts)",
        "MATCH (t:Touchpoint) RETURN DISTINCT t.channel",
        "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(t:Touchpoint) RETURN c.name AS n, count(t) AS k ORDER BY k DESC LIMIT 2",
        "MATCH (k:Campaign) OPTIONAL MATCH (k)<-[:INFLUENCED_BY]-(t:Touchpoint) WHERE t.channel = 'web' RETURN k.name, count(t)",
        "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(:Touchpoint) WITH DISTINCT c RETURN avg(c.score)",
        "MATCH (c:Customer) OPTIONAL MATCH (c)-[:HAS_TOUCHPOINT]->(:Touchpoint)-[:INFLUENCED_BY]->(k:Campaign) WITH c, count(k) AS n WHERE n = 0 RETURN c.name ORDER BY c.name",
        "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(:Touchpoint)-[:INFLUENCED_BY]->(k:Campaign)<-[:INFLUENCED_BY]-(:Touchpoint)<-[:HAS_TOUCHPOINT]-(o:Customer) RETURN count(DISTINCT o)",
        "MATCH (t:Touchpoint) WHERE t.channel IN ['web', 'email'] RETURN t.channel, t.action, count(*)",
        "MATCH (c:Customer) WHERE c.email ENDS WITH '.com' AND c.name CONTAINS 'a' RETURN c.name",
        "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(t:Touchpoint) WHERE c.city = 'Paris' RETURN c.name, t.action ORDER BY t.ts DESC",
        "MATCH (o:Opportunity)-[:AT_STAGE]->(s:Stage) RETURN s.name, avg(o.amount), sum(o.amount)",
        "MATCH (c:Customer) UNWIND c.tags AS tag RETURN tag, count(*)",
        "MATCH (c:Customer) RETURN c.name SKIP 1 LIMIT 2",
        "MATCH (c:Customer) RETURN collect(DISTINCT c.city), min(c.name)",
    ] {
        batch(q);
    }
}

#[test]
fn relationship_variables_and_uniqueness_on_the_batch_path() {
    // `r` is returned (relationship ids come from the CSR lists), and the second hop must not
    // reuse the first relationship.
    let out = batch(
        "MATCH (c:Customer)-[r:REFERRED]->(d:Customer) RETURN c.name, r.since ORDER BY r.since",
    );
    assert!(out.contains("2021"), "{out}");
    let out =
        batch("MATCH (a:Customer)-[:HAS_TOUCHPOINT]->(t)<-[:HAS_TOUCHPOINT]-(b) RETURN count(*)");
    assert_eq!(
        out, "[[Int(0)]]",
        "a touchpoint has one customer: b = a reuses r"
    );
    batch("MATCH (a)-[r1:REFERRED]-(b)-[r2:REFERRED]-(c) RETURN a.name, b.name, c.name, r1, r2");
}

#[test]
fn typed_kernels_run_on_the_batch_path() {
    for q in [
        "MATCH (o:Opportunity) WHERE o.amount * o.score > 1000 RETURN count(o)",
        "MATCH (o:Opportunity) RETURN min(o.score), max(o.score), avg(o.score), sum(o.amount), count(o.amount)",
        "MATCH (o:Opportunity) RETURN o.progress AS p, sum(o.amount), avg(o.score), max(o.amount - o.progress) ORDER BY p",
        "MATCH (o:Opportunity)-[:AT_STAGE]->(s:Stage) RETURN o.name, o.amount * s.progress AS e ORDER BY e DESC",
        "MATCH (k:Campaign) RETURN min(k.budget), sum(k.budget), avg(k.budget)",
        "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(:Touchpoint)-[:INFLUENCED_BY]->(k:Campaign)<-[:INFLUENCED_BY]-(:Touchpoint)<-[:HAS_TOUCHPOINT]-(o:Customer) WHERE o <> c RETURN count(DISTINCT o), count(o)",
        "MATCH (a:Customer)-[:REFERRED]-(b:Customer) WHERE a = b OR a.name = 'Ann' RETURN count(*)",
        // Relationship columns: appended to an OPTIONAL MATCH's unmatched rows, sorted, returned.
        "MATCH (k:Campaign) OPTIONAL MATCH (k)<-[r:INFLUENCED_BY]-(t) RETURN k.name, r.weight ORDER BY k.name, r.weight",
        "MATCH (t)-[r:INFLUENCED_BY]->(k) RETURN k.name, r ORDER BY r.weight DESC, k.name LIMIT 2",
        "MATCH (t)-[r:INFLUENCED_BY]->(k) RETURN DISTINCT r.weight AS w ORDER BY w",
    ] {
        batch(q);
    }
}

#[test]
fn index_ranges_read_from_the_sorted_column_on_the_batch_path() {
    // The indexed fixture plans NodeIndexRangeScan; the batch path reads the range from the
    // column's rows sorted by value (floats: Opportunity.score; integers with a float bound
    // and datetimes go their own ways). Same rows, same order as the index gives.
    let (_, indexed) = fixture_models();
    for q in [
        "MATCH (o:Opportunity) WHERE o.score > 0.3 RETURN o.name",
        "MATCH (o:Opportunity) WHERE o.score >= 0.35 AND o.score < 0.95 RETURN o.name, o.score",
        "MATCH (o:Opportunity) WHERE o.score <= 0.8 RETURN count(*), avg(o.score)",
        "MATCH (o:Opportunity) WHERE o.score > 1 RETURN o.name",
        "MATCH (o:Opportunity) WHERE o.score >= 0 RETURN o.name",
        "MATCH (c:Customer) WHERE c.score > 50 RETURN c.name",
        "MATCH (c:Customer) WHERE c.lastSeen >= datetime('2024-04-25T00:00:00Z') RETURN c.name",
        "MATCH (t:Touchpoint) WHERE t.ts < datetime('2024-05-01T00:00:00Z') RETURN t.action",
    ] {
        let stmt = parse(q).expect("parses");
        let run = |g: &ModelSwitch<'_>| {
            run_read(g, &stmt, &Params::new(), &Limits::default()).expect("runs")
        };
        let before = runs();
        let b = run(&ModelSwitch::batch(&indexed).expect("model"));
        assert_eq!(runs().1, before.1, "{q}: the batch failed over");
        let r = run(&ModelSwitch::rows(&indexed));
        assert_eq!(format!("{:?}", b.rows), format!("{:?}", r.rows), "{q}");
    }
}

#[test]
fn case_runs_branch_by_branch_on_the_batch_path() {
    for q in [
        // Searched, constant results (dictionary codes), as a grouping key and inside sum.
        "MATCH (c:Customer) RETURN CASE WHEN c.score >= 80 THEN 'hot' WHEN c.score >= 40 THEN 'warm' ELSE 'cold' END AS band, count(*) AS n ORDER BY band",
        "MATCH (o:Opportunity) RETURN sum(CASE WHEN o.amount >= 3000 THEN 1 ELSE 0 END) AS big, count(*)",
        // Simple form: a null subject matches no WHEN; no ELSE gives null.
        "MATCH (c:Customer) RETURN c.name, CASE c.city WHEN 'Paris' THEN 1 WHEN 'Rome' THEN 2 END AS k ORDER BY c.name",
        // Results that are expressions; a non-boolean WHEN never holds.
        "MATCH (c:Customer) RETURN c.name, CASE WHEN c.score > 50 THEN c.score * 2 WHEN c.name THEN 0 ELSE c.name END AS v ORDER BY c.name",
        "MATCH (t:Touchpoint) WHERE CASE t.channel WHEN 'web' THEN true ELSE t.action = 'call' END RETURN count(*)",
    ] {
        batch(q);
    }
    // A branch no row takes may fail without failing the batch; one a row takes falls back.
    batch(
        "MATCH (c:Customer) RETURN CASE WHEN c.score > 1000 THEN 1 / 0 ELSE 1 END AS x, count(*)",
    );
}

#[test]
fn string_functions_of_a_property_run_per_distinct_string() {
    for q in [
        "MATCH (c:Customer) WHERE toLower(c.name) STARTS WITH 'a' RETURN c.name ORDER BY c.name",
        "MATCH (c:Customer) WHERE toUpper(c.city) = 'PARIS' RETURN count(*)",
        "MATCH (c:Customer) WHERE 'paris' = toLower(c.city) RETURN c.name ORDER BY c.name",
        "MATCH (c:Customer) WHERE toLower(c.email) ENDS WITH '@EXAMPLE.COM' RETURN count(*)",
        "MATCH (c:Customer) WHERE toLower(c.city) IS NULL RETURN c.name ORDER BY c.name",
        "MATCH (c:Customer) RETURN toLower(c.city) ENDS WITH 's' AS e, count(*) ORDER BY e",
        "MATCH (c:Customer) WHERE c.name < 'C' RETURN c.name ORDER BY c.name",
        "MATCH (c:Customer) WHERE trim(c.name) >= 'Cat' AND c.city IS NOT NULL RETURN c.name ORDER BY c.name",
        // Logic over tests of the one property.
        "MATCH (c:Customer) WHERE c.name STARTS WITH 'A' OR c.name STARTS WITH 'C' RETURN c.name ORDER BY c.name",
        "MATCH (c:Customer) WHERE NOT (c.city = 'Paris' XOR c.city IS NULL) RETURN c.name ORDER BY c.name",
        "MATCH (c:Customer) RETURN c.city STARTS WITH 'P' OR c.city ENDS WITH 'e' AS k, count(*) ORDER BY k",
        "MATCH (c:Customer) RETURN NOT c.city CONTAINS 'a' AND c.city <> 'Rome' AS k, count(*) ORDER BY k",
    ] {
        batch(q);
    }
}

/// Two outcomes are the same: the same value (floats bit for bit) or the same error text.
pub(super) fn same_result(
    a: &Result<crate::value::Val, crate::error::QueryError>,
    b: &Result<crate::value::Val, crate::error::QueryError>,
) -> bool {
    use crate::value::Val;
    match (a, b) {
        (Ok(Val::Float(x)), Ok(Val::Float(y))) => x.to_bits() == y.to_bits(),
        (Ok(x), Ok(y)) => format!("{x:?}") == format!("{y:?}"),
        (Err(x), Err(y)) => x.to_string() == y.to_string(),
        _ => false,
    }
}

#[test]
fn counted_chains_run_on_the_batch_path() {
    // Counts of filtered hops and chains, under OPTIONAL MATCH, with the WHERE on the count
    // fused into the count; DISTINCT over a hop as a semi-join.
    let out = batch(
        "MATCH (c:Customer) OPTIONAL MATCH (c)-[:HAS_TOUCHPOINT]->(:Touchpoint)-[:INFLUENCED_BY]->(k:Campaign) WITH c, count(k) AS n WHERE n = 0 RETURN c.name ORDER BY c.name",
    );
    assert!(out.contains("Dan") && !out.contains("Ann"), "{out}");
    let out = batch(
        "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(t:Touchpoint) WHERE t.channel <> 'web' WITH c, count(t) AS n WHERE 2 <= n RETURN c.name, n",
    );
    assert_eq!(out, "[[String(\"Ann\"), Int(2)]]");
    for q in [
        "MATCH (k:Campaign) OPTIONAL MATCH (k)<-[:INFLUENCED_BY]-(t:Touchpoint) WHERE t.channel = 'email' RETURN k.name, count(t) ORDER BY k.name",
        "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(t:Touchpoint) WHERE t.action STARTS WITH 'page' RETURN count(DISTINCT c), min(c.name)",
        "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(t:Touchpoint) WHERE t.channel = 'web' WITH DISTINCT c RETURN count(c), avg(c.score)",
        "MATCH (c:Customer) OPTIONAL MATCH (c)-[:OWNS]->(o) OPTIONAL MATCH (o)-[:AT_STAGE]->(s:Stage) RETURN c.name, count(s) ORDER BY c.name",
        "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(t) WHERE t.ts > c.lastSeen RETURN c.name, count(t) ORDER BY c.name",
        // UNWIND of a list nothing reads afterwards (moved), and of one read afterwards.
        "MATCH (c:Customer) WITH c.name AS n, collect(c.city) AS cities UNWIND cities AS city RETURN city, count(*) ORDER BY city",
        "MATCH (c:Customer) WITH collect(c.city) AS cities UNWIND cities AS city RETURN city, size(cities) ORDER BY city",
        "MATCH (c:Customer) UNWIND c.tags AS tag RETURN DISTINCT tag ORDER BY tag",
    ] {
        batch(q);
    }
}
