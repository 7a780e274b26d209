//! Extractors: JSON bodies and paths whose failures use the service's error body, and the
//! authentication extractors that make each handler's required credential part of its
//! signature.

use crate::http::error::ErrorResponse;
use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::access::{self, Caller};
use crate::state::AppState;
use svc_core::auth::{Principal, UserSession};
use svc_core::error::{Code, Error};
use svc_core::keys::{AgentKey, KeyKind};
use svc_core::store::WorkspaceId;

/// `Json` with the service's error body: 415 without a JSON content type, 400 `invalid_json`
/// for malformed JSON, 400 `invalid_input` for a schema mismatch (naming the field), 413 past
/// the body limit. The body is read by [`parse_body`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ErrorResponse;

    async fn from_request(req: Request, state: &S) -> Result<Self, ErrorResponse> {
        let RawJson { value, .. } = RawJson::from_request(req, state).await?;
        Ok(ApiJson(typed(value)?))
    }
}

impl<T: Serialize> IntoResponse for ApiJson<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

/// The one reader of JSON request bodies (whatever extractor or handler holds the bytes):
/// malformed JSON is 400 `invalid_json`; numbers with an integral value (`332.0`) are integers,
/// as JSON Schema counts them (docs/api-contract.md); a value that does not fit `T` is 400
/// `invalid_input` naming the field.
pub fn parse_body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    typed(parse_value(bytes)?)
}

/// An optional JSON body: no bytes at all, or `null`, mean absent. Anything else must be JSON
/// (a body of only whitespace is not, and is refused like any other malformed body).
pub fn parse_optional_body<T: DeserializeOwned>(bytes: &[u8]) -> Result<Option<T>, Error> {
    if bytes.is_empty() {
        return Ok(None);
    }
    parse_body(bytes)
}

/// The body as a JSON value, with integral numbers as integers.
fn parse_value(bytes: &[u8]) -> Result<serde_json::Value, Error> {
    let mut value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
        Error::new(
            Code::InvalidJson,
            format!("the body is not valid JSON: {e}"),
        )
    })?;
    svc_core::fields::integral_numbers_as_integers(&mut value);
    Ok(value)
}

fn typed<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, Error> {
    // serde reads a struct from an array of its fields in order; no route takes an array body.
    if value.is_array() {
        return Err(Error::invalid_input(
            "the body must be a JSON object, not an array",
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            Error::invalid_input(format!("the body does not match the schema: {inner}"))
        } else {
            Error::invalid_input(format!("{path}: {inner}"))
                .with_details(serde_json::json!({ "field": path }))
        }
    })
}

fn not_json() -> Error {
    Error::new(
        Code::UnsupportedMediaType,
        "request bodies must be JSON (Content-Type: application/json)",
    )
}

pub fn payload_too_large() -> Error {
    Error::new(
        Code::PayloadTooLarge,
        format!(
            "request body exceeds {} bytes",
            super::limits::MAX_BODY_BYTES
        ),
    )
}

/// A JSON body kept with its exact bytes (for signatures computed over them), with
/// [`ApiJson`]'s checks and errors.
#[derive(Debug)]
pub struct RawJson {
    pub bytes: axum::body::Bytes,
    pub value: serde_json::Value,
}

impl<S: Send + Sync> FromRequest<S> for RawJson {
    type Rejection = ErrorResponse;

    async fn from_request(req: Request, state: &S) -> Result<Self, ErrorResponse> {
        if !json_content_type(req.headers()) {
            return Err(not_json().into());
        }
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|e| {
                if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                    payload_too_large()
                } else {
                    Error::invalid_input(e.body_text())
                }
            })?;
        let value = parse_value(&bytes)?;
        Ok(RawJson { bytes, value })
    }
}

/// `application/json` or an `application/*+json` type, as `axum::Json` accepts.
fn json_content_type(headers: &axum::http::HeaderMap) -> bool {
    let Some(ct) = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = ct
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// `Path` whose failures are 400 `invalid_input` with the error body.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ErrorResponse> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(v)) => Ok(ApiPath(v)),
            Err(e) => Err(path_rejection(e).into()),
        }
    }
}

fn path_rejection(e: PathRejection) -> Error {
    Error::invalid_input(e.body_text())
}

// The auth extractors below state in each handler's signature which credential it works with.
// They resolve nothing themselves: `http::access` has already applied the route's rule and left
// the caller in the request; a mismatch between rule and signature still fails closed.

/// A dashboard session (JWT).
#[derive(Debug)]
pub struct JwtUser(pub UserSession);

impl<S: Send + Sync> FromRequestParts<S> for JwtUser {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ErrorResponse> {
        match access::caller(parts)?.principal() {
            Some(Principal::User(session)) => Ok(JwtUser(session.clone())),
            Some(Principal::Key(_)) => Err(Error::forbidden(
                "this route needs a dashboard session (JWT); agent keys cannot use it",
            )
            .into()),
            None => Err(unauthenticated().into()),
        }
    }
}

/// An agent key (`svc_live_`, either header form), already rate limited.
#[derive(Debug)]
pub struct AgentKeyAuth(pub AgentKey);

