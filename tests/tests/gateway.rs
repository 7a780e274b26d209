//! Capability gateway through real HTTP: listing, the invocation pipeline and its error codes,
//! credits and quota (also under concurrency), idempotency (also under concurrency), receipts
//! and usage, and the executors' real outputs.

use std::collections::HashSet;
use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::{
    expect_error, grant, invoke_path, read, str_at, track, Account, Capability, Key, TestServer,
};

async fn key_with(s: &TestServer, a: &Account, caps: &[Capability], modes: &[&str]) -> Key {
    let grants: Vec<String> = caps.iter().copied().map(grant).collect();
    s.mint_key(
        a,
        json!({"name": "gw", "agent": "gw-bot", "grants": grants, "allowed_modes": modes}),
    )
    .await
}

/// A customer (recorded through the track route) and a key that may write notes about it and
/// read the account, in dry_run and execute.
async fn customer_and_note_key(s: &TestServer, a: &Account, email: &str) -> (String, Key) {
    let ingest = s.agent_key(a).await;
    let cid = str_at(
        &track(s, &ingest.plaintext, json!({"action": "x", "email": email})).await,
        "/customer_id",
    );
    let key = key_with(
        s,
        a,
        &[Capability::MemoryWrite, Capability::AccountGet],
        &["dry_run", "execute"],
    )
    .await;
    (cid, key)
}

fn invoke_req(s: &TestServer, key: &str, cap: Capability, body: Value) -> reqwest::RequestBuilder {
    s.post(&invoke_path(cap)).bearer_auth(key).json(&body)
}

async fn invoke(s: &TestServer, key: &str, cap: Capability, body: Value) -> (StatusCode, Value) {
    read(invoke_req(s, key, cap, body).send().await.expect("send")).await
}

async fn invoke_ok(s: &TestServer, key: &str, cap: Capability, body: Value) -> Value {
    let (status, v) = invoke(s, key, cap, body).await;
    assert_eq!(status, StatusCode::OK, "{cap}: {v}");
    v
}

async fn usage(s: &TestServer, key: &str, limit: u32) -> Value {
    let resp = s
        .get(&format!("/api/v1/capabilities/usage/actions?limit={limit}"))
        .bearer_auth(key)
        .send()
        .await
        .expect("usage");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v
}

async fn set_workspace(s: &TestServer, a: &Account, body: Value) {
    let resp = s
        .request(reqwest::Method::PUT, "/api/v1/workspace")
        .bearer_auth(&a.token)
        .json(&body)
        .send()
        .await
        .expect("put workspace");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{v}");
}

