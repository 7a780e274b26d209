//! Public ids of customers, touchpoints and other nodes are opaque: they say nothing of how
//! much other workspaces write, and the decimal ids from before them resolve only in a store
//! that had them (issue 29).

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::{expect_error, get_ok, read, str_at, track, TestServer};

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
    let resp = s
        .post("/v1/graph/query")
        .bearer_auth(token)
        .json(&json!({"query": q}))
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
    let rows = query(
        &s,
        &a.token,
        "MATCH (c:Customer {email: 'old@x.example'}) RETURN id(c) AS id",
    )
    .await;
    let n = rows["rows"][0][0]
        .as_u64()
        .expect("id(c) is the engine's integer");
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
    let rows = query(
        &s,
        &a.token,
        "MATCH (c:Customer {email: 'new@x.example'}) RETURN id(c) AS id",
    )
    .await;
    let m = rows["rows"][0][0].as_u64().expect("id");
    absent(&s, &a.token, &format!("/v1/customers/cus_{m}")).await;
    body_value(&str_at(&new, "/customer_id"), "cus_");
    // Another workspace still cannot reach the legacy customer.
    let b = s.account().await;
    absent(&s, &b.token, &format!("/v1/customers/{decimal}")).await;
}
