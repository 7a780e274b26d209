//! `/v1/chat` and `/v1/chat/sessions` (dashboard sessions): thin adapters over `agents`.

use crate::http::error::ErrorResponse;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream};

use crate::http::error::ErrorBody;
use crate::http::extract::{ApiJson, ApiPath, JwtUser};
use crate::state::AppState;
use svc_agents::chat::{self, sessions, ChatRequest};
use svc_core::error::Error;
use svc_core::plumbing::paging;

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

/// The query of `GET /v1/chat/sessions`, for the document.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct SessionParams {
    /// Sessions to skip (default 0).
    #[param(minimum = 0, maximum = 4294967295u64)]
    offset: Option<u64>,
    /// Page size (default 100, largest 500).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u64>,
}

/// The workspace's chat sessions, newest first, paged with the total.
#[utoipa::path(get, path = "/v1/chat/sessions", tag = "chat", params(SessionParams),
    responses(
    (status = 200, body = sessions::SessionList),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
))]
pub async fn list_sessions(
    State(state): State<AppState>,
    JwtUser(session): JwtUser,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<ApiJson<sessions::SessionList>, ErrorResponse> {
    let Query(query) = query.map_err(|e| Error::invalid_input(e.body_text()))?;
    let (mut offset, mut limit) = (0, sessions::SESSIONS_LISTED);
    for (k, v) in &query {
        match k.as_str() {
            "offset" => offset = paging::offset(k, v)?,
            "limit" => limit = paging::limit(k, v, sessions::SESSIONS_PAGE_MAX)?,
            _ => {}
        }
    }
    Ok(ApiJson(
        sessions::list_page(&state.store, session.workspace, offset, limit).await?,
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
