//! The direct event routes' bodies (`/api/v1/events/track`, `/identify`, the batch route) and
//! their translation into [`MarketingEvent`]s. No HTTP types: the adapters in
//! `http::routes::events` only extract and call these.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};
use time::OffsetDateTime;

use super::apply::{ingest, ingest_many};
use super::input::{IngestResult, MarketingEvent, ValidEvent};
use super::realtime::Realtime;
use svc_core::error::{Error, Result};
use svc_core::store::{Store, WorkspaceId};

/// Most events in one batch request (DESIGN.md §4).
pub const MAX_BATCH: usize = 500;

/// The event name an identify call records on the customer's timeline.
pub const IDENTIFY_EVENT: &str = "identify";

/// `POST /api/v1/events/track`: one action of a customer.
#[derive(Clone, Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct TrackBody {
    /// Event name. `event` is accepted as an alias.
    #[serde(default)]
    pub action: Option<String>,
    #[serde(default)]
    pub event: Option<String>,
    /// Canonical customer id (`cus_...`); any other value is read as an external id.
    #[serde(default, rename = "customerId")]
    pub customer_id: Option<String>,
    /// A customer id, email, E.164 phone or external id.
    #[serde(default)]
    pub customer: Option<String>,
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default)]
    pub phone: Option<String>,
    #[serde(default, rename = "externalId", alias = "external_id")]
    pub external_id: Option<String>,
    #[serde(default, rename = "campaignId")]
    pub campaign_id: Option<String>,
    #[serde(default)]
    pub channel: Option<String>,
    /// Touchpoint properties; a `timestamp` here is the event time unless the body has one.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub properties: Option<Map<String, Json>>,
    /// The event time: an RFC 3339 date-time (a string in any other form is 400
    /// `invalid_timestamp`); the time of receipt when absent.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub timestamp: Option<Json>,
    /// Dedupe key: a repeat within 24 hours writes nothing.
    #[serde(default, rename = "messageId")]
    pub message_id: Option<String>,
}

/// `POST /api/v1/events/identify`: who a customer is. Sets `name` and the `properties`
/// (traits) on the customer and records an `identify` touchpoint.
#[derive(Clone, Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct IdentifyBody {
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub phone: Option<String>,
    #[serde(default, rename = "externalId", alias = "external_id")]
    pub external_id: Option<String>,
    #[serde(default, rename = "customerId")]
    pub customer_id: Option<String>,
    /// Customer traits; `null` removes one. `traits` (Segment's name) is accepted as an
    /// alias; a body with both is refused.
    #[serde(default, alias = "traits")]
    #[schema(value_type = Option<Object>)]
    pub properties: Option<Map<String, Json>>,
    #[serde(default, rename = "campaignId")]
    pub campaign_id: Option<String>,
    #[serde(default)]
    pub channel: Option<String>,
    /// As in track: an RFC 3339 date-time.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub timestamp: Option<Json>,
    #[serde(default, rename = "messageId")]
    pub message_id: Option<String>,
}

/// `POST /api/v1/events`: `{events: [{type: "track" | "identify", ...}]}`.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
pub struct BatchBody {
    /// At most 500 items; each is checked on its own.
    #[schema(value_type = Vec<Object>)]
    pub events: Vec<Json>,
}

/// One item's outcome, in request order.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct BatchItem {
    pub index: usize,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<IngestResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ItemError>,
}

/// Why one item failed (the error body's fields without the request id).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct ItemError {
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub details: Option<Json>,
}

/// The batch response: per-item outcomes plus counts.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct BatchResponse {
    pub accepted: usize,
    pub failed: usize,
    pub results: Vec<BatchItem>,
}

impl From<Error> for ItemError {
    fn from(e: Error) -> Self {
        ItemError {
            code: e.code.as_str().to_owned(),
            message: e.message,
            details: e.details,
        }
    }
}

impl TrackBody {
    pub fn into_event(self) -> MarketingEvent {
        let mut properties = self.properties;
        let mut timestamp = self.timestamp.filter(|t| !t.is_null());
        if timestamp.is_none() {
            timestamp = properties.as_mut().and_then(|p| p.remove("timestamp"));
        }
        MarketingEvent {
            event: self.action.or(self.event),
            customer: self.customer,
            customer_id: self.customer_id,
            email: self.email,
            phone: self.phone,
            external_id: self.external_id,
            properties,
            channel: self.channel,
            campaign_id: self.campaign_id,
            timestamp,
            message_id: self.message_id,
            ..MarketingEvent::default()
        }
    }
}

impl IdentifyBody {
    pub fn into_event(self) -> MarketingEvent {
        let mut traits = self.properties.unwrap_or_default();
        if let Some(name) = self.name {
            traits.insert("name".to_owned(), Json::String(name));
        }
        MarketingEvent {
            event: Some(IDENTIFY_EVENT.to_owned()),
            customer_id: self.customer_id,
            email: self.email,
            phone: self.phone,
            external_id: self.external_id,
            traits: (!traits.is_empty()).then_some(traits),
            channel: self.channel,
            campaign_id: self.campaign_id,
            timestamp: self.timestamp,
            message_id: self.message_id,
            ..MarketingEvent::default()
        }
    }
}

