//! The chat (SPEC.md "What the service does" 8): an orchestrator and four specialist buddies
//! that answer a user's message and act through the capability gateway. See docs/agents.md.
//!
//! A turn: validate and open the session (errors are plain HTTP errors), then run in a spawned
//! task that streams [`TurnEvent`]s to whoever listens and stores every step whether or not
//! anyone still does: `turn.started`, `route`, `tool_call` / `tool_result` per call,
//! `message.delta` chunks of the answer, and `turn.completed` with the whole turn.
//!
//! Parts: `turn` (events, storage, the budget and the gateway call), `orchestrator` (routing),
//! `model` (a buddy's loop with the `llm` integration), `llm` (the OpenAI-compatible adapter),
//! `offline` (the built-in agent), `principal` (a buddy's identity at the gateway),
//! `sessions` (the message store).

pub mod llm;
pub mod model;
pub mod offline;
pub mod orchestrator;
pub mod principal;
pub mod sessions;
pub mod turn;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};
use tokio::sync::mpsc;

use crate::agent_state::AgentState;
pub use llm::TokenUsage;
use offline::Intent;
use orchestrator::Route;
use sessions::Role;
use svc_core::error::{Error, Result};
use svc_core::integration_kind::Kind;
use svc_core::store::WorkspaceId;
use svc_domains::integrations::{self, Config, LlmConfig};
use svc_domains::playbooks::{time_ordered_id, Buddy};
use turn::Turn;
pub use turn::{ToolCallSummary, TurnEvent, MAX_TOOL_CALLS};

/// Longest user message accepted.
pub const MESSAGE_CHARS: usize = 8000;
/// User and assistant messages of the session the model sees before the new one.
const HISTORY_MESSAGES: usize = 12;
/// Events buffered for a slow reader before the turn waits for it.
const EVENT_BUFFER: usize = 64;

/// `POST /v1/chat` body.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatRequest {
    /// 1 to 8000 characters after trimming.
    #[schema(pattern = r"\S", max_length = 8000)]
    pub message: String,
    /// Continue this session; a new one is opened when absent.
    pub session_id: Option<String>,
    /// Ask one specialist directly: `insights`, `prospect`, `campaign` or `pipeline`; empty or
    /// `orchestrator` lets the orchestrator route.
    #[schema(
        pattern = r"^\s*(|orchestrator|insights|prospect|campaign|pipeline)\s*$",
        nullable
    )]
    pub buddy: Option<String>,
}

/// The whole turn, the data of `turn.completed`.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct TurnSummary {
    pub turn_id: String,
    pub session_id: String,
    /// `completed`, or `failed` when the model provider failed (the error says why).
    pub status: String,
    /// The buddy that answered, or `orchestrator`.
    pub buddy_id: String,
    /// `request`, `model` or `rules`.
    pub routed_by: String,
    pub route_reason: String,
    /// `llm` (the connected model) or `builtin` (the built-in agent).
    pub agent: String,
    pub model: Option<String>,
    pub message: String,
    pub tool_calls: Vec<ToolCallSummary>,
    /// Actions the turn left waiting for a person (`GET /api/v1/approvals`).
    pub pending_action_ids: Vec<String>,
    pub usage: TokenUsage,
    #[schema(value_type = Option<Object>)]
    pub error: Option<Json>,
    pub started_at: String,
    pub completed_at: String,
}

/// Validates the request, opens the session and starts the turn; the receiver yields its
/// events. The turn finishes and is stored even if the receiver is dropped.
pub async fn start(
    state: AgentState,
    ws: WorkspaceId,
    user_id: &str,
    req: ChatRequest,
) -> Result<mpsc::Receiver<TurnEvent>> {
    let message = svc_core::fields::trim_blank(&req.message).to_owned();
    let n = message.chars().count();
    if n == 0 || n > MESSAGE_CHARS {
        return Err(Error::invalid_input(format!(
            "message: 1 to {MESSAGE_CHARS} characters (got {n})"
        ))
        .with_details(json!({"field": "message"})));
    }
    let requested = match req.buddy.as_deref().map(str::trim) {
        None | Some("") | Some("orchestrator") => None,
        Some(b) => Some(Buddy::parse(b).ok_or_else(|| {
            Error::invalid_field(
                "buddy",
                b,
                &format!("expected one of {} (or none)", Buddy::choices()),
            )
        })?),
    };
    let session =
        sessions::open(&state.gateway.store, ws, req.session_id, user_id, &message).await?;
    let (tx, rx) = mpsc::channel(EVENT_BUFFER);
    let turn = Turn::new(state, ws, session.id, time_ordered_id("turn"), tx);
    tokio::spawn(run(turn, message, requested));
    Ok(rx)
}

/// The `llm` integration's config when one is connected.
async fn connected_model(state: &AgentState, ws: WorkspaceId) -> Option<LlmConfig> {
    match integrations::load(&state.gateway.store, &state.gateway.sealer, ws, Kind::Llm).await {
        Ok(Some(Config::Llm(c))) => Some(c),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(error = %e, workspace = %ws, "reading the llm integration failed");
            None
        }
    }
}

