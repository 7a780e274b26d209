//! Segment's HTTP Tracking API on the one ingestion pipeline (docs/segment.md): source write
//! keys (`write_keys`), the mapping of Segment's Spec onto [`MarketingEvent`]s (`mapping`,
//! shared with the `segment` webhook platform), and Segment's identities beyond the identity
//! keys (`identity`: `anonymousId`, alias, group). No HTTP types: the adapter is
//! `http::routes::segment`.

pub mod identity;
pub mod links;
pub mod mapping;
pub mod write_keys;

use std::io::Read;

use serde::Serialize;
use serde_json::Value as Json;
use time::OffsetDateTime;

use super::direct::ingest_events;
use super::input::MarketingEvent;
use super::realtime::Realtime;
pub use links::{Group, Links};
use svc_core::error::{Code, Error, Result};
use svc_core::store::{Store, WorkspaceId};

/// Segment's limit on one call, and on each message of a batch.
pub const MAX_MESSAGE_BYTES: usize = 32 * 1024;
/// Segment's limit on a batch request (after decompression).
pub const MAX_BATCH_BYTES: usize = 500 * 1024;

/// One message of Segment's Spec, as the Tracking API reads it (documentation of the body;
/// the handler reads the JSON itself so that a bad message is reported, not fatal).
#[allow(dead_code)]
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SegmentMessage {
    /// `track`, `identify`, `page`, `screen`, `group` or `alias` (in a batch; the single-call
    /// routes know their type).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The workspace's own user id: the customer's external id. `userId` or `anonymousId` is
    /// required.
    pub user_id: Option<String>,
    /// The anonymous visitor's id: an identity of its own, linked by identify and alias.
    pub anonymous_id: Option<String>,
    /// track: the event name (required).
    pub event: Option<String>,
    /// page / screen: the page or screen name.
    pub name: Option<String>,
    pub category: Option<String>,
    /// group: the account/company id (required).
    pub group_id: Option<String>,
    /// alias: the earlier id (required).
    pub previous_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub properties: Option<serde_json::Map<String, Json>>,
    /// identify: customer traits (`email` and `phone` are identity keys); group: the
    /// company's traits.
    #[schema(value_type = Option<Object>)]
    pub traits: Option<serde_json::Map<String, Json>>,
    /// `campaign` (UTM), `userAgent`, `ip`, `locale`, `page`, `library`, `traits`, `channel`.
    #[schema(value_type = Option<Object>)]
    pub context: Option<serde_json::Map<String, Json>>,
    /// Client time of the event (an RFC 3339 date-time, as every timestamp); corrected for
    /// clock skew with `sentAt`.
    #[schema(format = DateTime)]
    pub timestamp: Option<String>,
    /// When the client sent the message (an RFC 3339 date-time).
    #[schema(format = DateTime)]
    pub sent_at: Option<String>,
    /// Deduplicates retries for 24 hours.
    pub message_id: Option<String>,
    /// The write key, when not sent as the HTTP Basic user name.
    pub write_key: Option<String>,
}

/// `batch` / `import`: messages of any type, at most 500 KB in all.
#[allow(dead_code)]
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SegmentBatch {
    pub batch: Vec<SegmentMessage>,
    /// When the client sent the batch: the clock-skew correction of messages without their
    /// own `sentAt` (an RFC 3339 date-time).
    #[schema(format = DateTime)]
    pub sent_at: Option<String>,
    /// Applies to the messages without a `context` of their own.
    #[schema(value_type = Option<Object>)]
    pub context: Option<serde_json::Map<String, Json>>,
    pub write_key: Option<String>,
}

/// The envelope of a batch as the handler checks it: the documented types of its own fields;
/// each message is checked on its own later (a bad one is reported, not fatal).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct BatchEnvelope {
    batch: Vec<Json>,
    sent_at: Option<String>,
    context: Option<serde_json::Map<String, Json>>,
    write_key: Option<String>,
}

/// A body whose documented fields have the wrong JSON type is 400 naming the field, as on
/// every other route: a single call against [`SegmentMessage`], a batch's envelope against
/// its own fields.
fn check_shape(call: Option<&str>, body: &Json) -> Result<()> {
    fn typed<T: serde::de::DeserializeOwned>(body: &Json) -> Result<()> {
        serde_path_to_error::deserialize::<_, T>(body)
            .map(|_| ())
            .map_err(|e| {
                let path = e.path().to_string();
                Error::invalid_input(format!("{path}: {}", e.into_inner()))
                    .with_details(serde_json::json!({ "field": path }))
            })
    }
    match call {
        Some(_) => typed::<SegmentMessage>(body),
        None => typed::<BatchEnvelope>(body),
    }
}