#[tokio::test]
async fn listing_follows_grants_scopes_and_modes() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let k = key_with(
        &s,
        &a,
        &[
            Capability::ContextGet,
            Capability::MemoryWrite,
            Capability::ExecuteCall,
        ],
        &["dry_run", "execute"],
    )
    .await;
    let resp = s
        .get("/api/v1/capabilities")
        .bearer_auth(&k.plaintext)
        .send()
        .await
        .expect("list");
    let (status, body) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let ids: Vec<&str> = body["capabilities"]
        .as_array()
        .expect("list")
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    // execute.call is listed with the key's modes although no voice integration is connected
    // (dry_run shows what would be sent); the table order is kept.
    assert_eq!(
        ids,
        [
            Capability::ContextGet.id(),
            Capability::MemoryWrite.id(),
            Capability::ExecuteCall.id()
        ]
    );
    let call = &body["capabilities"][2];
    assert_eq!(call["requires_integration"], "voice");
    assert_eq!(call["allowed_modes"], json!(["dry_run", "execute"]));
    let ctx = &body["capabilities"][0];
    assert_eq!(ctx["grant"], grant(Capability::ContextGet));
    assert_eq!(ctx["legacy_scope"], "v1:context:read");
    assert_eq!(ctx["mcp_tool_name"], "get_customer_context");
    assert_eq!(ctx["side_effect"], "none");
    assert_eq!(ctx["approval_behavior"]["kind"], "none");
    assert_eq!(ctx["action_credit_cost"], 1);
    assert_eq!(ctx["allowed_modes"], json!(["dry_run", "execute"]));
    assert_eq!(ctx["input_schema"]["type"], "object");
    assert!(ctx["output_schema"]["properties"]["sentiment_trajectory"].is_object());
    assert!(ctx["version"].as_str().is_some_and(|v| v.len() == 10));
    assert!(!ctx["examples"].as_array().expect("examples").is_empty());
    assert_eq!(
        body["capabilities"][1]["approval_behavior"]["kind"],
        "direct"
    );
    assert_eq!(body["key"]["id"], json!(k.id));
    assert_eq!(body["key"]["agent"], "gw-bot");
    assert_eq!(body["key"]["auto_run"], false);
    assert_eq!(body["key"]["allowed_modes"], json!(["dry_run", "execute"]));

    // A dry-run-only key sees dry_run only.
    let dry = key_with(&s, &a, &[Capability::ContextGet], &["dry_run"]).await;
    let resp = s
        .get("/api/v1/capabilities")
        .header("x-api-key", &dry.plaintext)
        .send()
        .await
        .expect("list");
    let (_, body) = read(resp).await;
    assert_eq!(body["capabilities"][0]["allowed_modes"], json!(["dry_run"]));

    // Legacy scopes: the capability's own scope, and the invoke scope for read-only ones only.
    let legacy = s
        .mint_key(
            &a,
            json!({"name": "old", "scopes": ["v1:capabilities:invoke", "v1:memory:write"],
                   "allowed_modes": ["execute"]}),
        )
        .await;
    let resp = s
        .get("/api/v1/capabilities")
        .bearer_auth(&legacy.plaintext)
        .send()
        .await
        .expect("list");
    let (_, body) = read(resp).await;
    let ids: HashSet<&str> = body["capabilities"]
        .as_array()
        .expect("list")
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    // The broad legacy invoke scope opens every read-only capability, never a side effect;
    // the memory scope adds memory.write.
    let mut expected: HashSet<&str> = Capability::ALL
        .iter()
        .filter(|c| registry_side_effect_is_none(c.id()))
        .map(|c| c.id())
        .collect();
    expected.insert(Capability::MemoryWrite.id());
    assert_eq!(ids, expected);

    // A key holding every grant sees every capability of the table: outbound ones are listed
    // even with no integration connected (dry_run works; queue and execute answer 409).
    let all_grants: Vec<String> = Capability::ALL.map(grant).to_vec();
    let every = s
        .mint_key(
            &a,
            json!({"name": "all", "allowed_modes": ["dry_run", "queue", "execute"],
                   "grants": all_grants}),
        )
        .await;
    let resp = s
        .get("/api/v1/capabilities")
        .bearer_auth(&every.plaintext)
        .send()
        .await
        .expect("list");
    let (_, body) = read(resp).await;
    let ids: HashSet<&str> = body["capabilities"]
        .as_array()
        .expect("list")
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    assert_eq!(
        ids,
        Capability::ALL
            .iter()
            .map(|c| c.id())
            .collect::<HashSet<_>>()
    );

    // JWTs and no credential are refused.
    let resp = s
        .get("/api/v1/capabilities")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("list");
    expect_error(resp, StatusCode::FORBIDDEN, "forbidden").await;
    let resp = s.get("/api/v1/capabilities").send().await.expect("list");
    expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
}

#[tokio::test]
async fn pipeline_checks_in_order_with_their_codes() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let k = key_with(
        &s,
        &a,
        &[Capability::MemoryWrite, Capability::AccountGet],
        &["dry_run"],
    )
    .await;
    let key = k.plaintext.as_str();
    let send = |cap: Capability, body: Value| invoke_req(&s, key, cap, body).send();

    // Unknown capability ids; a known one the key holds no grant for.
    let r = s
        .post("/api/v1/capabilities/nope.nothing/invoke")
        .bearer_auth(key)
        .json(&json!({"mode": "dry_run", "input": {}}))
        .send()
        .await;
    expect_error(
        r.expect("send"),
        StatusCode::NOT_FOUND,
        "capability_not_found",
    )
    .await;
    let r = send(
        Capability::ExecuteCall,
        json!({"mode": "dry_run", "input": {}}),
    )
    .await;
    expect_error(r.expect("send"), StatusCode::FORBIDDEN, "grant_denied").await;
    // Grant comes before mode and input.
    let r = send(Capability::ContextGet, json!({"mode": "bogus", "input": 5})).await;
    expect_error(r.expect("send"), StatusCode::FORBIDDEN, "grant_denied").await;
    // Mode: not offered by the capability, not allowed to the key, unknown.
    let r = send(
        Capability::MemoryWrite,
        json!({"mode": "queue", "input": 5}),
    )
    .await;
    expect_error(r.expect("send"), StatusCode::FORBIDDEN, "mode_denied").await;
    let r = send(
        Capability::MemoryWrite,
        json!({"mode": "execute", "input": 5}),
    )
    .await;
    expect_error(r.expect("send"), StatusCode::FORBIDDEN, "mode_denied").await;
    let r = send(
        Capability::MemoryWrite,
        json!({"mode": "fast", "input": {}}),
    )
    .await;
    expect_error(r.expect("send"), StatusCode::FORBIDDEN, "mode_denied").await;
    // The default mode is execute, which this key may not use.
    let r = send(Capability::AccountGet, json!({"input": {}})).await;
    expect_error(r.expect("send"), StatusCode::FORBIDDEN, "mode_denied").await;
    // Input against the schema, with JSON paths in details.
    let r = send(
        Capability::MemoryWrite,
        json!({"mode": "dry_run", "input": {"customer": "cus_1", "text": "", "extra": 1}}),
    )
    .await;
    let body = expect_error(r.expect("send"), StatusCode::BAD_REQUEST, "invalid_input").await;
    let paths: Vec<&str> = body["error"]["details"]["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["path"].as_str().expect("path"))
        .collect();
    assert!(paths.contains(&"/text"), "{body}");
    let r = send(
        Capability::AccountGet,
        json!({"mode": "dry_run", "input": {}, "idempotency_key": "x".repeat(256)}),
    )
    .await;
    expect_error(r.expect("send"), StatusCode::BAD_REQUEST, "invalid_input").await;
    let r = send(
        Capability::AccountGet,
        json!({"mode": "dry_run", "surprise": 1}),
    )
    .await;
    expect_error(r.expect("send"), StatusCode::BAD_REQUEST, "invalid_input").await;
    // An unknown customer is a 404 and costs nothing.
    let r = send(
        Capability::MemoryWrite,
        json!({"mode": "dry_run", "input": {"customer": "nobody@example.com", "text": "hi"}}),
    )
    .await;
    expect_error(r.expect("send"), StatusCode::NOT_FOUND, "not_found").await;
    // None of the failures cost anything or left a ledger row.
    let u = usage(&s, key, 100).await;
    assert_eq!(u["used"], 0);
    assert_eq!(u["rows"], json!([]));
}

