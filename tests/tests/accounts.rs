//! Registration, login, sessions, JWT validation and workspace settings.

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::{expect_error, read, str_at, unique, Capability, TestServer};

#[tokio::test]
async fn register_creates_user_and_workspace_and_returns_a_jwt() {
    let s = TestServer::start().await;
    let email = format!("Ada-{}@Example.com", unique());
    let resp = s
        .post("/api/auth/register")
        .json(&json!({"email": email, "password": "lovelace-1815", "name": "Ada"}))
        .send()
        .await
        .expect("register");
    let (status, body) = read(resp).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["token_type"], "Bearer");
    let token = str_at(&body, "/token");
    assert_eq!(token.split('.').count(), 3, "a JWT");
    assert!(str_at(&body, "/user/id").starts_with("usr_"));
    assert_eq!(str_at(&body, "/user/email"), email);
    let ws = str_at(&body, "/workspace/id");
    assert!(ws.starts_with("ws_") && ws.len() == 19, "{ws}");
    assert_eq!(body.pointer("/workspace/plan"), Some(&json!("free")));
    assert_eq!(
        body.pointer("/workspace/monthly_credit_limit"),
        Some(&json!(100))
    );
    assert!(body.get("password").is_none() && !body.to_string().contains("lovelace-1815"));

    // The token's expiry is 7 days out.
    let exp = time::OffsetDateTime::parse(
        &str_at(&body, "/expires_at"),
        &time::format_description::well_known::Rfc3339,
    )
    .expect("expires_at");
    let days = (exp - time::OffsetDateTime::now_utc()).whole_hours();
    assert!((167..=168).contains(&days), "{days} hours");

    // The session shows the same user and workspace.
    let (status, session) = read(
        s.get("/api/auth/session")
            .bearer_auth(&token)
            .send()
            .await
            .expect("session"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{session}");
    assert_eq!(session.pointer("/user/id"), body.pointer("/user/id"));
    assert_eq!(session.pointer("/workspace/id"), Some(&json!(ws)));
    assert_eq!(session.pointer("/expires_at"), body.pointer("/expires_at"));
    s.stop().await;
}

#[tokio::test]
async fn each_registration_gets_its_own_workspace() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let b = s.account().await;
    assert_ne!(a.workspace_id, b.workspace_id);
    assert_ne!(a.user_id, b.user_id);
    s.stop().await;
}

