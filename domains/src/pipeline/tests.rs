//! The pipeline's write path on a real store: create, update, stage moves with history, owner
//! changes and the placeholder merge; the stage mapping; events read into changes.

use serde_json::json;
use svc_engine::{GraphRead, GraphWrite, Properties, Value, WorkspaceId};

use super::sources::{change_of, from_minor_units};
use super::*;
use crate::events::MarketingEvent;
use svc_core::store::Store;

const WS: WorkspaceId = WorkspaceId(21);
const TS: i64 = 1_767_225_600_000_000;

fn customer(w: &mut WorkspaceTxn<'_, '_>, external: &str) -> Result<NodeId> {
    let mut p = Properties::new();
    p.insert(prop::EXTERNAL_ID.into(), Value::from(external));
    Ok(w.create_node(&[CUSTOMER], p)?)
}

fn change(id: &str) -> OpportunityChange {
    OpportunityChange {
        opportunity_id: id.to_owned(),
        source: "api".to_owned(),
        ..OpportunityChange::default()
    }
}

fn actions(w: &WorkspaceTxn<'_, '_>, c: NodeId) -> Vec<(String, Json)> {
    let mut out = Vec::new();
    for adj in w
        .adjacent(
            c,
            Direction::Outgoing,
            Some(svc_core::vocabulary::HAS_TOUCHPOINT),
        )
        .expect("adjacent")
    {
        let n = w.node(adj.neighbour).expect("node").expect("exists");
        out.push((
            string_prop(&n, prop::ACTION).unwrap_or_default(),
            n.properties
                .get("properties")
                .map(value_to_json)
                .unwrap_or(Json::Null),
        ));
    }
    out
}

#[test]
fn stage_names_map_to_statuses() {
    for won in [
        "closedwon",
        "closed_won",
        "Closed Won",
        "WON",
        "closed-won",
        "Closed - won",
    ] {
        assert_eq!(Status::of_stage(won), Status::Won, "{won}");
    }
    for lost in [
        "closedlost",
        "closed_lost",
        "lost",
        "Closed",
        "Closed Lost (no budget)",
    ] {
        assert_eq!(Status::of_stage(lost), Status::Lost, "{lost}");
    }
    for open in [
        "appointmentscheduled",
        "proposal",
        "wonderful",
        "unclosed",
        "trialing",
    ] {
        assert_eq!(Status::of_stage(open), Status::Open, "{open}");
    }
}

#[test]
fn stripe_minor_units() {
    assert_eq!(from_minor_units(4200.0, Some("usd")), 42.0);
    assert_eq!(from_minor_units(4200.0, Some("JPY")), 4200.0);
    assert_eq!(from_minor_units(199.0, None), 1.99);
}

#[test]
fn events_read_into_changes() {
    let now = svc_core::plumbing::clock::now();
    let valid = |v: serde_json::Value| {
        MarketingEvent::from_json(v)
            .expect("shape")
            .validate(&PublicIds::random(0), now)
            .expect("valid")
    };
    let c = change_of(
        &valid(
            json!({"event": "opportunity_stage_changed", "email": "a@x.io",
        "properties": {"opportunityId": "D-1", "stage": "proposal", "amount": "1200.50"}}),
        )
        .input,
    )
    .expect("ok")
    .expect("change");
    assert_eq!(
        (c.opportunity_id.as_str(), c.stage.as_deref(), c.amount),
        ("D-1", Some("proposal"), Some(1200.5))
    );
    let missing = valid(json!({"event": "opportunity_created", "email": "a@x.io"}));
    assert_eq!(
        change_of(&missing.input).expect_err("no id").code,
        svc_core::error::Code::InvalidInput
    );
    let bad = valid(json!({"event": "opportunity_created", "email": "a@x.io",
        "properties": {"opportunityId": "D-2", "amount": "lots"}}));
    assert!(change_of(&bad.input).is_err());
    assert_eq!(
        change_of(&valid(json!({"event": "signup", "email": "a@x.io"})).input).expect("ok"),
        None
    );
    let inv = change_of(
        &valid(
            json!({"event": "stripe.invoice.paid", "external_id": "stripe:cus_1",
        "properties": {"stripe_object_id": "in_1", "stripe_subscription": "sub_1",
                       "amount": 4900, "currency": "usd"}}),
        )
        .input,
    )
    .expect("ok")
    .expect("change");
    assert_eq!(inv.opportunity_id, "stripe:sub_1");
    assert_eq!((inv.amount, inv.status), (Some(49.0), Some(Status::Won)));
    let trialing = change_of(
        &valid(json!({"event": "stripe.customer.subscription.created",
        "external_id": "stripe:cus_1", "properties": {"stripe_object_id": "sub_2",
        "stripe_status": "incomplete"}}))
        .input,
    )
    .expect("ok");
    assert_eq!(
        trialing, None,
        "only active, past_due and trialing subscriptions count"
    );
}

