//! Roles inside a workspace, through real HTTP: the registering user is the owner; owners
//! invite members by email, a member joins with the one-time token; only owners manage keys,
//! integrations, webhook secrets and invites (403 `owner_required`), which the test checks on
//! every route `/openapi.json` marks `owner_only`. A key's own credit budget cannot exceed
//! the plan, which only the operator changes.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use svc_integration_tests::{expect_error, get_ok, read, str_at, unique, Account, TestServer};

/// Invites `email` into `owner`'s workspace; returns the one-time token.
async fn invite(s: &TestServer, owner: &Account, email: &str) -> String {
    let resp = s
        .post("/api/v1/workspace/invites")
        .bearer_auth(&owner.token)
        .json(&json!({ "email": email }))
        .send()
        .await
        .expect("invite");
    let (status, body) = read(resp).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["workspace_id"], owner.workspace_id.as_str());
    let token = str_at(&body, "/token");
    assert!(token.starts_with("inv_"), "{token}");
    token
}

async fn accept(s: &TestServer, token: &str, password: &str) -> reqwest::Response {
    s.post("/api/auth/accept-invite")
        .json(&json!({"token": token, "password": password, "name": "Mia Member"}))
        .send()
        .await
        .expect("accept")
}

#[tokio::test]
async fn an_invited_member_joins_the_owners_workspace_once() {
    let s = TestServer::start().await;
    let owner = s.account().await;
    let session = get_ok(&s, "/api/auth/session", &owner.token).await;
    assert_eq!(session["user"]["role"], "owner");

    let email = format!("Invitee-{}@Example.com", unique());
    let token = invite(&s, &owner, &email).await;
    let resp = accept(&s, &token, "member password 1").await;
    let (status, body) = read(resp).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["workspace"]["id"], owner.workspace_id.as_str());
    assert_eq!(body["user"]["role"], "member");
    assert_eq!(body["user"]["email"], email.as_str());
    let member_token = str_at(&body, "/token");

    // The token is single-use; unknown tokens are refused the same way.
    for bad in [token.as_str(), "inv_nope", ""] {
        let r = accept(&s, bad, "member password 1").await;
        expect_error(r, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    }
    // The member logs in with the password they chose.
    let login = s
        .post("/api/auth/login")
        .json(&json!({"email": email.to_lowercase(), "password": "member password 1"}))
        .send()
        .await
        .expect("login");
    let (status, body) = read(login).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["role"], "member");

    // Both see the same member list, owner first.
    for t in [&owner.token, &member_token] {
        let list = get_ok(&s, "/api/v1/workspace/members", t).await;
        let roles: Vec<(&str, &str)> = list["members"]
            .as_array()
            .expect("members")
            .iter()
            .map(|m| {
                (
                    m["email"].as_str().unwrap_or_default(),
                    m["role"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            roles,
            [(owner.email.as_str(), "owner"), (email.as_str(), "member")]
        );
    }
    // Another workspace sees only its own.
    let other = s.account().await;
    let list = get_ok(&s, "/api/v1/workspace/members", &other.token).await;
    assert_eq!(list["members"].as_array().map(Vec::len), Some(1));

    // Inviting does not tell whether an email has an account: the answer has the same shape
    // as for a new email, and only accepting it fails, as registering it would.
    let r = s
        .post("/api/v1/workspace/invites")
        .bearer_auth(&owner.token)
        .json(&json!({ "email": other.email }))
        .send()
        .await
        .expect("invite");
    assert_eq!(r.status(), StatusCode::CREATED);
    let taken: Value = r.json().await.expect("json");
    let mut keys_taken: Vec<&String> = taken.as_object().expect("object").keys().collect();
    keys_taken.sort();
    assert_eq!(keys_taken, ["email", "expires_at", "token", "workspace_id"]);
    let r = s
        .post("/api/auth/accept-invite")
        .json(&json!({"token": taken["token"], "password": "a long password", "name": "X"}))
        .send()
        .await
        .expect("accept");
    expect_error(r, StatusCode::CONFLICT, "conflict").await;
    let r = s
        .post("/api/v1/workspace/invites")
        .bearer_auth(&owner.token)
        .json(&json!({ "email": "not an email" }))
        .send()
        .await
        .expect("invite");
    expect_error(r, StatusCode::BAD_REQUEST, "invalid_input").await;
    // A short password is refused before the token is spent.
    let token = invite(&s, &owner, &format!("late-{}@example.com", unique())).await;
    let r = accept(&s, &token, "short").await;
    expect_error(r, StatusCode::BAD_REQUEST, "invalid_input").await;
    let (status, _) = read(accept(&s, &token, "long enough now").await).await;
    assert_eq!(status, StatusCode::CREATED);
}

/// `/openapi.json` path with every `{param}` filled in.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|seg| if seg.starts_with('{') { "generic" } else { seg })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test]
async fn members_are_refused_on_every_owner_only_route_and_only_there() {
    let s = TestServer::start().await;
    let owner = s.account().await;
    let member = s.member(&owner).await;
    let doc = get_ok(&s, "/openapi.json", &owner.token).await;
    let mut owner_only = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("item") {
            let Ok(m) = Method::from_bytes(method.to_uppercase().as_bytes()) else {
                continue;
            };
            let Some(access) = op.get("x-access") else {
                continue;
            };
            let takes_jwt = access["credentials"]
                .as_array()
                .is_some_and(|c| c.iter().any(|k| k == "jwt"));
            if !takes_jwt || m == Method::GET && path == "/v1/stream" {
                continue;
            }
            let resp = s
                .request(m.clone(), &concrete(path))
                .bearer_auth(&member.token)
                .json(&json!({}))
                .send()
                .await
                .expect("send");
            if access["owner_only"] == true {
                owner_only.push(format!("{method} {path}"));
                expect_error(resp, StatusCode::FORBIDDEN, "owner_required").await;
            } else {
                let (status, body) = read(resp).await;
                assert_ne!(
                    body.pointer("/error/code").and_then(Value::as_str),
                    Some("owner_required"),
                    "{method} {path} refused a member: {status} {body}"
                );
            }
        }
    }
    for expected in [
        "post /api/v1/keys",
        "post /api/v1/keys/legacy",
        "delete /api/v1/keys/{id}",
        "put /api/v1/integrations/{kind}",
        "delete /api/v1/integrations/{kind}",
        "post /api/v1/integrations/{kind}/test",
        "put /api/v1/webhooks/{platform}/secret",
        "delete /api/v1/webhooks/{platform}/secret",
        "post /api/v1/webhooks/token",
        "post /api/v1/workspace/invites",
    ] {
        assert!(
            owner_only.iter().any(|r| r == expected),
            "{expected} is not owner-only: {owner_only:?}"
        );
    }

    // What members still do: read keys, change read_only and policy, but not the plan.
    get_ok(&s, "/api/v1/keys", &member.token).await;
    let r = s
        .request(Method::PUT, "/api/v1/workspace")
        .bearer_auth(&member.token)
        .json(&json!({"policy": {"max_outreach_per_customer_per_week": 2}}))
        .send()
        .await
        .expect("put");
    let (status, body) = read(r).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["policy"]["max_outreach_per_customer_per_week"], 2);
    let r = s
        .request(Method::PUT, "/api/v1/workspace")
        .bearer_auth(&member.token)
        .json(&json!({"plan": "enterprise", "monthly_credit_limit": 1_000_000}))
        .send()
        .await
        .expect("put");
    expect_error(r, StatusCode::FORBIDDEN, "forbidden").await;

    // The owner manages what the member may not.
    let key = s.agent_key(&owner).await;
    let r = s
        .request(Method::DELETE, &format!("/api/v1/keys/{}", key.id))
        .bearer_auth(&member.token)
        .send()
        .await
        .expect("revoke");
    expect_error(r, StatusCode::FORBIDDEN, "owner_required").await;
    let r = s
        .request(Method::DELETE, &format!("/api/v1/keys/{}", key.id))
        .bearer_auth(&owner.token)
        .send()
        .await
        .expect("revoke");
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_keys_credit_override_cannot_exceed_the_plan() {
    let s = TestServer::start().await;
    let owner = s.account().await;
    let body = |limit: u64| json!({"name": "budgeted", "quota_override_monthly": limit});
    let r = s
        .post("/api/v1/keys")
        .bearer_auth(&owner.token)
        .json(&body(101))
        .send()
        .await
        .expect("create");
    let e = expect_error(r, StatusCode::BAD_REQUEST, "invalid_input").await;
    assert_eq!(e["error"]["details"]["field"], "quota_override_monthly");
    let narrowed = s.mint_key(&owner, body(100)).await;
    assert_eq!(narrowed.meta["quota_override_monthly"], 100);
    // Once the operator raises the plan, a larger budget fits.
    s.operator_set_plan(&owner.workspace_id, "pro", None).await;
    let wide = s.mint_key(&owner, body(15_000)).await;
    assert_eq!(wide.meta["quota_override_monthly"], 15_000);
}
