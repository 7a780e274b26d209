//! The batch executor against the row path: every read of the case suite, the benchmark
//! corpus (`benches/corpus/queries.txt`) and a few hundred random reads run
//! - on the in-memory model graph: row path, batch over a model built from it, and batch with
//!   every other node marked touched (read through the graph instead of the columns);
//! - on the engine with its read model built: the batch path against the row path on the same
//!   snapshot, and against the model graph's rows;
//! - on the engine after writes that followed the model's build (the delta: changed
//!   properties and labels, new and deleted nodes and relationships): batch against rows.
//!
//! Any difference in rows (or their order), or in error codes, fails.

mod common;

use common::*;
use svc_engine::{Graph, WorkspaceId};
use svc_query::fuzzing::{check_batch_vs_rows, same_outcome};
use svc_query::{parse, run_read, Limits, ModelSwitch, Params, PlanCache, Statement};

/// (file and name, query, params) of every case.
fn case_queries() -> Vec<(String, String, Params)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("cases dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("case file");
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned());
        for block in text.split("\n== ").skip(1) {
            let (name, body) = block.split_once('\n').unwrap_or((block, ""));
            let query: String = body
                .lines()
                .take_while(|l| !l.starts_with("-- "))
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            let params = body
                .lines()
                .find_map(|l| l.strip_prefix("-- params:"))
                .map(|p| params_from_json(p.trim()))
                .unwrap_or_default();
            out.push((format!("{file:?}/{name}"), query, params));
        }
    }
    out
}

