//! The pipeline's write step ([`apply`]) inside a caller's transaction, the announcement of a
//! committed result ([`announce`]), and the two ways to run both in a write of their own
//! ([`ingest`], [`ingest_many`]).

use svc_core::store::WorkspaceTxn;
use svc_engine::{GraphRead, GraphWrite, NodeId, Properties, Value};
use time::OffsetDateTime;

use svc_core::error::{Error, Result};
use svc_core::plumbing::clock;
use svc_core::plumbing::ids::PublicIds;
use svc_core::store::{Store, WorkspaceId};

use super::input::{micros, IngestResult, ValidEvent, DEDUPE_WINDOW_SECS};
use super::realtime::{Realtime, StreamMessage};
use super::refusal::input_error;
use super::seen::SeenMessage;
use super::segment::identity;
use svc_core::plumbing::clock::micros_rfc3339;

/// Runs the pipeline's write step for one event inside the caller's transaction: read-only
/// check, `messageId` dedupe, identity resolution, customer/touchpoint/campaign writes, traits,
/// and the dedupe record. On `Err` the caller must abort its transaction (returning the error
/// from the write closure does that).
pub fn apply(
    ids: &PublicIds,
    w: &mut WorkspaceTxn<'_, '_>,
    ev: &ValidEvent,
    received_at: OffsetDateTime,
) -> Result<IngestResult> {
    crate::graph_api::ensure_writable(w)?;
    let received_us = micros(received_at)?;
    if let Some(mid) = &ev.message_id {
        if let Some(seen) = w.get_record::<SeenMessage>(mid)? {
            if received_us.saturating_sub(seen.received_at_us) < DEDUPE_WINDOW_SECS * 1_000_000 {
                return Ok(IngestResult {
                    customer_id: ids.current(&seen.customer_id),
                    touchpoint_id: ids.current(&seen.touchpoint_id),
                    is_new: false,
                    nodes_mutated: 0,
                    received_at: seen.received_at,
                    duplicate: true,
                });
            }
        }
    }
    // An event about an opportunity (crate::pipeline::sources) also writes the pipeline.
    let opportunity = crate::pipeline::sources::change_of(&ev.input)?;
    let followed = match &opportunity {
        Some(change) => crate::pipeline::owner_for_event(w, change)?,
        None => None,
    };
    let anonymous = match &ev.links {
        Some(links) => identity::anonymous_customer(w, links, &ev.input.keys)?,
        None => None,
    };
    let outcome = match followed.or(anonymous) {
        Some(owner) => {
            let mut input = ev.input.clone();
            input.keys = svc_engine::IdentityKeys {
                customer_id: Some(owner),
                ..svc_engine::IdentityKeys::default()
            };
            w.record_event(&input)
        }
        None => w.record_event(&ev.input),
    }
    .map_err(input_error)?;
    let mut nodes_mutated = outcome.nodes_mutated;
    if let Some(change) = &opportunity {
        // The generic stage-change event is its own history record.
        let history = (ev.input.action == crate::pipeline::STAGE_CHANGED
            || ev.input.action == crate::pipeline::CREATED)
            .then_some(outcome.touchpoint_id);
        let applied =
            crate::pipeline::apply(ids, w, outcome.customer_id, change, ev.input.ts, history)?;
        nodes_mutated += applied.nodes_mutated;
    }
    if set_traits(w, outcome.customer_id, &ev.traits)? && !outcome.customer_written {
        nodes_mutated += 1;
    }
    if let Some(links) = &ev.links {
        nodes_mutated += identity::link(w, links, outcome.customer_id, &ev.input.action)?;
    }
    let result = IngestResult {
        customer_id: ids.customer(outcome.customer_id),
        touchpoint_id: ids.touchpoint(outcome.touchpoint_id),
        is_new: outcome.is_new,
        nodes_mutated,
        received_at: clock::rfc3339(received_at),
        duplicate: false,
    };
    if let Some(mid) = &ev.message_id {
        w.put_record(&SeenMessage {
            message_id: mid.clone(),
            received_at: result.received_at.clone(),
            received_at_us: received_us,
            customer_id: result.customer_id.clone(),
            touchpoint_id: result.touchpoint_id.clone(),
        })?;
    }
    Ok(result)
}

