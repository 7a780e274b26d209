use serde_json::json;
use svc_engine::GraphRead;
use time::macros::datetime;

use super::*;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use svc_core::error::{Code, Error, Result};
use svc_core::plumbing::ids::{self, PublicIds};
use svc_core::store::Record;
use svc_core::store::{Store, WorkspaceId};
use svc_core::workspaces::WorkspaceSettings;
use svc_engine::{NodeId, Value};
use time::OffsetDateTime;

const WS: WorkspaceId = WorkspaceId(7);

fn now() -> OffsetDateTime {
    datetime!(2026-03-01 12:00:00 UTC)
}

fn event(v: Json) -> MarketingEvent {
    MarketingEvent::from_json(v).expect("event shape")
}

/// The key of the test stores, so that events validated here name their customers.
const KEY: [u8; ids::KEY_BYTES] = [9; ids::KEY_BYTES];

fn test_ids() -> PublicIds {
    PublicIds::new(&KEY, 0)
}

fn valid(v: Json) -> ValidEvent {
    event(v).validate(&test_ids(), now()).expect("valid event")
}

fn code_of(v: Json) -> Code {
    match event(v).validate(&test_ids(), now()) {
        Ok(ev) => panic!("expected an error, got {ev:?}"),
        Err(e) => e.code,
    }
}

fn open_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open_with(
        dir.path(),
        Store::default_read_model_bytes(),
        Default::default(),
        Some(&KEY),
    )
    .expect("open store");
    (dir, store)
}

async fn apply_one(store: &Store, ev: ValidEvent, at: OffsetDateTime) -> Result<IngestResult> {
    store
        .write(move |tx| apply(&test_ids(), &mut tx.workspace(WS), &ev, at))
        .await
}

fn count(store: &Store, label: &str) -> u64 {
    store
        .graph()
        .expect("graph")
        .snapshot(WS)
        .label_count(label)
        .expect("count")
}

#[test]
fn event_name_and_an_identity_key_are_required() {
    assert_eq!(code_of(json!({"email": "a@x.io"})), Code::InvalidInput);
    assert_eq!(
        code_of(json!({"event": "  ", "email": "a@x.io"})),
        Code::InvalidInput
    );
    assert_eq!(code_of(json!({"event": "signup"})), Code::InvalidInput);
    assert_eq!(
        code_of(json!({"event": "signup", "email": "", "phone": " "})),
        Code::InvalidInput
    );
    // Placeholder values never identify anyone.
    assert_eq!(
        code_of(json!({"event": "signup", "external_id": "anonymous"})),
        Code::InvalidInput
    );
    assert!(MarketingEvent::from_json(json!({"event": 5, "email": "a@x.io"})).is_err());
}

#[test]
fn timestamps_need_a_timezone() {
    let ev = valid(json!({"event": "e", "email": "a@x.io", "timestamp": "2026-01-02T03:04:05Z"}));
    assert_eq!(ev.input.ts, 1_767_323_045_000_000);
    let ev =
        valid(json!({"event": "e", "email": "a@x.io", "timestamp": "2026-01-02T05:04:05.5+02:00"}));
    assert_eq!(ev.input.ts, 1_767_323_045_500_000);
    for bad in [
        json!("2026-01-02T03:04:05"),
        json!("2026-01-02"),
        json!("yesterday"),
        json!(1767323045),
    ] {
        assert_eq!(
            code_of(json!({"event": "e", "email": "a@x.io", "timestamp": bad})),
            Code::InvalidTimestamp,
            "{bad}"
        );
    }
    let ev = valid(json!({"event": "e", "email": "a@x.io"}));
    assert_eq!(ev.input.ts, micros(now()).expect("micros"));
}

#[test]
fn events_over_32_kib_are_refused() {
    let big = "x".repeat(MAX_EVENT_BYTES);
    assert_eq!(
        code_of(json!({"event": "e", "email": "a@x.io", "properties": {"blob": big}})),
        Code::PayloadTooLarge
    );
    let fits = "x".repeat(MAX_EVENT_BYTES - 200);
    valid(json!({"event": "e", "email": "a@x.io", "properties": {"blob": fits}}));
}

