//! Approval-gated capabilities and the approval system through real HTTP: queueing, the
//! execute-mode transitions (auto_run, policy, auto-approval), approve / reject by dashboard
//! users only, refunds, receipts with timelines, and exactly-once execution under concurrent
//! approvals.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use svc_integration_tests::{
    expect_error, get_ok, grant, invoke_path, read, str_at, Account, Capability, TestServer,
};

async fn invoke(s: &TestServer, key: &str, cap: Capability, body: Value) -> reqwest::Response {
    s.post(&invoke_path(cap))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .expect("send")
}

async fn ok(resp: reqwest::Response) -> Value {
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v
}

async fn customer(s: &TestServer, a: &Account, email: &str) -> String {
    let k = s.agent_key(a).await;
    let resp = s
        .post("/api/v1/events/track")
        .header("x-api-key", &k.plaintext)
        .json(&json!({"action": "signup", "email": email}))
        .send()
        .await
        .expect("track");
    str_at(&ok(resp).await, "/customer_id")
}

async fn crm_key(s: &TestServer, a: &Account, modes: &[&str], auto_run: bool) -> String {
    s.mint_key(
        a,
        json!({"name": "crm", "agent": "crm-bot", "allowed_modes": modes, "auto_run": auto_run,
               "grants": [grant(Capability::CrmMutate), grant(Capability::ContextGet)]}),
    )
    .await
    .plaintext
}

async fn decide(s: &TestServer, a: &Account, id: &str, verb: &str) -> reqwest::Response {
    s.post(&format!("/api/v1/approvals/{id}/{verb}"))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("decide")
}

async fn used(s: &TestServer, key: &str) -> i64 {
    let resp = s
        .get("/api/v1/capabilities/usage/actions?limit=100")
        .bearer_auth(key)
        .send()
        .await
        .expect("usage");
    ok(resp).await["used"].as_i64().expect("used")
}

/// Queues crm.mutate with `input`; the envelope.
async fn queue(s: &TestServer, key: &str, input: &Value) -> Value {
    ok(invoke(
        s,
        key,
        Capability::CrmMutate,
        json!({"mode": "queue", "input": input}),
    )
    .await)
    .await
}

async fn set_policy(s: &TestServer, a: &Account, policy: Value) {
    let resp = s
        .request(Method::PUT, "/api/v1/workspace")
        .bearer_auth(&a.token)
        .json(&json!({ "policy": policy }))
        .send()
        .await
        .expect("policy");
    ok(resp).await;
}

async fn stage(s: &TestServer, key: &str, cid: &str) -> String {
    let v = ok(invoke(
        s,
        key,
        Capability::ContextGet,
        json!({"input": {"customer": cid}}),
    )
    .await)
    .await;
    str_at(&v, "/result/lifecycle_stage")
}

