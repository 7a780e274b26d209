//! Discovery: what an MCP client reads after `/mcp` answered 401. The challenge names the
//! protected-resource metadata (RFC 9728), which names this service as the authorization
//! server, whose metadata (RFC 8414) lists the endpoints and what they support.

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use super::{issuer, resource};
use crate::http::extract::ApiJson;
use crate::state::AppState;

/// RFC 9728 §2.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProtectedResourceMetadata {
    /// This server's `/mcp` URL: the audience its access tokens are bound to.
    pub resource: String,
    pub authorization_servers: Vec<String>,
    pub bearer_methods_supported: Vec<String>,
    pub resource_name: String,
    pub resource_documentation: String,
}

/// RFC 8414 §2 (and the MCP authorization specification's additions).
#[derive(Debug, Serialize, ToSchema)]
pub struct AuthorizationServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: String,
    pub response_types_supported: Vec<String>,
    pub grant_types_supported: Vec<String>,
    /// `S256` only.
    pub code_challenge_methods_supported: Vec<String>,
    /// `none`: public clients; PKCE protects the code.
    pub token_endpoint_auth_methods_supported: Vec<String>,
    /// RFC 9207: the authorization response carries `iss`.
    pub authorization_response_iss_parameter_supported: bool,
    /// A client may use the https URL of its Client ID Metadata Document as its client_id.
    pub client_id_metadata_document_supported: bool,
    pub service_documentation: String,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

fn protected_resource_body(state: &AppState) -> Response {
    let base = issuer(state);
    cacheable(ApiJson(ProtectedResourceMetadata {
        resource: resource(state),
        authorization_servers: vec![base.clone()],
        bearer_methods_supported: strings(&["header"]),
        resource_name: "svcd MCP server".into(),
        resource_documentation: format!("{base}/docs"),
    }))
}

/// Metadata of the protected resource `/mcp` (RFC 9728).
#[utoipa::path(get, path = "/.well-known/oauth-protected-resource", tag = "oauth",
    responses((status = 200, body = ProtectedResourceMetadata)))]
pub async fn protected_resource(State(state): State<AppState>) -> Response {
    protected_resource_body(&state)
}

/// The same metadata at the path-suffixed location of the resource `/mcp` (RFC 9728 §3.1).
#[utoipa::path(get, path = "/.well-known/oauth-protected-resource/mcp", tag = "oauth",
    responses((status = 200, body = ProtectedResourceMetadata)))]
pub async fn protected_resource_mcp(State(state): State<AppState>) -> Response {
    protected_resource_body(&state)
}

/// Authorization-server metadata (RFC 8414).
#[utoipa::path(get, path = "/.well-known/oauth-authorization-server", tag = "oauth",
    responses((status = 200, body = AuthorizationServerMetadata)))]
pub async fn authorization_server(State(state): State<AppState>) -> Response {
    let base = issuer(&state);
    cacheable(ApiJson(AuthorizationServerMetadata {
        authorization_endpoint: format!("{base}/oauth/authorize"),
        token_endpoint: format!("{base}/oauth/token"),
        registration_endpoint: format!("{base}/oauth/register"),
        response_types_supported: strings(&["code"]),
        grant_types_supported: strings(&["authorization_code", "refresh_token"]),
        code_challenge_methods_supported: strings(&["S256"]),
        token_endpoint_auth_methods_supported: strings(&["none"]),
        authorization_response_iss_parameter_supported: true,
        client_id_metadata_document_supported: true,
        service_documentation: format!("{base}/docs"),
        issuer: base,
    }))
}

/// Metadata changes only with the configuration; clients may cache it briefly.
fn cacheable(body: impl IntoResponse) -> Response {
    let mut response = body.into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    response
}
