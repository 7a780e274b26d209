//! The dashboard's pages against the API, in headless Chromium over a seeded workspace
//! (`svc_integration_tests::seed`: more opportunities than one page of the opportunity list,
//! stages that do not sort alphabetically in funnel order). Every figure a page shows names
//! the API answer it stands for (`data-api="<path>#<JSON pointer>"`); the test reads what the
//! page shows, asks the API the same, and compares. Also: the pipeline chart adds up to the
//! figures above it, in funnel order; and the pages' smaller promises (readable money, times,
//! names, post/redirect/get, the phone-width navigation).

use std::collections::BTreeMap;

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::browser::Browser;
use svc_integration_tests::providers::SmtpSink;
use svc_integration_tests::{read, seed, Account, TestServer};

/// The number a figure's text shows (`$1,152,000` is 1152000, `61.9%` is 61.9) and how many
/// decimals it shows.
fn shown_number(text: &str) -> Option<(f64, usize)> {
    let kept: String = text
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == '.' || *c == '-')
        .collect();
    let kept = kept.trim_matches('.');
    let decimals = kept.split_once('.').map_or(0, |(_, f)| f.len());
    kept.parse().ok().map(|n| (n, decimals))
}

/// The API's answer at `path` (the account's JWT, else the agent key for key-scoped routes).
async fn api(s: &TestServer, a: &Account, key: &str, path: &str) -> Value {
    for token in [a.token.as_str(), key] {
        let (status, v) = read(s.get(path).bearer_auth(token).send().await.expect("api")).await;
        if status == StatusCode::OK {
            return v;
        }
    }
    panic!("no credential reads {path}");
}

/// `[data-api]` elements of the current page: (api reference, text).
async fn figures(b: &Browser) -> Vec<(String, String)> {
    let v = b
        .execute(
            "return [...document.querySelectorAll('[data-api]')].map(e => [e.dataset.api, e.textContent.trim()]);",
            json!([]),
        )
        .await;
    serde_json::from_value(v).expect("pairs")
}

async fn sign_in(s: &TestServer, b: &Browser, a: &Account) {
    b.goto(&s.url("/app/login")).await;
    b.fill_in("#email", &a.email).await;
    b.fill_in("#password", &a.password).await;
    b.click_on("form button[type=submit]").await;
    b.wait_for_path("/app/home").await;
}

