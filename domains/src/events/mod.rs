//! The one ingestion pipeline (SPEC.md "Events"; DESIGN.md §4).
//!
//! Every entry point (the `events.ingest` capability, the direct event routes, the batch route
//! and the webhooks) turns its input into a [`MarketingEvent`] and passes it through the same
//! steps: [`MarketingEvent::validate`] (shape, identity keys, timestamp, size) gives a
//! [`ValidEvent`]; [`apply`] resolves identity and writes the customer, touchpoint, edges,
//! campaign and the message-id dedupe record inside the caller's write transaction, so a caller
//! (the gateway) can commit its own rows in the same atomic batch; [`announce`] broadcasts the
//! committed result on the workspace's real-time channel. [`ingest`] and [`ingest_many`] run
//! those steps in a write of their own.
//!
//! No HTTP types here: adapters live in `http::routes`.

pub mod activity;
pub mod apply;
pub mod direct;
pub mod input;
mod json_path;
pub mod realtime;
mod refusal;
pub mod seen;
pub mod segment;
pub mod signatures;
pub mod stream_tickets;
pub mod webhook_secrets;
pub mod webhooks;

pub use crate::graph_api::values::{json_object_to_properties, json_to_value, value_to_json};
pub use apply::{announce, apply, ingest, ingest_many, stream_message};
pub use input::{
    micros, parse_timestamp, IngestResult, MarketingEvent, ValidEvent, DEDUPE_WINDOW_SECS,
    MAX_EVENT_BYTES, MAX_MESSAGE_ID_CHARS,
};
pub use realtime::{Realtime, StreamMessage};
pub use seen::{purge_seen_messages, SeenMessage};
pub use svc_core::plumbing::clock::micros_rfc3339;

#[cfg(test)]
mod tests;
