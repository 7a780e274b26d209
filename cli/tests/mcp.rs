//! MCP with a client we did not write: the Python `mcp` SDK from PyPI (installed into a
//! virtualenv by scripts/mcp-venv.sh) over stdio (`svc mcp`) and over streamable HTTP (svcd's
//! `/mcp`); and the parity of one invocation through REST, the CLI and MCP.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use support::{World, SVC};
use svc_integration_tests::{grant, invoke_path, read, Capability};

const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_client.py");

async fn python_client(w: &World, python: &Path, args: &[&str], stored_key: bool) -> Value {
    let mut c = Command::new(python);
    c.arg(CLIENT)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", w.home.path())
        .env("XDG_CONFIG_HOME", w.config_dir())
        .env("SVC_BASE_URL", &w.server.base);
    if !stored_key {
        c.env("SVC_API_KEY", &w.key.plaintext);
    }
    let r = w.run(c).await;
    assert_eq!(r.code, 0, "python MCP client failed: {r:?}");
    let last = r.stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("client output ({e}): {r:?}"))
}

/// What both transports must show for this world's key (context.get and events.ingest,
/// modes dry_run and execute).
fn check_session(out: &Value, transport: &str) {
    assert_eq!(out["server_name"], "svcd", "{transport}: {out}");
    assert_eq!(out["protocol_version"], "2025-11-25", "{transport}");
    let mut names: Vec<&str> = out["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["get_customer_context", "ingest_event"],
        "{transport}"
    );
    let ingest = out["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "ingest_event"))
        .expect("ingest_event");
    let props = &ingest["input_schema"]["properties"];
    assert_eq!(props["_mode"]["enum"], json!(["dry_run", "execute"]));
    assert_eq!(props["_idempotency_key"]["type"], "string");
    assert_eq!(props["event"]["type"], "string", "the capability schema");
    assert_eq!(ingest["annotations"]["readOnlyHint"], false);
    assert_eq!(ingest["annotations"]["destructiveHint"], false);
    let context = out["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "get_customer_context"))
        .expect("get_customer_context");
    assert_eq!(context["annotations"]["readOnlyHint"], true);

    let ingest = &out["ingest"];
    assert_eq!(ingest["is_error"], false, "{transport}: {ingest}");
    let env = &ingest["structured"];
    assert_eq!(env["status"], "committed");
    assert_eq!(env["capability"], Capability::EventsIngest.id());
    assert_eq!(env["action_credit_cost"], 1);
    let text: Value = serde_json::from_str(ingest["text"][0].as_str().expect("text content"))
        .expect("text is the envelope");
    assert_eq!(&text, env, "text and structured content agree");
    assert_eq!(
        out["ingest_again"]["structured"]["request_id"], env["request_id"],
        "{transport}: the idempotency key replays"
    );
    assert_eq!(out["dry_run"]["structured"]["status"], "preview");
    assert_eq!(out["dry_run"]["structured"]["action_credit_cost"], 0);
    assert_eq!(out["context"]["structured"]["status"], "committed");
    assert!(out["context"]["structured"]["result"]["customer_id"]
        .as_str()
        .is_some_and(|id| id.starts_with("cus_")));
    for (call, code) in [
        ("mode_denied", "mode_denied"),
        ("invalid", "invalid_input"),
        ("no_grant", "grant_denied"),
    ] {
        let r = &out[call];
        assert_eq!(r["is_error"], true, "{transport} {call}: {r}");
        assert_eq!(r["structured"]["error"]["code"], code, "{transport} {call}");
        assert!(r["text"][0]
            .as_str()
            .is_some_and(|t| t.starts_with(&format!("{code}: "))));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_mcp_client_over_stdio_and_streamable_http() {
    let python = tokio::task::spawn_blocking(support::mcp_python)
        .await
        .expect("venv");
    let w = World::new().await;

    // stdio: `svc mcp` with the key stored by `svc auth login`.
    w.login().await;
    let stdio = python_client(&w, &python, &["stdio", SVC], true).await;
    check_session(&stdio, "stdio");

    // Streamable HTTP straight to svcd.
    let http = python_client(
        &w,
        &python,
        &["http", &w.server.base, &w.key.plaintext],
        false,
    )
    .await;
    check_session(&http, "http");
    assert!(http["session_id"].is_null(), "stateless: no MCP session");

    // Receipts say which client it was; 2 ingests + 2 context reads were charged.
    for out in [&stdio, &http] {
        let id = out["ingest"]["structured"]["request_id"]
            .as_str()
            .expect("id");
        assert_eq!(w.receipt(id).await["ledger_row"]["source"], "mcp");
    }
    assert_eq!(w.credits_used().await, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn svc_mcp_relays_svcds_answers_and_answers_a_revoked_key() {
    let w = World::new().await;
    let mut c = w.cmd(&["mcp"]);
    c.env("SVC_API_KEY", &w.key.plaintext)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let mut child = c.spawn().expect("spawn svc mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
    let mut send = move |v: &Value| {
        use std::io::Write;
        writeln!(stdin, "{v}").expect("write");
        stdin.flush().expect("flush");
    };
    let mut next = move || -> Value {
        let line = lines.next().expect("a line").expect("read");
        serde_json::from_str(&line).expect("json line")
    };
    send(&init);
    let r = next();
    assert_eq!(r["id"], 1);
    assert_eq!(r["result"]["protocolVersion"], "2025-06-18");
    send(&note); // no answer to a notification
    send(&list);
    let r = next();
    assert_eq!(r["id"], 2);
    assert_eq!(r["result"]["tools"].as_array().map(Vec::len), Some(2));

    // svcd's JSON-RPC errors come through as they are (an unknown tool: invalid params).
    send(&json!({"jsonrpc": "2.0", "id": 21, "method": "tools/call",
        "params": {"name": "no_such_tool", "arguments": {}}}));
    let r = next();
    assert_eq!(r["id"], 21, "{r}");
    assert_eq!(r["error"]["code"], -32602, "{r}");

    w.revoke().await;
    send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "ingest_event", "arguments": {"event": "x", "email": "a@example.com"}}}));
    let r = next();
    assert_eq!(r["id"], 3);
    assert_eq!(r["error"]["code"], -32001, "{r}");
    assert_eq!(r["error"]["data"]["code"], "unauthenticated", "{r}");
    drop(send);
    let status = child.wait().expect("wait");
    assert!(status.success(), "svc mcp exits 0 at the end of stdin");
    assert_eq!(w.touchpoints().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_invocation_through_rest_cli_and_mcp_has_the_same_shape_and_charge() {
    let w = World::new().await;
    let input = |who: &str| json!({"event": "quote_sent", "email": format!("{who}@example.com"), "channel": "email"});

    // REST.
    let resp = w
        .server
        .post(&invoke_path(Capability::EventsIngest))
        .bearer_auth(&w.key.plaintext)
        .json(&json!({"mode": "execute", "source": "api", "input": input("rest")}))
        .send()
        .await
        .expect("rest");
    let (status, rest) = read(resp).await;
    assert_eq!(status.as_u16(), 200, "{rest}");

    // CLI.
    let r = w
        .svc_keyed(&[
            "invoke",
            Capability::EventsIngest.id(),
            "--mode",
            "execute",
            "--input",
            &input("cli").to_string(),
            "--json",
        ])
        .await;
    assert_eq!(r.code, 0, "{r:?}");
    let cli = r.json();

    // MCP (streamable HTTP, JSON-RPC).
    let resp = w
        .server
        .post("/mcp")
        .header("x-api-key", &w.key.plaintext)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "ingest_event",
            "arguments": {"_mode": "execute", "event": "quote_sent", "email": "mcp@example.com", "channel": "email"}}}))
        .send()
        .await
        .expect("mcp");
    let (status, rpc) = read(resp).await;
    assert_eq!(status.as_u16(), 200, "{rpc}");
    assert_eq!(rpc["result"]["isError"], false, "{rpc}");
    let mcp = rpc["result"]["structuredContent"].clone();

    let shape = |v: &Value| -> Vec<String> {
        let mut keys: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
        keys.extend(
            v["result"]
                .as_object()
                .expect("result")
                .keys()
                .map(|k| format!("result.{k}")),
        );
        keys.extend(
            v["quota"]
                .as_object()
                .expect("quota")
                .keys()
                .map(|k| format!("quota.{k}")),
        );
        keys.sort();
        keys
    };
    assert_eq!(shape(&rest), shape(&cli));
    assert_eq!(shape(&rest), shape(&mcp));
    for (env, source) in [(&rest, "api"), (&cli, "cli"), (&mcp, "mcp")] {
        assert_eq!(env["status"], "committed", "{source}");
        assert_eq!(env["action_credit_cost"], 1, "{source}");
        assert_eq!(env["mode"], "execute");
        let id = env["request_id"].as_str().expect("request id");
        assert_eq!(
            env["receipt_url"],
            format!("/api/v1/capabilities/actions/{id}").as_str()
        );
        let receipt = w.receipt(id).await;
        assert_eq!(receipt["ledger_row"]["source"], source);
        assert_eq!(receipt["ledger_row"]["credits"], 1, "{source}");
        assert_eq!(
            receipt["ledger_row"]["capability"],
            Capability::EventsIngest.id()
        );
    }
    // Quota moves by one per invocation, in order.
    let used: Vec<u64> = [&rest, &cli, &mcp]
        .iter()
        .map(|e| e["quota"]["used"].as_u64().expect("used"))
        .collect();
    assert_eq!(used, [1, 2, 3]);
    assert_eq!(w.credits_used().await, 3);
}

/// The capabilities this service grew after the first six, each dry-run through REST, the CLI
/// and MCP: the same envelope shape, nothing charged, and the same result (previews are
/// deterministic; drafting and scoring read the same customer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_capabilities_answer_the_same_dry_run_through_rest_cli_and_mcp() {
    use svc_gateway::registry;

    let w = World::new().await;
    let grants: Vec<String> = Capability::ALL.map(grant).to_vec();
    let key = w
        .server
        .mint_key(
            &w.account,
            json!({"name": "all", "agent": "parity", "grants": grants,
                "allowed_modes": ["dry_run", "queue", "execute"], "rate_limit_per_min": 100_000}),
        )
        .await;
    let resp = w
        .server
        .post(&invoke_path(Capability::EventsIngest))
        .bearer_auth(&key.plaintext)
        .json(
            &json!({"mode": "execute", "input": {"event": "pricing_viewed",
            "email": "parity@example.com", "phone": "+14155550199"}}),
        )
        .send()
        .await
        .expect("ingest");
    assert_eq!(resp.status().as_u16(), 200);
    let who = "parity@example.com";
    let inputs = [
        (Capability::ScoreChurn, json!({"customer": who})),
        (Capability::ScoreConversion, json!({"customer": who})),
        (
            Capability::PlanGoal,
            json!({"goal": "Book a demo this month", "customer": who}),
        ),
        (
            Capability::DraftOutreach,
            json!({"customer": who, "intent": "pricing follow-up"}),
        ),
        (
            Capability::QueueOutreach,
            json!({"customer": who, "subject": "Hi", "body": "Hello"}),
        ),
        (
            Capability::ExecuteOutreach,
            json!({"customer": who, "subject": "Hi", "body": "Hello"}),
        ),
        (
            Capability::QueueCall,
            json!({"customer": who, "script": "Hello there"}),
        ),
        (
            Capability::ExecuteCall,
            json!({"customer": who, "script": "Hello there"}),
        ),
        (
            Capability::CioWrite,
            json!({"customer": who, "action": "identify"}),
        ),
    ];
    let before = {
        let (_, v) = read(
            w.server
                .get("/api/v1/capabilities/usage/actions")
                .bearer_auth(&key.plaintext)
                .send()
                .await
                .expect("usage"),
        )
        .await;
        v["used"].as_u64().expect("used")
    };
    for (c, input) in inputs {
        let resp = w
            .server
            .post(&invoke_path(c))
            .bearer_auth(&key.plaintext)
            .json(&json!({"mode": "dry_run", "input": input}))
            .send()
            .await
            .expect("rest");
        let (status, rest) = read(resp).await;
        assert_eq!(status.as_u16(), 200, "{c}: {rest}");
        let mut cmd = w.cmd(&[
            "invoke",
            c.id(),
            "--mode",
            "dry_run",
            "--input",
            &input.to_string(),
            "--json",
        ]);
        cmd.env("SVC_API_KEY", &key.plaintext);
        let r = w.run(cmd).await;
        assert_eq!(r.code, 0, "{c}: {r:?}");
        let cli = r.json();
        let tool = registry::get(c.id())
            .expect("entry")
            .descriptor
            .mcp_tool_name;
        let mut arguments = input.clone();
        arguments["_mode"] = json!("dry_run");
        let resp = w
            .server
            .post("/mcp")
            .header("x-api-key", &key.plaintext)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments}}))
            .send()
            .await
            .expect("mcp");
        let (_, rpc) = read(resp).await;
        assert_eq!(rpc["result"]["isError"], false, "{c}: {rpc}");
        let mcp = rpc["result"]["structuredContent"].clone();
        for (env, source) in [(&rest, "api"), (&cli, "cli"), (&mcp, "mcp")] {
            assert_eq!(env["status"], "preview", "{c} {source}: {env}");
            assert_eq!(env["action_credit_cost"], 0, "{c} {source}");
            assert_eq!(env["capability"], c.id());
        }
        // Same keys at the top and in the result (values differ only where time enters).
        let keys = |v: &Value| -> Vec<String> {
            let mut k: Vec<String> = v["result"]
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default();
            k.sort();
            k
        };
        assert_eq!(keys(&rest), keys(&cli), "{c}");
        assert_eq!(keys(&rest), keys(&mcp), "{c}");
    }
    let (_, usage) = read(
        w.server
            .get("/api/v1/capabilities/usage/actions")
            .bearer_auth(&key.plaintext)
            .send()
            .await
            .expect("usage"),
    )
    .await;
    assert_eq!(usage["used"].as_u64(), Some(before), "dry runs are free");
}
