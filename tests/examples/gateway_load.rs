//! Load generator for the capability gateway, run as its own process against a running `svcd`:
//!
//! ```text
//! svcd serve --addr 127.0.0.1:18080 --data-dir /tmp/svc-load &
//! SVC_LOAD_ADMIN="svcd admin --data-dir /tmp/svc-load" \
//!   cargo run -p svc-integration-tests --example gateway_load -- http://127.0.0.1:18080 events.ingest 32 10
//! ```
//!
//! Registers a fresh account, has the operator give its workspace an enterprise plan of a
//! billion credits (the command in `SVC_LOAD_ADMIN`, followed by `workspace set-plan ...`;
//! without it the free plan's 100 credits end a gateway run early), mints a key with the
//! highest request rate, then keeps `connections` requests in flight for `seconds` and prints
//! invocations per second and latency percentiles. Only answers whose body shows the work done
//! are counted (a `committed` envelope; a track result naming its touchpoint and not a
//! duplicate; a batch with zero failed items), and the rate divides by the measured time from
//! the first request to the last answer, not by the nominal duration.
//!
//! Instead of a capability id, `track` drives the direct route `/api/v1/events/track` (one
//! event per request) and `batch` the batch route `/api/v1/events` (100 events per request;
//! the figure is then events per second). `segment` drives Segment's Tracking API
//! `/segment/v1/batch` with a source write key (HTTP Basic), 100 messages per request in a
//! realistic mix (see [`segment_message`]; events per second as for `batch`);
//! `segment-track` sends only the mix's `track` message (Segment's protocol at the batch
//! route's workload).
//!
//! `query` and `query-rows` measure what the HTTP path adds to a read query (issue 25): they
//! post `RETURN 1` (one row) or a 100-row `UNWIND` to `/v1/graph/query` with a `graph:read`
//! key, count answers with the expected rows, and first time the same statement embedded
//! (parse, plan and run on a RocksDB graph in a temporary directory, as svcd does) so the
//! printout shows both p50s and their difference. Run them with 1 connection for latency.
//! `healthz` is their floor: `GET /healthz` (no key, no body, no store) over the same client,
//! so `query`'s p50 minus `healthz`'s is what the query route adds to a round trip.
//! With `SVC_LOAD_PID` set to svcd's pid, every target also prints svcd's CPU time per request.
//! `healthz-raw`, `query-raw` and `query-rows-raw` send the same requests from a plain socket
//! instead of reqwest (see [`raw_client`]), busy-polling the answer with `SVC_LOAD_SPIN=1`, so the
//! figure holds no client library and, spinning, no client wake-up.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use svc_integration_tests::{grant, invoke_path, Capability};

/// Events per request of the `batch` target.
const BATCH: u64 = 100;

