//! Integrations through HTTP (`/api/v1/integrations`: connect, list, mask, update, test,
//! disconnect) and the provider adapters against real protocol servers on loopback: aiosmtpd
//! for SMTP (AUTH, STARTTLS with a private CA), and HTTP servers implementing the voice
//! (Twilio-compatible) and Customer.io Track APIs' documented request shapes.

use std::collections::{HashMap, HashSet};

use reqwest::{Method, StatusCode};
use serde_json::{json, Map, Value};
use svc_integration_tests::providers::{HttpProvider, SmtpSink};
use svc_integration_tests::{
    all_files, contains_bytes, expect_error, get_ok, local_destinations, read, test_config,
    Account, TestServer,
};
use svc_server::integrations::{
    self, customerio, smtp, voice, Config, CustomerioConfig, HttpClient, Kind, SmtpConfig,
    VoiceConfig,
};

async fn put(s: &TestServer, a: &Account, kind: &str, body: &Value) -> (StatusCode, Value) {
    let resp = s
        .request(Method::PUT, &format!("/api/v1/integrations/{kind}"))
        .bearer_auth(&a.token)
        .json(body)
        .send()
        .await
        .expect("put");
    read(resp).await
}

async fn put_ok(s: &TestServer, a: &Account, kind: &str, body: &Value) -> Value {
    let (status, view) = put(s, a, kind, body).await;
    assert_eq!(status, StatusCode::OK, "PUT {kind}: {view}");
    view
}

async fn test_kind(s: &TestServer, a: &Account, kind: &str) -> Value {
    let resp = s
        .post(&format!("/api/v1/integrations/{kind}/test"))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("test");
    let (status, body) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "test {kind}: {body}");
    assert_eq!(body["kind"], kind);
    body
}

fn listed<'a>(list: &'a Value, kind: &str) -> &'a Value {
    list["integrations"]
        .as_array()
        .expect("integrations")
        .iter()
        .find(|i| i["kind"] == kind)
        .unwrap_or_else(|| panic!("{kind} not listed: {list}"))
}

