//! The voice provider's status callback (`POST /api/webhooks/voice/:workspace_id/status`, the
//! StatusCallback URL sent with each call): verified with the provider's signature (HMAC-SHA1
//! over the URL and the sorted form parameters, keyed with the workspace's auth token, as
//! Twilio documents), then the call's final status and duration land on its outbound record
//! and a `call_completed` touchpoint on the customer.

use serde_json::json;
use svc_engine::WorkspaceId;

use crate::events::StreamMessage;
use crate::integrations::{self, voice, Config};
use svc_core::error::{Code, Error, Result};
use svc_core::integration_kind::Kind;
use svc_core::plumbing::clock;
use svc_core::plumbing::sealed::Sealer;
use svc_core::store::Store;

use super::{record_touchpoint, OutboundKind, OutboundRecord};

/// The one answer to a callback that does not verify, whatever the reason (no such workspace,
/// no voice integration, a wrong signature): the caller learns nothing about which.
pub fn unverified() -> Error {
    Error::new(
        Code::InvalidSignature,
        "the status callback's X-Twilio-Signature does not verify; nothing was recorded",
    )
}

/// Call statuses after which nothing more happens to a call.
const FINAL: &[&str] = &["completed", "busy", "failed", "no-answer", "canceled"];

/// A verified status report of one call. `full_url` is the URL the provider called (the public
/// URL plus path and query), `params` the form body, `signature` the `X-Twilio-Signature`.
/// Returns the touchpoint's real-time message when one was recorded.
pub async fn record(
    store: &Store,
    sealer: &Sealer,
    ws: WorkspaceId,
    full_url: &str,
    params: Vec<(String, String)>,
    signature: Option<&str>,
) -> Result<Option<StreamMessage>> {
    let bad_signature = unverified;
    let Some(Config::Voice(config)) = integrations::load(store, sealer, ws, Kind::Voice).await?
    else {
        // Without the token nothing can be verified: the same answer as a wrong signature.
        return Err(bad_signature());
    };
    let signature = signature.ok_or_else(bad_signature)?;
    if !voice::verify_signature(&config.auth_token, full_url, &params, signature) {
        return Err(bad_signature());
    }
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let sid = param("CallSid")
        .ok_or_else(|| Error::invalid_field("CallSid", "", "the status callback has no CallSid"))?;
    let status = param("CallStatus").unwrap_or_else(|| "unknown".to_owned());
    let duration: Option<i64> = param("CallDuration").and_then(|d| d.parse().ok());
    let ids = store.ids().clone();
    store
        .write(move |tx| {
            let now = clock::now();
            let mut w = tx.workspace(ws);
            let Some(mut r) = w
                .find_records::<OutboundRecord>("provider", &sid)?
                .into_iter()
                .find(|r| r.kind == OutboundKind::Call)
            else {
                return Err(Error::not_found("call"));
            };
            let already_final = r
                .outcome
                .as_ref()
                .and_then(|o| o.get("call_status"))
                .and_then(|s| s.as_str())
                .is_some_and(|s| FINAL.contains(&s) && s != "queued");
            let reported = r
                .outcome
                .as_ref()
                .and_then(|o| o.get("reported_at"))
                .is_some();
            // Providers retry callbacks: a final status is recorded once.
            if already_final && reported {
                return Ok(None);
            }
            r.outcome = Some(json!({
                "call_status": status,
                "duration_s": duration,
                "reported_at": clock::rfc3339(now),
            }));
            r.updated_at = clock::rfc3339(now);
            w.put_record(&r)?;
            if !FINAL.contains(&status.as_str()) {
                return Ok(None);
            }
            record_touchpoint(
                &ids,
                &mut w,
                &r,
                "call_completed",
                json!({"call_status": status, "duration_s": duration}),
                now,
            )
        })
        .await
}
