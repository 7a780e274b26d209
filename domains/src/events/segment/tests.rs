use std::io::Write;

use serde_json::{json, Value as Json};
use svc_engine::{Direction, GraphRead, NodeId, Value};
use time::macros::datetime;

use super::identity::{AnonymousIdentity, COMPANY, MEMBER_OF};
use super::*;

const WS: WorkspaceId = WorkspaceId(9);

fn open() -> (tempfile::TempDir, Store, Realtime) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("store");
    (dir, store, Realtime::new())
}

fn now() -> OffsetDateTime {
    datetime!(2026-03-01 12:00:00 UTC)
}

async fn batch(store: &Store, rt: &Realtime, items: Json) -> Accepted {
    receive(store, rt, WS, None, json!({ "batch": items }), now())
        .await
        .expect("batch")
}

/// (customer id, touchpoint actions, properties) of every customer.
async fn customers(store: &Store) -> Vec<(NodeId, Vec<String>, svc_engine::Properties)> {
    store
        .read(WS, |snap| {
            let mut out = Vec::new();
            for id in snap.label_scan(svc_engine::schema::CUSTOMER)? {
                let n = snap.node(id)?.ok_or_else(|| Error::internal("node"))?;
                let mut actions = Vec::new();
                for adj in snap.adjacent(id, Direction::Outgoing, Some("HAS_TOUCHPOINT"))? {
                    let tp = snap
                        .node(adj.neighbour)?
                        .ok_or_else(|| Error::internal("tp"))?;
                    if let Some(Value::String(a)) = tp.properties.get("action") {
                        actions.push(a.clone());
                    }
                }
                actions.sort();
                out.push((id, actions, n.properties));
            }
            Ok(out)
        })
        .await
        .expect("read")
}

#[tokio::test]
async fn anonymous_touchpoints_move_to_the_customer_who_identifies() {
    let (_d, store, rt) = open();
    let r = batch(
        &store,
        &rt,
        json!([
            {"type": "page", "anonymousId": "anon-1", "name": "Pricing", "messageId": "p1"},
            {"type": "track", "anonymousId": "anon-1", "event": "Signup Started", "messageId": "t1"},
        ]),
    )
    .await;
    assert_eq!((r.accepted, r.rejected.len()), (2, 0));
    let before = customers(&store).await;
    assert_eq!(before.len(), 1, "one anonymous customer");
    assert_eq!(before[0].2.get("anonymousId"), Some(&Value::from("anon-1")));
    // An identify that names nobody known sets the visitor's traits and links nothing.
    batch(
        &store,
        &rt,
        json!([{"type": "identify", "anonymousId": "anon-1", "traits": {"plan": "trial"}}]),
    )
    .await;
    let rec = store
        .get::<AnonymousIdentity>(WS, "anon-1".to_owned())
        .await
        .expect("get")
        .expect("record");
    assert_eq!((rec.customer, rec.linked_by), (before[0].0 .0, None));

    // A known customer exists already (by email); identify links the visitor to it.
    batch(
        &store,
        &rt,
        json!([{"type": "track", "userId": "u-1", "event": "Old", "traits": {}}]),
    )
    .await;
    let r = batch(
        &store,
        &rt,
        json!([{"type": "identify", "userId": "u-1", "anonymousId": "anon-1",
                "traits": {"email": "ada@x.io", "name": "Ada"}, "messageId": "i1"}]),
    )
    .await;
    assert_eq!(r.accepted, 1);
    let after = customers(&store).await;
    assert_eq!(
        after.len(),
        1,
        "the anonymous customer was merged: {after:?}"
    );
    let (id, actions, props) = &after[0];
    assert_eq!(
        actions,
        &[
            "Old",
            "Signup Started",
            "identify",
            "identify",
            "page:Pricing"
        ]
    );
    assert_eq!(props.get("externalId"), Some(&Value::from("u-1")));
    assert_eq!(props.get("email"), Some(&Value::from("ada@x.io")));
    assert_eq!(props.get("anonymousId"), Some(&Value::from("anon-1")));
    let rec = store
        .get::<AnonymousIdentity>(WS, "anon-1".to_owned())
        .await
        .expect("get")
        .expect("record");
    assert_eq!(rec.customer, id.0);
    assert_eq!(rec.linked_by.as_deref(), Some("identify"));

    // Later anonymous events of that visitor land on the known customer.
    batch(
        &store,
        &rt,
        json!([{"type": "track", "anonymousId": "anon-1", "event": "Came Back"}]),
    )
    .await;
    let after = customers(&store).await;
    assert_eq!(after.len(), 1);
    assert!(after[0].1.contains(&"Came Back".to_owned()));
}