impl<S: Send + Sync> FromRequestParts<S> for AgentKeyAuth {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ErrorResponse> {
        match access::caller(parts)?.principal() {
            // An MCP client's OAuth approval acts exactly as an agent key (`svc_core::oauth`).
            Some(Principal::Key(key)) if matches!(key.kind, KeyKind::Agent | KeyKind::OAuth) => {
                Ok(AgentKeyAuth(key.clone()))
            }
            Some(_) => Err(Error::forbidden("this route needs an agent key").into()),
            None => Err(unauthenticated().into()),
        }
    }
}

/// A JWT or an agent key holding the route's grants (see the route's rule).
#[derive(Debug)]
pub struct AnyAuth(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for AnyAuth {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ErrorResponse> {
        match access::caller(parts)?.principal() {
            Some(p) => Ok(AnyAuth(p.clone())),
            None => Err(unauthenticated().into()),
        }
    }
}

/// Like [`AnyAuth`] on the ingestion routes, whose rule also accepts legacy `dsk_` keys.
#[derive(Debug)]
pub struct IngestAuth(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for IngestAuth {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ErrorResponse> {
        let AnyAuth(p) = AnyAuth::from_request_parts(parts, &()).await?;
        Ok(IngestAuth(p))
    }
}

/// The caller, or `None` on a route that serves anonymous callers (demo data).
#[derive(Debug)]
pub struct OptionalAuth(pub Option<Principal>);

impl<S: Send + Sync> FromRequestParts<S> for OptionalAuth {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ErrorResponse> {
        match access::caller(parts)? {
            Caller::Principal(p) => Ok(OptionalAuth(Some((**p).clone()))),
            Caller::Anonymous => Ok(OptionalAuth(None)),
            Caller::WebhookToken(_) => Err(unauthenticated().into()),
        }
    }
}

/// The workspace an ingestion request writes to: its credential's, or the one whose webhook
/// token it carries.
#[derive(Debug)]
pub struct IngestWorkspace(pub WorkspaceId);

impl<S: Send + Sync> FromRequestParts<S> for IngestWorkspace {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ErrorResponse> {
        match access::caller(parts)? {
            Caller::Principal(p) => Ok(IngestWorkspace(p.workspace())),
            Caller::WebhookToken(ws) => Ok(IngestWorkspace(*ws)),
            Caller::Anonymous => Err(unauthenticated().into()),
        }
    }
}

fn unauthenticated() -> Error {
    Error::unauthenticated("a valid agent key or session token is required")
}

/// Counts one request against `bucket`'s per-minute limit (an agent key id, or another
/// credential's bucket such as a webhook token's); the decision becomes the response's
/// `X-RateLimit-*` headers, and a refusal is 429 `rate_limited` with `Retry-After`.
/// The connection's peer as the server records it for every request (`ConnectInfo`), for
/// plain and TLS listeners alike.
#[derive(Clone, Copy, Debug)]
pub struct Peer(pub std::net::SocketAddr);

impl
    axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, tokio::net::TcpListener>>
    for Peer
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, tokio::net::TcpListener>) -> Self {
        Peer(*stream.remote_addr())
    }
}

impl
    axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, super::tls::TlsListener>>
    for Peer
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, super::tls::TlsListener>) -> Self {
        Peer(*stream.remote_addr())
    }
}

/// The address of the connection's peer (absent when the router is driven without a socket).
#[derive(Clone, Copy, Debug)]
pub struct PeerAddr(pub Option<std::net::IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for PeerAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(PeerAddr(
            parts
                .extensions
                .get::<axum::extract::ConnectInfo<Peer>>()
                .map(|c| c.0 .0.ip()),
        ))
    }
}

/// Sign-ups allowed per minute from one address (each costs an argon2 hash).
pub const REGISTER_PER_MIN_PER_ADDRESS: u32 = 10;
/// Sign-in attempts allowed per minute from one address, whatever emails they name (the
/// per-email limit of `auth::login_limiter` does not stop one address spraying many emails).
pub const LOGIN_PER_MIN_PER_ADDRESS: u32 = 30;

/// Applies a per-address limit to `what` (`register`, `login`); nothing without an address.
pub fn limit_address(
    state: &AppState,
    peer: PeerAddr,
    what: &str,
    per_min: u32,
) -> Result<(), Error> {
    match peer.0 {
        Some(ip) => super::rate_limit::rate_limit(state, &format!("addr:{what}:{ip}"), per_min),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize, PartialEq)]
    struct Note {
        note: String,
    }

    #[test]
    fn an_optional_body_is_absent_only_when_empty_or_null() {
        assert_eq!(parse_optional_body::<Note>(b"").expect("empty"), None);
        assert_eq!(parse_optional_body::<Note>(b"null").expect("null"), None);
        assert_eq!(
            parse_optional_body::<Note>(br#"{"note":"hi"}"#).expect("object"),
            Some(Note { note: "hi".into() })
        );
        // Whitespace alone is not a JSON text: refused, as schemathesis expects of the document.
        for junk in [&b"\r"[..], b" \n", b"{", b"[]"] {
            assert!(parse_optional_body::<Note>(junk).is_err(), "{junk:?}");
        }
    }
}
