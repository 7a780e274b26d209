//! `/mcp`: the MCP server over streamable HTTP (thin adapter over `crate::mcp`). POST carries
//! JSON-RPC messages and is answered with `application/json` (202 when there is nothing to
//! answer); there is no server-initiated stream, so GET is 405; DELETE ends a session. The agent
//! key (`Authorization: Bearer` or `X-API-Key`) is resolved on every request.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::{Code, Error};
use crate::http::context;
use crate::http::error::ErrorBody;
use crate::http::extract::{payload_too_large, AgentKeyAuth};
use crate::mcp::{self, Caller, Headers, Refusal};
use crate::state::AppState;

/// Session header of the streamable HTTP transport.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// Negotiated protocol revision, sent by clients after initialization.
pub const PROTOCOL_HEADER: &str = "mcp-protocol-version";

/// MCP JSON-RPC message (or batch) for the agent key's tools. `initialize` answers with an
/// `Mcp-Session-Id` header; later messages may carry it.
#[utoipa::path(post, path = "/mcp", tag = "mcp",
    request_body(content = Object, content_type = "application/json",
        description = "A JSON-RPC 2.0 request, notification or response, or a batch of them"),
    params(
        ("Mcp-Session-Id" = Option<String>, Header, description = "Session from initialize"),
        ("MCP-Protocol-Version" = Option<String>, Header, description = "Negotiated revision"),
    ),
    responses(
    (status = 200, description = "JSON-RPC response(s)", content_type = "application/json", body = Object),
    (status = 202, description = "Only notifications or responses were sent"),
    (status = 400, description = "Not JSON-RPC (JSON-RPC error body), or an unsupported MCP-Protocol-Version"),
    (status = 401, body = ErrorBody),
    (status = 403, description = "not an agent key", body = ErrorBody),
    (status = 404, description = "unknown or expired session: initialize again", body = ErrorBody),
    (status = 415, body = ErrorBody),
    (status = 429, body = ErrorBody),
))]
pub async fn post(
    State(state): State<AppState>,
    AgentKeyAuth(key): AgentKeyAuth,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Error> {
    check_origin(&headers)?;
    if !is_json(&headers) {
        return Err(Error::new(
            Code::UnsupportedMediaType,
            "MCP messages must be JSON (Content-Type: application/json)",
        ));
    }
    let body = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            payload_too_large()
        } else {
            Error::invalid_input(e.body_text())
        }
    })?;
    let caller = Caller {
        state: &state,
        key: &key,
        request_id: context::request_id().unwrap_or_else(crate::plumbing::ids::request_id),
        sessions: &state.mcp_sessions,
    };
    let transport = Headers {
        session_id: text(&headers, SESSION_HEADER)?,
        protocol_version: text(&headers, PROTOCOL_HEADER)?,
    };
    let reply = mcp::handle(&caller, transport, &body)
        .await
        .map_err(refusal)?;
    for msg in reply.stream {
        state.realtime.publish(key.workspace_id(), msg);
    }
    let mut response = match reply.body {
        None => StatusCode::ACCEPTED.into_response(),
        Some(body) => {
            let status = if reply.malformed {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::OK
            };
            (status, axum::Json(body)).into_response()
        }
    };
    if let Some(id) = reply.new_session {
        if let Ok(v) = HeaderValue::from_str(&id) {
            response.headers_mut().insert(SESSION_HEADER, v);
        }
    }
    Ok(response)
}

/// Ends an MCP session (`Mcp-Session-Id`).
#[utoipa::path(delete, path = "/mcp", tag = "mcp",
    params(("Mcp-Session-Id" = String, Header, description = "Session to end")),
    responses(
    (status = 204, description = "Session ended"),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 404, description = "no such session for this key", body = ErrorBody),
))]
pub async fn delete(
    State(state): State<AppState>,
    AgentKeyAuth(key): AgentKeyAuth,
    headers: HeaderMap,
) -> Result<StatusCode, Error> {
    let id = text(&headers, SESSION_HEADER)?
        .ok_or_else(|| Error::invalid_input("the Mcp-Session-Id header is required"))?;
    if state.mcp_sessions.end(id, &key.id) {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(refusal(Refusal::UnknownSession))
    }
}

fn refusal(r: Refusal) -> Error {
    match r {
        Refusal::UnknownSession => Error::new(Code::NotFound, r.message()),
        Refusal::UnsupportedProtocolVersion(_) => Error::invalid_input(r.message()),
    }
}

/// DNS-rebinding guard (required of MCP's HTTP transport): a browser page may post here only
/// from the server's own origin. Non-browser clients send no `Origin` and are unaffected; the
/// key header is what authenticates either way.
fn check_origin(headers: &HeaderMap) -> Result<(), Error> {
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
        )),
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

fn text<'h>(headers: &'h HeaderMap, name: &str) -> Result<Option<&'h str>, Error> {
    headers
        .get(name)
        .map(|v| {
            v.to_str()
                .map_err(|_| Error::invalid_input(format!("the {name} header is not valid text")))
        })
        .transpose()
}
