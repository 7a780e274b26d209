//! Tests of `plan.goal`: goal interpretation, situations and the steps they give.

use super::*;
use crate::scoring::tests::{now, open_graph, test_ids, track, two_customers, with_customer};
use svc_core::capabilities::Capability;
use svc_engine::Graph;

fn planned(graph: &Graph, email: Option<&str>, input: Json) -> Json {
    let brand = BrandContext {
        business_name: Some("Acme".into()),
        ..BrandContext::default()
    };
    match email {
        Some(e) => with_customer(graph, e, move |w, c| {
            plan(
                &test_ids(),
                w,
                &brand,
                Some(c),
                &input,
                now(),
                &Means::unlimited(),
            )
        }),
        None => graph
            .write(move |tx| {
                plan(
                    &test_ids(),
                    &tx.workspace(crate::scoring::tests::WS),
                    &brand,
                    None,
                    &input,
                    now(),
                    &Means::unlimited(),
                )
            })
            .expect("plan"),
    }
}

fn capabilities(out: &Json) -> Vec<&str> {
    out["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["capability"].as_str())
        .collect()
}

fn validates(schema: &Json, instance: &Json) {
    let v = jsonschema::draft202012::new(schema).expect("schema compiles");
    let errors: Vec<String> = v.iter_errors(instance).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?} in {instance}");
}

#[test]
fn goals_are_interpreted_from_words_unless_given() {
    let i = interpret("book 5 demos in 3 weeks", None, None, None);
    assert_eq!(
        (i.metric, i.target, i.horizon_days),
        (Metric::MeetingBooked, Some(5.0), 21)
    );
    let i = interpret("lift reply rate to 20% this quarter", None, None, None);
    assert_eq!(
        (i.metric, i.target, i.horizon_days),
        (Metric::ReplyRate, Some(0.2), 90)
    );
    let i = interpret("add $50k pipeline", None, None, Some(400));
    assert_eq!(
        (i.metric, i.target, i.horizon_days),
        (Metric::PipelineArr, Some(50_000.0), 365)
    );
    let i = interpret("grow", Some(Metric::Retention), Some(0.9), Some(10));
    assert_eq!(
        (i.metric, i.target, i.horizon_days),
        (Metric::Retention, Some(0.9), 10)
    );
    assert_eq!(
        interpret("more customers", None, None, None).metric,
        Metric::Conversion
    );
}

#[test]
fn an_at_risk_customer_gets_a_win_back_email_ready_to_queue() {
    let (_dir, graph) = open_graph();
    two_customers(&graph);
    let out = planned(
        &graph,
        Some("cold@x.io"),
        json!({"goal": "reduce churn among our customers"}),
    );
    validates(&output_schema(), &out);
    assert_eq!(
        capabilities(&out),
        vec![
            Capability::ContextGet.id(),
            Capability::DraftOutreach.id(),
            Capability::QueueOutreach.id()
        ]
    );
    let steps = out["steps"].as_array().expect("steps");
    assert_eq!(steps[1]["input"]["intent"], "win-back");
    validates(&draft::input_schema(), &steps[1]["input"]);
    assert_eq!(steps[2]["mode"], "queue");
    assert!(steps[2]["input"]["body"]
        .as_str()
        .is_some_and(|b| b.contains("It's been a while since you visited our website")));
    assert_eq!(out["interpreted"]["metric"], "retention");
    assert!(out["based_on"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("(high)")));
}

#[test]
fn a_hot_lead_with_a_phone_gets_a_demo_email_and_a_call() {
    let (_dir, graph) = open_graph();
    two_customers(&graph);
    track(
        &graph,
        "hot@x.io",
        "identify",
        0.5,
        json!({"phone": "+14155550100"}),
    );
    let out = planned(
        &graph,
        Some("hot@x.io"),
        json!({"goal": "book 5 demos in 3 weeks"}),
    );
    validates(&output_schema(), &out);
    assert_eq!(
        capabilities(&out),
        vec![
            Capability::ContextGet.id(),
            Capability::DraftOutreach.id(),
            Capability::QueueOutreach.id(),
            Capability::QueueCall.id()
        ]
    );
    assert_eq!(out["steps"][1]["input"]["intent"], "demo");
    assert_eq!(out["interpreted"]["target"], 5.0);
    assert!(out["customer_id"]
        .as_str()
        .is_some_and(|c| c.starts_with("cus_")));
}

