//! Schemas of the server-sent events of `POST /v1/chat`, for the OpenAPI document only: each
//! event's `data` is one of these objects, by event name. The turn builds them with `json!`
//! (`svc_agents::chat`); `tests/tests/openapi_contract.rs` checks every streamed event against
//! this document.

#![allow(dead_code)]

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use svc_agents::chat::TurnSummary;

/// The `data` of one chat event.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ChatEvent {
    Started(TurnStarted),
    Route(TurnRoute),
    ToolCall(TurnToolCall),
    ToolResult(TurnToolResult),
    Delta(MessageDelta),
    /// `turn.completed`: the whole turn.
    Completed(TurnSummary),
}

/// `turn.started`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnStarted {
    turn_id: String,
    session_id: String,
    /// `llm` (the connected model) or `builtin` (the offline agent).
    agent: String,
    model: Option<String>,
}

/// `route`: who answers the turn.
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnRoute {
    /// A buddy, or `orchestrator`.
    buddy_id: String,
    /// `request` (the body named the buddy), `rules` or `model`.
    by: String,
    reason: String,
}

/// `tool_call`: a capability invocation the buddy makes through the gateway.
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnToolCall {
    /// 1 for the turn's first call.
    n: u32,
    capability: String,
    mode: Option<String>,
    #[schema(value_type = Object)]
    input: Value,
    request_id: String,
}

/// `tool_result`: what the gateway answered.
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnToolResult {
    n: u32,
    capability: String,
    /// `preview`, `queued`, `committed`, or `error`.
    status: String,
    mode: Option<String>,
    request_id: String,
    pending_action_id: Option<String>,
    credits: u64,
    /// The gateway's error code when it refused.
    error: Option<String>,
    /// The capability's result, or the error body.
    #[schema(value_type = Value)]
    result: Value,
}

/// `message.delta`: the next piece of the answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct MessageDelta {
    text: String,
}

/// Each chat event as OpenAPI 3.2 describes a `text/event-stream` item: an object with the
/// event's name and its `data`, a JSON text (`contentMediaType`) whose schema is
/// `contentSchema`. utoipa has no `contentSchema`, so the derived `ChatEvent` component (a
/// union of the data objects, which registers them) is replaced by this after the document is
/// built.
pub fn describe_chat_events(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};

    const EVENTS: [(&str, &str); 6] = [
        ("turn.started", "TurnStarted"),
        ("route", "TurnRoute"),
        ("tool_call", "TurnToolCall"),
        ("tool_result", "TurnToolResult"),
        ("message.delta", "MessageDelta"),
        ("turn.completed", "TurnSummary"),
    ];
    let Some(components) = doc.components.as_mut() else {
        return;
    };
    let mut one_of =
        OneOfBuilder::new().description(Some("A chat event: its name and its data (a JSON text)"));
    for (name, data) in EVENTS {
        let mut text = ObjectBuilder::new()
            .schema_type(Type::String)
            .content_media_type("application/json")
            .build();
        text.extensions.get_or_insert_with(Default::default).insert(
            "contentSchema".to_owned(),
            serde_json::json!({ "$ref": format!("#/components/schemas/{data}") }),
        );
        let event = ObjectBuilder::new()
            .property(
                "event",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some([name])),
            )
            .required("event")
            .property("data", text)
            .required("data")
            .build();
        one_of = one_of.item(Schema::Object(event));
    }
    components
        .schemas
        .insert("ChatEvent".to_owned(), Schema::OneOf(one_of.build()).into());
}