#[tokio::test]
async fn queued_action_is_approved_and_executed_once() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let cid = customer(&s, &a, "q@example.com").await;
    let key = crm_key(&s, &a, &["dry_run", "queue", "execute"], false).await;
    let set = json!({"customer": cid, "set": {"lifecycleStage": "customer", "tier": "gold"}});

    let preview = ok(invoke(
        &s,
        &key,
        Capability::CrmMutate,
        json!({"mode": "dry_run", "input": set}),
    )
    .await)
    .await;
    assert_eq!(preview["status"], "preview");
    assert_eq!(
        preview["result"]["would_change"],
        json!(["lifecycleStage", "tier"])
    );

    let env = queue(&s, &key, &set).await;
    assert_eq!(env["status"], "queued");
    assert_eq!(env["action_credit_cost"], 2);
    let pa = str_at(&env, "/pending_action_id");
    assert!(pa.starts_with("pa_"));
    assert_eq!(env["result"]["status"], "pending");
    assert_eq!(used(&s, &key).await, 2, "credits are charged at queue");
    assert_eq!(stage(&s, &key, &cid).await, "lead", "nothing ran yet");

    // The agent sees the pending action; it cannot approve it.
    let resp = s
        .get(&format!("/api/v1/capabilities/pending/{pa}"))
        .bearer_auth(&key)
        .send()
        .await
        .expect("pending");
    let view = ok(resp).await;
    assert_eq!(view["status"], "pending");
    assert_eq!(view["timeline"].as_array().map(Vec::len), Some(1));
    let resp = s
        .post(&format!("/api/v1/approvals/{pa}/approve"))
        .bearer_auth(&key)
        .send()
        .await
        .expect("approve");
    expect_error(resp, StatusCode::FORBIDDEN, "forbidden").await;

    // The dashboard lists and approves it.
    let resp = s
        .get("/api/v1/approvals?status=pending")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("list");
    let list = ok(resp).await;
    assert_eq!(list["actions"][0]["id"], json!(pa));
    let done = ok(decide(&s, &a, &pa, "approve").await).await;
    assert_eq!(done["status"], "executed");
    assert_eq!(done["result"]["changed"], json!(["lifecycleStage", "tier"]));
    let states: Vec<&str> = done["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .map(|t| t["state"].as_str().expect("state"))
        .collect();
    assert_eq!(states, ["pending", "approved", "executed"]);
    assert!(done["timeline"][1]["actor"]
        .as_str()
        .is_some_and(|a| a.starts_with("user:")));
    assert_eq!(
        stage(&s, &key, &cid).await,
        "customer",
        "the change was applied"
    );
    expect_error(
        decide(&s, &a, &pa, "approve").await,
        StatusCode::CONFLICT,
        "conflict",
    )
    .await;
    expect_error(
        decide(&s, &a, &pa, "reject").await,
        StatusCode::CONFLICT,
        "conflict",
    )
    .await;

    // The receipt of the queueing request carries the action and its timeline.
    let request_id = str_at(&env, "/request_id");
    let resp = s
        .get(&format!("/api/v1/capabilities/actions/{request_id}"))
        .bearer_auth(&key)
        .send()
        .await
        .expect("receipt");
    let receipt = ok(resp).await;
    assert_eq!(receipt["status"], "queued");
    assert_eq!(receipt["pending_action"]["status"], "executed");
    assert_eq!(receipt["timeline"].as_array().map(Vec::len), Some(3));
    assert_eq!(receipt["ledger_row"]["pending_action_id"], json!(pa));
    // Only the queue charge: 2 credits, plus the two context reads.
    assert_eq!(used(&s, &key).await, 4);
    // Unknown ids are 404; another workspace cannot see or decide it.
    expect_error(
        decide(&s, &a, "pa_nope", "approve").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    let b = s.account().await;
    expect_error(
        decide(&s, &b, &pa, "reject").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
}

#[tokio::test]
async fn reject_and_failed_execution_refund_the_credits() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let cid = customer(&s, &a, "r@example.com").await;
    let key = crm_key(&s, &a, &["queue"], false).await;
    let input = json!({"customer": cid, "set": {"tier": "gold"}});
    let env = queue(&s, &key, &input).await;
    let pa = str_at(&env, "/pending_action_id");
    assert_eq!(used(&s, &key).await, 2);
    let rejected = ok(decide(&s, &a, &pa, "reject").await).await;
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(used(&s, &key).await, 0, "refunded by a reversing row");
    let resp = s
        .get("/api/v1/capabilities/usage/actions?limit=10")
        .bearer_auth(&key)
        .send()
        .await
        .expect("usage");
    let rows = ok(resp).await["rows"].clone();
    assert_eq!(rows[0]["status"], "refunded");
    assert_eq!(rows[0]["credits"], -2);
    assert_eq!(rows[1]["credits"], 2);

    // The policy changes before approval: execution fails, nothing is applied, credits return.
    let env = queue(&s, &key, &input).await;
    let pa = str_at(&env, "/pending_action_id");
    set_policy(&s, &a, json!({"forbid": [Capability::CrmMutate.id()]})).await;
    let failed = ok(decide(&s, &a, &pa, "approve").await).await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["code"], "policy_forbid");
    assert_eq!(used(&s, &key).await, 0);
    // New queue attempts are refused by the policy outright, at no cost.
    let r = invoke(
        &s,
        &key,
        Capability::CrmMutate,
        json!({"mode": "queue", "input": input}),
    )
    .await;
    expect_error(r, StatusCode::FORBIDDEN, "policy_forbid").await;
    // Reserved identity properties are refused, even in a preview.
    let previewer = crm_key(&s, &a, &["dry_run"], false).await;
    let r = invoke(
        &s,
        &previewer,
        Capability::CrmMutate,
        json!({"mode": "dry_run", "input": {"customer": cid, "set": {"email": "x@y.z"}}}),
    )
    .await;
    expect_error(r, StatusCode::BAD_REQUEST, "invalid_input").await;
}

