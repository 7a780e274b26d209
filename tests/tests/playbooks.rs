//! Playbook specs and runs through real HTTP: defaults, every bound, merge rules, 404s,
//! read-only 403s, runs, outcomes with adaptation pivots, and deleted playbooks' runs.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use svc_integration_tests::{expect_error, read, str_at, track, Account, TestServer};

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

fn minimal() -> Value {
    json!({"name": "Q3 CFO outbound", "mode": "outbound", "buddyId": "prospect",
           "strategy": {"hypothesis": "CFOs answer a cost-of-delay angle"}})
}

async fn create(s: &TestServer, a: &Account, body: Value) -> Value {
    let (status, v) = call(s, Method::POST, "/v1/playbooks", &a.token, Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    v["playbook"].clone()
}

async fn set_read_only(s: &TestServer, a: &Account, on: bool) {
    let (status, v) = call(
        s,
        Method::PUT,
        "/api/v1/workspace",
        &a.token,
        Some(json!({"read_only": on})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
}

#[tokio::test]
async fn create_applies_defaults_and_server_fields_and_agent_keys_read() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let pb = create(&s, &a, minimal()).await;
    assert!(str_at(&pb, "/id").starts_with("pb_"), "{pb}");
    assert_eq!(pb["status"], "draft");
    assert_eq!(
        pb["leadSource"],
        json!({"kind": "manual", "query": null, "sampleSize": 50})
    );
    assert_eq!(pb["strategy"]["kind"], "gtm-execution");
    assert_eq!(pb["strategy"]["channels"], json!([]));
    assert_eq!(
        pb["adaptation"],
        json!({"enabled": true, "minSampleSize": 50, "pivotWindowDays": 3, "maxPivotsPerWeek": 2, "judgeModel": null})
    );
    assert_eq!(pb["createdBy"], json!(a.user_id));
    assert_eq!(pb["createdAt"], pb["updatedAt"]);

    // Client-sent server fields are ignored; a valid status is taken; an invalid one is draft.
    let mut body = minimal();
    body["id"] = json!("pb_mine");
    body["createdBy"] = json!("someone");
    body["status"] = json!("active");
    let pb2 = create(&s, &a, body).await;
    assert_ne!(pb2["id"], "pb_mine");
    assert_eq!(pb2["createdBy"], json!(a.user_id));
    assert_eq!(pb2["status"], "active");
    let mut body = minimal();
    body["status"] = json!("launched");
    assert_eq!(create(&s, &a, body).await["status"], "draft");

    // An agent key with playbooks:read reads them; writing playbooks is for people (JWT).
    let key = s.reader_key(&a).await;
    let (status, v) = call(
        &s,
        Method::POST,
        "/v1/playbooks",
        &key.plaintext,
        Some(minimal()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{v}");
    assert_eq!(v["error"]["code"], "forbidden");
    let (status, list) = call(&s, Method::GET, "/v1/playbooks", &key.plaintext, None).await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<&Value> = list["playbooks"]
        .as_array()
        .expect("list")
        .iter()
        .map(|p| &p["id"])
        .collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[0], &pb["id"], "oldest first");

    // No credential: 401. Another workspace sees nothing and gets 404 for the id.
    expect_error(
        s.get("/v1/playbooks").send().await.expect("send"),
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
    )
    .await;
    let other = s.account().await;
    let (_, list) = call(&s, Method::GET, "/v1/playbooks", &other.token, None).await;
    assert_eq!(list["playbooks"], json!([]));
    let path = format!("/v1/playbooks/{}", str_at(&pb, "/id"));
    let resp = s
        .get(&path)
        .bearer_auth(&other.token)
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::NOT_FOUND, "not_found").await;
}

#[tokio::test]
async fn every_required_field_and_bound_is_a_400_naming_the_field() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let post = |body: Value| {
        let s = &s;
        let token = a.token.clone();
        async move {
            s.post("/v1/playbooks")
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .expect("send")
        }
    };
    let without = |path: &[&str]| {
        let mut b = minimal();
        let (last, parents) = path.split_last().expect("path");
        let mut at = &mut b;
        for p in parents {
            at = &mut at[*p];
        }
        at.as_object_mut().expect("object").remove(*last);
        b
    };
    for (field, body) in [
        ("name", without(&["name"])),
        ("mode", without(&["mode"])),
        ("buddyId", without(&["buddyId"])),
        ("strategy.hypothesis", without(&["strategy", "hypothesis"])),
        ("strategy.hypothesis", without(&["strategy"])),
        (
            "name",
            json!({"name": "  ", "mode": "inbound", "buddyId": "insights", "strategy": {"hypothesis": "h"}}),
        ),
        (
            "buddyId",
            json!({"name": "n", "mode": "inbound", "buddyId": "orchestrator", "strategy": {"hypothesis": "h"}}),
        ),
        (
            "mode",
            json!({"name": "n", "mode": "sideways", "buddyId": "insights", "strategy": {"hypothesis": "h"}}),
        ),
    ] {
        let v = expect_error(post(body).await, StatusCode::BAD_REQUEST, "invalid_input").await;
        assert_eq!(v["error"]["details"]["field"], field, "{v}");
    }

    // Each bound, just over (400 naming the field) and at the edge (accepted).
    let over: Vec<(&str, Value, Value)> = vec![
        (
            "name",
            json!({"name": "n".repeat(201)}),
            json!({"name": "n".repeat(200)}),
        ),
        (
            "leadSource.query",
            json!({"leadSource": {"query": "q".repeat(1001)}}),
            json!({"leadSource": {"query": "q".repeat(1000)}}),
        ),
        (
            "leadSource.sampleSize",
            json!({"leadSource": {"sampleSize": 0}}),
            json!({"leadSource": {"sampleSize": 1}}),
        ),
        (
            "leadSource.sampleSize",
            json!({"leadSource": {"sampleSize": 5001}}),
            json!({"leadSource": {"sampleSize": 5000}}),
        ),
        (
            "leadSource.sampleSize",
            json!({"leadSource": {"sampleSize": 2.5}}),
            json!({"leadSource": {"sampleSize": 2}}),
        ),
        (
            "strategy.hypothesis",
            json!({"strategy": {"hypothesis": "h".repeat(2001)}}),
            json!({"strategy": {"hypothesis": "h".repeat(2000)}}),
        ),
        (
            "strategy.channels",
            json!({"strategy": {"channels": vec!["c"; 13]}}),
            json!({"strategy": {"channels": vec!["c"; 12]}}),
        ),
        (
            "strategy.channels[1]",
            json!({"strategy": {"channels": ["ok", "c".repeat(61)]}}),
            json!({"strategy": {"channels": ["ok", "c".repeat(60)]}}),
        ),
        (
            "strategy.cadence",
            json!({"strategy": {"cadence": "c".repeat(501)}}),
            json!({"strategy": {"cadence": "c".repeat(500)}}),
        ),
        (
            "strategy.successTarget",
            json!({"strategy": {"successTarget": -0.01}}),
            json!({"strategy": {"successTarget": 0}}),
        ),
        (
            "adaptation.minSampleSize",
            json!({"adaptation": {"minSampleSize": 0}}),
            json!({"adaptation": {"minSampleSize": 1}}),
        ),
        (
            "adaptation.minSampleSize",
            json!({"adaptation": {"minSampleSize": 10001}}),
            json!({"adaptation": {"minSampleSize": 10000}}),
        ),
        (
            "adaptation.pivotWindowDays",
            json!({"adaptation": {"pivotWindowDays": 0}}),
            json!({"adaptation": {"pivotWindowDays": 1}}),
        ),
        (
            "adaptation.pivotWindowDays",
            json!({"adaptation": {"pivotWindowDays": 91}}),
            json!({"adaptation": {"pivotWindowDays": 90}}),
        ),
        (
            "adaptation.maxPivotsPerWeek",
            json!({"adaptation": {"maxPivotsPerWeek": -1}}),
            json!({"adaptation": {"maxPivotsPerWeek": 0}}),
        ),
        (
            "adaptation.maxPivotsPerWeek",
            json!({"adaptation": {"maxPivotsPerWeek": 21}}),
            json!({"adaptation": {"maxPivotsPerWeek": 20}}),
        ),
        (
            "adaptation.enabled",
            json!({"adaptation": {"enabled": "yes"}}),
            json!({"adaptation": {"enabled": false}}),
        ),
        (
            "leadSource",
            json!({"leadSource": "crm"}),
            json!({"leadSource": {}}),
        ),
    ];
    let target = create(&s, &a, minimal()).await;
    let path = format!("/v1/playbooks/{}", str_at(&target, "/id"));
    for (field, bad, edge) in over {
        // Create: the bad value refuses the whole create.
        let mut body = minimal();
        merge_into(&mut body, &bad);
        let v = expect_error(post(body).await, StatusCode::BAD_REQUEST, "invalid_input").await;
        assert_eq!(v["error"]["details"]["field"], field, "create {bad}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .expect("message")
                .starts_with(field),
            "{v}"
        );
        // Update: 400 and nothing changes.
        let resp = s
            .request(Method::PUT, &path)
            .bearer_auth(&a.token)
            .json(&bad)
            .send()
            .await
            .expect("send");
        let v = expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
        assert_eq!(v["error"]["details"]["field"], field, "update {bad}: {v}");
        // The edge value is accepted by both.
        let mut body = minimal();
        merge_into(&mut body, &edge);
        create(&s, &a, body).await;
        let (status, v) = call(&s, Method::PUT, &path, &a.token, Some(edge.clone())).await;
        assert_eq!(status, StatusCode::OK, "{edge}: {v}");
    }
}

/// Shallow-merges `patch` into `body` one level down (test helper for nested sections).
fn merge_into(body: &mut Value, patch: &Value) {
    for (k, v) in patch.as_object().expect("object") {
        match (body.get_mut(k), v) {
            (Some(Value::Object(dst)), Value::Object(src)) => {
                for (k2, v2) in src {
                    dst.insert(k2.clone(), v2.clone());
                }
            }
            _ => {
                body[k] = v.clone();
            }
        }
    }
}

#[tokio::test]
async fn update_merges_nested_sections_ignores_invalid_enums_and_drops_unknown_fields() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let mut body = minimal();
    body["leadSource"] = json!({"kind": "crm-segment", "query": "vip accounts", "sampleSize": 200});
    body["strategy"] = json!({"hypothesis": "h1", "channels": ["email", "linkedin"], "cadence": "3 touches",
                              "successMetric": "reply_rate", "successTarget": 0.15});
    body["adaptation"] = json!({"minSampleSize": 100, "judgeModel": "judge-large"});
    let pb = create(&s, &a, body).await;
    let path = format!("/v1/playbooks/{}", str_at(&pb, "/id"));
    let created_at = pb["createdAt"].clone();

    let (status, v) = call(
        &s,
        Method::PUT,
        &path,
        &a.token,
        Some(json!({
            "status": "active",
            "mode": "teleport",
            "buddyId": "orchestrator",
            "leadSource": {"sampleSize": 300, "kind": "spreadsheet"},
            "strategy": {"cadence": "weekly", "successMetric": "happiness"},
            "adaptation": {"enabled": false},
            "colour": "blue",
            "id": "pb_hijack",
            "createdBy": "mallory",
        })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let pb2 = &v["playbook"];
    assert_eq!(pb2["id"], pb["id"]);
    assert_eq!(pb2["status"], "active");
    assert_eq!(pb2["mode"], "outbound", "invalid enum ignored");
    assert_eq!(
        pb2["buddyId"], "prospect",
        "the orchestrator is never a target"
    );
    assert_eq!(
        pb2["leadSource"],
        json!({"kind": "crm-segment", "query": "vip accounts", "sampleSize": 300})
    );
    assert_eq!(pb2["strategy"]["hypothesis"], "h1");
    assert_eq!(pb2["strategy"]["channels"], json!(["email", "linkedin"]));
    assert_eq!(pb2["strategy"]["cadence"], "weekly");
    assert_eq!(pb2["strategy"]["successMetric"], "reply_rate");
    assert_eq!(pb2["strategy"]["successTarget"], 0.15);
    assert_eq!(pb2["adaptation"]["enabled"], false);
    assert_eq!(pb2["adaptation"]["minSampleSize"], 100);
    assert_eq!(pb2["adaptation"]["judgeModel"], "judge-large");
    assert!(pb2.get("colour").is_none(), "{pb2}");
    assert_eq!(pb2["createdBy"], json!(a.user_id));
    assert_eq!(pb2["createdAt"], created_at);
    assert!(pb2["updatedAt"].as_str() >= created_at.as_str());

    // The change is what a later read returns.
    let (_, again) = call(&s, Method::GET, &path, &a.token, None).await;
    assert_eq!(&again["playbook"], pb2);
}

#[tokio::test]
async fn unknown_ids_are_404_and_read_only_workspaces_refuse_every_mutation() {
    let s = TestServer::start().await;
    let a = s.account().await;
    for (method, path, body) in [
        (Method::GET, "/v1/playbooks/pb_nope", None),
        (
            Method::PUT,
            "/v1/playbooks/pb_nope",
            Some(json!({"name": "x"})),
        ),
        (Method::DELETE, "/v1/playbooks/pb_nope", None),
        (Method::POST, "/v1/playbooks/pb_nope/run", None),
        (Method::GET, "/v1/playbooks/pb_nope/runs", None),
        (Method::GET, "/v1/playbooks/pb_nope/runs/run_nope", None),
        (
            Method::POST,
            "/v1/playbooks/pb_nope/runs/run_nope/outcomes",
            Some(json!({"samples": 1, "successes": 0})),
        ),
    ] {
        let mut req = s.request(method.clone(), path).bearer_auth(&a.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        expect_error(
            req.send().await.expect("send"),
            StatusCode::NOT_FOUND,
            "not_found",
        )
        .await;
    }

    let pb = create(&s, &a, minimal()).await;
    let id = str_at(&pb, "/id");
    let (_, run) = call(
        &s,
        Method::POST,
        &format!("/v1/playbooks/{id}/run"),
        &a.token,
        None,
    )
    .await;
    let run_id = str_at(&run, "/run/id");
    set_read_only(&s, &a, true).await;
    let key = s.reader_key(&a).await;
    let mutations = [
        (Method::POST, "/v1/playbooks".to_owned(), Some(minimal())),
        (
            Method::PUT,
            format!("/v1/playbooks/{id}"),
            Some(json!({"name": "x"})),
        ),
        (Method::DELETE, format!("/v1/playbooks/{id}"), None),
        (Method::POST, format!("/v1/playbooks/{id}/run"), None),
        (
            Method::POST,
            format!("/v1/playbooks/{id}/runs/{run_id}/outcomes"),
            Some(json!({"samples": 1, "successes": 0})),
        ),
    ];
    // Dashboard users meet the read-only workspace; agent keys never write playbooks at all.
    for (token, status, code) in [
        (&a.token, StatusCode::FORBIDDEN, "read_only_workspace"),
        (&key.plaintext, StatusCode::FORBIDDEN, "forbidden"),
    ] {
        for (method, path, body) in &mutations {
            let mut req = s.request(method.clone(), path).bearer_auth(token);
            if let Some(b) = body {
                req = req.json(b);
            }
            expect_error(req.send().await.expect("send"), status, code).await;
        }
    }
    // Reads still work, and nothing changed.
    let (status, v) = call(
        &s,
        Method::GET,
        &format!("/v1/playbooks/{id}"),
        &a.token,
        None,
    )
    .await;
    assert_eq!((status, &v["playbook"]), (StatusCode::OK, &pb));
    let (_, runs) = call(
        &s,
        Method::GET,
        &format!("/v1/playbooks/{id}/runs"),
        &a.token,
        None,
    )
    .await;
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(1));
    set_read_only(&s, &a, false).await;
    let (status, _) = call(
        &s,
        Method::PUT,
        &format!("/v1/playbooks/{id}"),
        &a.token,
        Some(json!({"name": "x"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn runs_start_at_zero_list_by_start_and_survive_deletion_unlisted() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let id = str_at(&create(&s, &a, minimal()).await, "/id");
    let mut run_ids = Vec::new();
    for _ in 0..3 {
        let (status, v) = call(
            &s,
            Method::POST,
            &format!("/v1/playbooks/{id}/run"),
            &a.token,
            None,
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{v}");
        let run = &v["run"];
        assert_eq!(run["status"], "running");
        assert_eq!(run["playbookId"], json!(id));
        assert_eq!(
            run["metrics"],
            json!({"samples": 0, "successes": 0, "metricValue": 0.0, "value": 0.0})
        );
        assert_eq!(run["pivots"], json!([]));
        run_ids.push(str_at(run, "/id"));
    }
    let (_, v) = call(
        &s,
        Method::GET,
        &format!("/v1/playbooks/{id}/runs"),
        &a.token,
        None,
    )
    .await;
    let runs = v["runs"].as_array().expect("runs");
    let listed: Vec<String> = runs.iter().map(|r| str_at(r, "/id")).collect();
    assert_eq!(listed, run_ids, "ordered by startedAt");
    let starts: Vec<&str> = runs
        .iter()
        .filter_map(|r| r["startedAt"].as_str())
        .collect();
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");

    let (status, v) = call(
        &s,
        Method::DELETE,
        &format!("/v1/playbooks/{id}"),
        &a.token,
        None,
    )
    .await;
    assert_eq!((status, v), (StatusCode::OK, json!({"ok": true})));
    let resp = s
        .get(&format!("/v1/playbooks/{id}/runs"))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::NOT_FOUND, "not_found").await;
    let (status, v) = call(
        &s,
        Method::GET,
        &format!("/v1/playbooks/{id}/runs/{}", run_ids[1]),
        &a.token,
        None,
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "a deleted playbook's run stays readable: {v}"
    );
    assert_eq!(v["run"]["id"], json!(run_ids[1]));
    let resp = s
        .request(Method::DELETE, &format!("/v1/playbooks/{id}"))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::NOT_FOUND, "not_found").await;
}

#[tokio::test]
async fn outcomes_pivot_by_the_statistical_judge_within_the_spec_limits() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let mut body = minimal();
    body["strategy"]["successMetric"] = json!("reply_rate");
    body["strategy"]["successTarget"] = json!(0.2);
    body["adaptation"] =
        json!({"minSampleSize": 40, "maxPivotsPerWeek": 1, "judgeModel": "judge-large"});
    let id = str_at(&create(&s, &a, body).await, "/id");
    let (_, v) = call(
        &s,
        Method::POST,
        &format!("/v1/playbooks/{id}/run"),
        &a.token,
        None,
    )
    .await;
    let outcomes = format!("/v1/playbooks/{id}/runs/{}/outcomes", str_at(&v, "/run/id"));
    let report = |samples: u64, successes: u64| {
        let (s, outcomes, token) = (&s, outcomes.clone(), a.token.clone());
        async move {
            call(
                s,
                Method::POST,
                &outcomes,
                &token,
                Some(json!({"samples": samples, "successes": successes})),
            )
            .await
        }
    };

    // Below minSampleSize: hold, however bad the rate.
    let (status, v) = report(30, 0).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["decision"]["action"], "hold", "{v}");
    assert!(
        v["decision"]["reason"]
            .as_str()
            .expect("reason")
            .contains("30 of 40"),
        "{v}"
    );
    // 1 reply in 60 against a 20% target: the judge pivots.
    let (_, v) = report(30, 1).await;
    assert_eq!(v["decision"]["action"], "pivot", "{v}");
    let run = &v["run"];
    assert_eq!(run["metrics"]["samples"], 60);
    assert_eq!(run["metrics"]["successes"], 1);
    let pivots = run["pivots"].as_array().expect("pivots");
    assert_eq!(pivots.len(), 1);
    assert_eq!(pivots[0]["judge"], "builtin-statistical");
    assert_eq!(pivots[0]["requestedJudgeModel"], "judge-large");
    assert!(
        pivots[0]["reason"]
            .as_str()
            .expect("reason")
            .contains("Wilson"),
        "{v}"
    );
    // maxPivotsPerWeek 1: another bad window holds.
    let (_, v) = report(50, 0).await;
    assert_eq!(v["decision"]["action"], "hold", "{v}");
    assert!(
        v["decision"]["reason"]
            .as_str()
            .expect("reason")
            .contains("pivot limit"),
        "{v}"
    );
    assert_eq!(v["run"]["pivots"].as_array().map(Vec::len), Some(1));

    // Bad reports: 400 naming the field, and nothing recorded.
    let (status, v) = report(5, 6).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(v["error"]["details"]["field"], "successes");
    let (status, _) = call(
        &s,
        Method::POST,
        &outcomes,
        &a.token,
        Some(json!({"samples": -1, "successes": 0})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (_, v) = call(
        &s,
        Method::GET,
        &format!("/v1/playbooks/{id}/runs"),
        &a.token,
        None,
    )
    .await;
    assert_eq!(v["runs"][0]["metrics"]["samples"], 110);

    // Adaptation disabled: never pivots.
    let (status, _) = call(
        &s,
        Method::PUT,
        &format!("/v1/playbooks/{id}"),
        &a.token,
        Some(json!({"adaptation": {"enabled": false, "maxPivotsPerWeek": 5}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, v) = report(100, 0).await;
    assert_eq!(v["decision"]["action"], "hold", "{v}");
}

#[tokio::test]
async fn events_attributed_to_the_playbook_campaign_become_run_outcomes() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    let mut body = minimal();
    body["strategy"]["successMetric"] = json!("reply_rate");
    body["strategy"]["successTarget"] = json!(0.5);
    body["adaptation"] = json!({"minSampleSize": 3});
    let id = str_at(&create(&s, &a, body).await, "/id");
    let event = |customer: &str, action: &str, campaign: &str, props: Value| json!({"action": action, "customerId": customer, "campaignId": campaign, "properties": props});
    // Before the run started: not counted. (Timestamped in the past: an event sent in the same
    // millisecond as the run start would be indistinguishable from one just after it.)
    track(
        &s,
        &key,
        event(
            "ext-0",
            "email_sent",
            &id,
            json!({"timestamp": "2026-01-01T00:00:00Z"}),
        ),
    )
    .await;
    let (_, v) = call(
        &s,
        Method::POST,
        &format!("/v1/playbooks/{id}/run"),
        &a.token,
        None,
    )
    .await;
    let sync = format!("/v1/playbooks/{id}/runs/{}/sync", str_at(&v, "/run/id"));
    for i in 1..=4 {
        track(
            &s,
            &key,
            event(&format!("ext-{i}"), "email_sent", &id, json!({})),
        )
        .await;
    }
    // Another campaign's events are not this playbook's.
    track(
        &s,
        &key,
        event("ext-9", "email_replied", "other-campaign", json!({})),
    )
    .await;

    let (status, v) = call(&s, Method::POST, &sync, &a.token, None).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        (
            v["run"]["metrics"]["samples"].clone(),
            v["run"]["metrics"]["successes"].clone()
        ),
        (json!(4), json!(0)),
        "{v}"
    );
    assert_eq!(v["decision"]["action"], "pivot", "0 of 4 against 50%: {v}");
    // Repeating the sync adds nothing.
    let (_, v) = call(&s, Method::POST, &sync, &a.token, None).await;
    assert_eq!(v["run"]["metrics"]["samples"], 4, "{v}");
    assert_eq!(v["decision"]["action"], "hold", "{v}");

    track(&s, &key, event("ext-1", "email_replied", &id, json!({}))).await;
    track(
        &s,
        &key,
        event("ext-2", "note", &id, json!({"playbook_outcome": "success"})),
    )
    .await;
    track(&s, &key, event("ext-5", "email_sent", &id, json!({}))).await;
    let (_, v) = call(&s, Method::POST, &sync, &a.token, None).await;
    assert_eq!(
        (
            v["run"]["metrics"]["samples"].clone(),
            v["run"]["metrics"]["successes"].clone()
        ),
        (json!(5), json!(2)),
        "{v}"
    );
    assert_eq!(v["run"]["pivots"].as_array().map(Vec::len), Some(1));

    let resp = s
        .post(&format!("/v1/playbooks/{id}/runs/run_nope/sync"))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::NOT_FOUND, "not_found").await;
}