/// Random reads over the fixture's labels, types and properties (a fixed seed, so the same
/// queries every run, unless `SVC_BATCH_SEED` gives another).
fn random_queries(n: usize) -> Vec<String> {
    let mut state = std::env::var("SVC_BATCH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15u64);
    let mut next = move |k: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % k as u64) as usize
    };
    let pick = |next: &mut dyn FnMut(usize) -> usize, xs: &[&'static str]| xs[next(xs.len())];
    let patterns = [
        "(a:Customer)",
        "(a:Touchpoint)",
        "(a:Customer)-[:HAS_TOUCHPOINT]->(b:Touchpoint)",
        "(a:Touchpoint)-[:INFLUENCED_BY]->(b:Campaign)",
        "(a:Customer)-[:HAS_TOUCHPOINT]->(t)-[:INFLUENCED_BY]->(b:Campaign)",
        "(b:Campaign)<-[:INFLUENCED_BY]-(t:Touchpoint)<-[:HAS_TOUCHPOINT]-(a:Customer)",
        "(a:Customer)-[:REFERRED]-(b:Customer)",
        "(a:Customer)-[:REFERRED|OWNS]->(b)",
        "(a)-->(b)",
        "(a)--(b)",
        "(a:Opportunity)-[:AT_STAGE]->(b:Stage)",
        "(a:Customer)-[:OWNS]->(b:Opportunity)-[:AT_STAGE]->(s:Stage)",
        "(a:Customer)-[r:HAS_TOUCHPOINT]->(b:Touchpoint)",
        "(a)-[r1]->(b)<-[r2]-(c)",
        "(a:Customer)-[:REFERRED]->(b)-[:REFERRED]->(c)",
        "(a)-[:REFERRED]-(b)-[:REFERRED]-(c)",
        "(a:Customer), (b:Campaign)",
        "(a:Customer)-[:HAS_TOUCHPOINT]->(t:Touchpoint) MATCH (t)-[:INFLUENCED_BY]->(b)",
        "(a:Lead)",
        "(b:Campaign)<-[:INFLUENCED_BY]-(a)",
        "(a:Customer)-[:REFERRED*1..2]->(b)",
        "(a:Customer)-[:HAS_TOUCHPOINT|INFLUENCED_BY*1..2]->(b)",
        "(b:Campaign)<-[*2..2]-(a)",
        "(a)-[r:REFERRED*0..2]-(b)",
        "(a:Customer)-[:REFERRED*2..3]-(b:Customer)",
        // A node's property equal to a value of the row before (looked up, not filtered).
        "(b:Customer) MATCH (a:Customer {city: b.city})",
        "(b:Touchpoint) UNWIND ['web', 'email', null, 'web', 1] AS ch MATCH (a:Touchpoint {channel: ch})",
        "(b:Opportunity) MATCH (a:Opportunity {progress: b.progress})",
        "(b:Campaign) UNWIND [1000, 2500.0, null, '1000'] AS x MATCH (a:Campaign {budget: x})",
    ];
    let a_props = [
        "name", "score", "city", "channel", "action", "amount", "ts", "email",
    ];
    let preds = [
        "a.score > 50",
        "a.score <= 75",
        "a.city = 'Paris'",
        "a.city IN ['Paris', 'Rome']",
        "a.channel = 'web'",
        "a.name STARTS WITH 'A'",
        "a.email ENDS WITH '.com'",
        "a.name CONTAINS 'a'",
        "a.score IS NULL",
        "a.city IS NOT NULL",
        "NOT a.channel = 'email'",
        "a.amount >= 3000 OR a.score < 0.5",
        "a:Lead",
        "b.name <> 'Spring'",
        "a.ts > datetime('2024-04-30T00:00:00Z')",
        "toLower(a.name) = 'ann'",
        "toUpper(a.city) ENDS WITH 'S'",
        "trim(a.name) >= 'C'",
        "toLower(a.city) IS NULL",
        "'paris' = toLower(a.city)",
        "toLower(a.score) = '90'",
        "a.name STARTS WITH 'A' OR a.name ENDS WITH 'n'",
        "NOT (a.city = 'Paris' OR a.city IS NULL)",
        "a.channel = 'web' XOR a.channel STARTS WITH 'e'",
        "a.score > 50 AND a.score < 95 OR a.score IS NULL",
        "a.score + 1 > 61",
        "a.score >= 10 AND a.score < 80",
        "a.ts >= datetime('2024-01-01T00:00:00Z')",
        "a.amount * a.score > 100",
        "a <> b",
        "a = b",
        "a.amount - a.progress * 2 >= a.score",
        "CASE WHEN a.score > 50 THEN a.city = 'Paris' ELSE true END",
        "CASE a.channel WHEN 'web' THEN 1 WHEN 'email' THEN 2 ELSE 0 END = 1",
    ];
    let mut out = Vec::new();
    while out.len() < n {
        let pat = patterns[next(patterns.len())];
        let has_b = pat.contains("(b");
        let mut q = format!("MATCH {pat}");
        if next(3) > 0 {
            let p = pick(&mut next, &preds);
            if has_b || !p.contains("b.") {
                q.push_str(&format!(" WHERE {p}"));
                if next(3) == 0 {
                    let p2 = pick(&mut next, &preds);
                    if has_b || !p2.contains("b.") {
                        q.push_str(&format!(" AND {p2}"));
                    }
                }
            }
        }
        if next(5) == 0 {
            q.push_str(
                " OPTIONAL MATCH (a)-[:HAS_TOUCHPOINT]->(o:Touchpoint) WHERE o.channel = 'web'",
            );
        }
        let p = pick(&mut next, &a_props);
        let tail = match next(23) {
            21 => format!(
                "RETURN CASE WHEN a.{p} IS NULL THEN 'none' WHEN a.score > 50 THEN 'hi' ELSE 'lo' END AS k, count(*) AS n"
            ),
            22 => "RETURN sum(CASE WHEN a.score >= 50 THEN 1 ELSE 0 END) AS hi, count(*) AS n"
                .to_owned(),
            18 if has_b => {
                "RETURN b.name AS k, count(DISTINCT a) AS n ORDER BY n DESC, k".to_owned()
            }
            19 if has_b => {
                "WITH a, count(b) AS n RETURN a.name AS k, n ORDER BY n DESC, k LIMIT 3".to_owned()
            }
            20 => "WITH a, count(*) AS n WHERE n >= 2 RETURN count(a), avg(a.score)".to_owned(),
            14 => format!("RETURN a.name AS n, a.{p} AS k ORDER BY k DESC, n LIMIT 4"),
            15 => format!("RETURN a.{p} AS k, a.name AS n ORDER BY n, k SKIP 2 LIMIT 3"),
            16 => "RETURN a.score * 2 AS k, a.name AS n ORDER BY k DESC LIMIT 2".to_owned(),
            17 => format!("RETURN a.{p} AS k ORDER BY k"),
            11 if has_b => "RETURN a.name AS x, b.name AS y ORDER BY x, y".to_owned(),
            12 if has_b => {
                "RETURN count(DISTINCT b), count(b), collect(DISTINCT a.name)".to_owned()
            }
            13 if pat.contains("[r") => {
                "RETURN count(*), collect(DISTINCT type(r)) AS ts".to_owned()
            }
            0 => "RETURN count(*)".to_owned(),
            1 => format!("RETURN a.{p} AS k, count(*) AS n"),
            2 => format!("RETURN DISTINCT a.{p}"),
            3 => format!("RETURN a.{p} AS k ORDER BY k DESC LIMIT 3"),
            4 => format!("RETURN min(a.{p}), max(a.{p}), collect(a.{p}), count(DISTINCT a.{p})"),
            5 => format!("RETURN avg(a.score), sum(a.score), a.{p} AS k"),
            6 => "WITH a, count(*) AS n WHERE n > 1 RETURN a.name, n ORDER BY n DESC, a.name"
                .to_owned(),
            7 => format!("WITH DISTINCT a RETURN a.{p} AS k ORDER BY k SKIP 1 LIMIT 2"),
            8 => format!("RETURN a, a.{p} ORDER BY a.{p}, id(a)"),
            9 if has_b => {
                "RETURN a.name, collect(DISTINCT b.name) AS bs ORDER BY a.name".to_owned()
            }
            _ => format!("UNWIND [1, 2] AS x RETURN x, a.{p} AS k ORDER BY k, x LIMIT 5"),
        };
        q.push(' ');
        q.push_str(&tail);
        if parse(&q).is_ok() {
            out.push(q);
        }
    }
    out
}

