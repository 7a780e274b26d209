//! The whole openCypher TCK against the store: fails when a scenario of `baseline.txt` no
//! longer passes, on any wrong result and on any crash. Refresh the baseline (and
//! docs/cypher.md) with `cargo run -p svc-tck --bin tck-report`.

use svc_tck::{report, FailKind, Outcome};

#[test]
fn the_tck_keeps_its_baseline_with_no_wrong_result() {
    let root = svc_tck::root();
    let scenarios = svc_tck::load(&root).expect("the feature files parse");
    assert!(scenarios.len() > 3_800, "{} scenarios", scenarios.len());
    let runner = svc_tck::Runner::new(&root).expect("store");
    let threads = svc_tck::threads();
    let records = runner.run_all(&scenarios, threads);
    assert_eq!(records.len(), scenarios.len());
    println!("{}", report::summary(&records));

    let baseline = report::read_ids(&root.join("baseline.txt")).expect("baseline");
    let known = report::read_ids(&root.join("known-differences.txt")).expect("known differences");
    let mut problems = Vec::new();
    for r in &records {
        match &r.outcome {
            Outcome::Fail(FailKind::WrongResult, _) if known.contains(&r.id) => {}
            Outcome::Fail(kind @ (FailKind::WrongResult | FailKind::Crash), why) => {
                problems.push(format!("{} {}: {}: {why}", r.id, r.name, kind.label()))
            }
            Outcome::Fail(kind, why) if baseline.contains(&r.id) => problems.push(format!(
                "{} {}: passed before, now {}: {why}",
                r.id,
                r.name,
                kind.label()
            )),
            _ => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every query the TCK holds (setup, queries, control queries, named graphs) goes through the
/// fuzz targets' checks: parsing never panics, and whatever parses prints back to text that
/// parses to the same tree.
#[test]
fn every_tck_query_round_trips_through_the_printer() {
    let root = svc_tck::root();
    let scenarios = svc_tck::load(&root).expect("the feature files parse");
    let mut n = 0;
    for sc in &scenarios {
        for step in &sc.steps {
            if let Some(doc) = &step.doc {
                svc_query::fuzzing::check_parse(doc.as_bytes());
                svc_query::fuzzing::check_roundtrip(doc.as_bytes());
                n += 1;
            }
        }
    }
    assert!(n > 3_000, "{n} queries");
}
