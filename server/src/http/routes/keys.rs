//! `/api/v1/keys`: agent key management (JWT only) and whoami (agent key only).

use crate::http::error::ErrorResponse;
use axum::extract::State;
use axum::http::StatusCode;

use crate::http::error::ErrorBody;
use crate::http::extract::{AgentKeyAuth, ApiJson, ApiPath, JwtUser};
use crate::state::AppState;
use svc_core::keys::{self, CreateKey, CreateLegacyKey, CreatedKey, KeyList, KeyView, WhoAmI};

/// Mint an agent key. The plaintext `key` is in this response only.
#[utoipa::path(post, path = "/api/v1/keys", tag = "keys", request_body = CreateKey, responses(
    (status = 201, body = CreatedKey),
    (status = 400, description = "unknown grant, mode or bad field (named in the message)", body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "agent keys cannot manage keys", body = ErrorBody),
))]
pub async fn create_key(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiJson(req): ApiJson<CreateKey>,
) -> Result<(StatusCode, ApiJson<CreatedKey>), ErrorResponse> {
    let created = keys::create(&state.store, &state.usage, s.workspace, &s.user.id, req).await?;
    tracing::info!(key_id = %created.meta.id, "agent key created");
    Ok((StatusCode::CREATED, ApiJson(created)))
}

/// Mint a legacy `dsk_` dashboard key (accepted in `X-API-Key` on event and webhook routes).
#[utoipa::path(post, path = "/api/v1/keys/legacy", tag = "keys", request_body = CreateLegacyKey, responses(
    (status = 201, body = CreatedKey),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
))]
pub async fn create_legacy_key(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiJson(req): ApiJson<CreateLegacyKey>,
) -> Result<(StatusCode, ApiJson<CreatedKey>), ErrorResponse> {
    let created =
        keys::create_legacy(&state.store, &state.usage, s.workspace, &s.user.id, req).await?;
    tracing::info!(key_id = %created.meta.id, "legacy key created");
    Ok((StatusCode::CREATED, ApiJson(created)))
}

/// Key metadata of the workspace, newest first (no plaintext).
#[utoipa::path(get, path = "/api/v1/keys", tag = "keys", responses(
    (status = 200, body = KeyList),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
))]
pub async fn list_keys(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
) -> Result<ApiJson<KeyList>, ErrorResponse> {
    Ok(ApiJson(
        keys::list(&state.store, &state.usage, s.workspace).await?,
    ))
}

/// Revoke a key; refused from the next request on. Idempotent.
#[utoipa::path(delete, path = "/api/v1/keys/{id}", tag = "keys",
    params(("id" = String, Path, description = "Key id (`key_...`)")), responses(
    (status = 200, body = KeyView),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
    (status = 404, description = "unknown id, or a key of another workspace", body = ErrorBody),
))]
pub async fn revoke_key(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiPath(id): ApiPath<String>,
) -> Result<ApiJson<KeyView>, ErrorResponse> {
    let revoked = keys::revoke(&state.store, &state.usage, s.workspace, &id).await?;
    tracing::info!(key_id = %revoked.id, "key revoked");
    Ok(ApiJson(revoked))
}

/// The calling agent key. Carries the `X-RateLimit-*` headers.
#[utoipa::path(get, path = "/api/v1/keys/whoami", tag = "keys", responses(
    (status = 200, body = WhoAmI),
    (status = 400, description = "two headers with different credentials", body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "a JWT was presented", body = ErrorBody),
    (status = 429, body = ErrorBody),
))]
pub async fn whoami(
    State(state): State<AppState>,
    AgentKeyAuth(key): AgentKeyAuth,
) -> ApiJson<WhoAmI> {
    ApiJson(WhoAmI::new(&key, &state.usage))
}
