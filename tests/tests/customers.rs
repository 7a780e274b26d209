//! Customers, campaigns and opportunities reads; dedupe on a clean workspace.

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::{expect_error, read, str_at, TestServer};

async fn batch(s: &TestServer, key: &str, events: Vec<Value>) -> Value {
    let resp = s
        .post("/api/v1/events")
        .header("x-api-key", key)
        .json(&json!({ "events": events }))
        .send()
        .await
        .expect("send");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["failed"], json!(0), "{v}");
    v
}

async fn get(s: &TestServer, path: &str, token: &str) -> Value {
    let resp = s.get(path).bearer_auth(token).send().await.expect("send");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{path}: {v}");
    v
}

fn track(email: &str, action: &str, ts: &str) -> Value {
    json!({"type": "track", "action": action, "email": email, "timestamp": ts})
}

#[tokio::test]
async fn list_is_the_100_most_recently_seen() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.reader_key(&a).await.plaintext;
    // 105 customers, customer i last seen at minute i.
    let events: Vec<Value> = (0..105)
        .map(|i| {
            track(
                &format!("c{i}@x.io"),
                "visit",
                &format!("2026-01-01T{:02}:{:02}:00Z", i / 60, i % 60),
            )
        })
        .collect();
    batch(&s, &key, events).await;
    // An older event does not move lastSeen back; a newer one moves c3 to the top.
    batch(
        &s,
        &key,
        vec![
            track("c104@x.io", "old", "2025-01-01T00:00:00Z"),
            track("c3@x.io", "new", "2026-02-01T00:00:00Z"),
        ],
    )
    .await;
    let v = get(&s, "/v1/customers", &a.token).await;
    let list = v["customers"].as_array().expect("customers");
    assert_eq!(list.len(), 100);
    let emails: Vec<&str> = list
        .iter()
        .map(|c| c["email"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(&emails[..3], ["c3@x.io", "c104@x.io", "c103@x.io"]);
    assert_eq!(emails[99], "c6@x.io");
    assert_eq!(list[0]["lastSeen"], json!("2026-02-01T00:00:00.000Z"));
    assert!(list[0]["id"]
        .as_str()
        .is_some_and(|id| id.starts_with("cus_")));
    assert_eq!(
        (v["total"].as_u64(), v["offset"].as_u64()),
        (Some(105), Some(0))
    );
    // Agent keys read customers too.
    let v = get(&s, "/v1/customers", &key).await;
    assert_eq!(v["customers"].as_array().map(Vec::len), Some(100));

    // Search and paging over the whole workspace: c6..c0 are beyond the first 100.
    let emails = |v: &Value| -> Vec<String> {
        v["customers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| str_at(c, "/email"))
            .collect()
    };
    let v = get(&s, "/v1/customers?q=C1%40X.IO", &a.token).await;
    assert_eq!(
        (emails(&v), v["total"].as_u64()),
        (vec!["c1@x.io".to_owned()], Some(1))
    );
    let v = get(&s, "/v1/customers?q=c10&sort=email&order=asc", &a.token).await;
    // Case-insensitive text order: "0" sorts before "@".
    assert_eq!(
        emails(&v),
        [
            "c100@x.io",
            "c101@x.io",
            "c102@x.io",
            "c103@x.io",
            "c104@x.io",
            "c10@x.io"
        ]
    );
    let v = get(&s, "/v1/customers?offset=100&limit=10", &a.token).await;
    assert_eq!(
        emails(&v),
        ["c5@x.io", "c4@x.io", "c2@x.io", "c1@x.io", "c0@x.io"]
    );
    assert_eq!(
        (v["total"].as_u64(), v["limit"].as_u64()),
        (Some(105), Some(10))
    );
    for bad in [
        "limit=0",
        "limit=501",
        "sort=shoe",
        "order=up",
        "min_churn=x",
        "offset=-1",
    ] {
        let resp = s
            .get(&format!("/v1/customers?{bad}"))
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("send");
        expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
    }
}

#[tokio::test]
async fn profile_and_ascending_timeline() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.reader_key(&a).await.plaintext;
    let v = batch(
        &s,
        &key,
        vec![
            json!({"type": "identify", "email": "ada@x.io", "name": "Ada",
                   "properties": {"plan": "pro"}, "timestamp": "2026-01-01T10:00:00Z"}),
            json!({"type": "track", "action": "purchase", "email": "ada@x.io", "channel": "web",
                   "campaignId": "spring", "properties": {"sku": "A1"},
                   "timestamp": "2026-01-03T10:00:00Z"}),
            json!({"type": "track", "action": "open", "email": "ada@x.io", "channel": "email",
                   "timestamp": "2026-01-02T10:00:00+02:00"}),
        ],
    )
    .await;
    let cid = str_at(&v, "/results/0/result/customer_id");

    let p = get(&s, &format!("/v1/customers/{cid}"), &a.token).await;
    assert_eq!(p["customer"]["id"], json!(cid));
    assert_eq!(p["customer"]["email"], json!("ada@x.io"));
    assert_eq!(p["customer"]["name"], json!("Ada"));
    assert_eq!(p["customer"]["properties"]["plan"], json!("pro"));
    assert_eq!(p["customer"]["lastSeen"], json!("2026-01-03T10:00:00.000Z"));
    assert_eq!(p["touchpoint_count"], json!(3));
    let newest_first: Vec<&str> = p["touchpoints"]
        .as_array()
        .expect("tps")
        .iter()
        .map(|t| t["action"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(newest_first, ["purchase", "open", "identify"]);

    // Lookup by email (any case) gives the same customer.
    let by_email = get(&s, "/v1/customers/ADA@x.io", &key).await;
    assert_eq!(by_email["customer"]["id"], json!(cid));

    let t = get(&s, &format!("/v1/customers/{cid}/timeline"), &a.token).await;
    assert_eq!(t["customer_id"], json!(cid));
    let tps = t["touchpoints"].as_array().expect("tps");
    let actions: Vec<&str> = tps
        .iter()
        .map(|t| t["action"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(actions, ["identify", "open", "purchase"]);
    assert_eq!(tps[1]["timestamp"], json!("2026-01-02T08:00:00.000Z"));
    assert_eq!(tps[1]["channel"], json!("email"));
    assert_eq!(tps[2]["campaignId"], json!("spring"));
    assert_eq!(tps[2]["properties"], json!({"sku": "A1"}));
    assert!(tps[2]["id"]
        .as_str()
        .is_some_and(|id| id.starts_with("tp_")));
}

#[tokio::test]
async fn unknown_and_foreign_customers_are_404() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let b = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    let v = batch(&s, &key, vec![track("x@x.io", "a", "2026-01-01T00:00:00Z")]).await;
    let cid = str_at(&v, "/results/0/result/customer_id");
    let tid = str_at(&v, "/results/0/result/touchpoint_id");
    for path in [
        format!("/v1/customers/{cid}"),
        format!("/v1/customers/{cid}/timeline"),
        "/v1/customers/x@x.io".to_owned(),
    ] {
        let resp = s
            .get(&path)
            .bearer_auth(&b.token)
            .send()
            .await
            .expect("send");
        expect_error(resp, StatusCode::NOT_FOUND, "not_found").await;
    }
    for path in [
        format!("/v1/customers/{tid}"),
        "/v1/customers/cus_99999999".to_owned(),
        "/v1/customers/nobody".to_owned(),
    ] {
        let resp = s
            .get(&path)
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("send");
        expect_error(resp, StatusCode::NOT_FOUND, "not_found").await;
    }
}

#[tokio::test]
async fn bearer_token_required_and_legacy_keys_refused() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let legacy = s.legacy_key(&a).await.plaintext;
    for path in ["/v1/customers", "/v1/campaigns", "/v1/opportunities"] {
        let resp = s.get(path).send().await.expect("send");
        expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
        let resp = s
            .get(path)
            .header("x-api-key", legacy.as_str())
            .send()
            .await
            .expect("send");
        expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    }
    let resp = s.post("/v1/customers/dedupe").send().await.expect("send");
    expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
}

#[tokio::test]
async fn campaigns_count_their_touchpoints() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    let mut events = Vec::new();
    for (i, c) in ["spring", "fall", "spring", "spring", "fall", "winter"]
        .iter()
        .enumerate()
    {
        events.push(
            json!({"type": "track", "action": "click", "email": format!("u{i}@x.io"),
                           "campaignId": c}),
        );
    }
    batch(&s, &key, events).await;
    let v = get(&s, "/v1/campaigns", &a.token).await;
    let got: Vec<(String, u64)> = v["campaigns"]
        .as_array()
        .expect("campaigns")
        .iter()
        .map(|c| {
            (
                str_at(c, "/campaignId"),
                c["touchpoints"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("spring".to_owned(), 3),
            ("fall".to_owned(), 2),
            ("winter".to_owned(), 1)
        ]
    );
    let v = get(&s, "/v1/opportunities", &a.token).await;
    assert_eq!(v["opportunities"], json!([]));
}

#[tokio::test]
async fn dedupe_on_a_clean_workspace_changes_nothing() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    batch(
        &s,
        &key,
        vec![
            track("a@x.io", "a", "2026-01-01T00:00:00Z"),
            track("b@x.io", "a", "2026-01-01T00:00:00Z"),
        ],
    )
    .await;
    for path in ["/v1/customers/dedupe?dry_run=true", "/v1/customers/dedupe"] {
        let resp = s
            .post(path)
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("send");
        let (status, v) = read(resp).await;
        assert_eq!(status, StatusCode::OK, "{v}");
        assert_eq!(
            (v["merged"].clone(), v["groups"].clone()),
            (json!(0), json!([]))
        );
        assert_eq!(v["dry_run"], json!(path.ends_with("true")));
    }
    let resp = s
        .post("/v1/customers/dedupe?dry_run=maybe")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
    let v = get(&s, "/v1/customers", &a.token).await;
    assert_eq!(v["customers"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn segments_journeys_cohorts_and_products() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.reader_key(&a).await.plaintext;
    let ev = |email: &str, action: &str, day: u32, campaign: Option<&str>, props: Value| {
        let mut e = json!({"type": "track", "action": action, "email": email,
                           "timestamp": format!("2026-01-{day:02}T00:00:00Z"), "properties": props});
        if let Some(c) = campaign {
            e["campaignId"] = json!(c);
        }
        e
    };
    batch(
        &s,
        &key,
        vec![
            ev("a@x.io", "visit", 1, Some("spring"), json!({"sku": "A1"})),
            ev("a@x.io", "visit", 2, None, json!({})),
            ev(
                "a@x.io",
                "buy",
                3,
                None,
                json!({"products": ["A1", {"sku": "B2"}]}),
            ),
            ev(
                "b@x.io",
                "visit",
                4,
                Some("spring"),
                json!({"product": "A1"}),
            ),
            ev("b@x.io", "buy", 5, Some("fall"), json!({})),
            ev("c@x.io", "visit", 6, Some("winter"), json!({})),
            ev("d@x.io", "signup", 7, None, json!({})),
        ],
    )
    .await;
    let seg = get(&s, "/v1/segments", &a.token).await;
    let total: u64 = seg["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .filter(|s| s["kind"] == json!("recency"))
        .map(|s| s["size"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(total, 4, "{seg}");

    let j = get(&s, "/v1/journeys", &key).await;
    assert_eq!(j["journeys"][0]["path"], json!(["visit", "buy"]));
    assert_eq!(j["journeys"][0]["customers"], json!(2));

    let c = get(&s, "/v1/cohorts", &a.token).await;
    assert!(c["method"]
        .as_str()
        .is_some_and(|m| m.contains("connected components")));
    let sizes: Vec<(u64, Value)> = c["cohorts"]
        .as_array()
        .expect("cohorts")
        .iter()
        .map(|c| (c["size"].as_u64().unwrap_or(0), c["campaigns"].clone()))
        .collect();
    assert_eq!(
        sizes,
        [
            (2, json!(["fall", "spring"])),
            (1, json!(["winter"])),
            (1, json!([]))
        ]
    );

    let p = get(&s, "/v1/products", &a.token).await;
    assert_eq!(
        p["products"],
        json!([{"id": "A1", "touchpoints": 3, "customers": 2},
               {"id": "B2", "touchpoints": 1, "customers": 1}])
    );
    for path in [
        "/v1/segments",
        "/v1/journeys",
        "/v1/cohorts",
        "/v1/products",
    ] {
        let resp = s.get(path).send().await.expect("send");
        expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    }
}
