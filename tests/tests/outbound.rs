//! Outbound actions end to end through the gateway, against real providers on loopback: emails
//! to an `aiosmtpd` SMTP server, calls and Customer.io writes to an HTTP server implementing
//! the providers' documented request shapes. Exactly-once delivery after approval, refunds on
//! provider failure, consent and frequency caps, the signed voice status callback, the outbox.

use std::collections::HashSet;

use hmac::{Hmac, Mac};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sha1::Sha1;
use svc_integration_tests::providers::{HttpProvider, SmtpSink};
use svc_integration_tests::{
    expect_error, get_ok, grant, invoke_path, read, str_at, Account, Capability, Key, TestServer,
};

/// Every outbound capability's grant, plus events and the outbox.
async fn outbound_key(s: &TestServer, a: &Account) -> Key {
    let mut grants: Vec<String> = [
        Capability::QueueOutreach,
        Capability::ExecuteOutreach,
        Capability::QueueCall,
        Capability::ExecuteCall,
        Capability::CioWrite,
        Capability::EventsIngest,
    ]
    .map(grant)
    .to_vec();
    grants.push("outbox:read".into());
    s.mint_key(
        a,
        json!({"name": "outbound", "agent": "sdr-bot", "grants": grants,
            "allowed_modes": ["dry_run", "queue", "execute"], "auto_run": true}),
    )
    .await
}

async fn connect(s: &TestServer, a: &Account, kind: &str, config: Value) {
    let resp = s
        .request(
            reqwest::Method::PUT,
            &format!("/api/v1/integrations/{kind}"),
        )
        .bearer_auth(&a.token)
        .json(&config)
        .send()
        .await
        .expect("connect");
    let (status, body) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "connect {kind}: {body}");
}

async fn invoke(s: &TestServer, key: &str, c: Capability, body: Value) -> (StatusCode, Value) {
    let resp = s
        .post(&invoke_path(c))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .expect("invoke");
    read(resp).await
}