#[tokio::test]
async fn duplicate_email_is_409_in_any_letter_case() {
    let s = TestServer::start().await;
    let email = format!("dup-{}@example.com", unique());
    s.register(&email, "password-one", "One").await;
    let resp = s
        .post("/api/auth/register")
        .json(&json!({"email": email.to_uppercase(), "password": "password-two", "name": "Two"}))
        .send()
        .await
        .expect("register");
    expect_error(resp, StatusCode::CONFLICT, "conflict").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_registrations_of_one_email_create_one_user() {
    let s = TestServer::start().await;
    let email = format!("race-{}@example.com", unique());
    let mut tasks = Vec::new();
    for i in 0..8 {
        let req = s
            .post("/api/auth/register")
            .json(&json!({"email": email, "password": "password-race", "name": format!("r{i}")}));
        tasks.push(tokio::spawn(async move {
            req.send().await.expect("register").status()
        }));
    }
    let mut created = 0;
    for t in tasks {
        match t.await.expect("task") {
            StatusCode::CREATED => created += 1,
            StatusCode::CONFLICT => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(created, 1);
    s.stop().await;
}

#[tokio::test]
async fn registration_validates_fields() {
    let s = TestServer::start().await;
    for (body, needle) in [
        (
            json!({"email": "a@b.co", "password": "short", "name": "A"}),
            "password",
        ),
        (
            json!({"email": "not-an-email", "password": "long enough", "name": "A"}),
            "email",
        ),
        (
            json!({"email": "a@b.co", "password": "long enough", "name": "  "}),
            "name",
        ),
        (
            json!({"email": "a@b.co", "password": "long enough"}),
            "name",
        ),
    ] {
        let resp = s
            .post("/api/auth/register")
            .json(&body)
            .send()
            .await
            .expect("register");
        let err = expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
        assert!(str_at(&err, "/error/message").contains(needle), "{err}");
    }
    s.stop().await;
}

#[tokio::test]
async fn login_returns_a_working_jwt() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let resp = s
        .post("/api/auth/login")
        .json(&json!({"email": a.email.to_uppercase(), "password": a.password}))
        .send()
        .await
        .expect("login");
    let (status, body) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let token = str_at(&body, "/token");
    assert_eq!(str_at(&body, "/workspace/id"), a.workspace_id);
    let (status, _) = read(
        s.get("/api/auth/session")
            .bearer_auth(&token)
            .send()
            .await
            .expect("session"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    s.stop().await;
}

#[tokio::test]
async fn unknown_user_and_wrong_password_look_the_same() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let wrong = s
        .post("/api/auth/login")
        .json(&json!({"email": a.email, "password": "not the password"}))
        .send()
        .await
        .expect("login");
    let wrong = expect_error(wrong, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    let unknown = s
        .post("/api/auth/login")
        .json(&json!({"email": format!("ghost-{}@example.com", unique()), "password": "not the password"}))
        .send()
        .await
        .expect("login");
    let unknown = expect_error(unknown, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    assert_eq!(wrong["error"]["message"], unknown["error"]["message"]);
    s.stop().await;
}

#[tokio::test]
async fn repeated_login_failures_are_rate_limited_per_email() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let b = s.account().await;
    for _ in 0..5 {
        let resp = s
            .post("/api/auth/login")
            .json(&json!({"email": a.email, "password": "guess guess"}))
            .send()
            .await
            .expect("login");
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    }
    // Now even the right password is refused for a while, with Retry-After.
    let resp = s
        .post("/api/auth/login")
        .json(&json!({"email": a.email, "password": a.password}))
        .send()
        .await
        .expect("login");
    let retry: u64 = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After");
    assert!(retry > 0 && retry <= 15 * 60, "{retry}");
    expect_error(resp, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    // Another email is unaffected.
    let resp = s
        .post("/api/auth/login")
        .json(&json!({"email": b.email, "password": b.password}))
        .send()
        .await
        .expect("login");
    assert_eq!(resp.status(), StatusCode::OK);
    s.stop().await;
}

#[tokio::test]
async fn session_needs_a_valid_token() {
    let s = TestServer::start().await;
    let a = s.account().await;
    expect_error(
        s.get("/api/auth/session").send().await.expect("req"),
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
    )
    .await;

    let parts: Vec<&str> = a.token.split('.').collect();
    // Forged: payload altered (other user), signature kept.
    let forged_payload = b64url(
        &json!({"sub": "usr_someoneelse", "ws": a.workspace_id, "iat": 0, "exp": 4_000_000_000u64, "iss": "svcd", "aud": "svc-dashboard"})
            .to_string(),
    );
    let forged = format!("{}.{}.{}", parts[0], forged_payload, parts[2]);
    // alg "none" with the original payload and no signature.
    let none = format!("{}.{}.", b64url(r#"{"alg":"none","typ":"JWT"}"#), parts[1]);
    // Signature of another token.
    let truncated = format!(
        "{}.{}.{}",
        parts[0],
        parts[1],
        &parts[2][..parts[2].len() - 2]
    );
    for bad in [
        forged,
        none,
        truncated,
        "garbage".to_owned(),
        "a.b.c".to_owned(),
    ] {
        let resp = s
            .get("/api/auth/session")
            .bearer_auth(&bad)
            .send()
            .await
            .expect("req");
        expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    }
    // Not a Bearer scheme.
    let resp = s
        .get("/api/auth/session")
        .header("authorization", format!("Basic {}", a.token))
        .send()
        .await
        .expect("req");
    expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    s.stop().await;
}

#[tokio::test]
async fn tokens_from_another_data_directory_do_not_verify() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let other = TestServer::start().await;
    // Each data directory generated its own secret.
    let resp = other
        .get("/api/auth/session")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("req");
    expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    s.stop().await;
    other.stop().await;
}

fn b64url(s: &str) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = s.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[tokio::test]
async fn workspace_settings_read_and_update() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let (status, ws) = read(
        s.get("/api/v1/workspace")
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("get"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{ws}");
    assert_eq!(ws["id"], json!(a.workspace_id));
    assert_eq!(ws["plan"], "free");
    assert_eq!(ws["read_only"], false);
    assert_eq!(
        ws["policy"],
        json!({"forbid": [], "auto_approve": [], "max_outreach_per_customer_per_week": 3})
    );

    let put = |body: Value| {
        s.request(reqwest::Method::PUT, "/api/v1/workspace")
            .bearer_auth(&a.token)
            .json(&body)
            .send()
    };
    let (status, ws) = read(
        put(json!({"read_only": true, "policy": {"forbid": [Capability::ExecuteCall.id()], "auto_approve": [Capability::QueueOutreach.id()]}}))
            .await
            .expect("put"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{ws}");
    assert_eq!(ws["read_only"], true);
    assert_eq!(
        ws["policy"]["forbid"],
        json!([Capability::ExecuteCall.id()])
    );

    // Partial update keeps the rest.
    let (_, ws) = read(put(json!({"read_only": false})).await.expect("put")).await;
    assert_eq!(ws["read_only"], false);
    assert_eq!(
        ws["policy"]["auto_approve"],
        json!([Capability::QueueOutreach.id()])
    );

    // The plan and credit limits are the operator's: a member raising them is refused, with the
    // field named, and nothing else in the request is applied.
    for body in [
        json!({"plan": "growth"}),
        json!({"plan": "enterprise", "monthly_credit_limit": 123456, "read_only": true}),
        json!({"monthly_credit_limit": 5}),
        json!({"plan": "free"}),
    ] {
        let err = expect_error(
            put(body.clone()).await.expect("put"),
            StatusCode::FORBIDDEN,
            "forbidden",
        )
        .await;
        let message = str_at(&err, "/error/message");
        assert!(message.contains("operator"), "{body}: {message}");
        let field = str_at(&err, "/error/details/field");
        assert!(body.get(&field).is_some(), "{body}: {err}");
    }

    // The operator's change shows in the member's view.
    let ws = s
        .operator_set_plan(&a.workspace_id, "enterprise", Some(123456))
        .await;
    assert_eq!(ws["plan"], "enterprise");
    assert_eq!(ws["monthly_credit_limit"], 123456);
    let ws = s.operator_set_plan(&a.workspace_id, "growth", None).await;
    assert_eq!(ws["monthly_credit_limit"], 3000);

    // Unknown values are named.
    let err = expect_error(
        put(json!({"policy": {"forbid": [Capability::ContextGet.id(), "teleport.now"]}}))
            .await
            .expect("put"),
        StatusCode::BAD_REQUEST,
        "invalid_input",
    )
    .await;
    assert!(
        str_at(&err, "/error/message").contains("teleport.now"),
        "{err}"
    );
    expect_error(
        put(json!({"colour": "blue"})).await.expect("put"),
        StatusCode::BAD_REQUEST,
        "invalid_input",
    )
    .await;

    // Failed updates changed nothing.
    let (_, ws) = read(
        s.get("/api/v1/workspace")
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("get"),
    )
    .await;
    assert_eq!(ws["plan"], "growth");
    assert_eq!(ws["read_only"], false);
    assert_eq!(
        ws["policy"]["forbid"],
        json!([Capability::ExecuteCall.id()])
    );
    s.stop().await;
}

#[tokio::test]
async fn agent_keys_cannot_use_workspace_or_session_routes() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await;
    for (method, path) in [
        ("GET", "/api/v1/workspace"),
        ("PUT", "/api/v1/workspace"),
        ("GET", "/api/auth/session"),
    ] {
        let m = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let resp = s
            .request(m, path)
            .bearer_auth(&key.plaintext)
            .json(&json!({}))
            .send()
            .await
            .expect("req");
        expect_error(resp, StatusCode::FORBIDDEN, "forbidden").await;
    }
    s.stop().await;
}

/// Issue 29: each sign-up and sign-in costs an argon2 hash, so one address gets a bounded
/// number per minute whatever emails it names (the per-email login limit does not stop a spray
/// of different emails).
#[tokio::test]
async fn sign_ups_and_sign_ins_are_limited_per_address() {
    let s = TestServer::start().await;
    let mut statuses = Vec::new();
    for i in 0..12 {
        let resp = s
            .post("/api/auth/register")
            .json(
                &json!({"email": format!("burst-{i}-{}@example.com", unique()),
                          "password": "long enough password", "name": "Burst"}),
            )
            .send()
            .await
            .expect("register");
        if resp.status() == StatusCode::TOO_MANY_REQUESTS {
            assert!(resp.headers().get("retry-after").is_some());
        }
        statuses.push(resp.status().as_u16());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        10,
        "{statuses:?}"
    );
    assert_eq!(statuses[10..], [429, 429], "{statuses:?}");

    // 30 a minute: the first 30 are answered; the bucket refills one every 2 s, so on a slow
    // machine one of the last two may be answered too, but not both.
    let mut refused = Vec::new();
    for i in 0..32 {
        let resp = s
            .post("/api/auth/login")
            .json(&json!({"email": format!("nobody-{i}@example.com"), "password": "guess guess"}))
            .send()
            .await
            .expect("login");
        match resp.status() {
            StatusCode::UNAUTHORIZED => {}
            StatusCode::TOO_MANY_REQUESTS => refused.push(i),
            other => panic!("unexpected {other}"),
        }
    }
    assert!(
        !refused.is_empty() && refused.iter().all(|i| *i >= 30),
        "30 attempts per minute from one address: refused {refused:?}"
    );
}
