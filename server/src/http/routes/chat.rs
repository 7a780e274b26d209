//! `/v1/chat` and `/v1/chat/sessions` (dashboard sessions): thin adapters over `agents`.

use crate::http::error::ErrorResponse;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream};

use crate::http::error::ErrorBody;
use crate::http::extract::{ApiJson, ApiPath, JwtUser};
use crate::state::AppState;
use svc_agents::chat::{self, sessions, ChatRequest};

/// One chat turn, answered as server-sent events: `turn.started`, `route`, `tool_call` and
/// `tool_result` per capability call, `message.delta` chunks of the answer, and
/// `turn.completed` whose data is the whole turn. The turn is stored even if the client
/// disconnects.
#[utoipa::path(post, path = "/v1/chat", tag = "chat",
    request_body = ChatRequest, responses(
    (status = 200, description = "`text/event-stream`; the last event is `turn.completed` \
        with the turn; each event's data is one of `ChatEvent`", content_type = "text/event-stream",
        body = crate::http::event_docs::ChatEvent),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "not a dashboard session, or a read-only workspace", body = ErrorBody),
    (status = 404, description = "unknown session_id", body = ErrorBody),
))]
pub async fn chat(
    State(state): State<AppState>,
    JwtUser(session): JwtUser,
    ApiJson(req): ApiJson<ChatRequest>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ErrorResponse> {
    let rx = chat::start(
        state.agents.clone(),
        session.workspace,
        &session.user.id,
        req,
    )
    .await?;
    let events = stream::unfold(rx, |mut rx| async move {
        let e = rx.recv().await?;
        let event = Event::default()
            .event(e.name)
            .json_data(&e.data)
            .unwrap_or_else(|_| Event::default().event(e.name).data("null"));
        Some((Ok(event), rx))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// The workspace's chat sessions, newest first (at most 100).
#[utoipa::path(get, path = "/v1/chat/sessions", tag = "chat",
    responses(
    (status = 200, body = sessions::SessionList),
    (status = 401, body = ErrorBody),
))]
pub async fn list_sessions(
    State(state): State<AppState>,
    JwtUser(session): JwtUser,
) -> Result<ApiJson<sessions::SessionList>, ErrorResponse> {
    Ok(ApiJson(
        sessions::list(&state.store, session.workspace).await?,
    ))
}

/// One session and its messages in order: the user's messages, routing decisions, tool calls
/// and results, and the answers.
#[utoipa::path(get, path = "/v1/chat/sessions/{id}", tag = "chat",
    params(("id" = String, Path, description = "`chs_...`")),
    responses(
    (status = 200, body = sessions::SessionView),
    (status = 401, body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn get_session(
    State(state): State<AppState>,
    JwtUser(session): JwtUser,
    ApiPath(id): ApiPath<String>,
) -> Result<ApiJson<sessions::SessionView>, ErrorResponse> {
    Ok(ApiJson(
        sessions::get(&state.store, session.workspace, &id).await?,
    ))
}
