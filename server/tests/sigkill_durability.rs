//! Durability over HTTP: `svcd` under concurrent ingestion (track, batch and `events.ingest`
//! with idempotency keys) is killed with SIGKILL at random moments and restarted. After each
//! kill every event that got a 2xx (every batch item reported accepted) is in the store exactly
//! once, no event is there twice, no invocation is half applied (its ledger row, receipt and
//! idempotency record agree) and the engine's `validate` finds nothing.
//!
//! `SVC_SIGKILL_CYCLES` sets the number of kill cycles (default 5, seconds each; `make soak`
//! runs 20).

mod support;

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use rand::Rng;
use serde_json::{json, Value};
use support::{admin, json_body, send, start};
use svc_core::ledger::LedgerRow;
use svc_engine::{Graph, GraphOptions, GraphRead, RecordScan, Value as GraphValue, WorkspaceId};

/// One HTTP/1.1 exchange that may fail (the process dies under it): status, headers+body text.
fn try_send(addr: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Option<String> {
    let mut conn = TcpStream::connect(addr).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes()).ok()?;
    conn.write_all(body.as_bytes()).ok()?;
    let mut out = String::new();
    conn.read_to_string(&mut out).ok()?;
    // A response cut short by the kill is no acknowledgement.
    let (head, body) = out.split_once("\r\n\r\n")?;
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    (body.len() == length).then_some(out)
}