#[tokio::test]
async fn alias_merges_the_previous_id_and_group_links_a_company() {
    let (_d, store, rt) = open();
    let r = batch(
        &store,
        &rt,
        json!([
            {"type": "track", "userId": "old-id", "event": "A"},
            {"type": "track", "userId": "new-id", "event": "B"},
            {"type": "alias", "userId": "new-id", "previousId": "old-id"},
            {"type": "group", "userId": "new-id", "groupId": "acme", "traits": {"name": "Acme", "plan": "pro"}},
            {"type": "group", "userId": "new-id", "groupId": "acme", "traits": {"plan": "enterprise"}},
        ]),
    )
    .await;
    assert_eq!((r.accepted, r.rejected.len()), (5, 0), "{r:?}");
    let all = customers(&store).await;
    assert_eq!(all.len(), 1, "{all:?}");
    let customer = all[0].0;
    assert_eq!(all[0].1, ["A", "B", "alias", "group", "group"]);
    let (companies, props) = store
        .read(WS, move |snap| {
            let adj = snap.adjacent(customer, Direction::Outgoing, Some(MEMBER_OF))?;
            let c = snap
                .node(adj[0].neighbour)?
                .ok_or_else(|| Error::internal("c"))?;
            Ok((adj.len(), c))
        })
        .await
        .expect("read");
    assert_eq!(companies, 1);
    assert!(props.has_label(COMPANY));
    assert_eq!(props.properties.get("name"), Some(&Value::from("Acme")));
    assert_eq!(
        props.properties.get("plan"),
        Some(&Value::from("enterprise"))
    );
    assert_eq!(props.properties.get("groupId"), Some(&Value::from("acme")));
}

#[tokio::test]
async fn a_batch_keeps_valid_messages_reports_the_rest_and_dedupes_retries() {
    let (_d, store, rt) = open();
    let items = json!([
        {"type": "track", "userId": "u", "event": "ok", "messageId": "m1"},
        {"type": "track", "userId": "u", "messageId": "m2"},
        {"type": "track", "event": "no one", "messageId": "m3"},
        {"type": "track", "userId": "u", "event": "bad time", "timestamp": "yesterday"},
        {"type": "track", "userId": "u", "event": "big", "properties": {"x": "y".repeat(40_000)}},
    ]);
    let r = batch(&store, &rt, items.clone()).await;
    assert!(r.success);
    assert_eq!(r.accepted, 1);
    let rejected: Vec<(usize, &str)> = r
        .rejected
        .iter()
        .map(|x| (x.index, x.code.as_str()))
        .collect();
    assert_eq!(
        rejected,
        [
            (1, "invalid_input"),
            (2, "invalid_input"),
            (3, "invalid_timestamp"),
            (4, "payload_too_large")
        ]
    );
    assert_eq!(r.rejected[0].message_id.as_deref(), Some("m2"));
    // The client retries the same batch: nothing is written twice.
    let again = batch(&store, &rt, items).await;
    assert_eq!((again.accepted, again.duplicates), (1, 1));
    assert_eq!(customers(&store).await[0].1, ["ok"]);
    // A single call's invalid message is the request's error.
    let e = receive(
        &store,
        &rt,
        WS,
        Some("track"),
        json!({"userId": "u"}),
        now(),
    )
    .await
    .expect_err("no event");
    assert_eq!(e.code, Code::InvalidInput);
    let ok = receive(
        &store,
        &rt,
        WS,
        Some("screen"),
        json!({"userId": "u", "name": "Home", "type": "track"}),
        now(),
    )
    .await
    .expect("screen");
    assert_eq!(ok.accepted, 1);
    assert!(customers(&store).await[0]
        .1
        .contains(&"screen:Home".to_owned()));
}

