//! `/api/v1/workspace`: the caller's workspace settings.

use crate::http::error::ErrorResponse;
use axum::extract::State;

use crate::http::error::ErrorBody;
use crate::http::extract::{ApiJson, JwtUser};
use crate::state::AppState;
use svc_core::workspaces::{self, WorkspaceUpdate, WorkspaceView};

/// The workspace of the session.
#[utoipa::path(get, path = "/api/v1/workspace", tag = "workspace", responses(
    (status = 200, body = WorkspaceView),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
))]
pub async fn get_workspace(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
) -> Result<ApiJson<WorkspaceView>, ErrorResponse> {
    Ok(ApiJson(workspaces::get(&state.store, s.workspace).await?))
}

/// Change the read-only flag or the policy; absent fields are unchanged. The plan and credit
/// limits are read-only here: only the operator of the service changes them (`svcd admin`).
#[utoipa::path(put, path = "/api/v1/workspace", tag = "workspace", request_body = WorkspaceUpdate, responses(
    (status = 200, body = WorkspaceView),
    (status = 400, description = "unknown capability id (named in the message)", body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "`forbidden`: an agent key, or `plan` / `monthly_credit_limit` in the body (`details.field`)", body = ErrorBody),
))]
pub async fn put_workspace(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiJson(update): ApiJson<WorkspaceUpdate>,
) -> Result<ApiJson<WorkspaceView>, ErrorResponse> {
    Ok(ApiJson(
        workspaces::update(&state.store, s.workspace, update).await?,
    ))
}
