//! MCP authorization (OAuth 2.1) over real HTTP: discovery, Dynamic Client Registration and
//! client metadata documents, the dashboard's consent form, the token endpoint, the token at
//! `/mcp` acting as an agent key, and the refusals (wrong PKCE verifier, reused code, redirect
//! URI mismatch, another audience, expiry, a grant the approving person does not hold, refresh
//! token reuse, revocation). The last test drives the same flow with the official MCP
//! TypeScript SDK (scripts/mcp-sdk-client.sh, tests/mcp_oauth_client/sdk_client.js).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::time::Duration;
use svc_integration_tests::{read, str_at, test_config, unique, Account, TestServer};

const REDIRECT: &str = "http://127.0.0.1:4567/callback";

/// A client that shows redirects instead of following them.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

fn pkce() -> (String, String) {
    let verifier = format!("{}{}", unique(), "x".repeat(50));
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

async fn register(s: &TestServer, redirect_uris: Value) -> (StatusCode, Value) {
    let resp = s
        .post("/oauth/register")
        .json(
            &json!({"client_name": "Test <b>Assistant</b>", "redirect_uris": redirect_uris,
            "token_endpoint_auth_method": "none"}),
        )
        .send()
        .await
        .expect("register");
    read(resp).await
}

async fn client_id(s: &TestServer) -> String {
    let (status, v) = register(s, json!([REDIRECT])).await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    str_at(&v, "/client_id")
}

/// One authorization request's parameters.
struct Ask {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    resource: String,
}

impl Ask {
    fn new(s: &TestServer, client_id: &str, challenge: &str) -> Ask {
        Ask {
            client_id: client_id.to_owned(),
            redirect_uri: REDIRECT.to_owned(),
            challenge: challenge.to_owned(),
            resource: s.url("/mcp"),
        }
    }

    fn pairs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("response_type", "code".into()),
            ("client_id", self.client_id.clone()),
            ("redirect_uri", self.redirect_uri.clone()),
            ("code_challenge", self.challenge.clone()),
            ("code_challenge_method", "S256".into()),
            ("state", "st-1".into()),
            ("resource", self.resource.clone()),
        ]
    }
}

fn cookie(a: &Account) -> String {
    format!("svc_session={}", a.token)
}

/// The consent page as `a` sees it: (status, body, Location).
async fn consent_page(
    s: &TestServer,
    a: &Account,
    ask: &Ask,
) -> (StatusCode, String, Option<String>) {
    let resp = no_redirects()
        .get(s.url("/oauth/authorize"))
        .query(&ask.pairs())
        .header("cookie", cookie(a))
        .send()
        .await
        .expect("authorize page");
    let status = resp.status();
    let location = resp
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, resp.text().await.expect("body"), location)
}

fn csrf_of(page: &str) -> String {
    let at =
        page.find(r#"name="csrf" value=""#).expect("csrf field") + r#"name="csrf" value=""#.len();
    page[at..].split('"').next().expect("value").to_owned()
}

/// Posts the consent form; (status, Location, body).
async fn decide(
    s: &TestServer,
    a: &Account,
    ask: &Ask,
    grants: &[&str],
    modes: &[&str],
) -> (StatusCode, Option<String>, String) {
    let (status, page, _) = consent_page(s, a, ask).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let mut form: Vec<(&str, String)> = ask.pairs();
    form.push(("csrf", csrf_of(&page)));
    form.extend(grants.iter().map(|g| ("grant", (*g).to_owned())));
    form.extend(modes.iter().map(|m| ("mode", (*m).to_owned())));
    form.push(("decision", "approve".into()));
    let resp = no_redirects()
        .post(s.url("/oauth/authorize"))
        .header("cookie", cookie(a))
        .header("sec-fetch-site", "same-origin")
        .form(&form)
        .send()
        .await
        .expect("decide");
    let status = resp.status();
    let location = resp
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, location, resp.text().await.expect("body"))
}

