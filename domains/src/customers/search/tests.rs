use super::*;
use svc_core::store::{Store, WorkspaceId};
use svc_engine::{GraphWrite, Properties};

const WS: WorkspaceId = WorkspaceId(5);

fn props(pairs: &[(&str, Value)]) -> Properties {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// 60 customers with every kind of property, a campaign reaching some, a stage holding
/// some; then a few changed after the read model was built.
async fn seeded() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("store");
    store
        .write(|tx| {
            let mut w = tx.workspace(WS);
            let campaign = w.create_node(
                &[CAMPAIGN],
                props(&[
                    ("campaignId", Value::from("spring")),
                    ("name", Value::from("Spring")),
                ]),
            )?;
            let stage = w.create_node(&[STAGE], props(&[("name", Value::from("Trial"))]))?;
            for i in 0..60i64 {
                let mut p = vec![
                    (
                        "email",
                        Value::from(format!("user{i}@Corp.example").as_str()),
                    ),
                    ("lastSeen", Value::DateTime(1_000_000 * (i % 17))),
                ];
                if i % 3 == 0 {
                    p.push(("name", Value::from(format!("Tanaka {i}").as_str())));
                }
                if i % 4 == 0 {
                    p.push(("phone", Value::from(format!("+81 90-1234-{i:04}").as_str())));
                }
                if i % 5 == 0 {
                    p.push(("score", Value::Float(i as f64 / 100.0)));
                    p.push(("churnScore", Value::Float(1.0 - i as f64 / 100.0)));
                }
                if i % 7 == 0 {
                    p.push(("plan", Value::from("Enterprise")));
                }
                if i % 11 == 0 {
                    p.push(("lifecycle_stage", Value::from("customer")));
                }
                if i == 13 {
                    // A mixed-type column: read per row.
                    p.push(("externalId", Value::Int(7)));
                } else if i % 2 == 0 {
                    p.push(("externalId", Value::from(format!("ext-{i}").as_str())));
                }
                let c = w.create_node(&[CUSTOMER], props(&p))?;
                if i % 6 == 0 {
                    let tp = w.create_node(
                        &[TOUCHPOINT],
                        props(&[("action", Value::from("page_viewed"))]),
                    )?;
                    w.create_edge(c, tp, HAS_TOUCHPOINT, Properties::new())?;
                    w.create_edge(tp, campaign, INFLUENCED_BY, Properties::new())?;
                }
                if i % 9 == 0 {
                    w.create_edge(c, stage, AT_STAGE, Properties::new())?;
                }
            }
            Ok(())
        })
        .await
        .expect("seed");
    store
        .graph()
        .expect("graph")
        .prepare_read_model(WS)
        .expect("model")
        .expect("built");
    // Changes after the model: a renamed customer, a deleted one, a new one.
    store
        .write(|tx| {
            let mut w = tx.workspace(WS);
            let first = w.label_scan(CUSTOMER)?[1];
            w.set_node_property(first, "name", Value::from("Tanaka Renamed"))?;
            let second = w.label_scan(CUSTOMER)?[2];
            w.detach_delete_node(second)?;
            w.create_node(
                &[CUSTOMER],
                props(&[
                    ("email", Value::from("late@corp.example")),
                    ("name", Value::from("Late Tanaka")),
                    ("score", Value::Float(0.5)),
                ]),
            )?;
            Ok(())
        })
        .await
        .expect("changes");
    (dir, store)
}

fn both(store: &Store, q: &CustomerQuery) -> (CustomerList, CustomerList) {
    let graph = store.graph().expect("graph");
    let snap = graph.snapshot(WS);
    let model = snap.model_view();
    assert!(model.is_some(), "the snapshot has a read model");
    let q = q.clone().checked().expect("valid");
    let with = search_with(store.ids(), &snap, model, &q).expect("model path");
    let without = search_with(store.ids(), &snap, None, &q).expect("row path");
    (with, without)
}

fn ids_of(p: &CustomerList) -> Vec<String> {
    p.customers.iter().map(|c| c.id.clone()).collect()
}

#[tokio::test]
async fn model_and_row_paths_agree_on_every_filter_and_sort() {
    let (_dir, store) = seeded().await;
    let mut queries = Vec::new();
    for q in [
        "",
        "tanaka",
        "CORP",
        "user1",
        "enterprise",
        "1234-0008",
        "90 1234 0012",
        "ext-4",
        "zzz",
    ] {
        for sort in [
            CustomerSort::LastSeen,
            CustomerSort::Email,
            CustomerSort::Name,
            CustomerSort::Phone,
            CustomerSort::Score,
            CustomerSort::Churn,
        ] {
            for ascending in [false, true] {
                queries.push(CustomerQuery {
                    q: q.into(),
                    sort,
                    ascending,
                    limit: 7,
                    offset: 3,
                    ..CustomerQuery::default()
                });
            }
        }
    }
    queries.push(CustomerQuery {
        stage: Some("trial".into()),
        ..CustomerQuery::default()
    });
    queries.push(CustomerQuery {
        stage: Some("Customer".into()),
        ..CustomerQuery::default()
    });
    queries.push(CustomerQuery {
        campaign: Some("spring".into()),
        min_score: Some(0.1),
        ..CustomerQuery::default()
    });
    queries.push(CustomerQuery {
        has: Some("phone".into()),
        sort: CustomerSort::Phone,
        ascending: true,
        ..CustomerQuery::default()
    });
    queries.push(CustomerQuery {
        min_churn: Some(0.5),
        max_churn: Some(0.8),
        sort: CustomerSort::Churn,
        ..CustomerQuery::default()
    });
    for q in &queries {
        let (a, b) = both(&store, q);
        assert_eq!((ids_of(&a), a.total), (ids_of(&b), b.total), "{q:?}");
    }
}

