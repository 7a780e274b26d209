//! Graph export, graph queries (write-blocking for API keys), and dedupe of records that
//! graph writes created.

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::{expect_error, get_ok, read, str_at, track, Account, TestServer};

async fn query(s: &TestServer, token: &str, q: &str, params: Value) -> (StatusCode, Value) {
    let resp = s
        .post("/v1/graph/query")
        .bearer_auth(token)
        .json(&json!({"query": q, "params": params}))
        .send()
        .await
        .expect("send");
    read(resp).await
}

async fn query_ok(s: &TestServer, token: &str, q: &str, params: Value) -> Value {
    let (status, v) = query(s, token, q, params).await;
    assert_eq!(status, StatusCode::OK, "{q}: {v}");
    v
}

async fn graph(s: &TestServer, a: &Account, mode: &str) -> Value {
    let resp = s
        .get(&format!("/v1/graph?mode={mode}"))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v
}

fn labels_of(v: &Value) -> Vec<String> {
    v["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .flat_map(|n| n["labels"].as_array().cloned().unwrap_or_default())
        .filter_map(|l| l.as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn unauthenticated_callers_get_the_demo_graph() {
    let s = TestServer::start().await;
    let resp = s.get("/v1/graph").send().await.expect("send");
    let (status, full) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{full}");
    assert_eq!(full["demo"], json!(true));
    assert_eq!(full["mode"], json!("full"));
    assert!(labels_of(&full).contains(&"Touchpoint".to_owned()));
    assert!(!full["relationships"].as_array().expect("rels").is_empty());
    let resp = s.get("/v1/graph?mode=summary").send().await.expect("send");
    let (_, summary) = read(resp).await;
    assert!(!labels_of(&summary).contains(&"Touchpoint".to_owned()));
    assert!(labels_of(&summary).contains(&"Customer".to_owned()));
    // A bad credential is not "no credential".
    let resp = s
        .get("/v1/graph")
        .bearer_auth("not-a-token")
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    let resp = s
        .get("/v1/graph?mode=everything")
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
    // The demo never touches a workspace.
    let a = s.account().await;
    let mine = graph(&s, &a, "full").await;
    assert_eq!(
        (mine["demo"].clone(), mine["nodes"].clone()),
        (json!(false), json!([]))
    );
}

#[tokio::test]
async fn export_holds_the_workspace_entities_and_relationships() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let b = s.account().await;
    let key = s.reader_key(&a).await.plaintext;
    let r = track(
        &s,
        &key,
        json!({"action": "click", "email": "g@x.io", "campaignId": "spring"}),
    )
    .await;
    let cid = str_at(&r, "/customer_id");
    let tid = str_at(&r, "/touchpoint_id");
    let full = graph(&s, &a, "full").await;
    let ids: Vec<String> = full["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| str_at(n, "/id"))
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.contains(&cid) && ids.contains(&tid), "{full}");
    let rels: Vec<(String, String, String)> = full["relationships"]
        .as_array()
        .expect("rels")
        .iter()
        .map(|r| {
            (
                str_at(r, "/type"),
                str_at(r, "/source"),
                str_at(r, "/target"),
            )
        })
        .collect();
    assert!(rels.contains(&("HAS_TOUCHPOINT".into(), cid.clone(), tid.clone())));
    assert!(rels
        .iter()
        .any(|(t, s, _)| t == "INFLUENCED_BY" && *s == tid));
    let summary = graph(&s, &a, "summary").await;
    assert_eq!(summary["nodes"].as_array().map(Vec::len), Some(2));
    assert_eq!(summary["relationships"], json!([]));
    // Agent keys export too; another workspace sees none of it.
    let resp = s
        .get("/v1/graph")
        .bearer_auth(&key)
        .send()
        .await
        .expect("send");
    let (_, via_key) = read(resp).await;
    assert_eq!(via_key["nodes"].as_array().map(Vec::len), Some(3));
    let other = graph(&s, &b, "full").await;
    assert_eq!(other["nodes"], json!([]));
}

#[tokio::test]
async fn api_keys_read_but_never_write() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.reader_key(&a).await.plaintext;
    track(&s, &key, json!({"action": "x", "email": "k@x.io"})).await;
    let v = query_ok(
        &s,
        &key,
        "MATCH (c:Customer) WHERE c.email = $e RETURN count(c) AS n",
        json!({"e": "k@x.io"}),
    )
    .await;
    assert_eq!(
        (v["columns"].clone(), v["rows"].clone()),
        (json!(["n"]), json!([[1]]))
    );
    for q in [
        "CREATE (:Customer {email: 'evil@x.io'})",
        "MATCH (c:Customer) SET c.name = 'pwned'",
        "MATCH (c:Customer) DETACH DELETE c",
        "MERGE (c:Customer {email: 'm@x.io'})",
        "MATCH (c:Customer) REMOVE c.email",
    ] {
        let resp = s
            .post("/v1/graph/query")
            .bearer_auth(&key)
            .json(&json!({ "query": q }))
            .send()
            .await
            .expect("send");
        expect_error(resp, StatusCode::FORBIDDEN, "write_not_allowed").await;
    }
    // Keywords inside strings do not make a read a write.
    let v = query_ok(
        &s,
        &key,
        "MATCH (c:Customer) WHERE c.email <> 'CREATE DELETE SET' RETURN c.email AS e, c.name AS n",
        json!({}),
    )
    .await;
    assert_eq!(v["rows"], json!([["k@x.io", null]]));
}

#[tokio::test]
async fn jwt_users_write_and_errors_have_positions() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let v = query_ok(
        &s,
        &a.token,
        "UNWIND $scores AS s CREATE (o:Opportunity {name: toString(s), score: s}) RETURN count(o) AS n",
        json!({"scores": (1..=55).collect::<Vec<i64>>()}),
    )
    .await;
    assert_eq!(v["rows"], json!([[55]]));
    assert_eq!(v["stats"]["nodes_created"], json!(55));
    let resp = s
        .get("/v1/opportunities")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    let (_, opps) = read(resp).await;
    let scores: Vec<i64> = opps["opportunities"]
        .as_array()
        .expect("opps")
        .iter()
        .filter_map(|o| o["score"].as_i64())
        .collect();
    assert_eq!(scores.len(), 50);
    assert_eq!((scores[0], scores[49]), (55, 6));

    let (status, err) = query(&s, &a.token, "MATCH (n)\nRETURN n.name AS", json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_eq!(err["error"]["code"], json!("invalid_query"));
    assert_eq!(err["error"]["details"]["query_code"], json!("syntax_error"));
    assert_eq!(err["error"]["details"]["line"], json!(2));
    let (status, err) = query(&s, &a.token, "CALL db.labels()", json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_eq!(err["error"]["details"]["query_code"], json!("unsupported"));
    let (status, err) = query(&s, &a.token, "MATCH (n) RETURN $missing", json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");

    // Read-only workspaces refuse writes but still answer reads.
    let resp = s
        .request(reqwest::Method::PUT, "/api/v1/workspace")
        .bearer_auth(&a.token)
        .json(&json!({"read_only": true}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), StatusCode::OK);
    let resp = s
        .post("/v1/graph/query")
        .bearer_auth(&a.token)
        .json(&json!({"query": "CREATE (:Stage {name: 'x'})"}))
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::FORBIDDEN, "read_only_workspace").await;
    query_ok(
        &s,
        &a.token,
        "MATCH (o:Opportunity) RETURN count(*) AS n",
        json!({}),
    )
    .await;
}

#[tokio::test]
async fn dedupe_merges_graph_created_duplicates_by_the_spec_rules() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    let original = track(&s, &key, json!({"action": "a", "email": "dup@x.io"})).await;
    track(&s, &key, json!({"action": "b", "email": "dup@x.io"})).await;
    let orig_id = str_at(&original, "/customer_id");
    // Two more records with the same email (any case); one carries a cio_id.
    query_ok(
        &s,
        &a.token,
        "CREATE (:Customer {email: 'DUP@x.io', cio_id: 'cio-1', name: 'From CIO'}), \
                (:Customer {email: 'dup@x.io ', plan: 'pro'})",
        json!({}),
    )
    .await;
    let found = get_ok(&s, "/v1/customers?q=cio-1", &a.token).await;
    let cio_id = str_at(&found, "/customers/0/id");

    let resp = s
        .post("/v1/customers/dedupe?dry_run=true")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    let (status, plan) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{plan}");
    assert_eq!(plan["merged"], json!(2));
    assert_eq!(plan["groups"][0]["email"], json!("dup@x.io"));
    assert_eq!(plan["groups"][0]["canonical"], json!(cio_id));
    assert_eq!(plan["groups"][0]["edges_moved"], json!(2));
    let count = query_ok(
        &s,
        &a.token,
        "MATCH (c:Customer) RETURN count(c) AS n",
        json!({}),
    )
    .await;
    assert_eq!(count["rows"], json!([[3]]));

    let resp = s
        .post("/v1/customers/dedupe")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    let (status, done) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["merged"], json!(2));
    assert!(str_at(&done, "/groups/0/merge_id").starts_with("mrg_"));
    let count = query_ok(
        &s,
        &a.token,
        "MATCH (c:Customer) RETURN count(c) AS n",
        json!({}),
    )
    .await;
    assert_eq!(count["rows"], json!([[1]]));

    // The canonical record now has the touchpoints and the properties it lacked, and identity
    // resolution answers with it.
    let resp = s
        .get(&format!("/v1/customers/{cio_id}/timeline"))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    let (_, t) = read(resp).await;
    assert_eq!(t["touchpoints"].as_array().map(Vec::len), Some(2));
    let resp = s
        .get(&format!("/v1/customers/{cio_id}"))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    let (_, p) = read(resp).await;
    assert_eq!(p["customer"]["name"], json!("From CIO"));
    assert_eq!(p["customer"]["properties"]["plan"], json!("pro"));
    assert!(p["customer"]["lastSeen"].is_string());
    let resp = s
        .get(&format!("/v1/customers/{orig_id}"))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::NOT_FOUND, "not_found").await;
    let again = track(&s, &key, json!({"action": "c", "email": "dup@x.io"})).await;
    assert_eq!(str_at(&again, "/customer_id"), cio_id);

    // Idempotent.
    let resp = s
        .post("/v1/customers/dedupe")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    let (_, second) = read(resp).await;
    assert_eq!(
        (second["merged"].clone(), second["groups"].clone()),
        (json!(0), json!([]))
    );
}