#[tokio::test]
async fn execute_mode_follows_auto_run_policy_and_auto_approval() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let cid = customer(&s, &a, "e@example.com").await;
    let input = json!({"customer": cid, "set": {"lifecycleStage": "opportunity"}});
    let exec = json!({"mode": "execute", "input": input});

    // No auto_run, may queue: execute becomes an approval request.
    let queuer = crm_key(&s, &a, &["queue", "execute"], false).await;
    let env = ok(invoke(&s, &queuer, Capability::CrmMutate, exec.clone()).await).await;
    assert_eq!(env["status"], "queued");
    assert!(env["pending_action_id"].is_string());
    // May not queue: approval_required, at no cost.
    let direct = crm_key(&s, &a, &["execute"], true).await;
    let r = invoke(&s, &direct, Capability::CrmMutate, exec.clone()).await;
    expect_error(r, StatusCode::FORBIDDEN, "approval_required").await;
    assert_eq!(
        used(&s, &direct).await,
        2,
        "only the earlier queue charge of the workspace"
    );
    // auto_run plus the workspace's auto-approval: commits at once.
    set_policy(
        &s,
        &a,
        json!({"auto_approve": [Capability::CrmMutate.id()]}),
    )
    .await;
    let env = ok(invoke(&s, &direct, Capability::CrmMutate, exec.clone()).await).await;
    assert_eq!(env["status"], "committed");
    assert_eq!(env["pending_action_id"], Value::Null);
    assert_eq!(env["result"]["changed"], json!(["lifecycleStage"]));
    // Without auto_run the auto-approval is not enough.
    let env = ok(invoke(&s, &queuer, Capability::CrmMutate, exec).await).await;
    assert_eq!(env["status"], "queued");
}

#[tokio::test]
async fn concurrent_approvals_execute_once() {
    let s = Arc::new(TestServer::start().await);
    let a = s.account().await;
    let cid = customer(&s, &a, "c@example.com").await;
    let key = crm_key(&s, &a, &["queue"], false).await;
    let env = ok(invoke(
        &s,
        &key,
        Capability::CrmMutate,
        json!({"mode": "queue", "input": {"customer": cid, "set": {"tier": "gold"}}}),
    )
    .await)
    .await;
    let pa = str_at(&env, "/pending_action_id");
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let (s, a, pa) = (Arc::clone(&s), a.clone(), pa.clone());
        tasks.push(tokio::spawn(async move {
            decide(&s, &a, &pa, "approve").await.status()
        }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.expect("task"));
    }
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::OK).count(), 1);
    assert_eq!(
        statuses
            .iter()
            .filter(|s| **s == StatusCode::CONFLICT)
            .count(),
        9
    );
    let resp = s
        .get(&format!("/api/v1/capabilities/pending/{pa}"))
        .bearer_auth(&key)
        .send()
        .await
        .expect("pending");
    let view = ok(resp).await;
    let executed = view["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .filter(|t| t["state"] == "executed")
        .count();
    assert_eq!(executed, 1);
    assert_eq!(used(&s, &key).await, 2);
}

