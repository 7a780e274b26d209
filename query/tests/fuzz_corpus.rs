//! Replays the fuzz corpus (`fuzz/corpus/<target>/*`) through the same checks the fuzz targets
//! run, so every input a fuzzer kept, and every crash turned into a corpus file, stays a test.

use std::path::Path;

use svc_query::fuzzing::{
    check_exec_vs_model, check_parse, check_parse_amplified, check_roundtrip, fixture_models,
};

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            if let Ok(data) = std::fs::read(e.path()) {
                out.push((e.path().display().to_string(), data));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn parse_corpus() {
    let inputs = corpus("parse");
    assert!(!inputs.is_empty(), "the parse corpus is missing");
    for (_, data) in inputs {
        check_parse(&data);
    }
}

#[test]
fn parse_amplified_corpus() {
    let inputs = corpus("parse_amplified");
    assert!(!inputs.is_empty(), "the parse_amplified corpus is missing");
    let (plain, _) = fixture_models();
    for (_, data) in inputs {
        check_parse_amplified(&data, &plain);
    }
}

#[test]
fn roundtrip_corpus() {
    let inputs = corpus("roundtrip");
    assert!(!inputs.is_empty(), "the roundtrip corpus is missing");
    for (_, data) in inputs {
        check_roundtrip(&data);
    }
}

#[test]
fn exec_vs_model_corpus() {
    let inputs = corpus("exec_vs_model");
    assert!(!inputs.is_empty(), "the exec_vs_model corpus is missing");
    let models = fixture_models();
    for (_, data) in inputs {
        check_exec_vs_model(&data, &models);
    }
}

#[test]
fn model_indexes_match_the_engine_schema() {
    let engine: Vec<(&str, &str, svc_engine::IndexKind)> = svc_engine::schema::INDEXES
        .iter()
        .map(|d| (d.label, d.property, d.kind))
        .collect();
    let mut model = svc_query::model::DOMAIN_INDEXES.to_vec();
    let mut engine_sorted = engine;
    model.sort_by_key(|(l, p, _)| (*l, *p));
    engine_sorted.sort_by_key(|(l, p, _)| (*l, *p));
    assert_eq!(model, engine_sorted);
}
