//! Who the client is: registered by Dynamic Client Registration (RFC 7591, `POST
//! /oauth/register`), or named by the https URL of its Client ID Metadata Document, fetched
//! when it asks (through the outbound client, so the operator's destination rule applies, with
//! a size and a time limit). Either way a client is public (no secret) and has a fixed list of
//! redirect URIs, compared exactly; for loopback `http` URIs the port may differ (RFC 8252
//! §7.3: native apps listen on whatever port is free).

use std::net::IpAddr;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use reqwest::Url;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{no_store, OAuthError, REQUESTS_PER_MIN_PER_ADDRESS};
use crate::http::extract::{limit_address, PeerAddr};
use crate::state::AppState;
use svc_core::oauth::clients;

/// Most redirect URIs a client may list.
pub const MAX_REDIRECT_URIS: usize = 10;
const MAX_URI_CHARS: usize = 2000;
const MAX_NAME_CHARS: usize = 200;
/// Largest metadata document read, and how long its fetch may take.
pub const MAX_METADATA_BYTES: usize = 16 * 1024;
pub const METADATA_TIMEOUT: Duration = Duration::from_secs(5);

/// A client as the authorization and token endpoints see it.
#[derive(Clone, Debug)]
pub struct Client {
    pub client_id: String,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
}

impl Client {
    /// Whether `asked` is one of the client's redirect URIs (RFC 8252 loopback rule).
    pub fn allows_redirect(&self, asked: &str) -> bool {
        self.redirect_uris
            .iter()
            .any(|r| redirect_matches(r, asked))
    }
}

/// `POST /oauth/register` body (RFC 7591 §2). Unknown members are ignored, as the RFC asks.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct RegistrationRequest {
    /// At most 10: https URLs, `http` loopback URLs (127.0.0.1, [::1], localhost; any port at
    /// use), or private-use schemes of native apps (`com.example.app:/callback`).
    #[serde(default)]
    #[schema(min_items = 1, max_items = 10)]
    pub redirect_uris: Vec<String>,
    /// Shown on the consent page (at most 200 characters).
    #[schema(max_length = 200)]
    pub client_name: Option<String>,
    /// `none` (public clients) when given.
    pub token_endpoint_auth_method: Option<String>,
    /// A subset of `authorization_code`, `refresh_token` when given.
    pub grant_types: Option<Vec<String>>,
    /// `code` when given.
    pub response_types: Option<Vec<String>>,
}

/// The registered client (RFC 7591 §3.2.1).
#[derive(Debug, Serialize, ToSchema)]
pub struct RegistrationResponse {
    pub client_id: String,
    pub client_id_issued_at: i64,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub grant_types: Vec<String>,
    pub response_types: Vec<String>,
    pub token_endpoint_auth_method: String,
}

/// Registers a public client (RFC 7591). Errors are RFC 7591's `{"error",
/// "error_description"}`: `invalid_redirect_uri`, `invalid_client_metadata`.
#[utoipa::path(post, path = "/oauth/register", tag = "oauth",
    request_body(content = RegistrationRequest, content_type = "application/json"),
    responses(
        (status = 201, body = RegistrationResponse),
        (status = 400, description = "invalid_redirect_uri or invalid_client_metadata (RFC 7591 §3.2.2)"),
        (status = 429, description = "too many registrations from this address"),
    ))]
