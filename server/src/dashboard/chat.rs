//! Chat with the buddies: a message box whose answer streams in. The turn is `chat::start`
//! (as `POST /v1/chat`), its events sent as server-sent events that the page reads with
//! `fetch` and renders as they come: the route, each tool call, the answer's text.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use futures_util::stream;
use maud::{html, Markup};
use serde::Deserialize;

use super::format;
use super::layout::{alert, csrf_input, page as shell};
use super::paging::{pager, PAGE};
use super::respond::{failed, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_agents::chat::sessions::{self, Role};
use svc_agents::chat::{self, ChatRequest};
use svc_core::plumbing::paging;

/// `?session=chs_...`: the conversation to resume.
#[derive(Debug, Default, Deserialize)]
pub struct Resume {
    pub session: Option<String>,
    /// Older conversations: the offset into the list (the dashboard's page of 50).
    pub older: Option<usize>,
}

/// Text with customer references (`cus_...`, also inside `/v1/customers/cus_...` API paths)
/// as links to their dashboard pages.
pub fn linked(text: &str) -> Markup {
    let mut parts: Vec<(bool, &str)> = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("cus_") {
        let end = rest[at + 4..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .map_or(rest.len(), |e| at + 4 + e);
        if end == at + 4 {
            parts.push((false, &rest[..end]));
            rest = &rest[end..];
            continue;
        }
        // An API path before the id is replaced by the link.
        let mut start = at;
        for prefix in ["/api/v1/customers/", "/v1/customers/"] {
            if rest[..at].ends_with(prefix) {
                start = at - prefix.len();
                break;
            }
        }
        parts.push((false, &rest[..start]));
        parts.push((true, &rest[at..end]));
        rest = &rest[end..];
    }
    parts.push((false, rest));
    html! {
        @for (link, t) in parts {
            @if link { a href=(format!("/app/customers/{t}")) { (t) } } @else { (t) }
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct ChatForm {
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub session_id: String,
    #[serde(default)]
    pub buddy: String,
}

/// `GET /app/chat`: past conversations, and the one named by `?session=` resumed.
pub async fn page(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Query(q): Query<Resume>,
) -> Result<Markup, Failure> {
    let ws = s.user.workspace;
    let offset = q.older.unwrap_or(0).min(paging::OFFSET_MAX);
    let list = sessions::list_page(&state.store, ws, offset, PAGE)
        .await
        .map_err(|e| failed(&s, e))?;
    let current = match q.session.as_deref().filter(|id| !id.is_empty()) {
        Some(id) => Some(
            sessions::get(&state.store, ws, id)
                .await
                .map_err(|e| failed(&s, e))?,
        ),
        None => None,
    };
    let session_id = current
        .as_ref()
        .map(|c| c.session.id.clone())
        .unwrap_or_default();
    Ok(shell(
        Some(&s),
        "Chat with the buddies",
        "/app/chat",
        &[],
        html! {
            div.chat-layout {
            nav.card.sessions aria-labelledby="sessions-h" {
                h2 id="sessions-h" { "Conversations" }
                p { a href="/app/chat" { "New conversation" } }
                @if list.sessions.is_empty() { p.hint { "Past conversations appear here." } }
                ul id="chat-sessions" {
                    @for c in &list.sessions {
                        li {
                            // `data-api`: checked against the API by tests/tests/pages.rs.
                            a href=(format!("/app/chat?session={}", format::url_part(&c.id)))
                                aria-current=[(c.id == session_id).then_some("page")]
                                data-api=(format!("/v1/chat/sessions#/sessions/[id={}]/title", c.id)) { (c.title) }
                            br;
                            span.hint { (format::time(&c.updated_at)) " · "
                                span data-api=(format!("/v1/chat/sessions#/sessions/[id={}]/turns", c.id)) { (format::count(c.turns)) }
                                @if c.turns == 1 { " turn" } @else { " turns" } }
                        }
                    }
                }
                (pager("conversations", list.offset, list.sessions.len(), list.total, |o| {
                    format!("/app/chat?older={o}")
                }))
            }
            section.card aria-labelledby="chat-h" {
                h2.visually-hidden id="chat-h" { "Conversation" }
                ol.chat id="chat-log" aria-live="polite" {
                    @if let Some(c) = &current {
                        @for m in &c.messages {
                            @match m.role {
                                Role::User => li.you { span.meta { "You · " (format::time_ms(m.ts)) } span.text { (m.text) } },
                                Role::Assistant => li.buddy data-state="completed" { span.meta { (m.buddy_id.as_deref().unwrap_or("buddy")) " · " (format::time_ms(m.ts)) } span.text { (linked(&m.text)) } },
                                _ => {},
                            }
                        }
                    }
                }
                form id="chat-form" method="post" action="/app/chat" {
                    (csrf_input(&s))
                    input type="hidden" name="session_id" id="chat-session" value=(session_id);
                    label for="chat-buddy" { "Ask" }
                    select id="chat-buddy" name="buddy" {
                        option value="" { "the orchestrator (it picks a buddy)" }
                        @for b in ["insights", "prospect", "campaign", "pipeline"] { option value=(b) { (b) } }
                    }
                    label for="chat-message" { "Message " span.hint { "(Enter sends, Shift+Enter for a new line)" } }
                    textarea id="chat-message" name="message" rows="3" required {}
                    button.primary type="submit" { "Send" }
                }
            }
            }
        },
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn customer_references_become_links() {
        let html = linked("See /v1/customers/cus_12 and cus_9, not cus_ alone.").into_string();
        assert_eq!(
            html,
            "See <a href=\"/app/customers/cus_12\">cus_12</a> and <a href=\"/app/customers/cus_9\">cus_9</a>, not cus_ alone."
        );
        assert_eq!(linked("<b>").into_string(), "&lt;b&gt;");
    }
}
