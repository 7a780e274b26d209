//! `/mcp`: the MCP server over streamable HTTP (thin adapter over rmcp's service in
//! `crate::mcp::transport`). The access layer admits an agent key (`Authorization: Bearer` or
//! `X-API-Key`) on every request; this adapter refuses browser pages of another origin, hands
//! the request with its [`Caller`] to rmcp, and puts rmcp's plain-text refusals (405, 413, 415,
//! an unsupported `MCP-Protocol-Version`) into the API's error envelope. JSON-RPC answers pass
//! through untouched.

use crate::http::error::ErrorResponse;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::http::context;
use crate::http::error::ErrorBody;
use crate::http::extract::AgentKeyAuth;
use crate::http::limits::MAX_BODY_BYTES;
use crate::mcp::transport::Endpoint;
use crate::mcp::Caller;
use crate::state::AppState;
use svc_core::error::{Code, Error};

/// rmcp's transport keeps no state of its own (no MCP sessions), so one serves the process.
static ENDPOINT: std::sync::LazyLock<Endpoint> =
    std::sync::LazyLock::new(|| Endpoint::new(MAX_BODY_BYTES));

/// What a client that accepts any media type (no `Accept`, or `*/*` as curl and most HTTP
/// libraries send) is taken to name; rmcp requires both to be named.
const ACCEPT_ANY: &str = "application/json, text/event-stream";
/// Longest rmcp refusal text read back into the error envelope.
const MAX_REFUSAL_BYTES: usize = 4096;

/// An MCP JSON-RPC message (request, notification or response) for the agent key's tools.
/// Stateless: no `Mcp-Session-Id` is issued or needed.
#[utoipa::path(post, path = "/mcp", tag = "mcp",
    request_body(content = crate::http::request_docs::JsonRpcMessage, content_type = "application/json",
        description = "One JSON-RPC 2.0 request, notification or response (no batches)"),
    params(
        ("MCP-Protocol-Version" = Option<String>, Header, description = "Negotiated revision"),
    ),
    responses(
    (status = 200, description = "JSON-RPC response", content_type = "application/json", body = Object),
    (status = 202, description = "A notification or response was accepted"),
    (status = 400, description = "An unsupported MCP-Protocol-Version (the error body), or a body that is not one JSON-RPC 2.0 message (JSON-RPC's refusal)",
        content_type = "application/json",
        body = crate::http::request_docs::McpRefusal),
    (status = 401, body = ErrorBody),
    (status = 403, description = "not an agent key, or another origin", body = ErrorBody),
    (status = 413, body = ErrorBody),
    (status = 415, description = "not JSON, or not a JSON-RPC message", body = ErrorBody),
    (status = 429, body = ErrorBody),
))]
pub async fn post(
    State(state): State<AppState>,
    AgentKeyAuth(key): AgentKeyAuth,
    request: Request,
) -> Result<Response, ErrorResponse> {
    check_origin(request.headers())?;
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| {
            Error::new(
                Code::PayloadTooLarge,
                format!("request body exceeds {MAX_BODY_BYTES} bytes"),
            )
        })?;
    if is_json(&parts.headers) {
        if let Some(refusal) = json_rpc_refusal(&body) {
            return Ok(refusal);
        }
    }
    let mut request = Request::from_parts(parts, Body::from(body));
    if accepts_anything(request.headers()) {
        request
            .headers_mut()
            .insert(header::ACCEPT, HeaderValue::from_static(ACCEPT_ANY));
    }
    request.extensions_mut().insert(Caller {
        state: state.clone(),
        key,
        request_id: context::request_id().unwrap_or_else(svc_core::plumbing::ids::request_id),
    });
    let response = ENDPOINT.handle(request).await;
    Ok(enveloped(response).await)
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