/// A customer with an email and a phone, created through events.ingest; returns its id.
async fn customer(s: &TestServer, key: &str, email: &str, phone: &str) -> String {
    let (status, body) = invoke(
        s,
        key,
        Capability::EventsIngest,
        json!({"mode": "execute", "input": {"event": "pricing_viewed", "email": email,
            "phone": phone}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    str_at(&body, "/result/customer_id")
}

async fn used_credits(s: &TestServer, key: &str) -> u64 {
    get_ok(s, "/api/v1/capabilities/usage/actions", key).await["used"]
        .as_u64()
        .expect("used")
}

async fn approve(s: &TestServer, a: &Account, pending: &str) -> reqwest::Response {
    s.post(&format!("/api/v1/approvals/{pending}/approve"))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("approve")
}

#[tokio::test]
async fn a_queued_email_is_sent_exactly_once_after_concurrent_approvals() {
    let smtp = SmtpSink::start();
    let s = TestServer::start().await;
    let a = s.account().await;
    let k = outbound_key(&s, &a).await;
    let cus = customer(&s, &k.plaintext, "ada@example.com", "+14155550111").await;
    let input = json!({"customer": "ada@example.com", "subject": "Your trial ends Friday",
        "body": "Hi Ada,\n\nYour trial ends on Friday. <b>Reply</b> with questions."});

    // Not connected: dry_run shows what would be sent; queue is refused and free.
    let (status, body) = invoke(
        &s,
        &k.plaintext,
        Capability::QueueOutreach,
        json!({"mode": "dry_run", "input": input}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["integration"]["connected"], false, "{body}");
    assert_eq!(
        body["result"]["would_send"]["subject"],
        "Your trial ends Friday"
    );
    let before = used_credits(&s, &k.plaintext).await;
    let resp = s
        .post(&invoke_path(Capability::QueueOutreach))
        .bearer_auth(&k.plaintext)
        .json(&json!({"mode": "queue", "input": input}))
        .send()
        .await
        .expect("queue");
    let err = expect_error(resp, StatusCode::CONFLICT, "integration_not_connected").await;
    assert_eq!(err["error"]["details"]["integration"], "smtp", "{err}");
    assert_eq!(used_credits(&s, &k.plaintext).await, before);

    connect(&s, &a, "smtp", smtp.config(&smtp.password)).await;
    let (status, queued) = invoke(
        &s,
        &k.plaintext,
        Capability::QueueOutreach,
        json!({"mode": "queue", "input": input}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{queued}");
    assert_eq!(queued["status"], "queued");
    let pending = str_at(&queued, "/pending_action_id");
    let request_id = str_at(&queued, "/request_id");

    // Ten people press approve at once: one sends, the others see it is no longer pending.
    let approvals: Vec<_> = (0..10).map(|_| approve(&s, &a, &pending)).collect();
    let answers = futures_util::future::join_all(approvals).await;
    let mut ok = 0;
    for resp in answers {
        let (status, body) = read(resp).await;
        match status {
            StatusCode::OK => {
                ok += 1;
                assert_eq!(body["status"], "executed", "{body}");
                assert_eq!(body["result"]["state"], "sent", "{body}");
            }
            StatusCode::CONFLICT => {}
            other => panic!("approve answered {other}: {body}"),
        }
    }
    assert_eq!(ok, 1);
    let delivered = smtp.wait_for(1).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let delivered_after = smtp.messages();
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered_after.len(), 1, "a second email was sent");
    let m = &delivered[0];
    assert_eq!(m.recipients, ["ada@example.com"]);
    assert_eq!(
        m.header("Subject").as_deref(),
        Some("Your trial ends Friday")
    );
    let message_id = m.header("Message-ID").expect("Message-ID");
    assert!(message_id.contains(&request_id), "{message_id}");
    assert!(m.header("From").expect("From").contains("growth@acme.test"));
    assert!(m.raw.contains("Your trial ends on Friday."), "{}", m.raw);
    // The HTML part escapes the agent's text.
    assert!(m.raw.contains("&lt;b&gt;Reply&lt;/b&gt;"), "{}", m.raw);

    // The outbox and the customer's timeline show what was done, with the request id.
    let outbox = get_ok(&s, "/api/v1/outbox?customer=ada@example.com", &a.token).await;
    let items = outbox["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "{outbox}");
    assert_eq!(items[0]["state"], "sent");
    assert_eq!(items[0]["request_id"], request_id.as_str());
    let timeline = get_ok(&s, &format!("/v1/customers/{cus}/timeline"), &a.token).await;
    let text = timeline.to_string();
    assert!(
        text.contains("email_sent") && text.contains(&request_id),
        "{timeline}"
    );
}

#[tokio::test]
async fn a_provider_failure_refunds_and_consent_and_caps_charge_nothing() {
    let smtp = SmtpSink::start();
    let s = TestServer::start().await;
    let a = s.account().await;
    let k = outbound_key(&s, &a).await;
    // Execute commits directly only with auto_run and the workspace's auto-approval.
    let resp = s
        .request(reqwest::Method::PUT, "/api/v1/workspace")
        .bearer_auth(&a.token)
        .json(
            &json!({"policy": {"auto_approve": [Capability::ExecuteOutreach.id()],
            "max_outreach_per_customer_per_week": 1}}),
        )
        .send()
        .await
        .expect("policy");
    assert_eq!(resp.status(), StatusCode::OK);
    customer(&s, &k.plaintext, "grace@example.com", "+14155550112").await;
    let send = json!({"mode": "execute", "input": {"customer": "grace@example.com",
        "subject": "Hello", "body": "Hello Grace"}});

    // Wrong SMTP password: 502, nothing delivered, the credits come back.
    connect(&s, &a, "smtp", smtp.config("wrong-password")).await;
    let before = used_credits(&s, &k.plaintext).await;
    let resp = s
        .post(&invoke_path(Capability::ExecuteOutreach))
        .bearer_auth(&k.plaintext)
        .json(&send)
        .send()
        .await
        .expect("send");
    let err = expect_error(resp, StatusCode::BAD_GATEWAY, "capability_failed").await;
    assert_eq!(err["error"]["details"]["state"], "failed", "{err}");
    assert_eq!(used_credits(&s, &k.plaintext).await, before);
    assert!(smtp.messages().is_empty());

    // The right password: sent directly (auto_run + auto_approve).
    connect(&s, &a, "smtp", smtp.config(&smtp.password)).await;
    let (status, body) = invoke(&s, &k.plaintext, Capability::ExecuteOutreach, send.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "committed");
    assert_eq!(body["result"]["state"], "sent", "{body}");
    assert_eq!(smtp.wait_for(1).await.len(), 1);

    // The weekly cap of 1 is reached: refused and free.
    let resp = s
        .post(&invoke_path(Capability::ExecuteOutreach))
        .bearer_auth(&k.plaintext)
        .json(&send)
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::CONFLICT, "frequency_capped").await;

    // An unsubscribed customer is never emailed.
    customer(&s, &k.plaintext, "linus@example.com", "+14155550113").await;
    let (status, _) = invoke(
        &s,
        &k.plaintext,
        Capability::EventsIngest,
        json!({"mode": "execute", "input": {"event": "unsubscribed", "email": "linus@example.com"}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let before_suppressed = used_credits(&s, &k.plaintext).await;
    let resp = s
        .post(&invoke_path(Capability::QueueOutreach))
        .bearer_auth(&k.plaintext)
        .json(
            &json!({"mode": "queue", "input": {"customer": "linus@example.com",
            "subject": "Hi", "body": "Hi"}}),
        )
        .send()
        .await
        .expect("queue");
    expect_error(resp, StatusCode::CONFLICT, "customer_suppressed").await;
    assert_eq!(used_credits(&s, &k.plaintext).await, before_suppressed);
    assert_eq!(smtp.messages().len(), 1);

    let failed = get_ok(&s, "/api/v1/outbox?status=failed", &k.plaintext).await;
    assert_eq!(
        failed["items"].as_array().map(Vec::len),
        Some(1),
        "{failed}"
    );
}

fn twilio_signature(token: &str, url: &str, params: &[(&str, &str)]) -> String {
    use base64::Engine;
    let mut sorted = params.to_vec();
    sorted.sort();
    let mut data = url.to_owned();
    for (k, v) in sorted {
        data.push_str(k);
        data.push_str(v);
    }
    let mut mac = Hmac::<Sha1>::new_from_slice(token.as_bytes()).expect("key");
    mac.update(data.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

#[tokio::test]
async fn calls_report_their_outcome_through_a_signed_callback_and_cio_writes_land() {
    let provider = HttpProvider::start().await;
    let s = TestServer::start().await;
    let a = s.account().await;
    let k = outbound_key(&s, &a).await;
    let cus = customer(&s, &k.plaintext, "alan@example.com", "+14155550114").await;
    connect(&s, &a, "voice", provider.voice_config()).await;
    connect(&s, &a, "customerio", provider.cio_config()).await;

    let (status, queued) = invoke(
        &s,
        &k.plaintext,
        Capability::QueueCall,
        json!({"mode": "queue", "input": {"customer": cus, "script": "Hello <Alan> & co."}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{queued}");
    let (status, done) = read(approve(&s, &a, &str_at(&queued, "/pending_action_id")).await).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["result"]["state"], "sent", "{done}");
    let sid = str_at(&done, "/result/provider_id");
    let calls = provider.received();
    assert_eq!(calls.len(), 1);
    let form: std::collections::HashMap<_, _> = calls[0].form.iter().cloned().collect();
    assert_eq!(form["To"], "+14155550114");
    assert_eq!(form["From"], "+14155550100");
    assert!(
        form["Twiml"].contains("Hello &lt;Alan&gt; &amp; co."),
        "{}",
        form["Twiml"]
    );
    let callback = form["StatusCallback"].clone();
    assert!(callback.starts_with(&s.base), "{callback}");

    // A callback with a wrong signature changes nothing; the right one records the outcome.
    let params = [
        ("CallSid", sid.as_str()),
        ("CallStatus", "completed"),
        ("CallDuration", "42"),
    ];
    let post = |sig: String| {
        s.client
            .post(&callback)
            .header("x-twilio-signature", sig)
            .form(&params)
            .send()
    };
    let resp = post(twilio_signature("not-the-token", &callback, &params))
        .await
        .expect("callback");
    expect_error(resp, StatusCode::UNAUTHORIZED, "invalid_signature").await;
    let outbox = get_ok(&s, "/api/v1/outbox", &a.token).await;
    assert!(
        outbox["items"][0]["outcome"].get("reported_at").is_none(),
        "{outbox}"
    );
    let resp = post(twilio_signature(&provider.auth_token, &callback, &params))
        .await
        .expect("callback");
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    let outbox = get_ok(&s, "/api/v1/outbox", &a.token).await;
    assert_eq!(
        outbox["items"][0]["outcome"]["call_status"], "completed",
        "{outbox}"
    );
    assert_eq!(outbox["items"][0]["outcome"]["duration_s"], 42);
    let timeline = get_ok(&s, &format!("/v1/customers/{cus}/timeline"), &a.token).await;
    let actions: HashSet<String> = timeline["touchpoints"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["action"].as_str().map(str::to_owned))
        .collect();
    assert!(
        actions.contains("call_placed") && actions.contains("call_completed"),
        "{timeline}"
    );

    // Customer.io: identify (the email is added) and track, after approval.
    for input in [
        json!({"customer": cus, "action": "identify", "attributes": {"plan": "growth"}}),
        json!({"customer": cus, "action": "track", "event": "renewal_reminder",
            "data": {"days_left": 14}}),
    ] {
        let (status, queued) = invoke(
            &s,
            &k.plaintext,
            Capability::CioWrite,
            json!({"mode": "queue", "input": input}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{queued}");
        let (status, done) =
            read(approve(&s, &a, &str_at(&queued, "/pending_action_id")).await).await;
        assert_eq!(status, StatusCode::OK, "{done}");
        assert_eq!(done["result"]["state"], "sent", "{done}");
    }
    let cio: Vec<_> = provider
        .received()
        .into_iter()
        .filter(|r| r.path.starts_with("/api/v1/customers"))
        .collect();
    assert_eq!(cio.len(), 2);
    assert_eq!(cio[0].method, "PUT");
    assert_eq!(cio[0].path, format!("/api/v1/customers/{cus}"));
    assert_eq!(
        cio[0].json,
        json!({"plan": "growth", "email": "alan@example.com"})
    );
    assert_eq!(cio[1].path, format!("/api/v1/customers/{cus}/events"));
    assert_eq!(cio[1].json["name"], "renewal_reminder");
    assert_eq!(cio[1].json["data"]["days_left"], 14);
}
