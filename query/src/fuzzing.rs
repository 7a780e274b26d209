//! The properties the fuzz targets check (`fuzz/`), kept here so that `cargo test` can replay
//! the fuzz corpus and every crash found becomes a regression test (`tests/fuzz_corpus.rs`).
//! Each function panics when its property is violated, which is what a fuzzer reports.

use std::time::Duration;

use crate::model::ModelGraph;
use crate::{parse, run_read, run_write, Limits, Params, QueryResult};

/// The fixture graph the suite uses, as Cypher.
pub const FIXTURE: &str = include_str!("../tests/fixture.cypher");

fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok().filter(|t| t.len() <= 4096)
}

/// Parsing never panics, and every error has a code.
pub fn check_parse(data: &[u8]) {
    if let Some(t) = text(data) {
        if let Err(e) = parse(t) {
            assert!(!e.code().is_empty());
        }
    }
}

/// Longest text [`check_parse_amplified`] builds (a request body is at most 1 MiB).
const AMPLIFIED_MAX_BYTES: usize = 256 * 1024;

/// The statement an amplified input stands for: `prefix fragment{count} suffix`, from bytes
/// laid out as two bytes of repeat count (little endian), then prefix, fragment and suffix
/// separated by 0xFF bytes. A fuzzer mutating a few bytes so explores chains of thousands of
/// hops, wide pattern lists and long clause lists, which a plain input of at most 4 KiB
/// cannot reach (issue 29: a 25 KB chain of `-->()` overflowed the stack).
pub fn amplified_text(data: &[u8]) -> Option<String> {
    let (count, rest) = data.split_first_chunk::<2>()?;
    let count = usize::from(u16::from_le_bytes(*count));
    let mut parts = rest.split(|b| *b == 0xFF);
    let prefix = std::str::from_utf8(parts.next()?).ok()?;
    let fragment = std::str::from_utf8(parts.next().unwrap_or_default()).ok()?;
    let suffix = std::str::from_utf8(parts.next().unwrap_or_default()).ok()?;
    let len = prefix.len() + fragment.len().saturating_mul(count) + suffix.len();
    if len > AMPLIFIED_MAX_BYTES {
        return None;
    }
    Some(format!("{prefix}{}{suffix}", fragment.repeat(count)))
}

/// A statement built by [`amplified_text`] parses or fails cleanly, and when it parses it
/// plans, runs (briefly) and prints on a thread with the stack a server query gets (2 MiB).
pub fn check_parse_amplified(data: &[u8], model: &ModelGraph) {
    let Some(text) = amplified_text(data) else {
        return;
    };
    let Ok(stmt) = parse(&text) else { return };
    let limits = Limits {
        time: Duration::from_millis(50),
        max_rows: 100,
        max_hops: 3,
        max_buffered_rows: 10_000,
        ..Limits::default()
    };
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn_scoped(s, || {
                let _ = stmt.to_string();
                if stmt.is_read_only() {
                    let _ = run_read(model, &stmt, &Params::new(), &limits);
                }
            })
            .expect("spawn")
            .join()
            .expect("the query thread survived");
    });
}

/// Whatever parses prints back to text that parses to the same tree, and printing is stable.
pub fn check_roundtrip(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let Ok(first) = parse(t) else { return };
    let printed = first.to_string();
    let second = match parse(&printed) {
        Ok(s) => s,
        Err(e) => panic!("printed text does not parse: {printed:?}: {e}"),
    };
    assert_eq!(
        first, second,
        "round trip changed the tree: {t:?} -> {printed:?}"
    );
    assert_eq!(second.to_string(), printed, "printing is not stable");
}

/// The fixture on a model without indexes and on one declaring the engine's indexes.
pub fn fixture_models() -> (ModelGraph, ModelGraph) {
    let mut plain = ModelGraph::new();
    if let Ok(stmt) = parse(FIXTURE) {
        let _ = run_write(&mut plain, &stmt, &Params::new(), &Limits::default());
    }
    let indexed = plain.reindexed(crate::model::DOMAIN_INDEXES);
    (plain, indexed)
}

fn rows_as_multiset(r: &QueryResult) -> Vec<String> {
    let mut rows: Vec<String> = r.rows.iter().map(|row| format!("{row:?}")).collect();
    rows.sort();
    rows
}