#[tokio::test]
async fn large_exports_stream_as_one_valid_document() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let ids: Vec<i64> = (0..3000).collect();
    query_ok(
        &s,
        &a.token,
        "UNWIND $ids AS i CREATE (c:Customer {name: toString(i), note: 'padding padding padding'})\
         -[:AT_STAGE]->(:Stage {name: toString(i)})",
        json!({ "ids": ids }),
    )
    .await;
    let resp = s
        .get("/v1/graph")
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("send");
    assert_eq!(
        resp.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["nodes"].as_array().map(Vec::len), Some(6000));
    assert_eq!(v["relationships"].as_array().map(Vec::len), Some(3000));
    assert_eq!(v["demo"], json!(false));
}

#[tokio::test]
async fn the_shortest_path_between_two_customers_runs_through_their_campaign() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.reader_key(&a).await.plaintext;
    let mut customers = Vec::new();
    for (email, campaign) in [
        ("p1@x.io", "spring"),
        ("p2@x.io", "spring"),
        ("p3@x.io", "fall"),
    ] {
        let r = track(
            &s,
            &key,
            json!({"action": "click", "email": email, "campaignId": campaign}),
        )
        .await;
        customers.push(str_at(&r, "/customer_id"));
    }
    let path = |token: String, from: String, to: String| {
        let s = &s;
        async move {
            let resp = s
                .get(&format!("/v1/graph/path?from={from}&to={to}"))
                .bearer_auth(token)
                .send()
                .await
                .expect("send");
            read(resp).await
        }
    };
    let (status, p) = path(a.token.clone(), customers[0].clone(), customers[1].clone()).await;
    assert_eq!(status, StatusCode::OK, "{p}");
    assert_eq!(
        (p["found"].clone(), p["length"].clone()),
        (json!(true), json!(4))
    );
    let labels: Vec<String> = p["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| str_at(n, "/labels/0"))
        .collect();
    assert_eq!(
        labels,
        [
            "Customer",
            "Touchpoint",
            "Campaign",
            "Touchpoint",
            "Customer"
        ]
    );
    assert_eq!(str_at(&p, "/nodes/0/id"), customers[0]);
    assert_eq!(str_at(&p, "/nodes/4/id"), customers[1]);
    // An agent key with graph:read may ask; different campaigns are not connected.
    let (status, none) = path(key.clone(), customers[0].clone(), customers[2].clone()).await;
    assert_eq!(status, StatusCode::OK, "{none}");
    assert_eq!(
        (none["found"].clone(), none["nodes"].clone()),
        (json!(false), json!([]))
    );
    // Another workspace does not see these nodes.
    let b = s.account().await;
    let resp = s
        .get(&format!(
            "/v1/graph/path?from={}&to={}",
            customers[0], customers[1]
        ))
        .bearer_auth(&b.token)
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::NOT_FOUND, "not_found").await;
}

