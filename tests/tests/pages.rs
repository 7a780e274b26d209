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
    b.close().await;
}
