//! parse -> print -> parse gives the same tree, and printing is stable.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| svc_query::fuzzing::check_roundtrip(data));