/// JSON-RPC's own answer, as HTTP 400 with a null id, for a JSON body that is not one JSON-RPC
/// 2.0 message (rmcp refuses these with a plain 415, which says "wrong media type" about a
/// body that is JSON): a parse error (-32700), or an invalid request (-32600), which includes a
/// batch (MCP removed batches in 2025-06-18).
fn json_rpc_refusal(body: &[u8]) -> Option<Response> {
    let (code, message) = match serde_json::from_slice::<Value>(body) {
        Err(e) => (-32700, format!("Parse error: {e}")),
        Ok(Value::Object(m)) if m.get("jsonrpc").and_then(Value::as_str) == Some("2.0") => {
            return None
        }
        Ok(Value::Object(_)) => (-32600, r#"Invalid Request: "jsonrpc" must be "2.0""#.into()),
        Ok(Value::Array(_)) => (
            -32600,
            "Invalid Request: batches are not supported (MCP 2025-06-18 removed them)".into(),
        ),
        Ok(_) => (-32600, "Invalid Request: not a JSON-RPC message".into()),
    };
    let error = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    Some((StatusCode::BAD_REQUEST, Json(error)).into_response())
}

fn accepts_anything(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(header::ACCEPT).iter().peekable();
    values.peek().is_none()
        || values
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|range| range.split(';').next().is_some_and(|m| m.trim() == "*/*"))
}

/// rmcp answers transport refusals with plain text; the API answers errors with its envelope.
async fn enveloped(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let code = match status {
        StatusCode::BAD_REQUEST => Code::InvalidInput,
        StatusCode::FORBIDDEN => Code::Forbidden,
        StatusCode::NOT_FOUND => Code::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => Code::MethodNotAllowed,
        StatusCode::PAYLOAD_TOO_LARGE => Code::PayloadTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => Code::UnsupportedMediaType,
        StatusCode::INTERNAL_SERVER_ERROR => Code::Internal,
        _ => return response,
    };
    if is_json {
        return response; // a JSON-RPC error body
    }
    let allow = response.headers().get(header::ALLOW).cloned();
    let text = axum::body::to_bytes(response.into_body(), MAX_REFUSAL_BYTES)
        .await
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let mut out = ErrorResponse(Error::new(code, text.trim().to_owned())).into_response();
    if let Some(allow) = allow {
        out.headers_mut().insert(header::ALLOW, allow);
    }
    out
}

/// DNS-rebinding guard (required of MCP's HTTP transport): a browser page may post here only
/// from the server's own origin. Non-browser clients send no `Origin` and are unaffected; the
/// key header is what authenticates either way. (rmcp's own Origin check takes a fixed list;
/// svcd's origin is whatever host it is reached by.)
fn check_origin(headers: &HeaderMap) -> Result<(), ErrorResponse> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin_host = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .map(|(_, rest)| rest.trim_end_matches('/'));
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    match (origin_host, host) {
        (Some(o), Some(h)) if o.eq_ignore_ascii_case(h) => Ok(()),
        _ => Err(Error::forbidden(
            "cross-origin MCP requests are refused (the Origin header does not match this server)",
        )
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::ACCEPT, HeaderValue::from_str(v).expect("header"));
        }
        h
    }

    #[test]
    fn json_that_is_not_one_json_rpc_message_gets_json_rpc_errors() {
        let code = |body: &str| {
            json_rpc_refusal(body.as_bytes())
                .inspect(|r| assert_eq!(r.status(), StatusCode::BAD_REQUEST))
        };
        assert!(code(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_none());
        for body in ["{not json", r#"{"jsonrpc":"1.0","id":1}"#, "[1,2]", "7"] {
            assert!(code(body).is_some(), "{body}");
        }
    }

    #[test]
    fn only_clients_that_accept_anything_get_the_default() {
        assert!(accepts_anything(&accept(&[])));
        assert!(accepts_anything(&accept(&["*/*"])));
        assert!(accepts_anything(&accept(&["text/html, */*;q=0.8"])));
        assert!(!accepts_anything(&accept(&["application/json"])));
        assert!(!accepts_anything(&accept(&[
            "application/json, text/event-stream"
        ])));
    }
}