fn query_param(location: &str, name: &str) -> Option<String> {
    let url = reqwest::Url::parse(location).expect("location URL");
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// An approved code for `ask`, by `a`.
async fn code(s: &TestServer, a: &Account, ask: &Ask, grants: &[&str]) -> String {
    let (status, location, body) = decide(s, a, ask, grants, &["dry_run", "execute"]).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    let location = location.expect("redirect");
    assert!(location.starts_with(REDIRECT), "{location}");
    assert_eq!(query_param(&location, "state").as_deref(), Some("st-1"));
    assert_eq!(query_param(&location, "iss"), Some(s.base.clone()));
    query_param(&location, "code").expect("code")
}

async fn token(s: &TestServer, form: &[(&str, &str)]) -> (StatusCode, Value) {
    let resp = s
        .post("/oauth/token")
        .form(form)
        .send()
        .await
        .expect("token");
    assert_eq!(
        resp.headers()
            .get("cache-control")
            .and_then(|v| v.to_str().ok()),
        Some("no-store")
    );
    read(resp).await
}

async fn exchange(
    s: &TestServer,
    client_id: &str,
    code: &str,
    verifier: &str,
) -> (StatusCode, Value) {
    let resource = s.url("/mcp");
    token(
        s,
        &[
            ("grant_type", "authorization_code"),
            ("client_id", client_id),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier),
            ("resource", &resource),
        ],
    )
    .await
}

async fn refresh(s: &TestServer, client_id: &str, refresh_token: &str) -> (StatusCode, Value) {
    token(
        s,
        &[
            ("grant_type", "refresh_token"),
            ("client_id", client_id),
            ("refresh_token", refresh_token),
        ],
    )
    .await
}

async fn mcp(s: &TestServer, bearer: &str, body: Value) -> reqwest::Response {
    s.post("/mcp")
        .bearer_auth(bearer)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .expect("mcp")
}

