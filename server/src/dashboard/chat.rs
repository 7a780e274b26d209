//! Chat with the buddies: a message box whose answer streams in. The turn is `chat::start`
//! (as `POST /v1/chat`), its events sent as server-sent events that the page reads with
//! `fetch` and renders as they come: the route, each tool call, the answer's text.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use futures_util::stream;
use maud::{html, Markup};
use serde::Deserialize;

use super::layout::{alert, csrf_input, page as shell};
use super::respond::{failed, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_agents::chat::{self, ChatRequest};

#[derive(Debug, Deserialize)]
pub struct ChatForm {
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub session_id: String,
    #[serde(default)]
    pub buddy: String,
}

/// `GET /app/chat`.
pub async fn page(Extension(s): Extension<Session>) -> Markup {
    shell(
        Some(&s),
        "Chat with the buddies",
        "/app/chat",
        &[],
        html! {
            section.card aria-labelledby="chat-h" {
                h2.visually-hidden id="chat-h" { "Conversation" }
                ol.chat id="chat-log" aria-live="polite" {}
                form id="chat-form" method="post" action="/app/chat" {
                    (csrf_input(&s))
                    input type="hidden" name="session_id" id="chat-session" value="";
                    label for="chat-buddy" { "Ask" }
                    select id="chat-buddy" name="buddy" {
                        option value="" { "the orchestrator (it picks a buddy)" }
                        @for b in ["insights", "prospect", "campaign", "pipeline"] { option value=(b) { (b) } }
                    }
                    label for="chat-message" { "Message" }
                    textarea id="chat-message" name="message" rows="3" required {}
                    button.primary type="submit" { "Send" }
                }
            }
        },
    )
}

/// `POST /app/chat`: one turn as server-sent events.
pub async fn send(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Form(f): Form<ChatForm>,
) -> Result<Response, Failure> {
    let req = ChatRequest {
        message: f.message,
        session_id: Some(f.session_id).filter(|v| !v.is_empty()),
        buddy: Some(f.buddy).filter(|v| !v.is_empty()),
    };
    let rx = match chat::start(state.agents.clone(), s.user.workspace, &s.user.user.id, req).await {
        Ok(rx) => rx,
        Err(e) if e.code.status() < 500 => {
            let status = axum::http::StatusCode::from_u16(e.code.status())
                .unwrap_or(axum::http::StatusCode::BAD_REQUEST);
            return Ok((status, alert(&e.message)).into_response());
        }
        Err(e) => return Err(failed(&s, e)),
    };
    let events = stream::unfold(rx, |mut rx| async move {
        let e = rx.recv().await?;
        let event = Event::default()
            .event(e.name)
            .json_data(&e.data)
            .unwrap_or_else(|_| Event::default().event(e.name).data("null"));
        Some((Ok::<_, Infallible>(event), rx))
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}