/// A benchmark corpus (`benches/corpus/<file>.txt`: `[name]` starts a query, `param NAME
/// TYPE VALUE` lines give its parameters, `#` lines are comments), when it is there.
fn corpus_queries(file: &str) -> Vec<(String, String, Params)> {
    let path = format!(
        "{}/../benches/corpus/{file}.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String, Params)> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') || t.is_empty() {
            continue;
        }
        if let Some(name) = t.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
            out.push((format!("{file}/{name}"), String::new(), Params::new()));
            continue;
        }
        let Some((_, query, params)) = out.last_mut() else {
            continue;
        };
        if let Some(p) = t.strip_prefix("param ") {
            let mut parts = p.splitn(3, ' ');
            let (name, ty, value) = (
                parts.next().unwrap_or(""),
                parts.next().unwrap_or(""),
                parts.next().unwrap_or(""),
            );
            let v = match ty {
                "int" => value.parse().map(svc_engine::Value::Int).ok(),
                "float" => value.parse().map(svc_engine::Value::Float).ok(),
                "datetime" => value
                    .parse::<i64>()
                    .map(|ms| svc_engine::Value::DateTime(ms * 1000))
                    .ok(),
                _ => Some(svc_engine::Value::String(value.to_owned())),
            };
            if let Some(v) = v {
                params.insert(name.to_owned(), v);
            }
        } else {
            query.push_str(line);
            query.push('\n');
        }
    }
    out
}

fn limits() -> Limits {
    Limits {
        max_buffered_rows: 50_000,
        ..Limits::default()
    }
}

/// Every query of every source, with its parameters.
fn all_queries() -> Vec<(String, Statement, Params)> {
    let mut out = Vec::new();
    for (name, q, params) in case_queries() {
        if let Ok(s) = parse(&q) {
            if s.is_read_only() {
                out.push((name, s, params));
            }
        }
    }
    let corpus = corpus_queries("queries");
    assert!(
        corpus.len() >= 40,
        "the corpus has {} queries",
        corpus.len()
    );
    // The holdout corpora: queries written without tuning for them (benches/corpus/holdout.txt,
    // holdout2.txt).
    let holdouts = corpus_queries("holdout")
        .into_iter()
        .chain(corpus_queries("holdout2"));
    for (name, q, params) in corpus.into_iter().chain(holdouts) {
        let s = parse(&q).unwrap_or_else(|e| panic!("{name} does not parse: {e}"));
        out.push((name, s, params));
    }
    // `SVC_BATCH_RANDOM=N` runs N random reads instead of 400 (a longer hunt for differences).
    let n = std::env::var("SVC_BATCH_RANDOM")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    for q in random_queries(n) {
        if let Ok(s) = parse(&q) {
            if s.is_read_only() {
                out.push((q, s, Params::new()));
            }
        }
    }
    out
}

/// Batch (the snapshot's own model) against rows (the model hidden) on one engine workspace.
fn engine_batch_vs_rows(graph: &Graph, ws: WorkspaceId, queries: &[(String, Statement, Params)]) {
    let snap = graph.snapshot(ws);
    assert!(snap.has_read_model(), "the model was built");
    let rows = ModelSwitch::rows(&snap);
    for (name, stmt, params) in queries {
        let a = run_read(&rows, stmt, params, &limits());
        let b = run_read(&snap, stmt, params, &limits());
        same_outcome(name, "engine batch", &a, &b);
    }
}

#[test]
fn batch_matches_rows_on_the_model_graph() {
    let plain = plain_model();
    let indexed = indexed_model();
    for (name, stmt, params) in all_queries() {
        check_batch_vs_rows(&name, &stmt, &params, &plain, &limits());
        check_batch_vs_rows(&name, &stmt, &params, &indexed, &limits());
    }
}

#[test]
fn batch_matches_rows_and_the_model_graph_on_the_engine() {
    let queries = all_queries();
    let (_dir, graph) = engine();
    load_engine_fixture(&graph, WS);
    graph.prepare_read_model(WS).expect("build").expect("fits");
    engine_batch_vs_rows(&graph, WS, &queries);
    // And the engine's batch rows are the model graph's (ids aside), in the same order
    // where the query orders them.
    let plain = plain_model();
    let snap = graph.snapshot(WS);
    for (name, stmt, params) in &queries {
        if stmt.to_string().contains("collect(") {
            continue; // list order follows the plan, which differs between the two sources
        }
        let (Ok(a), Ok(b)) = (
            run_read(&plain, stmt, params, &limits()),
            run_read(&snap, stmt, params, &limits()),
        ) else {
            continue;
        };
        let (mut x, mut y) = (normalized_rows(&a), normalized_rows(&b));
        if !stmt.to_string().contains("ORDER BY") {
            x.sort_by_key(ToString::to_string);
            y.sort_by_key(ToString::to_string);
        }
        if stmt.to_string().contains("LIMIT") || stmt.to_string().contains("SKIP") {
            assert_eq!(x.len(), y.len(), "{name}: row counts differ");
        } else {
            assert_eq!(
                x, y,
                "{name}: the engine's batch rows differ from the model graph's"
            );
        }
    }
}

