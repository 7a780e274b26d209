//! `/api/v1/capabilities`: the capability gateway for agent keys (thin adapter over `gateway`).

use crate::http::error::ErrorResponse;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::http::context;
use crate::http::error::ErrorBody;
use crate::http::extract::{AgentKeyAuth, ApiJson, ApiPath};
use crate::state::AppState;
use svc_core::error::Error;
use svc_gateway::{self as gateway, CapabilityList, Envelope, InvokeRequest, Receipt, Usage};

/// Capabilities the key may call, with the modes it may use, and the key itself.
#[utoipa::path(get, path = "/api/v1/capabilities", tag = "capabilities",
    responses(
    (status = 200, body = CapabilityList),
    (status = 401, body = ErrorBody),
    (status = 403, description = "not an agent key", body = ErrorBody),
    (status = 429, body = ErrorBody),
))]
pub async fn list_capabilities(AgentKeyAuth(key): AgentKeyAuth) -> ApiJson<CapabilityList> {
    ApiJson(gateway::list(&key))
}

/// Invoke a capability (dry_run, queue or execute). With an `idempotency_key`, the first
/// completed response is replayed byte for byte with `Idempotent-Replayed: true`.
#[utoipa::path(post, path = "/api/v1/capabilities/{id}/invoke", tag = "capabilities",
    params(("id" = String, Path, description = "Capability id, e.g. `context.get`")),
    request_body = InvokeRequest, responses(
    (status = 200, body = Envelope),
    (status = 400, description = "invalid_input (details list JSON paths)", body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 402, description = "quota_exceeded", body = ErrorBody),
    (status = 403, description = "grant_denied, mode_denied, policy_forbid, approval_required, read_only_workspace", body = ErrorBody),
    (status = 404, description = "capability_not_found, or the customer named in the input", body = ErrorBody),
    (status = 409, description = "idempotency_conflict: same key still in flight", body = ErrorBody),
    (status = 422, description = "idempotency_conflict: same key, different request", body = ErrorBody),
    (status = 429, body = ErrorBody),
    (status = 502, description = "capability_failed", body = ErrorBody),
))]
pub async fn invoke(
    State(state): State<AppState>,
    AgentKeyAuth(key): AgentKeyAuth,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<InvokeRequest>,
) -> Result<Response, ErrorResponse> {
    let request_id = context::request_id().unwrap_or_else(svc_core::plumbing::ids::request_id);
    let mut out = gateway::invoke(&state, &key, &id, req, request_id).await?;
    if let Some(msg) = out.stream.take() {
        state.realtime.publish(key.workspace_id(), msg);
    }
    let mut response = (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        out.body,
    )
        .into_response();
    if out.replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(response)
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsageQuery {
    /// Ledger rows to return, 1-100 (default 25).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
}

/// Month usage of the key's credit budget and its most recent ledger rows.
#[utoipa::path(get, path = "/api/v1/capabilities/usage/actions", tag = "capabilities",
    params(UsageQuery), responses(
    (status = 200, body = Usage),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
))]
pub async fn usage(
    State(state): State<AppState>,
    AgentKeyAuth(key): AgentKeyAuth,
    query: Result<Query<UsageQuery>, QueryRejection>,
) -> Result<ApiJson<Usage>, ErrorResponse> {
    let Query(q) = query.map_err(|e| Error::invalid_input(e.body_text()))?;
    // The documented bounds are enforced, not clamped: a value outside them is a mistake.
    if let Some(l) = q.limit.filter(|l| !(1..=100).contains(l)) {
        return Err(Error::invalid_field("limit", &l.to_string(), "must be 1 to 100").into());
    }
    Ok(ApiJson(gateway::usage(&state.store, &key, q.limit).await?))
}

/// Receipt of an invocation of this workspace: ledger row, sanitized response, pending action.
#[utoipa::path(get, path = "/api/v1/capabilities/actions/{request_id}", tag = "capabilities",
    params(("request_id" = String, Path, description = "The invocation's `req_...` id")),
    responses(
    (status = 200, body = Receipt),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
    (status = 404, description = "unknown request id, or one of another workspace", body = ErrorBody),
))]
pub async fn receipt(
    State(state): State<AppState>,
    AgentKeyAuth(key): AgentKeyAuth,
    ApiPath(request_id): ApiPath<String>,
) -> Result<ApiJson<Receipt>, ErrorResponse> {
    Ok(ApiJson(
        gateway::receipt(&state.store, &key, &request_id).await?,
    ))
}
