//! `svc mcp`: an MCP server over stdio (rmcp's stdio transport) whose tools are svcd's. rmcp
//! speaks the protocol with the MCP client (JSON-RPC framing, version negotiation, `ping`);
//! [`Relay`] answers `initialize`, `tools/list` and `tools/call` by asking svcd's `/mcp` with
//! the active key, so the tool catalogue (names, schemas, hints, calls through the gateway with
//! source `mcp`) exists once, in the server, and this stays an HTTP client.
//!
//! A failure to reach svcd (a revoked key, an unreachable server) answers the request that met
//! it with a JSON-RPC error ([`TRANSPORT_ERROR`], the API error in `data`), so the MCP client
//! sees it instead of a silent hang.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Method;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorCode, InitializeRequestParams,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    ToolsCapability,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};

use crate::client::{Answer, Client};
use crate::error::{exit, CliError, Result};
use crate::Ctx;

/// svcd's MCP route.
pub const PATH: &str = "/mcp";
/// JSON-RPC error code (implementation-defined range) for failures to reach svcd.
pub const TRANSPORT_ERROR: i32 = -32001;
const MAX_RATE_RETRIES: u32 = 3;

pub fn run(ctx: &Ctx) -> Result<u8> {
    let (client, _) = ctx.keyed_client()?;
    // The blocking HTTP client is used from `spawn_blocking` and must not be dropped inside
    // the runtime: this handle outlives it.
    let client = Arc::new(client);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Local(format!("cannot start the MCP server: {e}")))?;
    let relay = Relay::new(client.clone());
    let served = runtime.block_on(async move {
        let service = relay
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| CliError::Transport(format!("MCP session not started: {e}")))?;
        service
            .waiting()
            .await
            .map_err(|e| CliError::Local(format!("MCP server stopped: {e}")))
    });
    drop(runtime);
    served.map(|_| exit::OK)
}

/// The stdio server's handler: svcd answers, through the CLI's HTTP client.
#[derive(Clone, Debug)]
pub struct Relay {
    client: Arc<Client>,
    /// svcd's `initialize` answer (its name, title and instructions), once asked.
    info: Arc<Mutex<Option<ServerConfig>>>,
}

impl Relay {
    pub fn new(client: Arc<Client>) -> Relay {
        Relay {
            client,
            info: Arc::default(),
        }
    }

    /// One request to svcd's `/mcp`, off the async runtime (the client blocks).
    async fn ask<T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: Value,
    ) -> std::result::Result<T, ErrorData> {
        let client = self.client.clone();
        let result = tokio::task::spawn_blocking(move || request(&client, method, &params))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))??;
        serde_json::from_value(result)
            .map_err(|e| ErrorData::internal_error(format!("svcd's {method} answer: {e}"), None))
    }
}

impl ServerHandler for Relay {
    fn get_info(&self) -> ServerConfig {
        let known = self.info.lock().ok().and_then(|i| i.clone());
        known.unwrap_or_else(|| {
            let mut tools = ToolsCapability::default();
            tools.list_changed = Some(false);
            let mut capabilities = ServerCapabilities::default();
            capabilities.tools = Some(tools);
            ServerConfig::new(capabilities)
        })
    }

    /// svcd's answer to the client's own `initialize` (rmcp then settles the version with the
    /// client, which is the one svcd chose).
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<InitializeResult, ErrorData> {
        let params = serde_json::to_value(&request)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let answer: InitializeResult = self.ask("initialize", params).await?;
        if let Ok(mut info) = self.info.lock() {
            *info = Some(answer.clone());
        }
        context.peer.set_peer_info(request);
        Ok(answer)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        let params = match request {
            Some(p) => serde_json::to_value(p)
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?,
            None => json!({}),
        };
        self.ask("tools/list", params).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        let params = serde_json::to_value(&request)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let result: CallToolResult = self.ask("tools/call", params).await?;
        Ok(result.into())
    }
}

/// Posts one JSON-RPC request to `/mcp`: its `result`, svcd's JSON-RPC error, or a
/// [`TRANSPORT_ERROR`] for an answer that is not JSON-RPC (an API error, no server).
fn request(client: &Client, method: &str, params: &Value) -> std::result::Result<Value, ErrorData> {
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let answer = post(client, message.to_string().into_bytes()).map_err(|e| transport_error(&e))?;
    if answer.body.get("jsonrpc").is_none() {
        return Err(transport_error(&answer.into_error()));
    }
    if let Some(error) = answer.body.get("error") {
        return Err(serde_json::from_value(error.clone())
            .unwrap_or_else(|_| ErrorData::internal_error(error.to_string(), None)));
    }
    Ok(answer.body.get("result").cloned().unwrap_or(Value::Null))
}

/// POST with the rate limiter's `Retry-After` honoured a few times (a refused request did not
/// run, so it is safe to send again).
fn post(client: &Client, message: Vec<u8>) -> Result<Answer> {
    let headers = [("accept", "application/json, text/event-stream")];
    let mut tries = 0;
    loop {
        let a = client.raw(Method::POST, PATH, Some(message.clone()), &headers)?;
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

/// The JSON-RPC error for a request svcd did not answer with JSON-RPC.
pub fn transport_error(e: &CliError) -> ErrorData {
    ErrorData::new(
        ErrorCode(TRANSPORT_ERROR),
        e.to_string(),
        Some(e.to_json()["error"].clone()),
    )
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
        let r = serde_json::to_value(transport_error(&e)).expect("serializes");
        assert_eq!(r["code"], TRANSPORT_ERROR);
        assert_eq!(r["data"]["code"], "unauthenticated");
        assert_eq!(r["message"], "unauthenticated: the key is revoked");
    }
}
