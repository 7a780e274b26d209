//! The indexed plan and the naive (label-scan) plan return the same rows on the fixture graph,
//! and the batch executor (over a read model of the fixture, with and without touched nodes)
//! returns exactly the row path's rows (see `svc_query::fuzzing::check_exec_vs_model`).
#![no_main]

use std::sync::OnceLock;

use svc_query::model::ModelGraph;

static MODELS: OnceLock<(ModelGraph, ModelGraph)> = OnceLock::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let models = MODELS.get_or_init(svc_query::fuzzing::fixture_models);
    svc_query::fuzzing::check_exec_vs_model(data, models);
});
