//! What an action means: the class of a touchpoint's action, purchases, suppression and
//! open loops.

use serde::Serialize;
use svc_engine::{Node, Value};

use super::Touch;

/// The class of a touchpoint's action, checked in this order (so `upgrade_cancelled` is
/// negative and `unsubscribed` is not a subscription).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Done by the service or an agent, not by the customer.
    Outbound,
    Negative,
    Support,
    /// High buying intent: pricing, demo, trial, quote, checkout...
    Intent,
    /// Other positive engagement: purchase, reply, meeting booked, activation...
    Positive,
    Neutral,
}

const NEGATIVE: &[&str] = &[
    "unsubscribe",
    "complaint",
    "cancel",
    "churn",
    "bounce",
    "spam",
    "refund",
    "downgrade",
    "payment_failed",
    "detractor",
    "negative",
    "escalat",
    "lost",
];
const SUPPORT: &[&str] = &["ticket", "support"];
const INTENT: &[&str] = &[
    "pricing",
    "demo",
    "trial",
    "quote",
    "checkout",
    "contact_sales",
    "proposal",
    "upgrade",
    "cart",
    "signup",
    "sign_up",
];
const POSITIVE: &[&str] = &[
    "purchase",
    "paid",
    "renew",
    "reply",
    "replied",
    "meeting_booked",
    "demo_completed",
    "activated",
    "converted",
    "won",
    "promoter",
    "download",
    "webinar",
    "clicked",
    "order_completed",
    "subscribed",
];
const PURCHASE: &[&str] = &[
    "purchase",
    "paid",
    "order_completed",
    "converted",
    "won",
    "renew",
];
/// Actions after which the customer must not be contacted (until a later resubscribe).
const SUPPRESS: &[&str] = &["unsubscribe", "bounce", "spam"];

pub(super) fn has_any(action: &str, words: &[&str]) -> bool {
    let a = action.to_ascii_lowercase();
    words.iter().any(|w| a.contains(w))
}

/// The class of an action name.
pub fn classify(action: &str) -> Class {
    let a = action.to_ascii_lowercase();
    // One rule for every reader: `events::activity` (it also keeps `lastSeen` still).
    if crate::events::activity::is_outbound(&a) {
        Class::Outbound
    } else if has_any(&a, NEGATIVE) {
        Class::Negative
    } else if has_any(&a, SUPPORT) && !has_any(&a, &["resolved", "closed", "solved"]) {
        Class::Support
    } else if has_any(&a, INTENT) {
        Class::Intent
    } else if has_any(&a, POSITIVE) {
        Class::Positive
    } else {
        Class::Neutral
    }
}

/// Whether an action is a purchase (or a renewal, or a won deal).
pub fn is_purchase(action: &str) -> bool {
    classify(action) == Class::Positive && has_any(action, PURCHASE)
}

/// Whether the customer asked not to be contacted (or cannot be): a `suppressed` /
/// `unsubscribed` property, or an unsubscribe, bounce or spam report not followed by a
/// resubscribe.
pub fn is_suppressed(customer: &Node, touchpoints: &[Touch]) -> bool {
    let flag = |k: &str| matches!(customer.get(k), Some(Value::Bool(true)));
    if flag("suppressed") || flag("unsubscribed") {
        return true;
    }
    let last_stop = touchpoints
        .iter()
        .rposition(|t| has_any(&t.action, SUPPRESS));
    let last_start = touchpoints.iter().rposition(|t| {
        let a = t.action.to_ascii_lowercase();
        a.starts_with("resubscribe") || a == "subscribed" || a == "subscribe"
    });
    match (last_stop, last_start) {
        (Some(stop), Some(start)) => stop > start,
        (Some(_), None) => true,
        _ => false,
    }
}

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
    "canceled",
];

/// Open loops: `<x>_requested|opened|asked|started` with no later `<x>_<closing verb>` (the
/// rule of `context.get`), newest first.
pub fn open_loops(touchpoints: &[Touch]) -> Vec<&Touch> {
    let mut out = Vec::new();
    for (i, t) in touchpoints.iter().enumerate() {
        let Some((stem, suffix)) = t.action.rsplit_once('_') else {
            continue;
        };
        if !LOOP_OPEN.contains(&suffix) {
            continue;
        }
        let closed = touchpoints[i + 1..].iter().any(|later| {
            later
                .action
                .rsplit_once('_')
                .is_some_and(|(s, x)| s == stem && LOOP_CLOSE.contains(&x))
        });
        if !closed {
            out.push(t);
        }
    }
    out.reverse();
    out
}