/// Reads one batch item: its `type` picks the body shape.
pub fn batch_item_event(item: Json) -> Result<MarketingEvent> {
    let Json::Object(mut fields) = item else {
        return Err(Error::invalid_input("each batch item must be an object"));
    };
    let kind = match fields.remove("type") {
        Some(Json::String(t)) => t,
        _ => {
            return Err(Error::invalid_input(
                "type: each batch item needs \"type\": \"track\" or \"identify\"",
            ))
        }
    };
    let body = Json::Object(fields);
    match kind.as_str() {
        "track" => serde_json::from_value::<TrackBody>(body)
            .map(TrackBody::into_event)
            .map_err(|e| Error::invalid_input(format!("track item: {e}"))),
        "identify" => serde_json::from_value::<IdentifyBody>(body)
            .map(IdentifyBody::into_event)
            .map_err(|e| Error::invalid_input(format!("identify item: {e}"))),
        other => Err(Error::invalid_field(
            "type",
            other,
            "must be \"track\" or \"identify\"",
        )),
    }
}

/// Validates and ingests one event.
pub async fn ingest_one(
    store: &Store,
    realtime: &Realtime,
    ws: WorkspaceId,
    event: MarketingEvent,
) -> Result<IngestResult> {
    let ev = event.validate(store.ids(), svc_core::plumbing::clock::now())?;
    ingest(store, realtime, ws, ev).await
}

/// The batch route: at most [`MAX_BATCH`] items, processed in order in one durable write;
/// every item gets its own result or error.
pub async fn ingest_batch(
    store: &Store,
    realtime: &Realtime,
    ws: WorkspaceId,
    body: BatchBody,
) -> Result<BatchResponse> {
    if body.events.len() > MAX_BATCH {
        return Err(Error::invalid_input(format!(
            "events: at most {MAX_BATCH} events per batch, got {}",
            body.events.len()
        ))
        .with_details(serde_json::json!({ "field": "events", "max": MAX_BATCH })));
    }
    let events = body.events.into_iter().map(batch_item_event).collect();
    ingest_events(store, realtime, ws, events).await
}

/// Validates and ingests events in order in one durable write; every item gets its own result
/// or error (shared by the batch route and the webhooks).
pub async fn ingest_events(
    store: &Store,
    realtime: &Realtime,
    ws: WorkspaceId,
    events: Vec<Result<MarketingEvent>>,
) -> Result<BatchResponse> {
    let now: OffsetDateTime = svc_core::plumbing::clock::now();
    let items: Vec<Result<ValidEvent>> = events
        .into_iter()
        .map(|item| item.and_then(|e| e.validate(store.ids(), now)))
        .collect();
    let outcomes = ingest_many(store, realtime, ws, items).await?;
    let results: Vec<BatchItem> = outcomes
        .into_iter()
        .enumerate()
        .map(|(index, outcome)| match outcome {
            Ok(r) => BatchItem {
                index,
                ok: true,
                result: Some(r),
                error: None,
            },
            Err(e) => BatchItem {
                index,
                ok: false,
                result: None,
                error: Some(ItemError::from(e)),
            },
        })
        .collect();
    let accepted = results.iter().filter(|r| r.ok).count();
    Ok(BatchResponse {
        accepted,
        failed: results.len() - accepted,
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn track_takes_the_timestamp_from_properties() {
        let body: TrackBody = serde_json::from_value(json!({
            "action": "page_viewed", "customerId": "u-1",
            "properties": {"timestamp": "2026-01-02T03:04:05Z", "path": "/"}
        }))
        .expect("body");
        let ev = body.into_event();
        assert_eq!(ev.timestamp, Some(json!("2026-01-02T03:04:05Z")));
        assert_eq!(ev.properties, json!({"path": "/"}).as_object().cloned());
        assert_eq!(ev.event.as_deref(), Some("page_viewed"));
    }

    #[test]
    fn identify_sets_name_and_traits() {
        let body: IdentifyBody = serde_json::from_value(json!({
            "email": "a@x.io", "name": "Ada", "properties": {"plan": "pro"}
        }))
        .expect("body");
        let ev = body.into_event();
        assert_eq!(ev.event.as_deref(), Some(IDENTIFY_EVENT));
        assert_eq!(
            ev.traits,
            json!({"plan": "pro", "name": "Ada"}).as_object().cloned()
        );
    }

    #[test]
    fn identify_takes_segment_traits_but_not_both_names() {
        let body: IdentifyBody =
            serde_json::from_value(json!({"email": "a@x.io", "traits": {"plan": "pro"}}))
                .expect("body");
        assert_eq!(
            body.into_event().traits,
            json!({"plan": "pro"}).as_object().cloned()
        );
        let both = json!({"email": "a@x.io", "traits": {"a": 1}, "properties": {"b": 2}});
        assert!(serde_json::from_value::<IdentifyBody>(both).is_err());
    }

    #[test]
    fn batch_items_need_a_known_type() {
        assert!(
            batch_item_event(json!({"type": "track", "action": "a", "email": "a@x.io"})).is_ok()
        );
        for bad in [json!({"action": "a"}), json!({"type": "page"}), json!(3)] {
            assert!(batch_item_event(bad.clone()).is_err(), "{bad}");
        }
    }
}
