//! Agent keys: create, list, revoke, whoami, validation, credential resolution, rate limits.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use svc_integration_tests::{expect_error, grant, read, str_at, Capability, TestServer};

const BASE62: &str = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

#[tokio::test]
async fn create_returns_plaintext_once_and_metadata() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s
        .mint_key(
            &a,
            json!({
                "name": "crm bot", "agent": "crm-agent", "scopes": ["v1:context:read"],
                "grants": [grant(Capability::ContextGet), grant(Capability::EventsIngest)],
                "allowed_modes": ["dry_run", "execute"], "auto_run": true,
                "rate_limit_per_min": 120, "quota_override_monthly": 50
            }),
        )
        .await;
    let k = &key.plaintext;
    assert!(k.starts_with("svc_live_"), "{k}");
    assert_eq!(k.len(), "svc_live_".len() + 32 + 6);
    assert!(
        k["svc_live_".len()..].chars().all(|c| BASE62.contains(c)),
        "{k}"
    );
    assert!(key.id.starts_with("key_"));
    let m = &key.meta;
    assert_eq!(m["name"], "crm bot");
    assert_eq!(m["agent"], "crm-agent");
    assert_eq!(m["kind"], "agent");
    assert_eq!(m["workspace_id"], json!(a.workspace_id));
    assert_eq!(
        m["grants"],
        json!([
            grant(Capability::ContextGet),
            grant(Capability::EventsIngest)
        ])
    );
    assert_eq!(m["allowed_modes"], json!(["dry_run", "execute"]));
    assert_eq!(m["auto_run"], true);
    assert_eq!(m["rate_limit_per_min"], 120);
    assert_eq!(m["quota_override_monthly"], 50);
    assert_eq!(m["revoked"], false);
    assert_eq!(m["last_used_at"], Value::Null);
    assert!(k.starts_with(&str_at(m, "/prefix")));
    assert!(k.ends_with(&str_at(m, "/last_four")));
    assert_eq!(str_at(m, "/last_four").len(), 4);

    // Listing shows metadata only: no plaintext anywhere in it.
    let (status, list) = read(
        s.get("/api/v1/keys")
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("list"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let keys = list["keys"].as_array().expect("keys");
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0]["id"], json!(key.id));
    assert!(keys[0].get("key").is_none());
    assert!(
        !list.to_string().contains(&k["svc_live_".len()..]),
        "plaintext leaked in listing"
    );
    assert_eq!(keys[0]["quota_override_monthly"], 50);
    s.stop().await;
}

#[tokio::test]
async fn defaults_are_least_privilege() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.mint_key(&a, json!({"name": "bare"})).await;
    assert_eq!(key.meta["allowed_modes"], json!(["dry_run"]));
    assert_eq!(key.meta["grants"], json!([]));
    assert_eq!(key.meta["auto_run"], false);
    assert_eq!(key.meta["rate_limit_per_min"], 600);
    assert_eq!(key.meta["agent"], "bare");
    s.stop().await;
}

#[tokio::test]
async fn invalid_grants_modes_and_fields_are_400_naming_the_value() {
    let s = TestServer::start().await;
    let a = s.account().await;
    for (body, needle) in [
        (
            json!({"name": "k", "grants": [grant(Capability::ContextGet), "capability:teleport"]}),
            "capability:teleport",
        ),
        (
            json!({"name": "k", "grants": [Capability::ContextGet.id()]}),
            Capability::ContextGet.id(),
        ),
        (
            json!({"name": "k", "allowed_modes": ["dry_run", "yolo"]}),
            "yolo",
        ),
        (json!({"name": "k", "scopes": ["admin"]}), "admin"),
        (
            json!({"name": "k", "rate_limit_per_min": 0}),
            "rate_limit_per_min",
        ),
        (json!({"name": ""}), "name"),
        (json!({"name": "k", "superpowers": true}), "superpowers"),
    ] {
        let resp = s
            .post("/api/v1/keys")
            .bearer_auth(&a.token)
            .json(&body)
            .send()
            .await
            .expect("create");
        let err = expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
        assert!(
            str_at(&err, "/error/message").contains(needle),
            "{body} -> {err}"
        );
    }
    // Every one of the fifteen capability ids is grantable.
    let all: Vec<String> = Capability::ALL.map(grant).to_vec();
    let key = s.mint_key(&a, json!({"name": "all", "grants": all})).await;
    assert_eq!(key.meta["grants"].as_array().map(Vec::len), Some(15));
    // Nothing was created by the failures.
    let (_, list) = read(
        s.get("/api/v1/keys")
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("list"),
    )
    .await;
    assert_eq!(list["keys"].as_array().map(Vec::len), Some(1));
    s.stop().await;
}

