//! `/api/v1/keys`: agent key management (JWT only) and whoami (agent key only).

use crate::http::error::ErrorResponse;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;

use crate::http::error::ErrorBody;
use crate::http::extract::{AgentKeyAuth, ApiJson, ApiPath, JwtUser};
use crate::state::AppState;
use svc_core::error::Error;
use svc_core::keys::{
    self, CreateKey, CreateLegacyKey, CreatedKey, KeyList, KeyQuery, KeySort, KeyView, WhoAmI,
};

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

/// The query of `GET /api/v1/keys`, for the document (read with `KeyQuery::from_params`).
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct KeyParams {
    /// Case-insensitive text in the name, agent label, id or last four characters.
    #[param(max_length = 200)]
    q: Option<String>,
    /// `active` or `revoked`; both when omitted.
    #[param(schema_with = key_states)]
    state: Option<String>,
    /// The column to sort by (default `created`).
    #[param(inline)]
    sort: Option<KeySort>,
    /// `desc` (default) or `asc`; never-used keys come last by `last_used`, ties by id.
    #[param(schema_with = orders)]
    order: Option<String>,
    /// Keys to skip (default 0).
    #[param(minimum = 0, maximum = 4294967295u64)]
    offset: Option<u64>,
    /// Page size (default and largest 1000).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u64>,
}

fn key_states() -> utoipa::openapi::schema::Object {
    crate::http::openapi::string_enum(["active", "revoked"])
}

fn orders() -> utoipa::openapi::schema::Object {
    crate::http::openapi::string_enum(["asc", "desc"])
}

/// Key metadata of the workspace (no plaintext), newest first by default, paged with the
/// total.
#[utoipa::path(get, path = "/api/v1/keys", tag = "keys", params(KeyParams), responses(
    (status = 200, body = KeyList),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
))]
pub async fn list_keys(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<ApiJson<KeyList>, ErrorResponse> {
    let Query(query) = query.map_err(|e| Error::invalid_input(e.body_text()))?;
    let q = KeyQuery::from_params(query.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    Ok(ApiJson(
        keys::list_page(&state.store, &state.usage, s.workspace, &q).await?,
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
