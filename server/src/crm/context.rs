//! `context.get`: a customer's current picture (lifecycle stage, 30-day sentiment trajectory,
//! intent signals, open loops, blockers, recent agent decisions) from its touchpoints, memory
//! notes and the action ledger.

use serde_json::{json, Value};
use svc_engine::{Direction, GraphRead, Node, NodeId, WorkspaceTxn};
use time::OffsetDateTime;

use super::memory::notes_of;
use super::{customer_label, find_customer, micros_of, micros_rfc3339, prop_str, DAY_US};
use crate::error::Result;
use crate::gateway::registry;
use crate::ids;
use crate::ledger;

/// A touchpoint as context.get reads it.
struct Tp {
    action: String,
    ts: i64,
    sentiment: i8,
    intent: Option<String>,
}

fn touchpoints(w: &WorkspaceTxn<'_, '_>, customer: NodeId) -> Result<Vec<Tp>> {
    let mut out = Vec::new();
    for adj in w.adjacent(
        customer,
        Direction::Outgoing,
        Some(svc_engine::schema::HAS_TOUCHPOINT),
    )? {
        let Some(node) = w.node(adj.neighbour)? else {
            continue;
        };
        let action = prop_str(&node, "action").unwrap_or_default().to_owned();
        let ts = match node.properties.get("ts") {
            Some(svc_engine::Value::DateTime(us)) => *us,
            _ => 0,
        };
        let props = match node.properties.get("properties") {
            Some(svc_engine::Value::Map(m)) => Some(m),
            _ => None,
        };
        let explicit = props.and_then(|m| match m.get("sentiment") {
            Some(svc_engine::Value::Int(i)) => Some((*i).signum() as i8),
            Some(svc_engine::Value::Float(f)) if *f > 0.1 => Some(1),
            Some(svc_engine::Value::Float(f)) if *f < -0.1 => Some(-1),
            Some(svc_engine::Value::Float(_)) => Some(0),
            Some(svc_engine::Value::String(s)) => match s.as_str() {
                "positive" => Some(1),
                "negative" => Some(-1),
                _ => Some(0),
            },
            _ => None,
        });
        let intent = props.and_then(|m| match m.get("intent") {
            Some(svc_engine::Value::String(s)) if !s.is_empty() => Some(s.clone()),
            _ => None,
        });
        out.push(Tp {
            sentiment: explicit.unwrap_or_else(|| keyword_sentiment(&action)),
            action,
            ts,
            intent,
        });
    }
    out.sort_by_key(|t| t.ts);
    Ok(out)
}

const POSITIVE: &[&str] = &[
    "purchase",
    "paid",
    "upgrade",
    "renew",
    "reply_positive",
    "meeting_booked",
    "demo_completed",
    "promoter",
    "praise",
    "activated",
    "converted",
    "won",
];
const NEGATIVE: &[&str] = &[
    "complaint",
    "cancel",
    "churn",
    "unsubscribe",
    "bounce",
    "refund",
    "downgrade",
    "payment_failed",
    "detractor",
    "negative",
    "escalat",
    "lost",
];
const INTENT: &[&str] = &[
    "pricing",
    "demo",
    "trial",
    "quote",
    "checkout",
    "signup",
    "sign_up",
    "contact_sales",
    "upgrade",
    "proposal",
    "cart",
];
const PURCHASE: &[&str] = &[
    "purchase",
    "paid",
    "subscri",
    "order_completed",
    "converted",
    "won",
    "renew",
];
const CHURN: &[&str] = &["cancel", "churn"];
const OPPORTUNITY: &[&str] = &[
    "demo",
    "trial",
    "quote",
    "proposal",
    "meeting",
    "contact_sales",
];
const LOOP_OPEN: &[&str] = &["requested", "opened", "asked", "started"];
const LOOP_CLOSE: &[&str] = &[
    "completed",
    "closed",
    "resolved",
    "scheduled",
    "booked",
    "answered",
    "finished",
    "cancelled",
];

fn has_any(action: &str, words: &[&str]) -> bool {
    let a = action.to_ascii_lowercase();
    words.iter().any(|w| a.contains(w))
}

fn keyword_sentiment(action: &str) -> i8 {
    // Negative first: "cancelled_upgrade" is bad news.
    if has_any(action, NEGATIVE) {
        -1
    } else if has_any(action, POSITIVE) {
        1
    } else {
        0
    }
}

/// `demo_requested` -> ("demo", "requested").
fn stem_and_suffix(action: &str) -> Option<(&str, &str)> {
    action.rsplit_once('_')
}

fn average(scores: impl Iterator<Item = i8>) -> Option<f64> {
    let (mut sum, mut n) = (0i64, 0i64);
    for s in scores.filter(|s| *s != 0) {
        sum += i64::from(s);
        n += 1;
    }
    (n > 0).then(|| sum as f64 / n as f64)
}

