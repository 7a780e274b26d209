//! One chat turn in progress: its events (sent to the client while it listens), its stored
//! messages, the tool-call budget, token usage, and the one way a buddy acts:
//! [`Turn::call_tool`], a `gateway::invoke` under the buddy's internal principal.

use serde::Serialize;
use serde_json::{json, Value as Json};
use tokio::sync::mpsc;

use super::llm::TokenUsage;
use super::sessions::{self, ChatMessage, Role};
use crate::agent_state::AgentState;
use svc_core::keys::AgentKey;
use svc_core::store::WorkspaceId;
use svc_domains::playbooks::Buddy;
use svc_gateway::{self as gateway, InvokeRequest};

/// Tool calls one turn may make (the step budget).
pub const MAX_TOOL_CALLS: usize = 8;

/// One server-sent event: its name and JSON data.
#[derive(Clone, Debug)]
pub struct TurnEvent {
    pub name: &'static str,
    pub data: Json,
}

/// A tool call as the turn summary lists it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct ToolCallSummary {
    pub capability: String,
    pub mode: Option<String>,
    /// `preview`, `queued`, `committed`, or `error`.
    pub status: String,
    /// The gateway invocation (its receipt: `GET /api/v1/capabilities/actions/{request_id}`).
    pub request_id: String,
    pub pending_action_id: Option<String>,
    pub credits: u64,
    /// The gateway's error code when it refused.
    pub error: Option<String>,
}

/// What a tool call came back with.
#[derive(Clone, Debug)]
pub struct ToolOutcome {
    pub summary: ToolCallSummary,
    /// The capability's result (`result` of the envelope), or the error body.
    pub result: Json,
    /// What the model is shown: the whole envelope, or the error.
    pub for_model: Json,
}

impl ToolOutcome {
    pub fn ok(&self) -> bool {
        self.summary.error.is_none()
    }
}

/// The call could not be made: the turn's tool-call budget is spent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetSpent;

#[derive(Debug)]
pub struct Turn {
    pub state: AgentState,
    pub ws: WorkspaceId,
    pub session_id: String,
    pub turn_id: String,
    events: mpsc::Sender<TurnEvent>,
    pub tool_calls: Vec<ToolCallSummary>,
    pub usage: TokenUsage,
    /// The buddy the turn was routed to and its principal.
    pub buddy: Option<(Buddy, AgentKey)>,
    /// Set when a call was refused for the budget.
    pub budget_spent: bool,
    /// How the turn was routed (`request`, `model`, `rules`) and why.
    pub route_by: String,
    pub route_reason: String,
}

impl Turn {
    pub fn new(
        state: AgentState,
        ws: WorkspaceId,
        session_id: String,
        turn_id: String,
        events: mpsc::Sender<TurnEvent>,
    ) -> Turn {
        Turn {
            state,
            ws,
            session_id,
            turn_id,
            events,
            tool_calls: Vec::new(),
            usage: TokenUsage::default(),
            buddy: None,
            budget_spent: false,
            route_by: String::new(),
            route_reason: String::new(),
        }
    }

    /// Sends an event to the client if it still listens (the turn goes on either way).
    pub async fn emit(&self, name: &'static str, data: Json) {
        let _ = self.events.send(TurnEvent { name, data }).await;
    }

    /// Stores a message of this turn; a store failure is logged, never fatal to the answer.
    pub async fn store(&self, role: Role, buddy: Option<&str>, text: &str, data: Json) {
        let m = self.message(role, buddy, text, data);
        if let Err(e) = sessions::append(&self.state.gateway.store, self.ws, m).await {
            tracing::warn!(error = %e, turn = %self.turn_id, "storing a chat message failed");
        }
    }

    pub fn message(&self, role: Role, buddy: Option<&str>, text: &str, data: Json) -> ChatMessage {
        sessions::message(&self.session_id, &self.turn_id, role, buddy, text, data)
    }

