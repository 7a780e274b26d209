//! `/api/v1/approvals` (dashboard sessions only: an agent key can never approve) and
//! `/api/v1/capabilities/pending/:id` (agent keys): the approval system's adapters.

use crate::http::error::ErrorResponse;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::Deserialize;

use crate::http::error::ErrorBody;
use crate::http::extract::{AgentKeyAuth, ApiJson, ApiPath, JwtUser};
use crate::state::AppState;
use svc_core::error::Error;
use svc_gateway::approvals::{self, ApprovalQuery, PendingList, PendingView};

/// The query of `GET /api/v1/approvals`, for the document (read with
/// `ApprovalQuery::from_params`).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct ListQuery {
    /// Only actions in this state, or `decided` (every state but pending) or `approved_any`
    /// (approved, executed, failed, unknown); every state when omitted.
    #[param(schema_with = status_values)]
    status: Option<String>,
    /// Only actions of this capability (`queue.outreach`, ...).
    #[param(max_length = 200)]
    capability: Option<String>,
    /// Actions to skip (default 0).
    #[param(minimum = 0, maximum = 4294967295u64)]
    offset: Option<u64>,
    /// Page size (default 200).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u64>,
}

fn status_values() -> utoipa::openapi::schema::Object {
    crate::http::openapi::string_enum(approvals::STATES.into_iter().chain(approvals::GROUPS))
}

/// Optional body of approve and reject.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ApprovalDecision)]
pub struct Decision {
    /// Recorded in the timeline.
    #[schema(max_length = 1000)]
    pub note: Option<String>,
}

/// The optional JSON body of approve and reject (empty or `null` means no note).
fn decision(body: &[u8]) -> Result<Option<String>, ErrorResponse> {
    let d: Option<Decision> = crate::http::extract::parse_optional_body(body)?;
    let note = d.and_then(|d| d.note);
    if note.as_ref().is_some_and(|n| n.chars().count() > 1000) {
        return Err(Error::invalid_input("note: at most 1000 characters").into());
    }
    Ok(note)
}

/// Actions of the workspace, newest first, paged with the total. Signed-in users may approve,
/// so each carries its `recipient` in full (the input stays masked as agents see it).
#[utoipa::path(get, path = "/api/v1/approvals", tag = "approvals",
    params(ListQuery), responses(
    (status = 200, body = PendingList),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "agent keys cannot use approvals", body = ErrorBody),
))]
pub async fn list_approvals(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<ApiJson<PendingList>, ErrorResponse> {
    let Query(query) = query.map_err(|e| Error::invalid_input(e.body_text()))?;
    let q = ApprovalQuery::from_params(query.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    let mut list = approvals::list(&state.store, s.workspace, q).await?;
    let customers = list
        .actions
        .iter()
        .filter_map(|a| a.customer_id.clone())
        .collect();
    let (recipients, _) =
        approvals::details(&state.store, s.workspace, customers, Vec::new()).await?;
    for a in &mut list.actions {
        a.recipient = a
            .customer_id
            .as_ref()
            .and_then(|c| recipients.get(c))
            .cloned();
    }
    Ok(ApiJson(list))
}

/// Approve a pending action: it executes at once, exactly once.
#[utoipa::path(post, path = "/api/v1/approvals/{id}/approve", tag = "approvals",
    params(("id" = String, Path, description = "`pa_...`")),
    request_body(content = Option<Decision>), responses(
    (status = 200, description = "executed or failed (see status)", body = PendingView),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
    (status = 404, body = ErrorBody),
    (status = 409, description = "the action is no longer pending", body = ErrorBody),
))]
pub async fn approve(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiPath(id): ApiPath<String>,
    body: Bytes,
) -> Result<ApiJson<PendingView>, ErrorResponse> {
    let note = decision(&body)?;
    // `approve` notes its graph writes itself (derived caches are dropped).
    Ok(ApiJson(
        approvals::approve(&state, s.workspace, &id, &s.user.id, note).await?,
    ))
}

/// Reject a pending action; its credits are refunded.
#[utoipa::path(post, path = "/api/v1/approvals/{id}/reject", tag = "approvals",
    params(("id" = String, Path, description = "`pa_...`")),
    request_body(content = Option<Decision>), responses(
    (status = 200, body = PendingView),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
    (status = 404, body = ErrorBody),
    (status = 409, description = "the action is no longer pending", body = ErrorBody),
))]
pub async fn reject(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiPath(id): ApiPath<String>,
    body: Bytes,
) -> Result<ApiJson<PendingView>, ErrorResponse> {
    let note = decision(&body)?;
    Ok(ApiJson(
        approvals::reject(&state.store, s.workspace, &id, &s.user.id, note).await?,
    ))
}

/// A pending action's state and AOS timeline, for the agent that queued it (any key of the
/// workspace).
#[utoipa::path(get, path = "/api/v1/capabilities/pending/{id}", tag = "capabilities",
    params(("id" = String, Path, description = "`pa_...`")), responses(
    (status = 200, body = PendingView),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn pending(
    State(state): State<AppState>,
    AgentKeyAuth(key): AgentKeyAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<ApiJson<PendingView>, ErrorResponse> {
    Ok(ApiJson(
        approvals::get(&state.store, key.workspace_id(), &id).await?,
    ))
}
