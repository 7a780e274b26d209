//! Time-split evaluation of the churn and conversion scores on a planted workload
//! (`tools/bench/propensity.py`).
//!
//! Ingests `events.jsonl` through the ingestion pipeline into a fresh store, then, with H the
//! horizon and END the last event's time:
//! - trains with features as of T1 = END - 2H and outcomes in [T1, T1 + H);
//! - evaluates with features as of T2 = END - H and outcomes in [T2, END), which the training
//!   never saw;
//! - compares the trained models with a recency-only baseline (logistic regression on
//!   ln(1 + days since last activity / 7), fitted the same way), with the fixed prior
//!   `prior-v1`, and with ranking by the planted latent traits (static traits: the timing of a
//!   churn, its fade, is observable in the features but not in the trait, so this is a
//!   reference, not a ceiling).
//!
//! `cargo run -p svc-server --example propensity_eval -- DIR [--horizon 30]` (debug build).

use std::collections::HashMap;
use std::io::BufRead;
use std::time::Instant;

use serde_json::Value as Json;
use svc_domains::events::{self, MarketingEvent};
use svc_domains::scoring::labels::{example, Example};
use svc_domains::scoring::trained::{auc, brier, Fitted};
use svc_domains::scoring::{neighbourhood, vector, CHURN_PRIOR, CONVERSION_PRIOR};
use svc_engine::schema::CUSTOMER;
use svc_engine::{Graph, GraphOptions, GraphRead, Value, WorkspaceId};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

const WS: WorkspaceId = WorkspaceId(1);
const BATCH: usize = 2000;

type Res<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = args
        .first()
        .ok_or("usage: propensity_eval DIR [--horizon DAYS]")?;
    let horizon: u32 = match args.iter().position(|a| a == "--horizon") {
        Some(i) => args.get(i + 1).ok_or("--horizon needs a value")?.parse()?,
        None => 30,
    };

    let truth = read_truth(&format!("{dir}/truth.jsonl"))?;
    let store = tempfile::tempdir()?;
    let graph = Graph::open(store.path(), GraphOptions::default())?;
    let started = Instant::now();
    let (count, end) = ingest(&graph, &format!("{dir}/events.jsonl"))?;
    let ingest_secs = started.elapsed().as_secs_f64();
    let h = time::Duration::days(i64::from(horizon));
    let (t1, t2) = (end - h - h, end - h);

    let started = Instant::now();
    let snap = graph.snapshot(WS);
    let mut train: Vec<Example> = Vec::new();
    let mut test: Vec<(Example, String)> = Vec::new();
    for id in snap.label_scan(CUSTOMER)? {
        let Some(c) = snap.node(id)? else { continue };
        let n = neighbourhood(&snap, &c)?;
        if let Some(e) = example(&c, &n, t1, horizon) {
            train.push(e);
        }
        if let Some(e) = example(&c, &n, t2, horizon) {
            let email = match c.get("email") {
                Some(Value::String(s)) => s.clone(),
                _ => String::new(),
            };
            test.push((e, email));
        }
    }
    let features_secs = started.elapsed().as_secs_f64();

    let names = vector::names();
    let recency = vec![names[0].clone()];
    let started = Instant::now();
    let mut rows = Vec::new();
    for which in ["churn", "conversion"] {
        let label = |e: &Example| -> Option<bool> {
            if which == "churn" {
                e.churned
            } else {
                Some(e.converted)
            }
        };
        let (xs, ys): (Vec<Vec<f64>>, Vec<bool>) = train
            .iter()
            .filter_map(|e| label(e).map(|y| (vector::vector(&e.features), y)))
            .unzip();
        let full = Fitted::fit(&names, &xs, &ys).map_err(|e| format!("{which}: {e}"))?;
        let rx: Vec<Vec<f64>> = xs.iter().map(|x| vec![x[0]]).collect();
        let base = Fitted::fit(&recency, &rx, &ys).map_err(|e| format!("{which}: {e}"))?;

        let held: Vec<&(Example, String)> =
            test.iter().filter(|(e, _)| label(e).is_some()).collect();
        let ty: Vec<bool> = held.iter().filter_map(|(e, _)| label(e)).collect();
        let tx: Vec<Vec<f64>> = held
            .iter()
            .map(|(e, _)| vector::vector(&e.features))
            .collect();
        let p_full: Vec<f64> = tx.iter().map(|x| full.probability(x)).collect();
        let p_base: Vec<f64> = tx.iter().map(|x| base.probability(&x[..1])).collect();
        let prior = if which == "churn" {
            CHURN_PRIOR
        } else {
            CONVERSION_PRIOR
        };
        let p_prior: Vec<f64> = held
            .iter()
            .map(|(e, _)| prior.score(&e.features).probability)
            .collect();
        let latent: Vec<f64> = held
            .iter()
            .map(|(_, email)| {
                let (engagement, intent) = truth.get(email).copied().unwrap_or((0.0, 0.0));
                if which == "churn" {
                    -engagement
                } else {
                    intent
                }
            })
            .collect();
        let rate = ty.iter().filter(|y| **y).count() as f64 / ty.len().max(1) as f64;
        rows.push(serde_json::json!({
            "score": which,
            "train_examples": ys.len(),
            "train_positives": ys.iter().filter(|y| **y).count(),
            "test_examples": ty.len(),
            "test_positive_rate": round(rate),
            "trained": {"auc": round(auc(&p_full, &ty)), "brier": round(brier(&p_full, &ty))},
            "recency_baseline": {"auc": round(auc(&p_base, &ty)),
                                 "brier": round(brier(&p_base, &ty))},
            "prior_v1": {"auc": round(auc(&p_prior, &ty)), "brier": round(brier(&p_prior, &ty))},
            "base_rate_brier": round(rate * (1.0 - rate)),
            "planted_latent_auc": round(auc(&latent, &ty)),
            "top_weights": top_weights(&full),
        }));
    }
    let train_secs = started.elapsed().as_secs_f64();

    println!("# propensity_eval {dir} (horizon {horizon} days)");
    println!(
        "events {count}, customers {}, train cut-off {}, test cut-off {}, end {}",
        snap.label_count(CUSTOMER)?,
        t1.format(&Rfc3339)?,
        t2.format(&Rfc3339)?,
        end.format(&Rfc3339)?
    );
    println!(
        "timings (debug build): ingest {ingest_secs:.1} s, features and labels {features_secs:.1} s, \
         fitting and scoring {train_secs:.1} s"
    );
    println!();
    println!("| score | model | AUC | Brier |");
    println!("|---|---|---|---|");
    for r in &rows {
        for (k, name) in [
            ("trained", "trained (lr)"),
            ("recency_baseline", "recency only"),
            ("prior_v1", "prior-v1"),
        ] {
            println!(
                "| {} | {name} | {} | {} |",
                r["score"].as_str().unwrap_or_default(),
                r[k]["auc"],
                r[k]["brier"]
            );
        }
    }
    println!();
    println!("{}", serde_json::to_string_pretty(&rows)?);
    Ok(())
}

