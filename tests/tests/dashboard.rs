//! The dashboard in a real headless Chromium (see `svc_integration_tests::browser`): sign up,
//! create an agent key, watch ingested events arrive live, open a customer's timeline, approve
//! a queued email in the inbox (and see it delivered by a real SMTP server), connect SMTP and
//! run its action playbook card, run Cypher, sign out. Writes a screenshot of each main page to docs/screenshots/latest/.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::browser::Browser;
use svc_integration_tests::providers::SmtpSink;
use svc_integration_tests::{invoke_path, read, str_at, unique, Capability, TestServer};

/// Where each run writes its screenshots: `docs/screenshots/latest/` (ignored by git), so a
/// test run never modifies the two committed copies README.md shows (refreshing those is a
/// deliberate copy from here).
fn screenshots() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/screenshots/latest")
}

/// Signs up in the browser; returns the email and password.
async fn sign_up(s: &TestServer, b: &Browser) -> (String, String) {
    let email = format!("ada-{}@example.com", unique());
    let password = "correct horse battery".to_owned();
    b.goto(&s.url("/app/home")).await;
    b.wait_for_path("/app/login").await;
    b.click_on("a[href='/app/signup']").await;
    b.fill_in("#name", "Ada Lovelace").await;
    b.fill_in("#email", &email).await;
    b.fill_in("#password", &password).await;
    b.click_on("form button[type=submit]").await;
    b.wait_for_path("/app/home").await;
    (email, password)
}

/// The session cookie as the browser holds it.
async fn session_cookie(b: &Browser) -> Value {
    b.cookies()
        .await
        .into_iter()
        .find(|c| c["name"] == "svc_session")
        .expect("svc_session cookie")
}

