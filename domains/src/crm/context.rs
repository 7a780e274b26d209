//! `context.get`: a customer's current picture (lifecycle stage, 30-day sentiment trajectory,
//! intent signals, open loops, blockers, recent agent decisions) from its touchpoints, its
//! opportunities, memory notes and the action ledger. Sentiment scoring is `sentiment`'s; every
//! item drawn from a touchpoint names it (`touchpoint_id`).

use serde_json::{json, Value};
use svc_core::store::WorkspaceTxn;
use svc_engine::{Direction, GraphRead, Node, NodeId};
use time::OffsetDateTime;

use super::memory::notes_of;
use super::sentiment::{self, Score};
use super::{customer_label, find_customer, micros_of, micros_rfc3339, prop_str, DAY_US};
use crate::pipeline::{self, Status};
use svc_core::capabilities;
use svc_core::error::Result;
use svc_core::ledger;
use svc_core::plumbing::ids::PublicIds;

/// A touchpoint as context.get reads it.
struct Tp {
    id: NodeId,
    action: String,
    ts: i64,
    score: Option<Score>,
    intent: Option<String>,
    /// The customer's own words, when the event carries them.
    text: Option<String>,
}

impl Tp {
    fn touchpoint_id(&self, ids: &PublicIds) -> String {
        ids.touchpoint(self.id)
    }
    fn is_positive(&self) -> bool {
        self.score.is_some_and(|s| s.is_positive())
    }
    fn is_negative(&self) -> bool {
        self.score.is_some_and(|s| s.is_negative())
    }
    /// The words a blocker or trigger quotes: the text's excerpt, else the event name.
    fn label(&self) -> String {
        self.text
            .as_deref()
            .map(sentiment::excerpt)
            .unwrap_or_else(|| self.action.clone())
    }
}

fn explicit_sentiment(v: Option<&svc_engine::Value>) -> Option<f64> {
    match v? {
        svc_engine::Value::Int(i) => Some((*i as f64).clamp(-1.0, 1.0)),
        svc_engine::Value::Float(f) if f.is_finite() => Some(*f),
        svc_engine::Value::String(s) => match s.as_str() {
            "positive" => Some(1.0),
            "negative" => Some(-1.0),
            _ => Some(0.0),
        },
        _ => None,
    }
}

