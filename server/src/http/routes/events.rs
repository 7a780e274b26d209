//! Direct event routes (`/api/v1/events/track`, `/identify`, batch `/api/v1/events`): agent
//! key, legacy `dsk_` key (X-API-Key) or JWT; all through the one ingestion pipeline.

use crate::http::error::ErrorResponse;
use axum::extract::State;

use crate::http::error::ErrorBody;
use crate::http::extract::{ApiJson, IngestAuth};
use crate::state::AppState;
use svc_domains::events::direct::{self, BatchBody, BatchResponse, IdentifyBody, TrackBody};
use svc_domains::events::IngestResult;

/// Record one customer action. `properties.timestamp` is the event time when the body has no
/// `timestamp`; a repeated `messageId` within 24 hours is acknowledged with `duplicate: true`.
#[utoipa::path(post, path = "/api/v1/events/track", tag = "events",
    request_body = TrackBody, responses(
    (status = 200, body = IngestResult),
    (status = 400, description = "invalid_input (event name or identity key missing) or invalid_timestamp", body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "read-only workspace", body = ErrorBody),
    (status = 413, description = "event larger than 32 KiB", body = ErrorBody),
    (status = 429, body = ErrorBody),
))]
pub async fn track(
    State(state): State<AppState>,
    IngestAuth(principal): IngestAuth,
    ApiJson(body): ApiJson<TrackBody>,
) -> Result<ApiJson<IngestResult>, ErrorResponse> {
    let result = direct::ingest_one(
        &state.store,
        &state.realtime,
        principal.workspace(),
        body.into_event(),
    )
    .await?;
    Ok(ApiJson(result))
}

/// Identify a customer: sets `name` and the `properties` as traits on the resolved (or new)
/// customer and records an `identify` touchpoint.
#[utoipa::path(post, path = "/api/v1/events/identify", tag = "events",
    request_body = IdentifyBody, responses(
    (status = 200, body = IngestResult),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
    (status = 413, body = ErrorBody),
    (status = 429, body = ErrorBody),
))]
pub async fn identify(
    State(state): State<AppState>,
    IngestAuth(principal): IngestAuth,
    ApiJson(body): ApiJson<IdentifyBody>,
) -> Result<ApiJson<IngestResult>, ErrorResponse> {
    let result = direct::ingest_one(
        &state.store,
        &state.realtime,
        principal.workspace(),
        body.into_event(),
    )
    .await?;
    Ok(ApiJson(result))
}

/// Up to 500 `track` / `identify` items, processed in order with identity resolution on each.
/// Always 200 when the request itself is valid: each item has its result or its error, in
/// request order, and a bad item never blocks the others.
#[utoipa::path(post, path = "/api/v1/events", tag = "events",
    request_body = BatchBody, responses(
    (status = 200, body = BatchResponse),
    (status = 400, description = "not a batch, or more than 500 items", body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 413, body = ErrorBody),
    (status = 429, body = ErrorBody),
))]
pub async fn batch(
    State(state): State<AppState>,
    IngestAuth(principal): IngestAuth,
    ApiJson(body): ApiJson<BatchBody>,
) -> Result<ApiJson<BatchResponse>, ErrorResponse> {
    let response =
        direct::ingest_batch(&state.store, &state.realtime, principal.workspace(), body).await?;
    Ok(ApiJson(response))
}
