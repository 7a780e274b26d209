//! The chat's message store: sessions and their messages (the user's turn, each routing
//! decision, each tool call and result, the assistant's answer), per workspace.
//!
//! A message's record id is `<session id>/<message id>` with time-ordered message ids, so a
//! session's messages are one prefix scan in order. Each assistant answer is also written as
//! a `reporting::AssistantMessage`, which is what the recent-reasoning feed reads.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::reporting::AssistantMessage;
use svc_core::error::{Error, Result};
use svc_core::plumbing::{clock, paging};
use svc_core::store::{Record, RecordScan, Store, Tx, WorkspaceId};
use svc_core::workspaces::ensure_writable;
use svc_domains::playbooks::time_ordered_id;

/// Sessions listed at most (newest first).
pub const SESSIONS_LISTED: usize = 100;
/// Largest page of sessions one request may ask for.
pub const SESSIONS_PAGE_MAX: usize = 500;
/// Messages of one session returned at most (oldest first).
pub const MESSAGES_LISTED: usize = 2000;
const TITLE_CHARS: usize = 80;

#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ChatSession {
    /// `chs_...`, time-ordered.
    pub id: String,
    /// The first message, cut to 80 characters.
    pub title: String,
    /// The user who opened it.
    pub created_by: String,
    pub created_at: String,
    pub updated_at: String,
    pub turns: u64,
    /// The buddy (or `orchestrator`) that answered the latest turn.
    pub last_buddy: Option<String>,
}

impl Record for ChatSession {
    const KIND: &'static str = "chat_session";
    fn id(&self) -> String {
        self.id.clone()
    }
}

/// What a stored message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = ChatRole)]
pub enum Role {
    User,
    /// The orchestrator's routing decision.
    Route,
    ToolCall,
    ToolResult,
    Assistant,
}

#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ChatMessage {
    /// `cmsg_...`, time-ordered.
    pub id: String,
    pub session_id: String,
    pub turn_id: String,
    pub role: Role,
    /// The buddy (or `orchestrator`) that produced it; `null` for the user's message.
    pub buddy_id: Option<String>,
    pub text: String,
    /// Role-specific detail: the route's reason, a tool call's capability, mode and input, a
    /// tool result's status and gateway answer, an answer's turn summary.
    #[schema(value_type = Object)]
    #[serde(with = "svc_engine::record_encoding::json_text")]
    pub data: Json,
    /// Epoch milliseconds.
    pub ts: i64,
}

/// Stored under `<session id>/<message id>` (see the module doc).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StoredMessage(ChatMessage);

impl Record for StoredMessage {
    const KIND: &'static str = "chat_message";
    fn id(&self) -> String {
        format!("{}/{}", self.0.session_id, self.0.id)
    }
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct SessionList {
    /// One page, newest first (100 unless the request names a `limit`).
    pub sessions: Vec<ChatSession>,
    /// Every session of the workspace.
    pub total: usize,
    pub offset: usize,
    pub limit: usize,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = ChatSessionView)]
pub struct SessionView {
    pub session: ChatSession,
    /// Oldest first.
    pub messages: Vec<ChatMessage>,
}

pub fn now_ms() -> i64 {
    (clock::now().unix_timestamp_nanos() / 1_000_000) as i64
}

fn title_of(message: &str) -> String {
    let one_line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= TITLE_CHARS {
        return one_line;
    }
    let mut t: String = one_line.chars().take(TITLE_CHARS - 1).collect();
    t.push('…');
    t
}

/// The session to continue (it must exist in `ws`), or a new one titled by `first_message`;
/// refused in a read-only workspace.
pub async fn open(
    store: &Store,
    ws: WorkspaceId,
    session_id: Option<String>,
    user_id: &str,
    first_message: &str,
) -> Result<ChatSession> {
    if let Some(id) = session_id {
        // A turn writes its messages: a read-only workspace refuses it before it starts.
        return store
            .write(move |tx| {
                ensure_writable(tx, ws)?;
                tx.get::<ChatSession>(ws, &id)?
                    .ok_or_else(|| Error::not_found("chat session"))
            })
            .await;
    }
    let now = clock::now_rfc3339();
    let session = ChatSession {
        id: time_ordered_id("chs"),
        title: title_of(first_message),
        created_by: user_id.to_owned(),
        created_at: now.clone(),
        updated_at: now,
        turns: 0,
        last_buddy: None,
    };
    store
        .write(move |tx| {
            ensure_writable(tx, ws)?;
            tx.put(ws, &session)?;
            Ok(session)
        })
        .await
}

