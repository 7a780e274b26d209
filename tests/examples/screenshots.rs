//! Screenshots of every dashboard page at a laptop's and a phone's width, over a workspace
//! seeded through the API (`svc_integration_tests::seed`), in headless Chromium:
//!
//! ```text
//! cargo run -p svc-integration-tests --example screenshots -- docs/screenshots/after
//! ```
//!
//! Writes `<page>-1440.png` and `<page>-390.png` into the directory given (default
//! `docs/screenshots/latest`, which git ignores).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use svc_integration_tests::browser::Browser;
use svc_integration_tests::providers::SmtpSink;
use svc_integration_tests::{seed, TestServer};

/// (file name, path); `{customer}` is replaced by the first listed customer's page.
const PAGES: &[(&str, &str)] = &[
    ("home", "/app/home"),
    ("customers", "/app/customers"),
    ("customer", "{customer}"),
    ("approvals", "/app/approvals"),
    ("keys", "/app/keys"),
    ("console", "/app/graph"),
    ("integrations", "/app/integrations"),
    ("playbooks", "/app/playbooks"),
    ("capabilities", "/app/capabilities"),
    ("brand", "/app/brand"),
    ("chat", "/app/chat"),
    ("settings", "/app/settings"),
    ("not-found", "/app/no-such-page"),
];

#[tokio::main]
async fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "docs/screenshots/latest".into()),
    );
    let smtp = SmtpSink::start();
    let (s, b) = tokio::join!(TestServer::start(), Browser::start());
    let a = s.account().await;
    seed::workspace(&s, &a, &smtp, 60, 72).await;

    b.goto(&s.url("/app/login")).await;
    b.fill_in("#email", &a.email).await;
    b.fill_in("#password", &a.password).await;
    b.click_on("form button[type=submit]").await;
    b.wait_for_path("/app/home").await;

    b.goto(&s.url("/app/customers")).await;
    let customer = b
        .execute(
            "const a = document.querySelector('main table a[href^=\"/app/customers/\"]'); return a ? a.getAttribute('href') : '/app/customers';",
            json!([]),
        )
        .await
        .as_str()
        .unwrap_or("/app/customers")
        .to_owned();

    for (width, height) in [(1440, 900), (390, 844)] {
        b.set_window_size(width, height).await;
        for (name, path) in PAGES {
            let path = path.replace("{customer}", &customer);
            b.goto(&s.url(&path)).await;
            b.wait_for("body").await;
            if *name == "console" {
                // The console with its default query's answer.
                if let Some(button) = b
                    .find("form[action='/app/graph'] button[type=submit]")
                    .await
                {
                    b.click(&button).await;
                    b.wait_for("#result").await;
                }
            }
            // Charts and graphs animate in.
            tokio::time::sleep(Duration::from_millis(700)).await;
            b.screenshot(&dir.join(format!("{name}-{width}.png"))).await;
            println!("{name}-{width}.png");
        }
    }
    b.close().await;
}
