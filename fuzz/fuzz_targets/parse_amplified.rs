//! Long chains, wide pattern lists and long clause lists (a repeated fragment) parse or fail
//! cleanly, and what parses runs without exhausting a server-sized stack.
#![no_main]

use std::sync::OnceLock;

use svc_query::model::ModelGraph;

fn model() -> &'static ModelGraph {
    static MODEL: OnceLock<ModelGraph> = OnceLock::new();
    MODEL.get_or_init(|| svc_query::fuzzing::fixture_models().0)
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    svc_query::fuzzing::check_parse_amplified(data, model())
});
