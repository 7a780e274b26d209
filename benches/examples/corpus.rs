//! Our side of the peer benchmark (issue 25): every query of `benches/corpus/queries.txt`,
//! embedded, on the seeded graph of `tools/bench/gen.py` with the read model prepared, timed
//! with the method of `svc_benches::corpus::Method` (the one `tools/bench/peers.py` uses too).
//!
//! `corpus [OUT.jsonl] [NAME_FILTER]`: writes one JSON object per query (name, columns, rows,
//! p50/p90 in µs, runs, error) to OUT (default stdout) and a summary to stderr. One timed run is
//! `PlanCache::run_read` of the query text with its parameters, rows materialised: the entry
//! the service uses, which parses and plans a text once and reuses the plan while the index
//! catalog and the statistics it assumed hold (FalkorDB, the peer, caches plans the same way).
//! The warm-up runs fill the cache, so the samples are of cached plans. `SVC_BENCH_UNCACHED=1`
//! times `parse` + `run_read` instead: the planner runs in every iteration.
//! NAME_FILTER may list several filters separated by commas. `SVC_BENCH_BREAKDOWN=1` also
//! prints, per query, the p50 of `parse` alone, of `parse` + planning and of the whole run.
//! `SVC_BENCH_EXPLAIN=1` also prints each query's plan to stderr; `SVC_BENCH_PROFILE_SECS=N`
//! first runs each query for N seconds untimed (attach `perf record -p` then);
//! `SVC_BENCH_PROFILE_RUNS=N` first runs each N times and prints the thread's CPU time per run
//! (a figure a busy machine moves much less than the wall-clock p50).
//! `SVC_BENCH_DATA` names the generator's output directory (generated there when missing).
//! `SVC_BENCH_FRESH_SNAPSHOT=1` takes a new snapshot in each timed run, as a service request
//! does (the default reuses one: the peers' clients reuse their connection).

use std::io::Write;
use std::time::{Duration, Instant};

use svc_benches::corpus::{self, percentile, Method};
use svc_benches::seed::{load_seed, seed_dir};
use svc_engine::{Graph, GraphOptions, WorkspaceId};
use svc_query::{parse, run_read, Limits, Params, PlanCache, ResultValue};

const WS: WorkspaceId = WorkspaceId(1);

fn json_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// JSON of one value; a datetime is `{"$dt": epoch milliseconds}` so the checker can compare
/// it with the peers' datetimes.
fn json_value(v: &ResultValue, out: &mut String) {
    match v {
        ResultValue::Null => out.push_str("null"),
        ResultValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        ResultValue::Int(i) => out.push_str(&i.to_string()),
        ResultValue::Float(f) if f.is_finite() => out.push_str(&format!("{f:?}")),
        ResultValue::Float(f) => json_str(&f.to_string(), out),
        ResultValue::String(s) => json_str(s, out),
        ResultValue::DateTime(us) => out.push_str(&format!("{{\"$dt\": {}}}", *us as f64 / 1e3)),
        ResultValue::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                json_value(item, out);
            }
            out.push(']');
        }
        ResultValue::Map(m) => {
            out.push('{');
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                json_str(k, out);
                out.push_str(": ");
                json_value(item, out);
            }
            out.push('}');
        }
        // The corpus returns properties, never whole entities: ids differ between engines.
        ResultValue::Node(n) => json_str(&format!("node {}", n.id), out),
        ResultValue::Relationship(r) => json_str(&format!("relationship {}", r.id), out),
        ResultValue::Path(p) => json_str(&format!("path of {} hops", p.relationships.len()), out),
        ResultValue::Temporal(t) => json_str(&t.text, out),
    }
}

