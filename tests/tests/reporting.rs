//! Reporting through real HTTP: the summary's constants and windows, cache invalidation by
//! event ingestion, gateway ingestion and graph writes, and the recent-reasoning feed (limit
//! clamp, synthetic fallback, real history taking over, truncation, buddy mapping).

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::{invoke_path, read, track, Account, Capability, TestServer};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

async fn get(s: &TestServer, a: &Account, path: &str) -> Value {
    let resp = s
        .get(path)
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{path}: {v}");
    v
}

fn ago(hours: i64) -> String {
    (OffsetDateTime::now_utc() - time::Duration::hours(hours))
        .format(&Rfc3339)
        .expect("format")
}

#[tokio::test]
async fn summary_constants_windows_and_immediate_invalidation() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let empty = get(&s, &a, "/v1/reporting/summary").await;
    assert_eq!(
        empty,
        json!({
            "activeSignals": 0, "pipelineArr": 0, "openTasks": 0, "avgConfidence": 0.0,
            "signalsLast24h": 0, "signalsPrev24h": 0, "signalsHourly": vec![0; 24],
            "arrTargetCents": 5_000_000, "criticalCount": 0, "criticalCapacity": 8,
            "agentsTotal": 4, "agentsHealthy": 4, "uptimePct": 100.0, "confidencePptDelta": -5.0,
        })
    );

    // A new event is visible at once although the summary is cached for 30 s.
    let key = s.agent_key(&a).await.plaintext;
    track(
        &s,
        &key,
        json!({"action": "visit", "customerId": "ext-1", "properties": {"timestamp": ago(1)}}),
    )
    .await;
    let v = get(&s, &a, "/v1/reporting/summary").await;
    assert_eq!(
        (v["signalsLast24h"].clone(), v["activeSignals"].clone()),
        (json!(1), json!(1)),
        "{v}"
    );
    assert_eq!(
        v["signalsHourly"][22], 1,
        "an event 1 h ago is in the second-newest bucket: {v}"
    );

    track(
        &s,
        &key,
        json!({"action": "visit", "customerId": "ext-2", "properties": {"timestamp": ago(30)}}),
    )
    .await;
    track(
        &s,
        &key,
        json!({"action": "pricing_viewed", "customerId": "ext-3",
                           "properties": {"timestamp": ago(50), "signal_strength": 0.9}}),
    )
    .await;
    track(
        &s,
        &key,
        json!({"action": "visit", "customerId": "ext-4", "properties": {"timestamp": ago(24 * 9)}}),
    )
    .await;
    let v = get(&s, &a, "/v1/reporting/summary").await;
    assert_eq!(v["signalsLast24h"], 1, "{v}");
    assert_eq!(
        v["signalsPrev24h"], 1,
        "30 h ago; 50 h ago is outside both windows: {v}"
    );
    assert_eq!(v["activeSignals"], 3, "ext-4 was last seen 9 days ago: {v}");
    assert_eq!(v["criticalCount"], 1, "{v}");
    assert_eq!(v["signalsHourly"].as_array().map(Vec::len), Some(24));

    // A graph write by a JWT user (Cypher CREATE) invalidates too.
    let resp = s.post("/v1/graph/query").bearer_auth(&a.token)
        .json(&json!({"query": "CREATE (o:Opportunity {amount: 1200, stage: 'proposal'}), (p:Opportunity {arr: 800, stage: 'Closed Won'})"}))
        .send().await.expect("send");
    let (status, body) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let v = get(&s, &a, "/v1/reporting/summary").await;
    assert_eq!(
        (v["pipelineArr"].clone(), v["openTasks"].clone()),
        (json!(1200), json!(1)),
        "{v}"
    );

    // So does ingestion through the capability gateway.
    let resp = s.post(&invoke_path(Capability::EventsIngest)).bearer_auth(&key)
        .json(&json!({"mode": "execute", "source": "api", "input": {"event": "signup", "email": "gw@x.io"}}))
        .send().await.expect("send");
    let (status, body) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let v = get(&s, &a, "/v1/reporting/summary").await;
    assert_eq!(v["signalsLast24h"], 2, "{v}");

    // Another workspace's summary is its own.
    let b = s.account().await;
    assert_eq!(
        get(&s, &b, "/v1/reporting/summary").await["signalsLast24h"],
        0
    );
}