#[test]
fn the_customer_field_is_an_id_then_email_then_phone_then_external_id() {
    let keys = |c: &str| valid(json!({"event": "e", "customer": c})).input.keys;
    let id = test_ids().customer(NodeId(12));
    let k = keys(&id);
    assert_eq!(k.customer_id, Some(NodeId(12)));
    assert_eq!(k.external_id.as_deref(), Some(id.as_str()));
    // A decimal id is one only below the store's legacy ceiling.
    let k = keys("cus_12");
    assert_eq!(k.customer_id, None);
    let old = PublicIds::new(&KEY, 13);
    let k = event(json!({"event": "e", "customer": "cus_12"}))
        .validate(&old, now())
        .expect("valid")
        .input
        .keys;
    assert_eq!(k.customer_id, Some(NodeId(12)));
    assert_eq!(
        keys("Ada@Example.com").email.as_deref(),
        Some("Ada@Example.com")
    );
    assert_eq!(
        keys("+1 555 000 1234").phone.as_deref(),
        Some("+1 555 000 1234")
    );
    let k = keys("5550001234");
    assert_eq!(
        (k.phone, k.external_id.as_deref()),
        (None, Some("5550001234"))
    );
    assert_eq!(keys("crm-42").external_id.as_deref(), Some("crm-42"));
    // Explicit fields win over what `customer` would fill.
    let k = valid(json!({"event": "e", "customer": "b@x.io", "email": "a@x.io"}))
        .input
        .keys;
    assert_eq!(k.email.as_deref(), Some("a@x.io"));
}

#[test]
fn external_id_aliases_and_foreign_customer_ids() {
    let k = valid(json!({"event": "e", "externalId": "u1"})).input.keys;
    assert_eq!(k.external_id.as_deref(), Some("u1"));
    let k = valid(json!({"event": "e", "external_id": "u1", "externalId": "u1"}))
        .input
        .keys;
    assert_eq!(k.external_id.as_deref(), Some("u1"));
    assert_eq!(
        code_of(json!({"event": "e", "external_id": "u1", "externalId": "u2"})),
        Code::InvalidInput
    );
    let k = valid(json!({"event": "e", "customerId": "user-9"}))
        .input
        .keys;
    assert_eq!(
        (k.customer_id, k.external_id.as_deref()),
        (None, Some("user-9"))
    );
    // Our shape but no customer of this store: neither an id nor someone else's id.
    let k = valid(json!({"event": "e", "customerId": "cus_12", "email": "a@x.io"}))
        .input
        .keys;
    assert_eq!((k.customer_id, k.external_id), (None, None));
    assert_eq!(
        code_of(json!({"event": "e", "phone": "call me"})),
        Code::InvalidInput
    );
    assert_eq!(
        code_of(json!({"event": "e", "email": "nobody"})),
        Code::InvalidInput
    );
}

#[test]
fn reserved_traits_and_bad_message_ids_are_refused() {
    assert_eq!(
        code_of(json!({"event": "e", "email": "a@x.io", "traits": {"email": "b@x.io"}})),
        Code::InvalidInput
    );
    assert_eq!(
        code_of(json!({"event": "e", "email": "a@x.io", "messageId": ""})),
        Code::InvalidInput
    );
    let long = "m".repeat(MAX_MESSAGE_ID_CHARS + 1);
    assert_eq!(
        code_of(json!({"event": "e", "email": "a@x.io", "messageId": long})),
        Code::InvalidInput
    );
}

#[test]
fn values_convert_both_ways() {
    let v = json!({"n": 3, "f": 1.5, "s": "x", "b": true, "l": [1, null], "m": {"k": "v"}});
    let Json::Object(m) = v.clone() else {
        panic!("object")
    };
    let props = json_object_to_properties(m);
    assert_eq!(props.get("n"), Some(&Value::Int(3)));
    assert_eq!(props.get("f"), Some(&Value::Float(1.5)));
    assert_eq!(value_to_json(&Value::Map(props)), v);
    assert_eq!(
        value_to_json(&Value::DateTime(1_767_323_045_000_000)),
        json!("2026-01-02T03:04:05.000Z")
    );
}

