//! One Segment message (Segment's Spec: `track`, `identify`, `page`, `screen`, `group`, `alias`)
//! as a [`MarketingEvent`]. The one mapping of the Tracking API routes and of the `segment`
//! webhook platform (docs/segment.md has the table).

use serde_json::{Map, Value as Json};
use time::OffsetDateTime;

use super::links::{Group, Links};
use crate::events::input::{parse_timestamp, MarketingEvent};
use crate::events::json_path::{first, text};
use crate::graph_api::values::json_object_to_properties;
use svc_core::error::{Error, Result};
use svc_core::plumbing::clock;

/// The calls of Segment's Spec.
pub const CALLS: &[&str] = &["track", "identify", "page", "screen", "group", "alias"];

/// Trait keys identity resolution owns (set through the event's identity fields instead).
const IDENTITY_TRAITS: &[&str] = &["email", "phone", "externalId", "external_id", "lastSeen"];

/// How the event time is found. Segment's Tracking API corrects the client's clock:
/// `timestamp = receivedAt - (sentAt - originalTimestamp)`. Messages that Segment itself
/// delivers (the webhook) carry an already corrected `timestamp` and are taken as they are.
#[derive(Clone, Copy, Debug)]
pub enum Clock {
    /// Received from a client: correct for its clock skew against `received_at`, with the
    /// batch's `sentAt` when the message has none of its own.
    Client {
        received_at: OffsetDateTime,
        batch_sent_at: Option<OffsetDateTime>,
    },
    /// Delivered by Segment: `timestamp` is already corrected.
    Corrected,
}

fn object(v: &Json, path: &[&str]) -> Option<Map<String, Json>> {
    let mut cur = v;
    for p in path {
        cur = cur.get(*p)?;
    }
    cur.as_object().cloned()
}

/// A timestamp field when it is a valid ISO-8601 string; anything else is `None` (the raw
/// value is still validated by the pipeline when it becomes the event time).
fn time_of(v: &Json, field: &str) -> Option<OffsetDateTime> {
    v.get(field)
        .and_then(Json::as_str)
        .and_then(|s| parse_timestamp(s).ok())
}

/// A timestamp field: absent or null, else an RFC 3339 date-time (400 `invalid_timestamp`
/// naming the field).
pub(super) fn given_timestamp(v: &Json, field: &str) -> Result<Option<OffsetDateTime>> {
    match v.get(field) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => svc_core::fields::timestamp(s, field).map(Some),
        Some(other) => Err(Error::new(
            svc_core::error::Code::InvalidTimestamp,
            format!("{field}: must be an RFC 3339 date-time string, not {other}"),
        )
        .with_details(serde_json::json!({ "field": field }))),
    }
}

/// The event time per [`Clock`]: corrected client time, the message's own `timestamp` (or
/// `originalTimestamp`), or none (the pipeline then uses the time of receipt).
fn event_time(m: &Json, clock: Clock) -> Option<Json> {
    let given = m
        .get("timestamp")
        .filter(|t| !t.is_null())
        .or_else(|| m.get("originalTimestamp").filter(|t| !t.is_null()));
    match clock {
        Clock::Corrected => given.cloned(),
        Clock::Client {
            received_at,
            batch_sent_at,
        } => {
            let original = time_of(m, "timestamp").or_else(|| time_of(m, "originalTimestamp"));
            let sent = time_of(m, "sentAt").or(batch_sent_at);
            match (original, sent) {
                (Some(original), Some(sent)) => {
                    // Saturates: a wild client clock must not overflow the arithmetic.
                    let skew = sent - original;
                    let corrected = received_at.checked_sub(skew).unwrap_or(received_at);
                    Some(Json::String(clock::rfc3339(corrected)))
                }
                // An unparsable timestamp is refused by the pipeline (`invalid_timestamp`).
                _ => given.cloned(),
            }
        }
    }
}

/// Context fields that land on the touchpoint: UTM campaign, user agent, IP, locale, page,
/// library. Names are Segment's; UTM fields keep their `utm_` names.
fn context_properties(m: &Json, props: &mut Map<String, Json>) {
    let Some(ctx) = m.get("context") else { return };
    for (field, key) in [
        ("source", "utm_source"),
        ("medium", "utm_medium"),
        ("name", "utm_campaign"),
        ("term", "utm_term"),
        ("content", "utm_content"),
    ] {
        if let Some(v) = text(ctx, &["campaign", field]) {
            props.entry(key).or_insert(Json::String(v));
        }
    }
    for (path, key) in [
        (&["userAgent"][..], "userAgent"),
        (&["ip"][..], "ip"),
        (&["locale"][..], "locale"),
        (&["page", "url"][..], "url"),
        (&["page", "referrer"][..], "referrer"),
    ] {
        if let Some(v) = text(ctx, path) {
            props.entry(key).or_insert(Json::String(v));
        }
    }
    if let Some(name) = text(ctx, &["library", "name"]) {
        let lib = match text(ctx, &["library", "version"]) {
            Some(v) => format!("{name}/{v}"),
            None => name,
        };
        props.entry("library").or_insert(Json::String(lib));
    }
}

