//! Tests of the scores, and the graph helpers other modules' tests share.

use super::*;
use crate::events::{self, MarketingEvent};
use std::collections::BTreeMap;
use svc_engine::{Graph, GraphOptions, WorkspaceId};
use svc_engine::{NodeId, Value};
use time::macros::datetime;

pub(crate) const WS: WorkspaceId = WorkspaceId(3);

pub(crate) fn now() -> OffsetDateTime {
    datetime!(2026-11-25 12:00:00 UTC)
}

/// The public ids of the test graphs (engine graphs without a store).
pub(crate) fn test_ids() -> PublicIds {
    PublicIds::new(&[5; svc_core::plumbing::ids::KEY_BYTES], 0)
}

pub(crate) fn open_graph() -> (tempfile::TempDir, Graph) {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open graph");
    (dir, graph)
}

/// Records `event` for `email` `days_ago` days before [`now`], with extra fields.
pub(crate) fn track(graph: &Graph, email: &str, event: &str, days_ago: f64, extra: Json) {
    let at = now() - time::Duration::seconds_f64(days_ago * 86_400.0);
    let mut body = json!({"event": event, "email": email, "timestamp": clock::rfc3339(at)});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let ev = MarketingEvent::from_json(body)
        .expect("event shape")
        .validate(&test_ids(), now())
        .expect("valid event");
    graph
        .write(move |tx| events::apply(&test_ids(), &mut tx.workspace(WS), &ev, now()).map(|_| ()))
        .expect("ingest");
}

/// Runs `f` on the customer with this email inside a write transaction, as executors do.
pub(crate) fn with_customer<R: Send + 'static>(
    graph: &Graph,
    email: &str,
    f: impl FnOnce(&WorkspaceTxn<'_, '_>, &Node) -> Result<R> + Send + 'static,
) -> R {
    let email = email.to_owned();
    graph
        .write(move |tx| {
            let w = tx.workspace(WS);
            let id = w
                .index_seek("Customer", "email", &Value::String(email))?
                .and_then(|ids| ids.first().copied())
                .ok_or_else(|| svc_core::error::Error::not_found("customer"))?;
            let node = w
                .node(id)?
                .ok_or_else(|| svc_core::error::Error::not_found("customer"))?;
            f(&w, &node)
        })
        .expect("read customer")
}

/// A hot lead (pricing and demo this week) and a dormant former buyer.
pub(crate) fn two_customers(graph: &Graph) {
    track(graph, "hot@x.io", "signup", 40.0, json!({}));
    track(graph, "hot@x.io", "page_viewed", 20.0, json!({}));
    track(
        graph,
        "hot@x.io",
        "pricing_viewed",
        5.0,
        json!({"channel": "web"}),
    );
    track(
        graph,
        "hot@x.io",
        "demo_requested",
        2.0,
        json!({"channel": "web"}),
    );
    track(
        graph,
        "hot@x.io",
        "email_replied",
        1.0,
        json!({"channel": "email"}),
    );
    track(graph, "cold@x.io", "purchase", 300.0, json!({}));
    track(graph, "cold@x.io", "ticket_opened", 200.0, json!({}));
    track(graph, "cold@x.io", "page_viewed", 150.0, json!({}));
}

fn validates(schema: &Json, instance: &Json) {
    let v = jsonschema::draft202012::new(schema).expect("schema compiles");
    let errors: Vec<String> = v.iter_errors(instance).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?} in {instance}");
}

#[test]
fn classes_check_negative_before_positive() {
    assert_eq!(classify("upgrade_cancelled"), Class::Negative);
    assert_eq!(classify("unsubscribed"), Class::Negative);
    assert_eq!(classify("pricing_viewed"), Class::Intent);
    assert_eq!(classify("purchase"), Class::Positive);
    assert_eq!(classify("email_sent"), Class::Outbound);
    assert_eq!(classify("support_ticket"), Class::Support);
    assert_eq!(classify("ticket_resolved"), Class::Neutral);
    assert!(is_purchase("order_completed") && !is_purchase("refund_paid"));
}

