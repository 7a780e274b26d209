//! Chat (`POST /v1/chat`, server-sent events) with the built-in agent and with a model behind
//! the `llm` integration: a local OpenAI-compatible server (`svc_integration_tests::llm`) that
//! checks `Authorization: Bearer`, records every request and answers scripted completions
//! (tool calls included).

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use svc_integration_tests::llm::{text, tool_call, LlmServer};
use svc_integration_tests::{expect_error, get_ok, read, str_at, Account, Key, TestServer};

// ---- helpers ----

/// Posts a chat turn; asserts an event stream and returns its events in order.
async fn chat(s: &TestServer, a: &Account, body: Value) -> Vec<(String, Value)> {
    let resp = s
        .post("/v1/chat")
        .bearer_auth(&a.token)
        .json(&body)
        .send()
        .await
        .expect("chat");
    assert_eq!(resp.status(), StatusCode::OK);
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(ct.starts_with("text/event-stream"), "{ct}");
    let body = resp.text().await.expect("stream");
    let mut events = Vec::new();
    for block in body.split("\n\n") {
        let (mut name, mut data) = (None, String::new());
        for line in block.lines() {
            if let Some(n) = line.strip_prefix("event:") {
                name = Some(n.trim().to_owned());
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push_str(d.strip_prefix(' ').unwrap_or(d));
            }
        }
        if let Some(name) = name {
            events.push((
                name,
                serde_json::from_str(&data).expect("event data is JSON"),
            ));
        }
    }
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"turn.started"), "{names:?}");
    assert_eq!(names.last(), Some(&"turn.completed"), "{names:?}");
    assert!(names.contains(&"message.delta"), "{names:?}");
    events
}

fn of<'a>(events: &'a [(String, Value)], name: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, v)| v)
        .collect()
}

fn turn(events: &[(String, Value)]) -> Value {
    let t = events.last().expect("events").1.clone();
    // The deltas add up to the answer.
    let streamed: String = of(events, "message.delta")
        .iter()
        .map(|d| d["text"].as_str().expect("delta text"))
        .collect();
    assert_eq!(streamed, str_at(&t, "/message"));
    t
}

async fn identify(s: &TestServer, key: &Key, body: Value) -> String {
    let resp = s
        .post("/api/v1/events/identify")
        .header("x-api-key", &key.plaintext)
        .json(&body)
        .send()
        .await
        .expect("identify");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    str_at(&v, "/customer_id")
}

async fn put_json(s: &TestServer, a: &Account, path: &str, body: Value) -> Value {
    let resp = s
        .request(Method::PUT, path)
        .bearer_auth(&a.token)
        .json(&body)
        .send()
        .await
        .expect("put");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "PUT {path}: {v}");
    v
}

/// The receipt of an internal invocation, read with an agent key of the workspace.
async fn receipt(s: &TestServer, key: &Key, request_id: &str) -> Value {
    get_ok(
        s,
        &format!("/api/v1/capabilities/actions/{request_id}"),
        &key.plaintext,
    )
    .await
}

async fn workspace_credits_used(s: &TestServer, key: &Key) -> u64 {
    get_ok(s, "/api/v1/capabilities/usage/actions", &key.plaintext).await["workspace_used"]
        .as_u64()
        .expect("workspace_used")
}

// ---- the built-in agent ----

