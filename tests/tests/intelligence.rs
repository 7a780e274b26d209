//! Scores and plans over HTTP: a planted workload (engaged buyers and one-visit browsers) is
//! ingested, the workspace's models are retrained, and the trained scores rank the planted
//! propensities; the scores are written onto the customers; `plan.goal` picks the likeliest
//! buyers, prices its steps against the remaining credits, names the approvals and never
//! contacts a suppressed customer.

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::{get_ok, grant, invoke_path, read, str_at, Capability, TestServer};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Customers of each kind: 2 x 130 is above the 200 labelled customers a model needs.
const EACH: usize = 130;

fn at(days_ago: f64) -> String {
    (OffsetDateTime::now_utc() - time::Duration::seconds_f64(days_ago * 86_400.0))
        .format(&Rfc3339)
        .expect("format")
}

/// Buyers look at pricing and ask for demos before the cut-off (30 days ago), then buy and
/// stay active; browsers visit once or twice 35 to 55 days ago and never come back.
fn planted() -> Vec<Value> {
    let mut events = Vec::new();
    for i in 0..EACH {
        let email = format!("buyer{i}@planted.test");
        let shift = (i % 7) as f64;
        for (days, action) in [
            (58.0, "page_viewed"),
            (50.0, "pricing_viewed"),
            (44.0, "email_clicked"),
            (38.0, "demo_requested"),
            (33.0, "pricing_viewed"),
            (20.0, "page_viewed"),
            (12.0, "purchase"),
            (4.0, "app_login"),
        ] {
            events.push(json!({"type": "track", "event": action, "email": email,
                "channel": "web", "timestamp": at(days - shift)}));
        }
        let email = format!("browser{i}@planted.test");
        events.push(
            json!({"type": "track", "event": "page_viewed", "email": email,
            "channel": "web", "timestamp": at(55.0 - shift)}),
        );
        if i % 2 == 0 {
            events.push(
                json!({"type": "track", "event": "email_opened", "email": email,
                "channel": "email", "timestamp": at(40.0 - shift)}),
            );
        }
    }
    events
}

async fn invoke(s: &TestServer, key: &str, cap: Capability, input: Value) -> Value {
    let resp = s
        .post(&invoke_path(cap))
        .bearer_auth(key)
        .json(&json!({"mode": "execute", "input": input}))
        .send()
        .await
        .expect("invoke");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{cap}: {v}");
    v["result"].clone()
}