/// Sets each trait that differs from the customer's current value; true when any changed.
fn set_traits(w: &mut WorkspaceTxn<'_, '_>, customer: NodeId, traits: &Properties) -> Result<bool> {
    if traits.is_empty() {
        return Ok(false);
    }
    let node = w
        .node(customer)?
        .ok_or_else(|| Error::internal(format!("customer {customer} vanished while ingesting")))?;
    let mut changed = false;
    for (key, value) in traits {
        let current = node.properties.get(key);
        let differs = match value {
            Value::Null => current.is_some(),
            v => current != Some(v),
        };
        if differs {
            w.set_node_property(customer, key, value.clone())
                .map_err(input_error)?;
            changed = true;
        }
    }
    Ok(changed)
}

/// The real-time message for a committed, non-duplicate result.
pub fn stream_message(ev: &ValidEvent, result: &IngestResult) -> Option<StreamMessage> {
    (!result.duplicate).then(|| StreamMessage {
        kind: "touchpoint.created".to_owned(),
        customer_id: result.customer_id.clone(),
        touchpoint_id: result.touchpoint_id.clone(),
        event: ev.input.action.clone(),
        ts: micros_rfc3339(ev.input.ts),
    })
}

/// Broadcasts a committed result to the workspace's real-time channel (duplicates are not
/// announced again). Call only after the write has committed.
pub fn announce(realtime: &Realtime, ws: WorkspaceId, ev: &ValidEvent, result: &IngestResult) {
    if let Some(msg) = stream_message(ev, result) {
        realtime.publish(ws, msg);
    }
}

/// Ingests one event in a write of its own, then announces it.
pub async fn ingest(
    store: &Store,
    realtime: &Realtime,
    ws: WorkspaceId,
    ev: ValidEvent,
) -> Result<IngestResult> {
    let received_at = clock::now();
    let ids = store.ids().clone();
    let (ev, result) = store
        .write(move |tx| {
            let result = apply(&ids, &mut tx.workspace(ws), &ev, received_at)?;
            Ok((ev, result))
        })
        .await?;
    announce(realtime, ws, &ev, &result);
    Ok(result)
}

/// Ingests events in order in one durable write: each item succeeds or fails on its own (a
/// failed item's writes are undone, the others commit), so a bad item never blocks the good
/// ones. Items that already failed validation keep their place and error.
pub async fn ingest_many(
    store: &Store,
    realtime: &Realtime,
    ws: WorkspaceId,
    items: Vec<Result<ValidEvent>>,
) -> Result<Vec<Result<IngestResult>>> {
    let received_at = clock::now();
    let mut out: Vec<Option<Result<IngestResult>>> = Vec::with_capacity(items.len());
    let mut valid: Vec<(usize, ValidEvent)> = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        match item {
            Ok(ev) => {
                valid.push((i, ev));
                out.push(None);
            }
            Err(e) => out.push(Some(Err(e))),
        }
    }
    let ids = store.ids().clone();
    let (valid, applied) = store
        .write(move |tx| {
            let applied: Vec<Result<IngestResult>> = valid
                .iter()
                .map(|(_, ev)| tx.attempt(|tx| apply(&ids, &mut tx.workspace(ws), ev, received_at)))
                .collect();
            Ok((valid, applied))
        })
        .await?;
    for ((i, ev), result) in valid.into_iter().zip(applied) {
        if let Ok(r) = &result {
            announce(realtime, ws, &ev, r);
        }
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(result);
        }
    }
    Ok(out
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Error::internal("batch item lost its result"))))
        .collect())
}
