//! Every corpus query (`benches/corpus/queries.txt`) parses, plans and runs on our engine, on a
//! small seed of `tools/bench/gen.py` with the read model prepared (seconds; the timed run over
//! the full seed is `make bench-peers`).

use std::process::Command;

use svc_benches::corpus;
use svc_benches::seed::load_seed;
use svc_engine::{Graph, GraphOptions, WorkspaceId};
use svc_query::{explain, parse, run_read, Limits, Params, PlanCache};

const WS: WorkspaceId = WorkspaceId(1);

#[test]
fn every_corpus_query_parses_plans_and_runs() {
    let queries = corpus::load(&corpus::corpus_path()).expect("the corpus parses");
    assert!(queries.len() >= 40, "only {} corpus queries", queries.len());

    let data = tempfile::tempdir().expect("tempdir");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/bench/gen.py");
    let status = Command::new("python3")
        .arg(script)
        .args([
            "--events",
            "3000",
            "--customers",
            "400",
            "--opportunities",
            "200",
        ])
        .arg("--out")
        .arg(data.path())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run python3 tools/bench/gen.py");
    assert!(status.success(), "gen.py failed");

    let store = tempfile::tempdir().expect("tempdir");
    let graph = Graph::open(store.path(), GraphOptions::default()).expect("open graph");
    load_seed(&graph, WS, data.path()).expect("load the small seed");
    graph
        .prepare_read_model(WS)
        .expect("build the read model")
        .expect("the read model fits");
    let snap = graph.snapshot(WS);
    let limits = Limits::default();
    let mut failed = Vec::new();
    // The entry the benchmark times: planned on the first run, reused on the second; both
    // must answer as `parse` + `run_read` does.
    let cache = PlanCache::new(queries.len());
    for q in &queries {
        let params: Params = q.params.clone().into_iter().collect();
        let outcome = parse(&q.text).and_then(|stmt| {
            assert!(stmt.is_read_only(), "{} writes", q.name);
            explain(&snap, &stmt, &params, &limits)?;
            run_read(&snap, &stmt, &params, &limits)
        });
        match outcome {
            Ok(want) => {
                for run in ["planned", "cached"] {
                    match cache.run_read(&snap, &q.text, &params, &limits) {
                        Ok(got) if (&got.columns, &got.rows) == (&want.columns, &want.rows) => {}
                        other => failed.push(format!("{} ({run} plan): {other:?}", q.name)),
                    }
                }
            }
            Err(e) => failed.push(format!("{}: {e}", q.name)),
        }
    }
    assert!(failed.is_empty(), "corpus queries failed: {failed:#?}");
    assert_eq!(cache.stats().hits, queries.len() as u64);
}

/// `tools/bench/peers.py` reads the same file: both readers must see the same queries, texts
/// and parameters; and `compare.py`'s normalisation rules pass their self-test.
#[test]
fn the_peer_scripts_read_the_corpus_alike() {
    let queries = corpus::load(&corpus::corpus_path()).expect("the corpus parses");
    let tools = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/bench");
    let out = Command::new("python3")
        .current_dir(tools)
        .args([
            "-c",
            "import peers\n\
             for q in peers.load_corpus():\n\
             \x20   print('[' + q['name'] + ']', q['text'].replace(chr(10), '|'))\n\
             \x20   for k, (t, v) in sorted(q['params'].items()): print(' ', k, t, v)",
        ])
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let python = String::from_utf8(out.stdout).expect("utf-8");
    let mut rust = String::new();
    for q in &queries {
        rust.push_str(&format!("[{}] {}\n", q.name, q.text.replace('\n', "|")));
        for (k, v) in &q.params {
            let (kind, value) = match v {
                svc_engine::Value::String(s) => ("string", s.clone()),
                svc_engine::Value::Int(i) => ("int", i.to_string()),
                svc_engine::Value::Float(f) => ("float", format!("{f:?}")),
                svc_engine::Value::DateTime(us) => ("datetime", (us / 1000).to_string()),
                other => panic!("{}: parameter {other:?}", q.name),
            };
            rust.push_str(&format!("  {k} {kind} {value}\n"));
        }
    }
    assert_eq!(rust, python);

    let out = Command::new("python3")
        .arg(format!("{tools}/compare.py"))
        .arg("--self-test")
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "compare.py self-test: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