/// Writes after the model's build: changed properties and labels, new and deleted nodes and
/// relationships.
const WRITES: &[&str] = &[
    "MATCH (c:Customer {name: 'Bob'}) SET c.score = 99, c.city = 'Oslo'",
    "MATCH (c:Customer {name: 'Dan'}) SET c.city = 'Paris', c.name = 'Dana'",
    "CREATE (:Customer {name: 'Zed', score: 5, city: 'Paris', email: 'zed@example.org'})",
    "MATCH (z:Customer {name: 'Zed'}), (t:Touchpoint {action: 'call'}) CREATE (z)-[:HAS_TOUCHPOINT]->(t)",
    "MATCH (z:Customer {name: 'Zed'}), (c:Campaign {name: 'Dormant'}) CREATE (t:Touchpoint {action: 'visit', channel: 'web'}), (z)-[:HAS_TOUCHPOINT]->(t), (t)-[:INFLUENCED_BY]->(c)",
    "MATCH (:Customer {name: 'Cat'})-[r:HAS_TOUCHPOINT]->() DELETE r",
    "MATCH (e:Customer {name: 'Eve'}) REMOVE e:Lead SET e:Lead2",
    "MATCH (t:Touchpoint {action: 'signup'}) DETACH DELETE t",
    "MATCH (a:Customer {name: 'Ann'}) SET a.score = 'ninety'",
];

#[test]
fn batch_matches_rows_after_writes_that_followed_the_model() {
    let queries = all_queries();
    let (_dir, graph) = engine();
    load_engine_fixture(&graph, WS);
    graph.prepare_read_model(WS).expect("build").expect("fits");
    for w in WRITES {
        let stmt = parse(w).expect("write parses");
        engine_write(&graph, WS, &stmt, &Params::new()).expect("write runs");
    }
    engine_batch_vs_rows(&graph, WS, &queries);
}

/// Unwound values looked up among a label's nodes by property (string, integer, mixed).
const VALUE_JOINS: &[&str] = &[
    "UNWIND ['Paris', 'Oslo', 'Berlin', 'Rome', null] AS city MATCH (c:Customer {city: city}) \
     RETURN city, c.name AS name ORDER BY city, name",
    "UNWIND [90, 75, 99, 5, 40] AS s MATCH (c:Customer) WHERE c.score = s RETURN s, count(c) AS n ORDER BY s",
    "UNWIND ['web', 'email', 'phone', 'web'] AS ch MATCH (t:Touchpoint {channel: ch}) \
     RETURN ch, count(t) AS n ORDER BY ch",
];

/// A cached plan keeps its compiled batch tree between runs (per thread, reset after each):
/// every query of every source, run twice per round through one `PlanCache`, answers as the
/// row path on the model the trees were compiled over, on it after writes, on a rebuilt model,
/// and from two threads at once.
#[test]
fn cached_plans_answer_as_the_row_path_run_after_run() {
    let mut texts = case_queries();
    texts.extend(corpus_queries("queries"));
    texts.extend(corpus_queries("holdout"));
    texts.extend(corpus_queries("holdout2"));
    // Value joins (`ScanEq`): the string column's grouping is built per run, on that run's model.
    texts.extend(
        VALUE_JOINS
            .iter()
            .map(|q| (q.to_string(), q.to_string(), Params::new())),
    );
    texts.extend(
        random_queries(150)
            .into_iter()
            .map(|q| (q.clone(), q, Params::new())),
    );
    let texts: Vec<(String, String, Statement, Params)> = texts
        .into_iter()
        .filter_map(|(name, q, params)| {
            let s = parse(&q).ok().filter(Statement::is_read_only)?;
            Some((name, q, s, params))
        })
        .collect();
    let (_dir, graph) = engine();
    load_engine_fixture(&graph, WS);
    graph.prepare_read_model(WS).expect("build").expect("fits");
    let cache = PlanCache::new(4096);
    let check = |round: &str| {
        let snap = graph.snapshot(WS);
        let rows = ModelSwitch::rows(&snap);
        for (name, q, stmt, params) in &texts {
            let want = run_read(&rows, stmt, params, &limits());
            for _ in 0..2 {
                let got = cache.run_read(&snap, q, params, &limits());
                same_outcome(name, round, &want, &got);
            }
        }
    };
    check("first model");
    for w in WRITES {
        let stmt = parse(w).expect("write parses");
        engine_write(&graph, WS, &stmt, &Params::new()).expect("write runs");
    }
    check("after writes");
    graph
        .prepare_read_model(WS)
        .expect("rebuild")
        .expect("fits");
    check("rebuilt model");
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| check("two threads"));
        }
    });
}

