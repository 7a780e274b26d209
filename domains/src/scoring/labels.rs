//! Time-split examples: a customer's features as of a cut-off T (from what happened before T
//! only) and its outcomes in [T, T + horizon).
//!
//! - conversion: a purchase (or renewal, order, won deal: [`is_purchase`]) or an opportunity
//!   moving to won within the window; labelled for every customer active before T;
//! - churn: no own activity within the window; labelled only for customers active in the
//!   `horizon` days before T (churn means going quiet after being active).
//!
//! Opportunities as of T: a node's current stage is what happened up to now, which would leak
//! the outcome, so the state at T is replayed from the `opportunity_stage_changed` touchpoints
//! before T (their `opportunityId`, `stage`, `status`, `amount` properties); an opportunity
//! without such history counts from its first touchpoint only when there is one, and is left
//! out otherwise.

use std::collections::BTreeMap;

use svc_engine::{Node, Value};

use super::{
    classify, features, is_purchase, Class, Features, Neighbourhood, Opportunity, Touch, DAY_US,
};
use time::OffsetDateTime;

/// The action of an opportunity's stage change (written by the pipeline).
pub const STAGE_CHANGED: &str = "opportunity_stage_changed";

/// One customer's example at a cut-off.
#[derive(Clone, Debug, PartialEq)]
pub struct Example {
    pub features: Features,
    pub converted: bool,
    /// `None` when the customer was not active in the horizon before the cut-off.
    pub churned: Option<bool>,
}

fn micros_of(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX)
}

fn own(t: &Touch) -> bool {
    classify(&t.action) != Class::Outbound
}

fn prop_f64(t: &Touch, key: &str) -> Option<f64> {
    match t.properties.get(key)? {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) if f.is_finite() => Some(*f),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn is_won_change(t: &Touch) -> bool {
    t.action == STAGE_CHANGED
        && (t.prop_str("status") == Some("won")
            || t.prop_str("stage")
                .is_some_and(|s| s.to_ascii_lowercase().contains("won")))
}

/// The neighbourhood as it stood at `cutoff_us`: touchpoints before it, opportunities replayed
/// from their stage changes before it.
pub fn as_of(n: &Neighbourhood, cutoff_us: i64) -> Neighbourhood {
    let touchpoints: Vec<Touch> = n
        .touchpoints
        .iter()
        .filter(|t| t.ts.is_some_and(|ts| ts < cutoff_us))
        .cloned()
        .collect();
    let mut replayed: BTreeMap<String, Opportunity> = BTreeMap::new();
    for t in touchpoints.iter().filter(|t| t.action == STAGE_CHANGED) {
        let key = t
            .prop_str("opportunityId")
            .or_else(|| t.prop_str("name"))
            .unwrap_or("")
            .to_owned();
        let entry = replayed.entry(key).or_insert_with(|| Opportunity {
            id: t.id,
            name: t.prop_str("name").map(str::to_owned),
            stage: None,
            amount: None,
            progress: None,
            status: None,
        });
        let status = t.prop_str("status");
        let stage = t.prop_str("stage").or(t.prop_str("to_stage"));
        if let Some(s) = stage {
            entry.stage = Some(s.to_owned());
        }
        if let Some(s) = status {
            entry.status = Some(s.to_ascii_lowercase());
        }
        entry.amount = prop_f64(t, "amount").or(entry.amount);
        entry.progress = prop_f64(t, "progress")
            .map(|p| if p > 1.0 { p / 100.0 } else { p }.clamp(0.0, 1.0))
            .or(entry.progress);
    }
    Neighbourhood {
        total_touchpoints: touchpoints.len(),
        touchpoints,
        opportunities: replayed.into_values().collect(),
    }
}

/// The example of `customer` at `cutoff` with a `horizon_days` window; `None` when the
/// customer had no own activity before the cut-off (nothing to predict from).
pub fn example(
    customer: &Node,
    n: &Neighbourhood,
    cutoff: OffsetDateTime,
    horizon_days: u32,
) -> Option<Example> {
    let t = micros_of(cutoff);
    let end = t.saturating_add(i64::from(horizon_days) * DAY_US);
    let last_before = n
        .touchpoints
        .iter()
        .filter(|x| own(x))
        .filter_map(|x| x.ts)
        .filter(|ts| *ts < t)
        .max()?;
    let window: Vec<&Touch> = n
        .touchpoints
        .iter()
        .filter(|x| own(x) && x.ts.is_some_and(|ts| ts >= t && ts < end))
        .collect();
    let converted = window
        .iter()
        .any(|x| is_purchase(&x.action) || is_won_change(x));
    let active_before = t.saturating_sub(last_before) < i64::from(horizon_days) * DAY_US;
    let churned = active_before.then_some(window.is_empty());
    // `firstSeen` is the first touchpoint, which is before the cut-off: no leak.
    let past = as_of(n, t);
    Some(Example {
        features: features(customer, &past, cutoff),
        converted,
        churned,
    })
}