/// A message to store.
pub fn message(
    session_id: &str,
    turn_id: &str,
    role: Role,
    buddy_id: Option<&str>,
    text: impl Into<String>,
    data: Json,
) -> ChatMessage {
    ChatMessage {
        id: time_ordered_id("cmsg"),
        session_id: session_id.to_owned(),
        turn_id: turn_id.to_owned(),
        role,
        buddy_id: buddy_id.map(str::to_owned),
        text: text.into(),
        data,
        ts: now_ms(),
    }
}

/// Stores one message (not subject to the read-only switch: a turn that was accepted is
/// recorded whole).
pub async fn append(store: &Store, ws: WorkspaceId, m: ChatMessage) -> Result<()> {
    store.write(move |tx| tx.put(ws, &StoredMessage(m))).await
}

/// Stores the assistant's answer, the reasoning-feed entry and the session's new state in one
/// write.
pub async fn finish_turn(
    store: &Store,
    ws: WorkspaceId,
    answer: ChatMessage,
    buddy_id: String,
) -> Result<()> {
    store
        .write(move |tx| {
            put_answer(tx, ws, &answer, &buddy_id)?;
            Ok(())
        })
        .await
}

fn put_answer(
    tx: &mut Tx<'_, '_>,
    ws: WorkspaceId,
    answer: &ChatMessage,
    buddy: &str,
) -> Result<()> {
    let feed = AssistantMessage {
        id: time_ordered_id("msg"),
        session_id: answer.session_id.clone(),
        buddy_id: buddy.to_owned(),
        text: answer.text.clone(),
        ts: answer.ts,
    };
    tx.put(ws, &StoredMessage(answer.clone()))?;
    tx.put(ws, &feed)?;
    if let Some(mut s) = tx.get::<ChatSession>(ws, &answer.session_id)? {
        s.turns += 1;
        s.updated_at = clock::now_rfc3339();
        s.last_buddy = Some(buddy.to_owned());
        tx.put(ws, &s)?;
    }
    Ok(())
}

/// The workspace's newest sessions (the first page).
pub async fn list(store: &Store, ws: WorkspaceId) -> Result<SessionList> {
    list_page(store, ws, 0, SESSIONS_LISTED).await
}

/// One page of the workspace's sessions, newest first, with the total. Reads every session
/// record of the workspace (one per conversation a person started), as the keys list does.
pub async fn list_page(
    store: &Store,
    ws: WorkspaceId,
    offset: usize,
    limit: usize,
) -> Result<SessionList> {
    let all = store
        .scan::<ChatSession>(
            ws,
            RecordScan {
                reverse: true,
                ..RecordScan::default()
            },
        )
        .await?;
    let total = all.len();
    Ok(SessionList {
        sessions: paging::window(all, offset, limit),
        total,
        offset,
        limit,
    })
}

/// A session and its messages in order.
pub async fn get(store: &Store, ws: WorkspaceId, id: &str) -> Result<SessionView> {
    let session = store
        .get::<ChatSession>(ws, id)
        .await?
        .ok_or_else(|| Error::not_found("chat session"))?;
    let messages = history(store, ws, id, MESSAGES_LISTED).await?;
    Ok(SessionView { session, messages })
}

/// The first `limit` messages of a session, oldest first.
pub async fn history(
    store: &Store,
    ws: WorkspaceId,
    session_id: &str,
    limit: usize,
) -> Result<Vec<ChatMessage>> {
    let stored = store
        .scan::<StoredMessage>(
            ws,
            RecordScan {
                prefix: format!("{session_id}/"),
                limit: Some(limit),
                ..RecordScan::default()
            },
        )
        .await?;
    Ok(stored.into_iter().map(|m| m.0).collect())
}

/// The last `n` user and assistant messages of a session, oldest first (the model's memory of
/// the conversation).
pub async fn recent_dialogue(
    store: &Store,
    ws: WorkspaceId,
    session_id: &str,
    n: usize,
) -> Result<Vec<ChatMessage>> {
    let mut stored = store
        .scan::<StoredMessage>(
            ws,
            RecordScan {
                prefix: format!("{session_id}/"),
                reverse: true,
                limit: Some(n * 8),
                ..RecordScan::default()
            },
        )
        .await?;
    stored.retain(|m| matches!(m.0.role, Role::User | Role::Assistant));
    stored.truncate(n);
    stored.reverse();
    Ok(stored.into_iter().map(|m| m.0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_one_line_and_bounded() {
        assert_eq!(
            title_of("who  is\nlikely to churn?"),
            "who is likely to churn?"
        );
        let long = "x".repeat(200);
        assert_eq!(title_of(&long).chars().count(), TITLE_CHARS);
    }
}
