//! Webhook signing secrets and the platforms' signature schemes through real HTTP: real HMACs
//! computed here exactly as each platform computes them, refusals (missing, wrong, tampered,
//! stale) that write nothing, JWT-only secret management, and secrets never on disk in
//! plaintext.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sha1::Sha1;
use sha2::Sha256;
use svc_integration_tests::{
    all_files, contains_bytes, expect_error, get_ok, read, str_at, unique, Account, TestServer,
};

const PLATFORMS: [&str; 6] = [
    "stripe",
    "shopify",
    "hubspot",
    "segment",
    "customerio",
    "generic",
];

fn hmac256(secret: &str, parts: &[&[u8]]) -> Vec<u8> {
    let mut m = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().to_vec()
}

fn hmac1(secret: &str, body: &[u8]) -> Vec<u8> {
    let mut m = Hmac::<Sha1>::new_from_slice(secret.as_bytes()).expect("any key length");
    m.update(body);
    m.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// A delivery as the platform would send it: a body and its headers (signature included).
struct Delivery {
    body: Vec<u8>,
    headers: Vec<(String, String)>,
}

/// `platform`'s sample delivery for customer number `n`, signed with `secret` as of `ts`
/// (Unix seconds); `url` is the full URL it is posted to (HubSpot signs it).
fn signed(platform: &str, secret: &str, n: u32, ts: i64, url: &str) -> Delivery {
    let t = ts.to_string();
    let (body, headers): (Value, Vec<(&str, String)>) = match platform {
        "stripe" => (
            json!({"id": format!("evt_{n}"), "object": "event", "type": "customer.created",
                   "created": ts, "data": {"object": {"id": format!("cus_S{n}"),
                   "object": "customer", "email": format!("stripe{n}@x.io")}}}),
            vec![],
        ),
        "shopify" => (
            json!({"id": n, "email": format!("shop{n}@x.io"),
                   "created_at": "2026-01-02T10:00:00-05:00"}),
            vec![
                ("x-shopify-topic", "customers/create".to_owned()),
                ("x-shopify-webhook-id", format!("w-{n}")),
            ],
        ),
        "hubspot" => (
            json!([{"eventId": n, "subscriptionType": "contact.creation",
                    "objectId": 1000 + n, "occurredAt": ts * 1000}]),
            vec![],
        ),
        "segment" => (
            json!({"type": "track", "event": "Signed Up", "userId": format!("seg-{n}"),
                   "messageId": format!("m-{n}")}),
            vec![],
        ),
        "customerio" => (
            json!({"event_id": format!("cio-{n}"), "object_type": "email", "metric": "opened",
                   "timestamp": ts, "data": {"identifiers": {"id": format!("c-{n}"),
                   "email": format!("cio{n}@x.io")}}}),
            vec![],
        ),
        _ => (
            json!({"action": "signup", "customerId": format!("gen-{n}")}),
            vec![],
        ),
    };
    let body = serde_json::to_vec(&body).expect("json");
    let signature: Vec<(&str, String)> = match platform {
        "stripe" => vec![(
            "stripe-signature",
            format!(
                "t={t},v1={}",
                hex(&hmac256(secret, &[t.as_bytes(), b".", &body]))
            ),
        )],
        "shopify" => vec![("x-shopify-hmac-sha256", b64(&hmac256(secret, &[&body])))],
        "hubspot" => {
            let ms = (ts * 1000).to_string();
            let sig = hmac256(secret, &[b"POST", url.as_bytes(), &body, ms.as_bytes()]);
            vec![
                ("x-hubspot-signature-v3", b64(&sig)),
                ("x-hubspot-request-timestamp", ms),
            ]
        }
        "segment" => vec![("x-signature", hex(&hmac1(secret, &body)))],
        "customerio" => vec![
            (
                "x-cio-signature",
                hex(&hmac256(secret, &[b"v0:", t.as_bytes(), b":", &body])),
            ),
            ("x-cio-timestamp", t.clone()),
        ],
        _ => vec![(
            "x-svc-signature",
            format!(
                "t={t},v1={}",
                hex(&hmac256(secret, &[t.as_bytes(), b".", &body]))
            ),
        )],
    };
    Delivery {
        body,
        headers: headers
            .into_iter()
            .chain(signature)
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    }
}

/// Platforms whose signature carries a timestamp (the others sign the body alone).
fn timestamped(platform: &str) -> bool {
    !matches!(platform, "shopify" | "segment")
}

async fn post(s: &TestServer, path: &str, d: &Delivery, key: Option<&str>) -> reqwest::Response {
    let mut req = s
        .post(path)
        .header("content-type", "application/json")
        .body(d.body.clone());
    for (k, v) in &d.headers {
        req = req.header(k, v);
    }
    if let Some(k) = key {
        req = req.header("x-api-key", k);
    }
    req.send().await.expect("send")
}

async fn set_secret(s: &TestServer, a: &Account, platform: &str, secret: &str) -> Value {
    let resp = s
        .request(Method::PUT, &format!("/api/v1/webhooks/{platform}/secret"))
        .bearer_auth(&a.token)
        .json(&json!({ "secret": secret }))
        .send()
        .await
        .expect("send");
    let status = resp.status();
    let text = resp.text().await.expect("body");
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(!text.contains(secret), "the secret is never echoed: {text}");
    serde_json::from_str(&text).expect("json")
}

async fn mint_token(s: &TestServer, a: &Account) -> String {
    let resp = s
        .post("/api/v1/webhooks/token")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    str_at(&v, "/token")
}

async fn customer_count(s: &TestServer, a: &Account) -> usize {
    let v = get_ok(s, "/v1/customers", &a.token).await;
    v["customers"].as_array().map_or(0, Vec::len)
}

fn secret_for(platform: &str) -> String {
    format!("{platform}_signing_secret_{}", unique())
}

#[tokio::test]
async fn each_platform_signature_is_enforced_and_refusals_write_nothing() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let token = mint_token(&s, &a).await;
    let secrets: Vec<(&str, String)> = PLATFORMS.iter().map(|p| (*p, secret_for(p))).collect();
    for (p, secret) in &secrets {
        let v = set_secret(&s, &a, p, secret).await;
        assert_eq!(v["configured"], json!(true), "{v}");
    }
    let now = unix_now();
    for (n, (p, secret)) in (1u32..).zip(&secrets) {
        let path = format!("/api/webhooks/{p}?token={token}");
        let url = s.url(&path);
        let good = signed(p, secret, n, now, &url);

        // A changed body under the original signature.
        let mut tampered = Delivery {
            body: good.body.clone(),
            headers: good.headers.clone(),
        };
        let at = tampered
            .body
            .iter()
            .position(|b| b.is_ascii_digit())
            .expect("a digit");
        tampered.body[at] = if tampered.body[at] == b'9' {
            b'8'
        } else {
            b'9'
        };
        let r = post(&s, &path, &tampered, None).await;
        expect_error(r, StatusCode::UNAUTHORIZED, "invalid_signature").await;

        // Signed with another secret.
        let forged = signed(p, "not_the_workspace_secret_0000", n, now, &url);
        let r = post(&s, &path, &forged, None).await;
        expect_error(r, StatusCode::UNAUTHORIZED, "invalid_signature").await;

        // No signature at all (the platform's other headers kept).
        let unsigned = Delivery {
            body: good.body.clone(),
            headers: good
                .headers
                .iter()
                .filter(|(k, _)| k == "x-shopify-topic" || k == "x-shopify-webhook-id")
                .cloned()
                .collect(),
        };
        let r = post(&s, &path, &unsigned, None).await;
        let e = expect_error(r, StatusCode::UNAUTHORIZED, "invalid_signature").await;
        assert!(str_at(&e, "/error/message").contains("missing"), "{e}");

        // Correctly signed, but longer ago (or further ahead) than the 5-minute tolerance.
        if timestamped(p) {
            // 6 minutes either way: clear of the 5-minute window however long the test runs.
            for skew in [-360, 360] {
                let stale = signed(p, secret, n, now + skew, &url);
                let r = post(&s, &path, &stale, None).await;
                let e = expect_error(r, StatusCode::UNAUTHORIZED, "invalid_signature").await;
                assert!(str_at(&e, "/error/message").contains("minutes"), "{e}");
            }
        }
        // Enforced whatever the credential: an agent key does not skip the check.
        let key = s.agent_key(&a).await.plaintext;
        let r = post(&s, &format!("/api/webhooks/{p}"), &unsigned, Some(&key)).await;
        expect_error(r, StatusCode::UNAUTHORIZED, "invalid_signature").await;
    }
    assert_eq!(customer_count(&s, &a).await, 0, "no refused delivery wrote");

    for (n, (p, secret)) in (1u32..).zip(&secrets) {
        let path = format!("/api/webhooks/{p}?token={token}");
        let good = signed(p, secret, n, now, &s.url(&path));
        let (status, v) = read(post(&s, &path, &good, None).await).await;
        assert_eq!(status, StatusCode::OK, "{p}: {v}");
        assert_eq!(v["accepted"], json!(1), "{p}: {v}");
        // The same signed delivery replayed inside the tolerance is recognised, even for the
        // generic platform whose event carries no messageId (issue 29).
        let (status, again) = read(post(&s, &path, &good, None).await).await;
        assert_eq!(status, StatusCode::OK, "{p}: {again}");
        let first = &v["results"][0]["result"];
        let replay = &again["results"][0]["result"];
        assert_eq!(
            replay["duplicate"],
            json!(true),
            "{p} replay ingested again: {again}"
        );
        assert_eq!(
            replay["touchpoint_id"], first["touchpoint_id"],
            "{p}: {again}"
        );
    }
    assert_eq!(customer_count(&s, &a).await, PLATFORMS.len());

    // A rotated secret replaces the old one at once; a deleted one stops the checks.
    let rotated = secret_for("stripe");
    set_secret(&s, &a, "stripe", &rotated).await;
    let path = format!("/api/webhooks/stripe?token={token}");
    let old = signed("stripe", &secrets[0].1, 50, now, "");
    let r = post(&s, &path, &old, None).await;
    expect_error(r, StatusCode::UNAUTHORIZED, "invalid_signature").await;
    let new = signed("stripe", &rotated, 50, now, "");
    assert_eq!(post(&s, &path, &new, None).await.status(), StatusCode::OK);
    let resp = s
        .request(Method::DELETE, "/api/v1/webhooks/stripe/secret")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    let (status, v) = read(resp).await;
    assert_eq!(
        (status, v["configured"].clone()),
        (StatusCode::OK, json!(false))
    );
    let unsigned = Delivery {
        body: signed("stripe", &rotated, 51, now, "").body,
        headers: vec![],
    };
    assert_eq!(
        post(&s, &path, &unsigned, None).await.status(),
        StatusCode::OK
    );
    // Other workspaces have no secret: their unsigned deliveries pass.
    let b = s.account().await;
    let other = mint_token(&s, &b).await;
    let unsigned = Delivery {
        body: signed("segment", "unused_secret_000000", 52, now, "").body,
        headers: vec![],
    };
    let path = format!("/api/webhooks/segment?token={other}");
    let (status, v) = read(post(&s, &path, &unsigned, None).await).await;
    assert_eq!(
        (status, v["accepted"].clone()),
        (StatusCode::OK, json!(1)),
        "{v}"
    );
}

