//! Rows of `svc events send --batch` and their idempotency keys.
//!
//! A row's key is `<prefix>:<hash>:<n>`: `hash` is the first 16 hex digits of the SHA-256 of the
//! row's canonical JSON (object keys sorted, no whitespace) and `n` counts earlier rows of the
//! file with the same content. So the key depends on what the row says, not where it sits:
//! rerunning a file with the same prefix after a crash, after fixing a bad row, or after
//! appending or inserting rows sends each row at most once, while two identical rows in one
//! file stay two events.

use std::collections::HashMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{CliError, Result};

/// Longest prefix accepted (the server takes keys of at most 255 characters).
pub const MAX_PREFIX: usize = 200;

/// One non-blank line of the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// 1-based line number in the file.
    pub line: usize,
    /// The parsed input object, or why the line is not one.
    pub input: std::result::Result<Value, String>,
    /// Idempotency key (only for rows that parsed).
    pub idempotency_key: Option<String>,
}

pub fn check_prefix(prefix: &str) -> Result<()> {
    if prefix.is_empty() || prefix.chars().count() > MAX_PREFIX {
        return Err(CliError::Usage(format!(
            "--idempotency-prefix must be 1 to {MAX_PREFIX} characters"
        )));
    }
    Ok(())
}

/// Splits a JSON-lines text into rows; blank lines are skipped (they keep their numbers).
pub fn rows(text: &str, prefix: &str) -> Vec<Row> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let input = match serde_json::from_str::<Value>(l) {
                Ok(v @ Value::Object(_)) => Ok(v),
                Ok(_) => Err("the line is not a JSON object".to_owned()),
                Err(e) => Err(format!("invalid JSON: {e}")),
            };
            let idempotency_key = input.as_ref().ok().map(|v| {
                let hash = content_hash(v);
                let n = seen.entry(hash.clone()).or_insert(0);
                let key = format!("{prefix}:{hash}:{n}");
                *n += 1;
                key
            });
            Row {
                line: i + 1,
                input,
                idempotency_key,
            }
        })
        .collect()
}

/// First 16 hex digits of the SHA-256 of the canonical JSON of `v`.
pub fn content_hash(v: &Value) -> String {
    let mut canonical = String::new();
    write_canonical(v, &mut canonical);
    let digest = Sha256::digest(canonical.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A random prefix for a run started without `--idempotency-prefix` (retries within the run are
/// still safe; the summary prints it so a rerun can reuse it).
pub fn random_prefix() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let seed = format!("{nanos}:{}", std::process::id());
    let digest = Sha256::digest(seed.as_bytes());
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("batch-{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_follow_content_not_position() {
        let a = r#"{"event":"x","email":"a@example.com"}"#;
        let b = r#"{"email":"b@example.com","event":"x"}"#;
        let first = rows(&format!("{a}\n{b}\n"), "p");
        let moved = rows(
            &format!("{b}\n\n{{\"event\":\"new\",\"email\":\"c@example.com\"}}\n{a}\n"),
            "p",
        );
        assert_eq!(first[0].idempotency_key, moved[2].idempotency_key);
        assert_eq!(first[1].idempotency_key, moved[0].idempotency_key);
        assert_eq!(moved[2].line, 4, "blank lines keep their numbers");
    }

    #[test]
    fn key_order_and_spacing_do_not_matter_but_repeats_do() {
        let r = rows(
            "{\"event\":\"x\",\"email\":\"a@example.com\"}\n{ \"email\": \"a@example.com\", \"event\": \"x\" }\n",
            "run1",
        );
        let k0 = r[0].idempotency_key.clone().expect("key");
        let k1 = r[1].idempotency_key.clone().expect("key");
        assert!(k0.starts_with("run1:") && k0.ends_with(":0"), "{k0}");
        assert!(k1.ends_with(":1"), "{k1}");
        assert_eq!(k0.trim_end_matches(":0"), k1.trim_end_matches(":1"));
    }

    #[test]
    fn bad_lines_are_rows_with_an_error() {
        let r = rows(
            "not json\n[1]\n{\"event\":\"x\",\"email\":\"a@example.com\"}\n",
            "p",
        );
        assert_eq!(r.len(), 3);
        assert!(r[0]
            .input
            .as_ref()
            .is_err_and(|e| e.starts_with("invalid JSON")));
        assert!(r[1].input.is_err());
        assert_eq!(r[0].idempotency_key, None);
        assert!(r[2].input.is_ok());
    }

    #[test]
    fn canonical_hash_is_stable() {
        assert_eq!(
            content_hash(&json!({"b": [1, {"d": 2, "c": 3}], "a": "x"})),
            content_hash(&json!({"a": "x", "b": [1, {"c": 3, "d": 2}]}))
        );
        assert_ne!(
            content_hash(&json!({"a": 1})),
            content_hash(&json!({"a": 2}))
        );
        assert_eq!(content_hash(&json!({})).len(), 16);
    }

    #[test]
    fn prefixes() {
        assert!(check_prefix("").is_err());
        assert!(check_prefix(&"x".repeat(201)).is_err());
        assert!(check_prefix("import-2026-11").is_ok());
        let p = random_prefix();
        assert!(p.starts_with("batch-") && p.len() == 18, "{p}");
    }
}
