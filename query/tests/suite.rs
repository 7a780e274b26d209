//! The data-driven suite: every case in `tests/cases/*.txt` runs over
//! 1. the model graph without indexes (label scans only: the naive reference plan),
//! 2. the model graph declaring the engine's indexes (index seeks, ranges, top-k, counts),
//! 3. the real engine (RocksDB in a temporary directory).
//!
//! All three must give the expected rows. Every case's text must also survive
//! parse -> print -> parse unchanged.
//!
//! Case format:
//! ```text
//! == name
//! MATCH ... RETURN ...          (the query, any number of lines)
//! -- params: {"name": "value"}  (optional)
//! -- plan: NodeIndexSeek        (optional: an operator the indexed plans must use)
//! -- then: MATCH ... RETURN ... (optional, for writes: a read run afterwards; rows apply to it)
//! -- error: code                (or rows:)
//! -- rows:                      (unordered) / -- rows ordered:
//! ["json", "row"]
//! ```

mod common;

use common::*;
use svc_engine::WorkspaceId;
use svc_query::{parse, run_read, run_write, Limits, Params, QueryError, QueryResult};

#[derive(Debug, Default)]
struct Case {
    file: String,
    name: String,
    query: String,
    params: Option<String>,
    plan: Vec<String>,
    then: Option<String>,
    error: Option<String>,
    ordered: bool,
    rows: Vec<serde_json::Value>,
    columns: Option<Vec<String>>,
}

fn load_cases() -> Vec<Case> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("cases dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("read case file");
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut current: Option<Case> = None;
        let mut in_rows = false;
        for line in text.lines() {
            if let Some(name) = line.strip_prefix("== ") {
                cases.extend(current.take());
                current = Some(Case {
                    file: file.clone(),
                    name: name.trim().to_owned(),
                    ..Default::default()
                });
                in_rows = false;
                continue;
            }
            let Some(case) = current.as_mut() else {
                continue;
            };
            if let Some(d) = line.strip_prefix("-- ") {
                in_rows = false;
                if let Some(p) = d.strip_prefix("params:") {
                    case.params = Some(p.trim().to_owned());
                } else if let Some(p) = d.strip_prefix("plan:") {
                    case.plan.push(p.trim().to_owned());
                } else if let Some(t) = d.strip_prefix("then:") {
                    case.then = Some(t.trim().to_owned());
                } else if let Some(e) = d.strip_prefix("error:") {
                    case.error = Some(e.trim().to_owned());
                } else if let Some(c) = d.strip_prefix("columns:") {
                    case.columns = Some(serde_json::from_str(c.trim()).expect("columns JSON"));
                } else if d.starts_with("rows ordered:") {
                    case.ordered = true;
                    in_rows = true;
                } else if d.starts_with("rows:") {
                    in_rows = true;
                } else {
                    panic!("{file}: unknown directive {line}");
                }
                continue;
            }
            if in_rows {
                if !line.trim().is_empty() {
                    let row = serde_json::from_str(line)
                        .unwrap_or_else(|e| panic!("{file}/{}: bad row {line}: {e}", case.name));
                    case.rows.push(row);
                }
            } else if !line.trim_start().starts_with("//") || !case.query.is_empty() {
                case.query.push_str(line);
                case.query.push('\n');
            }
        }
        cases.extend(current);
    }
    cases
}

fn params(case: &Case) -> Params {
    case.params
        .as_deref()
        .map(params_from_json)
        .unwrap_or_default()
}

/// Checks one backend's outcome against the case; returns a failure description.
fn check(case: &Case, backend: &str, outcome: Result<QueryResult, QueryError>) -> Option<String> {
    let ctx = format!("[{}] {} ({backend})", case.file, case.name);
    match (outcome, &case.error) {
        (Err(e), Some(code)) if e.code() == code => None,
        (Err(e), Some(code)) => Some(format!(
            "{ctx}: expected error {code}, got {} ({e})",
            e.code()
        )),
        (Ok(r), Some(code)) => Some(format!(
            "{ctx}: expected error {code}, got rows {:?}",
            normalized_rows(&r)
        )),
        (Err(e), None) => Some(format!("{ctx}: unexpected error {} ({e})", e.code())),
        (Ok(r), None) => {
            if let Some(cols) = &case.columns {
                if &r.columns != cols {
                    return Some(format!("{ctx}: columns {:?}, expected {cols:?}", r.columns));
                }
            }
            let got = normalized_rows(&r);
            let same = if case.ordered {
                got == case.rows
            } else {
                as_multiset(&got) == as_multiset(&case.rows)
            };
            if same {
                None
            } else {
                let got: Vec<String> = got.iter().map(ToString::to_string).collect();
                let want: Vec<String> = case.rows.iter().map(ToString::to_string).collect();
                Some(format!(
                    "{ctx}:\n  got      {}\n  expected {}",
                    got.join(" "),
                    want.join(" ")
                ))
            }
        }
    }
}