#[tokio::test]
async fn the_dashboard_works_end_to_end_in_a_browser() {
    let started = Instant::now();
    let smtp = SmtpSink::start();
    let (s, b) = tokio::join!(TestServer::start(), Browser::start());
    let shots = screenshots();

    // 1. Sign up; the JWT is in an HttpOnly, SameSite=Strict cookie.
    let (email, password) = sign_up(&s, &b).await;
    let cookie = session_cookie(&b).await;
    assert_eq!(cookie["httpOnly"], true, "{cookie}");
    assert_eq!(cookie["sameSite"], "Strict", "{cookie}");
    let jwt = cookie["value"].as_str().expect("cookie value").to_owned();
    // The JSON API does not take the cookie, and dashboard writes need the CSRF token.
    let resp = s
        .get("/api/v1/workspace")
        .header("cookie", format!("svc_session={jwt}"))
        .send()
        .await
        .expect("api");
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let resp = s
        .post("/app/settings")
        .header("cookie", format!("svc_session={jwt}"))
        .form(&[("read_only", "on")])
        .send()
        .await
        .expect("settings");
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    assert!(resp.text().await.expect("body").contains("security token"));
    // The same credentials work on the API.
    let (status, login) = read(
        s.post("/api/auth/login")
            .json(&json!({"email": email, "password": password}))
            .send()
            .await
            .expect("login"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{login}");
    let token = str_at(&login, "/token");

    // 2. Create an agent key; its plaintext is shown once.
    b.click_on("nav a[href='/app/keys']").await;
    b.fill_in("#key-name", "sdr bot").await;
    for id in [
        "#g-events-ingest",
        "#g-queue-outreach",
        "#r-customers-read",
        "#r-events-write",
        "#m-queue",
    ] {
        b.click_on(id).await;
    }
    b.click_on("form[action='/app/keys'] button[type=submit]")
        .await;
    let field = b.wait_for("#new-key").await;
    let key = b
        .property(&field, "value")
        .await
        .as_str()
        .expect("key")
        .to_owned();
    assert!(key.starts_with("svc_live_"), "{key}");
    b.wait_for_text("#keys", "sdr bot").await;
    b.screenshot(&shots.join("keys.png")).await;

    // 3. Home: events ingested through the API appear live.
    b.click_on("nav a[href='/app/home']").await;
    b.wait_for("#live-feed[data-connected='true']").await;
    for (event, who) in [
        ("pricing_viewed", "grace@example.com"),
        ("demo_requested", "grace@example.com"),
    ] {
        let resp = s
            .post("/api/v1/events/track")
            .bearer_auth(&key)
            .json(&json!({"event": event, "email": who}))
            .send()
            .await
            .expect("track");
        assert_eq!(resp.status(), StatusCode::OK);
    }
    b.wait_for_text("#live-feed", "pricing_viewed").await;
    b.wait_for_text("#live-feed", "demo_requested").await;
    let newest = b.text(&b.wait_for("#live-feed li").await).await;
    assert!(newest.contains("demo_requested"), "newest first: {newest}");
    b.wait_for("#chart-activity").await;
    let charts = b
        .execute(
            "return ['chart-activity','chart-pipeline','chart-credits'].map(id => !!Chart.getChart(id));",
            json!([]),
        )
        .await;
    assert_eq!(charts, json!([true, true, true]));
    let live_total = b
        .execute(
            "return Chart.getChart('chart-activity').data.datasets[0].data.reduce((a, b) => a + b, 0);",
            json!([]),
        )
        .await;
    assert_eq!(
        live_total,
        json!(2),
        "the activity chart counts live events"
    );
    b.screenshot(&shots.join("home-first.png")).await;

    // 4. Customers: search, open the profile, see the timeline and scores.
    b.click_on("nav a[href='/app/customers']").await;
    b.wait_for_text("#customer-rows", "grace@example.com").await;
    b.fill_in("#q", "nobody-matches").await;
    b.wait_for_text("#customer-rows", "No customers match")
        .await;
    b.fill_in("#q", "grace").await;
    b.wait_for_text("#customer-rows", "grace@example.com").await;
    b.click_on("#customer-rows a").await;
    b.wait_for_path("/app/customers/cus_").await;
    b.wait_for_text("#timeline", "demo_requested").await;
    b.wait_for_text("main", "Churn risk").await;
    b.wait_for_text("main", "Open loops").await;
    b.wait_for("#graph canvas").await;
    b.screenshot(&shots.join("customer.png")).await;

    // 5. Integrations: no action playbook card until SMTP is connected (in the browser).
    b.click_on("nav a[href='/app/integrations']").await;
    b.wait_for("#no-cards").await;
    assert!(b.find("#card-win-back-email").await.is_none());
    b.fill_in("#smtp-host", "127.0.0.1").await;
    b.fill_in("#smtp-port", &smtp.port.to_string()).await;
    b.execute(
        "document.getElementById('smtp-security').value = 'none';",
        json!([]),
    )
    .await;
    b.fill_in("#smtp-username", &smtp.user).await;
    b.fill_in("#smtp-password", &smtp.password).await;
    b.fill_in("#smtp-from", "Acme Growth <growth@acme.test>")
        .await;
    b.click_on("form[action='/app/integrations/smtp'] button[type=submit]")
        .await;
    b.wait_for_text("#integration-smtp .state", "connected")
        .await;
    b.click_on("form[action='/app/integrations/smtp/test'] button")
        .await;
    b.wait_for_text("#integration-smtp", "test passed").await;
    b.wait_for_text("#card-win-back-email", "Win back").await;
    assert!(
        b.find("#card-call-warm-lead").await.is_none(),
        "voice is not connected"
    );
    b.screenshot(&shots.join("integrations.png")).await;

    // 6. Approvals: an email queued through the API is previewed and approved in the inbox.
    let (status, queued) = read(
        s.post(&invoke_path(Capability::QueueOutreach))
            .bearer_auth(&key)
            .json(
                &json!({"mode": "queue", "input": {"customer": "grace@example.com",
                "subject": "Your demo, Grace", "body": "Hi Grace,\n\n<b>Tuesday</b> works."}}),
            )
            .send()
            .await
            .expect("queue"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{queued}");
    let pending = str_at(&queued, "/pending_action_id");
    b.click_on("nav a[href='/app/approvals']").await;
    let card = format!("article[id='{pending}']");
    b.wait_for_text(&format!("{card} .subject"), "Your demo, Grace")
        .await;
    b.wait_for_text(&format!("{card} .email-body"), "<b>Tuesday</b> works.")
        .await;
    b.wait_for_text(&format!("{card} time.countdown"), "m ")
        .await;
    b.screenshot(&shots.join("approvals.png")).await;
    b.click_on(&format!("{card} button.primary")).await;
    b.wait_for_text(&format!("{card} .status"), "executed")
        .await;
    let sent = smtp.wait_for(1).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].recipients, ["grace@example.com"]);
    // The customer's timeline shows the agent's action with its receipt.
    b.click_on("nav a[href='/app/customers']").await;
    b.click_on("#customer-rows a").await;
    b.wait_for_text("#timeline .action", "queue.outreach").await;
    b.wait_for_text("#timeline", "email_sent").await;

    // The action playbook card queues through the gateway as the campaign buddy; reject it.
    b.click_on("nav a[href='/app/integrations']").await;
    b.click_on("#card-win-back-email button[type=submit]").await;
    b.wait_for_path("/app/approvals").await;
    let queued_card = b.wait_for_text("article.approval", "by campaign").await;
    let card_id = b
        .property(&queued_card, "id")
        .await
        .as_str()
        .expect("id")
        .to_owned();
    let card = format!("article[id='{card_id}']");
    b.wait_for_text(
        &format!("{card} .subject"),
        "We would love to have you back",
    )
    .await;
    b.click_on(&format!("{card} button.danger")).await;
    b.wait_for_text(&format!("{card} .status"), "rejected")
        .await;
    assert_eq!(smtp.messages().len(), 1, "a rejected email is not sent");

    // 7. Cypher console: a table, a graph, and an EXPLAIN plan.
    b.click_on("nav a[href='/app/graph']").await;
    b.click_on("form[action='/app/graph'] button[type=submit]")
        .await;
    // A result with nodes opens on the graph tab; the table is the other tab.
    b.wait_for("#graph canvas").await;
    b.execute(
        "document.getElementById('graph').scrollIntoView();",
        json!([]),
    )
    .await;
    b.screenshot(&shots.join("graph.png")).await;
    b.click_on("#tab-table").await;
    b.wait_for_text("#result-table", "Customer").await;
    b.fill_in("#query", "MATCH (c:Customer) RETURN c.email AS email")
        .await;
    b.click_on("form[action='/app/graph'] button[type=submit]")
        .await;
    b.wait_for_text("#result-table", "grace@example.com").await;
    b.fill_in("#query", "EXPLAIN MATCH (c:Customer) RETURN c.email")
        .await;
    b.click_on("form[action='/app/graph'] button[type=submit]")
        .await;
    b.wait_for(".plan li").await;
    b.fill_in("#query", "MATCH (c:Customer RETURN c").await;
    b.click_on("form[action='/app/graph'] button[type=submit]")
        .await;
    b.wait_for("#result .alert").await;
    // A person may write: a second record with Grace's email, for de-duplication below.
    b.fill_in(
        "#query",
        "CREATE (:Customer {email: 'GRACE@example.com', name: 'Grace (import)'})",
    )
    .await;
    b.click_on("form[action='/app/graph'] button[type=submit]")
        .await;
    b.wait_for_text("#result", "1 nodes created").await;

    // Pipeline for Home's chart: two open opportunities of Grace at two stages.
    b.fill_in(
        "#query",
        "MATCH (c:Customer) WHERE c.email = 'grace@example.com' \
         CREATE (c)-[:HAS_OPPORTUNITY]->(:Opportunity {name: 'Pro plan', amount: 12000})-[:AT_STAGE]->(:Stage {name: 'proposal'}), \
                (c)-[:HAS_OPPORTUNITY]->(:Opportunity {name: 'Add-on', amount: 4000})-[:AT_STAGE]->(:Stage {name: 'discovery'})",
    )
    .await;
    b.click_on("form[action='/app/graph'] button[type=submit]")
        .await;
    b.wait_for_text("#result", "4 nodes created").await;

    // De-duplication: the plan first, then the merge.
    b.click_on("nav a[href='/app/customers']").await;
    b.click_on("form[action='/app/customers/dedupe'] button")
        .await;
    b.wait_for_text(
        "#dedupe-summary",
        "Plan: 1 records would be merged into 1 customers",
    )
    .await;
    b.click_on("#dedupe-result button.danger").await;
    b.wait_for_text("#dedupe-summary", "Merged 1 records").await;
    b.click_on("form[action='/app/customers/dedupe'] button")
        .await;
    b.wait_for("#dedupe-none").await;

    // The explorer: a customer's neighbourhood from the console's starting points.
    b.click_on("nav a[href='/app/graph']").await;
    b.click_on("ul.explore a").await;
    b.wait_for_path("/app/graph?explore=cus_").await;
    b.wait_for("#graph canvas").await;
    b.click_on("#tab-table").await;
    b.wait_for_text("#result-table", "HAS_TOUCHPOINT").await;

    // The catalogue and the month's credits.
    b.click_on("nav a[href='/app/capabilities']").await;
    b.wait_for_text("#usage-total", "of 100 action credits used")
        .await;
    b.wait_for_text("article[id='cap-queue.outreach']", "Input schema")
        .await;

    // 8. Settings save through the form (with its CSRF token).
    b.click_on("nav a[href='/app/settings']").await;
    b.fill_in("#cap", "5").await;
    b.click_on("form[action='/app/settings'] button[type=submit]")
        .await;
    b.wait_for_text("main", "Settings saved.").await;
    let ws: Value = s
        .get("/api/v1/workspace")
        .bearer_auth(&token)
        .send()
        .await
        .expect("workspace")
        .json()
        .await
        .expect("json");
    assert_eq!(
        ws["policy"]["max_outreach_per_customer_per_week"], 5,
        "{ws}"
    );
    b.screenshot(&shots.join("settings.png")).await;

    // Brand voice: save the profile, then preview an email drafted in it.
    b.click_on("nav a[href='/app/brand']").await;
    b.fill_in("#brand-businessName", "Acme Growth").await;
    b.execute(
        "const d = document.getElementById('dial-formality'); d.value = '5'; d.dispatchEvent(new Event('input', {bubbles: true}));",
        json!([]),
    )
    .await;
    b.wait_for_text("#dial-formality-value", "5").await;
    b.click_on("form[action='/app/brand'] button[type=submit]")
        .await;
    b.wait_for_text("main", "Brand voice saved.").await;
    let brand: Value = s
        .get("/v1/brand-context")
        .bearer_auth(&token)
        .send()
        .await
        .expect("brand")
        .json()
        .await
        .expect("json");
    assert_eq!(brand["context"]["businessName"], "Acme Growth", "{brand}");
    assert_eq!(brand["context"]["voice"]["formality"], 5, "{brand}");
    b.click_on("form[action='/app/brand/preview'] button").await;
    let frame = b.wait_for("#draft iframe").await;
    let html = b.property(&frame, "srcdoc").await;
    assert!(
        html.as_str().is_some_and(|h| h.contains("Acme Growth")),
        "{html}"
    );
    assert!(!b
        .text(&b.wait_for("#draft .subject").await)
        .await
        .is_empty());
    b.screenshot(&shots.join("brand.png")).await;

    // Playbooks: the service's validation message, then a spec and a run on one lead.
    b.click_on("nav a[href='/app/playbooks']").await;
    b.click_on("form[action='/app/playbooks'] button[type=submit]")
        .await;
    b.wait_for("#playbook-notice .alert").await;
    b.fill_in("#pb-name", "Demo follow-up").await;
    b.fill_in(
        "#pb-hypothesis",
        "People who asked for a demo answer a short note",
    )
    .await;
    b.click_on("form[action='/app/playbooks'] button[type=submit]")
        .await;
    b.wait_for_text("#playbook-notice", "created").await;
    // Edit: activate it.
    b.click_on("article.playbook details.edit summary").await;
    b.execute(
        "document.querySelector('article.playbook select[name=status]').value = 'active';",
        json!([]),
    )
    .await;
    b.click_on("article.playbook details.edit button[type=submit]")
        .await;
    b.wait_for_text("#playbook-notice", "saved").await;
    b.wait_for_text("article.playbook h2", "active").await;
    b.click_on("article.playbook details.start summary").await;
    b.fill_in("article.playbook textarea[name=leads]", "grace@example.com")
        .await;
    b.click_on("article.playbook details.start button[type=submit]")
        .await;
    b.wait_for_text("#playbook-notice", "started").await;
    let status = b
        .text(&b.wait_for("article.playbook td.run-status").await)
        .await;
    assert!(!status.is_empty(), "the run is listed with its status");
    b.screenshot(&shots.join("playbooks.png")).await;
    // The run queues its message for approval. Someone rejects it through the API meanwhile:
    // the stale Approve button then shows the service's refusal instead of doing nothing.
    let deadline = Instant::now() + Duration::from_secs(10);
    let queued_by_run = loop {
        b.goto(&s.url("/app/approvals")).await;
        if let Some(card) = b.find("article.approval[data-status='pending']").await {
            break b
                .property(&card, "id")
                .await
                .as_str()
                .expect("id")
                .to_owned();
        }
        assert!(Instant::now() < deadline, "the run queued no message");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let resp = s
        .post(&format!("/api/v1/approvals/{queued_by_run}/reject"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("reject");
    assert_eq!(resp.status(), StatusCode::OK);
    b.click_on(&format!("article[id='{queued_by_run}'] button.primary"))
        .await;
    b.wait_for("#toast:not([hidden])").await;
    b.wait_for_text("#toast", "the action is rejected, not pending")
        .await;

    // Chat: the answer streams into the page.
    b.click_on("nav a[href='/app/chat']").await;
    b.fill_in("#chat-message", "How likely is grace@example.com to churn?")
        .await;
    b.click_on("#chat-form button[type=submit]").await;
    let answer = b
        .wait_for("#chat-log li.buddy[data-state='completed']")
        .await;
    let said = b.text(&answer).await;
    assert!(said.len() > 20, "an answer: {said}");
    let session = b
        .property(&b.wait_for("#chat-session").await, "value")
        .await;
    assert!(
        session.as_str().is_some_and(|v| v.starts_with("chs_")),
        "{session}"
    );
    b.screenshot(&shots.join("chat.png")).await;

    // Home again: the pipeline by stage, the credits used, and one more live event.
    b.click_on("nav a[href='/app/home']").await;
    b.wait_for("#live-feed[data-connected='true']").await;
    let stages = b
        .execute(
            "return Chart.getChart('chart-pipeline').data.labels;",
            json!([]),
        )
        .await;
    assert_eq!(stages, json!(["discovery", "proposal"]));
    let resp = s
        .post("/api/v1/events/track")
        .bearer_auth(&key)
        .json(&json!({"event": "pricing_viewed", "email": "grace@example.com"}))
        .send()
        .await
        .expect("track");
    assert_eq!(resp.status(), StatusCode::OK);
    b.wait_for_text("#live-feed", "pricing_viewed").await;
    b.screenshot(&shots.join("home.png")).await;

    // Themes and a phone's width: the toggle is remembered, nothing overflows at 360 px.
    b.click_on("nav a[href='/app/home']").await;
    let before = b
        .execute(
            "return getComputedStyle(document.body).backgroundColor;",
            json!([]),
        )
        .await;
    b.click_on("#theme-toggle").await;
    let after = b
        .execute(
            "return getComputedStyle(document.body).backgroundColor;",
            json!([]),
        )
        .await;
    assert_ne!(before, after, "the toggle changes the theme");
    b.goto(&s.url("/app/home")).await;
    let theme = b
        .execute(
            "return document.documentElement.dataset.theme || '';",
            json!([]),
        )
        .await;
    assert!(theme == "dark" || theme == "light", "remembered: {theme}");
    b.set_window_size(360, 780).await;
    for path in [
        "/app/home",
        "/app/customers",
        "/app/approvals",
        "/app/keys",
        "/app/graph",
    ] {
        b.goto(&s.url(path)).await;
        b.wait_for("main h1").await;
        let overflow = b
            .execute(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth;",
                json!([]),
            )
            .await;
        let widest = b
            .execute(
                "let w = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth && !e.closest('.table-wrap')); return w.slice(0, 6).map(e => e.tagName + '.' + e.className + '#' + e.id);",
                json!([]),
            )
            .await;
        assert!(
            overflow.as_i64().is_some_and(|o| o <= 0),
            "{path} overflows at 360 px by {overflow}: {widest}"
        );
    }
    b.screenshot(&shots.join("phone.png")).await;
    b.set_window_size(1280, 900).await;

    // 9. Sign out: the cookie is gone and pages send you to the login form.
    b.click_on("form[action='/app/logout'] button").await;
    b.wait_for_path("/app/login").await;
    assert!(b.cookies().await.iter().all(|c| c["name"] != "svc_session"));
    b.goto(&s.url("/app/customers")).await;
    b.wait_for_path("/app/login").await;
    // A wrong password is refused on the form, which keeps the email.
    b.fill_in("#email", &email).await;
    b.fill_in("#password", "not the password").await;
    b.click_on("form button[type=submit]").await;
    b.wait_for("main .alert").await;
    let kept = b.property(&b.wait_for("#email").await, "value").await;
    assert_eq!(kept, json!(email));
    // And the right one signs in again.
    b.fill_in("#password", &password).await;
    b.click_on("form button[type=submit]").await;
    b.wait_for_path("/app/home").await;

    b.close().await;
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the dashboard test took {:?}",
        started.elapsed()
    );
}

/// Without a browser: over TLS the session cookie is `Secure`; assets are embedded, versioned
/// and cached for a year; pages behind sign-in redirect to the login form.
#[tokio::test]
async fn cookies_are_secure_over_tls_and_assets_are_immutable() {
    let s = TestServer::start_tls().await;
    let resp = s.client.get(s.url("/app/home")).send().await.expect("home");
    assert_eq!(
        resp.url().path(),
        "/app/login",
        "redirected to the login form"
    );
    let csp = resp.headers()["content-security-policy"]
        .to_str()
        .expect("text")
        .to_owned();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    let page = resp.text().await.expect("login page");
    // No redirects followed: the Set-Cookie is on the 303.
    let no_redirect = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .add_root_certificate(
            reqwest::Certificate::from_pem(
                &std::fs::read(s.tls_cert.as_ref().expect("cert")).expect("read cert"),
            )
            .expect("pem"),
        )
        .build()
        .expect("client");
    let resp = no_redirect
        .post(s.url("/app/signup"))
        .form(&[
            ("name", "Tls User"),
            ("email", &format!("tls-{}@example.com", unique())),
            ("password", "long enough password"),
        ])
        .send()
        .await
        .expect("signup");
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let cookie = resp
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("set-cookie")
        .to_owned();
    for attribute in [
        "svc_session=",
        "HttpOnly",
        "SameSite=Strict",
        "Path=/",
        "Secure",
    ] {
        assert!(cookie.contains(attribute), "{attribute} missing: {cookie}");
    }

    // Every asset the login page names is served from the binary with a year of caching.
    let assets: Vec<&str> = page
        .split('"')
        .filter(|p| p.starts_with("/app/assets/"))
        .collect();
    assert!(assets.len() >= 3, "{page}");
    for path in assets {
        let resp = s.get(path).send().await.expect("asset");
        assert_eq!(resp.status(), StatusCode::OK, "{path}");
        let cache = resp.headers()["cache-control"]
            .to_str()
            .expect("text")
            .to_owned();
        assert!(
            cache.contains("max-age=31536000") && cache.contains("immutable"),
            "{cache}"
        );
        assert!(!resp.bytes().await.expect("body").is_empty());
    }
    let resp = s
        .get("/app/assets/htmx-0.0.0.min.js")
        .send()
        .await
        .expect("missing");
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
}

/// Issue 29: a page of another site cannot sign its visitor in (login CSRF): the browser's
/// `Sec-Fetch-Site` or `Origin` gives it away, and nothing is answered but a refusal.
#[tokio::test]
async fn sign_in_refuses_cross_site_posts() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let no_redirect = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let form = [
        ("email", a.email.as_str()),
        ("password", a.password.as_str()),
    ];
    let host = s.url("/").trim_end_matches('/').to_owned();
    for (name, value) in [
        ("origin", "https://evil.example"),
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-site", "same-site"),
    ] {
        let resp = no_redirect
            .post(s.url("/app/login"))
            .header(name, value)
            .form(&form)
            .send()
            .await
            .expect("post");
        assert_eq!(resp.status(), StatusCode::FORBIDDEN, "{name}: {value}");
        assert!(resp.headers().get("set-cookie").is_none());
    }
    for (name, value) in [("origin", host.as_str()), ("sec-fetch-site", "same-origin")] {
        let resp = no_redirect
            .post(s.url("/app/login"))
            .header(name, value)
            .form(&form)
            .send()
            .await
            .expect("post");
        assert_eq!(resp.status(), StatusCode::SEE_OTHER, "{name}: {value}");
    }
}