#[tokio::test]
async fn connect_list_mask_update_and_disconnect_without_ever_echoing_secrets() {
    let s = TestServer::start().await;
    let a = s.account().await;

    // Every kind is listed before anything is connected, with the capabilities it unlocks.
    let list = get_ok(&s, "/api/v1/integrations", &a.token).await;
    let kinds: Vec<&str> = list["integrations"]
        .as_array()
        .expect("list")
        .iter()
        .map(|i| i["kind"].as_str().expect("kind"))
        .collect();
    let all: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(kinds, all);
    let mut unlocked = HashSet::new();
    for kind in Kind::ALL {
        let item = listed(&list, kind.as_str());
        assert_eq!(item["connected"], false, "{item}");
        assert!(item["config"].is_null(), "{item}");
        let caps: Vec<String> = item["capabilities"]
            .as_array()
            .expect("capabilities")
            .iter()
            .map(|c| c.as_str().expect("id").to_owned())
            .collect();
        assert_eq!(
            caps,
            svc_server::gateway::capabilities_requiring(kind),
            "{kind:?}"
        );
        for c in caps {
            assert!(unlocked.insert(c), "a capability listed under two kinds");
        }
    }

    // Connect SMTP: the answer shows the password masked, and so does the list.
    let password = "smtp-password-0123456789";
    let smtp_body = json!({"host": "smtp.example.com", "port": 587, "username": "mailer",
        "password": password, "from": "Acme <hi@acme.io>", "reply_to": "help@acme.io"});
    let view = put_ok(&s, &a, "smtp", &smtp_body).await;
    assert_eq!(view["connected"], true);
    assert_eq!(view["config"]["password"], "••••6789");
    assert_eq!(view["config"]["security"], "starttls");
    assert_eq!(view["config"]["host"], "smtp.example.com");
    let connected_at = view["connected_at"]
        .as_str()
        .expect("connected_at")
        .to_owned();
    let text = s
        .get("/api/v1/integrations")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("list")
        .text()
        .await
        .expect("body");
    assert!(!text.contains(password), "{text}");
    let list: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(listed(&list, "smtp")["config"]["password"], "••••6789");
    assert_eq!(listed(&list, "voice")["connected"], false);

    // Update without the password (or with its mask): the stored one stays.
    let update = json!({"host": "relay.example.com", "port": 465, "username": "mailer",
        "from": "Acme <hi@acme.io>"});
    let view = put_ok(&s, &a, "smtp", &update).await;
    assert_eq!(view["config"]["host"], "relay.example.com");
    assert_eq!(view["config"]["security"], "tls");
    assert_eq!(view["config"]["password"], "••••6789");
    assert_eq!(view["connected_at"], connected_at.as_str());
    let mut echoed = update.clone();
    echoed["password"] = json!("••••6789");
    let view = put_ok(&s, &a, "smtp", &echoed).await;
    assert_eq!(view["config"]["password"], "••••6789");

    // Voice and Customer.io: secrets masked, region defaulted.
    let token = "voice-auth-token-abcdefgh9876";
    let view = put_ok(
        &s,
        &a,
        "voice",
        &json!({"account_sid": "AC0123", "auth_token": token, "from_number": "+14155550100"}),
    )
    .await;
    assert_eq!(view["config"]["auth_token"], "••••9876");
    assert_eq!(view["config"]["base_url"], "https://api.twilio.com");
    let api_key = "cio-api-key-zyxw4321";
    let view = put_ok(
        &s,
        &a,
        "customerio",
        &json!({"site_id": "site-1", "api_key": api_key}),
    )
    .await;
    assert_eq!(view["config"]["api_key"], "••••4321");
    assert_eq!(view["config"]["region"], "us");

    // Sealed at rest: no file of the data directory holds a secret in the clear.
    for (path, bytes) in all_files(s.data_dir()) {
        for secret in [password, token, api_key] {
            assert!(
                !contains_bytes(&bytes, secret.as_bytes()),
                "{secret} in {}",
                path.display()
            );
        }
    }

    // Validation names the field; unknown kinds are 404.
    let (status, err) = put(&s, &a, "smtp", &json!({"port": 25, "from": "a@b.io"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_eq!(err["error"]["code"], "invalid_input");
    assert_eq!(err["error"]["details"]["field"], "host", "{err}");
    let (status, err) = put(
        &s,
        &a,
        "voice",
        &json!({"account_sid": "AC1", "from_number": "+14155550100", "authtoken": "x"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_eq!(err["error"]["details"]["field"], "authtoken", "{err}");
    let resp = s
        .request(Method::PUT, "/api/v1/integrations/fax")
        .bearer_auth(&a.token)
        .json(&json!({}))
        .send()
        .await
        .expect("put");
    expect_error(resp, StatusCode::NOT_FOUND, "not_found").await;

    // Another workspace sees nothing of it.
    let other = s.account().await;
    let theirs = get_ok(&s, "/api/v1/integrations", &other.token).await;
    assert!(theirs["integrations"]
        .as_array()
        .expect("list")
        .iter()
        .all(|i| i["connected"] == false));

    // JWT only: agent keys are refused, anonymous callers too.
    let key = s.agent_key(&a).await;
    let resp = s
        .get("/api/v1/integrations")
        .bearer_auth(&key.plaintext)
        .send()
        .await
        .expect("list");
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let resp = s
        .request(Method::PUT, "/api/v1/integrations/smtp")
        .bearer_auth(&key.plaintext)
        .json(&smtp_body)
        .send()
        .await
        .expect("put");
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let resp = s.get("/api/v1/integrations").send().await.expect("list");
    expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;

    // Disconnect (idempotent); testing a disconnected integration is a 409.
    for _ in 0..2 {
        let resp = s
            .request(Method::DELETE, "/api/v1/integrations/smtp")
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("delete");
        assert_eq!(resp.status(), StatusCode::OK);
    }
    let list = get_ok(&s, "/api/v1/integrations", &a.token).await;
    assert_eq!(listed(&list, "smtp")["connected"], false);
    assert_eq!(listed(&list, "voice")["connected"], true);
    let resp = s
        .post("/api/v1/integrations/smtp/test")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("test");
    expect_error(resp, StatusCode::CONFLICT, "integration_not_connected").await;

    // Configs survive a restart (sealed with the data directory's master key).
    let s = s.restart().await;
    let list = get_ok(&s, "/api/v1/integrations", &a.token).await;
    assert_eq!(listed(&list, "voice")["config"]["auth_token"], "••••9876");
    assert_eq!(listed(&list, "customerio")["config"]["site_id"], "site-1");
}

#[tokio::test]
async fn smtp_test_authenticates_against_a_real_server_and_reports_a_wrong_password() {
    let sink = SmtpSink::start();
    let s = TestServer::start().await;
    let a = s.account().await;

    put_ok(&s, &a, "smtp", &sink.config(&sink.password)).await;
    let ok = test_kind(&s, &a, "smtp").await;
    assert_eq!(ok["ok"], true, "{ok}");
    let list = get_ok(&s, "/api/v1/integrations", &a.token).await;
    let last = &listed(&list, "smtp")["last_test"];
    assert_eq!(last["ok"], true, "{list}");
    assert!(last["at"].is_string());

    put_ok(&s, &a, "smtp", &sink.config("wrong-password-123")).await;
    let list = get_ok(&s, "/api/v1/integrations", &a.token).await;
    assert!(
        listed(&list, "smtp")["last_test"].is_null(),
        "a changed config forgets the old test: {list}"
    );
    let failed = test_kind(&s, &a, "smtp").await;
    assert_eq!(failed["ok"], false, "{failed}");
    let message = failed["message"].as_str().expect("message");
    assert!(message.contains("authentication"), "{message}");
    assert!(!message.contains("wrong-password-123"), "{message}");
    let list = get_ok(&s, "/api/v1/integrations", &a.token).await;
    assert_eq!(listed(&list, "smtp")["last_test"]["ok"], false);
    assert!(sink.messages().is_empty(), "a test sends no mail");
}

#[tokio::test]
async fn smtp_starttls_trusts_only_the_configured_ca() {
    let sink = SmtpSink::start_tls();
    let s = TestServer::start().await;
    let a = s.account().await;

    put_ok(&s, &a, "smtp", &sink.config(&sink.password)).await;
    let ok = test_kind(&s, &a, "smtp").await;
    assert_eq!(ok["ok"], true, "{ok}");

    // Without the private CA, the public roots do not vouch for the relay.
    let mut no_ca = sink.config(&sink.password);
    no_ca["ca_cert_pem"] = Value::Null;
    put_ok(&s, &a, "smtp", &no_ca).await;
    let failed = test_kind(&s, &a, "smtp").await;
    assert_eq!(failed["ok"], false, "{failed}");
    assert!(
        failed["message"]
            .as_str()
            .is_some_and(|m| m.contains("TLS")),
        "{failed}"
    );

    // Another CA's certificate is no better.
    let mut other_ca = sink.config(&sink.password);
    other_ca["ca_cert_pem"] = json!(svc_integration_tests::smtp::TestPki::new("other CA").ca_pem);
    put_ok(&s, &a, "smtp", &other_ca).await;
    assert_eq!(test_kind(&s, &a, "smtp").await["ok"], false);

    // Plain text against a relay that requires STARTTLS: refused before AUTH.
    let mut plain = sink.config(&sink.password);
    plain["security"] = json!("none");
    put_ok(&s, &a, "smtp", &plain).await;
    assert_eq!(test_kind(&s, &a, "smtp").await["ok"], false);
}

fn smtp_config(sink: &SmtpSink, password: &str) -> SmtpConfig {
    match Config::from_body(Kind::Smtp, &sink.config(password), None).expect("config") {
        Config::Smtp(c) => c,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn smtp_send_delivers_one_multipart_message_with_its_headers_over_starttls() {
    let sink = SmtpSink::start_tls();
    let cfg = smtp_config(&sink, &sink.password);
    let email = smtp::Email {
        to: "ann@example.com".to_owned(),
        to_name: Some("Ann Example".to_owned()),
        subject: "Your trial ends Friday".to_owned(),
        text: "Hello Ann,\nyour trial ends on Friday.".to_owned(),
        html: "<p>Hello Ann,<br>your trial ends on <b>Friday</b>.</p>".to_owned(),
        message_id: "req_abc123@svc.local".to_owned(),
        reply_to: Some("Help <help@acme.test>".to_owned()),
        headers: vec![(
            "List-Unsubscribe".to_owned(),
            "<mailto:unsubscribe@acme.test>".to_owned(),
        )],
    };
    let sent = smtp::send(&cfg, &local_destinations(), &email)
        .await
        .expect("sent");
    assert_eq!(sent.message_id, "req_abc123@svc.local");
    assert!(sent.response.starts_with("250"), "{}", sent.response);

    let delivered = sink.wait_for(1).await;
    assert_eq!(delivered.len(), 1);
    let m = &delivered[0];
    assert_eq!(m.recipients, ["ann@example.com"]);
    assert_eq!(m.mail_from, "growth@acme.test");
    assert!(m.tls, "delivered under STARTTLS");
    assert_eq!(m.auth_login.as_deref(), Some("mailer"));
    assert_eq!(
        m.header("Message-ID").as_deref(),
        Some("<req_abc123@svc.local>")
    );
    assert_eq!(
        m.header("Subject").as_deref(),
        Some("Your trial ends Friday")
    );
    assert_eq!(
        m.header("To").as_deref(),
        Some("\"Ann Example\" <ann@example.com>")
    );
    assert_eq!(
        m.header("From").as_deref(),
        Some("\"Acme Growth\" <growth@acme.test>")
    );
    assert_eq!(
        m.header("Reply-To").as_deref(),
        Some("Help <help@acme.test>")
    );
    assert_eq!(
        m.header("List-Unsubscribe").as_deref(),
        Some("<mailto:unsubscribe@acme.test>")
    );
    assert!(m
        .header("Content-Type")
        .is_some_and(|c| c.starts_with("multipart/alternative")));
    assert!(m.raw.contains("your trial ends on Friday."), "{}", m.raw);
    assert!(m.raw.contains("<b>Friday</b>"), "{}", m.raw);

    // A wrong password is a provider error with the relay's code, and nothing is delivered.
    let wrong = smtp_config(&sink, "not-the-password");
    let e = smtp::send(&wrong, &local_destinations(), &email)
        .await
        .expect_err("refused");
    assert_eq!(e.status, Some(535), "{e:?}");
    assert!(!e.message.contains("not-the-password"), "{}", e.message);
    assert_eq!(sink.messages().len(), 1);
}

#[tokio::test]
async fn voice_test_place_call_and_status_signature() {
    let provider = HttpProvider::start().await;
    let s = TestServer::start().await;
    let a = s.account().await;

    put_ok(&s, &a, "voice", &provider.voice_config()).await;
    let ok = test_kind(&s, &a, "voice").await;
    assert_eq!(ok["ok"], true, "{ok}");
    let mut wrong = provider.voice_config();
    wrong["auth_token"] = json!("not-the-voice-token");
    put_ok(&s, &a, "voice", &wrong).await;
    let failed = test_kind(&s, &a, "voice").await;
    assert_eq!(failed["ok"], false, "{failed}");
    let message = failed["message"].as_str().expect("message");
    assert!(message.contains("401"), "{message}");
    assert!(!message.contains("not-the-voice-token"), "{message}");

    // The adapter: one form-encoded Calls create with the escaped script and the callback.
    let cfg: VoiceConfig =
        match Config::from_body(Kind::Voice, &provider.voice_config(), None).expect("config") {
            Config::Voice(c) => c,
            other => panic!("{other:?}"),
        };
    let http = HttpClient::new(local_destinations()).expect("client");
    let callback = "https://svc.example/api/webhooks/voice/ws_1/status";
    let before = provider.received().len();
    let call = voice::place_call(&http, &cfg, "+14155550199", "Hi <Ann> & co.", callback)
        .await
        .expect("placed");
    assert!(call.sid.starts_with("CA"), "{call:?}");
    assert_eq!(call.status, "queued");
    let received = provider.received();
    assert_eq!(received.len(), before + 1);
    let r = &received[before];
    assert_eq!(r.method, "POST");
    assert_eq!(
        r.path,
        format!("/2010-04-01/Accounts/{}/Calls.json", provider.account_sid)
    );
    let form: HashMap<_, _> = r.form.iter().cloned().collect();
    assert_eq!(form["To"], "+14155550199");
    assert_eq!(form["From"], provider.from_number);
    assert_eq!(
        form["Twiml"],
        "<Response><Say>Hi &lt;Ann&gt; &amp; co.</Say></Response>"
    );
    assert_eq!(form["StatusCallback"], callback);
    assert_eq!(form["StatusCallbackEvent"], "completed");

    let bad = VoiceConfig {
        auth_token: "nope-nope-nope".to_owned(),
        ..cfg.clone()
    };
    let e = voice::place_call(&http, &bad, "+14155550199", "Hi", callback)
        .await
        .expect_err("unauthorized");
    assert_eq!(e.status, Some(401));

    // What the provider would sign for its status callback verifies; anything else does not.
    let params = vec![
        ("CallSid".to_owned(), call.sid.clone()),
        ("CallStatus".to_owned(), "completed".to_owned()),
        ("CallDuration".to_owned(), "42".to_owned()),
    ];
    let signature = voice::sign(&provider.auth_token, callback, &params);
    assert!(voice::verify_signature(
        &provider.auth_token,
        callback,
        &params,
        &signature
    ));
    assert!(!voice::verify_signature(
        "another-token",
        callback,
        &params,
        &signature
    ));
}

#[tokio::test]
async fn customerio_test_identify_and_track() {
    let provider = HttpProvider::start().await;
    let s = TestServer::start().await;
    let a = s.account().await;

    put_ok(&s, &a, "customerio", &provider.cio_config()).await;
    let ok = test_kind(&s, &a, "customerio").await;
    assert_eq!(ok["ok"], true, "{ok}");

    // Credentials of the other region are named as such.
    provider.set_cio_region("eu");
    let failed = test_kind(&s, &a, "customerio").await;
    assert_eq!(failed["ok"], false, "{failed}");
    assert!(
        failed["message"]
            .as_str()
            .is_some_and(|m| m.contains("\"eu\"")),
        "{failed}"
    );
    provider.set_cio_region("us");

    let mut wrong = provider.cio_config();
    wrong["api_key"] = json!("not-the-cio-key");
    put_ok(&s, &a, "customerio", &wrong).await;
    let failed = test_kind(&s, &a, "customerio").await;
    assert_eq!(failed["ok"], false);
    assert!(
        failed["message"]
            .as_str()
            .is_some_and(|m| m.contains("401") && !m.contains("not-the-cio-key")),
        "{failed}"
    );

    // The adapter: identify and track with the documented paths and bodies.
    let cfg: CustomerioConfig =
        match Config::from_body(Kind::Customerio, &provider.cio_config(), None).expect("config") {
            Config::Customerio(c) => c,
            other => panic!("{other:?}"),
        };
    let http = HttpClient::new(local_destinations()).expect("client");
    let before = provider.received().len();
    let mut attributes = Map::new();
    attributes.insert("email".into(), json!("ann@example.com"));
    attributes.insert("plan".into(), json!("growth"));
    customerio::identify(&http, &cfg, "cus 1/a", &attributes)
        .await
        .expect("identify");
    let mut data = Map::new();
    data.insert("days_left".into(), json!(14));
    customerio::track(&http, &cfg, "cus 1/a", "renewal_reminder", &data)
        .await
        .expect("track");
    let received = &provider.received()[before..];
    assert_eq!(received.len(), 2);
    assert_eq!(received[0].method, "PUT");
    assert_eq!(received[0].path, "/api/v1/customers/cus%201%2Fa");
    assert_eq!(
        received[0].json,
        json!({"email": "ann@example.com", "plan": "growth"})
    );
    assert_eq!(received[1].method, "POST");
    assert_eq!(received[1].path, "/api/v1/customers/cus%201%2Fa/events");
    assert_eq!(
        received[1].json,
        json!({"name": "renewal_reminder", "data": {"days_left": 14}})
    );

    let bad = CustomerioConfig {
        api_key: "wrong-key-wrong".to_owned(),
        ..cfg
    };
    let e = customerio::track(&http, &bad, "cus_1", "x", &Map::new())
        .await
        .expect_err("unauthorized");
    assert_eq!(e.status, Some(401));
    assert!(!e.message.contains("wrong-key-wrong"), "{}", e.message);
}

#[tokio::test]
async fn the_loaders_read_what_the_routes_stored() {
    let provider = HttpProvider::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = svc_integration_tests::test_config(dir.path());
    let s = TestServer::start_with(dir, config.clone()).await;
    let a = s.account().await;
    put_ok(&s, &a, "voice", &provider.voice_config()).await;
    let (dir, config) = s.stop().await;

    // The gateway's view: the state of the same data directory, the config opened by the
    // same master key.
    let state = svc_server::AppState::open(config).await.expect("open");
    let ws = svc_server::workspaces::parse_id(&a.workspace_id).expect("workspace id");
    let loaded = integrations::load(&state.store, &state.sealer, ws, Kind::Voice)
        .await
        .expect("load");
    match loaded {
        Some(Config::Voice(v)) => assert_eq!(v.auth_token, provider.auth_token),
        other => panic!("{other:?}"),
    }
    assert!(
        integrations::load(&state.store, &state.sealer, ws, Kind::Smtp)
            .await
            .expect("load")
            .is_none()
    );
    state.shutdown().await.expect("shutdown");
    drop(dir);
}

/// Issue 29: with the default rule (public addresses only) no integration reaches the inside
/// network: address literals in any spelling are refused when saved, and a name that resolves
/// to loopback is refused when a connection is made, so the local provider never sees a request
/// and nothing it would answer is reflected. The tests above show the allowed case (the
/// harness allows loopback, as a self-hoster would).
#[tokio::test]
async fn integrations_cannot_reach_inside_addresses_by_default() {
    let provider = HttpProvider::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = test_config(dir.path());
    config.outbound = svc_server::integrations::Destinations::public_only();
    let s = TestServer::start_with(dir, config).await;
    let a = s.account().await;
    let port = reqwest::Url::parse(provider.voice_config()["base_url"].as_str().expect("url"))
        .expect("url")
        .port()
        .expect("port");
    for base in [
        "http://169.254.169.254/latest".to_owned(),
        "http://[fd00:ec2::254]".to_owned(),
        "http://10.0.0.1".to_owned(),
        format!("http://2130706433:{port}"),
        format!("http://0x7f.1:{port}"),
        format!("http://127.1:{port}"),
    ] {
        let mut body = provider.voice_config();
        body["base_url"] = json!(base);
        let (status, e) = put(&s, &a, "voice", &body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{base}: {e}");
        assert_eq!(
            e["error"]["details"]["reason"], "destination_not_allowed",
            "{e}"
        );
    }
    let (status, e) = put(
        &s,
        &a,
        "smtp",
        &json!({"host": "127.0.0.1", "port": 25, "from": "a@b.io"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{e}");

    // A name is stored, and refused on the address it resolves to.
    let mut body = provider.voice_config();
    body["base_url"] = json!(format!("http://localhost:{port}"));
    put_ok(&s, &a, "voice", &body).await;
    let before = provider.received().len();
    let failed = test_kind(&s, &a, "voice").await;
    assert_eq!(failed["ok"], false, "{failed}");
    let message = failed["message"].as_str().expect("message");
    assert!(message.contains("non-public address"), "{message}");
    assert_eq!(
        provider.received().len(),
        before,
        "the inside service was contacted"
    );
    put_ok(
        &s,
        &a,
        "smtp",
        &json!({"host": "localhost", "port": 25, "from": "a@b.io"}),
    )
    .await;
    let failed = test_kind(&s, &a, "smtp").await;
    assert_eq!(failed["ok"], false, "{failed}");
    assert!(
        failed["message"]
            .as_str()
            .expect("m")
            .contains("non-public address"),
        "{failed}"
    );
}
