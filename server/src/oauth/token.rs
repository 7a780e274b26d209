//! `POST /oauth/token` (RFC 6749 §3.2, OAuth 2.1): the `authorization_code` grant with PKCE
//! S256, and `refresh_token` with rotation. Public clients send their `client_id` in the form.
//! The rules (single use, reuse revocation, rotation) are svc-core's `oauth`.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use super::{no_store, resource, OAuthError, REQUESTS_PER_MIN_PER_ADDRESS};
use crate::dashboard::session::form_urlencoded_parse;
use crate::http::extract::{limit_address, PeerAddr};
use crate::state::AppState;
use svc_core::oauth::{self, CodeExchange, Issued, RefreshExchange, Refusal};

/// The token response (RFC 6749 §5.1).
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenResponse {
    /// `svc_oat_...`: valid only at this server's `/mcp` (its audience).
    pub access_token: String,
    /// `Bearer`.
    pub token_type: String,
    /// Seconds until the access token expires.
    pub expires_in: i64,
    /// `svc_ort_...`: single use; each refresh returns a new one.
    pub refresh_token: String,
    /// The grants and modes handed over, space-separated (`mode:<mode>` for modes).
    pub scope: String,
}

/// The form of a token request (`application/x-www-form-urlencoded`).
#[derive(Debug, Default, serde::Deserialize, ToSchema)]
pub struct TokenRequest {
    /// `authorization_code` or `refresh_token`.
    pub grant_type: String,
    pub client_id: String,
    pub code: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_verifier: Option<String>,
    pub refresh_token: Option<String>,
    /// RFC 8707: this server's `/mcp` URL when given.
    pub resource: Option<String>,
}

/// Exchanges an authorization code, or rotates a refresh token. Errors are RFC 6749 §5.2's:
/// `invalid_request`, `invalid_grant` (unknown, used, expired or revoked code or token, wrong
/// verifier, another client's), `invalid_target` (a `resource` other than `/mcp`),
/// `unsupported_grant_type`.
#[utoipa::path(post, path = "/oauth/token", tag = "oauth",
    request_body(content = TokenRequest, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, body = TokenResponse),
        (status = 400, description = "an OAuth error (RFC 6749 §5.2)"),
        (status = 429, description = "too many token requests from this address"),
    ))]
pub async fn token(
    State(state): State<AppState>,
    peer: PeerAddr,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, OAuthError> {
    limit_address(&state, peer, "oauth_token", REQUESTS_PER_MIN_PER_ADDRESS)?;
    let form_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';').next().is_some_and(|m| {
                m.trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            })
        });
    if !form_type {
        return Err(OAuthError::invalid_request(
            "token requests are application/x-www-form-urlencoded",
        ));
    }
    let params = params(&body)?;
    let required = |name: &str| -> Result<String, OAuthError> {
        params
            .get(name)
            .filter(|v| !v.is_empty())
            .cloned()
            .ok_or_else(|| OAuthError::invalid_request(format!("{name} is required")))
    };
    let client_id = required("client_id")?;
    let asked_resource = params.get("resource").cloned();
    // RFC 8707 §2: a resource this server does not serve is refused outright.
    if let Some(r) = &asked_resource {
        if *r != resource(&state) {
            return Err(OAuthError::new(
                "invalid_target",
                format!("this server's only resource is {}", resource(&state)),
            ));
        }
    }
    let lifetimes = state.config.oauth_lifetimes();
    let outcome = match params.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let exchange = CodeExchange {
                code: required("code")?,
                client_id,
                redirect_uri: required("redirect_uri")?,
                code_verifier: required("code_verifier")?,
                resource: asked_resource,
            };
            oauth::exchange_code(&state.store, lifetimes, exchange).await?
        }
        Some("refresh_token") => {
            let exchange = RefreshExchange {
                refresh_token: required("refresh_token")?,
                client_id,
                resource: asked_resource,
            };
            oauth::refresh(&state.store, lifetimes, exchange).await?
        }
        Some(other) => {
            return Err(OAuthError::new(
                "unsupported_grant_type",
                format!(
                    "grant_type {other:?} is not supported (authorization_code, refresh_token)"
                ),
            ))
        }
        None => return Err(OAuthError::invalid_request("grant_type is required")),
    };
    match outcome {
        Ok(issued) => Ok(no_store(axum::Json(response(issued)).into_response())),
        Err(Refusal::InvalidGrant(m)) => {
            tracing::info!(reason = %m, "OAuth grant refused");
            Err(OAuthError::new("invalid_grant", m))
        }
        Err(Refusal::InvalidTarget(m)) => Err(OAuthError::new("invalid_target", m)),
    }
}

/// The form's parameters; a repeated one is refused (RFC 6749 §3.2).
fn params(body: &[u8]) -> Result<HashMap<String, String>, OAuthError> {
    let mut out = HashMap::new();
    for (k, v) in form_urlencoded_parse(body) {
        if out.insert(k.clone(), v).is_some() {
            return Err(OAuthError::invalid_request(format!(
                "the parameter {k} is repeated"
            )));
        }
    }
    Ok(out)
}

fn response(issued: Issued) -> TokenResponse {
    let scope = issued
        .key
        .grants
        .iter()
        .cloned()
        .chain(issued.key.allowed_modes.iter().map(|m| format!("mode:{m}")))
        .collect::<Vec<_>>()
        .join(" ");
    TokenResponse {
        access_token: issued.access_token,
        token_type: "Bearer".into(),
        expires_in: issued.expires_in_secs,
        refresh_token: issued.refresh_token,
        scope,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_parameters_are_refused() {
        assert!(params(b"grant_type=refresh_token&client_id=a").is_ok());
        let e = params(b"code=a&code=b").expect_err("repeated");
        assert_eq!(e.error, "invalid_request");
    }
}