#[tokio::test]
async fn apply_resolves_identity_and_links_campaigns() {
    let (_dir, store) = open_store();
    let first = apply_one(
        &store,
        valid(json!({"event": "signup", "email": "Ada@x.io", "campaignId": "spring", "channel": "web"})),
        now(),
    )
    .await
    .expect("first");
    assert!(first.is_new && !first.duplicate);
    assert_eq!(first.nodes_mutated, 3);
    assert!(first.customer_id.starts_with("cus_") && first.touchpoint_id.starts_with("tp_"));
    assert_eq!(first.received_at, "2026-03-01T12:00:00.000Z");

    let second = apply_one(
        &store,
        valid(json!({"event": "login", "customer": "ada@x.io"})),
        now(),
    )
    .await
    .expect("second");
    assert_eq!(second.customer_id, first.customer_id);
    assert!(!second.is_new);
    assert_ne!(second.touchpoint_id, first.touchpoint_id);

    let by_id = apply_one(
        &store,
        valid(json!({"event": "x", "customerId": first.customer_id})),
        now(),
    )
    .await
    .expect("by id");
    assert_eq!(by_id.customer_id, first.customer_id);
    assert_eq!(
        (count(&store, "Customer"), count(&store, "Touchpoint")),
        (1, 3)
    );
    assert_eq!(count(&store, "Campaign"), 1);

    // An unknown canonical id with nothing else to go on is the client's error.
    let unknown = test_ids().customer(NodeId(999_999));
    let err = apply_one(
        &store,
        valid(json!({"event": "x", "customerId": unknown})),
        now(),
    )
    .await
    .expect_err("unknown id");
    assert_eq!(err.code, Code::InvalidInput);
    // So is a decimal id on a store that never gave them out (found before anything runs).
    assert_eq!(
        code_of(json!({"event": "x", "customerId": "cus_999999"})),
        Code::InvalidInput
    );
}

#[tokio::test]
async fn a_repeated_message_id_within_a_day_writes_nothing() {
    let (_dir, store) = open_store();
    let ev = valid(json!({"event": "e", "email": "a@x.io", "messageId": "m-1"}));
    let first = apply_one(&store, ev.clone(), now()).await.expect("first");
    let later = now() + time::Duration::hours(23);
    let again = apply_one(&store, ev.clone(), later).await.expect("again");
    assert!(again.duplicate);
    assert_eq!(
        (
            &again.customer_id,
            &again.touchpoint_id,
            again.nodes_mutated,
            &again.received_at
        ),
        (
            &first.customer_id,
            &first.touchpoint_id,
            0,
            &first.received_at
        )
    );
    assert_eq!(count(&store, "Touchpoint"), 1);
    // Another workspace has its own message ids.
    let other = store
        .write({
            let ev = ev.clone();
            move |tx| apply(&test_ids(), &mut tx.workspace(WorkspaceId(8)), &ev, later)
        })
        .await
        .expect("other workspace");
    assert!(!other.duplicate);
    // After the window the id is new again.
    let next_day = now() + time::Duration::hours(25);
    let fresh = apply_one(&store, ev, next_day).await.expect("fresh");
    assert!(!fresh.duplicate);
    assert_eq!(count(&store, "Touchpoint"), 2);
}