/// The statements of the `query` and `query-rows` targets, with the rows each must answer.
const QUERIES: [(&str, &str, usize); 2] = [
    ("query", "RETURN 1 AS one", 1),
    (
        "query-rows",
        "UNWIND range(1, 100) AS i RETURN i, i * 2 AS twice",
        100,
    ),
];

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let base = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "http://127.0.0.1:18080".into());
    let capability = args
        .get(2)
        .cloned()
        .unwrap_or_else(|| Capability::EventsIngest.id().into());
    let connections: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(32);
    let seconds: u64 = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(10);
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(connections)
        .build()
        .expect("client");

    let email = format!("load-{}@example.com", std::process::id());
    let reg: Value = client
        .post(format!("{base}/api/auth/register"))
        .json(&json!({"email": email, "password": "correct horse battery", "name": "load"}))
        .send()
        .await
        .expect("register")
        .json()
        .await
        .expect("register body");
    let token = reg["token"].as_str().expect("token").to_owned();
    let workspace_id = reg["workspace"]["id"].as_str().expect("workspace id");
    match std::env::var("SVC_LOAD_ADMIN") {
        Ok(admin) => {
            let mut words = admin.split_whitespace();
            let program = words.next().expect("SVC_LOAD_ADMIN names a command");
            let status = std::process::Command::new(program)
                .args(words)
                .args(["workspace", "set-plan", workspace_id, "enterprise"])
                .args(["--monthly-credit-limit", "1000000000"])
                .stdout(std::process::Stdio::null())
                .status()
                .expect("run SVC_LOAD_ADMIN");
            assert!(status.success(), "svcd admin workspace set-plan failed");
        }
        Err(_) => {
            eprintln!("SVC_LOAD_ADMIN is not set: {workspace_id} keeps the free plan (100 credits)")
        }
    }
    let key: Value = client
        .post(format!("{base}/api/v1/keys"))
        .bearer_auth(&token)
        .json(&json!({"name": "load", "allowed_modes": ["execute"],
                      "grants": [grant(Capability::EventsIngest), grant(Capability::ContextGet),
                                 "graph:read"],
                      "rate_limit_per_min": 1_000_000}))
        .send()
        .await
        .expect("key")
        .json()
        .await
        .expect("key body");
    let key = key["key"].as_str().expect("key").to_owned();
    let write_key: Value = client
        .post(format!("{base}/api/v1/segment/write-keys"))
        .bearer_auth(&token)
        .json(&json!({"name": "load", "rate_limit_per_min": 1_000_000}))
        .send()
        .await
        .expect("write key")
        .json()
        .await
        .expect("write key body");
    let write_key = write_key["write_key"]
        .as_str()
        .expect("write_key")
        .to_owned();
    // One customer for context.get to read.
    let seed: Value = client
        .post(format!("{base}{}", invoke_path(Capability::EventsIngest)))
        .bearer_auth(&key)
        .json(&json!({"input": {"event": "pricing_viewed", "email": "seed@example.com"}}))
        .send()
        .await
        .expect("seed")
        .json()
        .await
        .expect("seed body");
    let customer = seed["result"]["customer_id"]
        .as_str()
        .expect("customer")
        .to_owned();

    // The printout names the target as given; the requests are those of its base target.
    let label = match std::env::var_os("SVC_LOAD_SPIN") {
        Some(_) if capability.ends_with("-raw") => format!("{capability} (spinning)"),
        _ => capability.clone(),
    };
    let raw = capability.strip_suffix("-raw").map(str::to_owned);
    let capability = raw.clone().unwrap_or(capability);
    let statement = QUERIES.iter().find(|(name, ..)| *name == capability);
    if let Some((_, text, _)) = statement {
        let embedded = embedded_p50(text);
        println!("{label}: embedded p50 {:.1} us ({text})", micros(embedded));
    }
    let cpu_before = svcd_cpu();

    let started_run = Instant::now();
    let deadline = started_run + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for worker in 0..connections {
        if raw.is_some() {
            let (base, key, target) = (base.clone(), key.clone(), capability.clone());
            let spin = std::env::var_os("SVC_LOAD_SPIN").is_some();
            tasks.push(tokio::task::spawn_blocking(move || {
                raw_client(&base, &target, &key, deadline, spin)
            }));
            continue;
        }
        let (client, base, key, write_key, cap, customer) = (
            client.clone(),
            base.clone(),
            key.clone(),
            write_key.clone(),
            capability.clone(),
            customer.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0u64;
            let mut n = 0u64;
            while Instant::now() < deadline {
                n += 1;
                let email = |i: u64| format!("u{worker}-{}@example.com", i % 1000);
                let request = match cap.as_str() {
                    "track" => client
                        .post(format!("{base}/api/v1/events/track"))
                        .header("x-api-key", &key)
                        .json(&json!({"action": "page_viewed", "email": email(n),
                                      "properties": {"n": n}})),
                    "batch" => {
                        let events: Vec<Value> = (0..BATCH)
                            .map(|i| json!({"type": "track", "action": "page_viewed",
                                            "email": email(n * BATCH + i)}))
                            .collect();
                        client
                            .post(format!("{base}/api/v1/events"))
                            .header("x-api-key", &key)
                            .json(&json!({ "events": events }))
                    }
                    "query" | "query-rows" => {
                        let (_, text, _) = QUERIES.iter().find(|(n, ..)| *n == cap).expect("query");
                        client
                            .post(format!("{base}/v1/graph/query"))
                            .bearer_auth(&key)
                            .json(&json!({ "query": text }))
                    }
                    "healthz" => client.get(format!("{base}/healthz")),
                    "segment" | "segment-track" => {
                        let track_only = cap == "segment-track";
                        let batch: Vec<Value> = (0..BATCH)
                            .map(|i| segment_message(worker, n * BATCH + i, track_only))
                            .collect();
                        client
                            .post(format!("{base}/segment/v1/batch"))
                            .basic_auth(&write_key, Some(""))
                            .json(&json!({ "batch": batch }))
                    }
                    _ => {
                        let input = if cap == Capability::EventsIngest.id() {
                            json!({"event": "page_viewed", "email": email(n), "properties": {"n": n}})
                        } else {
                            json!({"customer": customer})
                        };
                        client
                            .post(format!("{base}/api/v1/capabilities/{cap}/invoke"))
                            .bearer_auth(&key)
                            .json(&json!({"mode": "execute", "input": input}))
                    }
                };
                let started = Instant::now();
                let body = match request.send().await {
                    Ok(r) if r.status().is_success() => r.json::<Value>().await.ok(),
                    _ => None,
                };
                match body {
                    Some(b) if work_done(&cap, &b) => latencies.push(started.elapsed()),
                    _ => errors += 1,
                }
            }
            (latencies, errors)
        }));
    }
    let mut all = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await.expect("worker");
        all.extend(l);
        errors += e;
    }
    let elapsed = started_run.elapsed().as_secs_f64();
    all.sort();
    let pct = |p: f64| -> f64 {
        let i = ((all.len() as f64 - 1.0) * p).round() as usize;
        all.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let per_request = if matches!(capability.as_str(), "batch" | "segment" | "segment-track") {
        BATCH
    } else {
        1
    };
    println!(
        "{label}: {} done, {errors} not done in {elapsed:.2} s with {connections} connections: {:.0} events or invocations/s, p50 {:.3} ms, p99 {:.3} ms, max {:.2} ms (per request)",
        all.len(),
        (all.len() as u64 * per_request) as f64 / elapsed,
        pct(0.50),
        pct(0.99),
        pct(1.0)
    );
    if let (Some(before), Some(after)) = (cpu_before, svcd_cpu()) {
        let per = (after - before).as_secs_f64() / (all.len() + errors as usize).max(1) as f64;
        println!("{label}: svcd CPU {:.1} us per request", per * 1e6);
    }
}