pub async fn register(
    State(state): State<AppState>,
    peer: PeerAddr,
    body: axum::body::Bytes,
) -> Result<Response, OAuthError> {
    limit_address(&state, peer, "oauth_register", REQUESTS_PER_MIN_PER_ADDRESS)?;
    let req: RegistrationRequest = serde_json::from_slice(&body).map_err(|e| {
        OAuthError::new(
            "invalid_client_metadata",
            format!("the body is not client metadata JSON: {e}"),
        )
    })?;
    let metadata = check_metadata(
        req.redirect_uris,
        req.client_name,
        req.token_endpoint_auth_method.as_deref(),
        req.grant_types.as_deref(),
        req.response_types.as_deref(),
    )?;
    let client =
        clients::register(&state.store, metadata.client_name, metadata.redirect_uris).await?;
    tracing::info!(client_id = %client.client_id, "OAuth client registered");
    let body = RegistrationResponse {
        client_id: client.client_id,
        client_id_issued_at: svc_core::plumbing::clock::now().unix_timestamp(),
        client_name: client.client_name,
        redirect_uris: client.redirect_uris,
        grant_types: vec!["authorization_code".into(), "refresh_token".into()],
        response_types: vec!["code".into()],
        token_endpoint_auth_method: "none".into(),
    };
    Ok(no_store(
        (StatusCode::CREATED, axum::Json(body)).into_response(),
    ))
}

/// Checked metadata: a name and redirect URIs.
#[derive(Debug)]
struct Metadata {
    client_name: String,
    redirect_uris: Vec<String>,
}

fn check_metadata(
    redirect_uris: Vec<String>,
    client_name: Option<String>,
    auth_method: Option<&str>,
    grant_types: Option<&[String]>,
    response_types: Option<&[String]>,
) -> Result<Metadata, OAuthError> {
    let invalid = |m: String| OAuthError::new("invalid_client_metadata", m);
    if redirect_uris.is_empty() || redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(OAuthError::new(
            "invalid_redirect_uri",
            format!("redirect_uris must list 1 to {MAX_REDIRECT_URIS} URIs"),
        ));
    }
    for uri in &redirect_uris {
        check_redirect_uri(uri).map_err(|m| OAuthError::new("invalid_redirect_uri", m))?;
    }
    if let Some(m) = auth_method.filter(|m| *m != "none") {
        return Err(invalid(format!(
            "token_endpoint_auth_method {m:?} is not supported: clients are public (none) and use PKCE"
        )));
    }
    if let Some(g) = grant_types.and_then(|g| {
        g.iter()
            .find(|g| !matches!(g.as_str(), "authorization_code" | "refresh_token"))
    }) {
        return Err(invalid(format!("grant type {g:?} is not supported")));
    }
    if let Some(r) = response_types.and_then(|r| r.iter().find(|r| *r != "code")) {
        return Err(invalid(format!("response type {r:?} is not supported")));
    }
    let name = client_name.map(|n| n.trim().to_owned()).unwrap_or_default();
    if name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(invalid(format!(
            "client_name must be at most {MAX_NAME_CHARS} characters, without control characters"
        )));
    }
    let client_name = if name.is_empty() {
        // Named after where it sends people, which the consent page shows anyway.
        redirect_host(&redirect_uris[0]).unwrap_or_else(|| "Unnamed client".into())
    } else {
        name
    };
    Ok(Metadata {
        client_name,
        redirect_uris,
    })
}

