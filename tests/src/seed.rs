//! A workspace with something on every dashboard page, built through the public API only:
//! identified customers with names and companies, a week of events, more opportunities than
//! one page of the opportunity list (over seven stages, some closed), brand context, SMTP
//! connected, a queued email and a playbook run that queued messages for approval.
//! Used by the page tests and by the screenshot example.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::providers::SmtpSink;
use crate::{invoke_path, read, str_at, Account, Capability, Key, TestServer};

/// Stages in funnel order, the way a CRM names them (not alphabetical).
pub const STAGES: &[&str] = &[
    "lead",
    "qualified",
    "discovery",
    "demo",
    "proposal",
    "negotiation",
    "closedwon",
];

/// What [`workspace`] made.
#[derive(Debug)]
pub struct Seeded {
    pub key: Key,
    pub playbook_id: String,
    pub run_id: String,
    /// Emails of the identified customers.
    pub emails: Vec<String>,
}

async fn call(s: &TestServer, a: &Account, method: Method, path: &str, body: Value) -> Value {
    let resp = s
        .request(method.clone(), path)
        .bearer_auth(&a.token)
        .json(&body)
        .send()
        .await
        .expect("send");
    let (status, v) = read(resp).await;
    assert!(status.is_success(), "{method} {path}: {status} {v}");
    v
}

async fn batch(s: &TestServer, key: &str, events: Vec<Value>) {
    for chunk in events.chunks(500) {
        let resp = s
            .post("/api/v1/events")
            .header("x-api-key", key)
            .json(&json!({ "events": chunk }))
            .send()
            .await
            .expect("send");
        let (status, v) = read(resp).await;
        assert_eq!(status, StatusCode::OK, "{v}");
        assert_eq!(v["failed"], json!(0), "{v}");
    }
}

fn ts(minutes_ago: i64) -> String {
    let t = time::OffsetDateTime::now_utc() - time::Duration::minutes(minutes_ago);
    t.format(&time::format_description::well_known::Rfc3339)
        .expect("rfc3339")
}

/// Fills `a`'s workspace with `customers` identified customers (at least 4) and
/// `opportunities` opportunities; `smtp` receives nothing (every message waits for approval).
pub async fn workspace(
    s: &TestServer,
    a: &Account,
    smtp: &SmtpSink,
    customers: usize,
    opportunities: usize,
) -> Seeded {
    let mut grants = crate::reader_grants();
    grants.push(crate::grant(Capability::QueueOutreach));
    let key = s.key_with_grants(a, &grants).await;
    let first = [
        "Ada", "Grace", "Alan", "Edsger", "Barbara", "Ken", "Margaret", "Donald", "Frances", "John",
    ];
    let last = [
        "Tanaka", "Okafor", "Silva", "Novak", "Larsen", "Moreau", "Khan", "Rossi",
    ];
    let companies = ["Acme", "Globex", "Initech", "Umbrella", "Hooli"];
    let mut emails = Vec::with_capacity(customers);
    let mut events = Vec::new();
    for i in 0..customers.max(4) {
        let (f, l) = (first[i % first.len()], last[(i / first.len()) % last.len()]);
        let email = format!("{}.{}{i}@corp.example", f.to_lowercase(), l.to_lowercase());
        // The batch's identify item is the identify route's body: `name`, and the traits in
        // `properties` (a `traits` object is not part of it and would be ignored).
        events.push(
            json!({"type": "identify", "email": email, "name": format!("{f} {l}"),
            "properties": {"company": companies[i % companies.len()],
                           "plan": if i % 3 == 0 { "pro" } else { "trial" },
                           "confidence": (40 + i % 50) as f64 / 100.0},
            "timestamp": ts(60 * 24 * 6 + i as i64)}),
        );
        for (j, action) in [
            "page_viewed",
            "pricing_viewed",
            "feature_used",
            "demo_requested",
        ]
        .iter()
        .enumerate()
        .take(1 + i % 4)
        {
            events.push(json!({"type": "track", "action": action, "email": email,
                "timestamp": ts((i as i64 * 37 + j as i64 * 11) % (60 * 24 * 3))}));
        }
        emails.push(email);
    }
    for i in 0..opportunities {
        let stage = STAGES[i % STAGES.len()];
        events.push(json!({"type": "track", "action": "opportunity_created",
            "email": emails[i % emails.len()],
            "properties": {"opportunityId": format!("D-{i}"),
                           "name": format!("{} deal {i}", companies[i % companies.len()]),
                           "amount": 1000 + (i * 750) % 24_000, "stage": stage},
            "timestamp": ts(30 + i as i64)}));
    }
    batch(s, &key.plaintext, events).await;

    call(
        s,
        a,
        Method::PUT,
        "/v1/brand-context",
        json!({"businessName": "Acme Growth", "industry": "saas",
               "voice": {"formality": 3}}),
    )
    .await;
    call(
        s,
        a,
        Method::PUT,
        "/api/v1/integrations/smtp",
        smtp.config(&smtp.password),
    )
    .await;
    let resp = s
        .post(&invoke_path(Capability::QueueOutreach))
        .bearer_auth(&key.plaintext)
        .json(&json!({"mode": "queue", "input": {"customer": emails[0],
            "subject": "Your demo", "body": "Hi,\n\nTuesday works."}}))
        .send()
        .await
        .expect("queue");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{v}");

    let pb = call(
        s,
        a,
        Method::POST,
        "/v1/playbooks",
        json!({"name": "Trial follow-up", "mode": "outbound", "buddyId": "campaign",
               "strategy": {"hypothesis": "Trial users answer a short personal note"}}),
    )
    .await;
    let playbook_id = str_at(&pb, "/playbook/id");
    let run = call(
        s,
        a,
        Method::POST,
        &format!("/v1/playbooks/{playbook_id}/run"),
        json!({"leads": [emails[1], emails[2], emails[3]]}),
    )
    .await;
    let run_id = str_at(&run, "/run/id");
    // The run works in the background: wait (bounded) until it has finished.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = call(
            s,
            a,
            Method::GET,
            &format!("/v1/playbooks/{playbook_id}/runs/{run_id}"),
            Value::Null,
        )
        .await;
        if r["run"]["status"] != "running" {
            break;
        }
        assert!(Instant::now() < deadline, "the run did not finish: {r}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Seeded {
        key,
        playbook_id,
        run_id,
        emails,
    }
}