async fn run(mut turn: Turn, message: String, requested: Option<Buddy>) {
    let started_at = svc_core::plumbing::clock::now_rfc3339();
    let state = turn.state.clone();
    let llm_config = connected_model(&state, turn.ws).await;
    let history = match &llm_config {
        Some(_) => sessions::recent_dialogue(
            &state.gateway.store,
            turn.ws,
            &turn.session_id,
            HISTORY_MESSAGES,
        )
        .await
        .unwrap_or_default(),
        None => Vec::new(),
    };
    let history: Vec<Json> = history
        .iter()
        .map(|m| {
            let role = if m.role == Role::User {
                "user"
            } else {
                "assistant"
            };
            json!({"role": role, "content": m.text})
        })
        .collect();
    turn.store(Role::User, None, &message, json!({})).await;
    let agent = if llm_config.is_some() {
        "llm"
    } else {
        "builtin"
    };
    turn.emit(
        "turn.started",
        json!({"turn_id": turn.turn_id, "session_id": turn.session_id, "agent": agent,
               "model": llm_config.as_ref().map(|m| m.model.clone())}),
    )
    .await;

    let intent = Intent::parse(&message);
    let mut error = None;
    let route = match (requested, &llm_config) {
        (Some(b), _) => Ok(orchestrator::by_request(b)),
        (None, None) => Ok(orchestrator::by_rules(&intent)),
        (None, Some(cfg)) => {
            orchestrator::by_model(
                &state.gateway.http,
                cfg,
                &history,
                &message,
                &intent,
                &mut turn.usage,
            )
            .await
        }
    };
    let answer = match route {
        Err(e) => {
            error = Some(json!({"code": e.code(), "message": e.error.message}));
            format!(
                "The model provider failed while routing this message: {}. Nothing was done.",
                e.error.message
            )
        }
        Ok(route) => {
            if let Err(e) = announce(&mut turn, &route).await {
                error = Some(json!({"code": e.code.as_str(), "message": e.message}));
                format!("The turn could not start: {}.", e.message)
            } else {
                match (&route.answer, &llm_config) {
                    (Some(text), _) => text.clone(),
                    (None, None) => offline::answer(&mut turn, &intent).await,
                    (None, Some(cfg)) => match model::run(&mut turn, cfg, &history, &message).await
                    {
                        Ok(text) => text,
                        Err(e) => {
                            error = Some(json!({"code": e.code(), "message": e.error.message}));
                            format!(
                                "The model provider failed: {}. The turn stopped after {} tool \
                                 call(s).",
                                e.error.message,
                                turn.tool_calls.len()
                            )
                        }
                    },
                }
            }
        }
    };
    let answer = with_approval_note(answer, &turn);
    turn.stream_text(&answer).await;
    let summary = TurnSummary {
        turn_id: turn.turn_id.clone(),
        session_id: turn.session_id.clone(),
        status: if error.is_some() {
            "failed"
        } else {
            "completed"
        }
        .to_owned(),
        buddy_id: turn.buddy_id().to_owned(),
        routed_by: turn.route_by.clone(),
        route_reason: turn.route_reason.clone(),
        agent: agent.to_owned(),
        model: llm_config.map(|m| m.model),
        message: answer.clone(),
        tool_calls: turn.tool_calls.clone(),
        pending_action_ids: pending(&turn),
        usage: turn.usage,
        error,
        started_at,
        completed_at: svc_core::plumbing::clock::now_rfc3339(),
    };
    let data = serde_json::to_value(&summary).unwrap_or(Json::Null);
    let stored = turn.message(
        Role::Assistant,
        Some(turn.buddy_id()),
        &answer,
        data.clone(),
    );
    if let Err(e) = sessions::finish_turn(
        &state.gateway.store,
        turn.ws,
        stored,
        turn.buddy_id().to_owned(),
    )
    .await
    {
        tracing::warn!(error = %e, turn = %turn.turn_id, "storing a chat answer failed");
    }
    turn.emit("turn.completed", data).await;
}

/// Records and announces the routing decision, and takes on the buddy's principal.
async fn announce(turn: &mut Turn, route: &Route) -> Result<()> {
    if let Some(b) = route.buddy {
        let key = principal::ensure(&turn.state.gateway.store, turn.ws, b).await?;
        turn.buddy = Some((b, key));
    }
    turn.route_by = route.by.to_owned();
    turn.route_reason = route.reason.clone();
    let data = json!({"buddy_id": turn.buddy_id(), "by": route.by, "reason": route.reason});
    turn.emit("route", data.clone()).await;
    turn.store(Role::Route, Some("orchestrator"), &route.reason, data)
        .await;
    Ok(())
}

fn pending(turn: &Turn) -> Vec<String> {
    turn.tool_calls
        .iter()
        .filter_map(|c| c.pending_action_id.clone())
        .collect()
}

/// Makes sure the answer says which actions wait for approval, whatever the model wrote.
fn with_approval_note(answer: String, turn: &Turn) -> String {
    let missing: Vec<String> = turn
        .tool_calls
        .iter()
        .filter_map(|c| {
            let id = c.pending_action_id.as_ref()?;
            (!answer.contains(id.as_str())).then(|| format!("{} ({id})", c.capability))
        })
        .collect();
    if missing.is_empty() {
        return answer;
    }
    format!(
        "{answer}\n\nWaiting for your approval: {}. Nothing happens until a person approves it \
         under Approvals.",
        missing.join(", ")
    )
}
