//! Exactly once across a crash: `svcd` is killed with SIGKILL while an email is with the SMTP
//! relay (the relay took the message and never answered). After a restart the outbound record
//! is `unknown`, not `sending`, and a retry with the same idempotency key replays that answer
//! instead of sending the email a second time.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{json_body, send, start};

/// What the relay saw: connections, and messages whose DATA it received in full.
#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    messages: AtomicUsize,
}

/// A minimal SMTP relay (RFC 5321 replies, no AUTH) that takes a message's DATA and then never
/// sends the final reply: the client cannot know whether the message was accepted.
fn relay_that_hangs_after_data() -> (u16, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind relay");
    let port = listener.local_addr().expect("addr").port();
    let seen = Arc::new(Seen::default());
    let counters = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().map_while(Result::ok) {
            counters.connections.fetch_add(1, Ordering::SeqCst);
            let counters = counters.clone();
            std::thread::spawn(move || {
                let mut out = conn.try_clone().expect("clone");
                let reader = BufReader::new(conn);
                let _ = out.write_all(b"220 relay.test ESMTP\r\n");
                let mut in_data = false;
                for line in reader.lines().map_while(Result::ok) {
                    if in_data {
                        if line == "." {
                            counters.messages.fetch_add(1, Ordering::SeqCst);
                            // Hold the connection open and say nothing.
                            std::thread::sleep(Duration::from_secs(600));
                            return;
                        }
                        continue;
                    }
                    let verb = line.split_whitespace().next().unwrap_or("").to_uppercase();
                    let reply: &[u8] = match verb.as_str() {
                        "EHLO" => b"250-relay.test\r\n250 8BITMIME\r\n",
                        "HELO" | "MAIL" | "RCPT" | "RSET" | "NOOP" => b"250 OK\r\n",
                        "DATA" => {
                            in_data = true;
                            b"354 go ahead\r\n"
                        }
                        "QUIT" => {
                            let _ = out.write_all(b"221 bye\r\n");
                            return;
                        }
                        _ => b"502 not implemented\r\n",
                    };
                    let _ = out.write_all(reply);
                }
            });
        }
    });
    (port, seen)
}

fn ok_json(response: &str, what: &str) -> Value {
    assert!(
        response.starts_with("HTTP/1.1 200") || response.starts_with("HTTP/1.1 201"),
        "{what}: {response}"
    );
    json_body(response)
}

#[cfg(unix)]
#[test]
fn a_send_interrupted_by_sigkill_is_unknown_and_never_repeated() {
    let (smtp_port, seen) = relay_that_hangs_after_data();
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut child, addr, _logs) = start(dir.path());

    let registered = send(
        &addr,
        "POST",
        "/api/auth/register",
        &[],
        r#"{"email": "ops@example.com", "password": "crash-test-password", "name": "Ops"}"#,
    );
    let token = ok_json(&registered, "register")["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let jwt = format!("Bearer {token}");
    let auth = [("Authorization", jwt.as_str())];
    let smtp = json!({"host": "127.0.0.1", "port": smtp_port, "security": "none",
        "from": "ops@acme.test"});
    ok_json(
        &send(
            &addr,
            "PUT",
            "/api/v1/integrations/smtp",
            &auth,
            &smtp.to_string(),
        ),
        "connect smtp",
    );
    ok_json(
        &send(
            &addr,
            "PUT",
            "/api/v1/workspace",
            &auth,
            r#"{"policy": {"auto_approve": ["execute.outreach"]}}"#,
        ),
        "policy",
    );
    let created = ok_json(
        &send(
            &addr,
            "POST",
            "/api/v1/keys",
            &auth,
            &json!({"name": "sender", "auto_run": true,
                "grants": ["capability:execute.outreach", "capability:events.ingest"],
                "allowed_modes": ["dry_run", "queue", "execute"]})
            .to_string(),
        ),
        "key",
    );
    let key = format!("Bearer {}", created["key"].as_str().expect("key"));
    let keyed = [("Authorization", key.as_str())];
    ok_json(
        &send(
            &addr,
            "POST",
            "/api/v1/capabilities/events.ingest/invoke",
            &keyed,
            r#"{"mode": "execute", "input": {"event": "signup", "email": "kim@example.com"}}"#,
        ),
        "ingest",
    );

    // The send: it will hang at the relay. Kill svcd once the relay has the whole message.
    let body = json!({"mode": "execute", "idempotency_key": "send-kim-1",
        "input": {"customer": "kim@example.com", "subject": "Welcome", "body": "Hello Kim"}})
    .to_string();
    let (addr2, key2, body2) = (addr.clone(), key.clone(), body.clone());
    std::thread::spawn(move || {
        // Answered by nobody: the process dies under it.
        let _ = std::panic::catch_unwind(|| {
            send(
                &addr2,
                "POST",
                "/api/v1/capabilities/execute.outreach/invoke",
                &[("Authorization", key2.as_str())],
                &body2,
            )
        });
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.messages.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the relay never got the message");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL svcd");
    let _ = child.wait();

    // A new process over the same directory: the interrupted send is `unknown`.
    let (mut child, addr, _logs) = start(dir.path());
    let outbox = ok_json(&send(&addr, "GET", "/api/v1/outbox", &auth, ""), "outbox");
    let items = outbox["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "{outbox}");
    assert_eq!(items[0]["state"], "unknown", "{outbox}");

    // The retry replays the stored answer, which now says `unknown`; nothing is sent again.
    let retry = send(
        &addr,
        "POST",
        "/api/v1/capabilities/execute.outreach/invoke",
        &keyed,
        &body,
    );
    assert!(
        retry.to_lowercase().contains("idempotent-replayed: true"),
        "{retry}"
    );
    let replay = ok_json(&retry, "retry");
    assert_eq!(replay["result"]["state"], "unknown", "{replay}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(seen.messages.load(Ordering::SeqCst), 1);
    assert_eq!(seen.connections.load(Ordering::SeqCst), 1);
    child.kill().expect("stop svcd");
    let _ = child.wait();
}
