//! Outbound actions: the record of every email, call and Customer.io write an agent makes, its
//! exactly-once state machine, consent and frequency checks, and the outbox listing.
//!
//! States: `queued` (an approval request waits) -> `sending` (committed to the store before the
//! provider is called) -> `sent` | `failed`; `queued -> cancelled` (rejected or expired). A
//! process that stops between `sending` and the outcome leaves `sending` behind, which the next
//! start turns into `unknown` ([`recover`]): the action may or may not have reached the
//! provider, and it is never sent a second time by itself.

pub mod call_status;
pub mod consent;
pub mod delivery;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use svc_core::store::WorkspaceTxn;
use svc_engine::WorkspaceId;
use time::OffsetDateTime;

use crate::events::{self, MarketingEvent, StreamMessage};
use svc_core::error::{Code, Error, Result};
use svc_core::plumbing::clock;
use svc_core::plumbing::ids::{self, PublicIds};
use svc_core::store::{Record, RecordScan, Store};

/// What an outbound record carries out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutboundKind {
    Email,
    Call,
    Cio,
}

impl OutboundKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OutboundKind::Email => "email",
            OutboundKind::Call => "call",
            OutboundKind::Cio => "cio",
        }
    }

    /// The touchpoint recorded on the customer once the provider took the action.
    fn done_event(self) -> &'static str {
        match self {
            OutboundKind::Email => "email_sent",
            OutboundKind::Call => "call_placed",
            OutboundKind::Cio => "cio_synced",
        }
    }

    fn channel(self) -> &'static str {
        match self {
            OutboundKind::Email => "email",
            OutboundKind::Call => "voice",
            OutboundKind::Cio => "customerio",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Queued,
    Sending,
    Sent,
    Failed,
    Unknown,
    Cancelled,
}

