//! Tests of the trained models: metrics, fitting, time-split labels, model choice.

use super::labels::{as_of, example};
use super::retrain::{fit, training_set};
use super::tests::{now, open_graph, track, with_customer, WS};
use super::trained::{auc, brier, Fitted, NotFitted, MIN_PER_CLASS};
use super::*;
use svc_engine::schema::CUSTOMER;

#[test]
fn auc_and_brier_have_their_textbook_values() {
    let s = [0.1, 0.4, 0.35, 0.8];
    let y = [false, false, true, true];
    assert!((auc(&s, &y) - 0.75).abs() < 1e-12);
    // Ties count half.
    assert!((auc(&[0.5, 0.5], &[true, false]) - 0.5).abs() < 1e-12);
    assert!((auc(&[0.9, 0.1], &[true, false]) - 1.0).abs() < 1e-12);
    let b = brier(&[0.9, 0.2], &[true, false]);
    assert!((b - (0.01 + 0.04) / 2.0).abs() < 1e-12);
}

/// Rows where the first column drives the label and the second is noise independent of it;
/// `rate` of them positive.
fn planted(n: usize, rate: f64) -> (Vec<Vec<f64>>, Vec<bool>) {
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for i in 0..n {
        let u = (i as f64 + 0.5) / n as f64;
        // Deterministic pseudo-noise in [-1, 1].
        let noise = ((i * 7919) % 1000) as f64 / 500.0 - 1.0;
        xs.push(vec![u * 4.0, noise, 1.0]);
        ys.push(u > 1.0 - rate);
    }
    (xs, ys)
}

#[test]
fn fitting_finds_the_planted_signal_whichever_class_is_larger() {
    let names: Vec<String> = ["signal", "noise", "constant"].map(String::from).to_vec();
    for rate in [0.2, 0.8] {
        let (xs, ys) = planted(400, rate);
        let m = Fitted::fit(&names, &xs, &ys).expect("fits");
        assert!(m.weights[0] > 1.0, "rate {rate}: {m:?}");
        assert!(m.weights[0].abs() > 5.0 * m.weights[1].abs(), "{m:?}");
        assert_eq!(m.weights[2], 0.0, "a constant column has no weight");
        assert!(m.train_auc > 0.9, "{m:?}");
        assert_eq!((m.trained_on, m.positives), (400, (400.0 * rate) as usize));
        // Calibrated: the mean probability is near the base rate.
        let mean = xs.iter().map(|x| m.probability(x)).sum::<f64>() / 400.0;
        assert!((mean - rate).abs() < 0.03, "{mean} vs {rate}");
        assert!(m.probability(&[4.0, 0.0, 1.0]) > m.probability(&[0.0, 0.0, 1.0]));
    }
}

#[test]
fn one_class_or_too_few_labels_is_not_fitted() {
    let names = vec!["x".to_owned()];
    let xs: Vec<Vec<f64>> = (0..100).map(|i| vec![f64::from(i)]).collect();
    let mut ys = vec![false; 100];
    assert!(matches!(
        Fitted::fit(&names, &xs, &ys),
        Err(NotFitted::TooFewLabels { positives: 0, .. })
    ));
    for y in ys.iter_mut().take(MIN_PER_CLASS - 1) {
        *y = true;
    }
    assert!(Fitted::fit(&names, &xs, &ys).is_err());
    ys[MIN_PER_CLASS - 1] = true;
    assert!(Fitted::fit(&names, &xs, &ys).is_ok());
}

#[test]
fn examples_use_only_the_past_for_features_and_the_window_for_labels() {
    let (_dir, graph) = open_graph();
    let cutoff = now() - time::Duration::days(30);
    // Active before the cut-off, buys after it.
    track(&graph, "buyer@x.io", "page_viewed", 50.0, json!({}));
    track(&graph, "buyer@x.io", "pricing_viewed", 35.0, json!({}));
    track(&graph, "buyer@x.io", "purchase", 10.0, json!({}));
    // Active before, silent after: churned.
    track(&graph, "quiet@x.io", "page_viewed", 40.0, json!({}));
    track(&graph, "quiet@x.io", "email_sent", 5.0, json!({}));
    // Last seen long before the cut-off: no churn label.
    track(&graph, "gone@x.io", "page_viewed", 200.0, json!({}));
    // Only seen after the cut-off: no example at all.
    track(&graph, "new@x.io", "signup", 3.0, json!({}));

    let ex = |email: &str| {
        with_customer(&graph, email, move |w, c| {
            let n = neighbourhood(w, c)?;
            Ok(example(c, &n, cutoff, 30))
        })
    };
    let buyer = ex("buyer@x.io").expect("example");
    assert!(buyer.converted);
    assert_eq!(buyer.churned, Some(false));
    assert!(
        !buyer.features.purchased,
        "the purchase is after the cut-off"
    );
    assert_eq!(buyer.features.touchpoints_30d, 2);
    assert_eq!(buyer.features.intent_signals_7d, 1);
    assert!((buyer.features.days_since_last_activity - 5.0).abs() < 1e-6);

    let quiet = ex("quiet@x.io").expect("example");
    assert_eq!((quiet.converted, quiet.churned), (false, Some(true)));
    let gone = ex("gone@x.io").expect("example");
    assert_eq!(gone.churned, None);
    assert!(ex("new@x.io").is_none());
}

