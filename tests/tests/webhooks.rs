//! Inbound webhooks: generic and platform payloads through the ingestion pipeline.

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::{expect_error, get_ok, read, str_at, TestServer};

async fn deliver(
    s: &TestServer,
    key: &str,
    platform: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> Value {
    let mut req = s
        .post(&format!("/api/webhooks/{platform}"))
        .header("x-api-key", key)
        .json(&body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let (status, v) = read(req.send().await.expect("send")).await;
    assert_eq!(status, StatusCode::OK, "{platform}: {v}");
    v
}

#[tokio::test]
async fn platform_payloads_become_customer_history() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let legacy = s.legacy_key(&a).await.plaintext;

    let seg = deliver(
        &s,
        &legacy,
        "segment",
        &[],
        json!({"batch": [
            {"type": "identify", "userId": "u-1", "messageId": "m-1",
             "traits": {"email": "sam@x.io", "name": "Sam"}, "timestamp": "2026-01-02T03:04:05Z"},
            {"type": "track", "event": "Order Completed", "userId": "u-1", "messageId": "m-2",
             "properties": {"sku": "SKU-1"}, "timestamp": "2026-01-02T13:04:05Z"}
        ]}),
    )
    .await;
    assert_eq!(seg["accepted"], json!(2), "{seg}");
    let cid = str_at(&seg, "/results/0/result/customer_id");
    assert_eq!(str_at(&seg, "/results/1/result/customer_id"), cid);

    // Stripe's checkout session carries the same email: same customer.
    let stripe = deliver(
        &s,
        &legacy,
        "stripe",
        &[],
        json!({"id": "evt_1", "object": "event", "type": "checkout.session.completed",
               "created": 1_767_400_000,
               "data": {"object": {"id": "cs_1", "object": "checkout.session", "customer": "cus_S1",
                                   "customer_details": {"email": "SAM@x.io"}, "amount_total": 4200}}}),
    )
    .await;
    assert_eq!(str_at(&stripe, "/results/0/result/customer_id"), cid);
    // Redelivery of the same Stripe event is a duplicate.
    let again = deliver(
        &s,
        &legacy,
        "stripe",
        &[],
        json!({"id": "evt_1", "type": "checkout.session.completed", "created": 1_767_400_000,
               "data": {"object": {"customer_details": {"email": "sam@x.io"}}}}),
    )
    .await;
    assert_eq!(again["results"][0]["result"]["duplicate"], json!(true));

    let cio = deliver(
        &s,
        &legacy,
        "customerio",
        &[],
        json!({"event_id": "e1", "object_type": "email", "metric": "opened",
               "timestamp": 1_767_500_000,
               "data": {"identifiers": {"id": "u-1", "email": "sam@x.io", "cio_id": "cio-9"},
                        "campaign_id": 7}}),
    )
    .await;
    assert_eq!(str_at(&cio, "/results/0/result/customer_id"), cid);

    let resp = s
        .get(&format!("/v1/customers/{cid}/timeline"))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    let (_, t) = read(resp).await;
    let actions: Vec<&str> = t["touchpoints"]
        .as_array()
        .expect("tps")
        .iter()
        .map(|t| t["action"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        actions,
        [
            "identify",
            "Order Completed",
            "stripe.checkout.session.completed",
            "customerio.email.opened"
        ]
    );
    let resp = s
        .get(&format!("/v1/customers/{cid}"))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    let (_, p) = read(resp).await;
    assert_eq!(p["customer"]["name"], json!("Sam"));
    assert_eq!(p["customer"]["cio_id"], json!("cio-9"));
}

#[tokio::test]
async fn generic_shopify_hubspot_and_errors() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    let g = deliver(
        &s,
        &key,
        "generic",
        &[],
        json!({"action": "signup", "customerId": "crm-1", "properties": {"plan": "pro"}}),
    )
    .await;
    assert_eq!(g["accepted"], json!(1), "{g}");
    let shop = deliver(
        &s,
        &key,
        "shopify",
        &[
            ("x-shopify-topic", "orders/create"),
            ("x-shopify-webhook-id", "w-1"),
        ],
        json!({"id": 1, "email": "buyer@x.io", "created_at": "2026-01-02T10:00:00-05:00",
               "customer": {"id": 99}, "line_items": [{"sku": "S1", "quantity": 2}]}),
    )
    .await;
    assert_eq!(shop["accepted"], json!(1), "{shop}");
    let hub = deliver(
        &s,
        &key,
        "hubspot",
        &[],
        json!([{"eventId": 5, "subscriptionType": "contact.creation", "objectId": 42,
                "occurredAt": 1_767_323_045_000_i64},
               {"eventId": 6}]),
    )
    .await;
    assert_eq!(
        (hub["accepted"].clone(), hub["failed"].clone()),
        (json!(1), json!(1))
    );

    let resp = s
        .post("/api/webhooks/myspace")
        .header("x-api-key", key.as_str())
        .json(&json!({}))
        .send()
        .await
        .expect("send");
    let body = expect_error(resp, StatusCode::NOT_FOUND, "not_found").await;
    assert!(body["error"]["details"]["supported"]
        .as_array()
        .is_some_and(|p| p.contains(&json!("stripe"))));
    let resp = s
        .post("/api/webhooks/generic")
        .json(&json!({"action": "x", "customerId": "c"}))
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
}

#[tokio::test]
async fn webhook_tokens_authenticate_senders_without_headers() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let b = s.account().await;
    let mint = |token: &str| s.post("/api/v1/webhooks/token").bearer_auth(token).send();
    let (status, v) = read(mint(&a.token).await.expect("send")).await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    let token = str_at(&v, "/token");
    assert!(token.starts_with("whk_"));
    let body = json!({"action": "signup", "email": "t@x.io"});
    let resp = s
        .post(&format!("/api/webhooks/generic?token={token}"))
        .json(&body)
        .send()
        .await
        .expect("send");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["accepted"], json!(1));
    // The event landed in A's workspace, not B's.
    for (acct, n) in [(&a, 1), (&b, 0)] {
        let list = get_ok(&s, "/v1/customers", &acct.token).await;
        assert_eq!(list["customers"].as_array().map(Vec::len), Some(n));
    }
    // A new token revokes the old one; bad tokens are 401; agent keys cannot mint.
    let (_, v2) = read(mint(&a.token).await.expect("send")).await;
    assert_ne!(str_at(&v2, "/token"), token);
    for t in [token.as_str(), "whk_nope", "svc_live_x"] {
        let resp = s
            .post(&format!("/api/webhooks/generic?token={t}"))
            .json(&body)
            .send()
            .await
            .expect("send");
        expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    }
    let key = s.agent_key(&a).await.plaintext;
    let resp = mint(&key).await.expect("send");
    expect_error(resp, StatusCode::FORBIDDEN, "forbidden").await;
}

