//! Every stored record type round-trips through postcard with its JSON view unchanged, with all
//! optional fields set and unset and every enum at each of its variants; and a data directory
//! written in the previous format (JSON records, format 3) opens and reads back.

use serde_json::Value;
use svc_engine::record_encoding::{decode, encode, POSTCARD_TAG};
use svc_engine::Record;

use super::sample::{sample, Options};

/// Bytes of one sample record (every option set, first variants) in each encoding.
#[derive(Debug)]
pub(super) struct Sizes {
    pub json: usize,
    pub postcard: usize,
}

/// Enum variants tried per record type (each enum at index `i % its variant count`).
const VARIANTS: usize = 8;

fn has_null(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.iter().any(has_null),
        Value::Object(o) => o.values().any(has_null),
        _ => false,
    }
}

pub(super) fn round_trip<T: Record>() -> Result<Sizes, String> {
    let mut sizes = None;
    for options in [
        Options::Set,
        Options::Unset,
        Options::Alternate(0),
        Options::Alternate(1),
    ] {
        let set = matches!(options, Options::Set);
        for variant in 0..VARIANTS {
            let at = format!("{} ({options:?}, variant {variant})", T::KIND);
            let record: T = sample(options, variant).map_err(|e| format!("{at}: sample: {e}"))?;
            let view = serde_json::to_value(&record).map_err(|e| format!("{at}: {e}"))?;
            if set && has_null(&view) {
                return Err(format!("{at}: a field is still null: {view}"));
            }
            let stored = encode(&record).map_err(|e| format!("{at}: encode: {e}"))?;
            let back: T = decode(&stored).map_err(|e| format!("{at}: decode: {e}"))?;
            let back_view = serde_json::to_value(&back).map_err(|e| format!("{at}: {e}"))?;
            if back_view != view {
                return Err(format!("{at}: {view} came back as {back_view}"));
            }
            // The JSON a format-3 build stored decodes, and the migration turns it into the
            // same bytes.
            let legacy = serde_json::to_vec(&record).map_err(|e| format!("{at}: {e}"))?;
            let migrated = super::all()
                .transcode(T::KIND, &legacy)
                .ok_or_else(|| format!("{at}: not registered"))?
                .map_err(|e| format!("{at}: migrate: {e}"))?;
            if migrated != stored {
                return Err(format!("{at}: the migration wrote other bytes"));
            }
            sizes.get_or_insert(Sizes {
                json: legacy.len(),
                postcard: stored.len(),
            });
        }
    }
    sizes.ok_or_else(|| "no sample".to_owned())
}