impl State {
    pub const ALL: [State; 6] = [
        State::Queued,
        State::Sending,
        State::Sent,
        State::Failed,
        State::Unknown,
        State::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            State::Queued => "queued",
            State::Sending => "sending",
            State::Sent => "sent",
            State::Failed => "failed",
            State::Unknown => "unknown",
            State::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<State> {
        State::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

/// One outbound action (stored per workspace).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OutboundRecord {
    /// `out_` + time-ordered base62.
    pub id: String,
    pub kind: OutboundKind,
    pub customer_id: String,
    pub state: State,
    /// The provider's id: the SMTP Message-ID, the call's sid, the Customer.io path written.
    pub provider_id: Option<String>,
    /// The invocation that created it (its receipt).
    pub request_id: String,
    pub capability: String,
    pub pending_action_id: Option<String>,
    /// What is sent, as rendered (the email, the call script, the Customer.io body).
    #[serde(with = "svc_engine::record_encoding::json_text")]
    pub payload: Value,
    /// Provider-side outcome reported later (a call's final status and duration).
    #[serde(default, with = "svc_engine::record_encoding::json_text")]
    pub outcome: Option<Value>,
    pub error: Option<String>,
    /// The idempotency record holding the invocation's answer, rewritten by [`recover`].
    pub idempotency_record: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl Record for OutboundRecord {
    const KIND: &'static str = "outbound";
    fn id(&self) -> String {
        self.id.clone()
    }
    fn indexes(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            ("state", self.state.as_str().to_owned()),
            ("customer", self.customer_id.clone()),
            ("request", self.request_id.clone()),
        ];
        if let Some(p) = &self.pending_action_id {
            out.push(("pending", p.clone()));
        }
        if let Some(p) = &self.provider_id {
            out.push(("provider", p.clone()));
        }
        out
    }
}

/// An outbound record as `GET /api/v1/outbox` shows it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct OutboxItem {
    pub id: String,
    pub kind: OutboundKind,
    pub customer_id: String,
    pub state: State,
    pub provider_id: Option<String>,
    pub request_id: String,
    pub capability: String,
    pub pending_action_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub outcome: Option<Value>,
    pub error: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl OutboxItem {
    fn new(ids: &PublicIds, r: &OutboundRecord) -> Self {
        OutboxItem {
            id: r.id.clone(),
            kind: r.kind,
            customer_id: ids.current(&r.customer_id),
            state: r.state,
            provider_id: r.provider_id.clone(),
            request_id: r.request_id.clone(),
            capability: r.capability.clone(),
            pending_action_id: r.pending_action_id.clone(),
            outcome: r.outcome.clone(),
            error: r.error.clone(),
            created_at: r.created_at.clone(),
            updated_at: r.updated_at.clone(),
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Outbox {
    pub items: Vec<OutboxItem>,
}

/// Most records one outbox listing returns.
pub const MAX_LISTED: usize = 200;

pub fn new_id(now: OffsetDateTime) -> String {
    let micros = u64::try_from(now.unix_timestamp_nanos() / 1000).unwrap_or(0);
    format!(
        "out_{}{}",
        ids::base62_fixed(micros, 11),
        ids::random_base62(6)
    )
}

/// What the executor knows when it creates a record.
#[derive(Debug)]
pub struct NewRecord<'a> {
    pub kind: OutboundKind,
    pub customer_id: &'a str,
    pub state: State,
    pub request_id: &'a str,
    pub capability: &'a str,
    pub pending_action_id: Option<&'a str>,
    pub payload: Value,
    pub now: OffsetDateTime,
}

pub fn create(w: &mut WorkspaceTxn<'_, '_>, n: NewRecord<'_>) -> Result<OutboundRecord> {
    let at = clock::rfc3339(n.now);
    let r = OutboundRecord {
        id: new_id(n.now),
        kind: n.kind,
        customer_id: n.customer_id.to_owned(),
        state: n.state,
        provider_id: None,
        request_id: n.request_id.to_owned(),
        capability: n.capability.to_owned(),
        pending_action_id: n.pending_action_id.map(str::to_owned),
        payload: n.payload,
        outcome: None,
        error: None,
        idempotency_record: None,
        created_at: at.clone(),
        updated_at: at,
    };
    w.put_record(&r)?;
    Ok(r)
}

pub fn load(w: &WorkspaceTxn<'_, '_>, id: &str) -> Result<OutboundRecord> {
    w.get_record::<OutboundRecord>(id)?
        .ok_or_else(|| Error::internal(format!("outbound record {id} is missing")))
}

/// The record a queued approval request created, if any.
pub fn for_pending(w: &WorkspaceTxn<'_, '_>, pending_id: &str) -> Result<Option<OutboundRecord>> {
    Ok(w.find_records::<OutboundRecord>("pending", pending_id)?
        .into_iter()
        .next())
}

/// Moves a record to `state` (with the time of the move).
pub fn transition(
    w: &mut WorkspaceTxn<'_, '_>,
    r: &mut OutboundRecord,
    state: State,
    now: OffsetDateTime,
) -> Result<()> {
    r.state = state;
    r.updated_at = clock::rfc3339(now);
    w.put_record(r)?;
    Ok(())
}

/// A rejected or expired approval request: its queued record will never be sent.
pub fn cancel_for_pending(
    w: &mut WorkspaceTxn<'_, '_>,
    pending_id: &str,
    now: OffsetDateTime,
) -> Result<()> {
    if let Some(mut r) = for_pending(w, pending_id)? {
        if r.state == State::Queued {
            transition(w, &mut r, State::Cancelled, now)?;
        }
    }
    Ok(())
}

/// What the provider answered for a `sending` record.
#[derive(Clone, Debug)]
pub enum Delivered {
    Ok {
        provider_id: String,
        detail: Value,
    },
    Failed {
        message: String,
    },
    /// The request may have reached the provider (a timeout after sending): never retried.
    Unknown {
        message: String,
    },
}

/// Records the provider's answer for a `sending` record, in the transaction that also finishes
/// the invocation (or approval): `sent` with a touchpoint on the customer carrying the request
/// id, `failed`, or `unknown` when the provider may have acted. Returns the record and the
/// real-time message of the touchpoint.
pub fn finish(
    ids: &PublicIds,
    w: &mut WorkspaceTxn<'_, '_>,
    id: &str,
    delivered: &Delivered,
    now: OffsetDateTime,
) -> Result<(OutboundRecord, Option<StreamMessage>)> {
    let mut r = load(w, id)?;
    if r.state != State::Sending {
        return Err(Error::new(
            Code::Conflict,
            format!("outbound record {id} is {}, not sending", r.state.as_str()),
        ));
    }
    match delivered {
        Delivered::Ok {
            provider_id,
            detail,
        } => {
            r.provider_id = Some(provider_id.clone());
            if !detail.is_null() {
                r.outcome = Some(detail.clone());
            }
            transition(w, &mut r, State::Sent, now)?;
            let stream = record_touchpoint(ids, w, &r, r.kind.done_event(), json!({}), now)?;
            Ok((r, stream))
        }
        Delivered::Failed { message } => {
            r.error = Some(message.clone());
            transition(w, &mut r, State::Failed, now)?;
            Ok((r, None))
        }
        Delivered::Unknown { message } => {
            r.error = Some(format!(
                "{message}; the provider may or may not have done it, and it is not retried"
            ));
            transition(w, &mut r, State::Unknown, now)?;
            Ok((r, None))
        }
    }
}

/// Records `event` as a touchpoint of the record's customer through the one ingestion
/// pipeline, with the receipt's request id and the outbound id in its properties.
pub fn record_touchpoint(
    ids: &PublicIds,
    w: &mut WorkspaceTxn<'_, '_>,
    r: &OutboundRecord,
    event: &str,
    extra: Value,
    now: OffsetDateTime,
) -> Result<Option<StreamMessage>> {
    let mut properties = serde_json::Map::new();
    properties.insert("request_id".into(), json!(r.request_id));
    properties.insert("outbound_id".into(), json!(r.id));
    properties.insert("capability".into(), json!(r.capability));
    if let Some(id) = &r.provider_id {
        properties.insert("provider_id".into(), json!(id));
    }
    if let Value::Object(more) = extra {
        properties.extend(more);
    }
    let ev = MarketingEvent {
        event: Some(event.to_owned()),
        customer_id: Some(r.customer_id.clone()),
        channel: Some(r.kind.channel().to_owned()),
        properties: Some(properties),
        timestamp: Some(Value::String(clock::rfc3339(now))),
        ..MarketingEvent::default()
    }
    .validate(ids, now)?;
    let result = events::apply(ids, w, &ev, now)?;
    Ok(events::stream_message(&ev, &result))
}

/// The workspace's outbound records, newest first, optionally of one state and one customer.
pub async fn list(
    store: &Store,
    ws: WorkspaceId,
    state: Option<State>,
    customer_id: Option<String>,
) -> Result<Outbox> {
    let ids = store.ids();
    let mut records: Vec<OutboundRecord> = match (&customer_id, state) {
        (Some(c), _) => {
            // Records keep the customer id they were written with.
            let references = match ids.parse_customer(c) {
                Some(id) => ids.customer_references(id),
                None => vec![c.clone()],
            };
            let mut found = Vec::new();
            for reference in references {
                found.extend(
                    store
                        .find::<OutboundRecord>(ws, "customer", reference)
                        .await?,
                );
            }
            found
        }
        (None, Some(s)) => store.find(ws, "state", s.as_str()).await?,
        (None, None) => {
            store
                .scan(
                    ws,
                    RecordScan {
                        reverse: true,
                        limit: Some(MAX_LISTED),
                        ..RecordScan::default()
                    },
                )
                .await?
        }
    };
    records.retain(|r| state.is_none_or(|s| r.state == s));
    records.sort_by(|a, b| b.id.cmp(&a.id));
    records.truncate(MAX_LISTED);
    Ok(Outbox {
        items: records.iter().map(|r| OutboxItem::new(ids, r)).collect(),
    })
}