#[tokio::test]
async fn whoami_works_with_either_header_form() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await;
    for req in [
        s.get("/api/v1/keys/whoami").bearer_auth(&key.plaintext),
        s.get("/api/v1/keys/whoami")
            .header("x-api-key", &key.plaintext),
    ] {
        let resp = req.send().await.expect("whoami");
        for h in [
            "x-ratelimit-limit",
            "x-ratelimit-remaining",
            "x-ratelimit-reset",
        ] {
            assert!(resp.headers().contains_key(h), "missing {h}");
        }
        let (status, me) = read(resp).await;
        assert_eq!(status, StatusCode::OK, "{me}");
        assert_eq!(me["workspace_id"], json!(a.workspace_id));
        assert_eq!(me["key_id"], json!(key.id));
        assert_eq!(me["agent"], "tester");
        assert_eq!(me["grants"], key.meta["grants"]);
        assert_eq!(me["allowed_modes"], json!(["dry_run", "queue", "execute"]));
        assert_eq!(me["auto_run"], false);
        assert!(me.get("scopes").is_some() && me.get("quota_override_monthly").is_some());
        assert!(
            me["last_used_at"].is_string(),
            "this request counts as a use: {me}"
        );
    }
    s.stop().await;
}

#[tokio::test]
async fn last_used_at_advances_and_shows_in_the_listing() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await;
    let (_, first) = read(
        s.get("/api/v1/keys/whoami")
            .bearer_auth(&key.plaintext)
            .send()
            .await
            .expect("whoami"),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (_, second) = read(
        s.get("/api/v1/keys/whoami")
            .bearer_auth(&key.plaintext)
            .send()
            .await
            .expect("whoami"),
    )
    .await;
    let (t1, t2) = (
        str_at(&first, "/last_used_at"),
        str_at(&second, "/last_used_at"),
    );
    assert!(t2 > t1, "{t1} then {t2}");
    let (_, list) = read(
        s.get("/api/v1/keys")
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("list"),
    )
    .await;
    assert_eq!(list["keys"][0]["last_used_at"], json!(t2));
    s.stop().await;
}

