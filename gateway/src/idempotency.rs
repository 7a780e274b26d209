//! Idempotency keys with Stripe's contract (DESIGN.md §4): scoped to (workspace, agent key,
//! capability); the first completed response is stored with the invocation's other writes and
//! replayed byte for byte; the same key with a different request is refused (422); the same
//! key while the first request is still running is refused (409). Failures are not stored: an
//! invocation that fails leaves nothing behind (its transaction is rolled back), so a retry
//! runs afresh. Stored responses are kept for [`RETENTION`] (24 hours, then purged by the
//! sweeper through [`purge`]); a retry after that runs as a new request, as with Stripe.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use svc_core::store::WorkspaceTxn;
use svc_engine::WorkspaceId;
use time::OffsetDateTime;

use svc_core::capabilities::Mode;
use svc_core::error::{Code, Error, Result};
use svc_core::plumbing::ids;
use svc_core::retention;
use svc_core::store::{Record, Store};

/// SHA-256 of what makes two requests "the same": the mode and the input (canonical JSON:
/// object keys sorted). `source` is not part of it, so a CLI retry of an MCP call replays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    pub fn of(mode: Mode, input: &Value) -> Fingerprint {
        let mut h = Sha256::new();
        h.update(mode.as_str().as_bytes());
        h.update([0]);
        canonical(input, &mut h);
        Fingerprint(h.finalize().into())
    }

    fn hex(&self) -> String {
        ids::hex(&self.0)
    }
}

/// Feeds a rendering of `v` with object keys sorted (serde_json may keep insertion order).
fn canonical(v: &Value, h: &mut Sha256) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            h.update(b"{");
            for k in keys {
                h.update(Value::String(k.clone()).to_string().as_bytes());
                h.update(b":");
                if let Some(x) = m.get(k) {
                    canonical(x, h);
                }
                h.update(b",");
            }
            h.update(b"}");
        }
        Value::Array(items) => {
            h.update(b"[");
            for x in items {
                canonical(x, h);
                h.update(b",");
            }
            h.update(b"]");
        }
        other => h.update(other.to_string().as_bytes()),
    }
}

