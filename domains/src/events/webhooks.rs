//! Inbound webhooks: each platform's documented payload normalized into [`MarketingEvent`]s,
//! which then take the one ingestion pipeline (`direct::ingest_events`). No HTTP types: the
//! adapter passes the body and the (lower-cased) headers.
//!
//! External ids from a platform are namespaced (`stripe:cus_...`, `shopify:123`,
//! `hubspot:456`) so that ids of different systems never collide; Segment's `userId` and
//! Customer.io's `id` are the workspace's own user ids and are used as they are.

use std::collections::HashMap;

use serde_json::{json, Map, Value as Json};

use super::direct::{batch_item_event, BatchBody, MAX_BATCH};
use super::input::MarketingEvent;
use super::json_path::{first, text};
use super::segment::mapping::Clock;
use crate::pipeline::sources::HUBSPOT_DEAL_PLACEHOLDER as DEAL_PLACEHOLDER;
use svc_core::error::{Error, Result};

/// Platforms with a normalizer, plus `generic` (the MarketingEvent shape).
pub const PLATFORMS: &[&str] = &[
    "generic",
    "stripe",
    "shopify",
    "hubspot",
    "segment",
    "customerio",
];

/// `not_found` naming the supported platforms unless `platform` is one of them.
pub fn ensure_platform(platform: &str) -> Result<()> {
    if PLATFORMS.contains(&platform) {
        return Ok(());
    }
    // The unknown name is not echoed back (not-found answers never repeat the id).
    Err(Error::not_found("webhook platform").with_details(json!({ "supported": PLATFORMS })))
}

/// The events one webhook delivery carries, in order; each is validated on its own later.
pub fn normalize(
    platform: &str,
    headers: &HashMap<String, String>,
    body: Json,
) -> Result<Vec<Result<MarketingEvent>>> {
    ensure_platform(platform)?;
    let events = match platform {
        "generic" => generic(body),
        "stripe" => vec![stripe(&body)],
        "shopify" => vec![shopify(headers, &body)],
        "hubspot" => hubspot(body),
        "segment" => segment(body),
        "customerio" => vec![customerio(&body)],
        _ => {
            return Err(Error::internal(format!(
                "webhook platform {platform} has no normalizer"
            )))
        }
    };
    if events.len() > MAX_BATCH {
        return Err(Error::invalid_input(format!(
            "a webhook delivery may carry at most {MAX_BATCH} events"
        )));
    }
    Ok(events)
}

fn unix_to_rfc3339(secs: Option<i64>) -> Option<Json> {
    secs.map(|s| Json::String(svc_core::plumbing::clock::unix_rfc3339(s)))
}

fn props(pairs: &[(&str, Option<Json>)]) -> Option<Map<String, Json>> {
    let m: Map<String, Json> = pairs
        .iter()
        .filter_map(|(k, v)| v.clone().map(|v| ((*k).to_owned(), v)))
        .collect();
    (!m.is_empty()).then_some(m)
}

/// `{type?, action, customerId, properties, ...}`: a track (default) or identify item.
fn generic(body: Json) -> Vec<Result<MarketingEvent>> {
    let item = |mut v: Json| {
        if let Json::Object(m) = &mut v {
            m.entry("type").or_insert_with(|| Json::from("track"));
        }
        batch_item_event(v)
    };
    match body {
        Json::Object(mut m) if m.contains_key("events") => {
            match serde_json::from_value::<BatchBody>(Json::Object(std::mem::take(&mut m))) {
                Ok(b) => b.events.into_iter().map(item).collect(),
                Err(e) => vec![Err(Error::invalid_input(format!("events: {e}")))],
            }
        }
        other => vec![item(other)],
    }
}