#[test]
fn a_suppressed_customer_is_never_contacted() {
    let (_dir, graph) = open_graph();
    two_customers(&graph);
    track(&graph, "hot@x.io", "unsubscribed", 0.2, json!({}));
    let out = planned(&graph, Some("hot@x.io"), json!({"goal": "convert"}));
    assert_eq!(
        capabilities(&out),
        vec![Capability::ContextGet.id(), Capability::MemoryWrite.id()]
    );
    // Nor chosen for a segment plan.
    let hot = with_customer(&graph, "hot@x.io", |_, c| Ok(test_ids().customer(c.id)));
    let out = planned(
        &graph,
        None,
        json!({"goal": "convert", "segment": "recency:active_7d"}),
    );
    validates(&output_schema(), &out);
    assert!(out["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .all(|s| s["input"]["customer"] != hot.as_str()));
}

#[test]
fn a_segment_plan_acts_on_the_best_scoring_customers() {
    let (_dir, graph) = open_graph();
    two_customers(&graph);
    let hot = with_customer(&graph, "hot@x.io", |_, c| Ok(test_ids().customer(c.id)));
    let out = planned(&graph, None, json!({"goal": "more conversions"}));
    validates(&output_schema(), &out);
    assert_eq!(out["steps"][0]["input"]["customer"], hot.as_str());
    assert!(out.get("customer_id").is_none());
    let err = with_customer(&graph, "hot@x.io", |w, _| {
        Ok(plan(
            &test_ids(),
            w,
            &BrandContext::default(),
            None,
            &json!({"goal": "x", "segment": "nope"}),
            now(),
            &Means::unlimited(),
        )
        .is_err())
    });
    assert!(err);
    let (input, output) = example();
    validates(&input_schema(), &input);
    validates(&output_schema(), &output);
}

#[test]
fn steps_are_priced_gated_and_cut_to_the_remaining_credits() {
    let (_dir, graph) = open_graph();
    two_customers(&graph);
    let plan_with = |means: Means| {
        with_customer(&graph, "cold@x.io", move |w, c| {
            plan(
                &test_ids(),
                w,
                &BrandContext::default(),
                Some(c),
                &json!({"goal": "reduce churn"}),
                now(),
                &means,
            )
        })
    };
    let full = plan_with(Means::unlimited());
    validates(&output_schema(), &full);
    let steps = full["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 3);
    let costs: Vec<u64> = steps
        .iter()
        .map(|s| s["credits"].as_u64().expect("credits"))
        .collect();
    let cost = |c: Capability| c.credit_cost();
    assert_eq!(
        costs,
        vec![
            cost(Capability::ContextGet),
            cost(Capability::DraftOutreach),
            cost(Capability::QueueOutreach)
        ]
    );
    assert_eq!(full["credits"]["needed"], json!(costs.iter().sum::<u64>()));
    assert_eq!(full["credits"]["remaining"], Json::Null);
    let approvals: Vec<&str> = steps
        .iter()
        .map(|s| s["approval"].as_str().expect("approval"))
        .collect();
    assert_eq!(approvals, vec!["none", "none", "required"]);
    assert_eq!(full["approvals_needed"], 1);
    assert_eq!(steps[2]["expected_effect"]["metric"], "retention");
    assert!(
        steps[2]["expected_effect"]["value"]
            .as_f64()
            .expect("value")
            > 0.0
    );
    assert_eq!(
        full["customers"][0]["why"], "named in the request",
        "{full}"
    );

    // Only what the credits cover, in order.
    let budget = costs[0] + costs[1];
    let cut = plan_with(Means {
        remaining_credits: budget,
        ..Means::unlimited()
    });
    validates(&output_schema(), &cut);
    assert_eq!(
        capabilities(&cut),
        vec![Capability::ContextGet.id(), Capability::DraftOutreach.id()]
    );
    assert_eq!(cut["credits"]["fits"], json!(false));
    assert_eq!(cut["credits"]["remaining"], json!(budget));
    assert_eq!(
        cut["credits"]["left_out"][0]["capability"],
        Capability::QueueOutreach.id()
    );
    assert_eq!(cut["approvals_needed"], 0);
}