/// A kept tree holds per-string results and WHERE verdicts by the model column's codes
/// (`BExpr::memo`, `Conj::pass`). After a string changes and the model is rebuilt, the same
/// code means another string: a cached plan must answer from the new base, not from what it
/// learnt on the old one.
#[test]
fn kept_per_string_results_follow_a_rebuilt_model() {
    let (_dir, graph) = engine();
    let write = |q: &str| {
        engine_write(&graph, WS, &parse(q).expect("parses"), &Params::new()).expect("runs");
    };
    write("CREATE (:P {name: 'b', n: 1}), (:P {name: 'c', n: 2})");
    let cache = PlanCache::new(16);
    // (query, the row path's answer on the first model, and on the rebuilt one)
    let queries = [
        (
            "MATCH (p:P) RETURN toUpper(p.name) AS u ORDER BY p.n",
            "B",
            "A",
        ),
        (
            "MATCH (p:P) WHERE p.name STARTS WITH 'a' OR p.name ENDS WITH 'c' \
             RETURN p.name AS s ORDER BY s",
            "c",
            "a",
        ),
    ];
    let check = |round: usize| {
        let snap = graph.snapshot(WS);
        for (q, first, rebuilt) in queries {
            let stmt = parse(q).expect("parses");
            let want = run_read(&ModelSwitch::rows(&snap), &stmt, &Params::new(), &limits());
            let expected = if round == 0 { first } else { rebuilt };
            let rows = &want.as_ref().expect("row path").rows;
            assert_eq!(
                rows[0][0],
                svc_query::ResultValue::String(expected.into()),
                "{q}"
            );
            for _ in 0..2 {
                let got = cache.run_read(&snap, q, &Params::new(), &limits());
                same_outcome(q, &format!("model {round}"), &want, &got);
            }
        }
    };
    graph.prepare_read_model(WS).expect("build").expect("fits");
    check(0);
    write("MATCH (p:P {name: 'b'}) SET p.name = 'a'");
    graph
        .prepare_read_model(WS)
        .expect("rebuild")
        .expect("fits");
    check(1);
}

/// Numbers for the typed kernels: 5,000 `Num` nodes (over two chunks) with integer and float
/// columns holding absent values, zeros of both signs, an integer column reaching `i64::MAX`
/// and `i64::MIN`, one column mixing integers and floats, and a `Pair` node each (reached by
/// an expansion, so not read in place).
const NUMBERS: &str = "UNWIND range(0, 2499) AS x \
    CREATE (n:Num {g: x % 7, \
      small: CASE WHEN x % 11 = 0 THEN null ELSE x % 100 - 50 END, \
      z: x % 5, \
      big: CASE WHEN x = 2100 THEN 9223372036854775807 WHEN x = 2102 THEN -9223372036854775807 - 1 \
        WHEN x % 13 = 0 THEN null ELSE x END, \
      f: CASE WHEN x % 9 = 0 THEN null WHEN x % 17 = 0 THEN -0.0 WHEN x % 19 = 0 THEN 0.0 \
        ELSE toFloat(x) / 7.0 - 300.0 END, \
      mixed: CASE WHEN x % 2 = 0 THEN x ELSE toFloat(x) + 0.5 END}) \
    CREATE (n)-[:HAS]->(:Pair {k: x % 3, q: CASE WHEN x % 4 = 0 THEN null ELSE toFloat(x % 4) - 1.5 END})";

