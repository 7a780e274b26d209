//! What clients send ([`MarketingEvent`]), its validation into a [`ValidEvent`], and what
//! ingesting one did ([`IngestResult`]).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};
use svc_engine::{normalize_external_id, normalize_phone, EventInput, IdentityKeys, Properties};
use time::OffsetDateTime;

use svc_core::error::{Code, Error, Result};
use svc_core::plumbing::ids::PublicIds;

use super::segment::identity;
use super::segment::links::Links;
use crate::graph_api::values::json_object_to_properties;

/// Largest accepted event, as compact JSON (DESIGN.md §4).
pub const MAX_EVENT_BYTES: usize = 32 * 1024;
/// Longest accepted `messageId`.
pub const MAX_MESSAGE_ID_CHARS: usize = 255;
/// A repeated `messageId` within this window is a duplicate.
pub const DEDUPE_WINDOW_SECS: i64 = 24 * 60 * 60;
/// Longest event name, channel or campaign id (the engine's name limit).
const MAX_NAME_BYTES: usize = svc_engine::schema::MAX_NAME_BYTES;
/// Trait keys that identity resolution owns; they are set through the identity fields.
const RESERVED_TRAITS: &[&str] = &["email", "phone", "externalId", "external_id", "lastSeen"];

/// One marketing event as clients send it: the `events.ingest` input of SPEC.md plus the
/// optional `messageId` (dedupe key) and `traits` (customer properties, set by identify).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MarketingEvent {
    /// Stable event name. Required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// A customer id (`cus_...`), an email, an E.164 phone or an external id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customer: Option<String>,
    /// Canonical customer id (`cus_...`). Any other value is read as an external id.
    #[serde(
        default,
        rename = "customerId",
        skip_serializing_if = "Option::is_none"
    )]
    pub customer_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// Alias of `external_id`.
    #[serde(
        default,
        rename = "externalId",
        skip_serializing_if = "Option::is_none"
    )]
    pub external_id_alias: Option<String>,
    /// Free-form touchpoint properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub properties: Option<Map<String, Json>>,
    /// Customer properties to set (identify); `null` removes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub traits: Option<Map<String, Json>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Campaign to link (Campaign nodes are keyed by it).
    #[serde(
        default,
        rename = "campaignId",
        skip_serializing_if = "Option::is_none"
    )]
    pub campaign_id: Option<String>,
    /// ISO-8601 with a timezone; defaults to the time of receipt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub timestamp: Option<Json>,
    /// Client-chosen id; a repeat within 24 hours in the workspace is a duplicate.
    #[serde(default, rename = "messageId", skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Segment's identities beyond the identity keys (anonymousId, alias, group); set by the
    /// Segment mapping only (`segment::mapping`), never read from a client's JSON.
    #[serde(skip)]
    pub links: Option<Links>,
}

/// An event that passed validation, ready for [`apply`].
#[derive(Clone, Debug, PartialEq)]
pub struct ValidEvent {
    pub input: EventInput,
    pub message_id: Option<String>,
    /// Customer properties to set after resolution.
    pub traits: Properties,
    /// Segment's links, applied around identity resolution (`segment::identity`).
    pub links: Option<Links>,
}

impl ValidEvent {
    pub fn event_name(&self) -> &str {
        &self.input.action
    }
}

/// What ingesting one event did (the `events.ingest` result of SPEC.md, plus `duplicate`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct IngestResult {
    pub customer_id: String,
    pub touchpoint_id: String,
    /// The customer was created by this event.
    pub is_new: bool,
    /// Nodes created or changed (customer, touchpoint, campaign).
    pub nodes_mutated: u32,
    /// When the service received the event (for a duplicate: the original), RFC 3339 UTC.
    pub received_at: String,
    /// A repeat of an earlier `messageId` within 24 hours: acknowledged, nothing written.
    pub duplicate: bool,
}

