//! The access table, from the outside: every (path, method) of `/openapi.json` is called with
//! every credential kind, and each answer is checked against the rule the document states in
//! `x-access` (which the server writes from `http::access::RULES`, the table it enforces).
//! A route without a rule has no `x-access` and fails here.

use std::collections::HashMap;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use svc_integration_tests::{
    expect_error, grant, read, reader_grants, str_at, Account, Capability, Key, TestServer,
};

/// Every route grant and the capability grants the harness uses: the "has everything" key.
fn all_grants() -> Vec<String> {
    reader_grants()
}

/// Credential kinds the matrix tries on every route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    None,
    Jwt,
    /// An agent key of the workspace with no grants at all.
    BareKey,
    /// An agent key holding exactly the grants the route's rule names.
    RightKey,
    Revoked,
    /// A key of another workspace holding every grant.
    OtherWorkspace,
    Legacy,
}

const KINDS: [Kind; 7] = [
    Kind::None,
    Kind::Jwt,
    Kind::BareKey,
    Kind::RightKey,
    Kind::Revoked,
    Kind::OtherWorkspace,
    Kind::Legacy,
];

/// What the rule promises a kind.
#[derive(Debug)]
enum Expect {
    /// Let through: whatever the handler answers, it is not an access refusal.
    Admitted,
    Unauthenticated,
    /// 403 `forbidden`: a valid credential of a kind the route does not take.
    WrongKind,
    /// 403 `grant_denied`.
    GrantDenied,
    /// An agent key on a gateway route: admitted by the access layer; the gateway may still
    /// refuse a capability the key has no grant for (403 `grant_denied`), never 401 or
    /// `forbidden`.
    GatewayAdmitted,
}

struct Rule {
    credentials: Vec<String>,
    grants: Vec<String>,
    gateway: bool,
}

impl Rule {
    fn from_extension(ext: &Value) -> Rule {
        let strings = |field: &str| -> Vec<String> {
            ext[field]
                .as_array()
                .unwrap_or_else(|| panic!("x-access.{field}: {ext}"))
                .iter()
                .map(|v| v.as_str().expect("string").to_owned())
                .collect()
        };
        Rule {
            credentials: strings("credentials"),
            grants: strings("agent_key_grants"),
            gateway: ext["gateway"].as_bool().expect("x-access.gateway"),
        }
    }

    fn takes(&self, kind: &str) -> bool {
        self.credentials.iter().any(|c| c == kind)
    }

    /// The handler verifies the sender's signature; credentials play no part.
    fn signed(&self) -> bool {
        self.credentials == ["signature"]
    }

    /// No credential needed and presented ones are ignored.
    fn public(&self) -> bool {
        self.credentials
            .iter()
            .all(|c| c == "none" || c == "signature")
    }

    fn expect(&self, kind: Kind) -> Expect {
        if self.public() {
            return Expect::Admitted;
        }
        match kind {
            Kind::None if self.takes("none") => Expect::Admitted,
            Kind::None | Kind::Revoked => Expect::Unauthenticated,
            Kind::Legacy if self.takes("legacy_key") => Expect::Admitted,
            // Elsewhere a legacy key is not a credential at all.
            Kind::Legacy => Expect::Unauthenticated,
            Kind::Jwt if self.takes("jwt") => Expect::Admitted,
            Kind::Jwt => Expect::WrongKind,
            Kind::BareKey | Kind::RightKey | Kind::OtherWorkspace if !self.takes("agent_key") => {
                Expect::WrongKind
            }
            _ if self.gateway => Expect::GatewayAdmitted,
            Kind::BareKey if !self.grants.is_empty() => Expect::GrantDenied,
            _ => Expect::Admitted,
        }
    }
}

/// Workspace A's objects that path parameters name, and a marker that must never appear in
/// answers to another workspace's key.
struct Seeded {
    workspace_id: String,
    customer_id: String,
    playbook_id: String,
    run_id: String,
    marker: String,
}

async fn seed(s: &TestServer, a: &Account) -> Seeded {
    let token = a.token.as_str();
    let marker = format!(
        "access-marker-{}@example.com",
        svc_integration_tests::unique()
    );
    let resp = s
        .post("/api/v1/events/track")
        .bearer_auth(token)
        .json(&json!({"action": "signup", "email": marker, "campaignId": "access-spring"}))
        .send()
        .await
        .expect("track");
    let (status, ev) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{ev}");
    let resp = s
        .post("/v1/playbooks")
        .bearer_auth(token)
        .json(
            &json!({"name": "access", "mode": "outbound", "buddyId": "prospect",
                      "strategy": {"hypothesis": "reachable"}}),
        )
        .send()
        .await
        .expect("playbook");
    let (status, pb) = read(resp).await;
    assert_eq!(status, StatusCode::CREATED, "{pb}");
    let playbook_id = str_at(&pb, "/playbook/id");
    let resp = s
        .post(&format!("/v1/playbooks/{playbook_id}/run"))
        .bearer_auth(token)
        .send()
        .await
        .expect("run");
    let (status, run) = read(resp).await;
    assert_eq!(status, StatusCode::CREATED, "{run}");
    Seeded {
        workspace_id: a.workspace_id.clone(),
        customer_id: str_at(&ev, "/customer_id"),
        playbook_id,
        run_id: str_at(&run, "/run/id"),
        marker,
    }
}