/// The body of a request: gunzipped when `gzip`, at most `limit` bytes, parsed as JSON.
/// Oversized and malformed bodies are 400, as Segment answers them.
pub fn decode_body(bytes: &[u8], gzip: bool, limit: usize) -> Result<Json> {
    let too_large = || {
        Error::invalid_input(format!("the body exceeds Segment's limit of {limit} bytes"))
            .with_details(serde_json::json!({ "limit_bytes": limit }))
    };
    let plain: std::borrow::Cow<'_, [u8]> = if gzip {
        let mut out = Vec::new();
        // One byte past the limit tells an oversized body from one exactly at it, without
        // inflating a compression bomb any further.
        flate2::read::GzDecoder::new(bytes)
            .take(limit as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| Error::invalid_input(format!("the gzip body is corrupt: {e}")))?;
        out.into()
    } else {
        bytes.into()
    };
    if plain.len() > limit {
        return Err(too_large());
    }
    serde_json::from_slice(&plain).map_err(|e| Error::new(Code::InvalidJson, e.to_string()))
}

/// The write key a body carries (`writeKey`), for clients that do not send HTTP Basic.
pub fn body_write_key(body: &Json) -> Option<&str> {
    body.get("writeKey")
        .and_then(Json::as_str)
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

/// Segment's answer to an accepted request, plus what became of each message.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Accepted {
    /// Always `true`: the request was accepted (Segment's answer).
    pub success: bool,
    /// Messages written, duplicates included.
    pub accepted: usize,
    /// Repeats of an earlier `messageId` within 24 hours: acknowledged, nothing written.
    pub duplicates: usize,
    /// Messages that were refused, with why; the others were kept.
    pub rejected: Vec<Rejected>,
}

/// One refused message of a batch.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Rejected {
    /// Position in `batch`.
    pub index: usize,
    #[serde(rename = "messageId")]
    pub message_id: Option<String>,
    /// The pipeline's error code, e.g. `invalid_input`, `invalid_timestamp`, `payload_too_large`.
    pub code: String,
    pub message: String,
}

/// The messages of a request: one call (the route names it) or `batch`, whose top-level
/// `context` applies to messages without their own.
fn messages(call: Option<&str>, body: &mut Json) -> Result<Vec<Json>> {
    if call.is_some() {
        return Ok(vec![body.clone()]);
    }
    let Some(obj) = body.as_object_mut() else {
        return Err(Error::invalid_input(
            "the body must be an object with batch",
        ));
    };
    let shared = obj.get("context").cloned();
    let Some(Json::Array(items)) = obj.remove("batch") else {
        return Err(
            Error::invalid_input("batch: an array of messages is required")
                .with_details(serde_json::json!({ "field": "batch" })),
        );
    };
    Ok(items
        .into_iter()
        .map(|mut m| {
            if let (Some(ctx), Some(o)) = (&shared, m.as_object_mut()) {
                o.entry("context").or_insert_with(|| ctx.clone());
            }
            m
        })
        .collect())
}

/// Ingests a Tracking API request: `call` for the single-call routes, `None` for
/// `batch`/`import`. A single call that fails is the request's error (400 / 413); a batch keeps
/// its valid messages and lists the others in `rejected`.
pub async fn receive(
    store: &Store,
    realtime: &Realtime,
    ws: WorkspaceId,
    call: Option<&str>,
    mut body: Json,
    received_at: OffsetDateTime,
) -> Result<Accepted> {
    check_shape(call, &body)?;
    let items = messages(call, &mut body)?;
    let batch_sent_at = mapping::given_timestamp(&body, "sentAt")?;
    let clock = mapping::Clock::Client {
        received_at,
        batch_sent_at: if call.is_some() { None } else { batch_sent_at },
    };
    let ids: Vec<Option<String>> = items
        .iter()
        .map(|m| m.get("messageId").and_then(Json::as_str).map(str::to_owned))
        .collect();
    let events: Vec<Result<MarketingEvent>> = items
        .iter()
        .map(|m| {
            let size = serde_json::to_vec(m).map(|v| v.len()).unwrap_or(usize::MAX);
            if size > MAX_MESSAGE_BYTES {
                return Err(Error::new(
                    Code::PayloadTooLarge,
                    format!(
                        "a message may be at most {MAX_MESSAGE_BYTES} bytes; this one is {size}"
                    ),
                ));
            }
            mapping::message(m, call, clock)
        })
        .collect();
    if call.is_some() {
        let event = events
            .into_iter()
            .next()
            .ok_or_else(|| Error::internal("a single call without its message"))??;
        let r = super::direct::ingest_one(store, realtime, ws, event).await?;
        return Ok(Accepted {
            success: true,
            accepted: 1,
            duplicates: usize::from(r.duplicate),
            rejected: Vec::new(),
        });
    }
    let response = ingest_events(store, realtime, ws, events).await?;
    let duplicates = response
        .results
        .iter()
        .filter(|r| r.result.as_ref().is_some_and(|r| r.duplicate))
        .count();
    let rejected = response
        .results
        .into_iter()
        .filter_map(|r| {
            let e = r.error?;
            Some(Rejected {
                index: r.index,
                message_id: ids.get(r.index).cloned().flatten(),
                code: e.code,
                message: e.message,
            })
        })
        .collect();
    Ok(Accepted {
        success: true,
        accepted: response.accepted,
        duplicates,
        rejected,
    })
}

#[cfg(test)]
mod tests;