#[tokio::test]
async fn revocation_takes_effect_at_once() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let keep = s.agent_key(&a).await;
    let key = s.agent_key(&a).await;
    let ok = s
        .get("/api/v1/keys/whoami")
        .bearer_auth(&key.plaintext)
        .send()
        .await
        .expect("whoami");
    assert_eq!(ok.status(), StatusCode::OK);

    let resp = s
        .request(Method::DELETE, &format!("/api/v1/keys/{}", key.id))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("revoke");
    let (status, revoked) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{revoked}");
    assert_eq!(revoked["revoked"], true);
    assert!(revoked["revoked_at"].is_string());

    // The very next request, in either header form, is refused.
    for req in [
        s.get("/api/v1/keys/whoami").bearer_auth(&key.plaintext),
        s.get("/api/v1/keys/whoami")
            .header("x-api-key", &key.plaintext),
    ] {
        expect_error(
            req.send().await.expect("whoami"),
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
        )
        .await;
    }
    // Other keys are untouched; the listing shows the revoked state.
    assert_eq!(
        s.get("/api/v1/keys/whoami")
            .bearer_auth(&keep.plaintext)
            .send()
            .await
            .expect("whoami")
            .status(),
        StatusCode::OK
    );
    let (_, list) = read(
        s.get("/api/v1/keys")
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("list"),
    )
    .await;
    let revoked_flags: Vec<(String, bool)> = list["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| (str_at(k, "/id"), k["revoked"].as_bool().expect("bool")))
        .collect();
    assert!(revoked_flags.contains(&(key.id.clone(), true)), "{list}");
    assert!(revoked_flags.contains(&(keep.id.clone(), false)), "{list}");

    // Revoking again is harmless; an unknown id is 404.
    let again = s
        .request(Method::DELETE, &format!("/api/v1/keys/{}", key.id))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("revoke");
    assert_eq!(again.status(), StatusCode::OK);
    let missing = s
        .request(Method::DELETE, "/api/v1/keys/key_nonexistent")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("revoke");
    expect_error(missing, StatusCode::NOT_FOUND, "not_found").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_request_succeeds_after_the_revoke_returns() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await;
    // Hammer whoami while revoking; every request that *starts* after DELETE returned must fail.
    let client = s.client.clone();
    let url = s.url("/api/v1/keys/whoami");
    let plaintext = key.plaintext.clone();
    let revoked_at = std::sync::Arc::new(tokio::sync::OnceCell::<std::time::Instant>::new());
    let flag = revoked_at.clone();
    let hammer = tokio::spawn(async move {
        let mut late_successes = 0;
        for _ in 0..200 {
            let started = std::time::Instant::now();
            let after_revoke = flag.get().is_some_and(|t| *t <= started);
            let status = client
                .get(&url)
                .bearer_auth(&plaintext)
                .send()
                .await
                .expect("whoami")
                .status();
            if after_revoke && status == StatusCode::OK {
                late_successes += 1;
            }
        }
        late_successes
    });
    tokio::time::sleep(Duration::from_millis(30)).await;
    let resp = s
        .request(Method::DELETE, &format!("/api/v1/keys/{}", key.id))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("revoke");
    assert_eq!(resp.status(), StatusCode::OK);
    revoked_at.set(std::time::Instant::now()).expect("set once");
    assert_eq!(hammer.await.expect("hammer"), 0);
    s.stop().await;
}

#[tokio::test]
async fn key_management_with_an_agent_key_is_403() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await;
    let attempts = [
        s.post("/api/v1/keys")
            .bearer_auth(&key.plaintext)
            .json(&json!({"name": "x"})),
        s.get("/api/v1/keys").bearer_auth(&key.plaintext),
        s.get("/api/v1/keys").header("x-api-key", &key.plaintext),
        s.request(Method::DELETE, &format!("/api/v1/keys/{}", key.id))
            .bearer_auth(&key.plaintext),
        s.post("/api/v1/keys/legacy")
            .bearer_auth(&key.plaintext)
            .json(&json!({"name": "x"})),
    ];
    for req in attempts {
        expect_error(
            req.send().await.expect("req"),
            StatusCode::FORBIDDEN,
            "forbidden",
        )
        .await;
    }
    // The key was not revoked by its own attempt.
    assert_eq!(
        s.get("/api/v1/keys/whoami")
            .bearer_auth(&key.plaintext)
            .send()
            .await
            .expect("whoami")
            .status(),
        StatusCode::OK
    );
    s.stop().await;
}

#[tokio::test]
async fn whoami_needs_an_agent_key() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let legacy = s.legacy_key(&a).await;
    assert!(legacy.plaintext.starts_with("dsk_"), "{}", legacy.plaintext);
    assert_eq!(legacy.meta["kind"], "legacy");
    // A JWT is a valid credential but not an agent key.
    expect_error(
        s.get("/api/v1/keys/whoami")
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("req"),
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    // Legacy keys are not credentials outside the event and webhook routes.
    let resp = s
        .get("/api/v1/keys/whoami")
        .header("x-api-key", &legacy.plaintext)
        .send()
        .await
        .expect("req");
    expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    // No credential, a malformed key, a well-formed key that was never issued.
    expect_error(
        s.get("/api/v1/keys/whoami").send().await.expect("req"),
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
    )
    .await;
    let k = s.agent_key(&a).await.plaintext;
    let mut typo: Vec<char> = k.chars().collect();
    typo[15] = if typo[15] == 'x' { 'y' } else { 'x' };
    let typo: String = typo.into_iter().collect();
    for bad in [
        typo,
        "svc_live_nope".to_owned(),
        format!("{}AAAAAA", &k[..k.len() - 6]),
    ] {
        let resp = s
            .get("/api/v1/keys/whoami")
            .bearer_auth(&bad)
            .send()
            .await
            .expect("req");
        expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    }
    s.stop().await;
}