/// A read query gives the same rows with the indexed plan as with the naive plan. Row order
/// and, under SKIP/LIMIT, row choice are unspecified, so those compare as counts only; when
/// either side fails (evaluation order can differ) nothing is compared.
///
/// And the batch executor (over a read model built from the model graph, once with every
/// node answered from the model's columns and once with every other node marked touched, so
/// read through the graph) gives exactly the row path's outcome: the same rows in the same
/// order, or an error with the same code.
pub fn check_exec_vs_model(data: &[u8], models: &(ModelGraph, ModelGraph)) {
    let Some(t) = text(data) else { return };
    let Ok(stmt) = parse(t) else { return };
    if !stmt.is_read_only() || draws_random(t) {
        return;
    }
    let _clock = PinnedClock::new();
    let limits = Limits {
        time: Duration::from_millis(500),
        max_rows: 2_000,
        max_hops: 4,
        max_buffered_rows: 50_000,
        ..Limits::default()
    };
    // Under the service's kind of codec, so a batch kernel that read engine ids would differ.
    let keyed = Limits {
        ids: crate::IdCodec::keyed(*b"fuzz: cypher ids"),
        ..limits.clone()
    };
    check_batch_vs_rows(t, &stmt, &Params::new(), &models.0, &keyed);
    let (Ok(naive), Ok(indexed)) = (
        run_read(&models.0, &stmt, &Params::new(), &limits),
        run_read(&models.1, &stmt, &Params::new(), &limits),
    ) else {
        return;
    };
    assert_eq!(naive.columns, indexed.columns, "columns differ for {t:?}");
    let text = stmt.to_string();
    if text.contains(" LIMIT ") || text.contains(" SKIP ") {
        assert_eq!(
            naive.rows.len(),
            indexed.rows.len(),
            "row counts differ for {t:?}"
        );
    } else {
        assert_eq!(
            rows_as_multiset(&naive),
            rows_as_multiset(&indexed),
            "rows differ for {t:?}"
        );
    }
}

/// `rand()` answers differently on every run, so a statement that calls it has no single
/// answer to compare.
fn draws_random(t: &str) -> bool {
    let squeezed: String = t
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    squeezed.contains("rand(")
}

/// While alive, every statement of this thread reads one pinned clock (`datetime()` and the
/// other clock functions answer alike in the runs compared). Nested guards keep the outer pin.
struct PinnedClock {
    owner: bool,
}

impl PinnedClock {
    fn new() -> PinnedClock {
        let owner = !crate::temporal::clock_pinned();
        if owner {
            crate::temporal::pin_clock(true);
        }
        PinnedClock { owner }
    }
}

impl Drop for PinnedClock {
    fn drop(&mut self) {
        if self.owner {
            crate::temporal::pin_clock(false);
        }
    }
}

/// The batch path over `g` (all nodes from the model; every other node touched) against the
/// row path over `g`. Timeouts are not compared (the two paths take different times).
pub fn check_batch_vs_rows(
    t: &str,
    stmt: &crate::Statement,
    params: &Params,
    g: &dyn crate::GraphRead,
    limits: &Limits,
) {
    if draws_random(t) {
        return;
    }
    let _clock = PinnedClock::new();
    let Ok(batch) = crate::ModelSwitch::batch(g) else {
        return;
    };
    let rows = run_read(&crate::ModelSwitch::rows(g), stmt, params, limits);
    let all: Vec<u64> = g
        .all_nodes()
        .map(|ids| ids.into_iter().map(|n| n.0).step_by(2).collect())
        .unwrap_or_default();
    let touched = crate::GraphRead::model_view(&batch).map(|m| m.with_touched(all));
    let mut sides = vec![("batch", run_read(&batch, stmt, params, limits))];
    if let Some(m) = touched {
        let half = crate::ModelSwitch::with_model(g, m);
        sides.push(("batch, half touched", run_read(&half, stmt, params, limits)));
    }
    for (name, side) in sides {
        same_outcome(t, name, &rows, &side);
    }
}

/// Panics unless two outcomes are the same rows in the same order, or errors with the same
/// code (timeouts compare with anything: the paths take different times).
pub fn same_outcome(
    t: &str,
    name: &str,
    rows: &Result<QueryResult, crate::QueryError>,
    side: &Result<QueryResult, crate::QueryError>,
) {
    {
        match (rows, side) {
            (Err(crate::QueryError::Timeout(_)), _) | (_, Err(crate::QueryError::Timeout(_))) => {}
            // Debug text: NaN equals itself there.
            (Ok(a), Ok(b)) => assert_eq!(
                format!("{:?}", (&a.columns, &a.rows)),
                format!("{:?}", (&b.columns, &b.rows)),
                "{name} differs from the row path for {t:?}"
            ),
            (Err(a), Err(b)) => assert_eq!(
                a.code(),
                b.code(),
                "{name} fails differently from the row path for {t:?}: {a} / {b}"
            ),
            (a, b) => panic!("{name} and the row path disagree for {t:?}: {a:?} / {b:?}"),
        }
    }
}
