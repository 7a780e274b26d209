//! The pipeline in the graph through real HTTP: generic events, HubSpot deal webhooks and
//! Stripe payments create and move opportunities; `/v1/opportunities`, the reporting summary's
//! pipeline figures and context.get's lifecycle stage come from them; crm.mutate's opportunity
//! operations through the gateway (credits, receipts); context.get's sentiment, intent and
//! blockers from the customer's own words, each naming its touchpoint.

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::{
    expect_error, get_ok, grant, invoke_path, read, str_at, track, Account, Capability, TestServer,
};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

fn ago_days(days: i64) -> String {
    (OffsetDateTime::now_utc() - time::Duration::days(days))
        .format(&Rfc3339)
        .expect("format")
}

async fn deliver(s: &TestServer, key: &str, platform: &str, body: Value) -> Value {
    let resp = s
        .post(&format!("/api/webhooks/{platform}"))
        .header("x-api-key", key)
        .json(&body)
        .send()
        .await
        .expect("send");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{platform}: {v}");
    assert_eq!(v["failed"], 0, "{platform}: {v}");
    v
}

/// The listed opportunity with this id.
async fn opportunity(s: &TestServer, a: &Account, id: &str) -> Value {
    let list = get_ok(s, "/v1/opportunities", &a.token).await;
    list["opportunities"]
        .as_array()
        .expect("list")
        .iter()
        .find(|o| o["opportunityId"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no opportunity {id} in {list}"))
}

async fn invoke(s: &TestServer, key: &str, cap: Capability, body: Value) -> (StatusCode, Value) {
    let resp = s
        .post(&invoke_path(cap))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .expect("send");
    read(resp).await
}

async fn context(s: &TestServer, key: &str, customer: &str) -> Value {
    let (status, v) = invoke(
        s,
        key,
        Capability::ContextGet,
        json!({"input": {"customer": customer}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v["result"].clone()
}

/// A key that runs crm.mutate at once (auto_run plus the workspace's auto-approval).
async fn crm_key(s: &TestServer, a: &Account) -> String {
    let resp = s
        .request(reqwest::Method::PUT, "/api/v1/workspace")
        .bearer_auth(&a.token)
        .json(&json!({"policy": {"auto_approve": [Capability::CrmMutate.id()]}}))
        .send()
        .await
        .expect("policy");
    assert_eq!(resp.status(), StatusCode::OK);
    s.mint_key(
        a,
        json!({"name": "crm", "agent": "crm-bot", "allowed_modes": ["dry_run", "execute"],
               "auto_run": true,
               "grants": [grant(Capability::CrmMutate), grant(Capability::ContextGet)]}),
    )
    .await
    .plaintext
}

#[tokio::test]
async fn events_and_webhooks_build_the_pipeline() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;

    // Generic events: created, then moved; an amount as text is read as a number.
    let created = track(
        &s,
        &key,
        json!({"action": "opportunity_created", "customerId": "acme-1",
               "properties": {"opportunityId": "D-1", "name": "Acme pilot", "amount": 1200,
                              "stage": "proposal"}}),
    )
    .await;
    let acme = str_at(&created, "/customer_id");
    let o = opportunity(&s, &a, "D-1").await;
    assert_eq!(
        (
            &o["name"],
            &o["stage"],
            &o["status"],
            &o["amount"],
            &o["customer_id"]
        ),
        (
            &json!("Acme pilot"),
            &json!("proposal"),
            &json!("open"),
            &json!(1200),
            &json!(acme)
        )
    );
    track(
        &s,
        &key,
        json!({"action": "opportunity_stage_changed", "customerId": "acme-1",
               "properties": {"opportunityId": "D-1", "stage": "negotiation", "amount": "1500"}}),
    )
    .await;
    track(
        &s,
        &key,
        json!({"action": "opportunity_created", "customerId": "acme-1",
               "properties": {"opportunityId": "D-2", "amount": 300, "stage": "discovery"}}),
    )
    .await;
    let o = opportunity(&s, &a, "D-1").await;
    assert_eq!(
        (&o["stage"], &o["amount"]),
        (&json!("negotiation"), &json!(1500))
    );
    // The stage-change event is the history record: from and to.
    let timeline = get_ok(&s, &format!("/v1/customers/{acme}/timeline"), &a.token).await;
    let moved = timeline["touchpoints"]
        .as_array()
        .expect("touchpoints")
        .iter()
        .find(|t| t["action"] == "opportunity_stage_changed")
        .cloned()
        .expect("history");
    assert_eq!(moved["properties"]["fromStage"], "proposal");
    assert_eq!(moved["properties"]["toStage"], "negotiation");

    let summary = get_ok(&s, "/v1/reporting/summary", &a.token).await;
    assert_eq!(
        (&summary["pipelineArr"], &summary["openTasks"]),
        (&json!(1800), &json!(2)),
        "{summary}"
    );
    let ctx = context(&s, &key, &acme).await;
    assert_eq!(
        ctx["lifecycle_stage"], "opportunity",
        "an open opportunity: {ctx}"
    );
    // D-2 is lost: out of the pipeline.
    track(
        &s,
        &key,
        json!({"action": "opportunity_stage_changed", "customerId": "acme-1",
               "properties": {"opportunityId": "D-2", "stage": "closed_lost"}}),
    )
    .await;
    assert_eq!(opportunity(&s, &a, "D-2").await["status"], "lost");
    let summary = get_ok(&s, "/v1/reporting/summary", &a.token).await;
    assert_eq!(
        (&summary["pipelineArr"], &summary["openTasks"]),
        (&json!(1500), &json!(1))
    );
    // An opportunity event without its id is refused, clearly.
    let resp = s
        .post("/api/v1/events/track")
        .header("x-api-key", &key)
        .json(&json!({"action": "opportunity_created", "customerId": "acme-1"}))
        .send()
        .await
        .expect("send");
    let err = expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
    assert!(
        str_at(&err, "/error/message").contains("opportunityId"),
        "{err}"
    );

    // HubSpot: a deal created before its contact is known, then associated, then moved.
    deliver(
        &s,
        &key,
        "hubspot",
        json!([{"eventId": 100, "subscriptionType": "deal.creation", "objectId": 9001,
                "portalId": 33, "occurredAt": 1_767_323_000_000_i64}]),
    )
    .await;
    let contact = deliver(
        &s,
        &key,
        "hubspot",
        json!([{"eventId": 101, "subscriptionType": "contact.creation", "objectId": 501,
                "occurredAt": 1_767_323_001_000_i64}]),
    )
    .await;
    let hub_customer = str_at(&contact, "/results/0/result/customer_id");
    deliver(
        &s,
        &key,
        "hubspot",
        json!([{"eventId": 102, "subscriptionType": "deal.associationChange",
                "associationType": "DEAL_TO_CONTACT", "fromObjectId": 9001, "toObjectId": 501,
                "associationRemoved": false, "occurredAt": 1_767_323_002_000_i64}]),
    )
    .await;
    let moves = deliver(
        &s,
        &key,
        "hubspot",
        json!([
            {"eventId": 103, "subscriptionType": "deal.propertyChange", "objectId": 9001,
             "propertyName": "amount", "propertyValue": "5000", "occurredAt": 1_767_323_003_000_i64},
            {"eventId": 104, "subscriptionType": "deal.propertyChange", "objectId": 9001,
             "propertyName": "dealstage", "propertyValue": "contractsent",
             "occurredAt": 1_767_323_004_000_i64},
            {"eventId": 105, "subscriptionType": "deal.propertyChange", "objectId": 9001,
             "propertyName": "dealstage", "propertyValue": "closedwon",
             "occurredAt": 1_767_323_005_000_i64}
        ]),
    )
    .await;
    // Deal events follow the deal's owner: the contact's customer.
    for i in 0..3 {
        assert_eq!(
            str_at(&moves, &format!("/results/{i}/result/customer_id")),
            hub_customer
        );
    }
    let deal = opportunity(&s, &a, "hubspot:9001").await;
    assert_eq!(
        (
            &deal["stage"],
            &deal["status"],
            &deal["amount"],
            &deal["customer_id"]
        ),
        (
            &json!("closedwon"),
            &json!("won"),
            &json!(5000),
            &json!(hub_customer)
        )
    );
    let timeline = get_ok(
        &s,
        &format!("/v1/customers/{hub_customer}/timeline"),
        &a.token,
    )
    .await;
    let history: Vec<(Value, Value)> = timeline["touchpoints"]
        .as_array()
        .expect("touchpoints")
        .iter()
        .filter(|t| t["action"] == "opportunity_stage_changed")
        .map(|t| {
            (
                t["properties"]["fromStage"].clone(),
                t["properties"]["toStage"].clone(),
            )
        })
        .collect();
    assert_eq!(
        history,
        [
            (Value::Null, json!("contractsent")),
            (json!("contractsent"), json!("closedwon"))
        ]
    );
    // The placeholder customer of the early deal event was merged into the contact's.
    assert!(timeline["touchpoints"]
        .as_array()
        .expect("touchpoints")
        .iter()
        .any(|t| t["action"] == "hubspot.deal.creation"));
    let ctx = context(&s, &key, &hub_customer).await;
    assert_eq!(ctx["lifecycle_stage"], "customer", "a won deal: {ctx}");

    // Stripe: a paid invoice is a won opportunity, in currency units.
    deliver(
        &s,
        &key,
        "stripe",
        json!({"id": "evt_pay_1", "object": "event", "type": "invoice.paid",
               "created": 1_767_400_000,
               "data": {"object": {"id": "in_1", "object": "invoice", "customer": "cus_S9",
                                   "customer_email": "payer@x.io", "subscription": "sub_9",
                                   "amount_paid": 4900, "currency": "usd"}}}),
    )
    .await;
    let paid = opportunity(&s, &a, "stripe:sub_9").await;
    assert_eq!(
        (&paid["status"], &paid["amount"]),
        (&json!("won"), &json!(49))
    );
    // Won opportunities are not pipeline.
    let summary = get_ok(&s, "/v1/reporting/summary", &a.token).await;
    assert_eq!(summary["pipelineArr"], 1500, "{summary}");
    // An active subscription is won, with its amount per period; a trialing one is open.
    for (id, status) in [("sub_A", "active"), ("sub_T", "trialing")] {
        deliver(
            &s,
            &key,
            "stripe",
            json!({"id": format!("evt_{id}"), "object": "event",
                   "type": "customer.subscription.created", "created": 1_767_400_100,
                   "data": {"object": {"id": id, "object": "subscription", "customer": "cus_S9",
                     "status": status, "currency": "usd",
                     "items": {"data": [{"price": {"unit_amount": 2500}, "quantity": 2}]}}}}),
        )
        .await;
    }
    let active = opportunity(&s, &a, "stripe:sub_A").await;
    assert_eq!(
        (&active["status"], &active["amount"]),
        (&json!("won"), &json!(50))
    );
    let trial = opportunity(&s, &a, "stripe:sub_T").await;
    assert_eq!(
        (&trial["status"], &trial["stage"]),
        (&json!("open"), &json!("trialing"))
    );
    let summary = get_ok(&s, "/v1/reporting/summary", &a.token).await;
    assert_eq!(
        (&summary["pipelineArr"], &summary["openTasks"]),
        (&json!(1550), &json!(2))
    );

    // Unscored opportunities are listed by amount, largest first.
    let list = get_ok(&s, "/v1/opportunities", &a.token).await;
    let order: Vec<&str> = list["opportunities"]
        .as_array()
        .expect("list")
        .iter()
        .map(|o| o["opportunityId"].as_str().expect("id"))
        .collect();
    assert_eq!(
        order,
        [
            "hubspot:9001",
            "D-1",
            "D-2",
            "stripe:sub_A",
            "stripe:sub_T",
            "stripe:sub_9"
        ]
    );

    // Another workspace sees none of it.
    let b = s.account().await;
    let other = get_ok(&s, "/v1/opportunities", &b.token).await;
    assert_eq!(other["opportunities"], json!([]));
}

#[tokio::test]
async fn concurrent_deliveries_for_one_deal_make_one_opportunity() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    let sends = (0..8).map(|i| {
        let stage = if i % 2 == 0 {
            "proposal"
        } else {
            "negotiation"
        };
        track(
            &s,
            &key,
            json!({"action": "opportunity_stage_changed", "customerId": "race-1",
                   "properties": {"opportunityId": "R-1", "stage": stage, "amount": 100 + i}}),
        )
    });
    futures_util::future::join_all(sends).await;
    let list = get_ok(&s, "/v1/opportunities", &a.token).await;
    let all = list["opportunities"].as_array().expect("list");
    assert_eq!(all.len(), 1, "{list}");
    assert_eq!(all[0]["opportunityId"], "R-1");
    let q = s
        .post("/v1/graph/query")
        .bearer_auth(&a.token)
        .json(
            &json!({"query": "MATCH (o:Opportunity)-[r:AT_STAGE]->(:Stage) RETURN count(r) AS n"}),
        )
        .send()
        .await
        .expect("query");
    let (status, v) = read(q).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["rows"], json!([[1]]), "one stage at a time: {v}");
}

#[tokio::test]
async fn crm_mutate_operates_on_opportunities_through_the_gateway() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let agent = s.agent_key(&a).await.plaintext;
    let cid = str_at(
        &track(
            &s,
            &agent,
            json!({"action": "signup", "email": "buyer@x.io"}),
        )
        .await,
        "/customer_id",
    );
    let key = crm_key(&s, &a).await;
    let mutate = |input: Value, mode: &str| {
        invoke(
            &s,
            &key,
            Capability::CrmMutate,
            json!({"mode": mode, "input": input}),
        )
    };

    // A preview writes nothing and costs nothing.
    let (status, preview) = mutate(
        json!({"customer": cid, "opportunity": {"op": "create", "opportunityId": "Q-1",
               "amount": 800, "stage": "discovery"}}),
        "dry_run",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    assert_eq!(preview["result"]["would_apply"]["opportunityId"], "Q-1");
    assert_eq!(
        get_ok(&s, "/v1/opportunities", &a.token).await["opportunities"],
        json!([])
    );

    let (status, env) = mutate(
        json!({"customer": cid, "opportunity": {"op": "create", "opportunityId": "Q-1",
               "name": "Buyer rollout", "amount": 800, "stage": "discovery"}}),
        "execute",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{env}");
    assert_eq!(env["status"], "committed");
    assert_eq!(env["action_credit_cost"], 2);
    assert_eq!(env["result"]["opportunity"]["status"], "open");
    assert_eq!(
        get_ok(&s, "/v1/reporting/summary", &a.token).await["pipelineArr"],
        800
    );
    assert_eq!(
        context(&s, &key, &cid).await["lifecycle_stage"],
        "opportunity"
    );

    for (op, expect_stage) in [
        (
            json!({"op": "set_stage", "opportunityId": "Q-1", "stage": "proposal"}),
            "proposal",
        ),
        (
            json!({"op": "set_amount", "opportunityId": "Q-1", "amount": 950.5}),
            "proposal",
        ),
    ] {
        let (status, env) = mutate(json!({"customer": cid, "opportunity": op}), "execute").await;
        assert_eq!(status, StatusCode::OK, "{env}");
        assert_eq!(env["result"]["opportunity"]["stage"], expect_stage);
    }
    let o = opportunity(&s, &a, "Q-1").await;
    assert_eq!(
        (&o["amount"], &o["stage"]),
        (&json!(950.5), &json!("proposal"))
    );
    assert_eq!(
        get_ok(&s, "/v1/reporting/summary", &a.token).await["pipelineArr"],
        950,
        "whole units"
    );

    let (status, won) = mutate(
        json!({"customer": cid, "opportunity": {"op": "close_won", "opportunityId": "Q-1"}}),
        "execute",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{won}");
    assert_eq!(won["result"]["opportunity"]["status"], "won");
    let summary = get_ok(&s, "/v1/reporting/summary", &a.token).await;
    assert_eq!(
        (&summary["pipelineArr"], &summary["openTasks"]),
        (&json!(0), &json!(0))
    );
    assert_eq!(context(&s, &key, &cid).await["lifecycle_stage"], "customer");

    // The receipt keeps what was done.
    let request_id = str_at(&won, "/request_id");
    let receipt = get_ok(
        &s,
        &format!("/api/v1/capabilities/actions/{request_id}"),
        &key,
    )
    .await;
    assert_eq!(receipt["status"], "committed");
    assert_eq!(receipt["ledger_row"]["credits"], 2);
    assert_eq!(
        receipt["response"]["result"]["opportunity"]["stage"],
        "closedwon"
    );
    // Four executions at 2 credits, two context reads at 1; the preview was free.
    let usage = get_ok(&s, "/api/v1/capabilities/usage/actions?limit=100", &key).await;
    assert_eq!(usage["used"], 10, "{usage}");

    // Errors: an id taken, an unknown opportunity, another customer's, a missing stage.
    let (status, v) = mutate(
        json!({"customer": cid, "opportunity": {"op": "create", "opportunityId": "Q-1"}}),
        "execute",
    )
    .await;
    assert_eq!(
        (status, &v["error"]["code"]),
        (StatusCode::BAD_REQUEST, &json!("invalid_input")),
        "{v}"
    );
    let (status, v) = mutate(
        json!({"customer": cid, "opportunity": {"op": "close_lost", "opportunityId": "nope"}}),
        "execute",
    )
    .await;
    assert_eq!(
        (status, &v["error"]["code"]),
        (StatusCode::NOT_FOUND, &json!("not_found")),
        "{v}"
    );
    let other = str_at(
        &track(
            &s,
            &agent,
            json!({"action": "signup", "email": "other@x.io"}),
        )
        .await,
        "/customer_id",
    );
    let (status, _) = mutate(
        json!({"customer": other, "opportunity": {"op": "close_lost", "opportunityId": "Q-1"}}),
        "execute",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, v) = mutate(
        json!({"customer": cid, "opportunity": {"op": "set_stage", "opportunityId": "Q-1"}}),
        "execute",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(
        opportunity(&s, &a, "Q-1").await["status"],
        "won",
        "nothing changed"
    );
}

#[tokio::test]
async fn context_sentiment_intent_and_blockers_come_from_the_customers_words() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    let tp = |days: i64, action: &str, text: &str| {
        json!({"action": action, "email": "words@x.io", "timestamp": ago_days(days),
               "properties": {"body": text}})
    };
    let happy = track(
        &s,
        &key,
        tp(
            20,
            "support_ticket",
            "Love the product, your team is great!",
        ),
    )
    .await;
    let ask = track(
        &s,
        &key,
        tp(5, "reply", "Could you send a quote for 20 more seats?"),
    )
    .await;
    let angry = track(
        &s,
        &key,
        tp(
            2,
            "support_ticket",
            "Export is broken again. Terrible, we are very frustrated.",
        ),
    )
    .await;
    let cid = str_at(&happy, "/customer_id");
    let reader = s
        .mint_key(
            &a,
            json!({"name": "ctx", "agent": "ctx-bot", "allowed_modes": ["execute"],
                   "grants": [grant(Capability::ContextGet)]}),
        )
        .await
        .plaintext;
    let ctx = context(&s, &reader, &cid).await;
    let traj = &ctx["sentiment_trajectory"];
    assert_eq!(traj["direction"], "declining", "{ctx}");
    assert_eq!(traj["trigger"], "support_ticket");
    assert_eq!(
        traj["trigger_touchpoint_id"],
        json!(str_at(&angry, "/touchpoint_id"))
    );
    assert!(traj["prior_score"].as_f64().expect("prior") > 0.5, "{traj}");
    assert!(
        traj["recent_score"].as_f64().expect("recent") < 0.0,
        "{traj}"
    );
    let evidence = traj["evidence"].as_array().expect("evidence");
    assert_eq!(evidence.len(), 3);
    assert!(evidence.iter().all(|e| e["source"] == "text"));

    assert_eq!(ctx["intent_signals"], json!(["reply: quote"]));
    assert_eq!(
        ctx["intent_evidence"][0]["touchpoint_id"],
        json!(str_at(&ask, "/touchpoint_id"))
    );
    let blockers = ctx["blockers"].as_array().expect("blockers");
    assert_eq!(blockers.len(), 1, "{blockers:?}");
    assert_eq!(
        blockers[0]["touchpoint_id"],
        json!(str_at(&angry, "/touchpoint_id"))
    );
    assert!(str_at(&blockers[0], "/text").starts_with("Export is broken again"));
}