#[tokio::test]
async fn secrets_are_jwt_only_sealed_on_disk_and_survive_a_restart() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    let put = |auth: String, platform: &str, body: Value| {
        s.request(Method::PUT, &format!("/api/v1/webhooks/{platform}/secret"))
            .bearer_auth(auth)
            .json(&body)
            .send()
    };
    let r = put(
        key.clone(),
        "stripe",
        json!({"secret": secret_for("stripe")}),
    )
    .await
    .expect("send");
    expect_error(r, StatusCode::FORBIDDEN, "forbidden").await;
    let r = put(
        a.token.clone(),
        "myspace",
        json!({"secret": secret_for("x")}),
    )
    .await
    .expect("send");
    let e = expect_error(r, StatusCode::NOT_FOUND, "not_found").await;
    assert_eq!(
        e["error"]["details"]["supported"].as_array().map(Vec::len),
        Some(6)
    );
    let r = put(a.token.clone(), "stripe", json!({"secret": "tiny-secret"}))
        .await
        .expect("send");
    let e = expect_error(r, StatusCode::BAD_REQUEST, "invalid_input").await;
    assert!(!e.to_string().contains("tiny-secret"), "{e}");

    let secrets: Vec<(&str, String)> = PLATFORMS.iter().map(|p| (*p, secret_for(p))).collect();
    for (p, secret) in &secrets {
        set_secret(&s, &a, p, secret).await;
        let v = get_ok(&s, &format!("/api/v1/webhooks/{p}/secret"), &a.token).await;
        assert_eq!(v["configured"], json!(true), "{v}");
        let text = v.to_string();
        assert!(!text.contains(secret.as_str()), "{text}");
    }
    let token = mint_token(&s, &a).await;
    let (dir, config) = s.stop().await;
    for (path, bytes) in all_files(&config.data_dir) {
        for (p, secret) in &secrets {
            assert!(
                !contains_bytes(&bytes, secret.as_bytes()),
                "{p}'s secret in plaintext in {}",
                path.display()
            );
        }
    }
    // Sealed with the data directory's master key: still verifying after a restart.
    let s = TestServer::start_with(dir, config).await;
    let path = format!("/api/webhooks/customerio?token={token}");
    let d = signed("customerio", &secrets[4].1, 7, unix_now(), "");
    let (status, v) = read(post(&s, &path, &d, None).await).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let wrong = signed("customerio", &secrets[0].1, 8, unix_now(), "");
    let r = post(&s, &path, &wrong, None).await;
    expect_error(r, StatusCode::UNAUTHORIZED, "invalid_signature").await;
}
