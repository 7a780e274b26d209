//! `/v1/brand-context` and `/v1/buddies/:buddy/system-prompt` (bearer token: JWT or agent key).

use crate::http::error::ErrorResponse;
use axum::extract::State;
use serde_json::Value as Json;

use crate::http::error::ErrorBody;
use crate::http::extract::{AnyAuth, ApiJson, ApiPath};
use crate::http::routes::playbooks::Deleted;
use crate::state::AppState;
use svc_agents::buddies::{self, Buddy, SystemPrompt};
use svc_core::error::Error;
use svc_domains::brand::{self, BrandEnvelope};

/// The workspace's brand and voice profile; `{context: {}}` when never configured.
#[utoipa::path(get, path = "/v1/brand-context", tag = "brand",
    responses(
    (status = 200, body = BrandEnvelope),
    (status = 401, body = ErrorBody),
))]
pub async fn get_brand(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
) -> Result<ApiJson<BrandEnvelope>, ErrorResponse> {
    let context = brand::get(&state.store, &state.sealer, p.workspace()).await?;
    Ok(ApiJson(BrandEnvelope { context }))
}

/// Merge fields into the profile: `voice` and `links` merge key by key, voice values are
/// clamped to 1-5 (missing ones 3), invalid links are dropped, unknown fields are dropped,
/// over-long strings are 400. Answers the merged profile.
#[utoipa::path(put, path = "/v1/brand-context", tag = "brand",
    request_body = crate::http::request_docs::BrandUpdate, responses(
    (status = 200, body = BrandEnvelope),
    (status = 400, description = "an over-long string or a wrongly typed field (named)", body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "read-only workspace", body = ErrorBody),
))]
pub async fn put_brand(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiJson(body): ApiJson<Json>,
) -> Result<ApiJson<BrandEnvelope>, ErrorResponse> {
    let context = brand::put(&state.store, state.sealer.clone(), p.workspace(), body).await?;
    Ok(ApiJson(BrandEnvelope { context }))
}

/// Forget the profile (idempotent).
#[utoipa::path(delete, path = "/v1/brand-context", tag = "brand",
    responses(
    (status = 200, body = Deleted),
    (status = 401, body = ErrorBody),
    (status = 403, description = "read-only workspace", body = ErrorBody),
))]
pub async fn delete_brand(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
) -> Result<ApiJson<Deleted>, ErrorResponse> {
    brand::delete(&state.store, p.workspace()).await?;
    Ok(ApiJson(Deleted { ok: true }))
}

/// The system prompt a specialist gets on its next chat turn: brand block, persona intro, base
/// system prompt, playbook block.
#[utoipa::path(get, path = "/v1/buddies/{buddy}/system-prompt", tag = "brand",
    params(("buddy" = String, Path, description = "`insights`, `prospect`, `campaign` or `pipeline`")),
    responses(
    (status = 200, body = SystemPrompt),
    (status = 401, body = ErrorBody),
    (status = 404, description = "not a specialist", body = ErrorBody),
))]
pub async fn buddy_prompt(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath(buddy): ApiPath<String>,
) -> Result<ApiJson<SystemPrompt>, ErrorResponse> {
    let buddy = Buddy::parse(&buddy).ok_or_else(|| Error::not_found("buddy"))?;
    Ok(ApiJson(
        buddies::system_prompt(&state.store, &state.sealer, p.workspace(), buddy).await?,
    ))
}