/// A Stripe event object (`{id, type, created, data: {object}}`).
fn stripe(body: &Json) -> Result<MarketingEvent> {
    let kind = text(body, &["type"])
        .ok_or_else(|| Error::invalid_input("stripe: the event has no type"))?;
    let obj = body.pointer("/data/object").cloned().unwrap_or(Json::Null);
    let is_customer = text(&obj, &["object"]).as_deref() == Some("customer");
    let stripe_customer = if is_customer {
        text(&obj, &["id"])
    } else {
        text(&obj, &["customer"])
    };
    let email = first(
        &obj,
        &[
            &["email"],
            &["customer_email"],
            &["receipt_email"],
            &["customer_details", "email"],
            &["billing_details", "email"],
        ],
    );
    let phone = first(&obj, &[&["phone"], &["customer_details", "phone"]]);
    let amount = ["amount_total", "amount_paid", "amount"]
        .iter()
        .find_map(|k| obj.get(*k).filter(|v| v.is_number()).cloned())
        .or_else(|| subscription_amount(&obj));
    Ok(MarketingEvent {
        event: Some(format!("stripe.{kind}")),
        email,
        phone,
        external_id: stripe_customer.map(|c| format!("stripe:{c}")),
        channel: Some("stripe".to_owned()),
        timestamp: unix_to_rfc3339(body.get("created").and_then(Json::as_i64)),
        message_id: text(body, &["id"]).map(|id| format!("stripe:{id}")),
        properties: props(&[
            ("stripe_object", text(&obj, &["object"]).map(Json::from)),
            ("stripe_object_id", text(&obj, &["id"]).map(Json::from)),
            ("amount", amount),
            ("currency", text(&obj, &["currency"]).map(Json::from)),
            (
                "stripe_subscription",
                text(&obj, &["subscription"]).map(Json::from),
            ),
            ("stripe_status", text(&obj, &["status"]).map(Json::from)),
        ]),
        ..MarketingEvent::default()
    })
}

/// A subscription's amount per period in minor units: its items' `price.unit_amount` (else
/// `plan.amount`) times their quantity.
fn subscription_amount(obj: &Json) -> Option<Json> {
    let items = obj.pointer("/items/data")?.as_array()?;
    let mut total = 0i64;
    for item in items {
        let unit = item
            .pointer("/price/unit_amount")
            .or_else(|| item.pointer("/plan/amount"))
            .and_then(Json::as_i64)?;
        let quantity = item.get("quantity").and_then(Json::as_i64).unwrap_or(1);
        total = total.saturating_add(unit.saturating_mul(quantity));
    }
    (!items.is_empty()).then(|| Json::from(total))
}