#[tokio::test]
async fn webhook_tokens_are_rate_limited_per_workspace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = svc_integration_tests::test_config(dir.path());
    config.webhook_token_rate_per_min = 3;
    let s = TestServer::start_with(dir, config).await;
    let (a, b) = (s.account().await, s.account().await);
    let mint = |acct: &svc_integration_tests::Account| {
        s.post("/api/v1/webhooks/token")
            .bearer_auth(&acct.token)
            .send()
    };
    let (_, va) = read(mint(&a).await.expect("send")).await;
    let (_, vb) = read(mint(&b).await.expect("send")).await;
    let (ta, tb) = (str_at(&va, "/token"), str_at(&vb, "/token"));
    let send = |token: &str, n: u32| {
        s.post(&format!("/api/webhooks/generic?token={token}"))
            .json(&json!({"action": "visit", "customerId": format!("rl-{n}")}))
            .send()
    };
    for n in 0..3 {
        let resp = send(&ta, n).await.expect("send");
        assert_eq!(resp.headers()["x-ratelimit-limit"], "3");
        assert_eq!(
            resp.headers()["x-ratelimit-remaining"].to_str().ok(),
            Some((2 - n).to_string().as_str())
        );
        assert_eq!(resp.status(), StatusCode::OK);
    }
    let refused = send(&ta, 3).await.expect("send");
    assert!(refused.headers().contains_key("retry-after"));
    expect_error(refused, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    // The refused delivery wrote nothing: three customers.
    let list = get_ok(&s, "/v1/customers", &a.token).await;
    assert_eq!(
        list["customers"].as_array().map(Vec::len),
        Some(3),
        "{list}"
    );
    // Another workspace's token has its own allowance, and A's agent keys keep theirs.
    assert_eq!(send(&tb, 0).await.expect("send").status(), StatusCode::OK);
    let key = s.agent_key(&a).await.plaintext;
    deliver(
        &s,
        &key,
        "generic",
        &[],
        json!({"action": "visit", "customerId": "rl-key"}),
    )
    .await;
    // A bad token is refused before any allowance is spent.
    let bad = send("whk_00000000000000000000000000000000", 9)
        .await
        .expect("send");
    expect_error(bad, StatusCode::UNAUTHORIZED, "unauthenticated").await;
}
