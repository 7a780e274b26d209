//! Public ids of customers, touchpoints and other nodes are opaque: they say nothing of how
//! much other workspaces write, and the decimal ids from before them resolve only in a store
//! that had them (issue 29).

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::{expect_error, get_ok, read, str_at, track, Account, TestServer};

const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The body of an opaque id as a number (the test's own reading of the documented form:
/// prefix, then exactly 11 base62 characters).
fn body_value(id: &str, prefix: &str) -> u128 {
    let body = id.strip_prefix(prefix).unwrap_or_else(|| panic!("{id}"));
    assert_eq!(body.len(), 11, "{id} has an 11-character body");
    body.bytes().fold(0u128, |acc, b| {
        let digit = ALPHABET
            .iter()
            .position(|&c| c == b)
            .unwrap_or_else(|| panic!("{id} is base62"));
        acc * 62 + digit as u128
    })
}

async fn query(s: &TestServer, token: &str, q: &str) -> Value {
    query_with(s, token, q, json!({})).await
}

/// The engine's id of the node a public id names (white box: no route shows engine ids).
fn engine_node(s: &TestServer, public: &str) -> u64 {
    s.state()
        .store
        .ids()
        .parse_any_node(public)
        .unwrap_or_else(|| panic!("{public} names a node"))
        .0
}

async fn query_with(s: &TestServer, token: &str, q: &str, params: Value) -> Value {
    let resp = s
        .post("/v1/graph/query")
        .bearer_auth(token)
        .json(&json!({"query": q, "params": params}))
        .send()
        .await
        .expect("send");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{q}: {v}");
    v
}

/// `GET path` answers 404 `not_found`.
async fn absent(s: &TestServer, token: &str, path: &str) {
    let resp = s.get(path).bearer_auth(token).send().await.expect("send");
    expect_error(resp, StatusCode::NOT_FOUND, "not_found").await;
}

#[tokio::test]
async fn ids_do_not_reveal_another_workspaces_activity() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let b = s.account().await;
    let key_a = s.agent_key(&a).await.plaintext;
    let key_b = s.agent_key(&b).await.plaintext;
    let first = track(
        &s,
        &key_a,
        json!({"action": "a1", "email": "ann@a.example"}),
    )
    .await;
    let second = track(
        &s,
        &key_a,
        json!({"action": "a2", "email": "ann@a.example"}),
    )
    .await;
    // Workspace B ingests forty events in between.
    for i in 0..40 {
        track(
            &s,
            &key_b,
            json!({"action": "b", "email": format!("b{i}@b.example")}),
        )
        .await;
    }
    let third = track(
        &s,
        &key_a,
        json!({"action": "a3", "email": "ann@a.example"}),
    )
    .await;
    let tps: Vec<u128> = [&first, &second, &third]
        .iter()
        .map(|r| body_value(&str_at(r, "/touchpoint_id"), "tp_"))
        .collect();
    // Neither back-to-back events nor the pair around B's forty are near one another: the
    // gap between them tells nothing (counters would differ by 2 and by 81).
    for pair in tps.windows(2) {
        assert!(pair[0].abs_diff(pair[1]) > 1 << 32, "{tps:?}");
    }
    let customer = str_at(&first, "/customer_id");
    body_value(&customer, "cus_");
    assert_eq!(str_at(&third, "/customer_id"), customer);
    // The id reads the customer back; in the other workspace it names nothing.
    let profile = get_ok(&s, &format!("/v1/customers/{customer}"), &a.token).await;
    assert_eq!(str_at(&profile, "/customer/id"), customer);
    absent(&s, &b.token, &format!("/v1/customers/{customer}")).await;
    // The graph export shows the same opaque ids.
    let graph = get_ok(&s, "/v1/graph", &a.token).await;
    let node_ids: Vec<String> = graph["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| str_at(n, "/id"))
        .collect();
    assert!(node_ids.contains(&customer), "{node_ids:?}");
    for r in graph["relationships"].as_array().expect("relationships") {
        body_value(&str_at(r, "/id"), "rel_");
    }
}

#[tokio::test]
async fn decimal_ids_resolve_only_in_a_store_from_before_opaque_ids() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    let r = track(
        &s,
        &key,
        json!({"action": "signup", "email": "old@x.example"}),
    )
    .await;
    let opaque = str_at(&r, "/customer_id");
    // The engine's id, which no route shows: read from the server's own codec.
    let n = engine_node(&s, &opaque);
    let decimal = format!("cus_{n}");
    // A store that started with opaque ids never gave out decimal ones: they name nothing,
    // and neither does a forged opaque id.
    for id in [
        decimal.as_str(),
        "cus_00000000000",
        "cus_zzzzzzzzzzz",
        "cus_x",
    ] {
        absent(&s, &a.token, &format!("/v1/customers/{id}")).await;
    }

    // The same data as a store from before opaque ids: the next start records the ceiling
    // (every id allocated so far), as an upgrade does.
    let (dir, config) = s.stop().await;
    {
        let store = svc_core::store::Store::open(&config.store_dir()).expect("open store");
        store
            .graph()
            .expect("graph")
            .forget_legacy_id_ceiling()
            .expect("forget the ceiling");
        assert!(store.close_and_wait().await);
    }
    let s = TestServer::start_with(dir, config).await;
    let profile = get_ok(&s, &format!("/v1/customers/{decimal}"), &a.token).await;
    // The legacy id is shown as the id the customer has now, which did not change.
    assert_eq!(str_at(&profile, "/customer/id"), opaque);
    assert_eq!(str_at(&profile, "/customer/email"), "old@x.example");
    let timeline = get_ok(&s, &format!("/v1/customers/{decimal}/timeline"), &a.token).await;
    assert_eq!(str_at(&timeline, "/customer_id"), opaque);
    // Events may name the customer by either id.
    let again = track(&s, &key, json!({"action": "login", "customerId": decimal})).await;
    assert_eq!(str_at(&again, "/customer_id"), opaque);
    // Customers created after the upgrade have no decimal id.
    let new = track(
        &s,
        &key,
        json!({"action": "signup", "email": "new@x.example"}),
    )
    .await;
    let m = engine_node(&s, &str_at(&new, "/customer_id"));
    absent(&s, &a.token, &format!("/v1/customers/cus_{m}")).await;
    body_value(&str_at(&new, "/customer_id"), "cus_");
    // Another workspace still cannot reach the legacy customer.
    let b = s.account().await;
    absent(&s, &b.token, &format!("/v1/customers/{decimal}")).await;
}