#[tokio::test]
async fn search_finds_across_the_workspace_with_totals() {
    let (_dir, store) = seeded().await;
    let run = |q: CustomerQuery| both(&store, &q).0;
    // Every customer, the deleted one gone and the new one in.
    assert_eq!(run(CustomerQuery::default()).total, 60);
    // Names: 20 "Tanaka n" (one renamed, still Tanaka, one deleted is id 2 = i 2: no name)
    // plus the new one.
    let tanaka = run(CustomerQuery {
        q: "TANAKA".into(),
        limit: 500,
        ..CustomerQuery::default()
    });
    assert_eq!(tanaka.total, 22);
    assert!(tanaka
        .customers
        .iter()
        .any(|c| c.name.as_deref() == Some("Late Tanaka")));
    // An exact email, whatever its case.
    let one = run(CustomerQuery {
        q: "user42@corp.example".into(),
        ..CustomerQuery::default()
    });
    assert_eq!(one.total, 1);
    assert_eq!(
        one.customers[0].email.as_deref(),
        Some("user42@Corp.example")
    );
    // A cus_ id.
    let by_id = run(CustomerQuery {
        q: one.customers[0].id.clone(),
        ..CustomerQuery::default()
    });
    assert_eq!(ids_of(&by_id), ids_of(&one));
    // A phone typed differently.
    assert_eq!(
        run(CustomerQuery {
            q: "(90) 1234 0016".into(),
            ..CustomerQuery::default()
        })
        .total,
        1
    );
    // A trait.
    assert_eq!(
        run(CustomerQuery {
            q: "enterprise".into(),
            ..CustomerQuery::default()
        })
        .total,
        9
    );
    // Paging: disjoint pages covering everything, in order.
    let mut seen = Vec::new();
    for page in 0..7 {
        let p = run(CustomerQuery {
            sort: CustomerSort::Email,
            ascending: true,
            offset: page * 10,
            limit: 10,
            ..CustomerQuery::default()
        });
        seen.extend(
            p.customers
                .into_iter()
                .map(|c| c.email.unwrap_or_default().to_lowercase()),
        );
    }
    assert_eq!(seen.len(), 60);
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(seen, sorted);
    // Score filter and sort: scored customers only, highest first.
    let scored = run(CustomerQuery {
        sort: CustomerSort::Score,
        min_score: Some(0.3),
        limit: 500,
        ..CustomerQuery::default()
    });
    let scores: Vec<f64> = scored
        .customers
        .iter()
        .map(|c| c.properties["score"].as_f64().unwrap_or(-1.0))
        .collect();
    assert!(scores.iter().all(|s| *s >= 0.3));
    assert!(scores.windows(2).all(|w| w[0] >= w[1]));
    // Lifecycle stage: own property first, else AT_STAGE (customers 0 and 33 and 66.. carry
    // "customer", so of i % 9 == 0 those with i % 11 == 0 are not "trial").
    let trial = run(CustomerQuery {
        stage: Some("TRIAL".into()),
        limit: 500,
        ..CustomerQuery::default()
    });
    assert_eq!(trial.total, 6);
    // Campaign reach.
    let spring = run(CustomerQuery {
        campaign: Some("Spring".into()),
        ..CustomerQuery::default()
    });
    assert_eq!(spring.total, 10);
}

#[test]
fn limits_are_checked() {
    let bad = |q: CustomerQuery| q.checked().is_err();
    assert!(bad(CustomerQuery {
        limit: PAGE_MAX + 1,
        ..CustomerQuery::default()
    }));
    assert!(bad(CustomerQuery {
        q: "x".repeat(QUERY_MAX + 1),
        ..CustomerQuery::default()
    }));
    assert!(bad(CustomerQuery {
        min_score: Some(f64::NAN),
        ..CustomerQuery::default()
    }));
    let parsed = CustomerQuery::from_params([
        ("q", " ada "),
        ("sort", "churn"),
        ("order", "asc"),
        ("min_score", "0.5"),
        ("offset", "20"),
        ("limit", "10"),
        ("stage", ""),
        ("other", "x"),
    ])
    .expect("parsed");
    assert_eq!(
        (
            parsed.q.as_str(),
            parsed.sort,
            parsed.ascending,
            parsed.min_score
        ),
        ("ada", CustomerSort::Churn, true, Some(0.5))
    );
    assert_eq!((parsed.offset, parsed.limit, parsed.stage), (20, 10, None));
    for bad in [
        ("sort", "x"),
        ("order", "up"),
        ("limit", "0"),
        ("offset", "-1"),
        ("max_churn", "NaN"),
        ("min_score", "x"),
        ("sort", ""),
        ("offset", "4294967296"),
    ] {
        assert!(CustomerQuery::from_params([bad]).is_err(), "{bad:?}");
    }
    let ok = CustomerQuery::default().checked().expect("default");
    assert_eq!(ok.limit, PAGE_DEFAULT);
    assert_eq!(CustomerSort::parse("churn"), Some(CustomerSort::Churn));
    assert_eq!(CustomerSort::parse("nope"), None);
}