async fn tools(s: &TestServer, bearer: &str) -> (StatusCode, Value) {
    read(
        mcp(
            s,
            bearer,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await,
    )
    .await
}

/// A full approval: (client id, token response).
async fn approved(s: &TestServer, a: &Account, grants: &[&str]) -> (String, Value) {
    let client = client_id(s).await;
    let (verifier, challenge) = pkce();
    let ask = Ask::new(s, &client, &challenge);
    let code = code(s, a, &ask, grants).await;
    let (status, v) = exchange(s, &client, &code, &verifier).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    (client, v)
}

#[tokio::test]
async fn discovery_starts_from_the_401_of_mcp() {
    let s = TestServer::start().await;
    let resp = s
        .post("/mcp")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .expect("mcp");
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let challenge = resp.headers()["www-authenticate"]
        .to_str()
        .expect("text")
        .to_owned();
    let metadata_url = format!("{}/.well-known/oauth-protected-resource", s.base);
    assert_eq!(
        challenge,
        format!(r#"Bearer resource_metadata="{metadata_url}""#)
    );

    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let (status, prm) = read(s.get(path).send().await.expect("prm")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(prm["resource"], s.url("/mcp"));
        assert_eq!(prm["authorization_servers"], json!([s.base]));
    }
    let (status, asm) = read(
        s.get("/.well-known/oauth-authorization-server")
            .send()
            .await
            .expect("asm"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(asm["issuer"], s.base);
    assert_eq!(asm["authorization_endpoint"], s.url("/oauth/authorize"));
    assert_eq!(asm["token_endpoint"], s.url("/oauth/token"));
    assert_eq!(asm["registration_endpoint"], s.url("/oauth/register"));
    assert_eq!(asm["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(asm["client_id_metadata_document_supported"], true);

    // An unknown token gets the challenge with invalid_token; the API elsewhere has none.
    let resp = mcp(
        &s,
        "svc_oat_unknown",
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert!(resp.headers()["www-authenticate"]
        .to_str()
        .expect("text")
        .contains(r#"error="invalid_token""#));

    // The OAuth endpoints are in the OpenAPI document, with the scheme on /mcp.
    let (_, doc) = read(s.get("/openapi.json").send().await.expect("doc")).await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server",
        "/oauth/register",
        "/oauth/token",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} undocumented");
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["mcp_oauth"]["flows"]["authorizationCode"]["tokenUrl"],
        "/oauth/token"
    );
}

#[tokio::test]
async fn the_token_acts_as_an_agent_key_at_mcp_only_until_revoked() {
    let s = TestServer::start().await;
    let owner = s.account().await;
    let (_, t) = approved(&s, &owner, &["capability:events.ingest", "customers:read"]).await;
    let access = str_at(&t, "/access_token");
    assert_eq!(t["token_type"], "Bearer");
    assert!(t["expires_in"].as_i64().is_some_and(|e| e > 0));

    let (status, v) = tools(&s, &access).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let names: Vec<&str> = v["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["ingest_event"], "only the granted capability");

    // A call goes through the gateway as an agent key's would: committed, with a receipt.
    let (status, v) = read(
        mcp(
            &s,
            &access,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "ingest_event", "arguments": {"event": "signup",
                    "email": "oauth-user@example.com", "_mode": "execute"}}}),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let envelope = &v["result"]["structuredContent"];
    assert_eq!(envelope["status"], "committed", "{v}");
    assert!(envelope["receipt_url"].is_string(), "{v}");
    // Queue was not handed over: the gateway refuses it as it would for such a key.
    let (_, v) = read(
        mcp(
            &s,
            &access,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "ingest_event", "arguments": {"event": "signup",
                    "email": "oauth-user@example.com", "_mode": "queue"}}}),
        )
        .await,
    )
    .await;
    assert_eq!(v["result"]["isError"], true, "{v}");

    // The audience is /mcp: the same token opens no other route, even one its grant names.
    for path in [
        "/v1/customers",
        "/api/v1/keys/whoami",
        "/api/v1/capabilities",
    ] {
        let resp = s.get(path).bearer_auth(&access).send().await.expect("get");
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "{path}");
    }

    // The approval is listed with the keys (kind oauth) and on the keys page.
    let (_, keys) = read(
        s.get("/api/v1/keys")
            .bearer_auth(&owner.token)
            .send()
            .await
            .expect("keys"),
    )
    .await;
    let approval = keys["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .find(|k| k["kind"] == "oauth")
        .expect("approval listed")
        .clone();
    assert_eq!(
        approval["grants"],
        json!(["capability:events.ingest", "customers:read"])
    );
    assert_eq!(approval["allowed_modes"], json!(["dry_run", "execute"]));
    let page = s
        .get("/app/keys")
        .header("cookie", cookie(&owner))
        .send()
        .await
        .expect("keys page")
        .text()
        .await
        .expect("html");
    assert!(page.contains("Approved MCP clients"), "{page}");
    assert!(
        page.contains("Test &lt;b&gt;Assistant&lt;/b&gt;"),
        "the name is escaped"
    );

    // Another workspace cannot revoke (or see) it.
    let other = s.account().await;
    let id = str_at(&approval, "/id");
    let resp = s
        .request(reqwest::Method::DELETE, &format!("/api/v1/keys/{id}"))
        .bearer_auth(&other.token)
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert_eq!(tools(&s, &access).await.0, StatusCode::OK);

    // Revoking on the keys page ends the access token and the refresh token at once.
    let csrf = csrf_of(&page);
    let resp = no_redirects()
        .post(s.url(&format!("/app/keys/{id}/revoke")))
        .header("cookie", cookie(&owner))
        .form(&[("csrf", csrf)])
        .send()
        .await
        .expect("revoke");
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    assert_eq!(tools(&s, &access).await.0, StatusCode::UNAUTHORIZED);
    let client = str_at(&approval, "/agent");
    let (status, v) = refresh(&s, &client, &str_at(&t, "/refresh_token")).await;
    assert_eq!(
        (status, v["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
}

#[tokio::test]
async fn codes_need_the_verifier_and_are_single_use() {
    let s = TestServer::start().await;
    let owner = s.account().await;
    let client = client_id(&s).await;

    // A wrong verifier is refused, and spends the code.
    let (verifier, challenge) = pkce();
    let ask = Ask::new(&s, &client, &challenge);
    let c = code(&s, &owner, &ask, &["capability:context.get"]).await;
    let (wrong, _) = pkce();
    let (status, v) = exchange(&s, &client, &c, &wrong).await;
    assert_eq!(
        (status, v["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "{v}"
    );
    assert!(
        v["error_description"]
            .as_str()
            .is_some_and(|d| d.contains("code_verifier")),
        "{v}"
    );
    let (status, _) = exchange(&s, &client, &c, &verifier).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // A reused code is refused and revokes the tokens its first exchange issued.
    let (verifier, challenge) = pkce();
    let ask = Ask::new(&s, &client, &challenge);
    let c = code(&s, &owner, &ask, &["capability:context.get"]).await;
    let (status, first) = exchange(&s, &client, &c, &verifier).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let access = str_at(&first, "/access_token");
    assert_eq!(tools(&s, &access).await.0, StatusCode::OK);
    let (status, v) = exchange(&s, &client, &c, &verifier).await;
    assert_eq!(
        (status, v["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
    assert_eq!(tools(&s, &access).await.0, StatusCode::UNAUTHORIZED);
    let (status, _) = refresh(&s, &client, &str_at(&first, "/refresh_token")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // Another client cannot exchange a code; a resource other than /mcp is refused.
    let other = client_id(&s).await;
    let (verifier, challenge) = pkce();
    let c = code(
        &s,
        &owner,
        &Ask::new(&s, &client, &challenge),
        &["capability:context.get"],
    )
    .await;
    let (status, v) = exchange(&s, &other, &c, &verifier).await;
    assert_eq!(
        (status, v["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
    let (status, v) = token(
        &s,
        &[
            ("grant_type", "authorization_code"),
            ("client_id", &client),
            ("code", "svc_oac_x"),
            ("redirect_uri", REDIRECT),
            ("code_verifier", &verifier),
            ("resource", "https://elsewhere.example/mcp"),
        ],
    )
    .await;
    assert_eq!(
        (status, v["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_target"))
    );
}

#[tokio::test]
async fn redirect_uris_are_checked_before_anything_is_redirected() {
    let s = TestServer::start().await;
    let owner = s.account().await;
    let client = client_id(&s).await;
    let (_, challenge) = pkce();

    // Not registered: an error page here, never a redirect (no open redirect).
    for uri in [
        "https://evil.example/callback",
        "http://127.0.0.1:4567/other",
        "http://127.0.0.1:4567/callback/",
    ] {
        let mut ask = Ask::new(&s, &client, &challenge);
        ask.redirect_uri = uri.to_owned();
        let (status, body, location) = consent_page(&s, &owner, &ask).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}");
        assert!(location.is_none(), "{uri}");
        assert!(body.contains("not one this client registered"), "{body}");
    }
    // Loopback: another port is the same redirect URI (RFC 8252).
    let mut ask = Ask::new(&s, &client, &challenge);
    ask.redirect_uri = "http://127.0.0.1:9999/callback".into();
    assert_eq!(consent_page(&s, &owner, &ask).await.0, StatusCode::OK);

    // An unknown client: an error page too.
    let ask = Ask::new(&s, "mcpc_unknown", &challenge);
    let (status, _, location) = consent_page(&s, &owner, &ask).await;
    assert_eq!((status, location), (StatusCode::BAD_REQUEST, None));

    // With the client and redirect established, other problems go back to the client.
    let mut ask = Ask::new(&s, &client, &challenge);
    ask.resource = "https://elsewhere.example/mcp".into();
    let (status, _, location) = consent_page(&s, &owner, &ask).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        query_param(&location.expect("loc"), "error").as_deref(),
        Some("invalid_target")
    );
    let mut ask = Ask::new(&s, &client, "plain-challenge");
    ask.challenge = "short".into();
    let (status, _, location) = consent_page(&s, &owner, &ask).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        query_param(&location.expect("loc"), "error").as_deref(),
        Some("invalid_request")
    );

    // The code is bound to its redirect URI at the token endpoint too.
    let (verifier, challenge) = pkce();
    let c = code(
        &s,
        &owner,
        &Ask::new(&s, &client, &challenge),
        &["capability:context.get"],
    )
    .await;
    let resource = s.url("/mcp");
    let (status, v) = token(
        &s,
        &[
            ("grant_type", "authorization_code"),
            ("client_id", &client),
            ("code", &c),
            ("redirect_uri", "http://127.0.0.1:4567/elsewhere"),
            ("code_verifier", &verifier),
            ("resource", &resource),
        ],
    )
    .await;
    assert_eq!(
        (status, v["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );

    // Registration refuses redirect URIs a browser could be sent anywhere with.
    for bad in [
        json!(["http://evil.example/cb"]),
        json!(["javascript:alert(1)"]),
        json!([]),
    ] {
        let (status, v) = register(&s, bad.clone()).await;
        assert_eq!(
            (status, v["error"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_redirect_uri")),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn a_person_hands_over_no_more_than_they_may_give() {
    let s = TestServer::start().await;
    let owner = s.account().await;
    let member = s.member(&owner).await;
    let client = client_id(&s).await;
    let (_, challenge) = pkce();
    let ask = Ask::new(&s, &client, &challenge);

    // The member's page offers read-only capabilities only; a forged form is refused.
    let (_, page, _) = consent_page(&s, &member, &ask).await;
    assert!(page.contains("capability:context.get"));
    assert!(!page.contains("capability:crm.mutate"));
    let (status, location, body) =
        decide(&s, &member, &ask, &["capability:crm.mutate"], &["dry_run"]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(location.is_none());
    assert!(
        body.contains("You cannot hand over capability:crm.mutate"),
        "{body}"
    );
    let (status, _, _) = decide(&s, &member, &ask, &["capability:context.get"], &["queue"]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = decide(&s, &member, &ask, &["capability:teleport"], &["dry_run"]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // What the member may give works.
    let (status, _, _) = decide(&s, &member, &ask, &["capability:context.get"], &["dry_run"]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);

    // The owner may give crm.mutate, unless the workspace policy forbids it.
    let resp = s
        .request(reqwest::Method::PUT, "/api/v1/workspace")
        .bearer_auth(&owner.token)
        .json(&json!({"policy": {"forbid": ["crm.mutate"]}}))
        .send()
        .await
        .expect("policy");
    assert!(resp.status().is_success(), "{:?}", resp.text().await);
    let (status, _, body) =
        decide(&s, &owner, &ask, &["capability:crm.mutate"], &["execute"]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // No session, a bad CSRF token, or a post from another site: refused.
    let mut form = ask.pairs();
    form.push(("grant", "capability:context.get".into()));
    form.push(("mode", "dry_run".into()));
    form.push(("decision", "approve".into()));
    let post = |cookie_value: Option<String>, site: &'static str, csrf: &str| {
        let mut f = form.clone();
        f.push(("csrf", csrf.to_owned()));
        let mut rb = no_redirects()
            .post(s.url("/oauth/authorize"))
            .header("sec-fetch-site", site)
            .form(&f);
        if let Some(c) = cookie_value {
            rb = rb.header("cookie", c);
        }
        rb.send()
    };
    let (_, page, _) = consent_page(&s, &owner, &ask).await;
    let csrf = csrf_of(&page);
    assert_eq!(
        post(None, "same-origin", &csrf)
            .await
            .expect("post")
            .status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        post(Some(cookie(&owner)), "same-origin", "bad")
            .await
            .expect("post")
            .status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        post(Some(cookie(&owner)), "cross-site", &csrf)
            .await
            .expect("post")
            .status(),
        StatusCode::FORBIDDEN
    );

    // Signed out, the page asks to sign in and comes back here.
    let resp = no_redirects()
        .get(s.url("/oauth/authorize"))
        .query(&ask.pairs())
        .send()
        .await
        .expect("page");
    assert_eq!(resp.headers()["x-frame-options"], "DENY");
    let body = resp.text().await.expect("html");
    assert!(
        body.contains(r#"action="/oauth/authorize/login""#),
        "{body}"
    );
    let next = body
        .split(r#"name="next" value=""#)
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("next")
        .replace("&amp;", "&");
    let resp = no_redirects()
        .post(s.url("/oauth/authorize/login"))
        .form(&[
            ("email", owner.email.as_str()),
            ("password", &owner.password),
            ("next", &next),
        ])
        .send()
        .await
        .expect("sign in");
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    assert!(resp.headers()["location"]
        .to_str()
        .expect("loc")
        .starts_with("/oauth/authorize?"));
    // Somewhere else as `next` is not followed.
    let resp = no_redirects()
        .post(s.url("/oauth/authorize/login"))
        .form(&[
            ("email", owner.email.as_str()),
            ("password", &owner.password),
            ("next", "https://evil.example/"),
        ])
        .send()
        .await
        .expect("sign in");
    assert_eq!(resp.headers()["location"], "/app/home");
}

#[tokio::test]
async fn tokens_expire_refresh_rotates_and_reuse_revokes_the_family() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = test_config(dir.path());
    config.oauth_access_ttl = Duration::from_millis(1500);
    let s = TestServer::start_with(dir, config).await;
    let owner = s.account().await;
    let (client, t) = approved(&s, &owner, &["capability:context.get"]).await;
    let access = str_at(&t, "/access_token");
    let first_refresh = str_at(&t, "/refresh_token");
    assert_eq!(tools(&s, &access).await.0, StatusCode::OK);

    tokio::time::sleep(Duration::from_millis(1600)).await;
    let resp = mcp(
        &s,
        &access,
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert!(resp.text().await.expect("body").contains("expired"));

    // Refresh: a new pair; the old refresh token is spent.
    let (status, t2) = refresh(&s, &client, &first_refresh).await;
    assert_eq!(status, StatusCode::OK, "{t2}");
    let access2 = str_at(&t2, "/access_token");
    assert_ne!(str_at(&t2, "/refresh_token"), first_refresh);
    assert_eq!(tools(&s, &access2).await.0, StatusCode::OK);
    let (status, _) = refresh(&s, &client, &str_at(&t2, "/access_token")).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "an access token is no refresh token"
    );

    // The spent refresh token again: the whole family is revoked.
    let (status, v) = refresh(&s, &client, &first_refresh).await;
    assert_eq!(
        (status, v["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
    assert_eq!(tools(&s, &access2).await.0, StatusCode::UNAUTHORIZED);
    let (status, _) = refresh(&s, &client, &str_at(&t2, "/refresh_token")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_token_for_another_audience_is_refused_at_mcp() {
    let s = TestServer::start().await;
    let owner = s.account().await;
    let (_, t) = approved(&s, &owner, &["capability:context.get"]).await;
    let access = str_at(&t, "/access_token");
    assert_eq!(tools(&s, &access).await.0, StatusCode::OK);

    // The same store served under another public URL: its /mcp is another resource, and the
    // token (bound to the old one) is refused there.
    let (dir, mut config) = s.stop().await;
    config.public_url = Some("https://mcp.elsewhere.example".into());
    let s = TestServer::start_with(dir, config).await;
    let resp = mcp(
        &s,
        &access,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let challenge = resp.headers()["www-authenticate"]
        .to_str()
        .expect("text")
        .to_owned();
    assert!(
        challenge.contains(r#"resource_metadata="https://mcp.elsewhere.example/.well-known/oauth-protected-resource""#),
        "{challenge}"
    );
    assert!(resp
        .text()
        .await
        .expect("body")
        .contains("another resource"));

    // Agent keys keep working on /mcp unchanged.
    let key = s.agent_key(&owner).await;
    assert_eq!(tools(&s, &key.plaintext).await.0, StatusCode::OK);
}

#[tokio::test]
async fn client_metadata_documents_name_their_redirect_uris() {
    let s = TestServer::start().await;
    let owner = s.account().await;
    // The client's document, served on loopback (allowed as a destination by the test config).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let doc_url = format!(
        "http://{}/client.json",
        listener.local_addr().expect("addr")
    );
    let doc = json!({"client_id": doc_url, "client_name": "Metadata Client",
        "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"});
    let app = axum::Router::new().route(
        "/client.json",
        axum::routing::get(move || {
            let doc = doc.clone();
            async move { axum::Json(doc) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });

    let (verifier, challenge) = pkce();
    let ask = Ask::new(&s, &doc_url, &challenge);
    let (status, page, _) = consent_page(&s, &owner, &ask).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("Metadata Client"));
    let c = code(&s, &owner, &ask, &["capability:context.get"]).await;
    let (status, t) = exchange(&s, &doc_url, &c, &verifier).await;
    assert_eq!(status, StatusCode::OK, "{t}");
    assert_eq!(
        tools(&s, &str_at(&t, "/access_token")).await.0,
        StatusCode::OK
    );

    // A redirect URI the document does not list is refused here.
    let mut ask = Ask::new(&s, &doc_url, &challenge);
    ask.redirect_uri = "https://evil.example/cb".into();
    assert_eq!(
        consent_page(&s, &owner, &ask).await.0,
        StatusCode::BAD_REQUEST
    );
    // A document URL whose host is not an allowed destination is never fetched.
    let ask = Ask::new(&s, "https://10.1.2.3/client.json", &challenge);
    let (status, body, _) = consent_page(&s, &owner, &ask).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

/// The SDK's node_modules from scripts/mcp-sdk-client.sh; `None` (the test is skipped) only
/// when npm is absent, so nothing can be installed.
fn sdk_modules() -> Option<std::path::PathBuf> {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/mcp-sdk-client.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("run scripts/mcp-sdk-client.sh");
    if out.status.code() == Some(3) {
        eprintln!("SKIPPED mcp_sdk_client_end_to_end: npm is not installed, so the MCP TypeScript SDK cannot be");
        return None;
    }
    assert!(out.status.success(), "scripts/mcp-sdk-client.sh failed");
    let text = String::from_utf8_lossy(&out.stdout);
    Some(std::path::PathBuf::from(
        text.lines().last().expect("a path").trim(),
    ))
}

#[tokio::test]
async fn mcp_typescript_sdk_end_to_end() {
    let Some(modules) = tokio::task::spawn_blocking(sdk_modules)
        .await
        .expect("install")
    else {
        return;
    };
    let s = TestServer::start().await;
    let owner = s.account().await;
    let driver =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_oauth_client/sdk_client.js");
    let args = [
        driver.display().to_string(),
        modules.display().to_string(),
        s.base.clone(),
        owner.token.clone(),
    ];
    // Off the runtime: the server keeps serving while the client runs.
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("node")
            .args(&args)
            .stderr(std::process::Stdio::inherit())
            .output()
    })
    .await
    .expect("join")
    .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("no report ({e}): {stdout}"));
    assert!(out.status.success(), "{report}");
    assert!(
        str_at(&report, "/registered").starts_with("mcpc_"),
        "{report}"
    );
    assert_eq!(report["consents"], 1, "{report}");
    assert_eq!(
        report["tools"],
        json!(["get_customer_context", "ingest_event"]),
        "{report}"
    );
    assert_eq!(report["call_is_error"], false, "{report}");
    assert_eq!(report["call_status"], "committed", "{report}");
    assert_eq!(report["refresh"], "AUTHORIZED", "{report}");
    assert_eq!(report["access_changed"], true, "{report}");
    assert_eq!(report["tools_after_refresh"], 2, "{report}");
    assert_eq!(report["revoke_status"], 200, "{report}");
    // After revocation the next request is refused and so is the refresh token: the SDK gives
    // up with the token endpoint's invalid_grant (or, had it tried, could only ask a person
    // again); no second consent happened.
    let after = str_at(&report, "/after_revoke");
    assert!(
        after == "UnauthorizedError" || after.starts_with("InvalidGrantError"),
        "{report}"
    );
    assert_eq!(report["consents"], 1, "{report}");

    // The call went through the gateway as the approval key: the event landed in the workspace.
    let customers = s
        .get("/v1/customers/sdk-oauth%40example.com")
        .bearer_auth(&owner.token)
        .send()
        .await
        .expect("customers");
    let (status, v) = read(customers).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert!(v.to_string().contains("sdk-oauth@example.com"), "{v}");
}