fn round(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

fn top_weights(m: &Fitted) -> Json {
    let mut w: Vec<(&String, f64)> = m.features.iter().zip(m.weights.iter().copied()).collect();
    w.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
    w.iter()
        .take(6)
        .map(|(n, v)| serde_json::json!([n, round(*v)]))
        .collect()
}

fn read_truth(path: &str) -> Res<HashMap<String, (f64, f64)>> {
    let mut out = HashMap::new();
    for line in std::io::BufReader::new(std::fs::File::open(path)?).lines() {
        let v: Json = serde_json::from_str(&line?)?;
        let email = v["email"].as_str().unwrap_or_default().to_owned();
        out.insert(
            email,
            (
                v["engagement"].as_f64().unwrap_or(0.0),
                v["intent"].as_f64().unwrap_or(0.0),
            ),
        );
    }
    Ok(out)
}

/// Ingests every event; answers the count and the latest event time.
fn ingest(graph: &Graph, path: &str) -> Res<(usize, OffsetDateTime)> {
    let mut end = OffsetDateTime::UNIX_EPOCH;
    let mut batch = Vec::new();
    let mut count = 0;
    let lines: Vec<String> = std::io::BufReader::new(std::fs::File::open(path)?)
        .lines()
        .collect::<Result<_, _>>()?;
    for line in &lines {
        let v: Json = serde_json::from_str(line)?;
        if let Some(ts) = v["timestamp"].as_str() {
            end = end.max(OffsetDateTime::parse(ts, &Rfc3339)?);
        }
    }
    let now = end + time::Duration::seconds(1);
    // The data names customers by email, never by id: any key will do.
    let ids = svc_core::plumbing::ids::PublicIds::random(0);
    for line in lines {
        let ev = MarketingEvent::from_json(serde_json::from_str(&line)?)?.validate(&ids, now)?;
        batch.push(ev);
        if batch.len() == BATCH {
            count += flush(graph, std::mem::take(&mut batch), now)?;
        }
    }
    count += flush(graph, batch, now)?;
    Ok((count, now))
}

fn flush(graph: &Graph, batch: Vec<events::ValidEvent>, now: OffsetDateTime) -> Res<usize> {
    let n = batch.len();
    let ids = svc_core::plumbing::ids::PublicIds::random(0);
    graph.write(move |tx| {
        let mut w = tx.workspace(WS);
        for ev in &batch {
            events::apply(&ids, &mut w, ev, now)?;
        }
        Ok::<_, svc_core::Error>(())
    })?;
    Ok(n)
}
