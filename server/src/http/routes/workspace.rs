//! `/api/v1/workspace`: the caller's workspace settings.

use axum::extract::State;

use crate::error::Error;
use crate::http::error::ErrorBody;
use crate::http::extract::{ApiJson, JwtUser};
use crate::state::AppState;
use crate::workspaces::{self, WorkspaceUpdate, WorkspaceView};

/// The workspace of the session.
#[utoipa::path(get, path = "/api/v1/workspace", tag = "workspace", security(("jwt" = [])), responses(
    (status = 200, body = WorkspaceView),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
))]
pub async fn get_workspace(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
) -> Result<ApiJson<WorkspaceView>, Error> {
    Ok(ApiJson(workspaces::get(&state.store, s.workspace).await?))
}

/// Change plan, read-only flag or policy; absent fields are unchanged.
#[utoipa::path(put, path = "/api/v1/workspace", tag = "workspace", security(("jwt" = [])),
    request_body = WorkspaceUpdate, responses(
    (status = 200, body = WorkspaceView),
    (status = 400, description = "unknown plan or capability id (named in the message)", body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
))]
pub async fn put_workspace(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiJson(update): ApiJson<WorkspaceUpdate>,
) -> Result<ApiJson<WorkspaceView>, Error> {
    Ok(ApiJson(
        workspaces::update(&state.store, s.workspace, update).await?,
    ))
}