#[tokio::test]
async fn trained_scores_rank_planted_propensities_and_plans_respect_credits_and_approvals() {
    let s = TestServer::start().await;
    let a = s.account().await;
    s.operator_set_plan(&a.workspace_id, "enterprise", Some(100_000))
        .await;
    let key = s
        .mint_key(
            &a,
            json!({"name": "scores", "allowed_modes": ["dry_run", "execute", "queue"],
                   "grants": [grant(Capability::ScoreChurn), grant(Capability::ScoreConversion),
                              grant(Capability::PlanGoal), grant(Capability::EventsIngest),
                              "customers:read"]}),
        )
        .await
        .plaintext;
    for chunk in planted().chunks(500) {
        let resp = s
            .post("/api/v1/events")
            .header("x-api-key", &key)
            .json(&json!({"events": chunk}))
            .send()
            .await
            .expect("batch");
        let (status, v) = read(resp).await;
        assert_eq!(status, StatusCode::OK, "{v}");
        assert!(v["results"]
            .as_array()
            .expect("results")
            .iter()
            .all(|r| r["ok"] == json!(true)));
    }

    // Before any training: the prior, and it says so.
    let before = invoke(
        &s,
        &key,
        Capability::ScoreConversion,
        json!({"customer": "buyer1@planted.test"}),
    )
    .await;
    assert_eq!(before["model"]["kind"], "prior", "{before}");
    assert_eq!(before["model"]["version"], "prior-v1");

    // Retraining is a person's call (JWT), not an agent's.
    let resp = s
        .post("/v1/models/retrain")
        .bearer_auth(&key)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let resp = s
        .post("/v1/models/retrain")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    let (status, report) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["status"], "trained", "{report}");
    assert_eq!(report["version"], "lr-v1");
    assert_eq!(report["labelled"], json!(2 * EACH));
    assert_eq!(report["written_back"], json!(2 * EACH));

    let models = get_ok(&s, "/v1/models", &a.token).await;
    assert_eq!(models["current"], "lr-v1", "{models}");
    let m = &models["models"][0];
    assert_eq!(m["conversion"]["trained_on"], json!(2 * EACH));
    assert_eq!(m["conversion"]["positives"], json!(EACH));
    assert_eq!(m["churn"]["positives"], json!(EACH));
    assert_eq!(models["policy"]["min_labelled_customers"], 200);

    // Trained scores: every buyer above every browser for conversion, below for churn.
    let mut refs: Vec<String> = (0..10).map(|i| format!("buyer{i}@planted.test")).collect();
    refs.extend((0..10).map(|i| format!("browser{i}@planted.test")));
    refs.push("nobody@planted.test".to_owned());
    for (cap, buyers_higher) in [
        (Capability::ScoreConversion, true),
        (Capability::ScoreChurn, false),
    ] {
        let out = invoke(&s, &key, cap, json!({"customers": refs})).await;
        assert_eq!(out["count"], 20, "{out}");
        assert_eq!(out["not_found"], json!(["nobody@planted.test"]));
        let results = out["results"].as_array().expect("results");
        assert!(results.iter().all(|r| r["model"]["kind"] == "trained"
            && r["model"]["version"] == "lr-v1"
            && r["model"]["trained_on"].as_u64().is_some_and(|n| n > 0)));
        let score = |r: &Value| r["score"].as_f64().expect("score");
        let buyers: Vec<f64> = results[..10].iter().map(score).collect();
        let browsers: Vec<f64> = results[10..].iter().map(score).collect();
        let (lo, hi) = if buyers_higher {
            (&browsers, &buyers)
        } else {
            (&buyers, &browsers)
        };
        let max_lo = lo.iter().copied().fold(f64::MIN, f64::max);
        let min_hi = hi.iter().copied().fold(f64::MAX, f64::min);
        assert!(min_hi > max_lo, "{cap}: {hi:?} vs {lo:?}");
        assert!(!results[0]["factors"]
            .as_array()
            .expect("factors")
            .is_empty());
    }

    // Written back: the customer's properties carry the scores.
    let one = invoke(
        &s,
        &key,
        Capability::ScoreConversion,
        json!({"customer": "buyer3@planted.test"}),
    )
    .await;
    let id = str_at(&one, "/customer_id");
    let profile = get_ok(&s, &format!("/v1/customers/{id}"), &a.token).await;
    let text = profile.to_string();
    assert!(
        text.contains("churnScore") && text.contains("conversionScore"),
        "{profile}"
    );

    // Cypher reads the written scores: every browser is above 0.5 churn, no buyer is.
    let resp = s
        .post("/v1/graph/query")
        .bearer_auth(&a.token)
        .json(
            &json!({"query": "MATCH (c:Customer) WHERE c.churnScore > 0.5 \
                                RETURN count(c)"}),
        )
        .send()
        .await
        .expect("query");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["rows"], json!([[EACH]]), "{v}");

    // A segment plan acts on buyers, priced and gated; a suppressed buyer is left alone.
    let resp = s
        .post("/api/v1/events/track")
        .header("x-api-key", &key)
        .json(&json!({"event": "unsubscribed", "email": "buyer0@planted.test"}))
        .send()
        .await
        .expect("track");
    assert_eq!(resp.status(), StatusCode::OK);
    let suppressed = str_at(
        &invoke(
            &s,
            &key,
            Capability::ScoreChurn,
            json!({"customer": "buyer0@planted.test"}),
        )
        .await,
        "/customer_id",
    );
    let plan = invoke(
        &s,
        &key,
        Capability::PlanGoal,
        json!({"goal": "more conversions this month"}),
    )
    .await;
    let chosen = plan["customers"].as_array().expect("customers");
    assert!(!chosen.is_empty(), "{plan}");
    for c in chosen {
        let cid = str_at(c, "/customer_id");
        assert_ne!(cid, suppressed, "{plan}");
        assert!(
            c["email"].as_str().is_some_and(|e| e.starts_with("buyer")),
            "{plan}"
        );
        assert!(
            c["why"].as_str().is_some_and(|w| w.contains("lr-v1")),
            "{c}"
        );
    }
    let steps = plan["steps"].as_array().expect("steps");
    assert!(steps
        .iter()
        .all(|st| st["input"]["customer"] != json!(suppressed)));
    let queued: Vec<&Value> = steps.iter().filter(|st| st["mode"] == "queue").collect();
    assert!(!queued.is_empty(), "{plan}");
    assert!(queued.iter().all(|st| st["approval"] == "required"));
    assert_eq!(plan["approvals_needed"], json!(queued.len()));
    let needed: u64 = steps
        .iter()
        .map(|st| st["credits"].as_u64().expect("credits"))
        .sum();
    assert_eq!(plan["credits"]["needed"], json!(needed));
    assert_eq!(plan["credits"]["fits"], json!(true));
    let remaining = plan["credits"]["remaining"].as_u64().expect("remaining");

    // With 3 credits left after the plan's own charge, only the first steps fit.
    let used_after = 100_000 - remaining;
    let plan_cost = 2;
    s.operator_set_plan(
        &a.workspace_id,
        "enterprise",
        Some(used_after + plan_cost + 3),
    )
    .await;
    let tight = invoke(
        &s,
        &key,
        Capability::PlanGoal,
        json!({"goal": "more conversions this month"}),
    )
    .await;
    assert_eq!(tight["credits"]["remaining"], 3, "{tight}");
    assert_eq!(tight["credits"]["fits"], json!(false));
    let spent: u64 = tight["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|st| st["credits"].as_u64().expect("credits"))
        .sum();
    assert!(spent <= 3, "{tight}");
    assert!(!tight["credits"]["left_out"]
        .as_array()
        .expect("left_out")
        .is_empty());
    s.stop().await;
}
