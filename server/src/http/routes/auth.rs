//! `/api/auth/*`: register, login, session.

use axum::extract::State;
use axum::http::StatusCode;

use crate::accounts::{self, LoginRequest, RegisterRequest, SessionView, TokenResponse};
use crate::error::Error;
use crate::http::error::ErrorBody;
use crate::http::extract::{
    limit_address, ApiJson, JwtUser, PeerAddr, LOGIN_PER_MIN_PER_ADDRESS,
    REGISTER_PER_MIN_PER_ADDRESS,
};
use crate::state::AppState;

/// Create a user and their workspace; returns a 7-day JWT.
#[utoipa::path(post, path = "/api/auth/register", tag = "auth", request_body = RegisterRequest, responses(
    (status = 201, body = TokenResponse),
    (status = 400, description = "invalid email, password shorter than 8 characters, missing name", body = ErrorBody),
    (status = 409, description = "email already registered", body = ErrorBody),
    (status = 429, description = "too many sign-ups from this address", body = ErrorBody),
))]
pub async fn register(
    State(state): State<AppState>,
    peer: PeerAddr,
    ApiJson(req): ApiJson<RegisterRequest>,
) -> Result<(StatusCode, ApiJson<TokenResponse>), Error> {
    limit_address(&state, peer, "register", REGISTER_PER_MIN_PER_ADDRESS)?;
    let created = accounts::register(&state.store, &state.jwt, req).await?;
    Ok((StatusCode::CREATED, ApiJson(created)))
}

/// Exchange email and password for a JWT.
#[utoipa::path(post, path = "/api/auth/login", tag = "auth", request_body = LoginRequest, responses(
    (status = 200, body = TokenResponse),
    (status = 401, description = "unknown email or wrong password (indistinguishable)", body = ErrorBody),
    (status = 429, description = "too many failed logins for this email, or too many attempts from this address", body = ErrorBody),
))]
pub async fn login(
    State(state): State<AppState>,
    peer: PeerAddr,
    ApiJson(req): ApiJson<LoginRequest>,
) -> Result<ApiJson<TokenResponse>, Error> {
    limit_address(&state, peer, "login", LOGIN_PER_MIN_PER_ADDRESS)?;
    Ok(ApiJson(
        accounts::login(&state.store, &state.jwt, &state.login_limiter, req).await?,
    ))
}

/// The session of the presented JWT.
#[utoipa::path(get, path = "/api/auth/session", tag = "auth", responses(
    (status = 200, body = SessionView),
    (status = 401, body = ErrorBody),
    (status = 403, description = "an agent key was presented", body = ErrorBody),
))]
pub async fn session(
    State(state): State<AppState>,
    JwtUser(session): JwtUser,
) -> Result<ApiJson<SessionView>, Error> {
    Ok(ApiJson(accounts::session(&state.store, &session).await?))
}