impl MarketingEvent {
    /// Reads an event from arbitrary JSON (e.g. a capability input); shape errors are
    /// `invalid_input` naming the problem.
    pub fn from_json(value: Json) -> Result<MarketingEvent> {
        serde_json::from_value(value).map_err(|e| Error::invalid_input(format!("event: {e}")))
    }

    /// Checks the event and normalizes it for the engine. `now` is the default event time.
    pub fn validate(self, ids: &PublicIds, now: OffsetDateTime) -> Result<ValidEvent> {
        let size = serde_json::to_vec(&self)
            .map_err(|e| Error::internal(format!("encoding an event: {e}")))?
            .len();
        if size > MAX_EVENT_BYTES {
            return Err(Error::new(
                Code::PayloadTooLarge,
                format!("an event may be at most {MAX_EVENT_BYTES} bytes; this one is {size}"),
            ));
        }
        let action = name_field("event", self.event.as_deref())?.ok_or_else(|| {
            Error::invalid_input("event: the event name is required")
                .with_details(serde_json::json!({ "field": "event" }))
        })?;
        let channel = name_field("channel", self.channel.as_deref())?;
        let campaign_id = name_field("campaignId", self.campaign_id.as_deref())?;
        let message_id = match present(self.message_id.as_deref()) {
            None if self.message_id.is_some() => {
                return Err(Error::invalid_field("messageId", "", "must not be empty"))
            }
            None => None,
            Some(m) if m.chars().count() > MAX_MESSAGE_ID_CHARS => {
                return Err(Error::invalid_field(
                    "messageId",
                    m,
                    &format!("longer than {MAX_MESSAGE_ID_CHARS} characters"),
                ))
            }
            Some(m) => Some(m.to_owned()),
        };
        let ts = match &self.timestamp {
            None | Some(Json::Null) => micros(now)?,
            Some(Json::String(s)) => micros(parse_timestamp(s)?)?,
            Some(other) => {
                return Err(Error::new(
                    Code::InvalidTimestamp,
                    format!(
                    "timestamp must be an RFC 3339 date-time string with a timezone, not {other}"
                ),
                ))
            }
        };
        let anonymous = self
            .links
            .as_ref()
            .is_some_and(|l| l.anonymous_id.is_some());
        let keys = if anonymous && self.names_nobody() {
            // Segment's anonymous visitor: `segment::identity` names the customer.
            IdentityKeys::default()
        } else {
            self.identity_keys(ids)?
        };
        if let Some(links) = &self.links {
            identity::validate(links)?;
        }
        let properties = json_object_to_properties(self.properties.unwrap_or_default());
        let traits = json_object_to_properties(self.traits.unwrap_or_default());
        if let Some(reserved) = RESERVED_TRAITS.iter().find(|k| traits.contains_key(**k)) {
            return Err(Error::invalid_field(
                &format!("traits.{reserved}"),
                reserved,
                "identity keys and lastSeen are set through the event's own fields",
            ));
        }
        Ok(ValidEvent {
            input: EventInput {
                keys,
                action: action.to_owned(),
                channel: channel.map(str::to_owned),
                ts,
                properties,
                campaign_id: campaign_id.map(str::to_owned),
                // Decided here once for every source (API, webhooks, Segment, outbound).
                outbound: super::activity::is_outbound(action),
            },
            message_id,
            traits,
            links: self.links,
        })
    }

    /// No identity field holds a usable value.
    fn names_nobody(&self) -> bool {
        [
            &self.customer,
            &self.customer_id,
            &self.email,
            &self.phone,
            &self.external_id,
            &self.external_id_alias,
        ]
        .iter()
        .all(|v| v.as_deref().and_then(normalize_external_id).is_none())
    }

