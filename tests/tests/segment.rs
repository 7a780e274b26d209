//! Segment's HTTP Tracking API driven by the real clients, installed from the package
//! registries by scripts/segment-clients.sh: Segment's Python (`segment-analytics-python`) and
//! Node (`@segment/analytics-node`) libraries and RudderStack's Python SDK. Each sends page,
//! track, identify, group and alias calls (gzip, batching, flushes, a retried messageId);
//! the test reads the customers, touchpoints, company and identity links back over the API.
//! Plus Segment's answers (401, 400, 429 with Retry-After) over plain HTTP.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::{expect_error, get_ok, read, str_at, Account, TestServer};
use tokio::io::AsyncReadExt;

/// (python, node_modules) from scripts/segment-clients.sh (idempotent, cached per machine).
fn clients() -> &'static (PathBuf, PathBuf) {
    static CLIENTS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    CLIENTS.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/segment-clients.sh");
        let out = Command::new("bash")
            .arg(&script)
            .stderr(Stdio::inherit())
            .output()
            .expect("run scripts/segment-clients.sh");
        assert!(out.status.success(), "scripts/segment-clients.sh failed");
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        assert!(lines.len() >= 2, "{text}");
        (
            PathBuf::from(lines[lines.len() - 2]),
            PathBuf::from(lines[lines.len() - 1]),
        )
    })
}

fn driver(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("segment_clients")
        .join(name)
}

async fn write_key(s: &TestServer, a: &Account, rate: Option<u32>) -> String {
    let mut body = json!({"name": "web"});
    if let Some(r) = rate {
        body["rate_limit_per_min"] = json!(r);
    }
    let resp = s
        .post("/api/v1/segment/write-keys")
        .bearer_auth(&a.token)
        .json(&body)
        .send()
        .await
        .expect("send");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    str_at(&v, "/write_key")
}