/// The context of the customer `reference` names, as of `now`; also its customer id.
pub fn get(
    w: &WorkspaceTxn<'_, '_>,
    reference: &str,
    now: OffsetDateTime,
) -> Result<(Value, String)> {
    let customer = find_customer(w, reference)?;
    let customer_id = ids::customer_id(customer.id);
    let tps = touchpoints(w, customer.id)?;
    let notes = notes_of(w, &customer_id)?;
    let now_us = micros_of(now);
    let window_start = now_us - 30 * DAY_US;
    let half = now_us - 15 * DAY_US;
    let recent: Vec<&Tp> = tps.iter().filter(|t| t.ts >= window_start).collect();

    // Sentiment: the last 15 days against the 15 before, over events that carry a sentiment.
    let recent_score = average(recent.iter().filter(|t| t.ts >= half).map(|t| t.sentiment));
    let prior_score = average(recent.iter().filter(|t| t.ts < half).map(|t| t.sentiment));
    let delta = recent_score.unwrap_or(0.0) - prior_score.unwrap_or(0.0);
    let direction = if delta > 0.25 {
        "improving"
    } else if delta < -0.25 {
        "declining"
    } else {
        "stable"
    };
    let wanted: i8 = match direction {
        "improving" => 1,
        "declining" => -1,
        _ => 0,
    };
    let trigger = recent
        .iter()
        .rev()
        .find(|t| t.sentiment != 0 && (wanted == 0 || t.sentiment == wanted))
        .map(|t| t.action.clone());

    // Intent: distinct recent intent-bearing actions (and explicit `intent` properties), newest
    // first.
    let mut intent_signals: Vec<String> = Vec::new();
    for t in recent.iter().rev() {
        let signal = t
            .intent
            .clone()
            .or_else(|| has_any(&t.action, INTENT).then(|| t.action.clone()));
        if let Some(s) = signal {
            if !intent_signals.contains(&s) && intent_signals.len() < 20 {
                intent_signals.push(s);
            }
        }
    }

    // Open loops: an `<x>_requested` / `<x>_opened` not followed by a closing `<x>_...`.
    let mut open_loops: Vec<Value> = Vec::new();
    for (i, t) in tps.iter().enumerate() {
        let Some((stem, suffix)) = stem_and_suffix(&t.action) else {
            continue;
        };
        if !LOOP_OPEN.contains(&suffix) {
            continue;
        }
        let closed = tps[i + 1..].iter().any(|later| {
            stem_and_suffix(&later.action)
                .is_some_and(|(s, x)| s == stem && LOOP_CLOSE.contains(&x))
        });
        if !closed {
            open_loops.push(
                json!({"kind": "touchpoint", "text": t.action, "since": micros_rfc3339(t.ts)}),
            );
        }
    }
    let mut blockers: Vec<Value> = Vec::new();
    for n in &notes {
        let item = json!({"kind": "memory", "text": n.text, "since": n.created_at});
        match n.kind.as_str() {
            "open_loop" => open_loops.push(item),
            "blocker" => blockers.push(item),
            _ => {}
        }
    }
    // Negative events of the window after the last positive one are blockers too.
    let last_positive = recent
        .iter()
        .rposition(|t| t.sentiment > 0)
        .map_or(0, |p| p + 1);
    for t in &recent[last_positive..] {
        if t.sentiment < 0 {
            blockers.push(
                json!({"kind": "touchpoint", "text": t.action, "since": micros_rfc3339(t.ts)}),
            );
        }
    }

    // Decisions: side-effecting invocations on this customer (the ledger) and decision notes.
    let mut decisions: Vec<Value> = Vec::new();
    for row in ledger::rows_for_customer(w, &customer_id)? {
        // Recorded observations (events.ingest) are history, not decisions.
        if registry::is_decision(&row.capability) && row.status != "preview" {
            decisions.push(json!({"agent": row.agent, "action": row.capability,
                "outcome": row.status, "ts": row.created_at}));
        }
    }
    for n in notes.iter().filter(|n| n.kind == "decision") {
        decisions.push(
            json!({"agent": n.agent, "action": n.text, "outcome": "recorded",
            "ts": n.created_at}),
        );
    }
    decisions.sort_by(|a, b| b["ts"].as_str().cmp(&a["ts"].as_str()));
    decisions.truncate(10);

    let stage = lifecycle_stage(
        &customer,
        &tps,
        recent.len(),
        direction,
        !blockers.is_empty(),
    );
    let last_seen = match customer.properties.get("lastSeen") {
        Some(svc_engine::Value::DateTime(us)) => Some(micros_rfc3339(*us)),
        _ => None,
    };
    let result = json!({
        "customer": customer_label(&customer),
        "customer_id": customer_id,
        "lifecycle_stage": stage,
        "sentiment_trajectory": {
            "window_days": 30,
            "direction": direction,
            "trigger": trigger,
            "recent_score": recent_score.unwrap_or(0.0),
            "prior_score": prior_score.unwrap_or(0.0),
        },
        "intent_signals": intent_signals,
        "open_loops": open_loops,
        "blockers": blockers,
        "recent_decisions": decisions,
        "touchpoint_count": tps.len(),
        "last_seen": last_seen,
    });
    Ok((result, customer_id))
}

const STAGES: &[&str] = &[
    "lead",
    "engaged",
    "opportunity",
    "customer",
    "at_risk",
    "churned",
];

fn lifecycle_stage(
    customer: &Node,
    tps: &[Tp],
    recent: usize,
    direction: &str,
    blocked: bool,
) -> &'static str {
    // An explicit stage on the customer (set by a CRM sync or crm.mutate) wins.
    if let Some(s) =
        prop_str(customer, "lifecycleStage").or_else(|| prop_str(customer, "lifecycle_stage"))
    {
        if let Some(known) = STAGES.iter().find(|k| **k == s) {
            return known;
        }
    }
    let last = |words: &[&str]| tps.iter().rposition(|t| has_any(&t.action, words));
    match (last(PURCHASE), last(CHURN)) {
        (_, Some(c)) if last(PURCHASE).is_none_or(|p| c > p) && last(PURCHASE).is_some() => {
            "churned"
        }
        (Some(_), _) if direction == "declining" || blocked => "at_risk",
        (Some(_), _) => "customer",
        (None, _) if last(OPPORTUNITY).is_some() => "opportunity",
        _ if recent >= 3 => "engaged",
        _ => "lead",
    }
}
