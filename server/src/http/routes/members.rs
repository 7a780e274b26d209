//! Workspace roles: invites (owners), accepting one (public, with the token), the member list.

use crate::http::error::ErrorResponse;
use axum::extract::State;
use axum::http::StatusCode;

use crate::http::error::ErrorBody;
use crate::http::extract::{
    limit_address, ApiJson, JwtUser, PeerAddr, REGISTER_PER_MIN_PER_ADDRESS,
};
use crate::state::AppState;
use svc_core::accounts::TokenResponse;
use svc_core::members::{self, AcceptInvite, CreatedInvite, InviteRequest, MemberList};

/// Invite an email into the workspace as a member. The one-time `token` is in this response
/// only; the invitee accepts it at `POST /api/auth/accept-invite` within 7 days. The answer
/// does not say whether the email already has an account (such an invite cannot be accepted).
#[utoipa::path(post, path = "/api/v1/workspace/invites", tag = "workspace", request_body = InviteRequest, responses(
    (status = 201, body = CreatedInvite),
    (status = 400, description = "not a valid email address", body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "`owner_required`: the caller is a member, not an owner", body = ErrorBody),
))]
pub async fn invite(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiJson(req): ApiJson<InviteRequest>,
) -> Result<(StatusCode, ApiJson<CreatedInvite>), ErrorResponse> {
    let created = members::invite(&state.store, &s, req).await?;
    Ok((StatusCode::CREATED, ApiJson(created)))
}

/// Accept an invite: creates the invited user as a member of the inviting workspace and
/// returns a 7-day JWT, like registration.
#[utoipa::path(post, path = "/api/auth/accept-invite", tag = "auth", request_body = AcceptInvite, responses(
    (status = 201, body = TokenResponse),
    (status = 400, description = "password shorter than 8 characters, missing name", body = ErrorBody),
    (status = 401, description = "unknown, used or expired invite token (indistinguishable)", body = ErrorBody),
    (status = 409, description = "the email has an account", body = ErrorBody),
    (status = 429, description = "`rate_limited`: too many sign-ups from this address (shared with registration)", body = ErrorBody),
))]
pub async fn accept_invite(
    State(state): State<AppState>,
    peer: PeerAddr,
    ApiJson(req): ApiJson<AcceptInvite>,
) -> Result<(StatusCode, ApiJson<TokenResponse>), ErrorResponse> {
    // It creates an account: the same per-address budget as registration.
    limit_address(&state, peer, "register", REGISTER_PER_MIN_PER_ADDRESS)?;
    let created = members::accept(&state.store, &state.jwt, req).await?;
    Ok((StatusCode::CREATED, ApiJson(created)))
}

/// The workspace's users and their roles (`owner`, `member`).
#[utoipa::path(get, path = "/api/v1/workspace/members", tag = "workspace", responses(
    (status = 200, body = MemberList),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
))]
pub async fn list_members(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
) -> Result<ApiJson<MemberList>, ErrorResponse> {
    Ok(ApiJson(members::list(&state.store, s.workspace).await?))
}