#[tokio::test]
async fn message_id_records_past_the_window_are_swept() {
    let (_dir, store) = open_store();
    let seen = |store: &Store, id: &str| {
        store
            .graph()
            .expect("graph")
            .get_record::<SeenMessage>(WS, id)
            .expect("read")
            .is_some()
    };
    for (mid, at) in [
        ("m-old", now()),
        ("m-new", now() + time::Duration::hours(20)),
    ] {
        let ev = valid(json!({"event": "e", "email": "a@x.io", "messageId": mid}));
        apply_one(&store, ev, at).await.expect("ingest");
    }
    let swept_at = now() + time::Duration::hours(25);
    assert_eq!(
        purge_seen_messages(&store, WS, swept_at)
            .await
            .expect("sweep"),
        1
    );
    assert!(!seen(&store, "m-old"));
    assert!(seen(&store, "m-new"), "still inside its window");
    // The customer history stays: only the dedupe record goes.
    assert_eq!(count(&store, "Touchpoint"), 2);
    // A repeat of the swept id is a new event, exactly as it was past the window before.
    let ev = valid(json!({"event": "e", "email": "a@x.io", "messageId": "m-old"}));
    assert!(
        !apply_one(&store, ev, swept_at)
            .await
            .expect("again")
            .duplicate
    );
    assert_eq!(
        purge_seen_messages(&store, WS, swept_at)
            .await
            .expect("sweep"),
        0
    );
}

#[tokio::test]
async fn traits_are_set_on_the_customer() {
    let (_dir, store) = open_store();
    let ev = valid(
        json!({"event": "identify", "email": "a@x.io", "traits": {"name": "Ada", "plan": "pro"}}),
    );
    let r = apply_one(&store, ev.clone(), now())
        .await
        .expect("identify");
    assert_eq!(r.nodes_mutated, 2);
    let id = store.ids().parse_customer(&r.customer_id).expect("id");
    let node = store
        .graph()
        .expect("graph")
        .snapshot(WS)
        .node(id)
        .expect("read")
        .expect("customer");
    assert_eq!(node.get("name"), Some(&Value::String("Ada".into())));
    assert_eq!(node.get("plan"), Some(&Value::String("pro".into())));
    // Same traits, older event: the customer does not change, only the touchpoint is new.
    let mut older = ev;
    older.input.ts -= 1_000_000;
    let r = apply_one(&store, older, now()).await.expect("again");
    assert_eq!(r.nodes_mutated, 1);
}

#[tokio::test]
async fn apply_commits_or_aborts_with_the_callers_own_writes() {
    #[derive(Serialize, Deserialize)]
    struct Row {
        id: String,
    }
    impl Record for Row {
        const KIND: &'static str = "test_row";
        fn id(&self) -> String {
            self.id.clone()
        }
    }
    let (_dir, store) = open_store();
    let ev = valid(json!({"event": "e", "email": "a@x.io"}));
    let failed: Result<()> = store
        .write({
            let ev = ev.clone();
            move |tx| {
                tx.put(WS, &Row { id: "r1".into() })?;
                apply(&test_ids(), &mut tx.workspace(WS), &ev, now())?;
                Err(Error::new(Code::CapabilityFailed, "later step failed"))
            }
        })
        .await;
    assert!(failed.is_err());
    assert_eq!(count(&store, "Customer"), 0);
    assert!(store.get::<Row>(WS, "r1").await.expect("get").is_none());

    store
        .write(move |tx| {
            tx.put(WS, &Row { id: "r1".into() })?;
            apply(&test_ids(), &mut tx.workspace(WS), &ev, now())
        })
        .await
        .expect("commit");
    assert_eq!(count(&store, "Customer"), 1);
    assert!(store.get::<Row>(WS, "r1").await.expect("get").is_some());
}

#[tokio::test]
async fn read_only_workspaces_refuse_events() {
    let (_dir, store) = open_store();
    let mut settings = WorkspaceSettings::new_default("2026-01-01T00:00:00.000Z");
    settings.read_only = true;
    store
        .write(move |tx| tx.put(WS, &settings))
        .await
        .expect("settings");
    let err = apply_one(
        &store,
        valid(json!({"event": "e", "email": "a@x.io"})),
        now(),
    )
    .await
    .expect_err("read-only");
    assert_eq!(err.code, Code::ReadOnlyWorkspace);
    assert_eq!(count(&store, "Customer"), 0);
}

