//! `/v1/stream`: a client sees its own workspace's touchpoints and never another's.

use std::time::Duration;

use futures_util::StreamExt;
use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::{read, TestServer};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(
    s: &TestServer,
    token: Option<&str>,
) -> Result<Ws, tokio_tungstenite::tungstenite::Error> {
    let url = s.url("/v1/stream").replacen("http://", "ws://", 1);
    let mut req = url.into_client_request()?;
    if let Some(t) = token {
        req.headers_mut().insert(
            "authorization",
            format!("Bearer {t}").parse().expect("header"),
        );
    }
    tokio_tungstenite::connect_async(req)
        .await
        .map(|(ws, _)| ws)
}

async fn next_json(ws: &mut Ws, wait: Duration) -> Option<Value> {
    loop {
        match tokio::time::timeout(wait, ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => return serde_json::from_str(t.as_str()).ok(),
            Ok(Some(Ok(_))) => continue,
            _ => return None,
        }
    }
}

#[tokio::test]
async fn clients_see_their_workspace_only() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let b = s.account().await;
    let key_a = s.reader_key(&a).await.plaintext;
    let mut ws_a = connect(&s, Some(&key_a)).await.expect("connect a");
    let mut ws_b = connect(&s, Some(&b.token)).await.expect("connect b");

    let resp = s
        .post("/api/v1/events/track")
        .header("x-api-key", key_a.as_str())
        .json(&json!({"action": "page_viewed", "email": "s@x.io",
                      "timestamp": "2026-01-02T03:04:05Z"}))
        .send()
        .await
        .expect("send");
    let (status, r) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{r}");

    let msg = next_json(&mut ws_a, Duration::from_secs(5))
        .await
        .expect("message");
    assert_eq!(
        msg,
        json!({"type": "touchpoint.created", "customer_id": r["customer_id"],
               "touchpoint_id": r["touchpoint_id"], "event": "page_viewed",
               "ts": "2026-01-02T03:04:05.000Z"})
    );
    assert_eq!(next_json(&mut ws_b, Duration::from_millis(300)).await, None);

    // Batch items are announced in order; a duplicate is not announced again.
    let resp = s
        .post("/api/v1/events")
        .bearer_auth(&a.token)
        .json(&json!({"events": [
            {"type": "track", "action": "one", "email": "s@x.io", "messageId": "m"},
            {"type": "track", "action": "again", "email": "s@x.io", "messageId": "m"},
            {"type": "track", "action": "two", "email": "s@x.io"}
        ]}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), StatusCode::OK);
    let one = next_json(&mut ws_a, Duration::from_secs(5))
        .await
        .expect("one");
    let two = next_json(&mut ws_a, Duration::from_secs(5))
        .await
        .expect("two");
    assert_eq!(
        (one["event"].clone(), two["event"].clone()),
        (json!("one"), json!("two"))
    );
}

#[tokio::test]
async fn the_stream_needs_a_credential() {
    let s = TestServer::start().await;
    match connect(&s, None).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status().as_u16(), 401);
        }
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("connected without a credential"),
    }
    assert!(connect(&s, Some("svc_live_bogus")).await.is_err());
}

/// Opens `/v1/stream?ticket=...` with no credential in the headers, as a browser does.
async fn connect_with_ticket(
    s: &TestServer,
    ticket: &str,
) -> Result<Ws, tokio_tungstenite::tungstenite::Error> {
    let url = s
        .url(&format!("/v1/stream?ticket={ticket}"))
        .replacen("http://", "ws://", 1);
    tokio_tungstenite::connect_async(url)
        .await
        .map(|(ws, _)| ws)
}

