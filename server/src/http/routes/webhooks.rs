//! `/api/webhooks/{platform}` (including `generic`): agent key, legacy `dsk_` key or JWT.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::HeaderMap;

use crate::error::Error;
use crate::events::direct::{self, BatchResponse};
use crate::events::webhooks;
use crate::http::error::ErrorBody;
use crate::http::extract::{ApiJson, ApiPath, IngestAuth};
use crate::state::AppState;

/// A platform's webhook delivery, normalized into marketing events (`generic`: the
/// MarketingEvent shape `{type, action, customerId, properties}`, or `{events: [...]}`;
/// `stripe`, `shopify` (topic from `X-Shopify-Topic`), `hubspot`, `segment`, `customerio`: their
/// documented payloads) and ingested in order. Each event's result or error is listed.
#[utoipa::path(post, path = "/api/webhooks/{platform}", tag = "events",
    security(("api_key" = []), ("agent_key" = []), ("jwt" = [])),
    params(("platform" = String, Path, description = "generic, stripe, shopify, hubspot, segment or customerio")),
    request_body = Object, responses(
    (status = 200, body = BatchResponse),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 404, description = "unknown platform; `details.supported` lists the known ones", body = ErrorBody),
))]
pub async fn receive(
    State(state): State<AppState>,
    IngestAuth(principal): IngestAuth,
    ApiPath(platform): ApiPath<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<serde_json::Value>,
) -> Result<ApiJson<BatchResponse>, Error> {
    let headers: HashMap<String, String> = headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let events = webhooks::normalize(&platform, &headers, body)?;
    let response =
        direct::ingest_events(&state.store, &state.realtime, principal.workspace(), events).await?;
    Ok(ApiJson(response))
}