#[tokio::test]
async fn execute_charges_and_records_a_receipt_dry_run_does_not_charge() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let k = key_with(
        &s,
        &a,
        &[Capability::AccountGet, Capability::ReportGenerate],
        &["dry_run", "execute"],
    )
    .await;
    let key = k.plaintext.as_str();

    let preview = invoke_ok(
        &s,
        key,
        Capability::AccountGet,
        json!({"mode": "dry_run", "input": {}}),
    )
    .await;
    assert_eq!(preview["status"], "preview");
    assert_eq!(preview["action_credit_cost"], 0);
    assert_eq!(preview["pending_action_id"], Value::Null);
    assert_eq!(preview["quota"]["used"], 0);

    let env = invoke_ok(
        &s,
        key,
        Capability::AccountGet,
        json!({"mode": "execute", "source": "api", "input": {}}),
    )
    .await;
    assert_eq!(env["status"], "committed");
    assert_eq!(env["action_credit_cost"], 1);
    assert_eq!(
        env["quota"],
        json!({"plan": "free", "limit": 100, "used": 1, "remaining": 99, "allowed": true})
    );
    let result = &env["result"];
    assert_eq!(result["workspace_id"], json!(a.workspace_id));
    assert_eq!(result["plan"], "free");
    assert_eq!(result["quota"]["used"], 1);
    assert_eq!(result["key"]["id"], json!(k.id));
    assert_eq!(result["counts"]["customers"], 0);
    let request_id = str_at(&env, "/request_id");
    assert!(request_id.starts_with("req_"));
    assert_eq!(
        env["receipt_url"],
        json!(format!("/api/v1/capabilities/actions/{request_id}"))
    );

    // report.generate costs 5 and stores a report.
    let rep = invoke_ok(
        &s,
        key,
        Capability::ReportGenerate,
        json!({"mode": "execute", "input": {"window_days": 3}}),
    )
    .await;
    assert_eq!(rep["action_credit_cost"], 5);
    assert!(str_at(&rep, "/result/report_id").starts_with("rpt_"));
    assert_eq!(rep["result"]["window_days"], 3);
    assert_eq!(rep["quota"]["used"], 6);
    let rep_preview = invoke_ok(
        &s,
        key,
        Capability::ReportGenerate,
        json!({"mode": "dry_run", "input": {}}),
    )
    .await;
    assert_eq!(rep_preview["result"]["report_id"], Value::Null);
    assert_eq!(rep_preview["quota"]["used"], 6);

    // The receipt: ledger row, sanitized response.
    let resp = s
        .get(&format!("/api/v1/capabilities/actions/{request_id}"))
        .bearer_auth(key)
        .send()
        .await
        .expect("receipt");
    let (status, receipt) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{receipt}");
    assert_eq!(receipt["request_id"], json!(request_id));
    assert_eq!(receipt["capability"], Capability::AccountGet.id());
    assert_eq!(receipt["status"], "committed");
    assert_eq!(receipt["ledger_row"]["credits"], 1);
    assert_eq!(receipt["ledger_row"]["key_id"], json!(k.id));
    assert_eq!(receipt["ledger_row"]["source"], "api");
    assert_eq!(receipt["response"]["result"]["plan"], "free");
    assert_eq!(receipt["pending_action"], Value::Null);

    // Usage: month totals and the newest rows first (previews are recorded at 0 credits).
    let u = usage(&s, key, 25).await;
    assert_eq!(u["used"], 6);
    assert_eq!(u["remaining"], 94);
    assert_eq!(u["limit"], 100);
    assert_eq!(u["plan"], "free");
    let rows = u["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0]["capability"], Capability::ReportGenerate.id());
    assert_eq!(rows[0]["status"], "preview");
    assert_eq!(rows[0]["credits"], 0);
    let total: i64 = rows
        .iter()
        .map(|r| r["credits"].as_i64().expect("credits"))
        .sum();
    assert_eq!(total, 6);
    assert_eq!(
        usage(&s, key, 1).await["rows"].as_array().map(Vec::len),
        Some(1)
    );

    // Receipts are per workspace: another workspace's key cannot read it.
    let b = s.account().await;
    let other = key_with(&s, &b, &[Capability::AccountGet], &["execute"]).await;
    let resp = s
        .get(&format!("/api/v1/capabilities/actions/{request_id}"))
        .bearer_auth(&other.plaintext)
        .send()
        .await
        .expect("receipt");
    expect_error(resp, StatusCode::NOT_FOUND, "not_found").await;
}