fn status(response: &str) -> u16 {
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// What the clients were told, across all cycles.
#[derive(Default)]
struct Acks {
    /// Probes of events acknowledged (track 200, batch item ok, invoke 200).
    events: Vec<String>,
    /// Invocations attempted: idempotency key -> (probe, body, request id when acknowledged).
    invocations: BTreeMap<String, (String, String, Option<String>)>,
}

struct Client {
    addr: String,
    key: String,
    cycle: usize,
    /// Tells apart clients of the same kind.
    lane: usize,
    stop: Arc<AtomicBool>,
    acks: Arc<Mutex<Acks>>,
    sent: Arc<AtomicUsize>,
}

impl Client {
    fn probe(&self, kind: &str, n: usize) -> String {
        format!("c{}-{kind}{}-{n}", self.cycle, self.lane)
    }

    fn event(probe: &str) -> Value {
        json!({"event": "page_view", "email": format!("{probe}@example.com"),
               "properties": {"probe": probe}})
    }

    fn track(&self) {
        let auth = [("X-API-Key", self.key.as_str())];
        for n in 0.. {
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            let probe = self.probe("track", n);
            let body = Self::event(&probe).to_string();
            self.sent.fetch_add(1, Ordering::SeqCst);
            match try_send(&self.addr, "/api/v1/events/track", &auth, &body) {
                Some(r) if status(&r) == 200 => self.acks.lock().expect("acks").events.push(probe),
                Some(r) => panic!("track answered {r}"),
                None => return,
            }
        }
    }

    fn batch(&self) {
        let auth = [("X-API-Key", self.key.as_str())];
        for n in 0.. {
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            let probes: Vec<String> = (0..20).map(|i| self.probe("batch", n * 20 + i)).collect();
            let items: Vec<Value> = probes
                .iter()
                .map(|p| {
                    let mut e = Self::event(p);
                    e["type"] = json!("track");
                    e
                })
                .collect();
            let body = json!({ "events": items }).to_string();
            self.sent.fetch_add(1, Ordering::SeqCst);
            match try_send(&self.addr, "/api/v1/events", &auth, &body) {
                Some(r) if status(&r) == 200 => {
                    let v = json_body(&r);
                    let results = v["results"].as_array().expect("results");
                    let mut acks = self.acks.lock().expect("acks");
                    for item in results {
                        let i = item["index"].as_u64().expect("index") as usize;
                        if item["ok"] == true {
                            acks.events.push(probes[i].clone());
                        }
                    }
                }
                Some(r) => panic!("batch answered {r}"),
                None => return,
            }
        }
    }

    fn ingest(&self) {
        let bearer = format!("Bearer {}", self.key);
        let auth = [("Authorization", bearer.as_str())];
        for n in 0.. {
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            let probe = self.probe("ingest", n);
            let idem = format!("ik-{probe}");
            let body = json!({"mode": "execute", "idempotency_key": idem,
                              "input": Self::event(&probe)})
            .to_string();
            self.acks
                .lock()
                .expect("acks")
                .invocations
                .insert(idem.clone(), (probe.clone(), body.clone(), None));
            self.sent.fetch_add(1, Ordering::SeqCst);
            let path = "/api/v1/capabilities/events.ingest/invoke";
            match try_send(&self.addr, path, &auth, &body) {
                Some(r) if status(&r) == 200 => {
                    let request_id = json_body(&r)["request_id"]
                        .as_str()
                        .expect("request_id")
                        .to_owned();
                    let mut acks = self.acks.lock().expect("acks");
                    acks.events.push(probe);
                    if let Some(entry) = acks.invocations.get_mut(&idem) {
                        entry.2 = Some(request_id);
                    }
                }
                Some(r) => panic!("events.ingest answered {r}"),
                None => return,
            }
        }
    }
}

/// What the store holds, read directly while svcd is down.
struct Stored {
    /// Touchpoints per probe.
    probes: HashMap<String, usize>,
    /// Ledger rows per idempotency key, with their request ids.
    ledger: HashMap<String, Vec<String>>,
}

fn inspect(store_dir: &Path, ws: WorkspaceId) -> Stored {
    let graph = Graph::open(store_dir, GraphOptions::default()).expect("open the store");
    let report = graph.validate().expect("validate");
    assert!(
        report.is_ok(),
        "validate found damage: {:?}",
        report.problems
    );
    let snapshot = graph.snapshot(ws);
    let mut probes = HashMap::new();
    for id in snapshot.label_scan("Touchpoint").expect("touchpoints") {
        let node = snapshot
            .node(id)
            .expect("node")
            .expect("listed node exists");
        if let Some(GraphValue::Map(props)) = node.properties.get("properties") {
            if let Some(GraphValue::String(p)) = props.get("probe") {
                *probes.entry(p.clone()).or_default() += 1;
            }
        }
    }
    drop(snapshot);
    let mut ledger: HashMap<String, Vec<String>> = HashMap::new();
    for row in graph
        .scan_records::<LedgerRow>(ws, &RecordScan::default())
        .expect("ledger")
    {
        if let Some(k) = row.idempotency_key {
            ledger.entry(k).or_default().push(row.request_id);
        }
    }
    Stored { probes, ledger }
}

fn cycles() -> usize {
    std::env::var("SVC_SIGKILL_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

#[cfg(unix)]
#[test]
fn acknowledged_events_survive_sigkill_exactly_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut child, addr, _logs) = start(dir.path());
    let registered = send(
        &addr,
        "POST",
        "/api/auth/register",
        &[],
        r#"{"email": "kill@example.com", "password": "sigkill-test-password", "name": "K"}"#,
    );
    assert!(registered.starts_with("HTTP/1.1 201"), "{registered}");
    let account = json_body(&registered);
    let jwt = format!("Bearer {}", account["token"].as_str().expect("token"));
    let ws = svc_core::workspaces::parse_id(account["workspace"]["id"].as_str().expect("ws"))
        .expect("workspace id");
    // The load spends far more credits than any plan's month: only the operator raises that.
    let raised = admin(
        dir.path(),
        &[
            "workspace",
            "set-plan",
            account["workspace"]["id"].as_str().expect("ws"),
            "enterprise",
            "--monthly-credit-limit",
            "100000000",
        ],
    );
    assert!(
        raised.status.success(),
        "{}",
        String::from_utf8_lossy(&raised.stderr)
    );
    let created = send(
        &addr,
        "POST",
        "/api/v1/keys",
        &[("Authorization", &jwt)],
        &json!({"name": "ingest", "grants": ["capability:events.ingest"],
                "allowed_modes": ["dry_run", "queue", "execute"],
                "rate_limit_per_min": 1_000_000})
        .to_string(),
    );
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    let key = json_body(&created)["key"].as_str().expect("key").to_owned();

    let acks = Arc::new(Mutex::new(Acks::default()));
    let mut rng = rand::thread_rng();
    let mut addr = addr;
    for cycle in 0..cycles() {
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicUsize::new(0));
        let client = |kind: fn(&Client), lane: usize| {
            let c = Client {
                addr: addr.clone(),
                key: key.clone(),
                cycle,
                lane,
                stop: Arc::clone(&stop),
                acks: Arc::clone(&acks),
                sent: Arc::clone(&sent),
            };
            thread::spawn(move || kind(&c))
        };
        let workers = [
            client(Client::track, 0),
            client(Client::track, 1),
            client(Client::batch, 0),
            client(Client::ingest, 0),
            client(Client::ingest, 1),
        ];
        // Kill at a random moment once ingestion is under way.
        while sent.load(Ordering::SeqCst) < 10 {
            thread::sleep(Duration::from_millis(5));
        }
        thread::sleep(Duration::from_millis(rng.gen_range(50..700)));
        child.kill().expect("SIGKILL svcd");
        let _ = child.wait();
        stop.store(true, Ordering::SeqCst);
        for w in workers {
            w.join().expect("client thread");
        }

        // The store as the killed process left it.
        let stored = inspect(&dir.path().join("store"), ws);
        let acks_now = acks.lock().expect("acks");
        for probe in &acks_now.events {
            assert_eq!(
                stored.probes.get(probe).copied().unwrap_or(0),
                1,
                "cycle {cycle}: acknowledged event {probe}"
            );
        }
        if let Some((probe, n)) = stored.probes.iter().find(|(_, n)| **n > 1) {
            panic!("cycle {cycle}: event {probe} is stored {n} times");
        }
        for (idem, (probe, _, acked)) in &acks_now.invocations {
            let rows = stored.ledger.get(idem).map(Vec::len).unwrap_or(0);
            let events = stored.probes.get(probe).copied().unwrap_or(0);
            assert!(rows <= 1, "cycle {cycle}: {idem} has {rows} ledger rows");
            assert_eq!(
                rows, events,
                "cycle {cycle}: {idem}: ledger and event disagree"
            );
            if let Some(request_id) = acked {
                assert_eq!(
                    stored.ledger.get(idem),
                    Some(&vec![request_id.clone()]),
                    "cycle {cycle}: {idem}"
                );
            }
        }
        drop(acks_now);

        // A new process: receipts and idempotency records agree with the ledger.
        let (next, next_addr, logs) = start(dir.path());
        child = next;
        addr = next_addr;
        drop(logs);
        let bearer = format!("Bearer {key}");
        let mut guard = acks.lock().expect("acks");
        let acks_now = &mut *guard;
        let cycle_prefix = format!("ik-c{cycle}-");
        // Invocations the kill interrupted: applied without an answer, or not applied at all.
        let (mut unanswered_applied, mut unanswered_lost) = (0, 0);
        for (idem, (probe, body, acked)) in acks_now
            .invocations
            .iter_mut()
            .filter(|(k, _)| k.starts_with(&cycle_prefix))
        {
            let before = stored.ledger.get(idem).cloned().unwrap_or_default();
            if acked.is_none() {
                match before.is_empty() {
                    true => unanswered_lost += 1,
                    false => unanswered_applied += 1,
                }
            }
            if let Some(request_id) = before.first() {
                let receipt = send(
                    &addr,
                    "GET",
                    &format!("/api/v1/capabilities/actions/{request_id}"),
                    &[("Authorization", &bearer)],
                    "",
                );
                assert!(receipt.starts_with("HTTP/1.1 200"), "{idem}: {receipt}");
            }
            let retry = try_send(
                &addr,
                "/api/v1/capabilities/events.ingest/invoke",
                &[("Authorization", &bearer)],
                body,
            )
            .expect("retry answered");
            assert_eq!(status(&retry), 200, "{idem}: {retry}");
            let replayed = retry.to_lowercase().contains("idempotent-replayed: true");
            let request_id = json_body(&retry)["request_id"]
                .as_str()
                .expect("request_id")
                .to_owned();
            match before.first() {
                // Applied before the kill: the idempotency record replays that invocation.
                Some(first) => {
                    assert!(replayed, "{idem}: a stored invocation ran again: {retry}");
                    assert_eq!(&request_id, first, "{idem}");
                }
                // Not applied: nothing was left behind, so the retry runs afresh.
                None => {
                    assert!(
                        !replayed,
                        "{idem}: replayed an invocation with no ledger row"
                    );
                }
            }
            acked.get_or_insert(request_id);
            acks_now.events.push(probe.clone());
        }
        acks_now.events.sort();
        acks_now.events.dedup();
        eprintln!(
            "cycle {cycle}: {} requests, {} acknowledged events so far; interrupted \
             invocations: {unanswered_applied} applied, {unanswered_lost} not applied",
            sent.load(Ordering::SeqCst),
            acks_now.events.len()
        );
        drop(guard);
    }
    child.kill().expect("stop svcd");
    let _ = child.wait();
    // The retries of the last cycle are durable too.
    let stored = inspect(&dir.path().join("store"), ws);
    let acks = acks.lock().expect("acks");
    for probe in &acks.events {
        assert_eq!(stored.probes.get(probe).copied().unwrap_or(0), 1, "{probe}");
    }
    for (idem, (_, _, acked)) in &acks.invocations {
        assert_eq!(stored.ledger.get(idem).map(Vec::len), Some(1), "{idem}");
        assert!(acked.is_some(), "{idem}");
    }
}