/// Maps one message. `call` is the route's call (`/v1/track` is a track whatever `type` says);
/// `None` reads `type` (batch items and webhook deliveries).
pub fn message(m: &Json, call: Option<&str>, clock: Clock) -> Result<MarketingEvent> {
    if !m.is_object() {
        return Err(Error::invalid_input(
            "segment: each message must be an object",
        ));
    }
    let kind = match call {
        Some(c) => c.to_owned(),
        None => text(m, &["type"])
            .ok_or_else(|| Error::invalid_input("segment: message without type"))?,
    };
    if !CALLS.contains(&kind.as_str()) {
        return Err(Error::invalid_field(
            "type",
            &kind,
            "must be track, identify, page, screen, group or alias",
        ));
    }
    // `timestamp` is checked when it becomes the event time; `sentAt` only corrects it, but a
    // value that is not a date-time is refused all the same (`format: date-time`).
    given_timestamp(m, "sentAt")?;
    let user_id = text(m, &["userId"]);
    let anonymous_id = text(m, &["anonymousId"]);
    if user_id.is_none() && anonymous_id.is_none() {
        return Err(Error::invalid_input(
            "segment: userId or anonymousId is required",
        ));
    }
    let email = first(
        m,
        &[
            &["traits", "email"],
            &["context", "traits", "email"],
            &["properties", "email"],
        ],
    );
    let phone = first(m, &[&["traits", "phone"], &["context", "traits", "phone"]]);
    let event = match kind.as_str() {
        "track" => Some(
            text(m, &["event"])
                .ok_or_else(|| Error::invalid_input("segment: a track call needs event"))?,
        ),
        "page" | "screen" => Some(match text(m, &["name"]) {
            Some(name) => format!("{kind}:{name}"),
            None => kind.clone(),
        }),
        other => Some(other.to_owned()),
    };
    let mut properties = object(m, &["properties"]).unwrap_or_default();
    if matches!(kind.as_str(), "page" | "screen") {
        for field in ["name", "category"] {
            if let Some(v) = text(m, &[field]) {
                properties.entry(field).or_insert(Json::String(v));
            }
        }
    }
    context_properties(m, &mut properties);
    if let Some(a) = &anonymous_id {
        properties
            .entry("anonymousId")
            .or_insert(Json::String(a.clone()));
    }
    let mut links = Links {
        anonymous_id,
        link_anonymous: matches!(kind.as_str(), "identify" | "alias"),
        ..Links::default()
    };
    let mut traits = Map::new();
    match kind.as_str() {
        "identify" => {
            traits = object(m, &["traits"])
                .or_else(|| object(m, &["context", "traits"]))
                .unwrap_or_default();
        }
        "group" => {
            let group_id = text(m, &["groupId"])
                .ok_or_else(|| Error::invalid_input("segment: a group call needs groupId"))?;
            properties
                .entry("groupId")
                .or_insert(Json::String(group_id.clone()));
            links.group = Some(Group {
                group_id,
                traits: json_object_to_properties(object(m, &["traits"]).unwrap_or_default()),
            });
        }
        "alias" => {
            let previous = text(m, &["previousId"])
                .ok_or_else(|| Error::invalid_input("segment: an alias call needs previousId"))?;
            properties
                .entry("previousId")
                .or_insert(Json::String(previous.clone()));
            links.previous_id = Some(previous);
        }
        _ => {}
    }
    for reserved in IDENTITY_TRAITS {
        traits.remove(*reserved);
    }
    Ok(MarketingEvent {
        event,
        email,
        phone,
        external_id: user_id,
        channel: Some(
            first(m, &[&["channel"], &["context", "channel"]])
                .unwrap_or_else(|| "segment".to_owned()),
        ),
        campaign_id: text(m, &["context", "campaign", "name"]),
        timestamp: event_time(m, clock),
        message_id: text(m, &["messageId"]).map(|id| format!("segment:{id}")),
        properties: (!properties.is_empty()).then_some(properties),
        traits: (!traits.is_empty()).then_some(traits),
        links: Some(links),
        ..MarketingEvent::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(s: &str) -> OffsetDateTime {
        parse_timestamp(s).expect("time")
    }

    #[test]
    fn track_with_context_lands_on_the_touchpoint() {
        let e = message(
            &json!({"type": "track", "event": "Order Completed", "userId": "u1",
                    "anonymousId": "a1", "messageId": "m1", "properties": {"revenue": 10},
                    "channel": "server",
                    "context": {"campaign": {"name": "spring", "source": "google", "medium": "cpc"},
                                "userAgent": "UA/1", "library": {"name": "analytics-python", "version": "2.4.0"}}}),
            None,
            Clock::Corrected,
        )
        .expect("track");
        assert_eq!(e.event.as_deref(), Some("Order Completed"));
        assert_eq!(e.external_id.as_deref(), Some("u1"));
        assert_eq!(e.message_id.as_deref(), Some("segment:m1"));
        assert_eq!(e.campaign_id.as_deref(), Some("spring"));
        assert_eq!(e.channel.as_deref(), Some("server"));
        let p = e.properties.expect("props");
        assert_eq!(p["utm_source"], json!("google"));
        assert_eq!(p["utm_campaign"], json!("spring"));
        assert_eq!(p["userAgent"], json!("UA/1"));
        assert_eq!(p["library"], json!("analytics-python/2.4.0"));
        assert_eq!(p["revenue"], json!(10));
        let links = e.links.expect("links");
        assert_eq!(links.anonymous_id.as_deref(), Some("a1"));
        assert!(!links.link_anonymous, "track does not link");
    }

    #[test]
    fn identify_traits_feed_identity_and_the_rest_are_traits() {
        let e = message(
            &json!({"userId": "u1", "anonymousId": "a1",
                    "traits": {"email": "S@x.io", "phone": "+15550001234", "name": "Sam", "plan": "pro"}}),
            Some("identify"),
            Clock::Corrected,
        )
        .expect("identify");
        assert_eq!(e.event.as_deref(), Some("identify"));
        assert_eq!(e.email.as_deref(), Some("S@x.io"));
        assert_eq!(e.phone.as_deref(), Some("+15550001234"));
        assert_eq!(
            e.traits,
            json!({"name": "Sam", "plan": "pro"}).as_object().cloned()
        );
        assert!(e.links.expect("links").link_anonymous);
    }

    #[test]
    fn page_screen_group_alias() {
        let p = message(
            &json!({"type": "page", "anonymousId": "a1", "name": "Pricing", "category": "Docs",
                    "properties": {"path": "/pricing"}}),
            None,
            Clock::Corrected,
        )
        .expect("page");
        assert_eq!(p.event.as_deref(), Some("page:Pricing"));
        let props = p.properties.expect("props");
        assert_eq!(props["name"], json!("Pricing"));
        assert_eq!(props["category"], json!("Docs"));
        assert_eq!(props["anonymousId"], json!("a1"));
        assert_eq!(p.external_id, None);
        let s = message(
            &json!({"type": "screen", "userId": "u"}),
            None,
            Clock::Corrected,
        )
        .expect("screen");
        assert_eq!(s.event.as_deref(), Some("screen"));
        let g = message(
            &json!({"type": "group", "userId": "u", "groupId": "acme", "traits": {"name": "Acme", "employees": 20}}),
            None,
            Clock::Corrected,
        )
        .expect("group");
        let group = g.links.expect("links").group.expect("group");
        assert_eq!(group.group_id, "acme");
        assert_eq!(
            group.traits.get("name"),
            Some(&svc_engine::Value::from("Acme"))
        );
        let a = message(
            &json!({"type": "alias", "userId": "u2", "previousId": "a9"}),
            None,
            Clock::Corrected,
        )
        .expect("alias");
        let links = a.links.expect("links");
        assert_eq!(links.previous_id.as_deref(), Some("a9"));
        assert!(links.link_anonymous);
    }

    #[test]
    fn malformed_messages_are_refused() {
        for (bad, call) in [
            (json!({"type": "track", "userId": "u"}), None),
            (json!({"type": "track", "event": "x"}), None),
            (json!({"type": "group", "userId": "u"}), None),
            (json!({"type": "alias", "userId": "u"}), None),
            (json!({"type": "bogus", "userId": "u"}), None),
            (json!({"userId": "u"}), None),
            (json!([1]), Some("track")),
        ] {
            assert!(message(&bad, call, Clock::Corrected).is_err(), "{bad}");
        }
    }

    #[test]
    fn client_clock_skew_is_corrected_like_segment() {
        // The client's clock is 1 hour fast: it stamped the event 10 s before sending.
        let received = at("2026-01-02T10:00:00Z");
        let m = json!({"type": "track", "event": "e", "userId": "u",
                       "timestamp": "2026-01-02T10:59:50Z"});
        let clock = Clock::Client {
            received_at: received,
            batch_sent_at: Some(at("2026-01-02T11:00:00Z")),
        };
        let e = message(&m, None, clock).expect("track");
        assert_eq!(e.timestamp, Some(json!("2026-01-02T09:59:50.000Z")));
        // A message's own sentAt wins over the batch's.
        let mut own = m.clone();
        own["sentAt"] = json!("2026-01-02T10:59:55Z");
        let e = message(&own, None, clock).expect("track");
        assert_eq!(e.timestamp, Some(json!("2026-01-02T09:59:55.000Z")));
        // Without sentAt the timestamp is taken as given; Segment-delivered ones too.
        let no_sent = Clock::Client {
            received_at: received,
            batch_sent_at: None,
        };
        assert_eq!(
            message(&m, None, no_sent).expect("t").timestamp,
            Some(json!("2026-01-02T10:59:50Z"))
        );
        assert_eq!(
            message(&m, None, Clock::Corrected).expect("t").timestamp,
            Some(json!("2026-01-02T10:59:50Z"))
        );
    }
}