#[tokio::test]
async fn ingest_announces_and_batches_keep_good_items() {
    let (_dir, store) = open_store();
    let hub = Realtime::new();
    let mut rx = hub.subscribe(WS);
    let r = ingest(
        &store,
        &hub,
        WS,
        valid(json!({"event": "signup", "email": "a@x.io"})),
    )
    .await
    .expect("ingest");
    let msg = rx.try_recv().expect("announced");
    assert_eq!(
        (
            msg.kind.as_str(),
            msg.customer_id.as_str(),
            msg.touchpoint_id.as_str(),
            msg.event.as_str()
        ),
        (
            "touchpoint.created",
            r.customer_id.as_str(),
            r.touchpoint_id.as_str(),
            "signup"
        )
    );

    let items = vec![
        Ok(valid(
            json!({"event": "a", "email": "b@x.io", "messageId": "dup"}),
        )),
        event(json!({"email": "c@x.io"})).validate(&test_ids(), now()),
        Ok(valid(
            json!({"event": "x", "customerId": test_ids().customer(NodeId(999_999))}),
        )),
        Ok(valid(
            json!({"event": "b", "email": "b@x.io", "messageId": "dup"}),
        )),
        Ok(valid(json!({"event": "c", "email": "c@x.io"}))),
    ];
    let results = ingest_many(&store, &hub, WS, items).await.expect("batch");
    assert_eq!(results.len(), 5);
    let first = results[0].as_ref().expect("item 0");
    assert!(matches!(&results[1], Err(e) if e.code == Code::InvalidInput));
    assert!(matches!(&results[2], Err(e) if e.code == Code::InvalidInput));
    let dup = results[3].as_ref().expect("item 3");
    assert!(dup.duplicate && dup.touchpoint_id == first.touchpoint_id);
    assert!(results[4].is_ok());
    assert_eq!(
        (count(&store, "Customer"), count(&store, "Touchpoint")),
        (3, 3)
    );
    // Two new touchpoints announced; the duplicate is not.
    let announced: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok())
        .map(|m| m.event.clone())
        .collect();
    assert_eq!(announced, vec!["a".to_owned(), "c".to_owned()]);
}

#[tokio::test]
async fn outbound_events_are_recorded_but_do_not_move_last_seen() {
    let (_dir, store) = open_store();
    let seen = |store: &Store, id: &str| {
        let node = store
            .graph()
            .expect("graph")
            .snapshot(WS)
            .node(store.ids().parse_customer(id).expect("id"))
            .expect("read")
            .expect("customer");
        node.get("lastSeen").cloned()
    };
    let own = valid(json!({"event": "page_viewed", "email": "a@x.io",
                           "timestamp": "2026-02-01T10:00:00Z"}));
    assert!(!own.input.outbound);
    let r = apply_one(&store, own, now()).await.expect("own");
    let before = seen(&store, &r.customer_id);
    assert!(before.is_some());
    // Later sends and calls: touchpoints, but lastSeen stays at the customer's own event.
    for action in ["email_sent", "call_placed", "customerio.email.delivered"] {
        let ev = valid(json!({"event": action, "email": "a@x.io",
                              "timestamp": "2026-02-20T10:00:00Z"}));
        assert!(ev.input.outbound, "{action}");
        let out = apply_one(&store, ev, now()).await.expect("outbound");
        assert_eq!(out.customer_id, r.customer_id);
        assert_eq!(seen(&store, &r.customer_id), before, "{action}");
    }
    assert_eq!(count(&store, "Touchpoint"), 4);
    // A customer first met through an outbound event has never been seen.
    let ev = valid(json!({"event": "email_sent", "email": "b@x.io"}));
    let b = apply_one(&store, ev, now()).await.expect("send");
    assert_eq!(seen(&store, &b.customer_id), None);
    // Their own reply moves it.
    let ev = valid(json!({"event": "email_replied", "email": "b@x.io"}));
    apply_one(&store, ev, now()).await.expect("reply");
    assert!(seen(&store, &b.customer_id).is_some());
}
