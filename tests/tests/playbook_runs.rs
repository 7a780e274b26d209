//! Playbook runs executed by the service, through real HTTP against a real SMTP server
//! (aiosmtpd): a run over a seeded segment queues one outreach per eligible customer and skips
//! the suppressed one with its reason; a small credit quota stops a run `blocked_credits`
//! without charging past the limit; planted campaign outcomes make the judge pivot, which
//! changes the next leads' variant; pause, cancel, and a run that survives a restart without
//! queueing anything twice.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use svc_integration_tests::llm::{text, tool_call, LlmServer};
use svc_integration_tests::providers::SmtpSink;
use svc_integration_tests::{get_ok, read, str_at, track, Account, TestServer};

async fn call(
    s: &TestServer,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = s.request(method, path).bearer_auth(token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    read(req.send().await.expect("send")).await
}

async fn connect_smtp(s: &TestServer, a: &Account, smtp: &SmtpSink) {
    let (status, body) = call(
        s,
        Method::PUT,
        "/api/v1/integrations/smtp",
        &a.token,
        Some(smtp.config(&smtp.password)),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "connect smtp: {body}");
}

/// A campaign playbook; `extra` is merged at the top level.
async fn playbook(s: &TestServer, a: &Account, extra: Value) -> String {
    let mut body = json!({"name": "Trial follow-up", "mode": "outbound", "buddyId": "campaign",
        "strategy": {"hypothesis": "Trial users answer a short personal note",
                     "successMetric": "reply_rate", "successTarget": 0.5}});
    for (k, v) in extra.as_object().expect("object") {
        body[k] = v.clone();
    }
    let (status, v) = call(s, Method::POST, "/v1/playbooks", &a.token, Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    str_at(&v, "/playbook/id")
}

async fn start(s: &TestServer, a: &Account, pb: &str, body: Value) -> String {
    let (status, v) = call(
        s,
        Method::POST,
        &format!("/v1/playbooks/{pb}/run"),
        &a.token,
        Some(body),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    assert_eq!(v["run"]["status"], "running", "{v}");
    str_at(&v, "/run/id")
}

async fn run(s: &TestServer, a: &Account, pb: &str, run: &str) -> Value {
    get_ok(s, &format!("/v1/playbooks/{pb}/runs/{run}"), &a.token).await["run"].clone()
}

async fn leads(s: &TestServer, a: &Account, pb: &str, run: &str) -> Vec<Value> {
    get_ok(s, &format!("/v1/playbooks/{pb}/runs/{run}/leads"), &a.token).await["leads"]
        .as_array()
        .expect("leads")
        .clone()
}

/// Polls the run until `done` holds (at most 20 s).
async fn wait_run(
    s: &TestServer,
    a: &Account,
    pb: &str,
    run_id: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = run(s, a, pb, run_id).await;
        if done(&r) {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {r}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn control(
    s: &TestServer,
    a: &Account,
    pb: &str,
    run: &str,
    action: &str,
) -> (StatusCode, Value) {
    call(
        s,
        Method::POST,
        &format!("/v1/playbooks/{pb}/runs/{run}/{action}"),
        &a.token,
        None,
    )
    .await
}

/// A customer seen now (through event ingestion).
async fn customer(s: &TestServer, key: &str, email: &str) {
    track(s, key, json!({"action": "trial_started", "email": email})).await;
}

async fn pending_actions(s: &TestServer, a: &Account) -> Vec<Value> {
    get_ok(s, "/api/v1/approvals?status=pending", &a.token).await["actions"]
        .as_array()
        .expect("actions")
        .clone()
}

fn counts(r: &Value) -> Value {
    r["plan"]["counts"].clone()
}

#[tokio::test]
async fn a_segment_run_queues_one_outreach_per_eligible_customer_and_skips_the_suppressed() {
    let smtp = SmtpSink::start();
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    connect_smtp(&s, &a, &smtp).await;
    for email in ["ada@x.test", "bo@x.test", "cy@x.test", "di@x.test"] {
        customer(&s, &key, email).await;
    }
    track(
        &s,
        &key,
        json!({"action": "unsubscribed", "email": "cy@x.test"}),
    )
    .await;

    // Outside providers the service does not reach: refused, never pretended.
    let cio = playbook(
        &s,
        &a,
        json!({"leadSource": {"kind": "cio-segment", "query": "trials"}}),
    )
    .await;
    let (status, v) = call(
        &s,
        Method::POST,
        &format!("/v1/playbooks/{cio}/run"),
        &a.token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(v["error"]["details"]["field"], "leadSource.kind", "{v}");
    let bad = playbook(
        &s,
        &a,
        json!({"leadSource": {"kind": "crm-segment", "query": "recency:someday"}}),
    )
    .await;
    let (status, v) = call(
        &s,
        Method::POST,
        &format!("/v1/playbooks/{bad}/run"),
        &a.token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");

    let pb = playbook(
        &s,
        &a,
        json!({"leadSource": {"kind": "crm-segment", "query": "recency:active_7d"}}),
    )
    .await;
    let run_id = start(&s, &a, &pb, json!({"intent": "onboarding"})).await;
    let r = wait_run(&s, &a, &pb, &run_id, "completion", |r| {
        r["status"] == "completed"
    })
    .await;
    assert_eq!(
        counts(&r),
        json!({"taken": 4, "queued": 3, "sent": 0, "skipped": 1, "failed": 0}),
        "{r}"
    );
    assert_eq!(
        r["plan"]["creditsCharged"], 15,
        "3 x (draft 2 + queue 3): {r}"
    );
    assert_eq!(r["plan"]["judge"], "builtin-statistical");
    assert_eq!(r["plan"]["buddy"], "campaign");

    let ls = leads(&s, &a, &pb, &run_id).await;
    assert_eq!(ls.len(), 4);
    let suppressed: Vec<&Value> = ls.iter().filter(|l| l["status"] == "skipped").collect();
    assert_eq!(suppressed.len(), 1, "{ls:?}");
    assert_eq!(suppressed[0]["code"], "customer_suppressed");
    assert!(
        suppressed[0]["reason"]
            .as_str()
            .expect("reason")
            .contains("unsubscribed"),
        "{ls:?}"
    );
    assert_eq!(
        suppressed[0]["credits"], 0,
        "nothing charged for the suppressed customer"
    );
    for l in ls.iter().filter(|l| l["status"] == "queued") {
        assert_eq!(l["capability"], "queue.outreach", "{l}");
        assert_eq!(l["variant"], "brand");
        assert!(!str_at(l, "/pendingActionId").is_empty(), "{l}");
    }

    // One pending action per eligible customer, by the campaign buddy, nothing sent yet.
    let pending = pending_actions(&s, &a).await;
    assert_eq!(pending.len(), 3, "{pending:?}");
    assert!(pending
        .iter()
        .all(|p| p["agent"] == "campaign" && p["capability"] == "queue.outreach"));
    assert!(smtp.messages().is_empty());
    // Runs act as the campaign buddy's internal principal: no agent key is created for them.
    let keys = get_ok(&s, "/api/v1/keys", &a.token).await.to_string();
    assert!(!keys.contains("key_buddy_campaign"), "{keys}");

    // A person approves one: it is sent with the buddy's stored key.
    let id = str_at(&pending[0], "/id");
    let (status, v) = call(
        &s,
        Method::POST,
        &format!("/api/v1/approvals/{id}/approve"),
        &a.token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["status"], "executed", "{v}");
    assert_eq!(smtp.wait_for(1).await.len(), 1);

    // A completed run cannot be resumed or paused; cancel of it is refused too.
    for action in ["pause", "resume", "cancel"] {
        let (status, v) = control(&s, &a, &pb, &run_id, action).await;
        assert_eq!(status, StatusCode::CONFLICT, "{action}: {v}");
    }
}

#[tokio::test]
async fn a_small_quota_blocks_the_run_and_nothing_is_charged_past_it() {
    let smtp = SmtpSink::start();
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    connect_smtp(&s, &a, &smtp).await;
    let emails = ["q1@x.test", "q2@x.test", "q3@x.test", "q4@x.test"];
    for email in emails {
        customer(&s, &key, email).await;
    }
    s.operator_set_plan(&a.workspace_id, "enterprise", Some(12))
        .await;
    let pb = playbook(&s, &a, json!({})).await;
    let mut refs: Vec<&str> = emails.to_vec();
    refs.push("nobody@x.test");
    let run_id = start(&s, &a, &pb, json!({"leads": refs})).await;
    let r = wait_run(&s, &a, &pb, &run_id, "blocked_credits", |r| {
        r["status"] == "blocked_credits"
    })
    .await;
    // Two leads cost 10 of 12; the third (5) would pass the limit: not started, not charged.
    assert_eq!(counts(&r)["queued"], 2, "{r}");
    assert_eq!(counts(&r)["skipped"], 1, "the unknown reference: {r}");
    assert_eq!(r["plan"]["creditsCharged"], 10);
    assert_eq!(r["plan"]["error"]["code"], "quota_exceeded", "{r}");
    let used = get_ok(&s, "/api/v1/capabilities/usage/actions", &key).await;
    assert_eq!(used["used"], 10, "{used}");
    assert_eq!(pending_actions(&s, &a).await.len(), 2);
    let ls = leads(&s, &a, &pb, &run_id).await;
    assert_eq!(
        ls.iter().filter(|l| l["status"] == "pending").count(),
        2,
        "{ls:?}"
    );
    assert_eq!(ls[4]["status"], "skipped", "unknown reference: {ls:?}");
    assert_eq!(ls[4]["code"], "not_found");

    // More credits, resume: the run continues with the lead it stopped at.
    s.operator_set_plan(&a.workspace_id, "enterprise", Some(100))
        .await;
    let (status, v) = control(&s, &a, &pb, &run_id, "resume").await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let r = wait_run(&s, &a, &pb, &run_id, "completion", |r| {
        r["status"] == "completed"
    })
    .await;
    assert_eq!(
        counts(&r),
        json!({"taken": 5, "queued": 4, "sent": 0, "skipped": 1, "failed": 0}),
        "{r}"
    );
    assert!(r["plan"]["error"].is_null(), "{r}");
    assert_eq!(pending_actions(&s, &a).await.len(), 4);
    let used = get_ok(&s, "/api/v1/capabilities/usage/actions", &key).await;
    assert_eq!(used["used"], 20, "{used}");
}

#[tokio::test]
async fn planted_outcomes_make_the_judge_pivot_the_next_leads_variant_and_cancel_stops() {
    let smtp = SmtpSink::start();
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    connect_smtp(&s, &a, &smtp).await;
    let first = ["p1@x.test", "p2@x.test", "p3@x.test"];
    for email in first {
        customer(&s, &key, email).await;
    }
    let pb = playbook(
        &s,
        &a,
        json!({"leadSource": {"kind": "crm-segment", "query": "MATCH (c:Customer) RETURN c", "sampleSize": 10},
               "adaptation": {"minSampleSize": 3, "maxPivotsPerWeek": 5, "judgeModel": "judge-large"}}),
    )
    .await;
    let run_id = start(&s, &a, &pb, json!({"follow": true})).await;
    let r = wait_run(&s, &a, &pb, &run_id, "three queued", |r| {
        counts(r)["queued"] == 3
    })
    .await;
    assert_eq!(
        r["status"], "running",
        "a following run waits for new members: {r}"
    );
    assert_eq!(r["plan"]["judge"], "builtin-statistical");
    assert!(
        r["plan"]["judgeNote"]
            .as_str()
            .expect("note")
            .contains("judge-large"),
        "{r}"
    );

    // Outcomes come back through ingestion: three opens, no reply, against a 50% reply target.
    for email in first {
        track(
            &s,
            &key,
            json!({"action": "email_opened", "email": email, "campaignId": pb}),
        )
        .await;
    }
    let r = wait_run(&s, &a, &pb, &run_id, "a pivot", |r| {
        r["pivots"].as_array().is_some_and(|p| !p.is_empty())
    })
    .await;
    let pivot = &r["pivots"][0];
    assert_eq!(pivot["judge"], "builtin-statistical", "{r}");
    assert_eq!(pivot["requestedJudgeModel"], "judge-large");
    assert_eq!(
        pivot["change"],
        json!({"field": "variant", "from": "brand", "to": "direct"}),
        "{r}"
    );
    assert_eq!(r["plan"]["variant"], "direct");

    // The next lead (a new member of the segment) is worked with the new variant.
    customer(&s, &key, "p4@x.test").await;
    wait_run(&s, &a, &pb, &run_id, "the fourth queued", |r| {
        counts(r)["queued"] == 4
    })
    .await;
    let ls = leads(&s, &a, &pb, &run_id).await;
    let variants: Vec<&str> = ls
        .iter()
        .map(|l| l["variant"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(variants, ["brand", "brand", "brand", "direct"], "{ls:?}");
    let pending = pending_actions(&s, &a).await;
    assert_eq!(pending.len(), 4);

    // Cancel: final, and new members are no longer taken.
    let (status, v) = control(&s, &a, &pb, &run_id, "cancel").await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["run"]["status"], "cancelled");
    customer(&s, &key, "p5@x.test").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(leads(&s, &a, &pb, &run_id).await.len(), 4);
    let (status, _) = control(&s, &a, &pb, &run_id, "resume").await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn a_paused_run_stays_paused_and_a_running_one_survives_a_restart_without_double_queueing() {
    let smtp = SmtpSink::start();
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    connect_smtp(&s, &a, &smtp).await;
    let emails = ["r1@x.test", "r2@x.test", "r3@x.test", "r4@x.test"];
    for email in emails {
        customer(&s, &key, email).await;
    }
    let pb = playbook(
        &s,
        &a,
        json!({"leadSource": {"kind": "manual", "query": emails.join(", ")}}),
    )
    .await;
    let run_id = start(&s, &a, &pb, json!({"cadenceMs": 700})).await;
    wait_run(&s, &a, &pb, &run_id, "a first lead", |r| {
        counts(r)["queued"].as_u64() >= Some(1)
    })
    .await;
    let (status, v) = control(&s, &a, &pb, &run_id, "pause").await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["run"]["status"], "paused");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let paused = run(&s, &a, &pb, &run_id).await;
    let queued_when_paused = counts(&paused)["queued"].as_u64().expect("queued");
    assert!(queued_when_paused < 4, "{paused}");

    // A paused run stays paused across a restart.
    let s = s.restart().await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let r = run(&s, &a, &pb, &run_id).await;
    assert_eq!(r["status"], "paused", "{r}");
    assert_eq!(counts(&r)["queued"], queued_when_paused);

    // Resumed, then the service restarts mid-run: the run goes on by itself.
    let (status, v) = control(&s, &a, &pb, &run_id, "resume").await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let s = s.restart().await;
    let r = wait_run(&s, &a, &pb, &run_id, "completion after restart", |r| {
        r["status"] == "completed"
    })
    .await;
    assert_eq!(counts(&r)["queued"], 4, "{r}");
    assert_eq!(r["plan"]["creditsCharged"], 20, "{r}");
    // Exactly one pending action per customer: nothing was queued twice.
    let pending = pending_actions(&s, &a).await;
    assert_eq!(pending.len(), 4, "{pending:?}");
    let mut customers: Vec<String> = pending.iter().map(|p| str_at(p, "/customer_id")).collect();
    customers.sort();
    customers.dedup();
    assert_eq!(customers.len(), 4);
}

#[tokio::test]
async fn execute_delivery_sends_when_policy_auto_approves_and_the_weekly_cap_skips_the_next_run() {
    let smtp = SmtpSink::start();
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    connect_smtp(&s, &a, &smtp).await;
    let (status, v) = call(
        &s,
        Method::PUT,
        "/api/v1/workspace",
        &a.token,
        Some(json!({"policy": {"auto_approve": ["execute.outreach"],
                               "max_outreach_per_customer_per_week": 1}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    for email in ["e1@x.test", "e2@x.test"] {
        customer(&s, &key, email).await;
    }
    let pb = playbook(
        &s,
        &a,
        json!({"leadSource": {"kind": "manual", "query": "e1@x.test\ne2@x.test"}}),
    )
    .await;
    let run_id = start(&s, &a, &pb, json!({"delivery": "execute"})).await;
    let r = wait_run(&s, &a, &pb, &run_id, "completion", |r| {
        r["status"] == "completed"
    })
    .await;
    assert_eq!(counts(&r)["sent"], 2, "{r}");
    assert_eq!(
        r["plan"]["creditsCharged"], 14,
        "2 x (draft 2 + execute 5): {r}"
    );
    let mut to: Vec<String> = smtp
        .wait_for(2)
        .await
        .iter()
        .flat_map(|m| m.recipients.clone())
        .collect();
    to.sort();
    assert_eq!(to, ["e1@x.test", "e2@x.test"]);
    assert!(pending_actions(&s, &a).await.is_empty());
    let ls = leads(&s, &a, &pb, &run_id).await;
    assert!(
        ls.iter()
            .all(|l| l["status"] == "sent" && l["capability"] == "execute.outreach"),
        "{ls:?}"
    );

    // A second run this week: the cap (1 per customer) skips both, and charges nothing.
    let second = start(&s, &a, &pb, json!({})).await;
    let r = wait_run(&s, &a, &pb, &second, "completion", |r| {
        r["status"] == "completed"
    })
    .await;
    assert_eq!(counts(&r)["skipped"], 2, "{r}");
    assert_eq!(r["plan"]["creditsCharged"], 0);
    let ls = leads(&s, &a, &pb, &second).await;
    assert!(ls.iter().all(|l| l["code"] == "frequency_capped"), "{ls:?}");
    assert_eq!(smtp.messages().len(), 2);
}

/// `POST .../outcomes` with `samples` sends and no success; returns the response.
async fn report(s: &TestServer, a: &Account, pb: &str, run_id: &str, samples: u64) -> Value {
    let (status, v) = call(
        s,
        Method::POST,
        &format!("/v1/playbooks/{pb}/runs/{run_id}/outcomes"),
        &a.token,
        Some(json!({"samples": samples, "successes": 0})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v
}

async fn connect_llm(s: &TestServer, a: &Account, config: Value) {
    let (status, v) = call(
        s,
        Method::PUT,
        "/api/v1/integrations/llm",
        &a.token,
        Some(config),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "connect llm: {v}");
}

#[tokio::test]
async fn the_connected_model_judges_and_a_bad_answer_a_timeout_or_a_down_provider_fall_back() {
    let smtp = SmtpSink::start();
    let llm = LlmServer::start().await;
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    connect_smtp(&s, &a, &smtp).await;
    connect_llm(&s, &a, llm.config(5)).await;
    for email in ["j1@x.test", "j2@x.test"] {
        customer(&s, &key, email).await;
    }
    let pb = playbook(
        &s,
        &a,
        json!({"leadSource": {"kind": "crm-segment", "query": "MATCH (c:Customer) RETURN c", "sampleSize": 10},
               "adaptation": {"minSampleSize": 3, "maxPivotsPerWeek": 5, "judgeModel": "judge-large"}}),
    )
    .await;
    let run_id = start(&s, &a, &pb, json!({"follow": true})).await;
    let r = wait_run(&s, &a, &pb, &run_id, "two queued", |r| {
        counts(r)["queued"] == 2
    })
    .await;
    assert_eq!(r["plan"]["judge"], "judge-large", "{r}");
    assert!(r["plan"]["judgeNote"].is_null(), "{r}");
    // The executor's own syncs bring no new outcomes: the model is not asked for them.
    assert!(llm.take_requests().is_empty());

    // 1. The model's pivot is applied as it said.
    llm.script(vec![tool_call(
        "judge_run",
        json!({"action": "pivot", "reason": "no replies after 5 sends: try a warmer tone",
               "field": "variant", "to": "warm"}),
    )]);
    let v = report(&s, &a, &pb, &run_id, 5).await;
    assert_eq!(v["decision"]["action"], "pivot", "{v}");
    assert_eq!(v["decision"]["judgedBy"], "model", "{v}");
    assert_eq!(v["decision"]["judge"], "judge-large", "{v}");
    let asked = llm.take_requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["model"], "judge-large");
    assert_eq!(asked[0]["tools"][0]["function"]["name"], "judge_run");
    let situation: Value = serde_json::from_str(&str_at(&asked[0], "/messages/1/content"))
        .expect("the situation is JSON");
    assert_eq!(situation["window"]["samples"], 5, "{situation}");
    assert_eq!(situation["current"]["variant"], "brand", "{situation}");
    let r = run(&s, &a, &pb, &run_id).await;
    let pivot = &r["pivots"][0];
    assert_eq!(pivot["judge"], "judge-large", "{r}");
    assert_eq!(pivot["judgedBy"], "model", "{r}");
    assert_eq!(
        pivot["change"],
        json!({"field": "variant", "from": "brand", "to": "warm"})
    );
    assert_eq!(r["plan"]["variant"], "warm");
    assert!(r["judgeFallback"].is_null(), "{r}");

    // 2. A pivot the run cannot apply (the call channel without voice): the statistical judge
    // decides (0 of 5 against 50% pivots), with the reason on the decision, pivot and run.
    llm.script(vec![tool_call(
        "judge_run",
        json!({"action": "pivot", "reason": "call them", "field": "channel", "to": "call"}),
    )]);
    let v = report(&s, &a, &pb, &run_id, 5).await;
    assert_eq!(v["decision"]["action"], "pivot", "{v}");
    assert_eq!(v["decision"]["judgedBy"], "statistical", "{v}");
    let why = str_at(&v, "/decision/fallbackReason");
    assert!(
        why.starts_with("invalid_answer") && why.contains("call"),
        "{why}"
    );
    let r = run(&s, &a, &pb, &run_id).await;
    assert_eq!(r["pivots"][1]["judge"], "builtin-statistical", "{r}");
    assert_eq!(r["pivots"][1]["judgedBy"], "statistical");
    assert_eq!(r["pivots"][1]["fallbackReason"], json!(why));
    assert_eq!(r["pivots"][1]["change"]["field"], "cadence", "{r}");
    assert_eq!(r["judgeFallback"]["reason"], json!(why));
    assert_eq!(r["judgeFallback"]["model"], "judge-large");

    // 3. A model slower than timeout_s.
    connect_llm(&s, &a, llm.config(1)).await;
    llm.script(vec![text("too late")]);
    llm.delay(Duration::from_millis(2500));
    let v = report(&s, &a, &pb, &run_id, 5).await;
    assert_eq!(v["decision"]["judgedBy"], "statistical", "{v}");
    assert!(
        str_at(&v, "/decision/fallbackReason").starts_with("provider_timeout"),
        "{v}"
    );

    // 4. The provider is down (nothing listens at its address).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead = format!("http://{}/v1", closed.local_addr().expect("addr"));
    drop(closed);
    let mut config = llm.config(5);
    config["base_url"] = json!(dead);
    connect_llm(&s, &a, config).await;
    let v = report(&s, &a, &pb, &run_id, 5).await;
    assert_eq!(v["decision"]["action"], "pivot", "{v}");
    assert_eq!(v["decision"]["judgedBy"], "statistical", "{v}");
    let why = str_at(&v, "/decision/fallbackReason");
    assert!(why.starts_with("provider_error"), "{why}");
    let r = run(&s, &a, &pb, &run_id).await;
    assert_eq!(r["pivots"].as_array().map(Vec::len), Some(4), "{r}");
    assert_eq!(r["judgeFallback"]["reason"], json!(why), "{r}");
    assert_eq!(r["status"], "running");
}

/// Stores the legacy campaign key in `a`'s workspace, as the earlier release wrote it.
async fn plant_legacy_campaign_key(
    s: &TestServer,
    a: &Account,
) -> (svc_core::store::WorkspaceId, svc_core::keys::AgentKey) {
    let ws = svc_core::workspaces::parse_id(&a.workspace_id).expect("workspace id");
    let legacy = legacy_campaign_key(ws);
    let planted = legacy.clone();
    s.state()
        .store
        .write(move |tx| tx.put(ws, &planted))
        .await
        .expect("plant the legacy key");
    (ws, legacy)
}

/// The agent key runs acted as before they used the campaign buddy's principal, as that
/// release stored it.
fn legacy_campaign_key(ws: svc_core::store::WorkspaceId) -> svc_core::keys::AgentKey {
    use svc_core::keys::{AgentKey, KeyKind};
    AgentKey {
        id: "key_buddy_campaign".into(),
        workspace: ws.0,
        kind: KeyKind::Agent,
        name: "Campaign buddy (playbook runs)".into(),
        agent: "campaign".into(),
        scopes: Vec::new(),
        grants: ["draft.outreach", "queue.outreach", "execute.outreach"]
            .iter()
            .map(|c| format!("capability:{c}"))
            .collect(),
        allowed_modes: vec!["dry_run".into(), "queue".into(), "execute".into()],
        auto_run: true,
        rate_limit_per_min: svc_core::keys::DEFAULT_RATE_LIMIT_PER_MIN,
        quota_override_monthly: None,
        prefix: "internal".into(),
        last_four: String::new(),
        created_at: "2026-01-01T00:00:00.000Z".into(),
        created_by: "system".into(),
        last_used_at: None,
        revoked_at: None,
    }
}

#[tokio::test]
async fn runs_act_as_the_campaign_buddys_principal_and_the_legacy_keys_queued_action_still_runs() {
    let smtp = SmtpSink::start();
    let s = TestServer::start().await;
    let a = s.account().await;
    let agent = s.agent_key(&a).await.plaintext;
    connect_smtp(&s, &a, &smtp).await;
    for email in ["old@x.test", "new@x.test"] {
        customer(&s, &agent, email).await;
    }

    // A workspace upgraded from the release whose runs acted as `key_buddy_campaign`: the key
    // record and an outreach it queued are stored (planted as that release wrote them).
    let (_, legacy) = plant_legacy_campaign_key(&s, &a).await;
    let queued = svc_gateway::invoke(
        s.state(),
        &legacy,
        "queue.outreach",
        svc_gateway::InvokeRequest {
            mode: Some("queue".into()),
            source: Some("internal".into()),
            idempotency_key: Some("pbrun:run_old:x:email".into()),
            input: Some(json!({"customer": "old@x.test", "subject": "Hello",
                                "body": "Queued before the upgrade."})),
        },
        svc_core::plumbing::ids::request_id(),
    )
    .await
    .expect("the legacy key queues");
    let queued: Value = serde_json::from_str(&queued.body).expect("envelope");
    let legacy_pa = str_at(&queued, "/pending_action_id");

    // A run now acts as `int_campaign`: its ledger rows and receipts name it.
    let pb = playbook(
        &s,
        &a,
        json!({"leadSource": {"kind": "manual", "query": "new@x.test"}}),
    )
    .await;
    let run_id = start(&s, &a, &pb, json!({})).await;
    let r = wait_run(&s, &a, &pb, &run_id, "completion", |r| {
        r["status"] == "completed"
    })
    .await;
    assert_eq!(counts(&r)["queued"], 1, "{r}");
    let lead = &leads(&s, &a, &pb, &run_id).await[0];
    assert_eq!(lead["keyId"], "int_campaign", "{lead}");
    let receipt = get_ok(
        &s,
        &format!(
            "/api/v1/capabilities/actions/{}",
            str_at(lead, "/requestId")
        ),
        &agent,
    )
    .await;
    assert_eq!(receipt["ledger_row"]["key_id"], "int_campaign", "{receipt}");
    assert_eq!(receipt["ledger_row"]["source"], "internal", "{receipt}");
    // The legacy record is kept (never re-created elsewhere), the internal principal unlisted.
    let keys = get_ok(&s, "/api/v1/keys", &a.token).await.to_string();
    assert!(
        keys.contains("key_buddy_campaign") && !keys.contains("int_campaign"),
        "{keys}"
    );

    // Approving the action the legacy key queued re-reads that key and sends.
    let resp = s
        .post(&format!("/api/v1/approvals/{legacy_pa}/approve"))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("approve");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let sent = smtp.wait_for(1).await;
    assert_eq!(sent[0].recipients, ["old@x.test"]);
}

#[tokio::test]
async fn a_lead_under_way_under_the_legacy_key_at_the_upgrade_finishes_under_it() {
    use svc_agents::playbook_runs::leads::{lead_key, RunLead};
    let smtp = SmtpSink::start();
    let s = TestServer::start().await;
    let a = s.account().await;
    let agent = s.agent_key(&a).await.plaintext;
    connect_smtp(&s, &a, &smtp).await;
    for email in ["m1@x.test", "m2@x.test"] {
        customer(&s, &agent, email).await;
    }
    let (ws, legacy) = plant_legacy_campaign_key(&s, &a).await;

    // The first lead is worked, then the run is paused before the second.
    let pb = playbook(
        &s,
        &a,
        json!({"leadSource": {"kind": "manual", "query": "m1@x.test\nm2@x.test"}}),
    )
    .await;
    let run_id = start(&s, &a, &pb, json!({"cadenceMs": 60_000})).await;
    let r = wait_run(&s, &a, &pb, &run_id, "the first lead", |r| {
        counts(r)["queued"] == 1
    })
    .await;
    let (status, v) = control(&s, &a, &pb, &run_id, "pause").await;
    assert_eq!(status, StatusCode::OK, "{v}");

    // As the previous release left it: the second lead `working`, its draft made by
    // key_buddy_campaign (stored answer under that key), the outreach not yet.
    let id = lead_key(&pb, &run_id, 1);
    let mut lead: RunLead = s
        .state()
        .store
        .get(ws, id)
        .await
        .expect("read")
        .expect("lead");
    let cid = lead.customer_id.clone().expect("customer");
    lead.status = "working".into();
    lead.variant = Some("brand".into());
    lead.channel = Some("email".into());
    lead.key_id = None;
    s.state()
        .store
        .write(move |tx| tx.put(ws, &lead))
        .await
        .expect("plant the lead");
    let draft = svc_gateway::invoke(
        s.state(),
        &legacy,
        "draft.outreach",
        svc_gateway::InvokeRequest {
            mode: Some("execute".into()),
            source: Some("internal".into()),
            idempotency_key: Some(format!("pbrun:{run_id}:{cid}:draft")),
            input: Some(json!({"customer": cid, "intent": r["plan"]["intent"],
                                "channel": "email"})),
        },
        svc_core::plumbing::ids::request_id(),
    )
    .await
    .expect("the legacy key drafts");
    let draft: Value = serde_json::from_str(&draft.body).expect("envelope");

    // Resumed: the lead replays the stored draft and queues as the legacy key; nothing twice.
    let (status, v) = control(&s, &a, &pb, &run_id, "resume").await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let r = wait_run(&s, &a, &pb, &run_id, "the second lead", |r| {
        counts(r)["queued"] == 2
    })
    .await;
    assert_eq!(
        r["plan"]["creditsCharged"], 8,
        "5 + the queue step's 3: {r}"
    );
    let ls = leads(&s, &a, &pb, &run_id).await;
    assert_eq!(ls[0]["keyId"], "int_campaign");
    assert_eq!(ls[1]["draftRequestId"], draft["request_id"], "{ls:?}");
    assert_eq!(
        ls[1]["credits"], 3,
        "the replayed draft is not charged again: {ls:?}"
    );
    let receipt = get_ok(
        &s,
        &format!(
            "/api/v1/capabilities/actions/{}",
            str_at(&ls[1], "/requestId")
        ),
        &agent,
    )
    .await;
    assert_eq!(
        receipt["ledger_row"]["key_id"], "key_buddy_campaign",
        "{receipt}"
    );
    assert_eq!(pending_actions(&s, &a).await.len(), 2);
}
