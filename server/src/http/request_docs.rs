//! Schemas of request bodies that handlers read field by field (the lenient SPEC.md rules of
//! playbooks: unknown fields dropped, enum values outside their set ignored, bounds enforced),
//! for the OpenAPI document only. The handlers take `serde_json::Value` and apply
//! `svc_core::fields`; these types state exactly what those rules accept.

#![allow(dead_code)]

use serde_json::Value;
use utoipa::ToSchema;

use svc_domains::playbooks::{Buddy, Mode};

/// `POST /v1/playbooks`. Server-assigned fields (`id`, `createdAt`, `updatedAt`, `createdBy`)
/// and unknown fields are ignored.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlaybookCreate {
    /// 1 to 200 characters, not blank.
    #[schema(pattern = r"\S", max_length = 200)]
    name: String,
    /// `draft` (default), `active`, `paused` or `archived`; any other value is ignored.
    #[schema(value_type = Value, required = false)]
    status: Option<Value>,
    mode: Mode,
    buddy_id: Buddy,
    #[schema(nullable)]
    lead_source: Option<LeadSourceInput>,
    strategy: StrategyInput,
    #[schema(nullable)]
    adaptation: Option<AdaptationInput>,
}

#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeadSourceInput {
    /// `orange-slice`, `crm-segment`, `cio-segment` or `manual` (default); any other value is
    /// ignored.
    #[schema(value_type = Value, required = false)]
    kind: Option<Value>,
    #[schema(max_length = 1000, nullable)]
    query: Option<String>,
    #[schema(minimum = 1, maximum = 5000, nullable)]
    sample_size: Option<u32>,
}

#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StrategyInput {
    /// `pmf-research`, `gtm-execution` (default) or `hybrid`; any other value is ignored.
    #[schema(value_type = Value, required = false)]
    kind: Option<Value>,
    /// 1 to 2000 characters, not blank.
    #[schema(pattern = r"\S", max_length = 2000)]
    hypothesis: String,
    /// At most 12 tags of at most 60 characters (the item bound is in `openapi`'s patches).
    #[schema(max_items = 12, nullable)]
    channels: Option<Vec<String>>,
    #[schema(max_length = 500, nullable)]
    cadence: Option<String>,
    /// `reply_rate`, `meeting_booked`, `pipeline_arr` or `custom`; any other value is ignored.
    #[schema(value_type = Value, required = false)]
    success_metric: Option<Value>,
    #[schema(minimum = 0, nullable)]
    success_target: Option<f64>,
}

#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdaptationInput {
    #[schema(nullable)]
    enabled: Option<bool>,
    #[schema(minimum = 1, maximum = 10000, nullable)]
    min_sample_size: Option<u32>,
    #[schema(minimum = 1, maximum = 90, nullable)]
    pivot_window_days: Option<u32>,
    #[schema(minimum = 0, maximum = 20, nullable)]
    max_pivots_per_week: Option<u32>,
    /// A model name for this spec's pivots (at most 200 characters).
    #[schema(max_length = 200, nullable)]
    judge_model: Option<String>,
}

/// `PUT /v1/brand-context` (`svc_domains::brand::merge`): every field optional, `null` clears it,
/// unknown fields are dropped; over-long strings and wrongly typed values are 400.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrandUpdate {
    #[schema(max_length = 200, nullable)]
    business_name: Option<String>,
    #[schema(max_length = 300, nullable)]
    website: Option<String>,
    /// `saas`, `ecommerce`, `fintech`, `healthcare`, `education`, `media`, `marketplace`,
    /// `agency`, `devtools`, `consumer`, `hardware`, `nonprofit` or `other`; any other value is
    /// ignored (the old one stays).
    #[schema(value_type = Value, required = false)]
    industry: Option<Value>,
    /// Kept only while `industry` is `other`.
    #[schema(max_length = 120, nullable)]
    industry_other: Option<String>,
    #[schema(max_length = 2000, nullable)]
    description: Option<String>,
    #[schema(max_length = 1000, nullable)]
    audience: Option<String>,
    /// Dials merged key by key; numbers are rounded and clamped to 1-5, anything else ignored.
    #[schema(value_type = Option<Object>, nullable)]
    voice: Option<Value>,
    /// `privacy`, `terms`, `pricing`, `download`, merged key by key; a value that is not an
    /// http(s) URL of at most 300 characters is ignored.
    #[schema(value_type = Option<Object>, nullable)]
    links: Option<Value>,
    /// `auto-detect` stamps `enrichedAt`; anything else records `manual`.
    #[schema(value_type = Value, required = false)]
    enriched_source: Option<Value>,
}

/// `POST /mcp`: one JSON-RPC 2.0 message (a request, a notification or a response); MCP's
/// methods and their params are the MCP specification's (2025-06-18), read by rmcp.
#[derive(Debug, ToSchema)]
pub struct JsonRpcMessage {
    /// Always `2.0`; anything else is refused with JSON-RPC's -32600.
    #[schema(pattern = "^2\\.0$")]
    jsonrpc: String,
    /// A request's id (a string or an integer); absent on a notification.
    #[schema(value_type = Option<Value>)]
    id: Option<Value>,
    method: Option<String>,
    #[schema(value_type = Option<Object>)]
    params: Option<Value>,
    #[schema(value_type = Option<Value>)]
    result: Option<Value>,
    #[schema(value_type = Option<Object>)]
    error: Option<Value>,
}

/// JSON-RPC's own refusal of a body that is not one JSON-RPC 2.0 message: HTTP 400 with
/// `id: null` and a parse error (-32700) or an invalid request (-32600).
#[derive(Debug, ToSchema)]
pub struct JsonRpcRefusal {
    jsonrpc: String,
    #[schema(value_type = Option<Value>)]
    id: Option<Value>,
    error: JsonRpcError,
}

#[derive(Debug, ToSchema)]
pub struct JsonRpcError {
    /// -32700 (parse error) or -32600 (invalid request).
    code: i64,
    message: String,
    #[schema(value_type = Option<Value>)]
    data: Option<Value>,
}

/// The 400 of `POST /mcp`: the service's error body (an unsupported `MCP-Protocol-Version`) or
/// JSON-RPC's refusal of a body that is not one JSON-RPC 2.0 message.
#[derive(Debug, ToSchema)]
#[serde(untagged)]
pub enum McpRefusal {
    Error(super::error::ErrorBody),
    JsonRpc(JsonRpcRefusal),
}