#[tokio::test]
async fn memory_and_context_reflect_touchpoints_notes_and_ledger() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let ingest = s.agent_key(&a).await;
    let k = key_with(
        &s,
        &a,
        &[Capability::ContextGet, Capability::MemoryWrite],
        &["dry_run", "execute"],
    )
    .await;
    let key = k.plaintext.as_str();
    let first = track(
        &s,
        &ingest.plaintext,
        json!({"action": "pricing_viewed", "email": "ada@example.com", "channel": "web"}),
    )
    .await;
    let cid = str_at(&first, "/customer_id");
    for action in [
        "demo_requested",
        "trial_started",
        "meeting_booked",
        "payment_failed",
    ] {
        track(
            &s,
            &ingest.plaintext,
            json!({"action": action, "customerId": cid}),
        )
        .await;
    }

    // dry_run writes nothing and masks the contact in the preview.
    let preview = invoke_ok(
        &s,
        key,
        Capability::MemoryWrite,
        json!({"mode": "dry_run", "input": {"customer": "ada@example.com",
               "kind": "blocker", "text": "legal asks ada@example.com for a DPA"}}),
    )
    .await;
    assert_eq!(preview["status"], "preview");
    assert_eq!(preview["result"]["customer_id"], json!(cid));
    assert_eq!(
        preview["result"]["text"],
        "legal asks a***@example.com for a DPA"
    );

    let ctx0 = invoke_ok(
        &s,
        key,
        Capability::ContextGet,
        json!({"mode": "execute", "input": {"customer": "ADA@example.com"}}),
    )
    .await;
    let c = &ctx0["result"];
    assert_eq!(c["customer_id"], json!(cid));
    assert_eq!(c["customer"], "ada@example.com");
    assert_eq!(
        c["blockers"],
        json!([{"kind": "touchpoint", "text": "payment_failed",
        "since": c["blockers"][0]["since"], "touchpoint_id": c["blockers"][0]["touchpoint_id"]}])
    );
    assert!(c["blockers"][0]["touchpoint_id"]
        .as_str()
        .is_some_and(|t| t.starts_with("tp_")));
    assert_eq!(c["recent_decisions"], json!([]));
    assert_eq!(c["touchpoint_count"], 5);

    let note = invoke_ok(
        &s,
        key,
        Capability::MemoryWrite,
        json!({"mode": "execute", "input": {"customer": cid, "kind": "blocker",
               "text": "Security review pending", "tags": ["security"]}}),
    )
    .await;
    assert!(str_at(&note, "/result/memory_id").starts_with("mem_"));
    assert_eq!(note["result"]["kind"], "blocker");
    invoke_ok(
        &s,
        key,
        Capability::MemoryWrite,
        json!({"mode": "execute", "input": {"customer": cid, "kind": "decision",
               "text": "offer annual discount"}}),
    )
    .await;

    let ctx = invoke_ok(
        &s,
        key,
        Capability::ContextGet,
        json!({"input": {"customer": cid}}),
    )
    .await;
    let c = &ctx["result"];
    assert_eq!(ctx["status"], "committed");
    // Purchase-free, with demo/trial activity: an opportunity.
    assert_eq!(c["lifecycle_stage"], "opportunity");
    let intents: HashSet<&str> = c["intent_signals"]
        .as_array()
        .expect("intents")
        .iter()
        .map(|v| v.as_str().expect("str"))
        .collect();
    assert_eq!(
        intents,
        HashSet::from(["pricing_viewed", "demo_requested", "trial_started"])
    );
    let loops: Vec<&str> = c["open_loops"]
        .as_array()
        .expect("loops")
        .iter()
        .map(|l| l["text"].as_str().expect("text"))
        .collect();
    // A requested demo and a started trial with no follow-up are open.
    assert_eq!(loops, ["demo_requested", "trial_started"]);
    let blockers: Vec<&str> = c["blockers"]
        .as_array()
        .expect("blockers")
        .iter()
        .map(|l| l["text"].as_str().expect("text"))
        .collect();
    assert_eq!(blockers, ["Security review pending", "payment_failed"]);
    let traj = &c["sentiment_trajectory"];
    assert_eq!(traj["window_days"], 30);
    assert!(
        ["improving", "declining", "stable"].contains(&traj["direction"].as_str().expect("dir"))
    );
    // Two memory.write commits from the ledger and one decision note; context reads are not
    // decisions.
    let decisions = c["recent_decisions"].as_array().expect("decisions");
    assert_eq!(decisions.len(), 3, "{decisions:?}");
    assert!(decisions.iter().all(|d| d["agent"] == "gw-bot"));
    assert!(decisions
        .iter()
        .any(|d| d["action"] == "offer annual discount" && d["outcome"] == "recorded"));
    assert_eq!(
        decisions
            .iter()
            .filter(|d| d["action"] == Capability::MemoryWrite.id() && d["outcome"] == "committed")
            .count(),
        2
    );
    // A customer of another workspace is not found.
    let b = s.account().await;
    let kb = key_with(&s, &b, &[Capability::ContextGet], &["execute"]).await;
    let r = invoke_req(
        &s,
        &kb.plaintext,
        Capability::ContextGet,
        json!({"input": {"customer": cid}}),
    )
    .send()
    .await
    .expect("send");
    expect_error(r, StatusCode::NOT_FOUND, "not_found").await;
}

