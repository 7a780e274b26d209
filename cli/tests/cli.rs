//! Process-level tests of `svc`: the real binary against a real svcd.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{World, SVC};
use svc_integration_tests::{grant, Capability};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_login_status_logout_and_overrides() {
    let w = World::new().await;

    let r = w.svc(&["auth", "status"]).await;
    assert_eq!(r.code, 4, "not logged in: {r:?}");
    assert!(r.stderr.contains("not logged in"), "{r:?}");

    // A key that is not an agent key never leaves the machine: usage error.
    let r = w.svc(&["auth", "login", "--key", "dsk_nothing"]).await;
    assert_eq!(r.code, 2, "{r:?}");
    // A well-formed but unknown key: the server refuses it, nothing is stored.
    let bogus = format!("svc_live_{}", "A".repeat(38));
    let r = w.svc(&["auth", "login", "--key", &bogus]).await;
    assert_eq!(r.code, 4, "{r:?}");
    assert!(!w.config_dir().join("svc/credentials.json").exists());

    // Login from stdin.
    let mut c = w.cmd(&["auth", "login", "--key", "-", "--json"]);
    c.stdin(std::process::Stdio::piped());
    let key = w.key.plaintext.clone();
    let out = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut child = c
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(stdin, "{key}").expect("write key");
        drop(stdin);
        child.wait_with_output().expect("wait")
    })
    .await
    .expect("join");
    let r = support::Run::from(out);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.json()["key"]["key_id"], w.key.id.as_str());

    let file = w.config_dir().join("svc/credentials.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "credentials mode {mode:o}");
        let dir_mode = std::fs::metadata(file.parent().expect("dir"))
            .expect("stat dir")
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
    }
    let stored: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json file");
    assert_eq!(stored["api_key"], w.key.plaintext.as_str());
    assert_eq!(stored["server"], w.server.base.as_str());

    let r = w.svc(&["auth", "status", "--json"]).await;
    assert_eq!(r.code, 0, "{r:?}");
    let v = r.json();
    assert_eq!(v["key_source"], "stored by svc auth login");
    assert_eq!(v["key"]["agent"], "cli-tester");
    let r = w.svc(&["auth", "status"]).await;
    assert!(
        r.stdout.contains("cli-tester") && r.stdout.contains(&w.key.id),
        "{r:?}"
    );
    assert!(
        !r.stdout.contains('\x1b'),
        "no colours off a terminal: {r:?}"
    );

    // SVC_API_KEY and --api-key override the stored key.
    let other = w
        .server
        .mint_key(&w.account, json!({"name": "other", "agent": "other-agent"}))
        .await;
    let mut c = w.cmd(&["auth", "status", "--json"]);
    c.env("SVC_API_KEY", &other.plaintext);
    let v = w.run(c).await.json();
    assert_eq!(v["key_source"], "SVC_API_KEY");
    assert_eq!(v["key"]["agent"], "other-agent");
    let v = w
        .svc(&["auth", "status", "--json", "--api-key", &other.plaintext])
        .await
        .json();
    assert_eq!(v["key_source"], "--api-key");

    let r = w.svc(&["auth", "logout", "--json"]).await;
    assert_eq!((r.code, r.json()["logged_out"].clone()), (0, json!(true)));
    assert!(!file.exists());
    assert_eq!(w.svc(&["auth", "status"]).await.code, 4);
    let r = w.svc(&["auth", "logout"]).await;
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("Not logged in"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capabilities_list_and_explain() {
    let w = World::new().await;
    w.login().await;

    let v = w.svc(&["capabilities", "list", "--json"]).await.json();
    let ids: Vec<&str> = v["capabilities"]
        .as_array()
        .expect("capabilities")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(ids.len(), 2, "{v}");
    assert!(
        ids.contains(&Capability::EventsIngest.id()) && ids.contains(&Capability::ContextGet.id())
    );
    assert_eq!(v["key"]["id"], w.key.id.as_str());

    let r = w.svc(&["capabilities", "list"]).await;
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("ingest_event") && r.stdout.contains("dry_run, execute"));

    let r = w
        .svc(&[
            "capabilities",
            "explain",
            Capability::EventsIngest.id(),
            "--json",
        ])
        .await;
    let d = r.json();
    assert_eq!(d["mcp_tool_name"], "ingest_event");
    assert_eq!(d["input_schema"]["required"], json!(["event"]));
    let r = w
        .svc(&["capabilities", "explain", Capability::EventsIngest.id()])
        .await;
    for needle in [
        "Ingest an event",
        &grant(Capability::EventsIngest),
        "Input schema",
        "Output schema",
        "Examples",
        &format!(
            "svc invoke {} --mode execute --input",
            Capability::EventsIngest
        ),
        "direct:",
    ] {
        assert!(
            r.stdout.contains(needle),
            "{needle:?} missing: {}",
            r.stdout
        );
    }

    // Not granted to this key: not explained, exit 1 with the code in --json.
    let r = w
        .svc(&[
            "capabilities",
            "explain",
            Capability::CrmMutate.id(),
            "--json",
        ])
        .await;
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(r.json()["error"]["code"], "capability_not_found");

    // A key without grants sees nothing.
    let bare = w.server.mint_key(&w.account, json!({"name": "bare"})).await;
    let r = w
        .svc(&["capabilities", "list", "--api-key", &bare.plaintext])
        .await;
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("may call no capability"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invoke_modes_input_files_idempotency_and_errors() {
    let w = World::new().await;
    w.login().await;
    let input = r#"{"event":"signup","email":"ivy@example.com","channel":"web"}"#;

    let v = w
        .svc(&[
            "invoke",
            Capability::EventsIngest.id(),
            "--mode",
            "dry_run",
            "--input",
            input,
            "--json",
        ])
        .await
        .json();
    assert_eq!(v["status"], "preview");
    assert_eq!(v["action_credit_cost"], 0);
    assert_eq!(w.credits_used().await, 0);

    let file = w.write("in.json", input);
    let at_file = format!("@{}", file.display());
    let args = [
        "invoke",
        Capability::EventsIngest.id(),
        "--mode",
        "execute",
        "--input",
        &at_file,
        "--idempotency-key",
        "ivy-1",
        "--json",
    ];
    let first = w.svc(&args).await;
    assert_eq!(first.code, 0, "{first:?}");
    let first = first.json();
    assert_eq!(first["status"], "committed");
    assert_eq!(first["action_credit_cost"], 1);
    let again = w.svc(&args).await.json();
    assert_eq!(again["request_id"], first["request_id"], "replayed");
    assert_eq!(w.credits_used().await, 1, "one charge for two calls");

    let request_id = first["request_id"].as_str().expect("request id");
    let receipt = w.receipt(request_id).await;
    assert_eq!(receipt["ledger_row"]["source"], "cli");

    // Human output.
    let r = w
        .svc(&[
            "invoke",
            Capability::ContextGet.id(),
            "--input",
            r#"{"customer":"ivy@example.com"}"#,
        ])
        .await;
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout
            .starts_with(&format!("committed {} (execute)", Capability::ContextGet)),
        "{r:?}"
    );
    assert!(r.stdout.contains("\"lifecycle_stage\""), "{r:?}");
    let r = w.svc(&args[..8]).await;
    assert!(r.stdout.contains("replayed"), "{r:?}");

    // Gateway refusals: exit 1, the code and message on stdout with --json, stderr otherwise.
    let r = w
        .svc(&[
            "invoke",
            Capability::EventsIngest.id(),
            "--mode",
            "queue",
            "--input",
            input,
            "--json",
        ])
        .await;
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(r.json()["error"]["code"], "mode_denied");
    let r = w
        .svc(&[
            "invoke",
            Capability::EventsIngest.id(),
            "--input",
            r#"{"event":"x"}"#,
        ])
        .await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("invalid_input"), "{r:?}");
    assert!(r.stderr.contains("(request req_"), "{r:?}");

    // Local usage errors: exit 2, nothing sent.
    for bad in [
        vec![
            "invoke",
            Capability::EventsIngest.id(),
            "--input",
            "{not json",
        ],
        vec!["invoke", Capability::EventsIngest.id(), "--input", "[1,2]"],
        vec![
            "invoke",
            Capability::EventsIngest.id(),
            "--input",
            "@/no/such/file.json",
        ],
        vec!["invoke", "../keys", "--input", "{}"],
        vec!["invoke"],
        vec!["no-such-command"],
        vec!["invoke", Capability::ContextGet.id(), "--bogus-flag"],
    ] {
        let r = w.svc(&bad).await;
        assert_eq!(r.code, 2, "{bad:?}: {r:?}");
    }
    assert_eq!(w.credits_used().await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_send_single() {
    let w = World::new().await;
    let r = w
        .svc_keyed(&[
            "events",
            "send",
            "--type",
            "demo_requested",
            "--customer",
            "zoe@example.com",
            "--props",
            r#"{"plan":"pro"}"#,
            "--channel",
            "web",
            "--json",
        ])
        .await;
    assert_eq!(r.code, 0, "{r:?}");
    let v = r.json();
    assert_eq!(v["status"], "committed");
    assert_eq!(v["capability"], Capability::EventsIngest.id());
    assert_eq!(v["result"]["is_new"], true);
    let receipt = w.receipt(v["request_id"].as_str().expect("id")).await;
    assert_eq!(receipt["ledger_row"]["source"], "cli");
    assert_eq!(w.touchpoints().await, 1);

    let r = w
        .svc_keyed(&[
            "events",
            "send",
            "--type",
            "x",
            "--customer",
            "a@example.com",
            "--props",
            "[]",
        ])
        .await;
    assert_eq!(r.code, 2, "{r:?}");
    let r = w.svc_keyed(&["events", "send", "--type", "x"]).await;
    assert_eq!(r.code, 2, "--customer is required: {r:?}");
    // Not logged in.
    let r = w
        .svc(&[
            "events",
            "send",
            "--type",
            "x",
            "--customer",
            "a@example.com",
        ])
        .await;
    assert_eq!(r.code, 4, "{r:?}");
}

fn batch_lines(n: usize) -> String {
    (0..n)
        .map(|i| {
            json!({"event": "page_viewed", "email": format!("row{}@example.com", i % 7),
                   "properties": {"row": i}})
            .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_batch_reports_bad_rows_and_a_rerun_sends_nothing_twice() {
    let w = World::new().await;
    w.login().await;
    let good = batch_lines(6);
    let mut lines: Vec<String> = good.lines().map(str::to_owned).collect();
    lines.insert(1, "{not json".into()); // line 2
    lines.insert(3, String::new()); // line 4: blank, skipped
    lines.insert(4, r#"{"event":"no_identity"}"#.into()); // line 5
    lines.push(r#"{"event":"x","email":"t@example.com","timestamp":"tomorrow"}"#.into()); // line 10
    let file = w.write("events.jsonl", &(lines.join("\n") + "\n"));
    let path = file.display().to_string();

    let args = [
        "events",
        "send",
        "--batch",
        &path,
        "--idempotency-prefix",
        "import-1",
        "--json",
    ];
    let r = w.svc(&args).await;
    assert_eq!(r.code, 5, "partial failure: {r:?}");
    let s = r.json();
    assert_eq!(
        (s["rows"].clone(), s["sent"].clone()),
        (json!(9), json!(6)),
        "{s}"
    );
    assert_eq!(s["replayed"], 0);
    let failed: Vec<(u64, String)> = s["failures"]
        .as_array()
        .expect("failures")
        .iter()
        .map(|f| {
            (
                f["line"].as_u64().expect("line"),
                f["code"].as_str().expect("code").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        failed,
        vec![
            (2, "invalid_row".to_owned()),
            (5, "invalid_input".to_owned()),
            (10, "invalid_timestamp".to_owned())
        ]
    );
    assert_eq!(w.touchpoints().await, 6);
    assert_eq!(w.credits_used().await, 6);

    // The same file again with the same prefix: every good row is a replay.
    let s = w.svc(&args).await.json();
    assert_eq!(
        (s["sent"].clone(), s["replayed"].clone()),
        (json!(0), json!(6)),
        "{s}"
    );
    assert_eq!(w.touchpoints().await, 6, "no duplicate touchpoints");
    assert_eq!(w.credits_used().await, 6, "no second charge");

    // Human summary names the failed lines.
    let r = w
        .svc(&[
            "events",
            "send",
            "--batch",
            &path,
            "--idempotency-prefix",
            "import-1",
        ])
        .await;
    assert_eq!(r.code, 5);
    assert!(
        r.stdout
            .contains("9 rows: 0 sent, 6 already sent (replayed), 3 failed"),
        "{r:?}"
    );
    assert!(r.stdout.contains("line 5: invalid_input"), "{r:?}");
    assert!(r.stderr.is_empty(), "no progress bar off a terminal: {r:?}");

    // Every row failing is a plain error.
    let bad = w.write("bad.jsonl", "nope\n[]\n");
    let r = w
        .svc(&["events", "send", "--batch", &bad.display().to_string()])
        .await;
    assert_eq!(r.code, 1, "{r:?}");

    // Exhausted credits stop the batch (every later row would fail the same way).
    let small = w
        .server
        .mint_key(
            &w.account,
            json!({"name": "small", "grants": [grant(Capability::EventsIngest)],
                   "allowed_modes": ["execute"], "quota_override_monthly": 2}),
        )
        .await;
    let five = w.write("five.jsonl", &batch_lines(5));
    let r = w
        .svc(&[
            "events",
            "send",
            "--batch",
            &five.display().to_string(),
            "--idempotency-prefix",
            "small",
            "--api-key",
            &small.plaintext,
        ])
        .await;
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("quota_exceeded"), "{r:?}");
    assert!(
        r.stderr.contains("stopped at line 3 after 2 of 5 rows") && r.stderr.contains("small"),
        "{r:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_killed_midway_and_rerun_with_its_prefix_sends_each_row_once() {
    let w = World::new().await;
    w.login().await;
    const ROWS: u64 = 300;
    let file = w.write("big.jsonl", &batch_lines(ROWS as usize));
    let path = file.display().to_string();
    let args = [
        "events",
        "send",
        "--batch",
        &path,
        "--idempotency-prefix",
        "crash",
        "--json",
    ];

    // Start, wait until some rows are in, kill the process (SIGKILL: no clean-up at all).
    let mut child = w.cmd(&args).spawn().expect("spawn");
    let started = Instant::now();
    while w.credits_used().await < 10 && started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    child.kill().expect("kill");
    let _ = child.wait();
    let before = w.credits_used().await;
    assert!(
        (10..ROWS).contains(&before),
        "killed mid-way through the batch: {before} of {ROWS} rows in"
    );

    let r = w.svc(&args).await;
    assert_eq!(r.code, 0, "{r:?}");
    let s = r.json();
    let (sent, replayed) = (
        s["sent"].as_u64().expect("sent"),
        s["replayed"].as_u64().expect("replayed"),
    );
    assert_eq!(sent + replayed, ROWS, "{s}");
    assert!(
        replayed >= before,
        "rows sent before the crash are replays: {s}"
    );
    assert_eq!(w.touchpoints().await, ROWS, "each row recorded once");
    assert_eq!(w.credits_used().await, ROWS, "each row charged once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_passes_then_fails_on_a_revoked_key() {
    let w = World::new().await;

    // Not logged in: the key check fails, the server checks pass.
    let r = w.svc(&["doctor", "--json"]).await;
    assert_eq!(r.code, 1, "{r:?}");
    let v = r.json();
    let status = |v: &Value, name: &str| -> String {
        v["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .find(|c| c["name"] == name)
            .and_then(|c| c["status"].as_str())
            .unwrap_or_else(|| panic!("no check {name} in {v}"))
            .to_owned()
    };
    assert_eq!(status(&v, "server reachable"), "PASSED");
    assert_eq!(status(&v, "key valid"), "FAILED");
    assert_eq!(status(&v, "clock skew"), "PASSED");

    w.login().await;
    let r = w.svc(&["doctor", "--json"]).await;
    assert_eq!(r.code, 0, "{r:?}");
    let v = r.json();
    assert_eq!(v["ok"], true);
    let names: Vec<&str> = v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "server reachable",
            "version",
            "key valid",
            "grants",
            "modes",
            "quota",
            "rate limit",
            "clock skew"
        ]
    );
    assert!(v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .all(|c| c["status"] == "PASSED" && c["fix"].is_null()));
    let r = w.svc(&["doctor"]).await;
    assert_eq!(r.code, 0);
    assert_eq!(r.stdout.matches("PASSED").count(), 8, "{r:?}");

    w.revoke().await;
    let r = w.svc(&["doctor"]).await;
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("FAILED  key valid"), "{r:?}");
    assert!(
        r.stdout
            .contains("fix: the stored key is revoked or invalid"),
        "{r:?}"
    );
    let v = w.svc(&["doctor", "--json"]).await.json();
    assert_eq!(v["ok"], false);
    assert_eq!(status(&v, "server reachable"), "PASSED");
    assert_eq!(status(&v, "key valid"), "FAILED");
    assert_eq!(status(&v, "grants"), "FAILED");
    // And every command now says "not logged in" (exit 4).
    assert_eq!(w.svc(&["capabilities", "list"]).await.code, 4);

    // An unreachable server: the first check fails, the rest are not checked.
    let r = w
        .svc(&["doctor", "--json", "--server", "http://127.0.0.1:9"])
        .await;
    assert_eq!(r.code, 1);
    let v = r.json();
    assert_eq!(status(&v, "server reachable"), "FAILED");
    assert!(v["checks"][7]["detail"]
        .as_str()
        .is_some_and(|d| d.starts_with("not checked")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_codes_help_colours_and_unreachable_servers() {
    let w = World::new().await;
    let r = w.svc(&["--help"]).await;
    assert_eq!(r.code, 0);
    for cmd in ["auth", "capabilities", "invoke", "doctor", "events", "mcp"] {
        assert!(r.stdout.contains(cmd), "{cmd} in help: {}", r.stdout);
    }
    assert_eq!(w.svc(&["--version"]).await.code, 0);
    assert_eq!(w.svc(&[]).await.code, 2);
    assert_eq!(w.svc(&["mcp"]).await.code, 4, "no key");

    let r = w
        .svc_keyed(&["capabilities", "list", "--server", "http://127.0.0.1:9"])
        .await;
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains("cannot connect to http://127.0.0.1:9"),
        "{r:?}"
    );
    let r = w
        .svc_keyed(&["capabilities", "list", "--server", "ftp://x"])
        .await;
    assert_eq!(r.code, 2, "{r:?}");
    let r = w
        .svc_keyed(&[
            "capabilities",
            "list",
            "--json",
            "--server",
            "http://127.0.0.1:9",
        ])
        .await;
    assert_eq!(r.json()["error"]["code"], "unreachable");

    // NO_COLOR and no terminal: plain text.
    let mut c = w.cmd(&["doctor"]);
    c.env("NO_COLOR", "1").env("SVC_API_KEY", &w.key.plaintext);
    let r = w.run(c).await;
    assert!(
        !r.stdout.contains('\x1b') && !r.stderr.contains('\x1b'),
        "{r:?}"
    );
    let _ = SVC;
}

/// Runs `svc args` on a pseudo-terminal (util-linux `script`), so stdout and stderr are TTYs.
async fn on_terminal(w: &World, args: &[&str], no_color: bool) -> support::Run {
    let line = std::iter::once(SVC)
        .chain(args.iter().copied())
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let mut c = std::process::Command::new("script");
    c.args(["-qec", &line, "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", w.home.path())
        .env("XDG_CONFIG_HOME", w.config_dir())
        .env("SVC_BASE_URL", &w.server.base)
        .env("SVC_API_KEY", &w.key.plaintext)
        .env("TERM", "xterm")
        .stdin(std::process::Stdio::null());
    if no_color {
        c.env("NO_COLOR", "1");
    }
    w.run(c).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colours_and_the_progress_bar_only_on_a_terminal() {
    let w = World::new().await;
    let r = on_terminal(&w, &["doctor"], false).await;
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout.contains("\x1b[32mPASSED\x1b[0m"),
        "green on a terminal: {r:?}"
    );
    let r = on_terminal(&w, &["doctor"], true).await;
    assert!(
        r.stdout.contains("PASSED") && !r.stdout.contains('\x1b'),
        "NO_COLOR: {r:?}"
    );
    let r = on_terminal(&w, &["doctor", "--json"], false).await;
    assert!(!r.stdout.contains('\x1b'), "never in --json: {r:?}");

    let file = w.write("tty.jsonl", &batch_lines(3));
    let r = on_terminal(
        &w,
        &["events", "send", "--batch", &file.display().to_string()],
        false,
    )
    .await;
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout.contains(&format!("[{}] 3/3", "#".repeat(30))),
        "progress bar: {r:?}"
    );
}