#[tokio::test]
async fn builtin_agent_scores_real_customers_drafts_in_the_brand_voice_and_stores_the_session() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.reader_key(&a).await;
    let people = [
        ("Ada Lovelace", "ada@example.com"),
        ("Grace Hopper", "grace@example.com"),
        ("Alan Turing", "alan@example.com"),
    ];
    for (name, email) in people {
        identify(&s, &key, json!({"email": email, "name": name})).await;
    }
    // A customer whose churn score is already stored: read, not recomputed.
    identify(
        &s,
        &key,
        json!({"email": "stored@example.com", "name": "Stored Score",
               "properties": {"churnScore": 0.99}}),
    )
    .await;

    let events = chat(
        &s,
        &a,
        json!({"message": "Who is likely to churn this week?"}),
    )
    .await;
    let route = of(&events, "route");
    assert_eq!(route.len(), 1);
    assert_eq!(route[0]["buddy_id"], "insights");
    assert_eq!(route[0]["by"], "rules");
    let t = turn(&events);
    assert_eq!(t["agent"], "builtin");
    assert_eq!(t["status"], "completed");
    let answer = str_at(&t, "/message");
    assert!(answer.starts_with("Built-in agent"), "{answer}");
    for (_, email) in people {
        assert!(answer.contains(email), "{email} missing from {answer}");
    }
    assert!(
        answer.contains("1. Stored Score <stored@example.com>: 0.99 (high)"),
        "{answer}"
    );
    let calls = t["tool_calls"].as_array().expect("tool calls");
    assert_eq!(calls.len(), 3, "{t}");
    assert_eq!(of(&events, "tool_call").len(), 3);
    for c in calls {
        assert_eq!(c["capability"], "score.churn");
        assert_eq!(c["status"], "committed");
        let r = receipt(&s, &key, c["request_id"].as_str().expect("id")).await;
        assert_eq!(r["ledger_row"]["source"], "internal", "{r}");
        assert_eq!(r["ledger_row"]["agent"], "insights", "{r}");
        assert_eq!(r["ledger_row"]["key_id"], "int_insights", "{r}");
    }
    let used_after_scores = workspace_credits_used(&s, &key).await;
    assert_eq!(used_after_scores, 3, "score.churn costs 1 credit each");
    // The buddies' principals are not keys anyone holds.
    let keys = get_ok(&s, "/api/v1/keys", &a.token).await;
    assert!(keys["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .all(|k| !k["id"].as_str().unwrap_or_default().starts_with("int_")));
    let resp = s
        .request(Method::DELETE, "/api/v1/keys/int_insights")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("revoke");
    expect_error(resp, StatusCode::NOT_FOUND, "not_found").await;

    // A draft in the brand voice, in the same session.
    put_json(
        &s,
        &a,
        "/v1/brand-context",
        json!({"businessName": "Acme Rockets", "voice": {"formality": 5, "energy": 2}}),
    )
    .await;
    let session_id = str_at(&t, "/session_id");
    let events = chat(
        &s,
        &a,
        json!({"message": "Draft an email to Ada Lovelace about pricing", "session_id": session_id}),
    )
    .await;
    assert_eq!(of(&events, "route")[0]["buddy_id"], "campaign");
    let t = turn(&events);
    assert_eq!(t["tool_calls"][0]["capability"], "draft.outreach");
    assert_eq!(t["tool_calls"][0]["status"], "committed");
    let draft = &of(&events, "tool_result")[0]["result"];
    assert_eq!(draft["voice"]["formality"], 5, "{draft}");
    let answer = str_at(&t, "/message");
    assert!(answer.starts_with("Built-in agent"), "{answer}");
    assert!(answer.contains("formality 5"), "{answer}");
    assert!(answer.contains("Acme Rockets"), "{answer}");
    assert!(
        answer.contains(draft["body_text"].as_str().expect("body")),
        "{answer}"
    );

    // The session holds every step in order.
    let list = get_ok(&s, "/v1/chat/sessions", &a.token).await;
    assert_eq!(list["sessions"][0]["id"], json!(session_id));
    assert_eq!(list["sessions"][0]["turns"], 2);
    let view = get_ok(&s, &format!("/v1/chat/sessions/{session_id}"), &a.token).await;
    let roles: Vec<&str> = view["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().expect("role"))
        .collect();
    let mut expected = vec!["user", "route"];
    expected.extend(["tool_call", "tool_result"].repeat(3));
    expected.extend([
        "assistant",
        "user",
        "route",
        "tool_call",
        "tool_result",
        "assistant",
    ]);
    assert_eq!(roles, expected);

    // Recent reasoning shows the real answers, not the synthetic feed.
    let feed = get_ok(&s, "/v1/reporting/recent-reasoning", &a.token).await;
    let entries = feed["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 2, "{feed}");
    assert_eq!(entries[0]["buddyId"], "insights");
    assert_eq!(entries[1]["buddyId"], "campaign");
    assert_eq!(entries[1]["sessionId"], json!(session_id));

    let resp = s
        .get("/v1/chat/sessions/chs_nope")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("get");
    expect_error(resp, StatusCode::NOT_FOUND, "not_found").await;
}

#[tokio::test]
async fn chat_sessions_are_paged_with_their_total() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let events = chat(
            &s,
            &a,
            json!({"message": format!("Who is likely to churn? ({i})")}),
        )
        .await;
        ids.push(str_at(&turn(&events), "/session_id"));
    }
    let page = get_ok(&s, "/v1/chat/sessions?limit=2", &a.token).await;
    assert_eq!(page["total"], 3, "{page}");
    assert_eq!(page["limit"], 2);
    let got: Vec<&str> = page["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    assert_eq!(got, [ids[2].as_str(), ids[1].as_str()], "newest first");
    let rest = get_ok(&s, "/v1/chat/sessions?offset=2&limit=2", &a.token).await;
    assert_eq!(rest["sessions"][0]["id"], json!(ids[0]));
    assert_eq!(rest["sessions"].as_array().map(Vec::len), Some(1));
    for bad in ["limit=0", "limit=501", "offset=-1"] {
        let resp = s
            .get(&format!("/v1/chat/sessions?{bad}"))
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("get");
        expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
    }
    // Another workspace sees none of them.
    let b = s.account().await;
    let other = get_ok(&s, "/v1/chat/sessions", &b.token).await;
    assert_eq!(other["total"], 0, "{other}");
}

#[tokio::test]
async fn builtin_agent_queues_outreach_for_approval_and_refuses_bad_requests() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.reader_key(&a).await;
    identify(&s, &key, json!({"email": "ada@example.com", "name": "Ada"})).await;
    // Queueing needs SMTP connected (it is never reached: nothing is sent before approval).
    put_json(
        &s,
        &a,
        "/api/v1/integrations/smtp",
        json!({"host": "127.0.0.1", "port": 2525, "security": "none",
               "from": "Acme <growth@acme.test>"}),
    )
    .await;

    let events = chat(
        &s,
        &a,
        json!({"message": "Queue an email to ada@example.com about the renewal"}),
    )
    .await;
    let t = turn(&events);
    let calls: Vec<(&str, &str)> = t["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| {
            (
                c["capability"].as_str().expect("capability"),
                c["status"].as_str().expect("status"),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("draft.outreach", "committed"),
            ("queue.outreach", "queued")
        ]
    );
    let pending = str_at(&t, "/pending_action_ids/0");
    let answer = str_at(&t, "/message");
    assert!(
        answer.contains("needs approval") && answer.contains(&pending),
        "{answer}"
    );
    let approvals = get_ok(&s, "/api/v1/approvals?status=pending", &a.token).await;
    let action = &approvals["actions"][0];
    assert_eq!(action["id"], json!(pending));
    assert_eq!(action["agent"], "campaign");
    assert_eq!(action["capability"], "queue.outreach");

    // Small talk: the orchestrator answers itself, with no tool call.
    let t = turn(&chat(&s, &a, json!({"message": "hello"})).await);
    assert_eq!(t["buddy_id"], "orchestrator");
    assert_eq!(t["tool_calls"], json!([]));
    assert!(str_at(&t, "/message").starts_with("Built-in agent"));

    for (body, status, code) in [
        (
            json!({"message": "  "}),
            StatusCode::BAD_REQUEST,
            "invalid_input",
        ),
        (
            json!({"message": "hi", "buddy": "boss"}),
            StatusCode::BAD_REQUEST,
            "invalid_input",
        ),
        (
            json!({"message": "hi", "extra": 1}),
            StatusCode::BAD_REQUEST,
            "invalid_input",
        ),
        (
            json!({"message": "hi", "session_id": "chs_nope"}),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
    ] {
        let resp = s
            .post("/v1/chat")
            .bearer_auth(&a.token)
            .json(&body)
            .send()
            .await
            .expect("chat");
        expect_error(resp, status, code).await;
    }
    let resp = s
        .post("/v1/chat")
        .bearer_auth(&key.plaintext)
        .json(&json!({"message": "hi"}))
        .send()
        .await
        .expect("chat");
    expect_error(resp, StatusCode::FORBIDDEN, "forbidden").await;

    // A read-only workspace takes no turn, new session or not.
    let session_id = str_at(&t, "/session_id");
    put_json(&s, &a, "/api/v1/workspace", json!({"read_only": true})).await;
    for body in [
        json!({"message": "hi"}),
        json!({"message": "hi", "session_id": session_id}),
    ] {
        let resp = s
            .post("/v1/chat")
            .bearer_auth(&a.token)
            .json(&body)
            .send()
            .await
            .expect("chat");
        expect_error(resp, StatusCode::FORBIDDEN, "read_only_workspace").await;
    }
}

// ---- a model behind the llm integration ----

#[tokio::test]
async fn model_routes_calls_tools_through_the_gateway_and_leaves_gated_actions_pending() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.reader_key(&a).await;
    let cid = identify(&s, &key, json!({"email": "ada@example.com", "name": "Ada"})).await;
    let llm = LlmServer::start().await;

    // A wrong key fails the live test; the right one passes.
    let mut wrong = llm.config(5);
    wrong["api_key"] = json!("sk-wrong-0123456789");
    put_json(&s, &a, "/api/v1/integrations/llm", wrong).await;
    let test = s
        .post("/api/v1/integrations/llm/test")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("test");
    let (_, v) = read(test).await;
    assert_eq!(v["ok"], false, "{v}");
    let view = put_json(&s, &a, "/api/v1/integrations/llm", llm.config(5)).await;
    assert!(
        !view.to_string().contains(llm.api_key()),
        "the key is masked: {view}"
    );
    let test = s
        .post("/api/v1/integrations/llm/test")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("test");
    let (_, v) = read(test).await;
    assert_eq!(v["ok"], true, "{v}");
    llm.take_requests();

    llm.script(vec![
        tool_call(
            "route_to_buddy",
            json!({"buddy": "pipeline", "reason": "a CRM change"}),
        ),
        tool_call(
            "get_customer_context",
            json!({"customer": "ada@example.com"}),
        ),
        tool_call(
            "mutate_crm",
            json!({"customer": cid, "set": {"tier": "gold"}, "_mode": "execute"}),
        ),
        text("Ada is a lead; I asked to set her tier to gold."),
    ]);
    let before = workspace_credits_used(&s, &key).await;
    let events = chat(&s, &a, json!({"message": "Make Ada a gold-tier customer"})).await;
    let route = of(&events, "route");
    assert_eq!(route[0]["buddy_id"], "pipeline");
    assert_eq!(route[0]["by"], "model");
    assert_eq!(route[0]["reason"], "a CRM change");
    let t = turn(&events);
    assert_eq!(t["agent"], "llm");
    assert_eq!(t["model"], "test-model");
    assert_eq!(t["status"], "completed");
    let results = of(&events, "tool_result");
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["capability"], "context.get");
    assert_eq!(results[0]["status"], "committed");
    assert_eq!(results[0]["result"]["customer_id"], json!(cid));
    assert_eq!(results[1]["capability"], "crm.mutate");
    assert_eq!(results[1]["status"], "queued", "gated: waits for a person");
    let pending = str_at(results[1], "/pending_action_id");
    let answer = str_at(&t, "/message");
    assert!(answer.starts_with("Ada is a lead"), "{answer}");
    assert!(
        answer.contains(&pending),
        "the chat says it waits: {answer}"
    );
    assert_eq!(
        t["usage"]["total_tokens"], 440,
        "four model calls of 110 tokens"
    );
    assert_eq!(t["usage"]["model_calls"], 4);
    // Credits: context.get 1, crm.mutate 2 when queued.
    assert_eq!(workspace_credits_used(&s, &key).await - before, 3);
    for r in &results {
        let rec = receipt(&s, &key, r["request_id"].as_str().expect("id")).await;
        assert_eq!(rec["ledger_row"]["source"], "internal");
        assert_eq!(rec["ledger_row"]["agent"], "pipeline");
    }

    // What the model was sent: the routing tool, then the buddy's prompt and its tools.
    let requests = llm.take_requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        requests[0]["tools"][0]["function"]["name"],
        "route_to_buddy"
    );
    let system = str_at(&requests[1], "/messages/0/content");
    assert!(system.contains("You are Pipeline"), "{system}");
    let tools: Vec<&str> = requests[1]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["function"]["name"].as_str().expect("name"))
        .collect();
    assert!(tools.contains(&"get_customer_context") && tools.contains(&"mutate_crm"));
    assert!(
        !tools.contains(&"queue_outreach"),
        "not the pipeline role: {tools:?}"
    );
    let tool_reply = requests[2]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("tool message");
    assert_eq!(tool_reply["tool_call_id"], "call_get_customer_context");

    // A person approves; the action runs with the buddy's principal.
    let done = s
        .post(&format!("/api/v1/approvals/{pending}/approve"))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("approve");
    let (status, done) = read(done).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["status"], "executed", "{done}");

    // The buddies' principals have auto_run (docs/agents.md): once the workspace's policy
    // auto-approves crm.mutate, the buddy's execute commits without waiting.
    put_json(
        &s,
        &a,
        "/api/v1/workspace",
        json!({"policy": {"auto_approve": ["crm.mutate"]}}),
    )
    .await;
    llm.script(vec![
        tool_call(
            "mutate_crm",
            json!({"customer": cid, "set": {"tier": "platinum"}, "_mode": "execute"}),
        ),
        text("Done: Ada is platinum."),
    ]);
    let events = chat(
        &s,
        &a,
        json!({"message": "Make Ada platinum", "buddy": "pipeline"}),
    )
    .await;
    let results = of(&events, "tool_result");
    assert_eq!(results[0]["capability"], "crm.mutate");
    assert_eq!(
        results[0]["status"], "committed",
        "auto-approved: {results:?}"
    );
    assert!(turn(&events)["pending_action_ids"]
        .as_array()
        .is_some_and(Vec::is_empty));
    llm.take_requests();

    // A brand change applies from the next turn: the prompt is assembled at each turn.
    assert!(!system.contains("Zephyr Labs"));
    put_json(
        &s,
        &a,
        "/v1/brand-context",
        json!({"businessName": "Zephyr Labs"}),
    )
    .await;
    llm.script(vec![text("Noted.")]);
    let t = turn(
        &chat(
            &s,
            &a,
            json!({"message": "Anything else?", "buddy": "pipeline",
                   "session_id": t["session_id"]}),
        )
        .await,
    );
    assert_eq!(t["routed_by"], "request");
    let requests = llm.take_requests();
    assert_eq!(
        requests.len(),
        1,
        "no routing call when the user names the buddy"
    );
    let system = str_at(&requests[0], "/messages/0/content");
    let brand = system.find("Zephyr Labs").expect("brand block");
    let persona = system.find("You are Pipeline").expect("persona");
    let base = system
        .find("You are part of a customer")
        .expect("base prompt");
    let playbooks = system.find("## Playbooks").expect("playbook block");
    assert!(
        brand < persona && persona < base && base < playbooks,
        "{system}"
    );
    // The earlier exchange is in the conversation the model sees.
    let messages = requests[0]["messages"].as_array().expect("messages");
    assert_eq!(messages[1]["content"], "Make Ada a gold-tier customer");
    assert_eq!(messages.last().expect("last")["content"], "Anything else?");
}