#[test]
fn recent_intent_scores_above_a_dormant_customer() {
    let (_dir, graph) = open_graph();
    two_customers(&graph);
    let hot = with_customer(&graph, "hot@x.io", |w, c| assess(w, c, now()));
    let cold = with_customer(&graph, "cold@x.io", |w, c| assess(w, c, now()));
    assert!(
        hot.conversion.probability > cold.conversion.probability,
        "{hot:?} {cold:?}"
    );
    assert!(hot.churn.probability < cold.churn.probability);
    assert_eq!(hot.features.intent_signals_7d, 2, "{:?}", hot.features);
    assert_eq!(hot.features.touchpoints_30d, 4);
    assert!(cold.features.purchased);
    assert_eq!(band(cold.churn.probability), "high");
    assert_eq!(band(hot.churn.probability), "low");
    assert_eq!(band(hot.conversion.probability), "high");
}

#[test]
fn outbound_actions_are_not_customer_activity() {
    let (_dir, graph) = open_graph();
    track(&graph, "q@x.io", "page_viewed", 120.0, json!({}));
    let before = with_customer(&graph, "q@x.io", |w, c| churn(&test_ids(), w, c, now()));
    track(&graph, "q@x.io", "email_sent", 0.5, json!({}));
    let after = with_customer(&graph, "q@x.io", |w, c| churn(&test_ids(), w, c, now()));
    assert_eq!(before["score"], after["score"]);
}

#[test]
fn output_names_the_prior_and_its_top_factors_and_validates() {
    let (_dir, graph) = open_graph();
    two_customers(&graph);
    for email in ["hot@x.io", "cold@x.io"] {
        let c = with_customer(&graph, email, |w, c| churn(&test_ids(), w, c, now()));
        let v = with_customer(&graph, email, |w, c| conversion(&test_ids(), w, c, now()));
        for out in [&c, &v] {
            validates(&output_schema(), out);
            assert_eq!(out["model"]["version"], PRIOR_VERSION);
            assert_eq!(out["model"]["trained_on"], 0);
            let factors = out["factors"].as_array().expect("factors");
            assert!(!factors.is_empty() && factors.len() <= FACTORS_LISTED);
            let sizes: Vec<f64> = factors
                .iter()
                .map(|f| f["contribution"].as_f64().expect("number").abs())
                .collect();
            assert!(sizes.windows(2).all(|p| p[0] >= p[1]), "{sizes:?}");
        }
    }
    let (input, output) = example();
    validates(&input_schema(), &input);
    validates(&output_schema(), &output);
    validates(&input_schema(), &json!({"customer": "cus_1"}));
    let bad = jsonschema::draft202012::new(&input_schema()).expect("schema");
    assert!(!bad.is_valid(&json!({"customer": "cus_1", "extra": 1})));
}

#[test]
fn the_probability_is_the_logistic_of_the_summed_contributions() {
    let (_dir, graph) = open_graph();
    two_customers(&graph);
    let a = with_customer(&graph, "hot@x.io", |w, c| assess(w, c, now()));
    let z = CONVERSION_PRIOR.bias + a.conversion.factors.iter().map(|f| f.2).sum::<f64>();
    assert!((a.conversion.probability - 1.0 / (1.0 + (-z).exp())).abs() < 1e-12);
}

#[test]
fn open_loops_close_on_a_later_closing_verb_and_suppression_needs_no_resubscribe() {
    let t = |id: u64, action: &str| Touch {
        id: NodeId(id),
        action: action.into(),
        channel: None,
        campaign: None,
        ts: Some(id as i64),
        properties: BTreeMap::new(),
    };
    let tps = vec![
        t(1, "demo_requested"),
        t(2, "ticket_opened"),
        t(3, "demo_scheduled"),
    ];
    let open: Vec<&str> = open_loops(&tps).iter().map(|t| t.action.as_str()).collect();
    assert_eq!(open, vec!["ticket_opened"]);
    let c = Node {
        id: NodeId(9),
        labels: vec!["Customer".into()],
        properties: Default::default(),
    };
    assert!(is_suppressed(&c, &[t(1, "unsubscribed")]));
    assert!(!is_suppressed(
        &c,
        &[t(1, "unsubscribed"), t(2, "resubscribed")]
    ));
    assert!(!is_suppressed(&c, &tps));
}