#[tokio::test]
async fn every_figure_equals_the_api_and_the_pipeline_adds_up() {
    let smtp = SmtpSink::start();
    let (s, b) = tokio::join!(TestServer::start(), Browser::start());
    let a = s.account().await;
    let seeded = seed::workspace(&s, &a, &smtp, 40, 72).await;
    sign_in(&s, &b, &a).await;

    let mut answers: BTreeMap<String, Value> = BTreeMap::new();
    let mut checked = 0;
    for page in ["/app/home", "/app/playbooks", "/app/settings"] {
        b.goto(&s.url(page)).await;
        b.wait_for("main h1").await;
        let shown = figures(&b).await;
        assert!(!shown.is_empty(), "{page} names no figure's API answer");
        for (reference, text) in shown {
            let (path, pointer) = reference.split_once('#').expect("path#pointer");
            if !answers.contains_key(path) {
                let v = api(&s, &a, &seeded.key.plaintext, path).await;
                answers.insert(path.to_owned(), v);
            }
            let expected = answers[path]
                .pointer(pointer)
                .and_then(Value::as_f64)
                .unwrap_or_else(|| panic!("{reference}: not a number in {}", answers[path]));
            let (number, decimals) =
                shown_number(&text).unwrap_or_else(|| panic!("{page} {reference}: {text:?}"));
            let tolerance = 0.5 * 10f64.powi(-(decimals as i32)) + 1e-9;
            assert!(
                (number - expected).abs() <= tolerance,
                "{page} shows {text:?} for {reference}, the API says {expected}"
            );
            checked += 1;
        }
    }
    // Every figure on Home is checked: none without its API reference.
    b.goto(&s.url("/app/home")).await;
    let unchecked = b
        .execute(
            "return [...document.querySelectorAll('.figure')].filter(f => !f.matches('[data-api]') && !f.querySelector('[data-api]')).length;",
            json!([]),
        )
        .await;
    assert_eq!(unchecked, json!(0));
    assert!(checked >= 8, "{checked} figures");

    // The pipeline chart: every open opportunity (72 seeded, more than the list's 50), so it
    // adds up to the figures above it; stages in funnel order.
    let summary = &answers["/v1/reporting/summary"];
    b.wait_for("#chart-pipeline").await;
    let chart = b
        .execute(
            "const c = Chart.getChart('chart-pipeline'); const d = JSON.parse(document.getElementById('chart-data').textContent); return {labels: c.data.labels, amounts: c.data.datasets[0].data, counts: d.stage_counts};",
            json!([]),
        )
        .await;
    let amounts: f64 = chart["amounts"]
        .as_array()
        .expect("amounts")
        .iter()
        .filter_map(Value::as_f64)
        .sum();
    let counts: u64 = chart["counts"]
        .as_array()
        .expect("counts")
        .iter()
        .filter_map(Value::as_u64)
        .sum();
    assert_eq!(
        amounts.trunc(),
        summary["pipelineArr"].as_f64().expect("arr")
    );
    assert_eq!(counts, summary["openTasks"].as_u64().expect("open"));
    assert!(counts > 50, "more than one page of opportunities: {counts}");
    let open_stages: Vec<&str> = seed::STAGES
        .iter()
        .copied()
        .filter(|st| *st != "closedwon")
        .collect();
    assert_eq!(chart["labels"], json!(open_stages), "funnel order");

    // The playbook run says what it did: its queued messages, with links to their approvals.
    b.goto(&s.url("/app/playbooks")).await;
    let run = b
        .wait_for(&format!("tr[data-run='{}']", seeded.run_id))
        .await;
    let text = b.text(&run).await;
    assert!(text.contains("3 queued for approval"), "{text}");

    // The console: Ctrl+Enter runs and the query is remembered; the graph comes before the
    // table, coloured by label with a legend; an explored neighbourhood marks its centre.
    b.goto(&s.url("/app/graph")).await;
    b.fill_in(
        "#query",
        "MATCH (c:Customer)-[r]-(o:Opportunity) RETURN c, r, o LIMIT 20\u{E009}\u{E007}\u{E000}",
    )
    .await;
    b.wait_for("#graph canvas").await;
    let legend = b.find_all("#graph-legend li").await.len();
    assert!(legend >= 2, "a legend entry per label: {legend}");
    let order = b
        .execute(
            "return document.getElementById('graph').compareDocumentPosition(document.getElementById('result-table')) & Node.DOCUMENT_POSITION_FOLLOWING;",
            json!([]),
        )
        .await;
    assert_ne!(order, json!(0), "the graph is above the table");
    let remembered = b
        .execute(
            "return localStorage.getItem('svc-cypher-history');",
            json!([]),
        )
        .await;
    assert!(
        remembered.as_str().is_some_and(|h| h.contains("LIMIT 20")),
        "{remembered}"
    );
    b.click_on("ul.explore a").await;
    b.wait_for("#graph[data-centre] canvas").await;

    // The theme toggle draws the charts again in the new theme's colours.
    b.goto(&s.url("/app/home")).await;
    b.wait_for("#chart-pipeline").await;
    let colour = "return Chart.getChart('chart-pipeline').data.datasets[0].backgroundColor;";
    let before = b.execute(colour, json!([])).await;
    b.click_on("#theme-toggle").await;
    let after = b.execute(colour, json!([])).await;
    assert_ne!(before, after, "the chart follows the theme");
    b.close().await;
}

