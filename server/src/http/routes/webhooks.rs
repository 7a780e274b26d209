//! `/api/webhooks/{platform}` (including `generic`): agent key, legacy `dsk_` key or JWT, or the
//! workspace's webhook token; `/api/v1/webhooks/token` and `/api/v1/webhooks/{platform}/secret`
//! (JWT only).

use std::collections::HashMap;

use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, StatusCode, Uri};

use crate::error::Error;
use crate::events::direct::{self, BatchResponse};
use crate::events::webhook_secrets::{self, SecretStatus};
use crate::events::{signatures, webhooks};
use crate::http::error::ErrorBody;
use crate::http::extract::{ApiJson, ApiPath, IngestWorkspace, JwtUser, RawJson};
use crate::plumbing::clock;
use crate::state::AppState;

/// A platform's webhook delivery, normalized into marketing events (`generic`: the
/// MarketingEvent shape `{type, action, customerId, properties}`, or `{events: [...]}`;
/// `stripe`, `shopify` (topic from `X-Shopify-Topic`), `hubspot`, `segment`, `customerio`: their
/// documented payloads) and ingested in order. Each event's result or error is listed. When the
/// workspace has a signing secret for the platform, the platform's signature is checked over
/// the exact body first (401 `invalid_signature`, nothing written). The webhook token is
/// rate limited per workspace (default 1,200 requests per minute).
#[utoipa::path(post, path = "/api/webhooks/{platform}", tag = "events",
    params(("platform" = String, Path, description = "generic, stripe, shopify, hubspot, segment or customerio"),
        ("token" = Option<String>, Query, description = "The workspace's webhook token, for senders that cannot set headers")),
    request_body = Object, responses(
    (status = 200, body = BatchResponse),
    (status = 400, body = ErrorBody),
    (status = 401, description = "no valid credential, or `invalid_signature`", body = ErrorBody),
    (status = 404, description = "unknown platform; `details.supported` lists the known ones", body = ErrorBody),
    (status = 429, description = "the webhook token's per-workspace rate", body = ErrorBody),
))]
pub async fn receive(
    State(state): State<AppState>,
    IngestWorkspace(ws): IngestWorkspace,
    ApiPath(platform): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: RawJson,
) -> Result<ApiJson<BatchResponse>, Error> {
    webhooks::ensure_platform(&platform)?;
    let headers: HashMap<String, String> = headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let mut fingerprint = None;
    if let Some(secret) = webhook_secrets::load(&state.store, &state.sealer, ws, &platform).await? {
        let url = delivery_url(&headers, &uri);
        let delivery = signatures::Delivery {
            method: "POST",
            url: &url,
            headers: &headers,
            body: &body.bytes,
        };
        signatures::verify(&platform, &secret, &delivery, clock::now())?;
        fingerprint = Some(signatures::replay_fingerprint(&platform, &delivery));
    }
    let mut events = webhooks::normalize(&platform, &headers, body.value)?;
    // A replayed signed delivery must not be ingested twice: events without a messageId of
    // their own take one from the delivery's signature (issue 29).
    if let Some(fp) = fingerprint {
        for (i, event) in events.iter_mut().enumerate() {
            if let Ok(e) = event {
                e.message_id.get_or_insert_with(|| format!("sig:{fp}:{i}"));
            }
        }
    }
    let response = direct::ingest_events(&state.store, &state.realtime, ws, events).await?;
    Ok(ApiJson(response))
}

/// The URL as the sender called it (HubSpot v3 signs it): the scheme a proxy reports in
/// `X-Forwarded-Proto` (else `http`), the `X-Forwarded-Host` or `Host`, path and query.
fn delivery_url(headers: &HashMap<String, String>, uri: &Uri) -> String {
    let scheme = headers
        .get("x-forwarded-proto")
        .map_or("http", |p| p.split(',').next().unwrap_or("http").trim());
    let host = headers
        .get("x-forwarded-host")
        .or_else(|| headers.get("host"))
        .map_or("", String::as_str);
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    format!("{scheme}://{host}{path}")
}

/// The minted token, shown once.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct WebhookTokenView {
    /// `whk_...`: append `?token=<token>` to `/api/webhooks/{platform}`.
    pub token: String,
}

/// Mint the workspace's webhook token; the previous token stops working at once.
#[utoipa::path(post, path = "/api/v1/webhooks/token", tag = "events", responses(
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

/// A signing secret to set.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretBody {
    /// The platform's signing secret (16 to 512 characters), e.g. Stripe's `whsec_...`.
    pub secret: String,
}

/// Set or rotate the workspace's signing secret for a webhook platform; from then on its
/// deliveries must carry the platform's valid signature. The secret is stored sealed and never
/// shown again.
#[utoipa::path(put, path = "/api/v1/webhooks/{platform}/secret", tag = "events",
    params(("platform" = String, Path, description = "generic, stripe, shopify, hubspot, segment or customerio")),
    request_body = SecretBody, responses(
    (status = 200, body = SecretStatus),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "agent keys cannot manage webhook secrets", body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn put_secret(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiPath(platform): ApiPath<String>,
    ApiJson(body): ApiJson<SecretBody>,
) -> Result<ApiJson<SecretStatus>, Error> {
    let status = webhook_secrets::set(
        &state.store,
        &state.sealer,
        s.workspace,
        &platform,
        &body.secret,
        &s.user.id,
    )
    .await?;
    Ok(ApiJson(status))
}

/// Whether the platform has a signing secret (never the secret).
#[utoipa::path(get, path = "/api/v1/webhooks/{platform}/secret", tag = "events",
    params(("platform" = String, Path, description = "generic, stripe, shopify, hubspot, segment or customerio")),
    responses(
    (status = 200, body = SecretStatus),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn get_secret(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiPath(platform): ApiPath<String>,
) -> Result<ApiJson<SecretStatus>, Error> {
    Ok(ApiJson(
        webhook_secrets::status(&state.store, s.workspace, &platform).await?,
    ))
}

/// Remove the platform's signing secret: its deliveries are no longer signature-checked.
#[utoipa::path(delete, path = "/api/v1/webhooks/{platform}/secret", tag = "events",
    params(("platform" = String, Path, description = "generic, stripe, shopify, hubspot, segment or customerio")),
    responses(
    (status = 200, body = SecretStatus),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn delete_secret(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiPath(platform): ApiPath<String>,
) -> Result<ApiJson<SecretStatus>, Error> {
    Ok(ApiJson(
        webhook_secrets::delete(&state.store, s.workspace, &platform).await?,
    ))
}