#[test]
fn opportunities_as_of_the_cut_off_are_replayed_from_stage_changes() {
    let (_dir, graph) = open_graph();
    let change = |days: f64, stage: &str, status: &str| {
        track(
            &graph,
            "deal@x.io",
            labels::STAGE_CHANGED,
            days,
            json!({"properties": {"opportunityId": "o1", "stage": stage, "status": status,
                                  "amount": 12000}}),
        );
    };
    change(60.0, "proposal", "open");
    change(10.0, "closed won", "won");
    let (past, window) = with_customer(&graph, "deal@x.io", |w, c| {
        let n = neighbourhood(w, c)?;
        let cut = now() - time::Duration::days(30);
        let micros = i64::try_from(cut.unix_timestamp_nanos() / 1000).expect("fits");
        Ok((as_of(&n, micros), example(c, &n, cut, 30)))
    });
    assert_eq!(past.opportunities.len(), 1);
    assert_eq!(past.opportunities[0].stage.as_deref(), Some("proposal"));
    assert_eq!(past.opportunities[0].amount, Some(12000.0));
    let e = window.expect("example");
    assert!(e.converted, "won within the window");
    assert!(e.features.opportunity.open);
}

#[test]
fn a_trained_model_replaces_the_prior_and_says_so() {
    let (_dir, graph) = open_graph();
    // 60 engaged buyers and 60 one-visit browsers, all before the cut-off; buyers buy again.
    for i in 0..60 {
        let e = format!("b{i}@x.io");
        for d in [70.0, 55.0, 45.0, 35.0] {
            track(
                &graph,
                &e,
                "pricing_viewed",
                d - f64::from(i % 5),
                json!({}),
            );
        }
        track(&graph, &e, "purchase", 20.0, json!({}));
        let q = format!("q{i}@x.io");
        track(
            &graph,
            &q,
            "page_viewed",
            40.0 + f64::from(i % 7),
            json!({}),
        );
    }
    let model = graph
        .write(|tx| {
            let w = tx.workspace(WS);
            let ids = w.label_scan(CUSTOMER)?;
            let set = training_set(&w, &ids, now() - time::Duration::days(30), 30)?;
            Ok::<_, svc_core::error::Error>(fit(&set, now(), now() - time::Duration::days(30), 30))
        })
        .expect("train");
    assert_eq!(model.labelled, 120);
    let conv = model.conversion.clone().expect("conversion fitted");
    assert_eq!((conv.trained_on, conv.positives), (120, 60));
    assert!(conv.train_auc > 0.95, "{conv:?}");
    let models = Models(Some(ScoreModel {
        version: "lr-v1".into(),
        ..model
    }));
    let buyer = with_customer(&graph, "b1@x.io", move |w, c| {
        let m = models.clone();
        Ok((
            assess_with(w, c, now(), &m)?,
            m.score(
                Which::Conversion,
                &features(c, &neighbourhood(w, c)?, now()),
            ),
        ))
    });
    assert_eq!(buyer.0.conversion_model.kind, "trained");
    assert_eq!(buyer.0.conversion_model.version, "lr-v1");
    assert_eq!(buyer.0.conversion_model.trained_on, 120);
    let factors_sum: f64 = buyer.0.conversion.factors.iter().map(|f| f.2).sum();
    let z = conv.intercept + factors_sum;
    assert!((buyer.0.conversion.probability - 1.0 / (1.0 + (-z).exp())).abs() < 1e-6);
    let browser = with_customer(&graph, "q1@x.io", |w, c| assess(w, c, now()));
    assert_eq!(
        browser.conversion_model.kind, "prior",
        "no current record in the store"
    );
    assert!(browser
        .conversion_model
        .note
        .as_deref()
        .is_some_and(|n| n.contains("no trained model")));
}

#[test]
fn invocations_take_exactly_one_of_customer_list_or_segment_and_write_scores_back() {
    let (_dir, graph) = open_graph();
    super::tests::two_customers(&graph);
    let run = |input: Json, commit: bool| {
        graph.write(move |tx| {
            let mut w = tx.workspace(WS);
            invoke::run(
                &super::tests::test_ids(),
                &mut w,
                Which::Churn,
                &input,
                commit,
                now(),
            )
        })
    };
    for bad in [
        json!({}),
        json!({"customer": "hot@x.io", "segment": "recency:active_7d"}),
        json!({"customers": ["hot@x.io"], "limit": 3}),
    ] {
        let e = run(bad.clone(), false).expect_err("refused");
        assert_eq!(e.code, svc_core::error::Code::InvalidInput, "{bad}");
    }
    let (out, id) = run(json!({"segment": "recency:active_7d"}), false).expect("segment");
    assert_eq!((out["count"].as_u64(), id), (Some(1), None), "{out}");
    validates_output(&out);
    // A preview writes nothing; a committed score writes all three properties.
    let props = |g: &svc_engine::Graph| {
        with_customer(g, "hot@x.io", |_, c| {
            Ok([prop::CHURN_SCORE, prop::CONVERSION_SCORE, prop::SCORE].map(|k| c.get(k).cloned()))
        })
    };
    assert_eq!(props(&graph), [None, None, None]);
    let (single, id) = run(json!({"customer": "hot@x.io"}), true).expect("single");
    validates_output(&single);
    assert!(id.is_some_and(|i| i.starts_with("cus_")));
    let [churn, conversion, score] = props(&graph);
    assert_eq!(
        churn,
        Some(Value::Float(single["score"].as_f64().expect("score")))
    );
    assert!(matches!(conversion, Some(Value::Float(_))));
    assert_eq!(conversion, score);
}

fn validates_output(out: &Json) {
    let v = jsonschema::draft202012::new(&output_schema()).expect("schema");
    assert!(v.is_valid(out), "{out}");
}
