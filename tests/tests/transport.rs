//! Transport behaviour: keep-alive connections that outlive a refusal, TLS, CORS and the
//! stream ticket.

use std::time::Duration;

use serde_json::json;
use svc_integration_tests::TestServer;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// One HTTP/1.1 response read off a keep-alive connection: status and body.
async fn read_response(conn: &mut BufReader<TcpStream>) -> std::io::Result<(u16, String)> {
    let mut status_line = String::new();
    if conn.read_line(&mut status_line).await? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {status_line:?}")))?;
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if conn.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    conn.read_exact(&mut body).await?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// A client past its key's rate limit keeps its keep-alive connection: every request gets its
/// 429, none a closed connection. The body is sent a moment after the head, as clients whose
/// writes land in separate segments do: the refusal is decided before the body arrives, which
/// is when hyper used to give up on the connection (docs/decisions.md, "429s that closed the
/// connection").
#[tokio::test]
async fn refusals_keep_the_connection_when_the_body_arrives_late() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s
        .mint_key(
            &a,
            json!({"name": "limited", "rate_limit_per_min": 2,
                   "grants": ["capability:events.ingest"]}),
        )
        .await;
    let addr = s.base.trim_start_matches("http://").to_owned();
    let mut conn = BufReader::new(TcpStream::connect(&addr).await.expect("connect"));
    let mut statuses = Vec::new();
    for i in 0..8 {
        let body =
            json!({"event": "page_view", "email": format!("late{i}@example.com")}).to_string();
        let head = format!(
            "POST /api/v1/events/track HTTP/1.1\r\nHost: {addr}\r\nX-API-Key: {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            key.plaintext,
            body.len()
        );
        let sent = async {
            conn.get_mut().write_all(head.as_bytes()).await?;
            conn.get_mut().flush().await?;
            tokio::time::sleep(Duration::from_millis(30)).await;
            conn.get_mut().write_all(body.as_bytes()).await?;
            read_response(&mut conn).await
        };
        match tokio::time::timeout(Duration::from_secs(10), sent).await {
            Ok(Ok((status, text))) => statuses.push((status, text)),
            Ok(Err(e)) => panic!("request {i} lost its connection ({e}) after {statuses:?}"),
            Err(_) => panic!("request {i} timed out after {statuses:?}"),
        }
    }
    let codes: Vec<u16> = statuses.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        codes,
        [200, 200, 429, 429, 429, 429, 429, 429],
        "{statuses:?}"
    );
    assert!(statuses[2].1.contains("rate_limited"), "{}", statuses[2].1);
    s.stop().await;
}