#[tokio::test]
async fn credential_resolution_order_and_conflicts() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let k1 = s.agent_key(&a).await;
    let k2 = s.agent_key(&a).await;
    let whoami = || s.get("/api/v1/keys/whoami");

    // The same key in both headers is fine.
    let (status, me) = read(
        whoami()
            .bearer_auth(&k1.plaintext)
            .header("x-api-key", &k1.plaintext)
            .send()
            .await
            .expect("req"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["key_id"], json!(k1.id));

    // Two different valid credentials: refused, whichever kinds they are.
    let resp = whoami()
        .bearer_auth(&k1.plaintext)
        .header("x-api-key", &k2.plaintext)
        .send()
        .await
        .expect("req");
    expect_error(resp, StatusCode::BAD_REQUEST, "ambiguous_credentials").await;
    let resp = whoami()
        .bearer_auth(&a.token)
        .header("x-api-key", &k1.plaintext)
        .send()
        .await
        .expect("req");
    expect_error(resp, StatusCode::BAD_REQUEST, "ambiguous_credentials").await;
    let resp = s
        .get("/api/v1/keys")
        .bearer_auth(&a.token)
        .header("x-api-key", &k2.plaintext)
        .send()
        .await
        .expect("req");
    expect_error(resp, StatusCode::BAD_REQUEST, "ambiguous_credentials").await;

    // An invalid bearer does not hide a valid X-API-Key (the order only picks among valid ones).
    let (status, me) = read(
        whoami()
            .bearer_auth("svc_live_invalid")
            .header("x-api-key", &k2.plaintext)
            .send()
            .await
            .expect("req"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["key_id"], json!(k2.id));

    // A revoked key next to a valid one: the valid one is used.
    s.request(Method::DELETE, &format!("/api/v1/keys/{}", k1.id))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("revoke");
    let (status, me) = read(
        whoami()
            .bearer_auth(&k1.plaintext)
            .header("x-api-key", &k2.plaintext)
            .send()
            .await
            .expect("req"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["key_id"], json!(k2.id));

    // A legacy key in X-API-Key next to a JWT on a JWT route is not a second credential.
    let legacy = s.legacy_key(&a).await;
    let resp = s
        .get("/api/v1/keys")
        .bearer_auth(&a.token)
        .header("x-api-key", &legacy.plaintext)
        .send()
        .await
        .expect("req");
    assert_eq!(resp.status(), StatusCode::OK);
    s.stop().await;
}

#[tokio::test]
async fn per_key_rate_limit_with_headers_and_retry_after() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let slow = s
        .mint_key(&a, json!({"name": "slow", "rate_limit_per_min": 3}))
        .await;
    let other = s
        .mint_key(&a, json!({"name": "other", "rate_limit_per_min": 3}))
        .await;
    let header = |r: &reqwest::Response, h: &str| -> u64 {
        r.headers()
            .get(h)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{h}"))
    };
    for expected_remaining in [2, 1, 0] {
        let r = s
            .get("/api/v1/keys/whoami")
            .bearer_auth(&slow.plaintext)
            .send()
            .await
            .expect("req");
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(header(&r, "x-ratelimit-limit"), 3);
        assert_eq!(header(&r, "x-ratelimit-remaining"), expected_remaining);
        assert!(header(&r, "x-ratelimit-reset") <= 60);
    }
    let r = s
        .get("/api/v1/keys/whoami")
        .bearer_auth(&slow.plaintext)
        .send()
        .await
        .expect("req");
    assert_eq!(header(&r, "x-ratelimit-remaining"), 0);
    let retry = header(&r, "retry-after");
    assert!((1..=20).contains(&retry), "one interval is 20 s: {retry}");
    expect_error(r, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    // Limits are per key.
    let r = s
        .get("/api/v1/keys/whoami")
        .bearer_auth(&other.plaintext)
        .send()
        .await
        .expect("req");
    assert_eq!(r.status(), StatusCode::OK);
    s.stop().await;
}