/// The `-raw` targets' client: one keep-alive HTTP/1.1 connection on a plain socket, a request
/// written whole and its answer read to its `Content-Length`, no client library or async runtime
/// in between, so the latency is svcd's and the kernel's. With `spin`, the socket is non-blocking
/// and polled, so the client never sleeps and an answer is seen without waking a thread.
fn raw_client(
    base: &str,
    target: &str,
    key: &str,
    deadline: Instant,
    spin: bool,
) -> (Vec<Duration>, u64) {
    use std::io::{ErrorKind, Read, Write};
    let addr = base.trim_start_matches("http://").trim_end_matches('/');
    let mut socket = std::net::TcpStream::connect(addr).expect("connect");
    socket.set_nodelay(true).expect("nodelay");
    socket.set_nonblocking(spin).expect("nonblocking");
    let request = match QUERIES.iter().find(|(n, ..)| *n == target) {
        Some((_, text, _)) => {
            let body = json!({ "query": text }).to_string();
            format!(
                "POST /v1/graph/query HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {key}\r\n\
                 content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )
        }
        None => format!("GET /healthz HTTP/1.1\r\nhost: {addr}\r\n\r\n"),
    };
    let (mut latencies, mut errors) = (Vec::new(), 0u64);
    let mut buf = vec![0u8; 64 * 1024];
    while Instant::now() < deadline {
        let started = Instant::now();
        socket.write_all(request.as_bytes()).expect("write");
        let (mut have, mut head_end, mut length) = (0usize, None::<usize>, 0usize);
        loop {
            match socket.read(&mut buf[have..]) {
                Ok(0) => panic!("svcd closed the connection"),
                Ok(n) => have += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    std::hint::spin_loop();
                    continue;
                }
                Err(e) => panic!("read: {e}"),
            }
            if head_end.is_none() {
                if let Some(at) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..at]).to_ascii_lowercase();
                    length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .expect("content-length");
                    head_end = Some(at + 4);
                }
            }
            if head_end.is_some_and(|at| have >= at + length) {
                break;
            }
        }
        let at = head_end.expect("head");
        let ok = buf.starts_with(b"HTTP/1.1 200")
            && serde_json::from_slice::<Value>(&buf[at..at + length])
                .is_ok_and(|body| work_done(target, &body));
        if ok {
            latencies.push(started.elapsed());
        } else {
            errors += 1;
        }
    }
    (latencies, errors)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// p50 of parsing, planning and running `text` embedded, over a RocksDB graph as svcd holds it.