/// The stored first response of an idempotency key.
#[derive(Clone, Debug)]
pub struct StoredResponse {
    pub fingerprint: Fingerprint,
    pub request_id: String,
    pub body: String,
    pub created_at: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IdempotencyRecord {
    id: String,
    fingerprint: String,
    request_id: String,
    body: String,
    created_at: String,
}

impl Record for IdempotencyRecord {
    const KIND: &'static str = "idempotency";
    fn id(&self) -> String {
        self.id.clone()
    }
    fn indexes(&self) -> Vec<(&'static str, String)> {
        vec![retention::bucket_index(&self.created_at)]
    }
}

/// How long a stored response is replayed (DESIGN.md §4: at least 24 hours).
pub const RETENTION: time::Duration = time::Duration::hours(24);

impl retention::Expiring for IdempotencyRecord {
    const RETENTION: time::Duration = RETENTION;
    fn stored_at(&self) -> &str {
        &self.created_at
    }
}

/// Deletes the workspace's stored responses older than [`RETENTION`] at `now` (the sweeper's
/// job); returns how many.
pub async fn purge(store: &Store, ws: WorkspaceId, now: OffsetDateTime) -> Result<usize> {
    retention::purge::<IdempotencyRecord>(store, ws, now).await
}

/// The id of the record storing a key's answer (outbound records keep it, see [`rewrite`]).
pub fn record_id(key_id: &str, capability: &str, idem: &str) -> String {
    format!("{key_id}/{capability}/{idem}")
}

fn mismatch() -> Error {
    Error::new(
        Code::IdempotencyMismatch,
        "this idempotency key was already used with a different request",
    )
}

/// The stored response for this key, when its first request completed: `Ok(Some)` to replay,
/// `Err(422)` when the stored request differs.
pub fn lookup(
    w: &WorkspaceTxn<'_, '_>,
    key_id: &str,
    capability: &str,
    idem: &str,
    fingerprint: Fingerprint,
) -> Result<Option<StoredResponse>> {
    let Some(rec) = w.get_record::<IdempotencyRecord>(&record_id(key_id, capability, idem))? else {
        return Ok(None);
    };
    if rec.fingerprint != fingerprint.hex() {
        return Err(mismatch());
    }
    Ok(Some(StoredResponse {
        fingerprint,
        request_id: rec.request_id,
        body: rec.body,
        created_at: rec.created_at,
    }))
}

/// Stores the first completed response (in the invocation's own transaction).
pub fn store(
    w: &mut WorkspaceTxn<'_, '_>,
    key_id: &str,
    capability: &str,
    idem: &str,
    response: StoredResponse,
) -> Result<()> {
    w.put_record(&IdempotencyRecord {
        id: record_id(key_id, capability, idem),
        fingerprint: response.fingerprint.hex(),
        request_id: response.request_id,
        body: response.body,
        created_at: response.created_at,
    })?;
    Ok(())
}

/// Rewrites a stored answer in place (an outbound action's answer moves from `sending` to its
/// outcome after the provider answered, or to `unknown` after a stop).
pub fn rewrite(w: &mut WorkspaceTxn<'_, '_>, record_id: &str, body: String) -> Result<()> {
    if let Some(mut rec) = w.get_record::<IdempotencyRecord>(record_id)? {
        rec.body = body;
        w.put_record(&rec)?;
    }
    Ok(())
}

/// The stored answer's body, if the record exists.
pub fn stored_body(w: &WorkspaceTxn<'_, '_>, record_id: &str) -> Result<Option<String>> {
    Ok(w.get_record::<IdempotencyRecord>(record_id)?
        .map(|r| r.body))
}

/// Forgets a stored answer: the invocation failed after all, and a retry runs afresh.
pub fn remove(w: &mut WorkspaceTxn<'_, '_>, record_id: &str) -> Result<()> {
    w.delete_record::<IdempotencyRecord>(record_id)?;
    Ok(())
}

type Slot = (u64, String, String, String);

/// The idempotency keys whose first request is still running, for one service (it lives on
/// `AppState`: two services in one process never share it). Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct InFlightKeys(Arc<Mutex<HashMap<Slot, Fingerprint>>>);

/// Marks an idempotency key as running until dropped (also on error, panic or cancellation).
#[derive(Debug)]
pub struct InFlight {
    slot: Slot,
    keys: InFlightKeys,
}

impl InFlightKeys {
    pub fn enter(
        &self,
        ws: WorkspaceId,
        key_id: &str,
        capability: &str,
        idem: &str,
        fingerprint: Fingerprint,
    ) -> Result<InFlight> {
        let slot = (
            ws.0,
            key_id.to_owned(),
            capability.to_owned(),
            idem.to_owned(),
        );
        let mut map = self.0.lock();
        if let Some(running) = map.get(&slot) {
            return Err(if *running == fingerprint {
                Error {
                    retry_after: Some(1),
                    ..Error::new(
                        Code::IdempotencyInFlight,
                        "a request with this idempotency key is still in flight; retry shortly",
                    )
                }
            } else {
                mismatch()
            });
        }
        map.insert(slot.clone(), fingerprint);
        Ok(InFlight {
            slot,
            keys: self.clone(),
        })
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.keys.0.lock().remove(&self.slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fingerprint_ignores_key_order_but_not_values_or_mode() {
        let a = Fingerprint::of(Mode::Execute, &json!({"a": 1, "b": 2}));
        let b = Fingerprint::of(Mode::Execute, &json!({"b": 2, "a": 1}));
        assert_eq!(a, b);
        assert_ne!(a, Fingerprint::of(Mode::Execute, &json!({"a": 1, "b": 3})));
        assert_ne!(a, Fingerprint::of(Mode::DryRun, &json!({"a": 1, "b": 2})));
    }

    #[test]
    fn second_entry_is_refused_until_the_first_leaves() {
        let f = Fingerprint::of(Mode::Execute, &json!({}));
        let g = Fingerprint::of(Mode::Execute, &json!({"x": 1}));
        let ws = WorkspaceId(7);
        let keys = InFlightKeys::default();
        let first = keys.enter(ws, "key_t", "c", "k", f).expect("first");
        let busy = keys.enter(ws, "key_t", "c", "k", f).expect_err("busy");
        assert_eq!(busy.code, Code::IdempotencyInFlight);
        let other = keys
            .enter(ws, "key_t", "c", "k", g)
            .expect_err("other body");
        assert_eq!(other.code, Code::IdempotencyMismatch);
        keys.enter(ws, "key_t", "c2", "k", f)
            .expect("other capability is another scope");
        drop(first);
        keys.enter(ws, "key_t", "c", "k", f).expect("free again");
        // Another service's keys are its own.
        InFlightKeys::default()
            .enter(ws, "key_t", "c2", "k", f)
            .expect("another table");
    }

    #[tokio::test]
    async fn stored_responses_replay_for_24_hours_then_are_purged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let ws = WorkspaceId(11);
        let f = Fingerprint::of(Mode::Execute, &json!({"a": 1}));
        // 2026-01-01T00:00:00Z
        let t0 = OffsetDateTime::from_unix_timestamp(1_767_225_600).expect("valid");
        let graph = store.graph().expect("graph");
        graph
            .write(move |txn| -> Result<()> {
                let response = StoredResponse {
                    fingerprint: f,
                    request_id: "req_1".into(),
                    body: "{}".into(),
                    created_at: svc_core::plumbing::clock::rfc3339(t0),
                };
                super::store(&mut txn.workspace(ws), "key_t", "c", "k", response)
            })
            .expect("stored");
        let lookup_now = |g: &svc_engine::Graph| {
            g.write(move |txn| lookup(&txn.workspace(ws), "key_t", "c", "k", f))
        };
        assert!(lookup_now(&graph).expect("lookup").is_some());
        let h = time::Duration::hours;
        assert_eq!(purge(&store, ws, t0 + h(23)).await.expect("purge"), 0);
        assert!(lookup_now(&graph).expect("lookup").is_some(), "kept 24 h");
        assert_eq!(purge(&store, ws, t0 + h(25)).await.expect("purge"), 1);
        assert!(lookup_now(&graph).expect("lookup").is_none(), "purged");
        drop(graph);
        store.close();
    }
}