fn plan_operators(plan: &Value, out: &mut Vec<String>) {
    out.push(str_at(plan, "/operator"));
    for c in plan["children"].as_array().into_iter().flatten() {
        plan_operators(c, out);
    }
}

async fn explain_operators(s: &TestServer, token: &str, q: &str) -> Vec<String> {
    let v = query_ok(s, token, &format!("EXPLAIN {q}"), json!({})).await;
    let mut ops = Vec::new();
    plan_operators(&v["plan"], &mut ops);
    ops
}

#[tokio::test]
async fn owners_declare_indexes_that_queries_use_once_online_and_keys_cannot() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.reader_key(&a).await.plaintext;
    query_ok(
        &s,
        &a.token,
        "UNWIND $xs AS i CREATE (:Lead {source: 's' + toString(i % 5), rank: i})",
        json!({"xs": (0..40).collect::<Vec<i64>>()}),
    )
    .await;
    let count = "MATCH (l:Lead {source: 's3'}) RETURN count(l) AS n";
    assert!(!explain_operators(&s, &a.token, count)
        .await
        .contains(&"NodeIndexSeek".to_owned()));

    for q in [
        "CREATE INDEX lead_source FOR (l:Lead) ON (l.source)",
        "DROP INDEX builtin_Customer_email",
    ] {
        let resp = s
            .post("/v1/graph/query")
            .bearer_auth(&key)
            .json(&json!({ "query": q }))
            .send()
            .await
            .expect("send");
        let err = expect_error(resp, StatusCode::FORBIDDEN, "write_not_allowed").await;
        assert!(str_at(&err, "/error/message").contains("JWT"), "{err}");
    }
    let v = query_ok(
        &s,
        &a.token,
        "CREATE INDEX lead_source IF NOT EXISTS FOR (l:Lead) ON (l.source)",
        json!({}),
    )
    .await;
    assert_eq!(v["rows"], json!([["lead_source", true]]));
    let (status, err) = query(
        &s,
        &a.token,
        "CREATE INDEX lead_source FOR (l:Lead) ON (l.rank)",
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    let (status, err) = query(&s, &a.token, "DROP INDEX builtin_Customer_email", json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");

    // The builder runs in the background; bounded wait for ONLINE (an agent key may look).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let row = loop {
        let v = query_ok(&s, &key, "SHOW INDEXES", json!({})).await;
        assert_eq!(
            v["columns"],
            json!(["name", "label", "property", "kind", "state", "origin"])
        );
        let rows = v["rows"].as_array().expect("rows").clone();
        assert!(rows.iter().any(|r| r[5] == "built-in"), "{v}");
        let row = rows
            .into_iter()
            .find(|r| r[0] == "lead_source")
            .expect("listed");
        if row[4] == "ONLINE" || std::time::Instant::now() > deadline {
            break row;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(
        row,
        json!([
            "lead_source",
            "Lead",
            "source",
            "EQUALITY",
            "ONLINE",
            "declared"
        ])
    );
    let ops = explain_operators(&s, &key, count).await;
    assert!(ops.contains(&"NodeIndexSeek".to_owned()), "{ops:?}");
    let v = query_ok(&s, &key, count, json!({})).await;
    assert_eq!(v["rows"], json!([[8]]));

    let v = query_ok(&s, &a.token, "DROP INDEX lead_source", json!({})).await;
    assert_eq!(v["rows"], json!([["lead_source", true]]));
    assert!(!explain_operators(&s, &a.token, count)
        .await
        .contains(&"NodeIndexSeek".to_owned()));
    // Its entries go in the background; then it is gone from the list.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let v = query_ok(&s, &a.token, "SHOW INDEXES", json!({})).await;
        let listed = v["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .any(|r| r[0] == "lead_source");
        if !listed {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still listed: {v}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let v = query_ok(&s, &a.token, "DROP INDEX lead_source IF EXISTS", json!({})).await;
    assert_eq!(v["rows"], json!([["lead_source", false]]));
    let v = query_ok(&s, &a.token, count, json!({})).await;
    assert_eq!(v["rows"], json!([[8]]));
}

#[tokio::test]
async fn members_and_a_read_only_workspace_cannot_change_indexes() {
    let s = TestServer::start().await;
    let owner = s.account().await;
    let member = s.member(&owner).await.token;
    let resp = s
        .post("/v1/graph/query")
        .bearer_auth(&member)
        .json(&json!({ "query": "CREATE INDEX FOR (l:Lead) ON (l.source)" }))
        .send()
        .await
        .expect("send");
    expect_error(resp, StatusCode::FORBIDDEN, "owner_required").await;
    // Members still write data and read the index list.
    query_ok(&s, &member, "CREATE (:Lead {source: 'x'})", json!({})).await;
    let v = query_ok(&s, &member, "SHOW INDEXES", json!({})).await;
    assert!(v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .all(|r| r[5] == "built-in"));
    // A read-only workspace is frozen for its owner too.
    let resp = s
        .request(reqwest::Method::PUT, "/api/v1/workspace")
        .bearer_auth(&owner.token)
        .json(&json!({"read_only": true}))
        .send()
        .await
        .expect("put");
    assert_eq!(resp.status(), StatusCode::OK);
    let create = "CREATE INDEX FOR (l:Lead) ON (l.source)";
    let (status, err) = query(&s, &owner.token, create, json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");
    assert_eq!(str_at(&err, "/error/code"), "read_only_workspace");
}

/// Issue 29: the statements that took svcd down (a 25 KB chain of `-->()` overflowed a worker's
/// stack) or held a core past the budget (thousands of comma-separated patterns) are refused
/// with 400 `query_too_large` and a position, and the service keeps answering.
#[tokio::test]
async fn hostile_query_sizes_are_refused_and_the_service_stays_up() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.key_with_grants(&a, &["graph:read"]).await.plaintext;
    for q in [
        format!("MATCH (a){} RETURN 1", "-->()".repeat(5_000)),
        format!("MATCH (a){} RETURN 1", "-->()".repeat(4_000)),
        format!(
            "MATCH {} RETURN 1",
            (0..4_000)
                .map(|i| format!("(n{i})"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        format!("MATCH (a) {}RETURN a", "WITH a ".repeat(5_000)),
    ] {
        let (status, v) = query(&s, &key, &q, json!({})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
        assert_eq!(
            v["error"]["details"]["query_code"], "query_too_large",
            "{v}"
        );
        assert!(v["error"]["details"]["line"].is_number(), "{v}");
    }
    let (status, _) = read(s.get("/healthz").send().await.expect("healthz")).await;
    assert_eq!(status, StatusCode::OK);
    query_ok(&s, &key, "MATCH (n) RETURN count(n) AS n", json!({})).await;
}

/// Temporal values are real property values (issue 26): a date and a zoned datetime are
/// stored, found through a range index with a typed temporal parameter, and come back as
/// their ISO 8601 text.
#[tokio::test]
async fn temporal_properties_are_stored_range_indexed_and_passed_as_typed_parameters() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let t = &a.token;
    query_ok(
        &s,
        t,
        "UNWIND range(1, 9) AS i
         CREATE (:Meeting {n: i, day: date({year: 2026, month: 1, day: i}),
                 at: datetime({year: 2026, month: 1, day: i, hour: 9, nanosecond: 5,
                               timezone: 'Europe/Stockholm'})})",
        json!({}),
    )
    .await;
    query_ok(
        &s,
        t,
        "CREATE RANGE INDEX FOR (m:Meeting) ON (m.day)",
        json!({}),
    )
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while query_ok(&s, t, "SHOW INDEXES", json!({})).await["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .any(|r| r[2] == "day" && r[4] != "ONLINE")
    {
        assert!(std::time::Instant::now() < deadline, "index never online");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    let range = "MATCH (m:Meeting) WHERE m.day > $from AND m.day <= date('2026-01-05')
                 RETURN m.n AS n, m.day AS day, m.at AS at ORDER BY m.day DESC";
    let from = json!({"from": {"$type": "Date", "_value": "2026-01-03"}});
    let plan = query_ok(&s, t, &format!("EXPLAIN {range}"), from.clone()).await;
    let mut ops = Vec::new();
    plan_operators(&plan["plan"], &mut ops);
    assert!(ops.contains(&"NodeIndexRangeScan".to_owned()), "{ops:?}");
    let v = query_ok(&s, t, range, from).await;
    assert_eq!(
        v["rows"],
        json!([
            [
                5,
                "2026-01-05",
                "2026-01-05T09:00:00.000000005+01:00[Europe/Stockholm]"
            ],
            [
                4,
                "2026-01-04",
                "2026-01-04T09:00:00.000000005+01:00[Europe/Stockholm]"
            ]
        ]),
        "{v}"
    );

    // A zoned datetime parameter compares by instant with the stored ones; equality keeps
    // the zone and the nanoseconds.
    let at = json!({"at": {"$type": "ZonedDateTime",
                           "_value": "2026-01-02T08:00:00.000000005Z"}});
    let v = query_ok(
        &s,
        t,
        "MATCH (m:Meeting) WHERE m.at <= $at RETURN m.n AS n, m.at = $at AS same ORDER BY n",
        at,
    )
    .await;
    assert_eq!(v["rows"], json!([[1, false], [2, false]]), "{v}");
    let v = query_ok(
        &s,
        t,
        "MATCH (m:Meeting {n: 2}) RETURN m.at = datetime('2026-01-02T09:00:00.000000005[Europe/Stockholm]') AS same, m.at.nanosecond AS ns",
        json!({}),
    )
    .await;
    assert_eq!(v["rows"], json!([[true, 5]]), "{v}");

    // Durations store and come back; a bad typed parameter is the caller's error.
    let v = query_ok(
        &s,
        t,
        "CREATE (x:Slot {d: $d}) RETURN x.d AS d",
        json!({"d": {"$type": "Duration", "_value": "P1DT2H"}}),
    )
    .await;
    assert_eq!(v["rows"], json!([["P1DT2H"]]), "{v}");
    let (status, err) = query(
        &s,
        t,
        "RETURN $d AS d",
        json!({"d": {"$type": "Date", "_value": "2026-02-30"}}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
}

/// A workspace whose read model does not fit `--read-model-mb` still answers (row by row) and
/// `/metrics` counts it as over budget.
#[tokio::test]
async fn a_workspace_over_the_read_model_budget_answers_and_metrics_say_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = svc_integration_tests::test_config(dir.path());
    config.read_model_bytes = 1; // any model is larger
    let s = TestServer::start_with(dir, config).await;
    let a = s.account().await;
    let key = s.reader_key(&a).await.plaintext;
    track(&s, &key, json!({"action": "x", "email": "k@x.io"})).await;
    // A scan with a filter: the kind of query that asks for a model.
    let q = "MATCH (c:Customer) WHERE c.email ENDS WITH '.io' RETURN c.email AS e";
    let v = query_ok(&s, &key, q, json!({})).await;
    assert_eq!(v["rows"], json!([["k@x.io"]]));
    // The query asked for a model; its build stops at the budget in the background.
    let mut text = String::new();
    for _ in 0..100 {
        let resp = s.get("/metrics").send().await.expect("metrics");
        text = resp.text().await.expect("text");
        if text.contains(r#"svc_read_model_workspaces{state="over_budget"} 1"#) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        text.contains(r#"svc_read_model_workspaces{state="over_budget"} 1"#),
        "{text}"
    );
    assert!(text.contains("svc_read_model_bytes 0"), "{text}");
    let v = query_ok(&s, &key, q, json!({})).await;
    assert_eq!(v["rows"], json!([["k@x.io"]]), "the row path answers");
    s.stop().await;
}
