//! `GET /v1/stream`: the caller's workspace's real-time messages over a WebSocket
//! (DESIGN.md §4). JWT or agent key in the upgrade request's headers, or (browsers) a one-use
//! ticket from `POST /v1/stream/ticket` in `?ticket=`.
//!
//! The subscription is taken before the upgrade is answered, so every event committed after
//! the 101 response reaches the client. A client that falls behind by more than the channel's
//! capacity is closed with 1008 ("too slow") rather than slowing ingestion down.

use crate::http::error::ErrorResponse;
use axum::extract::ws::{close_code, CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use tokio::sync::broadcast::error::RecvError;

use crate::http::error::ErrorBody;
use crate::http::extract::{AnyAuth, ApiJson};
use crate::state::AppState;
use svc_core::auth::{self, Principal};
use svc_core::store::Store;
use svc_domains::events::stream_tickets::TICKET_TTL;
use svc_domains::events::StreamMessage;

type Receiver = tokio::sync::broadcast::Receiver<std::sync::Arc<StreamMessage>>;

/// Upgrade to a WebSocket carrying `{"type": "touchpoint.created", customer_id,
/// touchpoint_id, event, ts}` text messages of the caller's workspace only.
#[utoipa::path(get, path = "/v1/stream", tag = "events",
    responses(
    (status = 101, description = "A WebSocket route: the handshake's answer (no body); then one text frame per message, each a `StreamMessage` JSON text (`components.schemas.StreamMessage`)"),
    (status = 400, description = "not a WebSocket upgrade request", body = ErrorBody),
    (status = 401, description = "no credential, or a ticket that is unknown, used or expired",
        body = ErrorBody),
),
    params(("ticket" = Option<String>, Query,
        description = "a one-use ticket from POST /v1/stream/ticket (browsers)"),
        // The WebSocket opening handshake (RFC 6455 §4.1) as the server checks it: without
        // these headers the request is not an upgrade and is answered 400.
        ("Connection" = String, Header, pattern = "[Uu][Pp][Gg][Rr][Aa][Dd][Ee]",
            description = "WebSocket handshake: a value containing the token `upgrade` (any case)"),
        ("Upgrade" = String, Header, pattern = "^[Ww][Ee][Bb][Ss][Oo][Cc][Kk][Ee][Tt]$",
            description = "WebSocket handshake: `websocket` (any case)"),
        ("Sec-WebSocket-Version" = String, Header, pattern = "^13$",
            description = "WebSocket handshake: `13`"),
        ("Sec-WebSocket-Key" = String, Header,
            description = "WebSocket handshake: the client's nonce (RFC 6455: 16 random bytes in base64)"),
    ))]
pub async fn stream(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    upgrade: WebSocketUpgrade,
) -> Result<Response, ErrorResponse> {
    let rx = state.realtime.subscribe(p.workspace());
    let store = state.store.clone();
    Ok(upgrade.on_upgrade(move |socket| {
        forward(
            socket,
            rx,
            Holder {
                store,
                principal: p,
            },
        )
    }))
}

/// The credential a stream was opened with, checked again whenever a credential is revoked
/// (and when a session expires), so revocation ends open streams at once (issue 29).
struct Holder {
    store: Store,
    principal: Principal,
}

impl Holder {
    /// When the credential lapses by itself (a session's expiry); keys do not expire.
    fn expiry(&self) -> tokio::time::Instant {
        let far = tokio::time::Instant::now() + std::time::Duration::from_secs(365 * 86_400);
        match &self.principal {
            Principal::User(s) => {
                let left = s.expires_at - svc_core::plumbing::clock::now().unix_timestamp();
                tokio::time::Instant::now()
                    + std::time::Duration::from_secs(u64::try_from(left).unwrap_or(0))
            }
            Principal::Key(_) => far,
        }
    }
}

async fn close_revoked(socket: &mut WebSocket) {
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            code: close_code::POLICY,
            reason: "the credential was revoked or expired".into(),
        })))
        .await;
}

/// A one-use ticket that opens `/v1/stream` once, within `expires_in` seconds.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StreamTicket {
    /// `stk_...`: pass as `?ticket=`.
    pub ticket: String,
    /// Seconds the ticket stays valid.
    pub expires_in: u64,
    /// The stream's path with the ticket.
    pub url: String,
}

/// A ticket for a browser's WebSocket, which cannot carry the credential in a header: the
/// stream it opens acts as the credential that asked for it.
#[utoipa::path(post, path = "/v1/stream/ticket", tag = "events",
    responses(
    (status = 201, body = StreamTicket),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
    (status = 429, body = ErrorBody),
))]
pub async fn ticket(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
) -> Result<(StatusCode, ApiJson<StreamTicket>), ErrorResponse> {
    let ticket = state
        .stream_tickets
        .issue(p.workspace(), p, std::time::Instant::now())?;
    Ok((
        StatusCode::CREATED,
        ApiJson(StreamTicket {
            url: format!("/v1/stream?ticket={ticket}"),
            ticket,
            expires_in: TICKET_TTL.as_secs(),
        }),
    ))
}

async fn forward(mut socket: WebSocket, mut rx: Receiver, holder: Holder) {
    let mut revocations = holder.store.revocations();
    let expiry = tokio::time::sleep_until(holder.expiry());
    tokio::pin!(expiry);
    // A revocation between authentication and this point is caught by this first check.
    if !auth::still_valid(&holder.store, &holder.principal)
        .await
        .unwrap_or(false)
    {
        close_revoked(&mut socket).await;
        return;
    }
    loop {
        tokio::select! {
            changed = revocations.changed() => {
                let valid = changed.is_ok()
                    && auth::still_valid(&holder.store, &holder.principal)
                        .await
                        .unwrap_or(false);
                if !valid {
                    close_revoked(&mut socket).await;
                    return;
                }
            }
            () = &mut expiry => {
                close_revoked(&mut socket).await;
                return;
            }
            msg = rx.recv() => match msg {
                Ok(m) => {
                    let Ok(text) = serde_json::to_string(&*m) else { continue };
                    if socket.send(Message::Text(text.into())).await.is_err() {
                        return;
                    }
                }
                Err(RecvError::Lagged(missed)) => {
                    tracing::info!(missed, "dropping a real-time client that fell behind");
                    let _ = socket
                        .send(Message::Close(Some(CloseFrame {
                            code: close_code::POLICY,
                            reason: "too slow: messages were dropped".into(),
                        })))
                        .await;
                    return;
                }
                Err(RecvError::Closed) => return,
            },
            incoming = socket.recv() => match incoming {
                // Clients only listen; pings are answered by the library.
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return,
                Some(Ok(_)) => {}
            },
        }
    }
}
