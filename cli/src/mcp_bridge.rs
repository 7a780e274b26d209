//! `svc mcp`: the MCP server over stdio, as a bridge to svcd's streamable HTTP endpoint
//! (`POST /mcp`). Each newline-delimited JSON-RPC message read from stdin is posted with the
//! active key and the session header; each JSON-RPC answer is written to stdout as one line.
//! The protocol itself (tools from the key's capability listing, calls through the gateway
//! with source `mcp`) lives once, in the server; this stays an HTTP client.
//!
//! Transport failures become JSON-RPC errors for the request that met them (a revoked key, an
//! unreachable server), so the MCP client sees them instead of a silent hang. A session the
//! server no longer knows (404, e.g. after a restart) is re-established by replaying the
//! client's `initialize`, then the message is sent again.

use std::io::{BufRead, Write};
use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use crate::client::{Answer, Client};
use crate::error::{exit, CliError, Result};
use crate::Ctx;

pub const PATH: &str = "/mcp";
/// JSON-RPC error code (implementation-defined range) for transport failures.
pub const TRANSPORT_ERROR: i64 = -32001;
const MAX_RATE_RETRIES: u32 = 3;

/// Session state of the bridge.
#[derive(Debug, Default)]
pub struct Bridge {
    session: Option<String>,
    protocol_version: Option<String>,
    /// The client's initialize request, replayed when the server lost the session.
    initialize: Option<Vec<u8>>,
}

pub fn run(ctx: &Ctx) -> Result<u8> {
    let (client, _) = ctx.keyed_client()?;
    let mut bridge = Bridge::default();
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = line.map_err(|e| CliError::Local(format!("reading stdin: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        if let Some(answer) = bridge.relay(&client, line.into_bytes()) {
            let mut out = std::io::stdout().lock();
            let written = writeln!(out, "{answer}").and_then(|_| out.flush());
            if written.is_err() {
                break; // the client went away
            }
        }
    }
    bridge.close(&client);
    Ok(exit::OK)
}

impl Bridge {
    /// Relays one message; the line to write back, if any.
    pub fn relay(&mut self, client: &Client, message: Vec<u8>) -> Option<Value> {
        let parsed: Option<Value> = serde_json::from_slice(&message).ok();
        let id = parsed.as_ref().and_then(|m| m.get("id")).cloned();
        let is_request = id.is_some() && parsed.as_ref().is_some_and(|m| m.get("method").is_some());
        let is_initialize = parsed.as_ref().is_some_and(|m| m["method"] == "initialize");
        if is_initialize {
            self.session = None;
            self.protocol_version = None;
            self.initialize = Some(message.clone());
        }
        let mut answer = self.post(client, &message);
        if matches!(&answer, Ok(a) if a.status == 404)
            && !is_initialize
            && self.reinitialize(client)
        {
            answer = self.post(client, &message);
        }
        match answer {
            Ok(a) if a.status == 202 => None,
            Ok(a) if a.body.get("jsonrpc").is_some() || a.body.is_array() => {
                if is_initialize {
                    self.session = a.header("mcp-session-id").map(str::to_owned);
                    self.protocol_version = a.body["result"]["protocolVersion"]
                        .as_str()
                        .map(str::to_owned);
                }
                Some(a.body)
            }
            Ok(a) => self.failure(is_request, id, a.into_error()),
            Err(e) => self.failure(is_request, id, e),
        }
    }

    fn headers(&self) -> Vec<(&str, &str)> {
        let mut h = vec![("accept", "application/json, text/event-stream")];
        if let Some(s) = &self.session {
            h.push(("mcp-session-id", s));
        }
        if let Some(v) = &self.protocol_version {
            h.push(("mcp-protocol-version", v));
        }
        h
    }

    fn post(&self, client: &Client, message: &[u8]) -> Result<Answer> {
        let mut tries = 0;
        loop {
            let a = client.raw(Method::POST, PATH, Some(message.to_vec()), &self.headers())?;
            if a.status != 429 || tries >= MAX_RATE_RETRIES {
                return Ok(a);
            }
            tries += 1;
            let secs = a
                .header("retry-after")
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(1)
                .min(30);
            std::thread::sleep(Duration::from_secs(secs));
        }
    }

    /// Replays the client's initialize (and initialized notification) for a new session.
    fn reinitialize(&mut self, client: &Client) -> bool {
        let Some(init) = self.initialize.clone() else {
            return false;
        };
        self.session = None;
        self.protocol_version = None;
        let Ok(a) = self.post(client, &init) else {
            return false;
        };
        if a.status != 200 {
            return false;
        }
        self.session = a.header("mcp-session-id").map(str::to_owned);
        self.protocol_version = a.body["result"]["protocolVersion"]
            .as_str()
            .map(str::to_owned);
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let _ = self.post(client, note.to_string().as_bytes());
        true
    }

    fn failure(&self, is_request: bool, id: Option<Value>, e: CliError) -> Option<Value> {
        if !is_request {
            eprintln!("svc mcp: {e}");
            return None;
        }
        Some(error_reply(id.unwrap_or(Value::Null), &e))
    }

    /// Ends the session on the server (best effort).
    pub fn close(&self, client: &Client) {
        if self.session.is_some() {
            let _ = client.raw(Method::DELETE, PATH, None, &self.headers());
        }
    }
}

/// A JSON-RPC error answer for a request the transport could not carry.
pub fn error_reply(id: Value, e: &CliError) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": TRANSPORT_ERROR, "message": e.to_string(), "data": e.to_json()["error"]},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_failures_answer_the_request() {
        let e = CliError::Api {
            status: 401,
            code: "unauthenticated".into(),
            message: "the key is revoked".into(),
            request_id: Some("req_1".into()),
            details: None,
        };
        let r = error_reply(json!(7), &e);
        assert_eq!(r["id"], 7);
        assert_eq!(r["error"]["code"], TRANSPORT_ERROR);
        assert_eq!(r["error"]["data"]["code"], "unauthenticated");
        assert_eq!(r["error"]["message"], "unauthenticated: the key is revoked");
    }
}