/// The templated path with A's objects (or harmless placeholders) in its parameters. Ids of
/// things a JWT call would destroy (keys) are placeholders.
fn fill(path: &str, seeded: &Seeded) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').expect("closing brace") + start;
        let name = &rest[start + 1..end];
        let before = &out;
        let value = match name {
            "id" if before.ends_with("/v1/customers/") => seeded.customer_id.clone(),
            "id" if before.ends_with("/v1/playbooks/") => seeded.playbook_id.clone(),
            "run_id" => seeded.run_id.clone(),
            "id" if before.ends_with("/capabilities/") => Capability::ContextGet.id().to_owned(),
            "platform" => "generic".to_owned(),
            "buddy" => "insights".to_owned(),
            "kind" => "smtp".to_owned(),
            "workspace_id" => seeded.workspace_id.clone(),
            _ => format!("{name}_placeholder"),
        };
        out.push_str(&value);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

fn method_of(name: &str) -> Option<Method> {
    match name {
        "get" => Some(Method::GET),
        "put" => Some(Method::PUT),
        "post" => Some(Method::POST),
        "delete" => Some(Method::DELETE),
        "patch" => Some(Method::PATCH),
        _ => None,
    }
}

#[tokio::test]
async fn every_route_answers_every_credential_kind_as_its_rule_says() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let b = s.account().await;
    let seeded = seed(&s, &a).await;

    let bare = s.key_with_grants::<&str>(&a, &[]).await;
    let revoked = s.key_with_grants(&a, &all_grants()).await;
    let resp = s
        .request(Method::DELETE, &format!("/api/v1/keys/{}", revoked.id))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("revoke");
    assert_eq!(resp.status(), StatusCode::OK);
    let legacy = s.legacy_key(&a).await;
    let other = s.key_with_grants(&b, &all_grants()).await;
    // Keys holding exactly a rule's grants, minted on first use.
    let mut right_keys: HashMap<Vec<String>, Key> = HashMap::new();
    let (status, doc) = read(s.get("/openapi.json").send().await.expect("openapi")).await;
    assert_eq!(status, StatusCode::OK);
    let paths = doc["paths"].as_object().expect("paths");
    assert!(paths.len() > 40, "{} paths", paths.len());
    let mut checked = 0;
    for (path, item) in paths {
        for (method_name, op) in item.as_object().expect("path item") {
            let Some(method) = method_of(method_name) else {
                continue;
            };
            let route = format!("{method} {path}");
            let ext = op.get("x-access").unwrap_or_else(|| {
                panic!("{route} has no x-access: give it a rule in http::access::RULES")
            });
            assert!(
                op["security"].as_array().is_some_and(|s| !s.is_empty()),
                "{route}: no security requirement"
            );
            assert!(
                op["description"]
                    .as_str()
                    .is_some_and(|d| d.contains("Access")),
                "{route}: the description does not state the rule"
            );
            let rule = Rule::from_extension(ext);
            let url = fill(path, &seeded);
            let right_grants: Vec<String> = if rule.gateway {
                vec![grant(Capability::ContextGet)]
            } else {
                rule.grants.clone()
            };
            if !right_keys.contains_key(&right_grants) {
                let key = s.key_with_grants(&a, &right_grants).await;
                right_keys.insert(right_grants.clone(), key);
            }
            // On a signed callback every kind gets the answer of no credential at all.
            let mut unsigned_answer: Option<(StatusCode, Value)> = None;
            for kind in KINDS {
                let mut req = s.request(method.clone(), &url);
                req = match kind {
                    Kind::None => req,
                    Kind::Jwt => req.bearer_auth(&a.token),
                    Kind::BareKey => req.bearer_auth(&bare.plaintext),
                    Kind::RightKey => req.bearer_auth(&right_keys[&right_grants].plaintext),
                    Kind::Revoked => req.bearer_auth(&revoked.plaintext),
                    Kind::OtherWorkspace => req.bearer_auth(&other.plaintext),
                    Kind::Legacy => req.header("x-api-key", &legacy.plaintext),
                };
                if method == Method::POST || method == Method::PUT {
                    req = req.json(&json!({}));
                }
                let resp = req.send().await.expect("send");
                let what = format!("{route} with {kind:?}");
                if rule.signed() {
                    let (status, body) = read(resp).await;
                    let code = body["error"]["code"].clone();
                    assert!(
                        !["unauthenticated", "forbidden", "grant_denied"]
                            .contains(&code.as_str().unwrap_or_default()),
                        "{what}: {body}"
                    );
                    let answer = (status, code);
                    let first = unsigned_answer.get_or_insert_with(|| answer.clone());
                    assert_eq!(&answer, first, "{what}");
                    continue;
                }
                match rule.expect(kind) {
                    Expect::Unauthenticated => {
                        expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
                    }
                    Expect::WrongKind => {
                        expect_error(resp, StatusCode::FORBIDDEN, "forbidden").await;
                    }
                    Expect::GrantDenied => {
                        let body = expect_error(resp, StatusCode::FORBIDDEN, "grant_denied").await;
                        assert_eq!(body["error"]["details"]["grant"], json!(rule.grants[0]));
                    }
                    Expect::Admitted | Expect::GatewayAdmitted => {
                        let status = resp.status();
                        let text = resp.text().await.expect("body");
                        assert_ne!(status, StatusCode::UNAUTHORIZED, "{what}: {text}");
                        let refused_by_gateway =
                            matches!(rule.expect(kind), Expect::GatewayAdmitted)
                                && text.contains("\"grant_denied\"");
                        assert!(
                            status != StatusCode::FORBIDDEN || refused_by_gateway,
                            "{what}: {status} {text}"
                        );
                        if kind == Kind::OtherWorkspace {
                            assert!(
                                !text.contains(&seeded.marker),
                                "{what} saw workspace A's data: {text}"
                            );
                            if method == Method::GET
                                && (url.contains(&seeded.customer_id)
                                    || url.contains(&seeded.playbook_id))
                            {
                                assert_eq!(status, StatusCode::NOT_FOUND, "{what}: {text}");
                            }
                        }
                    }
                }
            }
            if rule.takes("webhook_token") {
                // Minted here: the walk's own JWT call of the mint route replaces the token.
                let resp = s
                    .post("/api/v1/webhooks/token")
                    .bearer_auth(&a.token)
                    .send()
                    .await
                    .expect("token");
                let (status, token) = read(resp).await;
                assert_eq!(status, StatusCode::CREATED, "{token}");
                let webhook_token = str_at(&token, "/token");
                let sep = if url.contains('?') { '&' } else { '?' };
                let resp = s
                    .request(method.clone(), &format!("{url}{sep}token={webhook_token}"))
                    .json(&json!({}))
                    .send()
                    .await
                    .expect("send");
                let status = resp.status();
                assert!(
                    status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN,
                    "{route} with the webhook token: {status}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} operations");
    s.stop().await;
}

#[tokio::test]
async fn events_write_is_also_satisfied_by_the_capability_and_the_legacy_scope() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let event = json!({"action": "visit", "email": "grant@x.io"});
    for body in [
        json!({"name": "route grant", "grants": ["events:write"]}),
        json!({"name": "capability", "grants": [grant(Capability::EventsIngest)]}),
        json!({"name": "legacy scope", "scopes": ["v1:events:write"]}),
    ] {
        let key = s.mint_key(&a, body.clone()).await;
        for path in ["/api/v1/events/track", "/api/v1/events/identify"] {
            let resp = s
                .post(path)
                .header("x-api-key", &key.plaintext)
                .json(&event)
                .send()
                .await
                .expect("send");
            let (status, v) = read(resp).await;
            assert_eq!(status, StatusCode::OK, "{body} on {path}: {v}");
        }
    }
    // Reading customers is not writing events, and the other way round.
    let reader = s.key_with_grants(&a, &["customers:read"]).await;
    let resp = s
        .post("/api/v1/events/track")
        .bearer_auth(&reader.plaintext)
        .json(&event)
        .send()
        .await
        .expect("send");
    let body = expect_error(resp, StatusCode::FORBIDDEN, "grant_denied").await;
    let message = str_at(&body, "/error/message");
    assert!(
        message.contains("events:write") && message.contains(&grant(Capability::EventsIngest)),
        "{message}"
    );
    let writer = s.key_with_grants(&a, &["events:write"]).await;
    let resp = s
        .get("/v1/customers")
        .bearer_auth(&writer.plaintext)
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::FORBIDDEN, "grant_denied").await;
    let resp = s
        .get("/v1/customers")
        .bearer_auth(&reader.plaintext)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), StatusCode::OK);
    s.stop().await;
}

