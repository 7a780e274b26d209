//! The OpenAPI document is a contract a generated client can trust: schemathesis (PyPI, pinned
//! in scripts/schemathesis-venv.sh) generates requests from `/openapi.json` of a live server
//! and checks every answer against it (documented status codes and error codes, response
//! schemas, valid requests accepted, invalid ones refused), over every operation and every
//! phase, stateful included (docs/api-contract.md).
//!
//! The seeds are drawn per run, so a new disagreement cannot hide behind a fixed seed; each is
//! printed with the command that replays it. `SVC_SCHEMATHESIS_SEEDS=1,7` replays chosen
//! seeds. The example count is in tests/schemathesis/schemathesis.toml.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use svc_integration_tests::TestServer;

/// Seeds drawn per run (each a full schemathesis run of about a minute on 2 cores).
const SEEDS_PER_RUN: usize = 3;
/// One run's bound: past it the run is killed and the test fails.
const RUN_TIMEOUT: Duration = Duration::from_secs(300);

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

/// `SVC_SCHEMATHESIS_SEEDS` (comma-separated), else [`SEEDS_PER_RUN`] random seeds.
fn seeds() -> Vec<u64> {
    if let Ok(list) = std::env::var("SVC_SCHEMATHESIS_SEEDS") {
        return list
            .split(',')
            .map(|s| s.trim().parse().expect("SVC_SCHEMATHESIS_SEEDS: integers"))
            .collect();
    }
    // std's randomly keyed hasher: a fresh random value per process, no extra dependency.
    use std::hash::BuildHasher;
    let random = std::collections::hash_map::RandomState::new();
    (0..SEEDS_PER_RUN)
        .map(|i| random.hash_one(i) % 1_000_000_000)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_matches_what_the_server_answers() {
    let exe = tokio::task::spawn_blocking(schemathesis)
        .await
        .expect("venv");
    let s = TestServer::start().await;
    let env = credentials(&s).await;
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemathesis/schemathesis.toml");
    let url = s.url("/openapi.json");
    let seeds = seeds();
    eprintln!("schemathesis seeds this run: {seeds:?}");
    let mut failed = Vec::new();
    for seed in seeds {
        let (exe, config, url, env) = (exe.clone(), config.clone(), url.clone(), env.clone());
        let started = Instant::now();
        let (ok, report) =
            tokio::task::spawn_blocking(move || run(&exe, &config, &url, &env, seed))
                .await
                .expect("schemathesis thread");
        let summary = report.lines().last().unwrap_or_default().to_owned();
        eprintln!(
            "schemathesis seed {seed}: {} in {:.0?}: {summary}",
            if ok { "passed" } else { "FAILED" },
            started.elapsed()
        );
        if !ok {
            failed.push((seed, report));
        }
    }
    let replay =
        "SVC_SCHEMATHESIS_SEEDS=<seed> cargo test -p svc-integration-tests --test openapi_contract";
    let reports: Vec<String> = failed
        .iter()
        .map(|(seed, report)| format!("---- seed {seed} (replay: {replay}) ----\n{report}"))
        .collect();
    assert!(
        failed.is_empty(),
        "schemathesis found the document and the server disagreeing for seeds {:?}:\n{}",
        failed.iter().map(|(seed, _)| *seed).collect::<Vec<_>>(),
        reports.join("\n")
    );
}

/// The credentials of tests/schemathesis/schemathesis.toml, as its environment: the main
/// workspace's owner; a second workspace's agent key (every grant and mode) and Segment write
/// key; a third workspace's owner for the workspace settings route.
async fn credentials(s: &TestServer) -> Vec<(&'static str, String)> {
    use base64::Engine as _;

    let main = s.account().await;
    let agents = s.account().await;
    let settings = s.account().await;
    let doc: serde_json::Value = s
        .get("/openapi.json")
        .send()
        .await
        .expect("document")
        .json()
        .await
        .expect("document JSON");
    let grants =
        doc["components"]["schemas"]["CreateKey"]["properties"]["grants"]["items"]["enum"].clone();
    let key = s
        .mint_key(
            &agents,
            json!({
                "name": "schemathesis",
                "grants": grants,
                "allowed_modes": ["dry_run", "queue", "execute"],
                "rate_limit_per_min": 1_000_000,
            }),
        )
        .await;
    let resp = s
        .post("/api/v1/segment/write-keys")
        .bearer_auth(&agents.token)
        .json(&json!({"name": "schemathesis", "rate_limit_per_min": 1_000_000}))
        .send()
        .await
        .expect("write key");
    assert!(resp.status().is_success(), "write key: {}", resp.status());
    let body: serde_json::Value = resp.json().await.expect("write key JSON");
    let write_key = body["write_key"]
        .as_str()
        .or_else(|| body["key"].as_str())
        .unwrap_or_else(|| panic!("no write key in {body}"))
        .to_owned();
    vec![
        ("SVC_ST_JWT", main.token),
        ("SVC_ST_AGENT_KEY", key.plaintext),
        (
            "SVC_ST_SEGMENT_BASIC",
            base64::engine::general_purpose::STANDARD.encode(format!("{write_key}:")),
        ),
        ("SVC_ST_SETTINGS_JWT", settings.token),
    ]
}

/// Runs schemathesis for one seed to its end (killed after [`RUN_TIMEOUT`]); whether it
/// passed, and its output.
fn run(
    exe: &Path,
    config: &Path,
    url: &str,
    env: &[(&'static str, String)],
    seed: u64,
) -> (bool, String) {
    let dir = tempfile::tempdir().expect("output dir");
    let log = dir.path().join("schemathesis.log");
    let file = std::fs::File::create(&log).expect("log file");
    let mut child = Command::new(exe)
        .arg("--no-color")
        .arg("--config-file")
        .arg(config)
        .arg("run")
        .arg(url)
        .arg("--seed")
        .arg(seed.to_string())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir.path())
        .stdout(file.try_clone().expect("log handle"))
        .stderr(file)
        .spawn()
        .expect("schemathesis starts");
    let deadline = Instant::now() + RUN_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let report = std::fs::read_to_string(&log).unwrap_or_default();
    match status {
        Some(s) => (s.success(), report),
        None => (false, format!("timed out after {RUN_TIMEOUT:?}\n{report}")),
    }
}