#[test]
fn every_record_type_round_trips_with_its_json_unchanged() {
    let mut failures = Vec::new();
    let (mut json, mut postcard) = (0, 0);
    for (name, check) in super::round_trips() {
        match check() {
            Ok(s) => {
                println!(
                    "{name}: {} bytes JSON, {} bytes postcard",
                    s.json, s.postcard
                );
                json += s.json;
                postcard += s.postcard;
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    println!("all samples: {json} bytes JSON, {postcard} bytes postcard");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The record types a source file implements `Record` for, outside its tests.
fn record_types_in(source: &str) -> Vec<String> {
    let production = source
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default();
    production
        .lines()
        .filter_map(|line| {
            let rest = line.trim().strip_prefix("impl ")?;
            let (trait_path, ty) = rest.split_once("Record for ")?;
            // `Record` itself (or a path to it), not a trait whose name ends in it (`SealedRecord`)
            let whole_name = trait_path.is_empty() || trait_path.ends_with([':', ' ', '>']);
            whole_name.then_some(())?;
            Some(ty.trim_end_matches(" {").trim().to_owned())
        })
        .collect()
}

/// The directories of the crates whose record types the registry must list.
const SERVICE_CRATES: [&str; 5] = ["core", "domains", "gateway", "agents", "server"];

fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            walk(&path, out);
        } else if name.ends_with(".rs") && !name.starts_with("tests") {
            out.extend(record_types_in(
                &std::fs::read_to_string(&path).expect("read"),
            ));
        }
    }
}

#[test]
fn every_record_type_of_the_server_is_registered() {
    let mut found = Vec::new();
    // The record types of every crate of the service (this one and the floors below it).
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in SERVICE_CRATES {
        walk(&workspace.join(krate).join("src"), &mut found);
    }
    found.sort();
    let mut registered: Vec<String> = super::round_trips()
        .into_iter()
        .map(|(name, _)| name.rsplit("::").next().unwrap_or(name).trim().to_owned())
        .collect();
    registered.sort();
    assert_eq!(found, registered);
    // One type per kind, and the registry holds each.
    let kinds: Vec<_> = super::all().kinds().collect();
    assert_eq!(kinds.len(), registered.len());
}

#[test]
fn stored_records_start_with_the_postcard_tag() {
    let record: svc_core::keys::KeyDigest = sample(Options::Set, 0).expect("sample");
    assert_eq!(encode(&record).expect("encode")[0], POSTCARD_TAG);
}

/// (JSON bytes, stored bytes) of a record given as its JSON.
fn sizes_of<T: Record>(json: Value) -> (usize, usize) {
    let record: T = serde_json::from_value(json).expect("record");
    let legacy = serde_json::to_vec(&record).expect("json");
    (legacy.len(), encode(&record).expect("encode").len())
}

/// Typical records (realistic ids, timestamps and text) are much smaller in postcard: field
/// names are not repeated in every value and integers are varints.
#[test]
fn typical_records_are_smaller_in_postcard() {
    let ts = "2026-11-25T10:42:28.123456Z";
    let figures = [
        (
            "ledger_row",
            sizes_of::<svc_core::ledger::LedgerRow>(serde_json::json!({
                "id": "led_01JDX6Q8Z4M3N5P7R9T1V3X5Z7", "request_id": "req_01JDX6Q8Z4AB8CD9EF0GH1JK2L",
                "key_id": "key_01JDX5Y2W8ZQ4R6S8T0U2V4W6X", "agent": "renewal-bot",
                "capability": "crm.memory.write", "mode": "execute", "source": "gateway",
                "status": "ok", "credits": 1, "month": "2026-11",
                "customer_id": "cus_01JDX4B2C3D4E5F6G7H8J9K0M1", "created_at": ts,
            })),
        ),
        (
            "user",
            sizes_of::<svc_core::auth::user::User>(serde_json::json!({
                "id": "usr_01JDX3A1B2C3D4E5F6G7H8J9K0", "email": "Ada.Lovelace@example.com",
                "email_normalized": "ada.lovelace@example.com", "name": "Ada Lovelace",
                "password_hash": "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$ZmFrZWhhc2hmYWtlaGFzaGZha2VoYXNoZmFrZWg",
                "workspace": 12, "created_at": ts, "role": "owner",
            })),
        ),
        (
            "memory_note",
            sizes_of::<svc_domains::crm::memory::MemoryNote>(serde_json::json!({
                "id": "mem_01JDX6Q8Z4M3N5P7R9T1V3X5Z7", "customer_id": "cus_01JDX4B2C3D4E5F6G7H8J9K0M1",
                "kind": "blocker", "text": "Legal asks for a DPA before the renewal call",
                "tags": ["legal", "renewal"], "key_id": "key_01JDX5Y2W8ZQ4R6S8T0U2V4W6X",
                "agent": "renewal-bot", "request_id": "req_01JDX6Q8Z4AB8CD9EF0GH1JK2L",
                "created_at": ts,
            })),
        ),
        (
            "pending_action",
            sizes_of::<svc_gateway::approvals::PendingAction>(serde_json::json!({
                "id": "pa_01JDX6Q8Z4M3N5P7R9T1V3X5Z7", "request_id": "req_01JDX6Q8Z4AB8CD9EF0GH1JK2L",
                "capability": "outbound.email.send", "key_id": "key_01JDX5Y2W8ZQ4R6S8T0U2V4W6X",
                "agent": "renewal-bot", "source": "gateway",
                "input": {"customer": "ada@example.com", "subject": "Your renewal",
                          "body": "Hi Ada, your plan renews on 1 December."},
                "credits": 5, "month": "2026-11", "customer_id": "cus_01JDX4B2C3D4E5F6G7H8J9K0M1",
                "status": "pending", "created_at": ts, "expires_at": ts,
                "timeline": [{"ts": ts, "state": "pending", "actor": "agent:key_01JDX5Y2W8ZQ4R6S8T0U2V4W6X",
                              "note": "queued for approval"}],
                "result": null, "error": null,
            })),
        ),
    ];
    for (kind, (json, postcard)) in figures {
        println!("{kind}: {json} bytes JSON, {postcard} bytes postcard");
        assert!(
            postcard * 10 < json * 8,
            "{kind}: {postcard} of {json} bytes"
        );
    }
}
