//! The MCP server (Model Context Protocol), once, for every transport: JSON-RPC 2.0 messages in,
//! JSON-RPC messages out. `http::routes::mcp` mounts it as streamable HTTP at `/mcp`; `svc mcp`
//! (the CLI) bridges stdio to that route, so there is one implementation and the CLI stays an
//! HTTP client. No axum types here.
//!
//! Methods: `initialize` (protocol version negotiation, a session), `notifications/initialized`
//! and other notifications (accepted, nothing to answer), `ping`, `tools/list` and `tools/call`
//! (see [`tools`]). The caller's agent key is resolved by the transport on every message, so a
//! revoked key stops working at once, and `tools/call` goes through `gateway::invoke`, which
//! checks grants, modes, quota and idempotency on every call.

pub mod session;
pub mod tools;

use serde_json::{json, Value};

use crate::events::StreamMessage;
use crate::gateway;
use crate::keys::AgentKey;
pub use session::Sessions;

/// Protocol revisions this server speaks, newest first. The tool surface used here (tools with
/// annotations, structured content, titles) reads the same in all of them.
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Server name and version in `initialize`.
pub const SERVER_NAME: &str = "svcd";

// JSON-RPC 2.0 error codes.
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

const INSTRUCTIONS: &str = "Tools are the capabilities this agent key may call on the customer \
intelligence gateway. Each accepts `_mode` (dry_run, queue or execute, limited to the key's \
modes) and `_idempotency_key`. Results are the gateway envelope: status, result, \
action_credit_cost, quota, request_id and receipt_url.";

/// Who is calling and where invocations go.
#[derive(Debug)]
pub struct Caller<'a> {
    pub state: &'a crate::state::AppState,
    pub key: &'a AgentKey,
    /// The transport request's id (`req_...`): the id of the first invocation it carries.
    pub request_id: String,
    pub sessions: &'a Sessions,
}

/// Transport headers the protocol cares about.
#[derive(Clone, Copy, Debug, Default)]
pub struct Headers<'a> {
    pub session_id: Option<&'a str>,
    pub protocol_version: Option<&'a str>,
}

/// Why a message was refused before JSON-RPC processing (the transport answers with a status).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Unknown, expired or another key's session: the client must initialize again (404).
    UnknownSession,
    /// `MCP-Protocol-Version` names a revision this server does not speak (400).
    UnsupportedProtocolVersion(String),
}

impl Refusal {
    pub fn message(&self) -> String {
        match self {
            Refusal::UnknownSession => {
                "unknown or expired MCP session; send initialize again".to_owned()
            }
            Refusal::UnsupportedProtocolVersion(v) => format!(
                "unsupported MCP protocol version {v:?}; supported: {}",
                PROTOCOL_VERSIONS.join(", ")
            ),
        }
    }
}

/// What to answer.
#[derive(Debug, Default)]
pub struct Reply {
    /// JSON-RPC response(s); `None` when the input held only notifications or responses.
    pub body: Option<Value>,
    /// The input was not a valid JSON-RPC message (answered with 400 and the error in `body`).
    pub malformed: bool,
    /// Session created by an `initialize` in this input.
    pub new_session: Option<String>,
    /// Real-time messages of committed events, for the caller to publish.
    pub stream: Vec<StreamMessage>,
}

/// Handles one transport message: a JSON-RPC request, notification or response, or a batch.
pub async fn handle(
    caller: &Caller<'_>,
    headers: Headers<'_>,
    body: &[u8],
) -> Result<Reply, Refusal> {
    if let Some(v) = headers.protocol_version {
        if !PROTOCOL_VERSIONS.contains(&v) {
            return Err(Refusal::UnsupportedProtocolVersion(v.to_owned()));
        }
    }
    let message: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return Ok(Reply {
                body: Some(error_response(
                    Value::Null,
                    PARSE_ERROR,
                    &format!("parse error: {e}"),
                )),
                malformed: true,
                ..Reply::default()
            })
        }
    };
    let is_initialize = |m: &Value| m.get("method").and_then(Value::as_str) == Some("initialize");
    let initializes = match &message {
        Value::Array(items) => items.iter().any(is_initialize),
        m => is_initialize(m),
    };
    // Sessions are optional (a client that never initialized, e.g. curl, may still call
    // tools), but a session that is named must be this key's and alive.
    if let (Some(id), false) = (headers.session_id, initializes) {
        if caller.sessions.touch(id, &caller.key.id).is_none() {
            return Err(Refusal::UnknownSession);
        }
    }
    let mut reply = Reply::default();
    let mut first_call = true;
    match message {
        Value::Array(items) if items.is_empty() => {
            reply.body = Some(error_response(Value::Null, INVALID_REQUEST, "empty batch"));
            reply.malformed = true;
        }
        Value::Array(items) => {
            let mut out = Vec::new();
            for item in items {
                if let Some(r) = one(caller, item, &mut reply, &mut first_call).await {
                    out.push(r);
                }
            }
            reply.body = (!out.is_empty()).then_some(Value::Array(out));
        }
        m => {
            reply.body = one(caller, m, &mut reply, &mut first_call).await;
            reply.malformed = reply
                .body
                .as_ref()
                .is_some_and(|b| b["error"]["code"] == json!(INVALID_REQUEST));
        }
    }
    Ok(reply)
}

