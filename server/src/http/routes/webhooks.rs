//! `/api/webhooks/{platform}` (including `generic`): agent key, legacy `dsk_` key or JWT.

use std::collections::HashMap;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};

use crate::error::Error;
use crate::events::direct::{self, BatchResponse};
use crate::events::webhooks;
use crate::http::error::ErrorBody;
use crate::http::extract::{ApiJson, ApiPath, IngestAuth, JwtUser};
use crate::state::AppState;

/// A platform's webhook delivery, normalized into marketing events (`generic`: the
/// MarketingEvent shape `{type, action, customerId, properties}`, or `{events: [...]}`;
/// `stripe`, `shopify` (topic from `X-Shopify-Topic`), `hubspot`, `segment`, `customerio`: their
/// documented payloads) and ingested in order. Each event's result or error is listed.
#[utoipa::path(post, path = "/api/webhooks/{platform}", tag = "events",
    security(("api_key" = []), ("agent_key" = []), ("jwt" = [])),
    params(("platform" = String, Path, description = "generic, stripe, shopify, hubspot, segment or customerio"),
        ("token" = Option<String>, Query, description = "The workspace's webhook token, for senders that cannot set headers")),
    request_body = Object, responses(
    (status = 200, body = BatchResponse),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 404, description = "unknown platform; `details.supported` lists the known ones", body = ErrorBody),
))]
pub async fn receive(
    State(state): State<AppState>,
    auth: Result<IngestAuth, Error>,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
    ApiPath(platform): ApiPath<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<serde_json::Value>,
) -> Result<ApiJson<BatchResponse>, Error> {
    let Query(query) = query.map_err(|e| Error::invalid_input(e.body_text()))?;
    let ws = match (auth, query.get("token")) {
        (Ok(IngestAuth(principal)), _) => principal.workspace(),
        (Err(_), Some(token)) => webhooks::resolve_token(&state.store, token).await?,
        (Err(e), None) => return Err(e),
    };
    let headers: HashMap<String, String> = headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let events = webhooks::normalize(&platform, &headers, body)?;
    let response = direct::ingest_events(&state.store, &state.realtime, ws, events).await?;
    Ok(ApiJson(response))
}

/// The minted token, shown once.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct WebhookTokenView {
    /// `whk_...`: append `?token=<token>` to `/api/webhooks/{platform}`.
    pub token: String,
}

/// Mint the workspace's webhook token; the previous token stops working at once.
#[utoipa::path(post, path = "/api/v1/webhooks/token", tag = "events", security(("jwt" = [])), responses(
    (status = 201, body = WebhookTokenView),
    (status = 401, body = ErrorBody),
    (status = 403, description = "agent keys cannot mint webhook tokens", body = ErrorBody),
))]
pub async fn mint_token(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
) -> Result<(StatusCode, ApiJson<WebhookTokenView>), Error> {
    let token = webhooks::mint_token(&state.store, s.workspace, &s.user.id).await?;
    Ok((StatusCode::CREATED, ApiJson(WebhookTokenView { token })))
}
