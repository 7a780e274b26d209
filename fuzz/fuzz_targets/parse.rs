//! The parser never panics, whatever the bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| svc_query::fuzzing::check_parse(data));