/// A Shopify webhook: topic and delivery id in headers, the resource (order, customer, ...)
/// as the body.
fn shopify(headers: &HashMap<String, String>, body: &Json) -> Result<MarketingEvent> {
    let topic = headers
        .get("x-shopify-topic")
        .cloned()
        .ok_or_else(|| Error::invalid_input("shopify: missing X-Shopify-Topic header"))?;
    let is_customer = topic.starts_with("customers/");
    let customer_id = if is_customer {
        text(body, &["id"])
    } else {
        text(body, &["customer", "id"])
    };
    let products: Vec<Json> = body
        .get("line_items")
        .and_then(Json::as_array)
        .map(|items| {
            items
                .iter()
                .map(|li| {
                    json!({
                        "sku": text(li, &["sku"]),
                        "productId": text(li, &["product_id"]),
                        "title": text(li, &["title"]),
                        "quantity": li.get("quantity").cloned().unwrap_or(Json::Null),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(MarketingEvent {
        event: Some(format!("shopify.{topic}")),
        email: first(
            body,
            &[&["email"], &["contact_email"], &["customer", "email"]],
        ),
        phone: first(body, &[&["phone"], &["customer", "phone"]]),
        external_id: customer_id.map(|c| format!("shopify:{c}")),
        channel: Some("shopify".to_owned()),
        timestamp: first(body, &[&["created_at"], &["updated_at"]]).map(Json::from),
        message_id: headers
            .get("x-shopify-webhook-id")
            .map(|id| format!("shopify:{id}")),
        properties: props(&[
            ("shopify_id", text(body, &["id"]).map(Json::from)),
            ("total_price", text(body, &["total_price"]).map(Json::from)),
            ("currency", text(body, &["currency"]).map(Json::from)),
            (
                "products",
                (!products.is_empty()).then_some(Json::Array(products)),
            ),
        ]),
        ..MarketingEvent::default()
    })
}

/// HubSpot webhooks v3: an array of `{eventId, subscriptionType, objectId, occurredAt,
/// propertyName?, propertyValue?}`.
fn hubspot(body: Json) -> Vec<Result<MarketingEvent>> {
    let items = match body {
        Json::Array(items) => items,
        other => vec![other],
    };
    items
        .into_iter()
        .map(|e| {
            let kind = text(&e, &["subscriptionType"])
                .ok_or_else(|| Error::invalid_input("hubspot: event without subscriptionType"))?;
            let property = text(&e, &["propertyName"]);
            let value = text(&e, &["propertyValue"]);
            let email = (property.as_deref() == Some("email"))
                .then(|| value.clone())
                .flatten();
            let (contact, deal) = hubspot_subjects(&kind, &e)?;
            Ok(MarketingEvent {
                event: Some(format!("hubspot.{kind}")),
                email,
                external_id: Some(match (&contact, &deal) {
                    (Some(c), _) => format!("hubspot:{c}"),
                    // A deal event names no contact: a placeholder until the association
                    // arrives (or the deal's owner, once known; see pipeline::sources).
                    (None, Some(d)) => format!("{DEAL_PLACEHOLDER}{d}"),
                    (None, None) => {
                        return Err(Error::invalid_input("hubspot: event without objectId"))
                    }
                }),
                channel: Some("hubspot".to_owned()),
                timestamp: e.get("occurredAt").and_then(Json::as_i64).map(|ms| {
                    Json::from(svc_core::plumbing::clock::micros_rfc3339(
                        ms.saturating_mul(1000),
                    ))
                }),
                message_id: text(&e, &["eventId"]).map(|id| format!("hubspot:{id}")),
                properties: props(&[
                    ("portalId", text(&e, &["portalId"]).map(Json::from)),
                    ("propertyName", property.map(Json::from)),
                    ("propertyValue", value.map(Json::from)),
                    ("dealId", deal.map(Json::from)),
                ]),
                ..MarketingEvent::default()
            })
        })
        .collect()
}

/// The (contact, deal) ids a HubSpot event is about: `contact.*` events name a contact,
/// `deal.*` events a deal, and a deal-contact `associationChange` both (`fromObjectId` and
/// `toObjectId`, in the direction `associationType` says).
fn hubspot_subjects(kind: &str, e: &Json) -> Result<(Option<String>, Option<String>)> {
    let object = text(e, &["objectId"]);
    if kind == "deal.associationChange" || kind == "contact.associationChange" {
        let (from, to) = (text(e, &["fromObjectId"]), text(e, &["toObjectId"]));
        let (contact, deal) = match text(e, &["associationType"]).as_deref() {
            Some("DEAL_TO_CONTACT") => (to, from),
            Some("CONTACT_TO_DEAL") => (from, to),
            _ => (object, None),
        };
        if contact.is_none() {
            return Err(Error::invalid_input(
                "hubspot: an associationChange needs fromObjectId and toObjectId",
            ));
        }
        return Ok((contact, deal));
    }
    if kind.starts_with("deal.") {
        return Ok((None, object));
    }
    Ok((object, None))
}

/// Segment's spec: one message or `{batch: [...]}`, mapped by `segment::mapping` (the
/// timestamps Segment delivers are already corrected for clock skew).
fn segment(body: Json) -> Vec<Result<MarketingEvent>> {
    let items = match body {
        Json::Object(mut m) if m.contains_key("batch") => match m.remove("batch") {
            Some(Json::Array(items)) => items,
            _ => return vec![Err(Error::invalid_input("segment: batch must be an array"))],
        },
        other => vec![other],
    };
    items
        .into_iter()
        .map(|m| super::segment::mapping::message(&m, None, Clock::Corrected))
        .collect()
}

/// Customer.io reporting webhooks: `{event_id, object_type, metric, timestamp, data}`.
fn customerio(body: &Json) -> Result<MarketingEvent> {
    let metric =
        text(body, &["metric"]).ok_or_else(|| Error::invalid_input("customerio: no metric"))?;
    let object = text(body, &["object_type"]).unwrap_or_else(|| "event".to_owned());
    let data = body.get("data").cloned().unwrap_or(Json::Null);
    let cio_id = text(&data, &["identifiers", "cio_id"]);
    let mut traits = Map::new();
    if let Some(c) = &cio_id {
        traits.insert("cio_id".to_owned(), Json::from(c.clone()));
    }
    Ok(MarketingEvent {
        event: Some(format!("customerio.{object}.{metric}")),
        email: first(&data, &[&["identifiers", "email"], &["email_address"]]),
        external_id: first(&data, &[&["identifiers", "id"], &["customer_id"]]),
        channel: Some(object),
        campaign_id: first(&data, &[&["campaign_id"], &["broadcast_id"]]),
        timestamp: unix_to_rfc3339(body.get("timestamp").and_then(Json::as_i64)),
        message_id: text(body, &["event_id"]).map(|id| format!("customerio:{id}")),
        properties: props(&[
            ("delivery_id", text(&data, &["delivery_id"]).map(Json::from)),
            ("subject", text(&data, &["subject"]).map(Json::from)),
            ("href", text(&data, &["href"]).map(Json::from)),
        ]),
        traits: (!traits.is_empty()).then_some(traits),
        ..MarketingEvent::default()
    })
}

/// Prefix of per-workspace webhook tokens (for platforms that cannot send headers).
pub const TOKEN_PREFIX: &str = "whk_";

/// Default requests per minute of one workspace's webhook token (`Config::
/// webhook_token_rate_per_min`): twice an agent key's default, since platforms deliver in
/// bursts (bulk updates, retries after an outage) and a refused delivery is retried by them.
pub const TOKEN_RATE_PER_MIN: u32 = 1200;

/// The rate-limit bucket of a workspace's webhook token (never collides with a `key_` id).
pub fn token_rate_bucket(ws: svc_core::store::WorkspaceId) -> String {
    format!("webhook_token:{ws}")
}

/// Global lookup from a token's SHA-256 to its workspace; the plaintext is never stored.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct WebhookToken {
    digest: String,
    workspace: u64,
    created_at: String,
    created_by: String,
}

impl svc_core::store::Record for WebhookToken {
    const KIND: &'static str = "webhook_token";
    fn id(&self) -> String {
        self.digest.clone()
    }
}

/// The workspace's current token digest (so minting a new token revokes the old one).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct CurrentWebhookToken {
    digest: String,
}

impl svc_core::store::Record for CurrentWebhookToken {
    const KIND: &'static str = "webhook_token_current";
    fn id(&self) -> String {
        "current".to_owned()
    }
}

/// Mints the workspace's webhook token (`?token=` on `/api/webhooks/{platform}`); the previous
/// one stops working in the same commit. The plaintext is returned once.
pub async fn mint_token(
    store: &svc_core::store::Store,
    ws: svc_core::store::WorkspaceId,
    user_id: &str,
) -> Result<String> {
    use svc_core::store::WorkspaceId;
    let token = format!(
        "{TOKEN_PREFIX}{}",
        svc_core::plumbing::ids::random_base62(32)
    );
    let record = WebhookToken {
        digest: svc_core::keys::token::digest(&token),
        workspace: ws.0,
        created_at: svc_core::plumbing::clock::now_rfc3339(),
        created_by: user_id.to_owned(),
    };
    store
        .write(move |tx| {
            if let Some(old) = tx.get::<CurrentWebhookToken>(ws, "current")? {
                tx.delete::<WebhookToken>(WorkspaceId::GLOBAL, &old.digest)?;
            }
            tx.put(
                ws,
                &CurrentWebhookToken {
                    digest: record.digest.clone(),
                },
            )?;
            tx.put(WorkspaceId::GLOBAL, &record)
        })
        .await?;
    Ok(token)
}

/// The workspace a webhook token belongs to; `unauthenticated` for anything else.
pub async fn resolve_token(
    store: &svc_core::store::Store,
    token: &str,
) -> Result<svc_core::store::WorkspaceId> {
    let invalid = || Error::unauthenticated("invalid webhook token");
    if !token.starts_with(TOKEN_PREFIX) || token.len() != TOKEN_PREFIX.len() + 32 {
        return Err(invalid());
    }
    let digest = svc_core::keys::token::digest(token);
    store
        .get::<WebhookToken>(svc_core::store::WorkspaceId::GLOBAL, digest)
        .await?
        .map(|t| svc_core::store::WorkspaceId(t.workspace))
        .ok_or_else(invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(platform: &str, headers: &[(&str, &str)], body: Json) -> MarketingEvent {
        let h = headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let mut events = normalize(platform, &h, body).expect("platform");
        assert_eq!(events.len(), 1);
        events.remove(0).expect("event")
    }

    #[test]
    fn stripe_checkout_session() {
        let e = one(
            "stripe",
            &[],
            json!({"id": "evt_1", "object": "event", "type": "checkout.session.completed",
                   "created": 1_767_323_045,
                   "data": {"object": {"id": "cs_1", "object": "checkout.session",
                     "customer": "cus_Nf1", "customer_details": {"email": "a@x.io"},
                     "amount_total": 4200, "currency": "usd"}}}),
        );
        assert_eq!(
            e.event.as_deref(),
            Some("stripe.checkout.session.completed")
        );
        assert_eq!(e.email.as_deref(), Some("a@x.io"));
        assert_eq!(e.external_id.as_deref(), Some("stripe:cus_Nf1"));
        assert_eq!(e.message_id.as_deref(), Some("stripe:evt_1"));
        assert_eq!(e.timestamp, Some(json!("2026-01-02T03:04:05.000Z")));
        assert_eq!(e.properties.expect("props")["amount"], json!(4200));
    }

    #[test]
    fn shopify_order() {
        let e = one(
            "shopify",
            &[
                ("x-shopify-topic", "orders/create"),
                ("x-shopify-webhook-id", "w1"),
            ],
            json!({"id": 820982911946154508_u64, "email": "jon@example.com",
                   "created_at": "2026-01-02T10:00:00-05:00", "total_price": "199.00",
                   "currency": "USD", "customer": {"id": 115310627314723954_u64, "phone": "+16135551212"},
                   "line_items": [{"sku": "IPOD2008", "product_id": 632910392, "title": "IPod", "quantity": 1}]}),
        );
        assert_eq!(e.event.as_deref(), Some("shopify.orders/create"));
        assert_eq!(e.external_id.as_deref(), Some("shopify:115310627314723954"));
        assert_eq!(e.phone.as_deref(), Some("+16135551212"));
        assert_eq!(e.message_id.as_deref(), Some("shopify:w1"));
        assert_eq!(
            e.properties.expect("props")["products"][0]["sku"],
            json!("IPOD2008")
        );
        assert!(normalize("shopify", &HashMap::new(), json!({})).expect("ok")[0].is_err());
    }

    #[test]
    fn hubspot_batch() {
        let h = HashMap::new();
        let events = normalize(
            "hubspot",
            &h,
            json!([
                {"eventId": 1, "subscriptionType": "contact.creation", "portalId": 33,
                 "occurredAt": 1_767_323_045_000_i64, "objectId": 123},
                {"eventId": 2, "subscriptionType": "contact.propertyChange", "objectId": 123,
                 "propertyName": "email", "propertyValue": "h@x.io", "occurredAt": 1_767_323_046_000_i64},
                {"eventId": 3}
            ]),
        )
        .expect("platform");
        assert_eq!(events.len(), 3);
        let second = events[1].as_ref().expect("second");
        assert_eq!(second.email.as_deref(), Some("h@x.io"));
        assert_eq!(second.external_id.as_deref(), Some("hubspot:123"));
        assert_eq!(second.timestamp, Some(json!("2026-01-02T03:04:06.000Z")));
        assert!(events[2].is_err());
    }

    #[test]
    fn hubspot_deals_name_the_deal_and_their_contact() {
        let e = one(
            "hubspot",
            &[],
            json!([{"eventId": 7, "subscriptionType": "deal.propertyChange", "objectId": 9,
                    "propertyName": "dealstage", "propertyValue": "closedwon"}]),
        );
        assert_eq!(e.external_id.as_deref(), Some("hubspot:deal:9"));
        assert_eq!(e.properties.expect("props")["dealId"], json!("9"));
        for (kind, from, to) in [("DEAL_TO_CONTACT", 9, 501), ("CONTACT_TO_DEAL", 501, 9)] {
            let e = one(
                "hubspot",
                &[],
                json!([{"eventId": 8, "subscriptionType": "deal.associationChange",
                        "associationType": kind, "fromObjectId": from, "toObjectId": to}]),
            );
            assert_eq!(e.external_id.as_deref(), Some("hubspot:501"), "{kind}");
            assert_eq!(e.properties.expect("props")["dealId"], json!("9"));
        }
        let bad = normalize(
            "hubspot",
            &HashMap::new(),
            json!([{"subscriptionType": "deal.associationChange", "associationType": "DEAL_TO_CONTACT"}]),
        )
        .expect("platform");
        assert!(bad[0].is_err());
    }

    #[test]
    fn stripe_subscriptions_carry_status_and_amount() {
        let e = one(
            "stripe",
            &[],
            json!({"id": "evt_s", "type": "customer.subscription.created", "created": 1_767_400_000,
                   "data": {"object": {"id": "sub_1", "object": "subscription", "customer": "cus_1",
                     "status": "active", "currency": "eur",
                     "items": {"data": [{"price": {"unit_amount": 1500}, "quantity": 3}]}}}}),
        );
        let p = e.properties.expect("props");
        assert_eq!(
            (&p["amount"], &p["stripe_status"], &p["stripe_object_id"]),
            (&json!(4500), &json!("active"), &json!("sub_1"))
        );
    }

    #[test]
    fn segment_track_and_identify() {
        let h = HashMap::new();
        let events = normalize(
            "segment",
            &h,
            json!({"batch": [
                {"type": "identify", "userId": "u1", "messageId": "m1",
                 "traits": {"email": "s@x.io", "name": "Sam", "plan": "pro"},
                 "timestamp": "2026-01-02T03:04:05.000Z"},
                {"type": "track", "event": "Order Completed", "userId": "u1", "messageId": "m2",
                 "properties": {"revenue": 10}}
            ]}),
        )
        .expect("platform");
        let id = events[0].as_ref().expect("identify");
        assert_eq!(id.event.as_deref(), Some("identify"));
        assert_eq!(id.email.as_deref(), Some("s@x.io"));
        assert_eq!(
            id.traits,
            json!({"name": "Sam", "plan": "pro"}).as_object().cloned()
        );
        let tr = events[1].as_ref().expect("track");
        assert_eq!(tr.event.as_deref(), Some("Order Completed"));
        assert_eq!(tr.external_id.as_deref(), Some("u1"));
    }

    #[test]
    fn customerio_email_metric() {
        let e = one(
            "customerio",
            &[],
            json!({"event_id": "01E4C4CT6YDC7Y5M7FE1GWWPQJ", "object_type": "email",
                   "metric": "opened", "timestamp": 1_767_323_045,
                   "data": {"customer_id": "42", "identifiers": {"id": "42", "email": "c@x.io", "cio_id": "d9c106000001"},
                            "delivery_id": "RAECAAFwnUSneIa0ZXkmq8EdkAM==", "campaign_id": 23,
                            "subject": "Hello"}}),
        );
        assert_eq!(e.event.as_deref(), Some("customerio.email.opened"));
        assert_eq!(e.campaign_id.as_deref(), Some("23"));
        assert_eq!(
            e.traits,
            json!({"cio_id": "d9c106000001"}).as_object().cloned()
        );
        assert_eq!(e.email.as_deref(), Some("c@x.io"));
    }

    #[test]
    fn unknown_platform_names_the_supported_ones() {
        let err = normalize("myspace", &HashMap::new(), json!({})).expect_err("unknown");
        assert_eq!(err.code, svc_core::error::Code::NotFound);
        assert_eq!(err.details.expect("details")["supported"], json!(PLATFORMS));
    }
}