/// One message; the response to send, if any.
async fn one(
    caller: &Caller<'_>,
    message: Value,
    reply: &mut Reply,
    first_call: &mut bool,
) -> Option<Value> {
    let Value::Object(mut m) = message else {
        return Some(error_response(
            Value::Null,
            INVALID_REQUEST,
            "a JSON-RPC message must be an object",
        ));
    };
    let id = m.remove("id");
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some(error_response(
            id.unwrap_or(Value::Null),
            INVALID_REQUEST,
            "jsonrpc must be \"2.0\"",
        ));
    }
    let Some(method) = m.get("method").and_then(Value::as_str).map(str::to_owned) else {
        // A response or error from the client: this server sends no requests, so there is
        // nothing to match it to; accepted and dropped.
        return None;
    };
    let Some(id) = id else {
        // A notification (notifications/initialized, notifications/cancelled, ...): accepted.
        return None;
    };
    if !(id.is_string() || id.is_i64() || id.is_u64()) {
        return Some(error_response(
            Value::Null,
            INVALID_REQUEST,
            "id must be a string or an integer",
        ));
    }
    let params = m.remove("params");
    let result = match method.as_str() {
        "initialize" => {
            let (result, session) = initialize(caller, params.as_ref());
            reply.new_session = Some(session);
            Ok(result)
        }
        "ping" => Ok(json!({})),
        "tools/list" => Ok(tools::list(caller.key)),
        "tools/call" => call(caller, params, reply, first_call).await,
        other => Err((METHOD_NOT_FOUND, format!("method not found: {other}"))),
    };
    Some(match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => error_response(id, code, &message),
    })
}

/// Picks the client's version when this server speaks it, else the newest it speaks (the
/// client then decides whether to continue).
pub fn negotiate(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|r| PROTOCOL_VERSIONS.iter().find(|v| **v == r))
        .copied()
        .unwrap_or(PROTOCOL_VERSIONS[0])
}

fn initialize(caller: &Caller<'_>, params: Option<&Value>) -> (Value, String) {
    let requested = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str);
    let version = negotiate(requested);
    let session = caller.sessions.create(&caller.key.id, version);
    let result = json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {
            "name": SERVER_NAME,
            "title": "Customer intelligence capability gateway",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "instructions": INSTRUCTIONS,
    });
    (result, session)
}

async fn call(
    caller: &Caller<'_>,
    params: Option<Value>,
    reply: &mut Reply,
    first_call: &mut bool,
) -> Result<Value, (i64, String)> {
    let Some(Value::Object(mut params)) = params else {
        return Err((
            INVALID_PARAMS,
            "tools/call needs params {name, arguments}".to_owned(),
        ));
    };
    let Some(Value::String(name)) = params.remove("name") else {
        return Err((INVALID_PARAMS, "tools/call needs a tool name".to_owned()));
    };
    let Some(capability) = tools::capability_of(&name) else {
        return Err((INVALID_PARAMS, format!("unknown tool: {name}")));
    };
    // Each invocation needs its own id (it keys the receipt); the first one of the transport
    // request takes the request's id so logs and receipts line up.
    let request_id = if std::mem::take(first_call) {
        caller.request_id.clone()
    } else {
        crate::plumbing::ids::request_id()
    };
    let req = match tools::request(params.remove("arguments")) {
        Ok(req) => req,
        Err(e) => return Ok(tools::failure(&e, &request_id)),
    };
    match gateway::invoke(
        caller.state,
        caller.key,
        capability,
        req,
        request_id.clone(),
    )
    .await
    {
        Ok(mut out) => {
            if let Some(msg) = out.stream.take() {
                reply.stream.push(msg);
            }
            Ok(tools::success(&out.body, out.replayed))
        }
        Err(e) => {
            tracing::debug!(code = e.code.as_str(), tool = %name, "MCP tool call refused");
            Ok(tools::failure(&e, &request_id))
        }
    }
}

fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_known_versions_and_offers_the_newest_otherwise() {
        assert_eq!(negotiate(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate(Some("2024-11-05")), "2024-11-05");
        assert_eq!(negotiate(Some("1999-01-01")), PROTOCOL_VERSIONS[0]);
        assert_eq!(negotiate(None), PROTOCOL_VERSIONS[0]);
    }
}