/// Aggregates and arithmetic over `NUMBERS`, with their edge cases: overflow, division and
/// modulo by zero, null, NaN and infinities, integers against floats, empty inputs, grouped
/// and not, read in place and through an expansion.
const NUMBER_QUERIES: &[&str] = &[
    "MATCH (n:Num) RETURN min(n.f), max(n.f), avg(n.f), sum(n.f), count(n.f)",
    "MATCH (n:Num) RETURN min(n.small), max(n.small), avg(n.small), sum(n.small), count(n.small)",
    "MATCH (n:Num) RETURN min(n.big), max(n.big), avg(n.big), count(n.big)",
    "MATCH (n:Num) RETURN sum(n.big)",
    "MATCH (n:Num) WHERE n.big < 2100 RETURN sum(n.big)",
    "MATCH (n:Num) RETURN min(n.mixed), max(n.mixed), avg(n.mixed), sum(n.mixed)",
    "MATCH (n:Num) RETURN count(n), count(*), count(DISTINCT n.g), sum(DISTINCT n.small)",
    "MATCH (n:Num) RETURN n.g AS g, min(n.f), max(n.f), avg(n.f), sum(n.f), count(n.f), \
     sum(n.small), avg(n.small), min(n.big), max(n.big) ORDER BY g",
    "MATCH (n:Num) RETURN n.g AS g, sum(n.big) AS s ORDER BY g",
    "MATCH (n:Num) WHERE n.g = 3 RETURN sum(n.small), min(n.f), avg(n.f)",
    "MATCH (n:Num) WHERE n.small > 1000 RETURN min(n.f), avg(n.f), sum(n.small), sum(n.f), count(n.f)",
    "MATCH (n:Num)-[:HAS]->(p:Pair) RETURN p.k AS k, min(n.f), sum(p.q), avg(n.small) ORDER BY k",
    "MATCH (n:Num) WHERE n.small * n.f > 100 RETURN count(n)",
    "MATCH (n:Num) WHERE n.small * 2 > n.f RETURN count(*)",
    "MATCH (n:Num) WHERE n.small - n.z >= -3 RETURN count(*)",
    "MATCH (n:Num) RETURN sum(n.small * n.f), min(n.small - n.z), max(n.small % 7), avg(n.f / 3), \
     sum(n.small ^ 2), max(-n.small), min(-n.f)",
    "MATCH (n:Num) WHERE n.small / n.z > 1 RETURN count(*)",
    "MATCH (n:Num) WHERE n.small % n.z > 1 RETURN count(*)",
    "MATCH (n:Num) WHERE n.small / (n.z + 1) > 1 RETURN count(*)",
    "MATCH (n:Num) WHERE n.small % (n.z + 1) = 0 RETURN count(*)",
    "MATCH (n:Num) WHERE n.f / n.z > 1 RETURN count(*)",
    "MATCH (n:Num) WHERE n.f % n.z < 1 RETURN count(*)",
    "MATCH (n:Num) WHERE n.big + 1 > 0 RETURN count(*)",
    "MATCH (n:Num) WHERE n.big - 1 > 0 RETURN count(*)",
    "MATCH (n:Num) WHERE -n.big < 0 RETURN count(*)",
    "MATCH (n:Num) WHERE n.big * 2 > 0 RETURN count(*)",
    "MATCH (n:Num) WHERE n.big / -1 > 0 RETURN count(*)",
    "MATCH (n:Num) WHERE n.small = n.f RETURN count(*)",
    "MATCH (n:Num) WHERE n.small <> n.f RETURN count(*)",
    "MATCH (n:Num) WHERE n.small < n.f RETURN count(*)",
    "MATCH (n:Num) WHERE n.small >= n.z RETURN count(*)",
    "MATCH (n:Num) WHERE n.f * 1 = n.f RETURN count(*)",
    "MATCH (n:Num) WHERE 0.0 / n.z = 0.0 / n.z RETURN count(*)",
    "MATCH (n:Num) WHERE 0.0 / n.z <> 0.0 / n.z RETURN count(*)",
    "MATCH (n:Num) WHERE 1.0 / n.z > 0 RETURN count(*)",
    "MATCH (n:Num) WHERE n.mixed * 2 > 100 RETURN count(*)",
    "MATCH (n:Num) WHERE n.small + null > 1 RETURN count(*)",
    "MATCH (n:Num) RETURN n.small * n.f AS p, n.g AS g ORDER BY p DESC, g LIMIT 5",
    "MATCH (n:Num) RETURN n.big + n.small AS s ORDER BY s LIMIT 3",
    "MATCH (n:Num)-[:HAS]->(p:Pair) WHERE n.small * p.q > 10 RETURN count(*)",
    "MATCH (n:Num)-[:HAS]->(p:Pair) WHERE p.k * 2 = n.z RETURN p.k AS k, count(*) AS c ORDER BY k",
    // Comparisons with a constant (read in place, a constant on either side, integers against
    // floats, absent rows, signed zeros, a null constant) and computed against a constant.
    "MATCH (n:Num) WHERE n.small >= 10 RETURN count(*)",
    "MATCH (n:Num) WHERE n.small < 10.5 RETURN count(*)",
    "MATCH (n:Num) WHERE 3 < n.f RETURN count(*)",
    "MATCH (n:Num) WHERE n.f <> 0 RETURN count(*)",
    "MATCH (n:Num) WHERE n.f = 0 RETURN count(*)",
    "MATCH (n:Num) WHERE n.small <> null RETURN count(*)",
    "MATCH (n:Num) WHERE n.big <= 2100 RETURN count(*)",
    "MATCH (n:Num) WHERE n.big > 9.2e18 RETURN count(*)",
    "MATCH (n:Num) WHERE -1 >= n.big RETURN count(*)",
    "MATCH (n:Num) WHERE n.mixed >= 1000 RETURN count(*)",
    "MATCH (n:Num) WHERE n.small * 2 >= null RETURN count(*)",
    "MATCH (n:Num) WHERE n.big * 2 >= null RETURN count(*)",
    "MATCH (n:Num) WHERE n.f / n.z <= 2 RETURN count(*)",
    // CASE conditions as typed comparisons; sums and averages of a CASE's constants.
    "MATCH (n:Num) RETURN CASE WHEN n.f >= 0 THEN 'pos' WHEN n.small < 0 THEN 'neg' \
     ELSE 'other' END AS b, count(*) AS c ORDER BY b",
    "MATCH (n:Num) RETURN sum(CASE WHEN n.small >= 0 THEN 1 ELSE 0 END), \
     sum(CASE WHEN n.f > 0 THEN 0.5 WHEN n.f < 0 THEN -1 END), avg(CASE n.z WHEN 2 THEN n.f END)",
    "MATCH (n:Num) RETURN n.g AS g, sum(CASE WHEN n.big > 1000 THEN 1 ELSE 0 END) AS k, \
     max(CASE WHEN n.f > 0 THEN 'p' ELSE 'q' END) AS m, avg(CASE WHEN n.z = 1 THEN 2 END) AS a \
     ORDER BY g",
    "MATCH (n:Num) RETURN sum(CASE WHEN n.big > 0 THEN n.big ELSE 0 END)",
    "MATCH (n:Num) RETURN sum(CASE WHEN n.small > 0 THEN 9223372036854775807 ELSE 0 END)",
    // Number properties through an expansion (located node by node, the one end repeated).
    "MATCH (n:Num)-[:HAS]->(p:Pair) WHERE p.q > 0 RETURN count(*)",
    "MATCH (n:Num)-[:HAS]->(p:Pair) RETURN p.k AS k, sum(n.small * p.q) AS s ORDER BY k",
    "MATCH (p:Pair)<-[:HAS]-(n:Num) RETURN sum(n.f * p.k), max(n.small * p.k)",
    "MATCH (p:Pair)<-[:HAS]-(n:Num) RETURN max(n.big * p.k)",
];

