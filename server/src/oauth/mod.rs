//! MCP authorization, the protocol face (docs/mcp-oauth.md): svcd is both the OAuth 2.1
//! authorization server and the protected resource `/mcp`.
//!
//! - [`metadata`]: protected-resource metadata (RFC 9728) and authorization-server metadata
//!   (RFC 8414), and the `WWW-Authenticate` challenge `/mcp` answers 401 with;
//! - [`clients`]: Dynamic Client Registration (RFC 7591) and Client ID Metadata Documents,
//!   redirect URI rules (exact, loopback ports aside per RFC 8252);
//! - [`token`]: the token endpoint (authorization code with PKCE S256, refresh with rotation);
//! - the consent page is the dashboard's (`dashboard::oauth_consent`);
//! - [`docs`]: the OpenAPI security scheme.
//!
//! Stored state and its rules are svc-core's `oauth`. The issuer is the service's public URL
//! (`--public-url`, else the address it is bound to), and the resource its `/mcp` under it.

pub mod clients;
pub mod docs;
pub mod metadata;
pub mod token;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::state::AppState;

/// Registrations and token requests allowed per minute from one address.
pub const REQUESTS_PER_MIN_PER_ADDRESS: u32 = 60;

/// The issuer: the service's public base URL, without a trailing slash.
pub fn issuer(state: &AppState) -> String {
    state.public_url().trim_end_matches('/').to_owned()
}

/// The protected resource, and the audience every access token is bound to.
pub fn resource(state: &AppState) -> String {
    format!("{}/mcp", issuer(state))
}

/// An OAuth error answer (RFC 6749 §5.2, RFC 7591 §3.2.2): `{"error", "error_description"}`,
/// never cached.
#[derive(Debug)]
pub struct OAuthError {
    pub status: StatusCode,
    pub error: &'static str,
    pub description: String,
}

#[derive(Serialize)]
struct ErrorJson<'a> {
    error: &'a str,
    error_description: &'a str,
}

impl OAuthError {
    pub fn new(error: &'static str, description: impl Into<String>) -> OAuthError {
        OAuthError {
            status: StatusCode::BAD_REQUEST,
            error,
            description: description.into(),
        }
    }

    pub fn invalid_request(description: impl Into<String>) -> OAuthError {
        OAuthError::new("invalid_request", description)
    }
}

impl From<svc_core::error::Error> for OAuthError {
    fn from(e: svc_core::error::Error) -> OAuthError {
        let status = StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::BAD_REQUEST);
        if status.is_server_error() {
            tracing::error!(error = %e, "OAuth request failed");
            return OAuthError {
                status,
                error: "server_error",
                description: "something went wrong on our side; try again".into(),
            };
        }
        OAuthError {
            status,
            error: if status == StatusCode::TOO_MANY_REQUESTS {
                "slow_down"
            } else {
                "invalid_request"
            },
            description: e.message,
        }
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let body = ErrorJson {
            error: self.error,
            error_description: &self.description,
        };
        no_store((self.status, axum::Json(body)).into_response())
    }
}

/// Where the protected-resource metadata is.
pub fn resource_metadata_url(state: &AppState) -> String {
    format!("{}/.well-known/oauth-protected-resource", issuer(state))
}

/// The `WWW-Authenticate` value of `/mcp`'s 401 (RFC 9728 §5.1); `invalid_token` when a token
/// was presented and refused (RFC 6750 §3.1).
pub fn challenge(state: &AppState, token_presented: bool) -> Option<HeaderValue> {
    let error = if token_presented {
        r#"error="invalid_token", "#
    } else {
        ""
    };
    HeaderValue::from_str(&format!(
        r#"Bearer {error}resource_metadata="{}""#,
        resource_metadata_url(state)
    ))
    .ok()
}

/// Token and registration answers carry secrets or ids: never cached (RFC 6749 §5.1).
pub fn no_store(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}
