//! The MCP server (Model Context Protocol) of svcd: an rmcp [`ServerHandler`] whose tools are
//! the calling agent key's capabilities ([`tools`]) and whose tool calls go through
//! `gateway::invoke`. rmcp owns the protocol (JSON-RPC, `initialize` and version negotiation,
//! `ping`, protocol errors); [`transport`] serves this handler as streamable HTTP at `/mcp`, and
//! `svc mcp` (the CLI) serves the same tools over stdio by forwarding to that route.
//!
//! The caller is not known to rmcp: the `/mcp` route admits an agent key (the access layer
//! resolves it on every request, so a revoked key stops working at once) and puts a [`Caller`]
//! into the HTTP request's extensions; rmcp passes the request's parts to every handler call.

pub mod transport;

use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, ToolsCapability,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use crate::state::AppState;
use svc_core::keys::AgentKey;
use svc_gateway::{self as gateway, tools};

/// Server name in `initialize`.
pub const SERVER_NAME: &str = "svcd";

const INSTRUCTIONS: &str = "Tools are the capabilities this agent key may call on the customer \
intelligence gateway. Each accepts `_mode` (dry_run, queue or execute, limited to the key's \
modes) and `_idempotency_key`. Results are the gateway envelope: status, result, \
action_credit_cost, quota, request_id and receipt_url.";

/// Who is calling, set by the `/mcp` route into the HTTP request's extensions.
#[derive(Clone, Debug)]
pub struct Caller {
    pub state: AppState,
    pub key: AgentKey,
    /// The HTTP request's id (`req_...`): the id of the invocation it carries.
    pub request_id: String,
}

/// The handler rmcp runs for each message (stateless: all it needs comes with the request).
#[derive(Clone, Copy, Debug, Default)]
pub struct Server;

/// `initialize`'s answer: the server's name and title, tools (a fixed list per key, so no
/// change notifications) and instructions. The version is the SDK's newest revision that still
/// has `initialize`; rmcp echoes a client's version when it speaks it.
pub fn info() -> ServerConfig {
    let mut tools = ToolsCapability::default();
    tools.list_changed = Some(false);
    let mut capabilities = ServerCapabilities::default();
    capabilities.tools = Some(tools);
    let mut info = ServerConfig::new(capabilities);
    info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
    info.server_info = Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION"))
        .with_title("Customer intelligence capability gateway");
    info.instructions = Some(INSTRUCTIONS.to_owned());
    info
}

/// The caller of this message, from the HTTP request's parts.
fn caller(context: &RequestContext<RoleServer>) -> Result<&Caller, ErrorData> {
    context
        .extensions
        .get::<Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>())
        .ok_or_else(|| ErrorData::internal_error("MCP message without an admitted agent key", None))
}

/// Our JSON (see [`tools`]) as an rmcp model type.
fn model<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, ErrorData> {
    serde_json::from_value(v).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        info()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = caller(&context)?;
        model(tools::list(&caller.key))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = caller(&context)?;
        let Some(capability) = tools::capability_of(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {}", request.name),
                None,
            ));
        };
        let request_id = caller.request_id.clone();
        let result = match tools::request(request.arguments.map(Value::Object)) {
            Err(e) => tools::failure(&e, &request_id),
            Ok(req) => {
                match gateway::invoke(
                    &caller.state,
                    &caller.key,
                    capability,
                    req,
                    request_id.clone(),
                )
                .await
                {
                    Ok(mut out) => {
                        if let Some(msg) = out.stream.take() {
                            caller
                                .state
                                .realtime
                                .publish(caller.key.workspace_id(), msg);
                        }
                        tools::success(&out.body, out.replayed)
                    }
                    Err(e) => {
                        tracing::debug!(code = e.code.as_str(), tool = %request.name, "MCP tool call refused");
                        tools::failure(&e, &request_id)
                    }
                }
            }
        };
        Ok(model::<CallToolResult>(result)?.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::Tool;

    #[test]
    fn info_names_the_server_and_its_fixed_tool_list() {
        let v = serde_json::to_value(info()).expect("serializes");
        assert_eq!(v["serverInfo"]["name"], SERVER_NAME);
        assert_eq!(v["capabilities"]["tools"]["listChanged"], false);
        assert_eq!(v["protocolVersion"], "2025-11-25");
        assert!(v["instructions"]
            .as_str()
            .is_some_and(|i| i.contains("_mode")));
    }

    #[test]
    fn tool_and_result_json_read_as_rmcp_models() {
        for e in gateway::registry::all() {
            let tool: Tool = model(tools::tool(&e.descriptor)).expect("a tool");
            assert_eq!(tool.name, e.descriptor.mcp_tool_name);
        }
        let ok: CallToolResult =
            model(tools::success(r#"{"status":"committed"}"#, true)).expect("a result");
        assert_eq!(ok.is_error, Some(false));
        let v = serde_json::to_value(&ok).expect("serializes");
        assert_eq!(v["_meta"]["svc/idempotent_replayed"], true);
        assert_eq!(v["structuredContent"]["status"], "committed");
    }
}