#[tokio::test]
async fn a_rule_with_two_grants_needs_both() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let path = "/v1/buddies/insights/system-prompt";
    let brand_only = s.key_with_grants(&a, &["brand:read"]).await;
    let resp = s
        .get(path)
        .bearer_auth(&brand_only.plaintext)
        .send()
        .await
        .expect("send");
    let body = expect_error(resp, StatusCode::FORBIDDEN, "grant_denied").await;
    assert_eq!(body["error"]["details"]["grant"], "playbooks:read");
    let both = s
        .key_with_grants(&a, &["brand:read", "playbooks:read"])
        .await;
    let resp = s
        .get(path)
        .bearer_auth(&both.plaintext)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), StatusCode::OK);
    s.stop().await;
}

#[tokio::test]
async fn key_creation_takes_route_grants_and_names_unknown_ones() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let route_grants = [
        "brand:read",
        "customers:read",
        "events:write",
        "graph:read",
        "outbox:read",
        "playbooks:read",
    ];
    let context_grant = grant(Capability::ContextGet);
    let mut grants = vec![context_grant.as_str()];
    grants.extend(route_grants);
    let key = s.key_with_grants(&a, &grants).await;
    let mut expected: Vec<&str> = route_grants.to_vec();
    expected.insert(1, &context_grant);
    assert_eq!(key.meta["grants"], json!(expected));
    let me = svc_integration_tests::get_ok(&s, "/api/v1/keys/whoami", &key.plaintext).await;
    assert_eq!(me["grants"], json!(expected));

    for bad in ["customers:write", "graph", "capability:customers.read"] {
        let resp = s
            .post("/api/v1/keys")
            .bearer_auth(&a.token)
            .json(&json!({"name": "bad", "grants": ["graph:read", bad]}))
            .send()
            .await
            .expect("send");
        let body = expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
        let message = str_at(&body, "/error/message");
        assert!(
            message.contains("grants[1]")
                && message.contains(bad)
                && message.contains("customers:read, graph:read, events:write"),
            "{message}"
        );
        assert_eq!(body["error"]["details"]["field"], "grants[1]");
    }
    s.stop().await;
}