fn embedded_p50(text: &str) -> Duration {
    let dir = tempfile::tempdir().expect("temp dir");
    let graph = svc_engine::Graph::open(dir.path(), Default::default()).expect("open graph");
    let snapshot = graph.snapshot(svc_engine::WorkspaceId(1));
    let (params, limits) = (svc_query::Params::default(), svc_query::Limits::default());
    let mut times: Vec<Duration> = (0..20_000)
        .map(|_| {
            let started = Instant::now();
            let stmt = svc_query::parse(text).expect("parse");
            let result = svc_query::run_read(&snapshot, &stmt, &params, &limits).expect("run");
            std::hint::black_box(result);
            started.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// svcd's user + system CPU time so far, from `/proc/$SVC_LOAD_PID/stat` (Linux).
fn svcd_cpu() -> Option<Duration> {
    let pid = std::env::var("SVC_LOAD_PID").ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start at state, field 3.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // Clock ticks are 100 per second on Linux.
    Some(Duration::from_millis(ticks * 10))
}

/// Whether an answer's body shows the work done, not merely a 2xx.
fn work_done(target: &str, body: &Value) -> bool {
    match target {
        "track" => body["touchpoint_id"].is_string() && body["duplicate"] == false,
        "batch" => body["failed"] == 0 && body["accepted"] == BATCH,
        "segment" | "segment-track" => {
            body["success"] == true
                && body["accepted"] == BATCH
                && body["duplicates"] == 0
                && body["rejected"].as_array().is_some_and(Vec::is_empty)
        }
        "healthz" => body["status"] == "ok",
        "query" | "query-rows" => {
            let expected = QUERIES.iter().find(|(n, ..)| *n == target).map(|q| q.2);
            body["rows"].as_array().map(Vec::len) == expected
        }
        _ => body["status"] == "committed",
    }
}

/// Message `i` of a worker's Segment traffic: per 100, 50 track, 25 page (a third of them by
/// anonymous visitors, with UTM context), 5 screen, 10 identify (linking the visitor's
/// anonymous id), 5 group, 2 alias and 3 more track. 1,000 users per worker. `track_only`:
/// always the mix's track.
fn segment_message(worker: usize, i: u64, track_only: bool) -> Value {
    let user = format!("u{worker}-{}", i % 1000);
    let anon = format!("a{worker}-{}", i % 1000);
    let id = format!("m{worker}-{i}-{}", std::process::id());
    let slot = if track_only { 0 } else { i % 100 };
    match slot {
        0..=49 | 97..=99 => json!({"type": "track", "userId": user, "event": "Product Viewed",
            "messageId": id, "properties": {"sku": format!("SKU-{}", i % 50), "price": 19.5}}),
        50..=74 if i % 3 == 0 => json!({"type": "page", "anonymousId": anon, "name": "Pricing",
            "messageId": id, "properties": {"path": "/pricing"},
            "context": {"campaign": {"name": "spring", "source": "newsletter"},
                        "userAgent": "Mozilla/5.0"}}),
        50..=74 => json!({"type": "page", "userId": user, "name": "Docs", "messageId": id,
            "properties": {"path": "/docs"}}),
        75..=79 => json!({"type": "screen", "userId": user, "name": "Home", "messageId": id}),
        80..=89 => json!({"type": "identify", "userId": user, "anonymousId": anon,
            "messageId": id, "traits": {"email": format!("{user}@example.com"), "plan": "pro"}}),
        90..=94 => json!({"type": "group", "userId": user, "groupId": format!("g{}", i % 20),
            "messageId": id, "traits": {"name": "Acme"}}),
        _ => json!({"type": "alias", "userId": user, "previousId": anon, "messageId": id}),
    }
}