/// A value nested `depth` levels deep: valid JSON that the input schema accepts, but deeper
/// than the store keeps (32 levels), so the crm.mutate executor fails after every check passed.
fn nested(depth: usize) -> Value {
    (0..depth).fold(json!("leaf"), |inner, _| json!({ "a": inner }))
}

async fn customer_property(s: &TestServer, a: &Account, cid: &str, name: &str) -> Value {
    get_ok(s, &format!("/v1/customers/{cid}"), &a.token).await["customer"]["properties"][name]
        .clone()
}

#[tokio::test]
async fn executor_failure_is_capability_failed_costs_nothing_and_refunds_an_approval() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let cid = customer(&s, &a, "f@example.com").await;
    set_policy(
        &s,
        &a,
        json!({"auto_approve": [Capability::CrmMutate.id()]}),
    )
    .await;
    let direct = crm_key(&s, &a, &["execute"], true).await;
    let deep = json!({"customer": cid, "set": {"tier": "gold", "deep": nested(40)}});

    // Execute: 502 capability_failed; nothing written, nothing charged, no receipt.
    let r = invoke(
        &s,
        &direct,
        Capability::CrmMutate,
        json!({"mode": "execute", "idempotency_key": "k-1", "input": deep}),
    )
    .await;
    let err = expect_error(r, StatusCode::BAD_GATEWAY, "capability_failed").await;
    assert_eq!(used(&s, &direct).await, 0);
    assert_eq!(customer_property(&s, &a, &cid, "tier").await, Value::Null);
    let receipt = s
        .get(&format!(
            "/api/v1/capabilities/actions/{}",
            str_at(&err, "/error/request_id")
        ))
        .bearer_auth(&direct)
        .send()
        .await
        .expect("receipt");
    expect_error(receipt, StatusCode::NOT_FOUND, "not_found").await;
    // The failure was not stored under its idempotency key: a corrected retry runs.
    let fixed = json!({"customer": cid, "set": {"tier": "gold"}});
    let env = ok(invoke(
        &s,
        &direct,
        Capability::CrmMutate,
        json!({"mode": "execute", "idempotency_key": "k-1", "input": fixed}),
    )
    .await)
    .await;
    assert_eq!(env["status"], "committed");
    assert_eq!(used(&s, &direct).await, 2);

    // Queued, then approved: the execution fails the same way; the action ends `failed` with
    // capability_failed, its charge is refunded and the customer is untouched.
    let queuer = crm_key(&s, &a, &["queue"], false).await;
    let deep = json!({"customer": cid, "set": {"tier": "platinum", "deep": nested(40)}});
    let env = queue(&s, &queuer, &deep).await;
    let pa = str_at(&env, "/pending_action_id");
    assert_eq!(
        used(&s, &queuer).await,
        4,
        "the queue charge of 2 on top of 2"
    );
    let failed = ok(decide(&s, &a, &pa, "approve").await).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], "capability_failed");
    let states: Vec<&str> = failed["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .filter_map(|t| t["state"].as_str())
        .collect();
    assert_eq!(states, ["pending", "approved", "failed"]);
    assert_eq!(used(&s, &queuer).await, 2, "refunded");
    assert_eq!(customer_property(&s, &a, &cid, "tier").await, "gold");
    let receipt = s
        .get(&format!(
            "/api/v1/capabilities/actions/{}",
            str_at(&env, "/request_id")
        ))
        .bearer_auth(&queuer)
        .send()
        .await
        .expect("receipt");
    let receipt = ok(receipt).await;
    assert_eq!(receipt["pending_action"]["status"], "failed");
    assert_eq!(receipt["timeline"].as_array().map(Vec::len), Some(3));
}