#[tokio::test]
async fn the_document_states_each_rule() {
    let s = TestServer::start().await;
    let (_, doc) = read(s.get("/openapi.json").send().await.expect("openapi")).await;
    let op = |path: &str, method: &str| doc["paths"][path][method].clone();

    let customers = op("/v1/customers", "get");
    assert_eq!(
        customers["x-access"],
        json!({"credentials": ["jwt", "agent_key"], "agent_key_grants": ["customers:read"],
               "agent_key_grants_also_satisfied_by": [], "gateway": false, "effect": "read",
               "owner_only": false})
    );
    assert!(customers["security"]
        .as_array()
        .expect("security")
        .contains(&json!({"agent_key": ["customers:read"]})));
    assert!(!customers["security"]
        .as_array()
        .expect("security")
        .contains(&json!({})));

    let dedupe = op("/v1/customers/dedupe", "post");
    assert_eq!(dedupe["x-access"]["credentials"], json!(["jwt"]));
    assert_eq!(dedupe["x-access"]["effect"], "write");
    assert_eq!(dedupe["security"], json!([{"jwt": []}]));
    // Key management: owners' sessions only (members: `owner_required`, tests/tests/roles.rs).
    let mint = op("/api/v1/keys", "post");
    assert_eq!(mint["x-access"]["owner_only"], true);
    assert!(str_at(&mint, "/description").contains("workspace owner"));

    let graph = op("/v1/graph", "get");
    assert_eq!(
        graph["x-access"]["credentials"],
        json!(["none", "jwt", "agent_key"])
    );
    assert!(graph["security"]
        .as_array()
        .expect("security")
        .contains(&json!({})));

    let track = op("/api/v1/events/track", "post");
    assert_eq!(
        track["x-access"]["agent_key_grants_also_satisfied_by"],
        json!([grant(Capability::EventsIngest), "v1:events:write"])
    );
    assert!(str_at(&track, "/description").contains("a legacy `dsk_` key"));

    let webhook = op("/api/webhooks/{platform}", "post");
    assert!(webhook["security"]
        .as_array()
        .expect("security")
        .contains(&json!({"webhook_token": []})));

    let invoke = op("/api/v1/capabilities/{id}/invoke", "post");
    assert_eq!(invoke["x-access"]["gateway"], true);
    assert_eq!(invoke["x-access"]["credentials"], json!(["agent_key"]));
    s.stop().await;
}