#[tokio::test]
async fn model_turns_stop_at_the_step_budget_and_at_the_provider_timeout() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.reader_key(&a).await;
    identify(&s, &key, json!({"email": "ada@example.com", "name": "Ada"})).await;
    let llm = LlmServer::start().await;
    put_json(&s, &a, "/api/v1/integrations/llm", llm.config(1)).await;

    // A model that never stops calling tools gets 8 calls, then the turn ends.
    llm.script_forever(tool_call(
        "get_customer_context",
        json!({"customer": "ada@example.com"}),
    ));
    let events = chat(
        &s,
        &a,
        json!({"message": "Dig into Ada", "buddy": "insights"}),
    )
    .await;
    assert_eq!(of(&events, "tool_call").len(), 8);
    let t = turn(&events);
    assert_eq!(t["tool_calls"].as_array().map(Vec::len), Some(8));
    assert_eq!(t["status"], "completed");
    assert!(
        str_at(&t, "/message").contains("budget of 8 tool calls"),
        "{t}"
    );
    assert_eq!(t["usage"]["model_calls"], 9);
    assert_eq!(llm.take_requests().len(), 9);

    // A provider slower than timeout_s (1 s): the turn fails cleanly and is stored.
    llm.script(vec![text("too late")]);
    llm.delay(Duration::from_secs(3));
    let started = Instant::now();
    let events = chat(&s, &a, json!({"message": "Hello?", "buddy": "insights"})).await;
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "{:?}",
        started.elapsed()
    );
    let t = turn(&events);
    assert_eq!(t["status"], "failed");
    assert_eq!(t["error"]["code"], "provider_timeout", "{t}");
    assert!(str_at(&t, "/message").contains("within 1 s"), "{t}");
    let view = get_ok(
        &s,
        &format!("/v1/chat/sessions/{}", str_at(&t, "/session_id")),
        &a.token,
    )
    .await;
    let last = view["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .expect("stored");
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["data"]["status"], "failed");

    // A client that hangs up after the first event: the turn still finishes and is stored.
    llm.script(vec![text("Finished without you.")]);
    llm.delay(Duration::from_millis(400));
    let mut resp = s
        .post("/v1/chat")
        .bearer_auth(&a.token)
        .json(&json!({"message": "Still there?", "buddy": "insights"}))
        .send()
        .await
        .expect("chat");
    let first = resp.chunk().await.expect("read").expect("first event");
    drop(resp);
    let first = String::from_utf8_lossy(&first).into_owned();
    assert!(first.contains("turn.started"), "{first}");
    let data = first
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .expect("data line");
    let started: Value = serde_json::from_str(data.trim()).expect("json");
    let path = format!("/v1/chat/sessions/{}", str_at(&started, "/session_id"));
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let view = get_ok(&s, &path, &a.token).await;
        let last = view["messages"].as_array().and_then(|m| m.last().cloned());
        if let Some(m) = last.filter(|m| m["role"] == "assistant") {
            assert_eq!(m["text"], "Finished without you.");
            assert_eq!(m["data"]["status"], "completed");
            break;
        }
        assert!(Instant::now() < deadline, "the turn was not stored: {view}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
