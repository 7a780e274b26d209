//! The outermost per-request layer: request id, tracing span, early body-size check, error
//! bodies for responses the router makes itself, rate-limit headers, metrics and the access log.

use crate::http::error::ErrorResponse;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Instrument;

use super::context::{self, RequestContext};
use super::drain;
use super::extract::payload_too_large;
use crate::state::AppState;
use svc_core::error::{Code, Error};
use svc_core::plumbing::ids;
use svc_core::ratelimit::Decision;

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

pub async fn request_context(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let request_id = ids::request_id();
    let method = req.method().clone();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let span =
        tracing::info_span!("request", request_id = %request_id, method = %method, route = %route);
    let ctx = RequestContext::new(request_id.clone());

    let mut response = context::scope(
        ctx.clone(),
        async move {
            // The handler reads the body through `retained`; what it leaves unread is drained
            // before the response goes out, so early refusals keep the connection.
            let (parts, body) = req.into_parts();
            let mut retained = drain::Retained::new(body);
            // A client that waits for `100 Continue` has not sent its body: asking for it only
            // to throw it away would make it upload up to 1 MiB for a refusal.
            if parts
                .headers
                .get(header::EXPECT)
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
            {
                retained.close_instead_of_draining();
            }
            let req = Request::from_parts(parts, retained.body());
            // Refuse a declared oversize body before reading any of it.
            let response = if declared_length(req.headers())
                .is_some_and(|n| n > super::limits::MAX_BODY_BYTES as u64)
            {
                ErrorResponse(payload_too_large()).into_response()
            } else {
                with_error_body(next.run(req).await).await
            };
            retained
                .drain(super::limits::MAX_BODY_BYTES, response)
                .await
        }
        .instrument(span.clone()),
    )
    .await;

    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        headers.insert(REQUEST_ID, v);
    }
    // Browsers must take every answer as the type it declares (no sniffing a JSON error or an
    // uploaded text into HTML).
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if let Some(decision) = ctx.rate() {
        rate_headers(headers, &decision);
    }
    let status = response.status().as_u16();
    let elapsed = started.elapsed();
    state
        .metrics
        .observe(method.as_str(), &route, status, elapsed);
    span.in_scope(|| {
        tracing::info!(
            status,
            latency_ms = elapsed.as_secs_f64() * 1000.0,
            "request finished"
        );
    });
    response
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// Gives error responses produced by the router, a layer or an extractor without our error
/// body (a bodiless 405, a body-limit 413, axum's plain-text rejections such as a WebSocket
/// route asked without an upgrade) the error body every route promises. Headers such as
/// `Allow` are kept.
async fn with_error_body(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    // The dashboard's HTML error pages explain themselves to a person (docs/dashboard.md).
    let is_html = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/html"));
    if !(status.is_client_error() || status.is_server_error()) || is_json || is_html {
        return response;
    }
    let code = match status {
        StatusCode::NOT_FOUND => Code::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => Code::MethodNotAllowed,
        StatusCode::PAYLOAD_TOO_LARGE => Code::PayloadTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => Code::UnsupportedMediaType,
        s if s.is_server_error() => Code::Internal,
        _ => Code::InvalidInput,
    };
    let is_text = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/plain"));
    let (mut parts, body) = response.into_parts();
    // A plain-text rejection says what was wrong: keep its words as the message.
    let said = if is_text {
        axum::body::to_bytes(body, 4096)
            .await
            .ok()
            .and_then(|b| String::from_utf8(b.to_vec()).ok())
            .filter(|t| !t.trim().is_empty())
    } else {
        None
    };
    let message = match (code, said) {
        (Code::MethodNotAllowed, _) => "this route does not support the request method".to_owned(),
        (Code::NotFound, _) => "no such route".to_owned(),
        (_, Some(text)) => text.trim().to_owned(),
        _ => status.canonical_reason().unwrap_or("error").to_lowercase(),
    };
    let fresh = ErrorResponse(Error::new(code, message)).into_response();
    let (fresh_parts, body) = fresh.into_parts();
    for (name, value) in fresh_parts.headers.iter() {
        parts.headers.insert(name.clone(), value.clone());
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, body)
}

fn rate_headers(headers: &mut HeaderMap, d: &Decision) {
    for (name, value) in [
        ("x-ratelimit-limit", u64::from(d.limit)),
        ("x-ratelimit-remaining", u64::from(d.remaining)),
        ("x-ratelimit-reset", d.reset_secs),
    ] {
        headers.insert(HeaderName::from_static(name), HeaderValue::from(value));
    }
    if !d.allowed {
        headers.insert(
            header::RETRY_AFTER,
            HeaderValue::from(d.retry_after_secs.max(1)),
        );
    }
}

/// 404 for unknown routes, with the error body.
pub async fn not_found() -> ErrorResponse {
    ErrorResponse(Error::new(Code::NotFound, "no such route"))
}

/// 500 for a panicking handler: logged with the request id, generic to the client.
pub fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    ErrorResponse(Error::internal(format!("handler panicked: {detail}"))).into_response()
}