async fn ticket_for(s: &TestServer, bearer: &str) -> Value {
    let resp = s
        .post("/v1/stream/ticket")
        .bearer_auth(bearer)
        .send()
        .await
        .expect("ticket");
    let (status, body) = read(resp).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

#[tokio::test]
async fn a_browser_ticket_opens_the_stream_once() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let b = s.account().await;
    let ticket = ticket_for(&s, &a.token).await;
    assert_eq!(ticket["expires_in"], 60);
    let t = ticket["ticket"].as_str().expect("ticket").to_owned();
    assert!(t.starts_with("stk_"), "{ticket}");
    assert_eq!(ticket["url"], format!("/v1/stream?ticket={t}"));

    let mut ws = connect_with_ticket(&s, &t).await.expect("ticket opens");
    // The stream is the ticket holder's workspace: A's event arrives, B's does not.
    let key_b = s.agent_key(&b).await.plaintext;
    let key_a = s.agent_key(&a).await.plaintext;
    for key in [&key_b, &key_a] {
        let resp = s
            .post("/api/v1/events/track")
            .header("x-api-key", key.as_str())
            .json(&json!({"action": "page_viewed", "email": "t@x.io"}))
            .send()
            .await
            .expect("track");
        assert_eq!(resp.status(), StatusCode::OK);
    }
    let got = next_json(&mut ws, Duration::from_secs(5))
        .await
        .expect("a message");
    assert_eq!(got["event"], "page_viewed", "{got}");
    assert!(next_json(&mut ws, Duration::from_millis(300))
        .await
        .is_none());

    // Used up; unknown tickets and no ticket are refused; keys may ask for tickets too.
    for bad in [t.as_str(), "stk_made_up"] {
        match connect_with_ticket(&s, bad).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(r)) => {
                assert_eq!(r.status().as_u16(), 401)
            }
            other => panic!("{bad}: {:?}", other.map(|_| "connected")),
        }
    }
    assert!(connect(&s, None).await.is_err());
    let reader = s.reader_key(&a).await.plaintext;
    let keyed = ticket_for(&s, &reader).await;
    let t = keyed["ticket"].as_str().expect("ticket");
    connect_with_ticket(&s, t)
        .await
        .expect("a key's ticket opens");
    let resp = s.post("/v1/stream/ticket").send().await.expect("anonymous");
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    s.stop().await;
}

async fn revoke(s: &TestServer, owner: &str, key_id: &str) {
    let resp = s
        .request(reqwest::Method::DELETE, &format!("/api/v1/keys/{key_id}"))
        .bearer_auth(owner)
        .send()
        .await
        .expect("revoke");
    assert_eq!(resp.status(), StatusCode::OK);
}

/// Issue 29: revoking a key ends the streams it opened at once, and a ticket minted for it
/// before the revocation opens nothing afterwards.
#[tokio::test]
async fn revocation_closes_open_streams_and_voids_their_tickets() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.reader_key(&a).await;
    let other = s.reader_key(&a).await;
    let mut by_header = connect(&s, Some(&key.plaintext)).await.expect("connect");
    let ticket = ticket_for(&s, &key.plaintext).await;
    let mut unaffected = connect(&s, Some(&other.plaintext)).await.expect("other");

    revoke(&s, &a.token, &key.id).await;
    // The server closes the stream with 1008 and says why; nothing more arrives.
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match by_header.next().await {
                Some(Ok(Message::Close(Some(frame)))) => return Some(frame),
                Some(Ok(_)) => continue,
                _ => return None,
            }
        }
    })
    .await
    .expect("closed within 5 s")
    .expect("a close frame");
    assert_eq!(u16::from(closed.code), 1008);
    assert!(closed.reason.contains("revoked"), "{}", closed.reason);

    match connect_with_ticket(&s, ticket["ticket"].as_str().expect("ticket")).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status().as_u16(), 401);
        }
        other => panic!("a revoked key's ticket opened a stream: {other:?}"),
    }

    // The other key's stream still receives its workspace's events.
    let resp = s
        .post("/api/v1/events/track")
        .bearer_auth(&a.token)
        .json(&json!({"action": "after", "email": "r@x.io"}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), StatusCode::OK);
    let msg = next_json(&mut unaffected, Duration::from_secs(5))
        .await
        .expect("still open");
    assert_eq!(msg["event"], "after");
}