#[tokio::test]
async fn recent_reasoning_falls_back_then_real_history_takes_over() {
    let s = TestServer::start().await;
    let a = s.account().await;
    // Nothing at all: still never an empty list.
    let v = get(&s, &a, "/v1/reporting/recent-reasoning").await;
    let entries = v["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 1, "{v}");
    assert_eq!(entries[0]["buddyId"], "insights");

    let key = s.agent_key(&a).await.plaintext;
    for i in 0..4 {
        track(
            &s,
            &key,
            json!({"action": format!("visit_{i}"), "customerId": format!("ext-{i}"),
                               "properties": {"timestamp": ago(4 - i)}}),
        )
        .await;
    }
    let v = get(&s, &a, "/v1/reporting/recent-reasoning?limit=3").await;
    let entries = v["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 3, "{v}");
    let ts: Vec<i64> = entries.iter().filter_map(|e| e["ts"].as_i64()).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "oldest first: {v}");
    assert!(
        entries[2]["text"]
            .as_str()
            .expect("text")
            .contains("visit_3"),
        "the most recent: {v}"
    );
    for e in entries {
        assert_eq!(e["sessionId"], "synthetic");
        assert!(
            ["insights", "prospect", "campaign", "pipeline"]
                .contains(&e["buddyId"].as_str().expect("buddy")),
            "{e}"
        );
    }
    assert_eq!(
        get(&s, &a, "/v1/reporting/recent-reasoning?limit=0").await["entries"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    let resp = s
        .get("/v1/reporting/recent-reasoning?limit=many")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);

    // Real assistant turns (recorded by the dashboard's agent system, a JWT client) replace
    // the synthetic feed.
    let long = "r".repeat(300);
    for (buddy, text) in [
        ("campaign", "Drafted the follow-up"),
        ("orchestrator", "Routing to pipeline"),
        ("pipeline", long.as_str()),
    ] {
        let resp = s
            .post("/v1/messages")
            .bearer_auth(&a.token)
            .json(&json!({"sessionId": "sess-1", "buddyId": buddy, "text": text}))
            .send()
            .await
            .expect("send");
        let (status, body) = read(resp).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let v = get(&s, &a, "/v1/reporting/recent-reasoning").await;
    let entries = v["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 3, "{v}");
    let buddies: Vec<&str> = entries
        .iter()
        .filter_map(|e| e["buddyId"].as_str())
        .collect();
    assert_eq!(
        buddies,
        ["campaign", "insights", "pipeline"],
        "unknown buddy ids become insights"
    );
    assert_eq!(entries[0]["text"], "Drafted the follow-up");
    let cut = entries[2]["text"].as_str().expect("text");
    assert_eq!(cut.chars().count(), 240);
    assert!(cut.ends_with('…'));
    assert!(entries.iter().all(|e| e["sessionId"] == "sess-1"));
    let v = get(&s, &a, "/v1/reporting/recent-reasoning?limit=2").await;
    let texts: Vec<&str> = v["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(
        texts[0], "Routing to pipeline",
        "the two most recent, oldest first"
    );
    let v = get(&s, &a, "/v1/reporting/recent-reasoning?limit=500").await;
    assert_eq!(v["entries"].as_array().map(Vec::len), Some(3));

    let resp = s
        .post("/v1/messages")
        .bearer_auth(&a.token)
        .json(&json!({"sessionId": "", "buddyId": "insights", "text": "x"}))
        .send()
        .await
        .expect("send");
    let (status, body) = read(resp).await;
    assert_eq!(
        (status, body["error"]["details"]["field"].clone()),
        (StatusCode::BAD_REQUEST, json!("sessionId"))
    );
}