    pub fn buddy_id(&self) -> &'static str {
        self.buddy
            .as_ref()
            .map_or("orchestrator", |(b, _)| b.as_str())
    }

    /// Tool calls still allowed.
    pub fn calls_left(&self) -> usize {
        MAX_TOOL_CALLS.saturating_sub(self.tool_calls.len())
    }

    /// Invokes `capability` through the gateway as the routed buddy, source `internal`: the
    /// same grants, modes, credits, idempotency, approvals and receipts as any agent.
    pub async fn call_tool(
        &mut self,
        capability: &str,
        mut req: InvokeRequest,
    ) -> Result<ToolOutcome, BudgetSpent> {
        if self.calls_left() == 0 {
            self.budget_spent = true;
            return Err(BudgetSpent);
        }
        let n = self.tool_calls.len() + 1;
        req.source = Some(super::principal::SOURCE.to_owned());
        if req.idempotency_key.is_none() {
            req.idempotency_key = Some(format!("{}-{n}", self.turn_id));
        }
        let request_id = svc_core::plumbing::ids::request_id();
        let input = req.input.clone().unwrap_or_else(|| json!({}));
        let requested_mode = req.mode.clone();
        let call = json!({
            "n": n, "capability": capability, "mode": requested_mode, "input": input,
            "request_id": request_id,
        });
        self.emit("tool_call", call.clone()).await;
        self.store(
            Role::ToolCall,
            Some(self.buddy_id()),
            &format!(
                "{capability} ({})",
                requested_mode.as_deref().unwrap_or("default mode")
            ),
            call,
        )
        .await;
        let invoked = match &self.buddy {
            Some((_, key)) => {
                gateway::invoke(&self.state, key, capability, req, request_id.clone()).await
            }
            None => Err(svc_core::error::Error::internal(
                "a tool call before the turn was routed",
            )),
        };
        let outcome = match invoked {
            Ok(mut out) => {
                if let Some(msg) = out.stream.take() {
                    self.state.realtime.publish(self.ws, msg);
                }
                let body: Json = serde_json::from_str(&out.body).unwrap_or(Json::Null);
                let text = |k: &str| body.get(k).and_then(Json::as_str).map(str::to_owned);
                ToolOutcome {
                    summary: ToolCallSummary {
                        capability: capability.to_owned(),
                        mode: text("mode").or(requested_mode),
                        status: text("status").unwrap_or_else(|| "committed".to_owned()),
                        request_id: text("request_id").unwrap_or_else(|| request_id.clone()),
                        pending_action_id: text("pending_action_id"),
                        credits: body
                            .get("action_credit_cost")
                            .and_then(Json::as_u64)
                            .unwrap_or(0),
                        error: None,
                    },
                    result: body.get("result").cloned().unwrap_or(Json::Null),
                    for_model: body,
                }
            }
            Err(e) => {
                let body = json!({"error": {"code": e.code.as_str(), "message": e.message}});
                ToolOutcome {
                    summary: ToolCallSummary {
                        capability: capability.to_owned(),
                        mode: requested_mode,
                        status: "error".to_owned(),
                        request_id: request_id.clone(),
                        pending_action_id: None,
                        credits: 0,
                        error: Some(e.code.as_str().to_owned()),
                    },
                    result: body.clone(),
                    for_model: body,
                }
            }
        };
        let data = json!({
            "n": n,
            "capability": capability,
            "status": outcome.summary.status,
            "mode": outcome.summary.mode,
            "request_id": outcome.summary.request_id,
            "pending_action_id": outcome.summary.pending_action_id,
            "credits": outcome.summary.credits,
            "error": outcome.summary.error,
            "result": outcome.result,
        });
        self.emit("tool_result", data.clone()).await;
        self.store(
            Role::ToolResult,
            Some(self.buddy_id()),
            &format!("{capability}: {}", outcome.summary.status),
            data,
        )
        .await;
        self.tool_calls.push(outcome.summary.clone());
        Ok(outcome)
    }

    /// Sends `text` as `message.delta` events, a few words at a time.
    pub async fn stream_text(&self, text: &str) {
        let mut chunk = String::new();
        for piece in text.split_inclusive(' ') {
            chunk.push_str(piece);
            if chunk.len() >= 48 {
                self.emit("message.delta", json!({ "text": chunk })).await;
                chunk.clear();
            }
        }
        if !chunk.is_empty() {
            self.emit("message.delta", json!({ "text": chunk })).await;
        }
    }
}