/// Cypher's ids (`id()`, result nodes and relationships) as a `graph:read` key sees them: no
/// trace of the counters every workspace shares, yet stable and usable in `WHERE id(n) = $id`.
#[tokio::test]
async fn cypher_ids_do_not_reveal_another_workspaces_activity() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let b = s.account().await;
    let reader = s.key_with_grants(&a, &["graph:read"]).await.plaintext;
    query(&s, &a.token, "CREATE (:Probe {n: 1})").await;
    // Workspace B creates forty nodes in between.
    query(
        &s,
        &b.token,
        "UNWIND range(1, 40) AS i CREATE (:Noise {i: i})",
    )
    .await;
    query(&s, &a.token, "CREATE (:Probe {n: 2})").await;
    query(
        &s,
        &a.token,
        "CREATE (:Probe {n: 3})-[:NEXT]->(:Probe {n: 4})",
    )
    .await;

    let q = "MATCH (p:Probe) RETURN id(p) AS id, p, p.n AS n ORDER BY n";
    let rows = query(&s, &reader, q).await;
    let rows = rows["rows"].as_array().expect("rows").clone();
    assert_eq!(rows.len(), 4, "{rows:?}");
    // The engine's ids of the same nodes, through their public ids (graph export).
    let graph = get_ok(&s, "/v1/graph", &a.token).await;
    let engine_of = |n: i64| -> u64 {
        let node = graph["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .find(|x| x["properties"]["n"] == json!(n))
            .unwrap_or_else(|| panic!("probe {n} exported"));
        engine_node(&s, &str_at(node, "/id"))
    };
    let engine: Vec<u64> = (1..=4).map(engine_of).collect();
    // The setup: B's forty nodes sit between probes 1 and 2 in the shared counter.
    assert!(engine[1] - engine[0] > 40, "{engine:?}");
    let shown: Vec<u64> = rows
        .iter()
        .map(|r| r[0].as_u64().expect("an integer id"))
        .collect();
    for (row, (id, e)) in rows.iter().zip(shown.iter().zip(&engine)) {
        assert_eq!(
            row[1]["id"].as_u64(),
            Some(*id),
            "id() is the node's id: {row}"
        );
        assert_ne!(id, e, "the engine's id shows: {shown:?} {engine:?}");
        // An integer JavaScript reads exactly.
        assert!(*id < 1 << 53, "{id}");
    }
    // Nothing of the counter: neither B's forty nor back-to-back creations show as a gap.
    for (i, x) in shown.iter().enumerate() {
        for y in &shown[i + 1..] {
            assert!(x.abs_diff(*y) > 1 << 20, "{shown:?}");
        }
    }

    // Relationships: their id, start and end are the ids the nodes show.
    let r = query(
        &s,
        &reader,
        "MATCH (x:Probe)-[r:NEXT]->(y:Probe) RETURN id(r), r, id(x), id(y)",
    )
    .await;
    let row = &r["rows"][0];
    assert_eq!(row[1]["id"], row[0], "{row}");
    assert_eq!(row[1]["start"], row[2], "{row}");
    assert_eq!(row[1]["end"], row[3], "{row}");
    assert_eq!(row[2].as_u64(), Some(shown[2]));
    assert_ne!(
        row[0].as_u64(),
        Some(shown[2]),
        "a relationship's id is its own"
    );

    // An id from a result finds its node; in another workspace it finds nothing.
    let find = "MATCH (n) WHERE id(n) = $id RETURN n.n";
    let found = query_with(&s, &reader, find, json!({"id": shown[1]})).await;
    assert_eq!(found["rows"], json!([[2]]));
    let theirs = query_with(&s, &b.token, find, json!({"id": shown[1]})).await;
    assert_eq!(theirs["rows"], json!([]));
    // Forged ids match nothing and break nothing.
    for forged in [
        json!(-1),
        json!(0),
        json!(i64::MAX),
        json!(u64::MAX),
        json!(1.5),
        json!(1e300),
        json!("1"),
        json!(null),
        json!(engine[1]),
    ] {
        let r = query_with(&s, &reader, find, json!({"id": forged})).await;
        assert_eq!(r["rows"], json!([]), "{forged}");
    }
    let r = query(
        &s,
        &reader,
        "MATCH (n) WHERE id(n) IN [-9223372036854775808, 9223372036854775807] RETURN n",
    )
    .await;
    assert_eq!(r["rows"], json!([]));

    // The same ids after a restart (the key is the deployment's).
    let s = s.restart().await;
    let again = query(&s, &reader, q).await;
    let again: Vec<u64> = again["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r[0].as_u64().expect("id"))
        .collect();
    assert_eq!(again, shown);
}

/// A dashboard session's cookie for `a` (the sign-in form, posted from the site's origin).
async fn session(s: &TestServer, client: &reqwest::Client, a: &Account) -> String {
    let origin = s.url("/").trim_end_matches('/').to_owned();
    let resp = client
        .post(s.url("/app/login"))
        .header("origin", origin)
        .form(&[
            ("email", a.email.as_str()),
            ("password", a.password.as_str()),
        ])
        .send()
        .await
        .expect("login");
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let cookie = resp.headers()["set-cookie"].to_str().expect("cookie");
    cookie.split(';').next().expect("pair").to_owned()
}

/// The console and a customer's page show Cypher ids in their graphs and take them back; the
/// explorer's links carry public ids; an engine id names nothing.
#[tokio::test]
async fn the_dashboard_shows_and_takes_cypher_ids() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await.plaintext;
    let r = track(
        &s,
        &key,
        json!({"action": "signup", "email": "ann@a.example"}),
    )
    .await;
    let customer = str_at(&r, "/customer_id");
    let rows = query(
        &s,
        &a.token,
        "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(t) RETURN id(c), id(t)",
    )
    .await;
    let (c, t) = (
        rows["rows"][0][0].as_u64().expect("id(c)"),
        rows["rows"][0][1].as_u64().expect("id(t)"),
    );
    let engine = engine_node(&s, &customer);
    assert_ne!(c, engine);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let cookie = session(&s, &client, &a).await;
    let page = |path: String| {
        let req = client.get(s.url(&path)).header("cookie", &cookie);
        async move {
            let resp = req.send().await.expect("get");
            assert_eq!(resp.status(), StatusCode::OK, "{path}");
            resp.text().await.expect("body")
        }
    };
    let node = |id: u64| format!("\"id\":\"n{id}\"");

    // The customer's page: its neighbourhood drawn by Cypher ids.
    let html = page(format!("/app/customers/{customer}")).await;
    assert!(html.contains(&node(c)) && html.contains(&node(t)), "{html}");

    // The console: the graph by Cypher ids, the table's link by the public id.
    let html = page("/app/graph?q=MATCH%20(c%3ACustomer)%20RETURN%20c".to_owned()).await;
    assert!(html.contains(&node(c)), "{html}");
    assert!(
        html.contains(&format!("href=\"/app/graph?explore={customer}\"")),
        "{html}"
    );
    let html = page(format!("/app/graph?explore={customer}")).await;
    assert!(html.contains(&format!("data-centre=\"n{c}\"")), "{html}");
    assert!(html.contains(&node(t)), "{html}");

    // A click's neighbourhood takes the id the graph shows, not the engine's.
    let near = page(format!("/app/graph/neighbourhood?node={c}")).await;
    assert!(near.contains(&node(t)), "{near}");
    let near = page(format!("/app/graph/neighbourhood?node={engine}")).await;
    assert_eq!(near, r#"{"elements":[]}"#);
}