/// A redirect URI a client may register: absolute, no fragment, and https, loopback http, or
/// a native app's private-use scheme (reverse domain name, RFC 8252 §7.1). Never `http` to
/// another host, nor schemes a browser would run (`javascript:`, `data:`).
pub fn check_redirect_uri(uri: &str) -> Result<(), String> {
    if uri.len() > MAX_URI_CHARS {
        return Err(format!(
            "a redirect URI is longer than {MAX_URI_CHARS} characters"
        ));
    }
    let url = Url::parse(uri).map_err(|e| format!("{uri:?} is not an absolute URI: {e}"))?;
    if url.fragment().is_some() {
        return Err(format!("{uri:?} has a fragment"));
    }
    match url.scheme() {
        "https" if url.host_str().is_some() => Ok(()),
        "http" if is_loopback(&url) => Ok(()),
        "http" => Err(format!(
            "{uri:?}: http redirect URIs must be loopback (127.0.0.1, [::1] or localhost)"
        )),
        s if s.contains('.') => Ok(()),
        s => Err(format!(
            "{uri:?}: scheme {s:?} is not allowed (https, loopback http, or a reverse-domain private-use scheme)"
        )),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host_str() {
        Some(h) if h.eq_ignore_ascii_case("localhost") => true,
        Some(h) => h
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

/// RFC 8252 §7.3 and OAuth 2.1 §2.3.1: exact string comparison, except that for loopback
/// `http` URIs the port is not compared.
pub fn redirect_matches(registered: &str, asked: &str) -> bool {
    if registered == asked {
        return true;
    }
    let (Ok(r), Ok(a)) = (Url::parse(registered), Url::parse(asked)) else {
        return false;
    };
    if r.scheme() != "http" || a.scheme() != "http" || !is_loopback(&r) || !is_loopback(&a) {
        return false;
    }
    let (mut r, mut a) = (r, a);
    // Both are http URLs with a host, so setting the port cannot fail.
    let _ = r.set_port(None);
    let _ = a.set_port(None);
    r == a
}

/// The host a redirect URI sends people to (shown on the consent page).
pub fn redirect_host(uri: &str) -> Option<String> {
    let url = Url::parse(uri).ok()?;
    Some(match url.host_str() {
        Some(h) => h.to_owned(),
        None => format!("{}:", url.scheme()),
    })
}

/// Why a client could not be identified. Never a reason to redirect (RFC 6749 §4.1.2.1).
pub type ClientProblem = String;

/// The client `client_id` names: a registered one, or a metadata document's.
pub async fn resolve(state: &AppState, client_id: &str) -> Result<Client, ClientProblem> {
    if client_id.starts_with(clients::CLIENT_PREFIX) {
        return match clients::find(&state.store, client_id).await {
            Ok(Some(c)) => Ok(Client {
                client_id: c.client_id,
                client_name: c.client_name,
                redirect_uris: c.redirect_uris,
            }),
            Ok(None) => Err(format!("unknown client_id {client_id:?}")),
            Err(e) => {
                tracing::error!(error = %e, "reading an OAuth client failed");
                Err("the client could not be read; try again".into())
            }
        };
    }
    if client_id.starts_with("https://") || client_id.starts_with("http://") {
        return fetch_metadata_document(state, client_id).await;
    }
    Err(format!(
        "unknown client_id {client_id:?}: register (POST /oauth/register) or use the https URL of a client metadata document"
    ))
}

/// A Client ID Metadata Document: `client_id` must be the URL it was fetched from.
#[derive(Debug, Deserialize)]
struct MetadataDocument {
    client_id: String,
    #[serde(default)]
    redirect_uris: Vec<String>,
    client_name: Option<String>,
    token_endpoint_auth_method: Option<String>,
    grant_types: Option<Vec<String>>,
    response_types: Option<Vec<String>>,
}

/// Whether `client_id` may name a metadata document: an https URL with a path and no
/// fragment, credentials or dot segments. Plain http is accepted only to a loopback address
/// (development; the operator's destination rule refuses loopback unless allowed).
pub fn metadata_url(client_id: &str) -> Result<Url, ClientProblem> {
    if client_id.len() > MAX_URI_CHARS {
        return Err("the client_id URL is too long".into());
    }
    let url = Url::parse(client_id).map_err(|e| format!("client_id is not a URL: {e}"))?;
    let secure = url.scheme() == "https" || (url.scheme() == "http" && is_loopback(&url));
    if !secure
        || url.host_str().is_none()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
        || url.path() == "/"
        || client_id.contains("/./")
        || client_id.contains("/../")
    {
        return Err(format!(
            "client_id {client_id:?} is not a valid client metadata document URL (https, with a path)"
        ));
    }
    Ok(url)
}

async fn fetch_metadata_document(
    state: &AppState,
    client_id: &str,
) -> Result<Client, ClientProblem> {
    let url = metadata_url(client_id)?;
    let request = state
        .http
        .client()
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .timeout(METADATA_TIMEOUT);
    let unreachable = |e: String| format!("the client metadata document could not be fetched: {e}");
    let mut response = state
        .http
        .send(request)
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    if !response.status().is_success() {
        return Err(unreachable(format!("HTTP {}", response.status())));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| unreachable(without_url(e)))?
    {
        if body.len() + chunk.len() > MAX_METADATA_BYTES {
            return Err(format!(
                "the client metadata document is larger than {MAX_METADATA_BYTES} bytes"
            ));
        }
        body.extend_from_slice(&chunk);
    }
    let doc: MetadataDocument = serde_json::from_slice(&body)
        .map_err(|e| format!("the client metadata document is not valid JSON metadata: {e}"))?;
    if doc.client_id != client_id {
        return Err("the client metadata document's client_id differs from its URL".into());
    }
    let metadata = check_metadata(
        doc.redirect_uris,
        doc.client_name,
        doc.token_endpoint_auth_method.as_deref(),
        doc.grant_types.as_deref(),
        doc.response_types.as_deref(),
    )
    .map_err(|e| format!("the client metadata document: {}", e.description))?;
    Ok(Client {
        client_id: client_id.to_owned(),
        client_name: metadata.client_name,
        redirect_uris: metadata.redirect_uris,
    })
}

fn without_url(e: reqwest::Error) -> String {
    e.without_url().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_registrable() {
        for ok in [
            "https://app.example.com/cb",
            "http://127.0.0.1:3000/callback",
            "http://[::1]/cb",
            "http://localhost:9/cb?x=1",
            "com.example.app:/oauth",
        ] {
            assert!(check_redirect_uri(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://evil.example/cb",
            "javascript:alert(1)",
            "data:text/html,hi",
            "https://app.example.com/cb#frag",
            "/relative",
            "",
        ] {
            assert!(check_redirect_uri(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn redirects_match_exactly_but_loopback_ports_vary() {
        assert!(redirect_matches(
            "https://a.example/cb",
            "https://a.example/cb"
        ));
        assert!(!redirect_matches(
            "https://a.example/cb",
            "https://a.example/cb/"
        ));
        assert!(!redirect_matches(
            "https://a.example/cb",
            "https://a.example:444/cb"
        ));
        assert!(!redirect_matches(
            "https://a.example/cb",
            "https://a.example/cb?x=1"
        ));
        assert!(redirect_matches(
            "http://127.0.0.1:1/cb",
            "http://127.0.0.1:5555/cb"
        ));
        assert!(redirect_matches(
            "http://localhost/cb",
            "http://localhost:8080/cb"
        ));
        assert!(!redirect_matches(
            "http://127.0.0.1:1/cb",
            "http://127.0.0.1:5555/other"
        ));
        assert!(!redirect_matches(
            "http://127.0.0.1/cb",
            "http://localhost/cb"
        ));
        assert!(!redirect_matches(
            "https://127.0.0.1/cb",
            "https://127.0.0.1:9/cb"
        ));
    }

    #[test]
    fn metadata_document_urls() {
        assert!(metadata_url("https://client.example/oauth/metadata.json").is_ok());
        assert!(metadata_url("http://127.0.0.1:9/client.json").is_ok());
        for bad in [
            "http://client.example/meta.json",
            "https://client.example/",
            "https://user:pw@client.example/m",
            "https://client.example/m#x",
            "https://client.example/a/../m",
        ] {
            assert!(metadata_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn registration_metadata() {
        let ok = check_metadata(
            vec!["https://a.example/cb".into()],
            None,
            Some("none"),
            None,
            None,
        )
        .expect("valid");
        assert_eq!(ok.client_name, "a.example");
        assert!(check_metadata(vec![], None, None, None, None).is_err());
        assert!(check_metadata(
            vec!["https://a.example/cb".into()],
            None,
            Some("client_secret_basic"),
            None,
            None
        )
        .is_err());
        assert!(check_metadata(
            vec!["https://a.example/cb".into()],
            None,
            None,
            Some(&["implicit".into()]),
            None
        )
        .is_err());
    }
}