/// Runs each query on the row path, on the batch path over a model of `g`, and on the batch
/// path with every other node marked touched (read through the graph, not the columns): the
/// same outcome on all three; how many were answers (not errors).
fn rows_batch_and_half_touched(g: &svc_query::model::ModelGraph, queries: &[&str]) -> usize {
    // One model for every query (built as the engine builds its own).
    let model = svc_engine::ModelView::from_graph(g).expect("model");
    let ids: Vec<u64> = svc_engine::GraphRead::all_nodes(g)
        .expect("nodes")
        .into_iter()
        .map(|n| n.0)
        .step_by(2)
        .collect();
    let half = model.with_touched(ids);
    let rows = ModelSwitch::rows(g);
    let batch = ModelSwitch::with_model(g, model);
    let touched = ModelSwitch::with_model(g, half);
    let mut answers = 0;
    for q in queries {
        let stmt = parse(q).unwrap_or_else(|e| panic!("{q} does not parse: {e}"));
        let params = Params::new();
        let r = run_read(&rows, &stmt, &params, &limits());
        answers += usize::from(r.is_ok());
        same_outcome(q, "batch", &r, &run_read(&batch, &stmt, &params, &limits()));
        same_outcome(
            q,
            "batch, half touched",
            &r,
            &run_read(&touched, &stmt, &params, &limits()),
        );
    }
    answers
}

#[test]
fn typed_kernels_match_rows_on_numbers() {
    let setup = parse(NUMBERS).expect("the numbers parse");
    let mut g = svc_query::model::ModelGraph::new();
    svc_query::run_write(&mut g, &setup, &Params::new(), &Limits::default())
        .expect("the numbers load");
    let answers = rows_batch_and_half_touched(&g, NUMBER_QUERIES);
    // Most are answers: a difference must not hide behind two errors.
    assert!(answers >= NUMBER_QUERIES.len() - 14, "{answers} answers");
}

/// Groups for the grouping kernels: stages (`S`) whose keys repeat across nodes (two named
/// `st1`, `0.0` and `-0.0`, `1` and `1.0`, NaN, null), 2,100 deals (`O`, over two chunks) at
/// them with a string of 90 values (past 64 codes) and nulls, and `P1`/`P2` nodes whose `p` is
/// a string column for one label and mixes strings and integers for the other (a DISTINCT
/// argument that is a dictionary in some chunks and not in others).
const GROUPS: &[&str] = &[
    "UNWIND range(0, 6) AS i CREATE (:S {i: i, \
       name: CASE WHEN i = 6 THEN null WHEN i = 5 THEN 'st1' ELSE 'st' + toString(i) END, \
       p: CASE i WHEN 0 THEN 0.0 WHEN 1 THEN -0.0 WHEN 2 THEN 1 WHEN 3 THEN 1.0 \
         WHEN 4 THEN 0.0 / 0.0 WHEN 5 THEN 0.25 ELSE null END})",
    "MATCH (s:S) WITH s ORDER BY s.i WITH collect(s) AS ss \
     UNWIND range(0, 2099) AS i WITH ss[(i * 3) % 7] AS s, i \
     CREATE (o:O {i: i, amt: CASE WHEN i % 10 = 0 THEN null ELSE (i * 37) % 1000 END, \
       ch: 'c' + toString(i % 12), \
       tag: CASE WHEN i % 9 = 0 THEN null ELSE 't' + toString((i * 7) % 90) END}) \
     CREATE (o)-[:AT]->(s)",
    "UNWIND range(0, 2099) AS i CREATE (:P1 {g: i % 3, p: 'v' + toString(i % 70)})",
    "UNWIND range(0, 2099) AS i CREATE (:P2 {g: i % 3, \
       p: CASE WHEN i % 2 = 0 THEN 'v' + toString(i % 80) ELSE i % 5 END})",
    // Nodes of two labels (some of both) next to each other in one chunk: a key or a folded
    // number read at the row of the first node's label, the rest located one by one.
    "UNWIND range(0, 299) AS i CREATE (q:Q {k: 'q' + toString(i % 4), n: i}) \
     WITH q, i WHERE i % 3 = 0 SET q:R",
    "UNWIND range(0, 99) AS i CREATE (:R {k: 'r' + toString(i % 5), n: i * 2})",
    "MATCH (s:S {i: 0}), (x) WHERE x:Q OR x:R CREATE (x)-[:IN]->(s)",
];

