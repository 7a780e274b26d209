//! Every dashboard page, on a seeded workspace (`svc_integration_tests::seed`), in headless
//! Chromium at 1440x900 and 390x844: axe-core (installed by scripts/axe-core.sh, injected into
//! the page) finds no violation, and the page logs no JavaScript error, console error or
//! failed load (chromedriver's browser log).

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use svc_integration_tests::browser::Browser;
use svc_integration_tests::providers::SmtpSink;
use svc_integration_tests::{seed, TestServer};

/// axe.min.js from scripts/axe-core.sh (idempotent, cached per machine).
fn axe_source() -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/axe-core.sh");
    let out = Command::new(&script)
        .output()
        .expect("run scripts/axe-core.sh");
    assert!(
        out.status.success(),
        "scripts/axe-core.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = String::from_utf8(out.stdout).expect("utf-8 path");
    std::fs::read_to_string(path.trim()).expect("read axe.min.js")
}

/// Runs axe on the current page: its violations, each as one line (rule, impact, help, the
/// first elements).
async fn violations(b: &Browser, axe: &str) -> Vec<String> {
    if b.execute("return typeof window.axe;", json!([])).await != json!("object") {
        b.execute(&format!("{axe}\n;return true;"), json!([])).await;
    }
    let v = b
        .execute_async(
            "const done = arguments[arguments.length - 1];
             axe.run(document, {resultTypes: ['violations']})
               .then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                   nodes: v.nodes.slice(0, 4).map(n => n.target.join(' ') + ' ' + (n.failureSummary || '').split('\\n').slice(1, 2).join(''))}))))
               .catch(e => done([{id: 'axe-error', impact: 'error', help: String(e), nodes: []}]));",
            json!([]),
        )
        .await;
    v.as_array()
        .expect("violations")
        .iter()
        .map(|v| {
            format!(
                "{} ({}): {} at {}",
                v["id"], v["impact"], v["help"], v["nodes"]
            )
        })
        .collect()
}

/// Console errors, uncaught exceptions and failed loads logged since the last call.
async fn errors(b: &Browser) -> Vec<String> {
    b.browser_log()
        .await
        .into_iter()
        .filter(|e| e["level"] == "SEVERE")
        .map(|e: Value| e["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn every_page_passes_axe_without_javascript_errors_at_both_widths() {
    let smtp = SmtpSink::start();
    let (s, b) = tokio::join!(TestServer::start(), Browser::start());
    let axe = tokio::task::spawn_blocking(axe_source)
        .await
        .expect("axe source");
    let a = s.account().await;
    let seeded = seed::workspace(&s, &a, &smtp, 40, 72).await;

    // Both checks can see a problem: an image without a text alternative, a console error.
    b.goto(&s.url("/app/login")).await;
    b.wait_for("main h1").await;
    b.execute(
        "const i = document.createElement('img'); i.src = '/app/assets/none.png'; document.querySelector('main').append(i); console.error('self-check');",
        json!([]),
    )
    .await;
    let seen = violations(&b, &axe).await;
    assert!(seen.iter().any(|v| v.contains("image-alt")), "{seen:?}");
    let logged = errors(&b).await;
    assert!(
        logged.iter().any(|e| e.contains("self-check")),
        "{logged:?}"
    );

    let mut problems = Vec::new();
    // Signed out: the sign-in and sign-up pages.
    for width in [(1440, 900), (390, 844)] {
        b.set_window_size(width.0, width.1).await;
        for path in ["/app/login", "/app/signup"] {
            b.goto(&s.url(path)).await;
            b.wait_for("main h1").await;
            for v in violations(&b, &axe).await {
                problems.push(format!("{path} at {}: {v}", width.0));
            }
            for e in errors(&b).await {
                problems.push(format!("{path} at {}: JavaScript: {e}", width.0));
            }
        }
    }
    b.set_window_size(1440, 900).await;
    b.goto(&s.url("/app/login")).await;
    b.fill_in("#email", &a.email).await;
    b.fill_in("#password", &a.password).await;
    b.click_on("form button[type=submit]").await;
    b.wait_for_path("/app/home").await;
    // A conversation to list on Chat.
    b.goto(&s.url("/app/chat")).await;
    b.fill_in("#chat-message", "What can you do?\u{E007}").await;
    b.wait_for("#chat-log li.buddy[data-state='completed']")
        .await;
    let chat = b.current_url().await;
    let chat = &chat[chat.find("/app/chat").expect("chat path")..];
    let customer = format!("/app/customers/{}", seeded.emails[0].replace('@', "%40"));
    let pages = [
        "/app/home",
        "/app/customers",
        customer.as_str(),
        "/app/approvals",
        "/app/approvals?view=history",
        "/app/keys",
        "/app/graph",
        "/app/graph?q=MATCH%20(c%3ACustomer)-%5Br%5D-(o%3AOpportunity)%20RETURN%20c%2C%20r%2C%20o%20LIMIT%2020",
        "/app/integrations",
        "/app/playbooks",
        "/app/capabilities",
        "/app/brand",
        chat,
        "/app/settings",
        "/app/no-such-page",
    ];
    errors(&b).await;
    // Both themes at the laptop's width (colour contrast differs), the light one on a phone.
    for (theme, width) in [
        ("light", (1440, 900)),
        ("light", (390, 844)),
        ("dark", (1440, 900)),
    ] {
        b.set_window_size(width.0, width.1).await;
        b.execute(
            "localStorage.setItem('svc-theme', arguments[0]);",
            json!([theme]),
        )
        .await;
        for path in pages {
            b.goto(&s.url(path)).await;
            b.wait_for("main h1").await;
            let shown = b
                .execute("return document.documentElement.dataset.theme;", json!([]))
                .await;
            assert_eq!(shown, json!(theme), "{path}");
            for v in violations(&b, &axe).await {
                problems.push(format!("{path} at {} ({theme}): {v}", width.0));
            }
            for e in errors(&b).await {
                // The unknown address answers 404 on purpose.
                if path == "/app/no-such-page" && e.contains("404") {
                    continue;
                }
                problems.push(format!("{path} at {} ({theme}): JavaScript: {e}", width.0));
            }
        }
    }
    b.close().await;
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