/// A new workspace gets first steps instead of empty figures; unknown addresses answer an
/// HTML page; the favicon is served; a refused form keeps what was typed and says why next to
/// the field; success redirects (a reload repeats nothing); the navigation is one row on a
/// phone.
#[tokio::test]
async fn first_steps_not_found_forms_and_the_phone_navigation() {
    let (s, b) = tokio::join!(TestServer::start(), Browser::start());
    let a = s.account().await;
    sign_in(&s, &b, &a).await;
    b.wait_for_text("#first-steps", "First steps").await;
    assert!(b.find("#first-steps a[href='/app/keys']").await.is_some());

    b.goto(&s.url("/app/no-such-page")).await;
    b.wait_for_text("main h1", "Page not found").await;
    assert!(b.find("nav a[href='/app/home']").await.is_some());
    let jar_cookie = b
        .cookies()
        .await
        .into_iter()
        .find(|c| c["name"] == "svc_session")
        .and_then(|c| c["value"].as_str().map(str::to_owned))
        .expect("session cookie");
    let resp = s
        .get("/app/no-such-page")
        .header("cookie", format!("svc_session={jar_cookie}"))
        .send()
        .await
        .expect("404");
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert!(resp.headers()["content-type"]
        .to_str()
        .expect("type")
        .starts_with("text/html"));
    let icon = b
        .execute(
            "return document.querySelector('link[rel=icon]').getAttribute('href');",
            json!([]),
        )
        .await;
    let resp = s
        .get(icon.as_str().expect("icon href"))
        .send()
        .await
        .expect("icon");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "image/svg+xml");

    // Playbooks: a refused create keeps the hypothesis and names the missing field; a
    // successful one redirects, so the page's URL is a GET that repeats nothing.
    b.goto(&s.url("/app/playbooks")).await;
    b.fill_in("#pb-hypothesis", "Trial users answer a short note")
        .await;
    b.click_on("form[action='/app/playbooks'] button[type=submit]")
        .await;
    b.wait_for("#playbook-notice .alert").await;
    let kept = b
        .property(&b.wait_for("#pb-hypothesis").await, "value")
        .await;
    assert_eq!(kept, json!("Trial users answer a short note"));
    b.wait_for("form[action='/app/playbooks'] .field-error")
        .await;
    b.fill_in("#pb-name", "Trial nudge").await;
    b.click_on("form[action='/app/playbooks'] button[type=submit]")
        .await;
    b.wait_for_text("#playbook-notice", "created").await;
    let url = b.current_url().await;
    assert!(url.contains("/app/playbooks?done=created"), "{url}");
    b.goto(&url).await;
    let listed = b.find_all("article.playbook").await.len();
    assert_eq!(listed, 1, "a reload creates nothing");

    // Settings: a bad cap is refused next to its field, the typed text kept.
    b.goto(&s.url("/app/settings")).await;
    b.fill_in("#cap", "lots").await;
    b.click_on("form[action='/app/settings'] button[type=submit]")
        .await;
    b.wait_for_text("#settings-error", "whole number").await;
    let kept = b.property(&b.wait_for("#cap").await, "value").await;
    assert_eq!(kept, json!("lots"));

    // Chat: Enter sends; the conversation survives a reload and is listed to resume.
    b.goto(&s.url("/app/chat")).await;
    b.fill_in("#chat-message", "What can you do?\u{E007}").await;
    b.wait_for("#chat-log li.buddy[data-state='completed']")
        .await;
    let url = b.current_url().await;
    assert!(url.contains("/app/chat?session=chs_"), "{url}");
    b.goto(&url).await;
    b.wait_for_text("#chat-log li.you", "What can you do?")
        .await;
    b.wait_for("#chat-log li.buddy").await;
    b.wait_for_text("#chat-sessions", "What can you do?").await;
    let resumed = b
        .property(&b.wait_for("#chat-session").await, "value")
        .await;
    assert!(
        url.ends_with(resumed.as_str().expect("session id")),
        "{url}"
    );

    // A phone: the navigation stays one row (it scrolls sideways).
    b.set_window_size(390, 844).await;
    b.goto(&s.url("/app/home")).await;
    let rows = b
        .execute(
            "return new Set([...document.querySelectorAll('nav li')].map(li => Math.round(li.getBoundingClientRect().top))).size;",
            json!([]),
        )
        .await;
    assert_eq!(rows, json!(1), "navigation rows at 390 px");
    b.close().await;
}