/// Aggregations over `GROUPS`: keys of an expansion's nodes (memoised per node), keys of
/// model string columns, number keys equal across types, DISTINCT over dictionary codes, null
/// nodes from OPTIONAL MATCH. Some without ORDER BY: the groups' order must be the row path's.
const GROUP_QUERIES: &[&str] = &[
    "MATCH (o:O)-[:AT]->(s:S) RETURN s.name AS n, count(*) AS c, min(o.amt) AS m",
    "MATCH (o:O)-[:AT]->(s:S) RETURN s.p AS p, count(*) AS c, max(o.amt) AS m",
    "MATCH (s:S)<-[:AT]-(o:O) RETURN s.p AS p, s.name AS n, count(*) AS c",
    "MATCH (o:O)-[:AT]->(s:S) RETURN toUpper(s.name) AS u, s.p * 2 AS d, count(*) AS c",
    "MATCH (o:O)-[:AT]->(s:S) RETURN s.name AS n, o.ch AS ch, count(*) AS c, \
     collect(DISTINCT o.tag) AS tags",
    "MATCH (o:O)-[:AT]->(s:S) RETURN s.name AS n, count(DISTINCT o.tag) AS t, \
     collect(DISTINCT o.tag) AS tags, count(DISTINCT o) AS os, collect(DISTINCT o.ch) AS chs",
    "MATCH (o:O)-[:AT]->(s:S) WITH s, o.ch AS ch, count(*) AS c RETURN s.name, ch, c",
    "MATCH (o:O)-[:AT]->(s:S) WITH s, collect(DISTINCT o.tag) AS tags \
     WHERE 't7' IN tags AND 't14' IN tags RETURN s.name, size(tags)",
    "MATCH (o:O) RETURN o.ch AS ch, collect(DISTINCT o.tag) AS tags, count(DISTINCT o.tag) AS n",
    "MATCH (o:O) RETURN o.tag AS tag, count(*) AS n, sum(o.amt) AS s",
    "MATCH (o:O) RETURN o.amt % 7 AS k, count(*) AS n, collect(DISTINCT o.ch) AS chs",
    "MATCH (o:O) RETURN toFloat(o.amt % 5) / 2 AS k, count(*) AS n",
    "MATCH (o:O) RETURN count(DISTINCT o.tag), collect(DISTINCT o.ch), count(DISTINCT o)",
    "MATCH (s:S) OPTIONAL MATCH (s)<-[:AT]-(o:O) WHERE o.amt > 990 \
     RETURN o.ch AS ch, count(*) AS c",
    "MATCH (s:S) OPTIONAL MATCH (s)<-[:NONE]-(o:O) RETURN o.ch AS ch, count(*) AS c",
    "MATCH (x) WHERE x:P1 OR x:P2 RETURN x.g AS g, count(DISTINCT x.p) AS n, \
     collect(DISTINCT x.p) AS ps",
    "MATCH (x) WHERE x:P1 OR x:P2 RETURN count(DISTINCT x.p), collect(DISTINCT x.p)",
    "MATCH (x) WHERE x:P2 OR x:P1 RETURN x.p AS p, count(*) AS n",
    "MATCH (s:S)<-[:AT]-(o:O) RETURN s.name AS n, max(o.amt), sum(o.amt), avg(o.i), min(o.i)",
    "MATCH (o:O)-[:AT]->(s:S) RETURN o.ch AS ch, max(s.p), min(s.i), sum(s.i), avg(s.p)",
    // Keys reading both ends of each row's relationship: every row a new pair of nodes (the
    // node memo drops itself after its first rows), the near side's name located per run.
    "MATCH (o:O)-[:AT]->(s:S) RETURN s.name AS n, \
     CASE WHEN o.amt < 500 THEN 'lo' WHEN o.amt >= 500 THEN 'hi' END AS b, count(*) AS c",
    "MATCH (s:S)<-[:AT]-(o:O) RETURN s.name + o.ch AS k, count(*) AS c, max(o.i) AS m",
    "MATCH (s:S)<-[:AT]-(o:O) WHERE o.i % 3 = 0 RETURN s.name AS n, o.tag AS t, count(*) AS c",
    "MATCH (s:S)<-[:IN]-(x) RETURN x.k AS k, count(*) AS c, max(x.n) AS m, min(x.n) AS lo",
    "MATCH (s:S)<-[:IN]-(x:R) RETURN x.k AS k, count(*) AS c, sum(x.n) AS t",
    "MATCH (x) WHERE x:R OR x:Q RETURN x.k AS k, count(*) AS c, max(x.n) AS m",
    "MATCH (x:R)-[:IN]->(s:S) RETURN s.name AS n, max(x.n) AS m, avg(x.n) AS a",
];

#[test]
fn grouping_kernels_match_rows() {
    let mut g = svc_query::model::ModelGraph::new();
    for setup in GROUPS {
        let stmt = parse(setup).expect("the groups parse");
        svc_query::run_write(&mut g, &stmt, &Params::new(), &Limits::default())
            .expect("the groups load");
    }
    // Each is an answer: a difference must not hide behind two errors.
    let answers = rows_batch_and_half_touched(&g, GROUP_QUERIES);
    assert_eq!(answers, GROUP_QUERIES.len());
}