    /// The identity keys, with `customer` read per DESIGN.md §4: a customer id (`cus_...`),
    /// else an email when it contains `@`, else an E.164 phone, else an external id. Explicit
    /// fields win over what `customer` would fill.
    fn identity_keys(&self, ids: &PublicIds) -> Result<IdentityKeys> {
        let customer_id = present(self.customer_id.as_deref());
        let email = present(self.email.as_deref());
        let phone = present(self.phone.as_deref());
        let external_id = present(self.external_id.as_deref());
        let external_alias = present(self.external_id_alias.as_deref());
        let customer = present(self.customer.as_deref());
        if [
            customer_id,
            email,
            phone,
            external_id,
            external_alias,
            customer,
        ]
        .iter()
        .all(Option::is_none)
        {
            return Err(Error::invalid_input(
                "at least one identity key is required: customer, customerId, email, phone, \
                 external_id or externalId",
            ));
        }
        if let (Some(a), Some(b)) = (external_id, external_alias) {
            if a != b {
                return Err(Error::invalid_field(
                    "externalId",
                    b,
                    "differs from external_id (they are aliases)",
                ));
            }
        }
        if let Some(e) = email {
            if normalize_external_id(e).is_some() && !e.contains('@') {
                return Err(Error::invalid_field("email", e, "not an email address"));
            }
        }
        if let Some(p) = phone {
            if normalize_external_id(p).is_some() && normalize_phone(p).is_none() {
                return Err(Error::invalid_field(
                    "phone",
                    p,
                    "not a phone number (E.164, or 7 to 15 digits)",
                ));
            }
        }
        let mut keys = IdentityKeys {
            customer_id: None,
            email: email.map(str::to_owned),
            phone: phone.map(str::to_owned),
            external_id: external_id.or(external_alias).map(str::to_owned),
        };
        if let Some(c) = customer_id {
            match ids.parse_customer(c) {
                Some(id) => keys.customer_id = Some(id),
                // One of ours in shape that names no customer (a decimal id on a store that
                // never had them, a forged one): answered like an unknown customer id.
                None if svc_core::plumbing::ids::is_customer_id_shaped(c) => {}
                // Not one of ours: the caller's own id for the customer.
                None => {
                    keys.external_id.get_or_insert_with(|| c.to_owned());
                }
            }
        }
        if let Some(c) = customer {
            if let Some(id) = ids.parse_customer(c) {
                keys.customer_id.get_or_insert(id);
                // An unknown customer id falls back to being an external id.
                keys.external_id.get_or_insert_with(|| c.to_owned());
            } else if c.contains('@') {
                keys.email.get_or_insert_with(|| c.to_owned());
            } else if c.starts_with('+') && normalize_phone(c).is_some() {
                keys.phone.get_or_insert_with(|| c.to_owned());
            } else {
                keys.external_id.get_or_insert_with(|| c.to_owned());
            }
        }
        if keys.customer_id.is_none() && keys.normalized().is_empty() {
            return Err(Error::invalid_input(
                "no usable identity key: values such as \"\", \"null\", \"anonymous\" or \"0\" \
                 never identify a customer",
            ));
        }
        Ok(keys)
    }
}

/// A trimmed, non-empty string field.
fn present(v: Option<&str>) -> Option<&str> {
    v.map(svc_core::fields::trim_blank)
        .filter(|s| !s.is_empty())
}

/// An optional name-like field: trimmed, empty means absent, at most the engine's name limit.
fn name_field<'a>(field: &str, v: Option<&'a str>) -> Result<Option<&'a str>> {
    match present(v) {
        Some(s) if s.len() > MAX_NAME_BYTES => Err(Error::invalid_field(
            field,
            s,
            &format!("longer than {MAX_NAME_BYTES} bytes"),
        )),
        other => Ok(other),
    }
}

/// A client timestamp: `svc_core::fields::timestamp`, the one parser of every route (an RFC
/// 3339 date-time, the document's `format: date-time`); anything else is `invalid_timestamp`.
pub fn parse_timestamp(s: &str) -> Result<OffsetDateTime> {
    svc_core::fields::timestamp(s, "timestamp")
}

/// Microseconds since the Unix epoch (the engine's time unit).
pub fn micros(t: OffsetDateTime) -> Result<i64> {
    i64::try_from(t.unix_timestamp_nanos() / 1000)
        .map_err(|_| Error::new(Code::InvalidTimestamp, "timestamp out of range"))
}