/// One line per operator, indented by depth.
fn print_plan(t: &svc_query::PlanTree, depth: usize) {
    eprintln!("{}{} {}", "  ".repeat(depth), t.operator, t.details);
    for c in &t.children {
        print_plan(c, depth + 1);
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Where the time of one run goes, by cumulative steps: `parse` alone, `parse` + planning
/// (`svc_query::check`), and the whole run; then the run with a cached plan. p50 of each, to
/// stderr.
fn breakdown(
    method: &Method,
    snap: &svc_engine::Snapshot<'_>,
    text: &str,
    params: &Params,
    limits: &Limits,
    name: &str,
) {
    let p50 = |samples: Result<Vec<Duration>, svc_query::QueryError>| {
        samples.map_or(f64::NAN, |s| micros(percentile(&s, 50)))
    };
    let parse_only = p50(method.measure(|| parse(text).map(|_| ())));
    let planned = p50(method.measure(|| {
        let stmt = parse(text)?;
        svc_query::check(snap, &stmt, params, limits)
    }));
    let whole = p50(method.measure(|| {
        let stmt = parse(text)?;
        run_read(snap, &stmt, params, limits).map(|_| ())
    }));
    let cache = PlanCache::new(4);
    let cached = p50(method.measure(|| cache.run_read(snap, text, params, limits).map(|_| ())));
    eprintln!(
        "{name:<45} parse {parse_only:>8.1} µs  +plan {:>8.1} µs  +run {:>8.1} µs  (total {whole:.1}; cached plan {cached:.1})",
        planned - parse_only,
        whole - planned
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filter = args.get(1).cloned().unwrap_or_default();
    let queries = corpus::load(&corpus::corpus_path()).expect("read the corpus");

    let dir = tempfile::tempdir().expect("tempdir");
    let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open graph");
    let started = Instant::now();
    load_seed(&graph, WS, &seed_dir()).expect("load the seeded graph");
    eprintln!("seed loaded in {:?}", started.elapsed());
    let started = Instant::now();
    graph
        .prepare_read_model(WS)
        .expect("build the read model")
        .expect("the read model fits the default budget");
    eprintln!("read model built in {:?}", started.elapsed());
    let snap = graph.snapshot(WS);
    assert!(snap.has_read_model());
    // The row path of slow shapes takes seconds: a generous budget, so each is measured.
    let limits = Limits {
        time: Duration::from_secs(120),
        ..Limits::default()
    };
    let method = Method::default();
    let uncached = std::env::var_os("SVC_BENCH_UNCACHED").is_some();
    let fresh = std::env::var_os("SVC_BENCH_FRESH_SNAPSHOT").is_some();
    let cache = PlanCache::new(svc_query::SHARED_CAPACITY);

    // One timed run: the plan cache (or parse + run) over the shared or a fresh snapshot.
    let run = |text: &str, params: &Params| {
        let own;
        let snap = if fresh {
            own = graph.snapshot(WS);
            &own
        } else {
            &snap
        };
        if uncached {
            run_read(snap, &parse(text)?, params, &limits)
        } else {
            cache.run_read(snap, text, params, &limits)
        }
    };

    let mut out: Box<dyn Write> = match args.first() {
        Some(path) if path != "-" => Box::new(std::fs::File::create(path).expect("create output")),
        _ => Box::new(std::io::stdout()),
    };
    // A comma-separated list of name filters: a query runs when its name contains any.
    let filters: Vec<&str> = filter.split(',').collect();
    for q in queries
        .iter()
        .filter(|q| filters.iter().any(|f| q.name.contains(f)))
    {
        let params: Params = q.params.clone().into_iter().collect();
        if std::env::var_os("SVC_BENCH_BREAKDOWN").is_some() {
            breakdown(&method, &snap, &q.text, &params, &limits, &q.name);
        }
        if std::env::var_os("SVC_BENCH_EXPLAIN").is_some() {
            let stmt = parse(&q.text).expect("parse");
            let tree = svc_query::explain(&snap, &stmt, &params, &limits).expect("explain");
            eprintln!("{} plan:", q.name);
            print_plan(&tree, 1);
        }
        if let Some(secs) = std::env::var("SVC_BENCH_PROFILE_SECS")
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
        {
            // Only this query, repeated as it is timed, for a profiler attached to the process.
            let until = Instant::now() + Duration::from_secs(secs);
            while Instant::now() < until {
                run(&q.text, &params).expect("run");
            }
        }
        if let Some(n) = std::env::var("SVC_BENCH_PROFILE_RUNS")
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
        {
            // A fixed number of runs, timed by this thread's CPU time (Linux schedstat): a
            // figure that a busy machine moves much less than wall time.
            let cpu = || -> Option<u64> {
                let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
                s.split_whitespace().next()?.parse().ok()
            };
            let before = cpu();
            for _ in 0..n {
                run(&q.text, &params).expect("run");
            }
            if let (Some(a), Some(b)) = (before, cpu()) {
                let per = (b - a) as f64 / n.max(1) as f64 / 1000.0;
                eprintln!("{}: {per:.2} us of CPU per run over {n} runs", q.name);
            }
        }
        let mut answer = None;
        let timed = method.measure(|| {
            let r = run(&q.text, &params)?;
            answer.get_or_insert(r);
            Ok::<_, svc_query::QueryError>(())
        });
        let mut line = String::from("{\"engine\": \"ours\", \"name\": ");
        json_str(&q.name, &mut line);
        match (timed, answer) {
            (Ok(samples), Some(r)) => {
                let (p50, p90) = (percentile(&samples, 50), percentile(&samples, 90));
                eprintln!(
                    "{:<45} p50 {:>12.1} µs  p90 {:>12.1} µs  runs {:>3}  rows {}",
                    q.name,
                    micros(p50),
                    micros(p90),
                    samples.len(),
                    r.rows.len()
                );
                line.push_str(", \"columns\": [");
                for (i, c) in r.columns.iter().enumerate() {
                    if i > 0 {
                        line.push_str(", ");
                    }
                    json_str(c, &mut line);
                }
                line.push_str("], \"rows\": ");
                json_value(
                    &ResultValue::List(r.rows.into_iter().map(ResultValue::List).collect()),
                    &mut line,
                );
                line.push_str(&format!(
                    ", \"p50_us\": {:.2}, \"p90_us\": {:.2}, \"runs\": {}, \"error\": null}}",
                    micros(p50),
                    micros(p90),
                    samples.len()
                ));
            }
            (timed, _) => {
                let message = match timed {
                    Err(e) => e.to_string(),
                    Ok(_) => "no answer".to_owned(),
                };
                eprintln!("{:<45} ERROR {message}", q.name);
                line.push_str(", \"error\": ");
                json_str(&message, &mut line);
                line.push('}');
            }
        }
        writeln!(out, "{line}").expect("write output");
    }
}
