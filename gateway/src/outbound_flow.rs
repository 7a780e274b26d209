//! The second half of an outbound invocation: after the provider answered, the outcome on the
//! record, the receipt and the stored idempotent answer (see `docs/outbound.md`).

use serde_json::{json, Value};
use svc_core::store::WorkspaceTxn;
use time::OffsetDateTime;

use super::receipts::{rewrite_receipt, ReceiptRecord};
use super::{encoding, envelope_json, idempotency, sanitize, Envelope, InvokeResponse};
use svc_core::error::{Code, Error, Result};
use svc_core::ledger::{self, LedgerRow};
use svc_core::plumbing::clock;
use svc_core::store::Store;
use svc_core::workspaces;
use svc_domains::outbound::{self, delivery::Dispatch, Delivered, OutboundRecord};

/// An outbound invocation between its two writes.
pub(super) struct Delivery {
    pub(super) dispatch: Dispatch,
    pub(super) envelope: Envelope,
    pub(super) charge: LedgerRow,
    pub(super) idempotency_record: Option<String>,
}

/// The result an outbound capability answers with once its record moved on.
pub(crate) fn outbound_result(r: &OutboundRecord) -> Value {
    json!({
        "outbound_id": r.id,
        "state": r.state.as_str(),
        "customer_id": r.customer_id,
        "kind": r.kind.as_str(),
        "provider_id": r.provider_id,
        "payload": r.payload,
        "outcome": r.outcome,
        "error": r.error,
    })
}

/// The second write of an outbound invocation: the provider's answer on the record, the
/// answer stored for the receipt and the idempotency key; on failure the charge is reversed,
/// the key forgotten (a retry runs afresh) and the caller answered 502.
pub(super) fn finish_delivery(
    ids: &svc_core::plumbing::ids::PublicIds,
    w: &mut WorkspaceTxn<'_, '_>,
    d: Delivery,
    delivered: &Delivered,
) -> Result<Result<InvokeResponse>> {
    let now = clock::now();
    let (record, stream) = outbound::finish(ids, w, &d.dispatch.outbound_id, delivered, now)?;
    let request_id = d.envelope.request_id.clone();
    if let Delivered::Failed { message } = delivered {
        let refund = LedgerRow {
            id: ledger::new_row_id(),
            status: "refunded".into(),
            credits: -d.charge.credits,
            idempotency_key: None,
            created_at: clock::rfc3339(now),
            ..d.charge.clone()
        };
        ledger::reverse(w, &refund)?;
        if let Some(id) = &d.idempotency_record {
            idempotency::remove(w, id)?;
        }
        let error = Error::new(
            Code::CapabilityFailed,
            format!("the provider did not take the action: {message}; credits refunded"),
        )
        .with_details(json!({
            "outbound_id": record.id,
            "state": record.state.as_str(),
            "provider_error": message,
        }));
        rewrite_receipt(
            w,
            &request_id,
            json!({"error": {"code": error.code.as_str(), "message": error.message,
                "details": error.details}}),
        )?;
        return Ok(Err(error));
    }
    let mut envelope = d.envelope;
    envelope.result = outbound_result(&record);
    let body = envelope_json(&envelope)?;
    rewrite_receipt(
        w,
        &request_id,
        sanitize::sanitize(&serde_json::to_value(&envelope).map_err(encoding)?),
    )?;
    if let Some(id) = &d.idempotency_record {
        idempotency::rewrite(w, id, body.clone())?;
    }
    Ok(Ok(InvokeResponse {
        body,
        replayed: false,
        stream,
    }))
}

/// After a stop interrupted a delivery: the stored answer and the receipt of the invocation
/// that made `r` say `unknown` (recovery, [`recover_interrupted`]).
fn mark_outcome_unknown(
    w: &mut WorkspaceTxn<'_, '_>,
    r: &OutboundRecord,
    _now: OffsetDateTime,
) -> Result<()> {
    let set_unknown = |mut v: Value| -> Value {
        if let Some(result) = v.get_mut("result").and_then(Value::as_object_mut) {
            result.insert("state".into(), json!(r.state.as_str()));
            result.insert("error".into(), json!(r.error));
        }
        v
    };
    if let Some(id) = &r.idempotency_record {
        if let Some(body) = idempotency::stored_body(w, id)? {
            if let Ok(v) = serde_json::from_str::<Value>(&body) {
                idempotency::rewrite(w, id, set_unknown(v).to_string())?;
            }
        }
    }
    if let Some(rec) = w.get_record::<ReceiptRecord>(&r.request_id)? {
        rewrite_receipt(w, &r.request_id, set_unknown(rec.response))?;
    }
    Ok(())
}

/// Outbound recovery: at start-up nothing is being sent, so every record still `sending` was
/// interrupted by a stop: it becomes `unknown` (never retried by itself), and the invocation's stored answer
/// says so. Returns how many records were recovered.
pub async fn recover_interrupted(store: &Store) -> Result<usize> {
    let mut recovered = 0;
    for ws in workspaces::all_ids(store).await? {
        let stuck: Vec<OutboundRecord> = store.find(ws, "state", "sending").await?;
        if stuck.is_empty() {
            continue;
        }
        recovered += stuck.len();
        store
            .write(move |tx| {
                let now = clock::now();
                let mut w = tx.workspace(ws);
                for mut r in stuck {
                    r.error = Some(
                        "the service stopped while this was being sent; it may or may not have \
                         reached the provider and is not retried"
                            .into(),
                    );
                    outbound::transition(&mut w, &mut r, outbound::State::Unknown, now)?;
                    mark_outcome_unknown(&mut w, &r, now)?;
                    if let Some(pending) = &r.pending_action_id {
                        super::approvals::mark_unknown(&mut w, pending, now)?;
                    }
                }
                Ok(())
            })
            .await?;
    }
    if recovered > 0 {
        tracing::warn!(
            recovered,
            "outbound actions interrupted by a stop are now unknown"
        );
    }
    Ok(recovered)
}
