//! The OpenAPI document is a contract a generated client can trust: schemathesis (PyPI, pinned
//! in scripts/schemathesis-venv.sh) generates requests from `/openapi.json` of a live server
//! and checks every answer against it (documented status codes, response schemas, valid
//! requests accepted, invalid ones refused). Deterministic: the seed, example count and worker
//! count are fixed in tests/schemathesis/schemathesis.toml.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use svc_integration_tests::TestServer;

fn schemathesis() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/schemathesis-venv.sh");
    let out = Command::new("bash")
        .arg(&script)
        .stderr(Stdio::inherit())
        .output()
        .expect("run scripts/schemathesis-venv.sh");
    assert!(out.status.success(), "scripts/schemathesis-venv.sh failed");
    let text = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(text.lines().last().expect("schemathesis path").trim())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_matches_what_the_server_answers() {
    let exe = tokio::task::spawn_blocking(schemathesis)
        .await
        .expect("venv");
    let s = TestServer::start().await;
    let account = s.account().await;
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemathesis/schemathesis.toml");
    let url = s.url("/openapi.json");
    let bearer = format!("Authorization: Bearer {}", account.token);
    let (ok, report) = tokio::task::spawn_blocking(move || run(&exe, &config, &url, &bearer))
        .await
        .expect("schemathesis thread");
    assert!(
        ok,
        "schemathesis found the document and the server disagreeing:\n{report}"
    );
}

/// Runs schemathesis to its end (killed after five minutes); whether it passed, and its output.
fn run(exe: &Path, config: &Path, url: &str, bearer: &str) -> (bool, String) {
    let dir = tempfile::tempdir().expect("output dir");
    let log = dir.path().join("schemathesis.log");
    let file = std::fs::File::create(&log).expect("log file");
    let mut child = Command::new(exe)
        .arg("--no-color")
        .arg("--config-file")
        .arg(config)
        .arg("run")
        .arg(url)
        .arg("-H")
        .arg(bearer)
        .current_dir(dir.path())
        .stdout(file.try_clone().expect("log handle"))
        .stderr(file)
        .spawn()
        .expect("schemathesis starts");
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let report = std::fs::read_to_string(&log).unwrap_or_default();
    match status {
        Some(s) => (s.success(), report),
        None => (false, format!("timed out after 5 minutes\n{report}")),
    }
}
