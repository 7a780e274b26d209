//! Invocations through `POST /api/v1/capabilities/:id/invoke`, always with `source: "cli"`.
//!
//! Retries are safe only where they cannot execute twice: a rate-limited request (429) was
//! refused before anything ran, and with an idempotency key the server replays the first
//! completed response instead of running again (an in-flight duplicate gets 409, and a network
//! failure leaves the outcome unknown, both resolved by retrying the same key).

use std::time::Duration;

use serde_json::{json, Value};

use crate::client::{Answer, Client};
use crate::error::{CliError, Result};

/// The gateway `source` of every CLI invocation.
pub const SOURCE: &str = "cli";
const MAX_ATTEMPTS: u32 = 6;
const MAX_WAIT: Duration = Duration::from_secs(30);

#[derive(Clone, Debug, Default)]
pub struct Invocation<'a> {
    pub capability: &'a str,
    pub mode: Option<&'a str>,
    pub input: Value,
    pub idempotency_key: Option<&'a str>,
}

/// A completed invocation: the envelope and whether the server replayed it.
#[derive(Debug)]
pub struct Invoked {
    pub envelope: Value,
    pub text: String,
    pub replayed: bool,
}

/// The request body (`source` is always `cli`).
pub fn body(inv: &Invocation<'_>) -> Value {
    let mut b = json!({"source": SOURCE, "input": inv.input});
    if let Some(m) = inv.mode {
        b["mode"] = json!(m);
    }
    if let Some(k) = inv.idempotency_key {
        b["idempotency_key"] = json!(k);
    }
    b
}

pub fn invoke(client: &Client, inv: &Invocation<'_>) -> Result<Invoked> {
    let path = format!("/api/v1/capabilities/{}/invoke", check_id(inv.capability)?);
    let body = body(inv);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let outcome = client.post_json(&path, &body);
        let wait = match &outcome {
            Ok(a) => retry_after(a, inv.idempotency_key.is_some()),
            Err(CliError::Transport(_)) if inv.idempotency_key.is_some() => Some(None),
            Err(_) => None,
        };
        match (wait, attempt < MAX_ATTEMPTS) {
            (Some(hint), true) => std::thread::sleep(backoff(attempt, hint)),
            _ => {
                let a = outcome?.ok()?;
                return Ok(Invoked {
                    replayed: a.header("idempotent-replayed") == Some("true"),
                    envelope: a.body,
                    text: a.text,
                });
            }
        }
    }
}

/// `Some(server hint)` when the answer may be retried safely.
fn retry_after(a: &Answer, keyed: bool) -> Option<Option<Duration>> {
    let retryable = match a.status {
        429 => true,
        409 | 503 => keyed,
        _ => false,
    };
    retryable.then(|| {
        a.header("retry-after")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs)
    })
}

fn backoff(attempt: u32, hint: Option<Duration>) -> Duration {
    let exp = Duration::from_millis(200u64.saturating_mul(1 << attempt.min(6)));
    hint.unwrap_or(exp).min(MAX_WAIT)
}

/// Capability ids are dotted names (`events.ingest`); anything else is refused here so that it
/// cannot change the request path.
pub fn check_id(id: &str) -> Result<&str> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && !id.bytes().all(|b| b == b'.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(id)
    } else {
        Err(CliError::Usage(format!(
            "{id:?} is not a capability id (e.g. events.ingest; see `svc capabilities list`)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_always_says_cli() {
        let b = body(&Invocation {
            capability: "events.ingest",
            mode: Some("execute"),
            input: json!({"event": "x"}),
            idempotency_key: Some("k"),
        });
        assert_eq!(
            b,
            json!({"source": "cli", "mode": "execute", "idempotency_key": "k", "input": {"event": "x"}})
        );
        let b = body(&Invocation {
            capability: "context.get",
            ..Default::default()
        });
        assert_eq!(b, json!({"source": "cli", "input": null}));
    }

    #[test]
    fn ids_cannot_escape_the_path() {
        assert_eq!(check_id("events.ingest").ok(), Some("events.ingest"));
        for bad in ["../keys", "..", "a b?", "", "x/y"] {
            assert!(matches!(check_id(bad), Err(CliError::Usage(_))), "{bad}");
        }
    }

    #[test]
    fn backoff_is_bounded() {
        assert_eq!(backoff(1, None), Duration::from_millis(400));
        assert_eq!(
            backoff(1, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(backoff(1, Some(Duration::from_secs(999))), MAX_WAIT);
        assert!(backoff(30, None) <= MAX_WAIT);
    }
}
