//! The MCP server at `/mcp` (rmcp's streamable HTTP, stateless with JSON answers) through raw
//! JSON-RPC over HTTP: protocol rules, authentication on every message, and tools that are the
//! key's capability listing.

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::{expect_error, grant, read, Account, Capability, Key, TestServer};

fn rpc(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn init(version: &str) -> Value {
    rpc(
        1,
        "initialize",
        json!({"protocolVersion": version, "capabilities": {},
               "clientInfo": {"name": "test", "version": "0"}}),
    )
}

async fn post(s: &TestServer, key: &str, session: Option<&str>, body: &Value) -> reqwest::Response {
    let mut rb = s
        .post("/mcp")
        .header("authorization", format!("Bearer {key}"));
    if let Some(id) = session {
        rb = rb.header("mcp-session-id", id);
    }
    rb.json(body).send().await.expect("post /mcp")
}

async fn call(s: &TestServer, key: &str, body: &Value) -> (StatusCode, Value) {
    read(post(s, key, None, body).await).await
}

async fn setup() -> (TestServer, Key, Account) {
    let s = TestServer::start().await;
    let account = s.account().await;
    let key = s.agent_key(&account).await;
    (s, key, account)
}

#[tokio::test]
async fn initialize_negotiates_and_needs_no_session() {
    let (s, key, _) = setup().await;

    let resp = post(&s, &key.plaintext, None, &init("2025-06-18")).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json")));
    // Stateless (rmcp's stateless streamable HTTP): every request carries the key, so no
    // session is issued.
    assert!(resp.headers().get("mcp-session-id").is_none());
    let (_, v) = read(resp).await;
    assert_eq!(v["id"], 1);
    assert_eq!(v["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(v["result"]["serverInfo"]["name"], "svcd");
    assert_eq!(v["result"]["capabilities"]["tools"]["listChanged"], false);

    // An unknown revision: the server offers its newest.
    let (_, v) = call(&s, &key.plaintext, &init("1999-01-01")).await;
    assert_eq!(v["result"]["protocolVersion"], "2025-11-25");

    // Later messages with the negotiated version header.
    let resp = s
        .post("/mcp")
        .header("x-api-key", &key.plaintext)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&rpc(2, "ping", json!({})))
        .send()
        .await
        .expect("ping");
    let (status, v) = read(resp).await;
    assert_eq!((status, v["result"].clone()), (StatusCode::OK, json!({})));

    // An unsupported protocol version header: 400.
    let resp = s
        .post("/mcp")
        .header("x-api-key", &key.plaintext)
        .header("mcp-protocol-version", "2020-01-01")
        .json(&rpc(4, "ping", json!({})))
        .send()
        .await
        .expect("ping");
    expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;

    // No sessions, so nothing to end: DELETE is not a method of /mcp.
    let resp = s
        .request(reqwest::Method::DELETE, "/mcp")
        .bearer_auth(&key.plaintext)
        .header("mcp-session-id", "mcps_anything")
        .send()
        .await
        .expect("delete");
    expect_error(resp, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed").await;
}

#[tokio::test]
async fn json_rpc_rules() {
    let (s, key, _) = setup().await;
    let k = key.plaintext.as_str();

    // Notifications: 202, no body.
    let msg = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = post(&s, k, None, &msg).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    assert!(resp.text().await.expect("body").is_empty());
    // A client response: this stateless server sent no request to answer (rmcp: 400, -32600).
    let (status, v) = call(&s, k, &json!({"jsonrpc": "2.0", "id": 9, "result": {}})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"]["code"], -32600);

    let (status, v) = call(&s, k, &rpc(1, "resources/list", json!({}))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["error"]["code"], -32601);

    // JSON that is not one JSON-RPC 2.0 message: 400 with JSON-RPC's invalid request or parse
    // error and a null id.
    let (status, v) = call(&s, k, &json!({"jsonrpc": "1.0", "id": 1, "method": "ping"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        (v["error"]["code"].clone(), v["id"].clone()),
        (json!(-32600), Value::Null)
    );
    let resp = s
        .post("/mcp")
        .bearer_auth(k)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let v: Value = resp.json().await.expect("json-rpc error");
    assert_eq!(v["error"]["code"], -32700);

    let (_, v) = call(
        &s,
        k,
        &rpc(2, "tools/call", json!({"name": "no_such_tool"})),
    )
    .await;
    assert_eq!(v["error"]["code"], -32602);

    // No batches (MCP removed them in 2025-06-18): an invalid request.
    let batch = json!([rpc(1, "ping", json!({})), rpc(2, "tools/list", json!({}))]);
    let (status, v) = call(&s, k, &batch).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"]["code"], -32600);

    // GET (no server-initiated stream) is 405; a non-JSON body is 415.
    let resp = s.get("/mcp").bearer_auth(k).send().await.expect("get");
    expect_error(resp, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed").await;
    let resp = s
        .post("/mcp")
        .bearer_auth(k)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .expect("post");
    expect_error(
        resp,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    )
    .await;

    // A browser page of another origin cannot use it (DNS rebinding); the server's own can.
    let resp = s
        .post("/mcp")
        .bearer_auth(k)
        .header("origin", "http://evil.example")
        .json(&rpc(1, "ping", json!({})))
        .send()
        .await
        .expect("post");
    expect_error(resp, StatusCode::FORBIDDEN, "forbidden").await;
    let resp = s
        .post("/mcp")
        .bearer_auth(k)
        .header("origin", s.base.clone())
        .json(&rpc(1, "ping", json!({})))
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn tools_are_the_keys_capabilities_and_calls_go_through_the_gateway() {
    let (s, key, account) = setup().await;
    let jwt = account.token.clone();
    let k = key.plaintext.as_str();

    let resp = s
        .get("/api/v1/capabilities")
        .bearer_auth(k)
        .send()
        .await
        .expect("list");
    let (_, listing) = read(resp).await;
    let (_, v) = call(&s, k, &rpc(1, "tools/list", json!({}))).await;
    let tools = v["result"]["tools"].as_array().expect("tools").clone();
    let caps = listing["capabilities"].as_array().expect("capabilities");
    assert_eq!(tools.len(), caps.len());
    for (t, c) in tools.iter().zip(caps) {
        assert_eq!(t["name"], c["mcp_tool_name"]);
        assert_eq!(t["title"], c["title"]);
        assert_eq!(
            t["inputSchema"]["properties"]["_mode"]["enum"],
            c["allowed_modes"]
        );
        let mut schema = t["inputSchema"].clone();
        let props = schema["properties"].as_object_mut().expect("properties");
        props.remove("_mode");
        props.remove("_idempotency_key");
        assert_eq!(schema, c["input_schema"], "the capability's own schema");
    }

    // Idempotency over MCP: one execution, one charge, the replay is marked.
    let args = json!({"event": "trial_started", "email": "mo@example.com",
                      "_idempotency_key": "mo-1"});
    let msg = rpc(
        2,
        "tools/call",
        json!({"name": "ingest_event", "arguments": args}),
    );
    let (_, first) = call(&s, k, &msg).await;
    let (_, again) = call(&s, k, &msg).await;
    let env = &first["result"]["structuredContent"];
    assert_eq!(env["status"], "committed", "{first}");
    assert_eq!(
        again["result"]["structuredContent"]["request_id"],
        env["request_id"]
    );
    assert_eq!(again["result"]["_meta"]["svc/idempotent_replayed"], true);
    let id = env["request_id"].as_str().expect("request id");
    let resp = s
        .get(&format!("/api/v1/capabilities/actions/{id}"))
        .bearer_auth(k)
        .send()
        .await
        .expect("receipt");
    let (_, receipt) = read(resp).await;
    assert_eq!(receipt["ledger_row"]["source"], "mcp");
    let resp = s
        .get("/api/v1/capabilities/usage/actions")
        .bearer_auth(k)
        .send()
        .await
        .expect("usage");
    assert_eq!(read(resp).await.1["used"], 1);

    // Each call gets its own invocation id (the id of the HTTP request carrying it).
    let call_msg = |id: u64, who: &str| {
        rpc(
            id,
            "tools/call",
            json!({"name": "ingest_event",
            "arguments": {"event": "x", "email": format!("{who}@example.com")}}),
        )
    };
    let mut ids = Vec::new();
    for (id, who) in [(1, "a"), (2, "b")] {
        let resp = post(&s, k, None, &call_msg(id, who)).await;
        let request_id = resp
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let (_, v) = read(resp).await;
        let invocation = v["result"]["structuredContent"]["request_id"]
            .as_str()
            .map(str::to_owned);
        assert!(invocation.is_some() && invocation == request_id, "{v}");
        ids.extend(invocation);
    }
    assert_ne!(ids[0], ids[1]);

    // A key without grants sees no tool and can call none.
    let bare = s.mint_key(&account, json!({"name": "bare"})).await;
    let (_, v) = call(&s, &bare.plaintext, &rpc(1, "tools/list", json!({}))).await;
    assert_eq!(v["result"]["tools"], json!([]));
    let (_, v) = call(&s, &bare.plaintext, &call_msg(2, "c")).await;
    assert_eq!(v["result"]["isError"], true);
    assert_eq!(
        v["result"]["structuredContent"]["error"]["code"],
        "grant_denied"
    );

    // Revoked: nothing at all, at once.
    let resp = s
        .request(reqwest::Method::DELETE, &format!("/api/v1/keys/{}", key.id))
        .bearer_auth(&jwt)
        .send()
        .await
        .expect("revoke");
    assert_eq!(resp.status(), StatusCode::OK);
    for msg in [
        rpc(1, "tools/list", json!({})),
        call_msg(2, "d"),
        init("2025-06-18"),
    ] {
        let resp = post(&s, k, None, &msg).await;
        expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    }
    // No credential, or a JWT: refused too.
    let resp = s
        .post("/mcp")
        .json(&init("2025-06-18"))
        .send()
        .await
        .expect("post");
    expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    let resp = post(&s, &jwt, None, &init("2025-06-18")).await;
    expect_error(resp, StatusCode::FORBIDDEN, "forbidden").await;
}

#[tokio::test]
async fn approvals_and_workspace_policy_apply_to_mcp_calls() {
    let s = TestServer::start().await;
    let account = s.account().await;
    let key = s
        .mint_key(
            &account,
            json!({"name": "crm agent", "grants": [grant(Capability::EventsIngest), grant(Capability::CrmMutate)],
                   "allowed_modes": ["dry_run", "queue", "execute"]}),
        )
        .await;
    let k = key.plaintext.as_str();
    let tool_call = |id: u64, name: &str, arguments: Value| {
        rpc(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
    };

    let (_, v) = call(&s, k, &rpc(1, "tools/list", json!({}))).await;
    let crm = v["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "mutate_crm"))
        .cloned()
        .expect("mutate_crm listed");
    assert_eq!(crm["annotations"]["destructiveHint"], true);
    assert_eq!(
        crm["inputSchema"]["properties"]["_mode"]["enum"],
        json!(["dry_run", "queue", "execute"])
    );

    let (_, v) = call(
        &s,
        k,
        &tool_call(
            2,
            "ingest_event",
            json!({"event": "signup", "email": "pat@example.com"}),
        ),
    )
    .await;
    let customer = v["result"]["structuredContent"]["result"]["customer_id"]
        .as_str()
        .expect("customer id")
        .to_owned();

    // Approval-gated execute without auto_run: queued for a person, charged at queue.
    let (_, v) = call(
        &s,
        k,
        &tool_call(
            3,
            "mutate_crm",
            json!({"customer": customer, "set": {"tier": "gold"}}),
        ),
    )
    .await;
    let env = &v["result"]["structuredContent"];
    assert_eq!(v["result"]["isError"], false, "{v}");
    assert_eq!(env["status"], "queued", "{v}");
    assert!(
        env["pending_action_id"]
            .as_str()
            .is_some_and(|p| p.starts_with("pa_")),
        "{v}"
    );
    let cost = env["action_credit_cost"].as_u64().expect("cost");
    assert!(cost > 0, "{v}");
    assert_eq!(env["quota"]["used"].as_u64(), Some(1 + cost));

    // The workspace forbids events.ingest: the MCP call is refused like a REST one, at no cost.
    let resp = s
        .request(reqwest::Method::PUT, "/api/v1/workspace")
        .bearer_auth(&account.token)
        .json(&json!({"policy": {"forbid": [Capability::EventsIngest.id()]}}))
        .send()
        .await
        .expect("put workspace");
    assert_eq!(resp.status(), StatusCode::OK);
    let (_, v) = call(
        &s,
        k,
        &tool_call(
            4,
            "ingest_event",
            json!({"event": "x", "email": "pat@example.com"}),
        ),
    )
    .await;
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert_eq!(
        v["result"]["structuredContent"]["error"]["code"],
        "policy_forbid"
    );
    let resp = s
        .get("/api/v1/capabilities/usage/actions")
        .bearer_auth(k)
        .send()
        .await
        .expect("usage");
    assert_eq!(read(resp).await.1["used"].as_u64(), Some(1 + cost));
}