fn check_plan(
    case: &Case,
    backend: &str,
    plan: Result<svc_query::PlanTree, QueryError>,
) -> Option<String> {
    let ctx = format!("[{}] {} ({backend})", case.file, case.name);
    let plan = match plan {
        Ok(p) => p,
        Err(e) => return Some(format!("{ctx}: explain failed: {e}")),
    };
    let ops = plan.operators();
    case.plan
        .iter()
        .find(|want| !ops.contains(&want.as_str()))
        .map(|want| format!("{ctx}: plan lacks {want}:\n{}", plan.render()))
}

#[test]
fn every_case_roundtrips_through_the_printer() {
    let mut failures = Vec::new();
    let cases = load_cases();
    for case in &cases {
        for text in std::iter::once(&case.query).chain(case.then.as_ref()) {
            let Ok(first) = parse(text) else { continue };
            let printed = first.to_string();
            match parse(&printed) {
                Ok(second) if second == first => {}
                Ok(_) => failures.push(format!(
                    "{}: printed text parses differently: {printed}",
                    case.name
                )),
                Err(e) => failures.push(format!(
                    "{}: printed text does not parse: {printed}: {e}",
                    case.name
                )),
            }
        }
    }
    assert!(cases.len() > 100, "only {} cases found", cases.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_case_gives_the_expected_rows_on_model_and_engine() {
    let cases = load_cases();
    let plain = plain_model();
    let indexed = indexed_model();
    let (_dir, graph) = engine();
    load_engine_fixture(&graph, WS);
    let limits = Limits::default();
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let params = params(case);
        let stmt = match parse(&case.query) {
            Ok(s) => s,
            Err(e) => {
                let outcome = Err(e);
                failures.extend(check(case, "parse", outcome));
                continue;
            }
        };
        if stmt.is_read_only() {
            failures.extend(check(
                case,
                "model",
                run_read(&plain, &stmt, &params, &limits),
            ));
            failures.extend(check(
                case,
                "indexed model",
                run_read(&indexed, &stmt, &params, &limits),
            ));
            failures.extend(check(
                case,
                "engine",
                engine_read(&graph, WS, &stmt, &params),
            ));
            if !case.plan.is_empty() {
                failures.extend(check_plan(
                    case,
                    "indexed model",
                    svc_query::explain(&indexed, &stmt, &params, &limits),
                ));
                failures.extend(check_plan(
                    case,
                    "engine",
                    svc_query::explain(&graph.snapshot(WS), &stmt, &params, &limits),
                ));
            }
        } else {
            // Writes run on fresh copies: a model clone and a fresh engine workspace.
            let ws = WorkspaceId(1000 + i as u64);
            load_engine_fixture(&graph, ws);
            let mut plain_copy = plain.clone();
            let mut indexed_copy = indexed.clone();
            let outcomes = [
                ("model", run_write(&mut plain_copy, &stmt, &params, &limits)),
                (
                    "indexed model",
                    run_write(&mut indexed_copy, &stmt, &params, &limits),
                ),
                ("engine", engine_write(&graph, ws, &stmt, &params)),
            ];
            match &case.then {
                None => {
                    for (backend, outcome) in outcomes {
                        failures.extend(check(case, backend, outcome));
                    }
                }
                Some(then) => {
                    for (backend, outcome) in &outcomes {
                        if let Err(e) = outcome {
                            failures.push(format!(
                                "[{}] {} ({backend}): write failed: {e}",
                                case.file, case.name
                            ));
                        }
                    }
                    let then = parse(then).expect("then-query parses");
                    failures.extend(check(
                        case,
                        "model",
                        run_read(&plain_copy, &then, &Params::new(), &limits),
                    ));
                    failures.extend(check(
                        case,
                        "indexed model",
                        run_read(&indexed_copy, &then, &Params::new(), &limits),
                    ));
                    failures.extend(check(
                        case,
                        "engine",
                        engine_read(&graph, ws, &then, &Params::new()),
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