#[tokio::test]
async fn apply_creates_moves_stages_and_keeps_history() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("store");
    let ids = store.ids().clone();
    store
        .write(move |tx| {
            let mut w = tx.workspace(WS);
            let ada = customer(&mut w, "ada")?;
            let first = apply(
                &ids,
                &mut w,
                ada,
                &OpportunityChange {
                    name: Some("Ada expansion".into()),
                    amount: Some(1000.0),
                    stage: Some("proposal".into()),
                    ..change("D-1")
                },
                TS,
                None,
            )?;
            assert!(first.created);
            assert_eq!(first.stage_change, Some((None, "proposal".to_owned())));
            assert_eq!(first.view["status"], "open");
            assert_eq!(first.view["amount"], 1000);
            // Same stage again: no history, no new node.
            let again = apply(&ids, &mut w, ada, &change("D-1"), TS + 1, None)?;
            assert_eq!((again.created, again.stage_change.clone()), (false, None));
            assert_eq!(again.node, first.node);
            let won = apply(
                &ids,
                &mut w,
                ada,
                &OpportunityChange {
                    stage: Some("closedwon".into()),
                    amount: Some(1500.25),
                    ..change("D-1")
                },
                TS + 2,
                None,
            )?;
            assert_eq!(won.view["status"], "won");
            let node = find(&w, "D-1")?.expect("found through the index");
            assert_eq!(stage_of(&w, &node)?.as_deref(), Some("closedwon"));
            assert_eq!(
                w.degree(node.id, Direction::Outgoing, Some(AT_STAGE))?,
                1,
                "one stage at a time"
            );
            let history: Vec<Json> = actions(&w, ada)
                .into_iter()
                .filter(|(a, _)| a == STAGE_CHANGED)
                .map(|(_, p)| p)
                .collect();
            assert_eq!(history.len(), 2, "{history:?}");
            assert!(history.iter().any(|h| h["fromStage"] == "proposal"
                && h["toStage"] == "closedwon"
                && h["amount"] == 1500.25
                && h["status"] == "won"));

            // Another customer takes the opportunity over: one owner.
            let bob = customer(&mut w, "bob")?;
            apply(&ids, &mut w, bob, &change("D-1"), TS + 3, None)?;
            assert_eq!(owner(&w, node.id)?, Some(bob));
            assert!(of_customer(&w, ada)?.is_empty());

            // A placeholder owner is merged into the customer the association names.
            let placeholder = customer(&mut w, "hubspot:deal:7")?;
            apply(&ids, &mut w, placeholder, &change("hubspot:7"), TS, None)?;
            let cy = customer(&mut w, "hubspot:55")?;
            apply(
                &ids,
                &mut w,
                cy,
                &OpportunityChange {
                    merge_placeholder: Some("hubspot:deal:7".into()),
                    ..change("hubspot:7")
                },
                TS,
                None,
            )?;
            let deal = find(&w, "hubspot:7")?.expect("deal");
            assert_eq!(owner(&w, deal.id)?, Some(cy));
            assert!(w.node(placeholder)?.is_none(), "merged away");
            let following = OpportunityChange {
                follow_owner: true,
                ..change("hubspot:7")
            };
            assert_eq!(owner_for_event(&w, &following)?, Some(cy));
            Ok(())
        })
        .await
        .expect("write");
}