#[tokio::test]
async fn policy_read_only_and_quota_refusals_cost_nothing() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let (cid, k) = customer_and_note_key(&s, &a, "p@example.com").await;
    let key = k.plaintext.as_str();
    let write = json!({"mode": "execute", "input": {"customer": cid, "text": "n"}});

    set_workspace(
        &s,
        &a,
        json!({"policy": {"forbid": [Capability::MemoryWrite.id()]}}),
    )
    .await;
    let r = invoke_req(&s, key, Capability::MemoryWrite, write.clone())
        .send()
        .await
        .expect("send");
    expect_error(r, StatusCode::FORBIDDEN, "policy_forbid").await;
    // A preview of a forbidden capability is still allowed.
    let p = invoke_ok(
        &s,
        key,
        Capability::MemoryWrite,
        json!({"mode": "dry_run", "input": {"customer": cid, "text": "n"}}),
    )
    .await;
    assert_eq!(p["status"], "preview");
    set_workspace(&s, &a, json!({"policy": {"forbid": []}, "read_only": true})).await;
    let r = invoke_req(&s, key, Capability::MemoryWrite, write.clone())
        .send()
        .await
        .expect("send");
    expect_error(r, StatusCode::FORBIDDEN, "read_only_workspace").await;
    // Reads still work in a read-only workspace.
    invoke_ok(
        &s,
        key,
        Capability::AccountGet,
        json!({"mode": "execute", "input": {}}),
    )
    .await;
    set_workspace(&s, &a, json!({"read_only": false})).await;
    invoke_ok(&s, key, Capability::MemoryWrite, write.clone()).await;

    // Per-key override replaces the plan limit and counts that key's own usage.
    let small = s
        .mint_key(
            &a,
            json!({"name": "small", "grants": [grant(Capability::AccountGet)],
                   "allowed_modes": ["dry_run", "execute"], "quota_override_monthly": 2}),
        )
        .await;
    for used in 1..=2 {
        let env = invoke_ok(
            &s,
            &small.plaintext,
            Capability::AccountGet,
            json!({"input": {}}),
        )
        .await;
        assert_eq!(env["quota"]["limit"], 2);
        assert_eq!(env["quota"]["used"], used);
    }
    let r = invoke_req(
        &s,
        &small.plaintext,
        Capability::AccountGet,
        json!({"input": {}}),
    )
    .send()
    .await
    .expect("send");
    let body = expect_error(r, StatusCode::PAYMENT_REQUIRED, "quota_exceeded").await;
    assert_eq!(body["error"]["details"]["quota"]["remaining"], 0);
    // Previews still run at 0 credits.
    let p = invoke_ok(
        &s,
        &small.plaintext,
        Capability::AccountGet,
        json!({"mode": "dry_run", "input": {}}),
    )
    .await;
    assert_eq!(p["action_credit_cost"], 0);
    let u = usage(&s, &small.plaintext, 100).await;
    assert_eq!(
        (u["used"].as_i64(), u["key_used"].as_i64()),
        (Some(2), Some(2))
    );
    // The workspace pool saw every charge: 2 (account.get, memory.write) + 2 from the small key.
    assert_eq!(u["workspace_used"], 4);
}