#[tokio::test]
async fn timestamps_are_corrected_with_the_batch_sent_at() {
    let (_d, store, rt) = open();
    let body = json!({
        "sentAt": "2026-03-01T13:00:00Z",
        "context": {"campaign": {"name": "spring", "source": "news"}},
        "batch": [{"type": "track", "userId": "u", "event": "e",
                   "timestamp": "2026-03-01T12:59:00Z"}]
    });
    receive(&store, &rt, WS, None, body, now())
        .await
        .expect("batch");
    let (ts, props) = store
        .read(WS, |snap| {
            let tp = snap.label_scan(svc_engine::schema::TOUCHPOINT)?[0];
            let n = snap.node(tp)?.ok_or_else(|| Error::internal("tp"))?;
            Ok((n.properties.get("ts").cloned(), n.properties))
        })
        .await
        .expect("read");
    // Received at 12:00, sent one minute after the event by the client's clock.
    assert_eq!(
        ts,
        Some(Value::DateTime(
            crate::events::micros(datetime!(2026-03-01 11:59:00 UTC)).expect("us")
        ))
    );
    let p = crate::events::value_to_json(props.get("properties").expect("props"));
    assert_eq!(p["utm_source"], json!("news"), "batch context applies: {p}");
}

#[test]
fn bodies_are_gunzipped_and_bounded() {
    let raw = br#"{"batch": [], "writeKey": "swk_x"}"#;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(raw).expect("gzip");
    let zipped = gz.finish().expect("gzip");
    let v = decode_body(&zipped, true, MAX_BATCH_BYTES).expect("gunzip");
    assert_eq!(body_write_key(&v), Some("swk_x"));
    assert_eq!(
        decode_body(raw, false, 10).expect_err("big").code,
        Code::InvalidInput
    );
    assert_eq!(
        decode_body(b"{nope", false, 100).expect_err("json").code,
        Code::InvalidJson
    );
    assert!(decode_body(b"not gzip", true, 100).is_err());
    // A compression bomb stops at the limit.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![b' '; 4 * 1024 * 1024]).expect("gzip");
    let bomb = gz.finish().expect("gzip");
    assert_eq!(
        decode_body(&bomb, true, MAX_BATCH_BYTES)
            .expect_err("bomb")
            .code,
        Code::InvalidInput
    );
}

#[tokio::test]
async fn write_keys_authenticate_until_revoked() {
    let (_d, store, _rt) = open();
    let created = write_keys::create(
        &store,
        WS,
        "usr_1",
        write_keys::CreateWriteKey {
            name: "web".into(),
            rate_limit_per_min: None,
        },
    )
    .await
    .expect("create");
    let key = write_keys::authenticate(&store, &created.write_key)
        .await
        .expect("auth")
        .expect("live");
    assert_eq!(key.workspace, WS.0);
    assert_eq!(key.rate_limit_per_min, write_keys::DEFAULT_RATE_PER_MIN);
    let mut typo = created.write_key.clone();
    typo.pop();
    typo.push('!');
    assert!(write_keys::authenticate(&store, &typo)
        .await
        .expect("auth")
        .is_none());
    let listed = write_keys::list(&store, WS).await.expect("list");
    assert_eq!(listed.write_keys.len(), 1);
    assert!(!serde_json::to_string(&listed)
        .expect("json")
        .contains(&created.write_key));
    write_keys::revoke(&store, WS, &created.key.id)
        .await
        .expect("revoke");
    assert!(write_keys::authenticate(&store, &created.write_key)
        .await
        .expect("auth")
        .is_none());
}
