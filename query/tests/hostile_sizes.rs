//! Statements built to exhaust the stack or the planner (issue 29): long pattern chains, wide
//! pattern lists and long clause lists are refused with `query_too_large` at parse time, and the
//! largest statements still accepted plan, run and drop on a thread with the stack a server's
//! blocking pool gives a query (tokio's default, 2 MiB), over the real store.

mod common;

use common::{engine, load_engine_fixture, WS};
use svc_query::{parse, run_read, Limits, Params, MAX_CLAUSES, MAX_PATTERN_ELEMENTS};

/// The stack of a tokio blocking-pool thread, where svcd runs queries.
const SERVER_STACK: usize = 2 * 1024 * 1024;

fn chain(hops: usize) -> String {
    format!("MATCH (a){} RETURN 1", "-->()".repeat(hops))
}

fn wide(patterns: usize) -> String {
    format!(
        "MATCH {} RETURN 1",
        (0..patterns)
            .map(|i| format!("(n{i})"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

fn clauses(withs: usize) -> String {
    format!(
        "MATCH (a) {}RETURN a LIMIT 1",
        "WITH a ORDER BY a.y SKIP 0 LIMIT 5 WHERE a.x IS NULL ".repeat(withs)
    )
}

#[test]
fn oversized_statements_are_refused_with_a_position() {
    let over = MAX_PATTERN_ELEMENTS as usize;
    for text in [
        chain(5_000),
        chain(over / 2 + 1),
        wide(4_000),
        wide(20_000),
        wide(over + 1),
        clauses(5_000),
        clauses(MAX_CLAUSES as usize),
        format!("CREATE {}", "(:A)-[:T]->".repeat(over) + "()"),
    ] {
        let e = parse(&text).expect_err("too large");
        assert_eq!(e.code(), "query_too_large", "{e}");
        assert!(e.position().is_some(), "{e}");
    }
}

#[test]
fn the_largest_accepted_statements_run_on_a_server_sized_stack() {
    let max = MAX_PATTERN_ELEMENTS as usize;
    let texts = [
        // (a) plus (max - 1) / 2 hops of two elements each
        chain((max - 1) / 2),
        wide(max),
        clauses(MAX_CLAUSES as usize - 2),
        // both at once: the longest chain and the most clauses
        chain((max - 1) / 2).replacen(" RETURN 1", "", 1)
            + " "
            + &clauses(MAX_CLAUSES as usize - 2).replacen("MATCH (a) ", "", 1),
    ];
    let (_dir, graph) = engine();
    load_engine_fixture(&graph, WS);
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(SERVER_STACK)
            .spawn_scoped(s, || {
                for text in &texts {
                    let stmt = parse(text).expect("accepted");
                    let snap = graph.snapshot(WS);
                    let limits = Limits {
                        time: std::time::Duration::from_millis(300),
                        ..Limits::default()
                    };
                    // Any answer will do (a chain this long matches nothing, a wide cross
                    // product runs out of time); the point is that the thread survives.
                    match run_read(&snap, &stmt, &Params::new(), &limits) {
                        Ok(_) => {}
                        Err(e) => assert!(
                            matches!(e.code(), "timeout" | "row_limit"),
                            "{text:.60}: {e}"
                        ),
                    }
                    let _ = svc_query::explain(&snap, &stmt, &Params::new(), &limits);
                    assert_eq!(parse(&stmt.to_string()).expect("prints back"), stmt);
                }
            })
            .expect("spawn")
            .join()
            .expect("no stack overflow");
    });
}

/// A bounded fuzz run in every `cargo test` (issue 29): random statements built from a repeated
/// fragment, long chains, wide lists, long clause lists and deep nesting among them, through
/// the same check as the `parse_amplified` fuzz target (parse or fail cleanly; what parses
/// prints and runs on a 2 MiB stack). The seed is printed, and `SVC_FUZZ_SEED` replays one.
#[test]
fn random_amplified_statements_never_take_the_thread_down() {
    const PREFIXES: &[&str] = &[
        "MATCH (a)",
        "MATCH (a:Customer)",
        "OPTIONAL MATCH (a)",
        "UNWIND [1, 2] AS x",
        "RETURN ",
        "MATCH p = (a)",
        "WITH 1 AS x",
        "MATCH (a) WHERE ",
    ];
    const FRAGMENTS: &[&str] = &[
        "-->()",
        "<-[:T]-(b)",
        "-[*1..2]->()",
        ", (n)",
        ", (:Touchpoint)-->()",
        " WITH a",
        " WITH a ORDER BY a.x LIMIT 3",
        " OPTIONAL MATCH (a)-->()",
        " UNWIND [1] AS y",
        "[",
        "(",
        "NOT ",
        "-",
        " + 1",
        " AND true",
        ".p",
        "[0]",
        "{k: ",
        " CASE WHEN true THEN ",
        "[x IN [1] | ",
        "any(x IN [1] WHERE ",
        " UNION RETURN 1 AS x",
    ];
    const SUFFIXES: &[&str] = &[" RETURN 1", " RETURN a", "1", "", " RETURN count(*)", ")"];
    let seed: u64 = std::env::var("SVC_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    println!("SVC_FUZZ_SEED={seed}");
    let mut state = seed;
    let mut next = |n: usize| {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    };
    let (model, _) = svc_query::fuzzing::fixture_models();
    for _ in 0..150 {
        let counts = [1, 2, 10, 63, 64, 65, 127, 128, 200, 256, 257, 1_000, 5_000];
        let count = counts[next(counts.len())] as u16;
        let mut data = count.to_le_bytes().to_vec();
        data.extend_from_slice(PREFIXES[next(PREFIXES.len())].as_bytes());
        data.push(0xFF);
        data.extend_from_slice(FRAGMENTS[next(FRAGMENTS.len())].as_bytes());
        data.push(0xFF);
        data.extend_from_slice(SUFFIXES[next(SUFFIXES.len())].as_bytes());
        svc_query::fuzzing::check_parse_amplified(&data, &model);
    }
}