/// Runs a client to completion off the async runtime (the server keeps serving).
async fn run(program: PathBuf, args: Vec<String>) {
    let out = tokio::task::spawn_blocking(move || {
        Command::new(&program)
            .args(&args)
            .output()
            .expect("run the client")
    })
    .await
    .expect("join");
    assert!(
        out.status.success(),
        "client failed: {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Checks everything the scenario of tests/segment_clients/ must have left.
async fn check_scenario(s: &TestServer, a: &Account, tag: &str) {
    let email = format!("{tag}@example.com");
    let profile = get_ok(s, &format!("/v1/customers/{email}"), &a.token).await;
    let c = &profile["customer"];
    let cid = str_at(c, "/id");
    assert_eq!(c["externalId"], json!(format!("{tag}-user")), "{c}");
    assert_eq!(c["name"], json!("Ada Lovelace"), "{c}");
    assert_eq!(c["properties"]["plan"], json!("pro"), "{c}");
    assert_eq!(
        c["properties"]["anonymousId"],
        json!(format!("{tag}-anon")),
        "{c}"
    );

    // Every touchpoint, the anonymous visitor's and the aliased id's included, once each:
    // the retried order was deduplicated.
    let timeline = get_ok(s, &format!("/v1/customers/{cid}/timeline"), &a.token).await;
    let tps = timeline["touchpoints"].as_array().expect("touchpoints");
    let mut actions: Vec<&str> = tps.iter().filter_map(|t| t["action"].as_str()).collect();
    actions.sort_unstable();
    assert_eq!(
        actions,
        [
            "Legacy Login",
            "Order Completed",
            "Signup Started",
            "alias",
            "group",
            "identify",
            "page:Pricing"
        ],
        "{timeline}"
    );
    let by = |action: &str| {
        tps.iter()
            .find(|t| t["action"] == json!(action))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let page = by("page:Pricing");
    assert_eq!(page["campaignId"], json!("spring"), "{page}");
    let p = &page["properties"];
    assert_eq!(
        (&p["path"], &p["name"], &p["category"]),
        (&json!("/pricing"), &json!("Pricing"), &json!("Docs")),
        "{page}"
    );
    assert_eq!(
        (&p["utm_source"], &p["utm_medium"], &p["userAgent"]),
        (
            &json!("newsletter"),
            &json!("email"),
            &json!("Mozilla/5.0 (svc test)")
        ),
        "{page}"
    );
    let order = by("Order Completed");
    assert_eq!(order["properties"]["revenue"], json!(42.5), "{order}");
    assert_eq!(order["properties"]["sku"], json!("SKU-1"), "{order}");
    // The client stamped 2026-01-02T03:04:05Z and sent it moments later by the same clock:
    // after Segment's skew correction the time is the one stamped, within the transit time.
    let ts = time::OffsetDateTime::parse(
        order["timestamp"].as_str().expect("timestamp"),
        &time::format_description::well_known::Rfc3339,
    )
    .expect("rfc3339");
    let stamped = time::macros::datetime!(2026-01-02 03:04:05 UTC);
    assert!(
        (ts - stamped).abs() < time::Duration::seconds(30),
        "{ts} vs {stamped}"
    );

    // The identity link of the anonymous visitor.
    let link = get_ok(
        s,
        &format!("/api/v1/segment/anonymous-ids/{tag}-anon"),
        &a.token,
    )
    .await;
    assert_eq!(link["customer_id"], json!(cid), "{link}");
    assert_eq!(link["linked_by"], json!("identify"), "{link}");

    // The aliased older id is no customer of its own any more; the company is linked.
    let resp = s
        .post("/v1/graph/query")
        .bearer_auth(&a.token)
        .json(&json!({
            "query": "MATCH (c:Customer) WHERE c.externalId = $old OR c.externalId = $user \
                      OPTIONAL MATCH (c)-[:MEMBER_OF]->(g:Company) \
                      RETURN c.externalId, g.groupId, g.name, g.industry",
            "params": {"old": format!("{tag}-old"), "user": format!("{tag}-user")}
        }))
        .send()
        .await
        .expect("send");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        v["rows"],
        json!([[
            format!("{tag}-user"),
            format!("{tag}-acme"),
            "Acme Inc",
            "Tools"
        ]]),
        "{v}"
    );
}

/// The client a scenario runs with.
enum Client {
    /// tests/segment_clients/python_client.py with this library (`segment`, `rudderstack`).
    Python(&'static str),
    /// tests/segment_clients/node_client.js (`@segment/analytics-node`).
    Node,
}

/// A TCP proxy in front of svcd that forwards its first connection's request but drops the
/// answer and closes the connection (an acknowledgement lost on the way), then forwards every
/// later connection unchanged. Returns its address and how many answers it dropped.
async fn lossy_proxy(upstream: std::net::SocketAddr) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind proxy");
    let addr = listener.local_addr().expect("proxy addr");
    let dropped = Arc::new(AtomicUsize::new(0));
    let counter = dropped.clone();
    tokio::spawn(async move {
        let mut first = true;
        while let Ok((mut client, _)) = listener.accept().await {
            let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await else {
                continue;
            };
            if std::mem::take(&mut first) {
                let counter = counter.clone();
                tokio::spawn(async move {
                    let (mut client_read, _client_write) = client.split();
                    let (mut server_read, mut server_write) = server.split();
                    let forward = tokio::io::copy(&mut client_read, &mut server_write);
                    let mut answer = [0u8; 1];
                    // The server answers only after it read the whole request: drop the
                    // answer and both connections.
                    tokio::select! {
                        _ = forward => {}
                        n = server_read.read(&mut answer) => {
                            if matches!(n, Ok(n) if n > 0) {
                                counter.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                    }
                });
            } else {
                tokio::spawn(async move {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                });
            }
        }
    });
    (format!("http://{addr}"), dropped)
}

/// Runs one client's scenario against a fresh server and checks what it left.
async fn drive(client: Client, tag: &str) {
    drive_through(client, tag, false).await;
}

/// [`drive`], optionally through [`lossy_proxy`].
async fn drive_through(client: Client, tag: &str, lose_first_answer: bool) {
    let (python, node_modules) = clients();
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = write_key(&s, &a, None).await;
    let (base, dropped) = if lose_first_answer {
        let upstream = s.base.trim_start_matches("http://").parse().expect("addr");
        let (base, dropped) = lossy_proxy(upstream).await;
        (base, Some(dropped))
    } else {
        (s.base.clone(), None)
    };
    let (program, script, first) = match client {
        Client::Python(library) => (python.clone(), "python_client.py", library.to_owned()),
        Client::Node => (
            PathBuf::from("node"),
            "node_client.js",
            node_modules.display().to_string(),
        ),
    };
    let args = vec![
        driver(script).display().to_string(),
        first,
        format!("{base}/segment"),
        key,
        tag.to_owned(),
    ];
    run(program, args).await;
    if let Some(dropped) = dropped {
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "the proxy lost no answer"
        );
    }
    check_scenario(&s, &a, tag).await;
}

#[tokio::test]
async fn segment_python_client_end_to_end() {
    drive(Client::Python("segment"), "segpy").await;
}

/// The first batch is accepted but its answer is lost: the library retries it, and the
/// service's messageId dedupe keeps every event once (`check_scenario` counts them).
#[tokio::test]
async fn segment_python_client_retries_a_lost_answer_without_duplicates() {
    drive_through(Client::Python("segment"), "segretry", true).await;
}

#[tokio::test]
async fn rudderstack_python_sdk_end_to_end() {
    drive(Client::Python("rudderstack"), "rudder").await;
}

#[tokio::test]
async fn segment_node_client_end_to_end() {
    drive(Client::Node, "segnode").await;
}

#[tokio::test]
async fn segment_answers_and_limits() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = write_key(&s, &a, Some(2)).await;
    let msg = json!({"userId": "u-1", "event": "Clicked"});

    // Basic auth (Segment's clients), then writeKey in the body.
    let resp = s
        .post("/segment/v1/track")
        .basic_auth(&key, Some(""))
        .json(&msg)
        .send()
        .await
        .expect("send");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["success"], json!(true));
    let mut with_key = msg.clone();
    with_key["writeKey"] = json!(key);
    let resp = s
        .post("/segment/v1/track")
        .json(&with_key)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), StatusCode::OK);
    // The key's rate (2 a minute) is spent: 429 with Retry-After.
    let resp = s
        .post("/segment/v1/track")
        .basic_auth(&key, Some(""))
        .json(&msg)
        .send()
        .await
        .expect("send");
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    assert!(retry_after.is_some_and(|s| s > 0), "{retry_after:?}");
    expect_error(resp, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;

    // An unknown write key, and none at all: 401.
    let resp = s
        .post("/segment/v1/batch")
        .basic_auth("swk_0000000000000000000000000000000Z", Some(""))
        .json(&json!({"batch": []}))
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    let resp = s
        .post("/segment/v1/batch")
        .json(&json!({"batch": []}))
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;

    // An agent key with events:write works the same way; malformed JSON and oversized
    // bodies are 400.
    let agent = s.key_with_grants(&a, &["events:write"]).await.plaintext;
    let resp = s
        .post("/segment/v1/batch")
        .basic_auth(&agent, Some(""))
        .header("content-type", "application/json")
        .body("{\"batch\": [")
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::BAD_REQUEST, "invalid_json").await;
    let big = json!({"userId": "u", "event": "e", "properties": {"x": "y".repeat(40 * 1024)}});
    let resp = s
        .post("/segment/v1/track")
        .basic_auth(&agent, Some(""))
        .json(&big)
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
    let batch: Vec<Value> = (0..20).map(|_| big.clone()).collect();
    let resp = s
        .post("/segment/v1/import")
        .basic_auth(&agent, Some(""))
        .json(&json!({ "batch": batch }))
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;

    // A batch with invalid messages keeps the valid ones and lists the others.
    let resp = s
        .post("/segment/v1/batch")
        .basic_auth(&agent, Some(""))
        .json(&json!({"batch": [
            {"type": "track", "userId": "u-2", "event": "Kept", "messageId": "k1"},
            {"type": "track", "userId": "u-2", "messageId": "k2"},
            {"type": "identify", "messageId": "k3", "traits": {"name": "nobody"}}
        ]}))
        .send()
        .await
        .expect("send");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!((&v["success"], &v["accepted"]), (&json!(true), &json!(1)));
    let rejected: Vec<(u64, String)> = v["rejected"]
        .as_array()
        .expect("rejected")
        .iter()
        .map(|r| (r["index"].as_u64().unwrap_or(99), str_at(r, "/messageId")))
        .collect();
    assert_eq!(rejected, [(1, "k2".to_owned()), (2, "k3".to_owned())]);

    // Revoked: 401.
    let listed = get_ok(&s, "/api/v1/segment/write-keys", &a.token).await;
    let id = str_at(&listed, "/write_keys/0/id");
    let resp = s
        .request(
            reqwest::Method::DELETE,
            &format!("/api/v1/segment/write-keys/{id}"),
        )
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), StatusCode::OK);
    let resp = s
        .post("/segment/v1/track")
        .json(&with_key)
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
}
