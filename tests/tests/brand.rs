//! Brand context through real HTTP: merge, clamp and drop rules, bounds, delete, read-only,
//! encryption at rest (no plaintext in the data directory), and the buddy system prompt that
//! picks up a change on the next turn.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use svc_integration_tests::{all_files, contains_bytes, expect_error, read, Account, TestServer};

async fn call(
    s: &TestServer,
    a: &Account,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = s.request(method, path).bearer_auth(&a.token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    read(req.send().await.expect("send")).await
}

async fn put(s: &TestServer, a: &Account, body: Value) -> Value {
    let (status, v) = call(s, a, Method::PUT, "/v1/brand-context", Some(body)).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v["context"].clone()
}

async fn get(s: &TestServer, a: &Account) -> Value {
    let (status, v) = call(s, a, Method::GET, "/v1/brand-context", None).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v["context"].clone()
}

#[tokio::test]
async fn merge_clamp_drop_and_delete_rules() {
    let s = TestServer::start().await;
    let a = s.account().await;
    assert_eq!(get(&s, &a).await, json!({}), "never configured");

    let ctx = put(&s, &a, json!({
        "businessName": "Acme Rockets",
        "website": "https://acme.example",
        "industry": "other",
        "industryOther": "space tourism",
        "description": "We fly people to orbit.",
        "audience": "adventurous founders",
        "voice": {"formality": 7, "humor": 0, "respect": 4.4},
        "links": {"privacy": "https://acme.example/privacy", "terms": "mailto:legal@acme.example",
                  "pricing": format!("https://acme.example/{}", "p".repeat(300)), "download": "http://acme.example/app"},
        "favouriteColour": "red",
    })).await;
    assert_eq!(
        ctx,
        json!({
            "businessName": "Acme Rockets",
            "website": "https://acme.example",
            "industry": "other",
            "industryOther": "space tourism",
            "description": "We fly people to orbit.",
            "audience": "adventurous founders",
            "voice": {"formality": 5, "humor": 1, "respect": 4, "energy": 3},
            "links": {"privacy": "https://acme.example/privacy", "download": "http://acme.example/app"},
            "enrichedSource": "manual",
        })
    );
    assert_eq!(
        get(&s, &a).await,
        ctx,
        "the next read sees the merged profile"
    );

    // voice and links merge key by key; an invalid link leaves the old one; an invalid industry
    // is ignored; auto-detect stamps enrichedAt.
    let ctx = put(
        &s,
        &a,
        json!({
            "voice": {"energy": 5},
            "links": {"terms": "https://acme.example/terms", "privacy": "acme.example/privacy2"},
            "industry": "rocketry",
            "enrichedSource": "auto-detect",
        }),
    )
    .await;
    assert_eq!(
        ctx["voice"],
        json!({"formality": 5, "humor": 1, "respect": 4, "energy": 5})
    );
    assert_eq!(
        ctx["links"],
        json!({"privacy": "https://acme.example/privacy", "terms": "https://acme.example/terms",
                                     "download": "http://acme.example/app"})
    );
    assert_eq!(ctx["industry"], "other");
    assert_eq!(ctx["businessName"], "Acme Rockets");
    assert_eq!(ctx["enrichedSource"], "auto-detect");
    assert!(
        ctx["enrichedAt"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{ctx}"
    );

    // industryOther only means something with `other`.
    let ctx = put(
        &s,
        &a,
        json!({"industry": "saas", "industryOther": "still rockets"}),
    )
    .await;
    assert_eq!(ctx["industry"], "saas");
    assert!(ctx.get("industryOther").is_none(), "{ctx}");
    assert_eq!(ctx["enrichedSource"], "manual");

    // Voice defaults to 3 for missing values on a fresh profile.
    let b = s.account().await;
    assert_eq!(
        put(&s, &b, json!({"voice": {"humor": 2}})).await["voice"],
        json!({"formality": 3, "humor": 2, "respect": 3, "energy": 3})
    );

    let (status, v) = call(&s, &a, Method::DELETE, "/v1/brand-context", None).await;
    assert_eq!((status, v), (StatusCode::OK, json!({"ok": true})));
    assert_eq!(get(&s, &a).await, json!({}));
    assert_ne!(get(&s, &b).await, json!({}), "workspaces are separate");
}

#[tokio::test]
async fn string_bounds_and_types_are_400_naming_the_field_and_change_nothing() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let before = put(&s, &a, json!({"businessName": "Acme"})).await;
    for (field, max) in [
        ("businessName", 200),
        ("website", 300),
        ("industryOther", 120),
        ("description", 2000),
        ("audience", 1000),
    ] {
        let resp = s
            .request(Method::PUT, "/v1/brand-context")
            .bearer_auth(&a.token)
            .json(&json!({ field: "x".repeat(max + 1), "industry": "other" }))
            .send()
            .await
            .expect("send");
        let v = expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
        assert_eq!(v["error"]["details"]["field"], field, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .expect("message")
                .contains(&max.to_string()),
            "{v}"
        );
        // At the bound it is accepted.
        let ctx = put(
            &s,
            &a,
            json!({ field: "x".repeat(max), "industry": "other" }),
        )
        .await;
        assert_eq!(ctx[field].as_str().map(str::len), Some(max));
    }
    for body in [
        json!({"businessName": 5}),
        json!({"voice": "loud"}),
        json!({"links": ["https://a.io"]}),
        json!("acme"),
    ] {
        let resp = s
            .request(Method::PUT, "/v1/brand-context")
            .bearer_auth(&a.token)
            .json(&body)
            .send()
            .await
            .expect("send");
        expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
    }
    assert_ne!(
        get(&s, &a).await,
        before,
        "the accepted edge values were stored"
    );
    expect_error(
        s.get("/v1/brand-context").send().await.expect("send"),
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
    )
    .await;
}

#[tokio::test]
async fn read_only_workspace_refuses_put_and_delete() {
    let s = TestServer::start().await;
    let a = s.account().await;
    put(&s, &a, json!({"businessName": "Acme"})).await;
    let (status, _) = call(
        &s,
        &a,
        Method::PUT,
        "/api/v1/workspace",
        Some(json!({"read_only": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let resp = s
        .request(Method::PUT, "/v1/brand-context")
        .bearer_auth(&a.token)
        .json(&json!({"businessName": "B"}))
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::FORBIDDEN, "read_only_workspace").await;
    let resp = s
        .request(Method::DELETE, "/v1/brand-context")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::FORBIDDEN, "read_only_workspace").await;
    // Agent keys never write the brand context (JWT-only, read-only workspace or not).
    let key = s.reader_key(&a).await.plaintext;
    for method in [Method::PUT, Method::DELETE] {
        let resp = s
            .request(method, "/v1/brand-context")
            .bearer_auth(&key)
            .json(&json!({"businessName": "B"}))
            .send()
            .await
            .expect("send");
        expect_error(resp, StatusCode::FORBIDDEN, "forbidden").await;
    }
    assert_eq!(get(&s, &a).await["businessName"], "Acme");
}

#[tokio::test]
async fn stored_sealed_no_plaintext_on_disk_and_readable_after_restart() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let values = [
        "Zanzibar Quantum Bakery",
        "https://zanzibar-quantum.example",
        "Sourdough proofed by entangled yeast",
        "night-shift physicists",
        "https://zanzibar-quantum.example/privacy-policy",
    ];
    put(
        &s,
        &a,
        json!({"businessName": values[0], "website": values[1], "description": values[2],
                       "audience": values[3], "links": {"privacy": values[4]}}),
    )
    .await;
    // Control: a playbook name is stored in plain JSON, so the scan can see fresh writes.
    let control = "Plaintext control playbook 7f3a";
    let (status, _) = call(
        &s,
        &a,
        Method::POST,
        "/v1/playbooks",
        Some(json!({"name": control, "mode": "inbound",
        "buddyId": "insights", "strategy": {"hypothesis": "h"}})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);

    let files = all_files(s.data_dir());
    assert!(
        files
            .iter()
            .any(|(_, bytes)| contains_bytes(bytes, control.as_bytes())),
        "the control value must be visible to the scan"
    );
    for v in values {
        for (path, bytes) in &files {
            assert!(
                !contains_bytes(bytes, v.as_bytes()),
                "{v:?} found in plaintext in {}",
                path.display()
            );
        }
    }
    assert!(s.data_dir().join("master.key").exists());

    let s = s.restart().await;
    assert_eq!(get(&s, &a).await["businessName"], values[0]);
}

#[tokio::test]
async fn a_brand_change_reaches_the_next_system_prompt() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let prompt = |buddy: &'static str| {
        let (s, a) = (&s, &a);
        async move {
            let (status, v) = call(
                s,
                a,
                Method::GET,
                &format!("/v1/buddies/{buddy}/system-prompt"),
                None,
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{v}");
            v["prompt"].as_str().expect("prompt").to_owned()
        }
    };
    let p = prompt("campaign").await;
    assert!(!p.contains("## Brand"), "{p}");
    assert!(p.starts_with("You are Campaign"), "{p}");
    assert!(p.contains("No playbook is active"), "{p}");

    put(
        &s,
        &a,
        json!({"businessName": "Acme Rockets", "voice": {"humor": 5}}),
    )
    .await;
    let (status, _) = call(&s, &a, Method::POST, "/v1/playbooks", Some(json!({"name": "Orbit launch", "mode": "outbound",
        "buddyId": "campaign", "status": "active", "strategy": {"hypothesis": "founders want orbit"}}))).await;
    assert_eq!(status, StatusCode::CREATED);
    let p = prompt("campaign").await;
    let order = [
        "## Brand",
        "Business: Acme Rockets",
        "humor 5",
        "You are Campaign",
        "You are part of",
        "## Active playbooks",
        "Orbit launch",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|m| p.find(m).unwrap_or_else(|| panic!("{m} missing in {p}")))
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "brand, persona, base, playbooks: {p}"
    );

    put(&s, &a, json!({"businessName": "Acme Orbital"})).await;
    let p = prompt("insights").await;
    assert!(
        p.contains("Business: Acme Orbital") && !p.contains("Acme Rockets"),
        "{p}"
    );
    call(&s, &a, Method::DELETE, "/v1/brand-context", None).await;
    assert!(!prompt("pipeline").await.contains("## Brand"));

    let (status, _) = call(
        &s,
        &a,
        Method::GET,
        "/v1/buddies/orchestrator/system-prompt",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