#[tokio::test]
async fn idempotent_replay_is_byte_for_byte_and_different_body_is_422() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let (cid, k) = customer_and_note_key(&s, &a, "i@example.com").await;
    let key = k.plaintext.as_str();
    let body = json!({"mode": "execute", "idempotency_key": "note-1",
                      "input": {"customer": cid, "text": "hello"}});
    let first = invoke_req(&s, key, Capability::MemoryWrite, body.clone())
        .send()
        .await
        .expect("send");
    assert_eq!(first.status(), StatusCode::OK);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first_text = first.text().await.expect("text");

    // A retry from another client (source differs) with keys in another order replays.
    let retry = json!({"source": "mcp", "input": {"text": "hello", "customer": cid},
                       "idempotency_key": "note-1", "mode": "execute"});
    let again = invoke_req(&s, key, Capability::MemoryWrite, retry)
        .send()
        .await
        .expect("send");
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(
        again
            .headers()
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert_eq!(again.text().await.expect("text"), first_text);

    // Same key, different body: 422. Same key on another capability: its own scope.
    let changed = json!({"mode": "execute", "idempotency_key": "note-1",
                         "input": {"customer": cid, "text": "bye"}});
    let r = invoke_req(&s, key, Capability::MemoryWrite, changed)
        .send()
        .await
        .expect("send");
    expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "idempotency_conflict").await;
    let other = invoke_ok(
        &s,
        key,
        Capability::AccountGet,
        json!({"idempotency_key": "note-1", "input": {}}),
    )
    .await;
    assert_eq!(other["status"], "committed");

    // Failures are not stored: a request refused for its input can be retried fixed.
    let bad = json!({"mode": "execute", "idempotency_key": "note-2",
                     "input": {"customer": "ghost@example.com", "text": "x"}});
    let r = invoke_req(&s, key, Capability::MemoryWrite, bad)
        .send()
        .await
        .expect("send");
    expect_error(r, StatusCode::NOT_FOUND, "not_found").await;
    let fixed = json!({"mode": "execute", "idempotency_key": "note-2",
                       "input": {"customer": cid, "text": "x"}});
    invoke_ok(&s, key, Capability::MemoryWrite, fixed).await;

    let u = usage(&s, key, 100).await;
    // memory.write x2 (note-1 once, note-2 once) + account.get.
    assert_eq!(u["used"], 3);
    assert_eq!(u["rows"].as_array().map(Vec::len), Some(3));
}

