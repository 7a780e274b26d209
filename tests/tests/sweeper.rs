//! The background sweeper inside a real server: running every few milliseconds next to live
//! traffic, it keeps everything that is still inside its window (idempotent replays, messageId
//! dedupe, pending actions) and the server still stops cleanly. What it deletes and when is
//! unit-tested with an injected clock in `approvals`, `gateway::idempotency`, `events` and
//! `retention`.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use svc_integration_tests::{
    get_ok, grant, invoke_path, read, str_at, test_config, track, Capability, TestServer,
};

#[tokio::test]
async fn a_busy_sweeper_keeps_what_is_young_and_the_server_stops_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = test_config(dir.path());
    config.sweep_interval = Duration::from_millis(5);
    let s = TestServer::start_with(dir, config).await;
    let a = s.account().await;
    let key = s
        .mint_key(
            &a,
            json!({"name": "sweep", "grants": [grant(Capability::EventsIngest), grant(Capability::CrmMutate)],
                   "allowed_modes": ["execute", "queue"]}),
        )
        .await
        .plaintext;
    let invoke = |body: serde_json::Value| {
        s.post(&invoke_path(Capability::EventsIngest))
            .bearer_auth(&key)
            .json(&body)
            .send()
    };
    let ingest = json!({"mode": "execute", "idempotency_key": "sweep-1",
                        "input": {"event": "visit", "email": "sw@x.io"}});
    let (status, first) = read(invoke(ingest.clone()).await.expect("send")).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let tracked = track(
        &s,
        &key,
        json!({"action": "visit", "email": "sw@x.io", "messageId": "sweep-m1"}),
    )
    .await;
    let queued = s
        .post(&invoke_path(Capability::CrmMutate))
        .bearer_auth(&key)
        .json(&json!({"mode": "queue", "input": {"customer": "sw@x.io", "set": {"tier": "a"}}}))
        .send()
        .await
        .expect("send");
    let (status, queued) = read(queued).await;
    assert_eq!(status, StatusCode::OK, "{queued}");

    // Dozens of sweeps later everything is still there.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let replay = invoke(ingest).await.expect("send");
    assert!(replay.headers().contains_key("idempotent-replayed"));
    let (_, replayed) = read(replay).await;
    assert_eq!(replayed, first);
    let again = track(
        &s,
        &key,
        json!({"action": "visit", "email": "sw@x.io", "messageId": "sweep-m1"}),
    )
    .await;
    assert_eq!(again["duplicate"], json!(true), "{again}");
    assert_eq!(again["touchpoint_id"], tracked["touchpoint_id"]);
    let pa = str_at(&queued, "/pending_action_id");
    let pending = get_ok(&s, &format!("/api/v1/capabilities/pending/{pa}"), &key).await;
    assert_eq!(pending["status"], "pending");
    s.stop().await;
}