fn text_of(props: Option<&svc_engine::Properties>) -> Option<String> {
    let props = props?;
    let parts: Vec<&str> = sentiment::TEXT_KEYS
        .iter()
        .filter_map(|k| match props.get(*k) {
            Some(svc_engine::Value::String(s)) if !s.trim().is_empty() => Some(s.trim()),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(". "))
}

/// The customer's touchpoints, oldest first; only those from `scored_since` on are scored
/// (nothing older is read for sentiment, and scoring text is the costly part).
fn touchpoints(w: &WorkspaceTxn<'_, '_>, customer: NodeId, scored_since: i64) -> Result<Vec<Tp>> {
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
        let in_window = ts >= scored_since;
        let explicit = explicit_sentiment(props.and_then(|m| m.get("sentiment")));
        let intent = props.and_then(|m| match m.get("intent") {
            Some(svc_engine::Value::String(s)) if !s.is_empty() => Some(s.clone()),
            _ => None,
        });
        let text = text_of(props);
        out.push(Tp {
            id: node.id,
            score: in_window
                .then(|| sentiment::score(explicit, text.as_deref(), keyword_sentiment(&action)))
                .flatten(),
            action,
            ts,
            intent,
            text,
        });
    }
    out.sort_by_key(|t| (t.ts, t.id));
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
/// Phrases in a customer's words that signal buying intent (`<action>: <phrase>` signals).
const TEXT_INTENT: &[&str] = &[
    "pricing",
    "quote",
    "demo",
    "trial",
    "upgrade",
    "contract",
    "proposal",
    "purchase",
    "more seats",
    "licenses",
    "renewal",
    "budget approved",
    "ready to buy",
    "sign up",
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

/// The context of the customer `reference` names, as of `now`; also its customer id.
pub fn get(
    ids: &PublicIds,
    w: &WorkspaceTxn<'_, '_>,
    reference: &str,
    now: OffsetDateTime,
) -> Result<(Value, String)> {
    let customer = find_customer(ids, w, reference)?;
    let customer_id = ids.customer(customer.id);
    // Notes and ledger rows keep the id they were written with.
    let references = ids.customer_references(customer.id);
    let now_us = micros_of(now);
    let window_start = now_us - 30 * DAY_US;
    let tps = touchpoints(w, customer.id, window_start)?;
    let notes = notes_of(w, &references)?;
    // The customer's own recent activity: what we sent them says nothing of their intent,
    // sentiment or engagement.
    let recent: Vec<&Tp> = tps
        .iter()
        .filter(|t| t.ts >= window_start && !crate::events::activity::is_outbound(&t.action))
        .collect();

    // Sentiment: dated scores of the window, the last 15 days against the 15 before.
    let dated: Vec<(i64, f64)> = recent
        .iter()
        .filter_map(|t| t.score.map(|s| (t.ts, s.value)))
        .collect();
    let (direction, recent_score, prior_score) = sentiment::direction(&dated, now_us);
    let trigger = recent.iter().rev().find(|t| match direction {
        "improving" => t.is_positive(),
        "declining" => t.is_negative(),
        _ => t.is_positive() || t.is_negative(),
    });
    let evidence: Vec<Value> = recent
        .iter()
        .rev()
        .filter_map(|t| {
            let s = t.score?;
            Some(
                json!({"touchpoint_id": t.touchpoint_id(ids), "ts": micros_rfc3339(t.ts),
                "score": (s.value * 1000.0).round() / 1000.0, "source": s.source.as_str(),
                "text": t.label()}),
            )
        })
        .take(EVIDENCE_LISTED)
        .collect();

    // Intent: distinct recent intent-bearing actions, explicit `intent` properties and intent
    // phrases in the customer's words, newest first; `intent_evidence` names the touchpoints.
    let mut intent_signals: Vec<String> = Vec::new();
    let mut intent_evidence: Vec<Value> = Vec::new();
    for t in recent.iter().rev() {
        let from_text = t.text.as_deref().and_then(|text| {
            let lower = text.to_ascii_lowercase();
            TEXT_INTENT
                .iter()
                .find(|p| lower.contains(*p))
                .map(|p| format!("{}: {p}", t.action))
        });
        let signal = t
            .intent
            .clone()
            .or_else(|| has_any(&t.action, INTENT).then(|| t.action.clone()))
            .or(from_text);
        if let Some(s) = signal {
            if !intent_signals.contains(&s) && intent_signals.len() < 20 {
                intent_evidence.push(json!({"signal": s, "touchpoint_id": t.touchpoint_id(ids),
                    "ts": micros_rfc3339(t.ts)}));
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
            open_loops.push(json!({"kind": "touchpoint", "text": t.action,
                "since": micros_rfc3339(t.ts), "touchpoint_id": t.touchpoint_id(ids)}));
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
    // Negative evidence of the window after the last positive one is a blocker too: a
    // negative event, or words VADER scores at or below -0.3 (quoted).
    let last_positive = recent
        .iter()
        .rposition(|t| t.is_positive())
        .map_or(0, |p| p + 1);
    for t in &recent[last_positive..] {
        if t.is_negative() {
            blockers.push(json!({"kind": "touchpoint", "text": t.label(),
                "since": micros_rfc3339(t.ts), "touchpoint_id": t.touchpoint_id(ids)}));
        }
    }

    // Decisions: side-effecting invocations on this customer (the ledger) and decision notes.
    let mut decisions: Vec<Value> = Vec::new();
    for row in ledger::rows_for_customer(w, &references)? {
        // Recorded observations (events.ingest) are history, not decisions.
        if capabilities::is_decision(&row.capability) && row.status != "preview" {
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

    let statuses: Vec<Status> = pipeline::of_customer(w, customer.id)?
        .iter()
        .map(|o| pipeline::status_of(w, o))
        .collect::<Result<_>>()?;
    let stage = lifecycle_stage(
        &customer,
        &tps,
        &statuses,
        recent.len(),
        direction,
        !blockers.is_empty(),
    );
    let last_seen = match customer.properties.get("lastSeen") {
        Some(svc_engine::Value::DateTime(us)) => Some(micros_rfc3339(*us)),
        _ => None,
    };
    let result = json!({
        "customer": customer_label(ids, &customer),
        "customer_id": customer_id,
        "lifecycle_stage": stage,
        "sentiment_trajectory": {
            "window_days": 30,
            "direction": direction,
            "trigger": trigger.map(|t| t.action.clone()),
            "trigger_touchpoint_id": trigger.map(|t| t.touchpoint_id(ids)),
            "recent_score": recent_score.unwrap_or(0.0),
            "prior_score": prior_score.unwrap_or(0.0),
            "method": "vader-compound-15d-halves",
            "evidence": evidence,
        },
        "intent_signals": intent_signals,
        "intent_evidence": intent_evidence,
        "open_loops": open_loops,
        "blockers": blockers,
        "recent_decisions": decisions,
        "touchpoint_count": tps.len(),
        "last_seen": last_seen,
    });
    Ok((result, customer_id))
}

/// Evidence items listed in the sentiment trajectory (newest first).
const EVIDENCE_LISTED: usize = 20;

const STAGES: &[&str] = &[
    "lead",
    "engaged",
    "opportunity",
    "customer",
    "at_risk",
    "churned",
];

/// The stage: an explicit `lifecycle_stage` on the customer; else from its opportunities (a
/// won one makes a customer, an open one an opportunity) and its events (purchases and
/// cancellations, opportunity-like actions, activity).
fn lifecycle_stage(
    customer: &Node,
    tps: &[Tp],
    opportunities: &[Status],
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
    let won = opportunities.contains(&Status::Won);
    let open = opportunities.contains(&Status::Open);
    let purchase = last(PURCHASE);
    match (purchase, last(CHURN)) {
        (Some(p), Some(c)) if c > p && !open => "churned",
        (None, Some(_)) if won && !open => "churned",
        _ if (purchase.is_some() || won) && (direction == "declining" || blocked) => "at_risk",
        _ if purchase.is_some() || won => "customer",
        _ if open || last(OPPORTUNITY).is_some() => "opportunity",
        _ if recent >= 3 => "engaged",
        _ => "lead",
    }
}