#[tokio::test]
async fn concurrent_retries_with_one_key_execute_once_and_charge_once() {
    const ROUNDS: usize = 100;
    const CONCURRENT: usize = 50;
    let s = Arc::new(TestServer::start().await);
    let a = s.account().await;
    let ingest = s.agent_key(&a).await;
    let cid = str_at(
        &track(
            &s,
            &ingest.plaintext,
            json!({"action": "x", "email": "c@example.com"}),
        )
        .await,
        "/customer_id",
    );
    // 5,000 requests in a few seconds: lift the per-key request rate out of the way.
    let k = s
        .mint_key(
            &a,
            json!({"name": "burst", "agent": "gw-bot", "allowed_modes": ["execute"],
                   "grants": [grant(Capability::MemoryWrite)], "rate_limit_per_min": 1_000_000}),
        )
        .await;
    for round in 0..ROUNDS {
        let body = json!({"mode": "execute", "idempotency_key": format!("round-{round}"),
                          "input": {"customer": cid, "text": format!("note {round}")}});
        let mut tasks = Vec::new();
        for _ in 0..CONCURRENT {
            let s = Arc::clone(&s);
            let key = k.plaintext.clone();
            let body = body.clone();
            tasks.push(tokio::spawn(async move {
                let resp = invoke_req(&s, &key, Capability::MemoryWrite, body)
                    .send()
                    .await
                    .expect("send");
                let status = resp.status();
                let replayed = resp.headers().get("idempotent-replayed").is_some();
                (status, replayed, resp.text().await.expect("text"))
            }));
        }
        let mut fresh = Vec::new();
        let mut bodies = HashSet::new();
        for t in tasks {
            let (status, replayed, text) = t.await.expect("task");
            match status {
                StatusCode::OK => {
                    if !replayed {
                        fresh.push(text.clone());
                    }
                    bodies.insert(text);
                }
                StatusCode::CONFLICT => {
                    let v: Value = serde_json::from_str(&text).expect("json");
                    assert_eq!(v["error"]["code"], "idempotency_conflict");
                }
                other => panic!("unexpected {other}: {text}"),
            }
        }
        assert_eq!(fresh.len(), 1, "round {round}: exactly one execution");
        assert_eq!(
            bodies.len(),
            1,
            "round {round}: every success is the same bytes"
        );
    }
    let u = usage(&s, &k.plaintext, 100).await;
    assert_eq!(u["used"], ROUNDS);
    let rows = u["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), ROUNDS);
    // One ledger row (one charge, one receipt) per idempotency key.
    let keys: HashSet<&str> = rows
        .iter()
        .map(|r| r["idempotency_key"].as_str().expect("key"))
        .collect();
    assert_eq!(keys.len(), ROUNDS);
    // One memory note per round: the receipt of each key's one execution exists.
    for r in rows.iter().take(5) {
        let resp = s
            .get(&format!(
                "/api/v1/capabilities/actions/{}",
                str_at(r, "/request_id")
            ))
            .bearer_auth(&k.plaintext)
            .send()
            .await
            .expect("receipt");
        let (status, receipt) = read(resp).await;
        assert_eq!(status, StatusCode::OK, "{receipt}");
        assert_eq!(receipt["status"], "committed");
    }
}

#[tokio::test]
async fn concurrent_invocations_never_pass_the_limit() {
    let s = Arc::new(TestServer::start().await);
    let a = s.account().await;
    // 100 credits on the free plan; spend 50 first, then race 200 calls for the other 50.
    let k = key_with(&s, &a, &[Capability::AccountGet], &["execute"]).await;
    for _ in 0..50 {
        invoke_ok(
            &s,
            &k.plaintext,
            Capability::AccountGet,
            json!({"input": {}}),
        )
        .await;
    }
    assert_eq!(usage(&s, &k.plaintext, 1).await["used"], 50);
    let mut tasks = Vec::new();
    for _ in 0..200 {
        let s = Arc::clone(&s);
        let key = k.plaintext.clone();
        tasks.push(tokio::spawn(async move {
            invoke(&s, &key, Capability::AccountGet, json!({"input": {}})).await
        }));
    }
    let (mut ok, mut refused) = (0, 0);
    let mut used_seen = HashSet::new();
    for t in tasks {
        let (status, v) = t.await.expect("task");
        match status {
            StatusCode::OK => {
                ok += 1;
                let used = v["quota"]["used"].as_u64().expect("used");
                assert!(used <= 100, "{v}");
                assert!(
                    used_seen.insert(used),
                    "two charges saw the same balance: {used}"
                );
            }
            StatusCode::PAYMENT_REQUIRED => {
                assert_eq!(v["error"]["code"], "quota_exceeded");
                refused += 1;
            }
            other => panic!("unexpected {other}: {v}"),
        }
    }
    assert_eq!((ok, refused), (50, 150));
    let u = usage(&s, &k.plaintext, 100).await;
    assert_eq!(
        (u["used"].as_u64(), u["remaining"].as_u64()),
        (Some(100), Some(0))
    );
    let rows = u["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 100);
    let sum: i64 = rows
        .iter()
        .map(|r| r["credits"].as_i64().expect("credits"))
        .sum();
    assert_eq!(sum, 100, "the ledger sum equals the counter");
}

#[tokio::test]
async fn events_ingest_goes_through_the_ingestion_pipeline() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let k = key_with(
        &s,
        &a,
        &[
            Capability::EventsIngest,
            Capability::ContextGet,
            Capability::AccountGet,
        ],
        &["dry_run", "queue", "execute"],
    )
    .await;
    let key = k.plaintext.as_str();
    let ev = json!({"event": "pricing_viewed", "email": "Eve@Example.com", "channel": "web",
                    "properties": {"path": "/pricing"}, "timestamp": "2026-11-20T10:00:00+01:00"});

    // dry_run validates and resolves nothing into the graph.
    let p = invoke_ok(
        &s,
        key,
        Capability::EventsIngest,
        json!({"mode": "dry_run", "input": ev}),
    )
    .await;
    assert_eq!(p["status"], "preview");
    assert_eq!(p["action_credit_cost"], 0);
    assert_eq!(p["result"]["would_ingest"], "pricing_viewed");
    assert_eq!(p["result"]["timestamp"], "2026-11-20T09:00:00.000Z");
    assert_eq!(p["result"]["identity"]["email"], "E***@Example.com");
    let acct = invoke_ok(&s, key, Capability::AccountGet, json!({"input": {}})).await;
    assert_eq!(acct["result"]["counts"]["customers"], 0);

    let first = invoke_ok(
        &s,
        key,
        Capability::EventsIngest,
        json!({"mode": "execute", "input": ev}),
    )
    .await;
    assert_eq!(first["status"], "committed");
    assert_eq!(first["action_credit_cost"], 1);
    let r = &first["result"];
    let cid = str_at(r, "/customer_id");
    assert!(cid.starts_with("cus_"));
    assert!(str_at(r, "/touchpoint_id").starts_with("tp_"));
    assert_eq!(r["is_new"], true);
    assert!(r["nodes_mutated"].as_u64().is_some_and(|n| n >= 2), "{r}");
    assert!(str_at(r, "/received_at").ends_with('Z'));
    let keys: HashSet<&str> = r
        .as_object()
        .expect("obj")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        HashSet::from([
            "customer_id",
            "touchpoint_id",
            "is_new",
            "nodes_mutated",
            "received_at"
        ])
    );
    // The default mode is execute; the `customer` field reads an email.
    let second = invoke_ok(
        &s,
        key,
        Capability::EventsIngest,
        json!({"input": {"event": "demo_requested", "customer": "eve@example.com"}}),
    )
    .await;
    assert_eq!(second["result"]["customer_id"], json!(cid));
    assert_eq!(second["result"]["is_new"], false);
    let ctx = invoke_ok(
        &s,
        key,
        Capability::ContextGet,
        json!({"input": {"customer": cid}}),
    )
    .await;
    assert_eq!(ctx["result"]["touchpoint_count"], 2);
    // Ingested observations are not agent decisions.
    assert_eq!(ctx["result"]["recent_decisions"], json!([]));

    // Idempotent ingest: one touchpoint however often it is retried.
    let once = json!({"idempotency_key": "ev-1", "input": {"event": "x", "customerId": cid}});
    let a1 = invoke_ok(&s, key, Capability::EventsIngest, once.clone()).await;
    let a2 = invoke_ok(&s, key, Capability::EventsIngest, once).await;
    assert_eq!(a1, a2);
    let ctx = invoke_ok(
        &s,
        key,
        Capability::ContextGet,
        json!({"input": {"customer": cid}}),
    )
    .await;
    assert_eq!(ctx["result"]["touchpoint_count"], 3);

    // events.ingest codes and statuses of SPEC.md.
    let send = |body: Value| invoke_req(&s, key, Capability::EventsIngest, body).send();
    let r = send(json!({"input": {"event": "x"}})).await.expect("send");
    expect_error(r, StatusCode::BAD_REQUEST, "invalid_input").await;
    let r = send(json!({"input": {"email": "x@example.com"}}))
        .await
        .expect("send");
    expect_error(r, StatusCode::BAD_REQUEST, "invalid_input").await;
    let r = send(json!({"input": {"event": "x", "email": "x@example.com",
                                   "timestamp": "2026-11-20T10:00:00"}}))
    .await
    .expect("send");
    expect_error(r, StatusCode::BAD_REQUEST, "invalid_timestamp").await;
    let r = send(json!({"mode": "queue", "input": {"event": "x", "email": "x@example.com"}}))
        .await
        .expect("send");
    expect_error(r, StatusCode::FORBIDDEN, "mode_denied").await;
    let reader = key_with(&s, &a, &[Capability::ContextGet], &["execute"]).await;
    let r = invoke_req(
        &s,
        &reader.plaintext,
        Capability::EventsIngest,
        json!({"input": {"event": "x", "email": "x@example.com"}}),
    )
    .send()
    .await
    .expect("send");
    expect_error(r, StatusCode::FORBIDDEN, "grant_denied").await;
    // The legacy events-write scope satisfies the grant check.
    let legacy = s
        .mint_key(
            &a,
            json!({"name": "legacy", "scopes": ["v1:events:write"], "allowed_modes": ["execute"],
                   "rate_limit_per_min": 2}),
        )
        .await;
    let body = json!({"input": {"event": "x", "email": "l@example.com"}});
    invoke_ok(
        &s,
        &legacy.plaintext,
        Capability::EventsIngest,
        body.clone(),
    )
    .await;
    invoke_ok(
        &s,
        &legacy.plaintext,
        Capability::EventsIngest,
        body.clone(),
    )
    .await;
    let r = invoke_req(&s, &legacy.plaintext, Capability::EventsIngest, body)
        .send()
        .await
        .expect("send");
    assert!(r.headers().get("retry-after").is_some());
    expect_error(r, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    let r = s
        .post(&invoke_path(Capability::EventsIngest))
        .header("x-api-key", "svc_live_not-a-key")
        .json(&json!({"input": {"event": "x", "email": "l@example.com"}}))
        .send()
        .await
        .expect("send");
    expect_error(r, StatusCode::UNAUTHORIZED, "unauthenticated").await;

    // Every committed ingest cost one credit (and the reads one each).
    let u = usage(&s, key, 100).await;
    let ingests: Vec<&Value> = u["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["capability"] == Capability::EventsIngest.id() && r["status"] == "committed")
        .collect();
    assert_eq!(ingests.len(), 3);
    assert!(ingests
        .iter()
        .all(|r| r["credits"] == 1 && r["customer_id"] == json!(cid)));
}

/// Whether the capability is read-only (side effect `none`), from the catalogue itself.
fn registry_side_effect_is_none(id: &str) -> bool {
    svc_gateway::registry::get(id).is_some_and(|e| e.descriptor.is_read_only())
}
