//! Churn and conversion scores of a customer from its graph neighbourhood (`score.churn`,
//! `score.conversion`). No HTTP types.
//!
//! Until issue 13's per-workspace trained models exist, both scores come from a documented
//! logistic model with fixed prior weights, `prior-v1` (see [`CHURN_PRIOR`],
//! [`CONVERSION_PRIOR`] and docs/decisions.md). Every answer says so: `model.kind` is `prior`
//! and `model.trained_on` is 0.
//!
//! Features are computed from one consistent read of the customer's neighbourhood: its latest
//! [`TOUCHPOINT_CAP`] touchpoints (by ingestion order) and its linked opportunities. Activity
//! the service itself caused (`email_sent`, `call_placed`, `cio_synced`, any `*_sent`) is not
//! customer activity and is left out of every feature, and touchpoints dated after `now` are
//! ignored, so a score is "as of now" and can be recomputed at any past instant.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{json, Value as Json};
use svc_engine::schema::{HAS_TOUCHPOINT, TOUCHPOINT};
use svc_engine::{Direction, GraphRead, Node, NodeId, Value, WorkspaceTxn};
use time::OffsetDateTime;

use crate::clock;
use crate::error::Result;
use crate::ids;

/// Touchpoints read per customer: the latest ones by ingestion order. Executors run on the
/// writer thread, so a customer with a long history must not cost a long read.
pub const TOUCHPOINT_CAP: usize = 500;
/// Opportunities read per customer.
pub const OPPORTUNITY_CAP: usize = 20;
/// The customer -> opportunity relationship (issue 13).
pub const HAS_OPPORTUNITY: &str = "HAS_OPPORTUNITY";
const OPPORTUNITY: &str = "Opportunity";
const STAGE: &str = "Stage";
const AT_STAGE: &str = "AT_STAGE";
/// Recency of a customer with no recorded activity, and the cap of every recency.
pub const RECENCY_CAP_DAYS: f64 = 365.0;
/// Factors listed per score.
pub const FACTORS_LISTED: usize = 5;
/// Version of the fixed-weight model.
pub const PRIOR_VERSION: &str = "prior-v1";
/// `band` thresholds: below `LOW_BELOW` is low, from `HIGH_FROM` high, medium between.
pub const LOW_BELOW: f64 = 0.3;
pub const HIGH_FROM: f64 = 0.6;

const DAY_US: i64 = 86_400 * 1_000_000;

// ---- the neighbourhood ----

/// One touchpoint as the scoring, drafting and planning rules read it.
#[derive(Clone, Debug, PartialEq)]
pub struct Touch {
    pub id: NodeId,
    pub action: String,
    pub channel: Option<String>,
    pub campaign: Option<String>,
    /// Microseconds since the epoch; `None` for an untimed touchpoint.
    pub ts: Option<i64>,
    pub properties: BTreeMap<String, Value>,
}

impl Touch {
    /// The touchpoint's wire id (`tp_...`).
    pub fn wire_id(&self) -> String {
        ids::touchpoint_id(self.id)
    }

    /// A string property of the event (`properties.<key>`), when present and not blank.
    pub fn prop_str(&self, key: &str) -> Option<&str> {
        match self.properties.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim()),
            _ => None,
        }
    }
}

/// An opportunity linked to the customer.
#[derive(Clone, Debug, PartialEq)]
pub struct Opportunity {
    pub id: NodeId,
    pub name: Option<String>,
    /// The `stage` property, else the name of the Stage it is AT_STAGE.
    pub stage: Option<String>,
    /// The first numeric of `amount`, `arr`, `estimatedValue` (as reporting reads it).
    pub amount: Option<f64>,
    /// Stage progress 0..1: the opportunity's or its Stage's `progress` (percentages scaled).
    pub progress: Option<f64>,
}

impl Opportunity {
    /// Won, lost or closed (reporting's rule: a word of the stage name).
    pub fn is_closed(&self) -> bool {
        self.stage.as_deref().is_some_and(|s| {
            s.to_ascii_lowercase()
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| matches!(w, "won" | "lost" | "closed"))
        })
    }

    pub fn is_won(&self) -> bool {
        self.stage
            .as_deref()
            .is_some_and(|s| s.to_ascii_lowercase().contains("won"))
    }
}

/// What one read of a customer's neighbourhood holds.
#[derive(Clone, Debug)]
pub struct Neighbourhood {
    /// The latest [`TOUCHPOINT_CAP`] touchpoints, oldest first (untimed ones first).
    pub touchpoints: Vec<Touch>,
    /// Every HAS_TOUCHPOINT edge of the customer, read or not.
    pub total_touchpoints: usize,
    pub opportunities: Vec<Opportunity>,
}

fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) if f.is_finite() => Some(*f),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
}

fn string(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        _ => None,
    }
}

/// Reads the customer's latest touchpoints and its opportunities.
pub fn neighbourhood<R: GraphRead + ?Sized>(r: &R, customer: &Node) -> Result<Neighbourhood> {
    // Node ids are allocated in increasing order, so the highest neighbour ids are the latest
    // ingested touchpoints; adjacency entries are keys only, cheap to list in full.
    let mut edges = r.adjacent(customer.id, Direction::Outgoing, Some(HAS_TOUCHPOINT))?;
    let total_touchpoints = edges.len();
    edges.sort_by_key(|e| e.neighbour);
    let skip = edges.len().saturating_sub(TOUCHPOINT_CAP);
    let mut touchpoints = Vec::with_capacity(edges.len() - skip);
    for adj in &edges[skip..] {
        let Some(node) = r.node(adj.neighbour)? else {
            continue;
        };
        if !node.has_label(TOUCHPOINT) {
            continue;
        }
        let properties = match node.get("properties") {
            Some(Value::Map(m)) => m.clone(),
            _ => BTreeMap::new(),
        };
        touchpoints.push(Touch {
            id: node.id,
            action: string(node.get("action")).unwrap_or_default(),
            channel: string(node.get("channel")),
            campaign: string(node.get("campaignId")),
            ts: match node.get("ts") {
                Some(Value::DateTime(us)) => Some(*us),
                _ => None,
            },
            properties,
        });
    }
    touchpoints.sort_by_key(|t| (t.ts, t.id));

    let mut opportunities = Vec::new();
    let mut seen = BTreeSet::new();
    for dir in [Direction::Outgoing, Direction::Incoming] {
        for adj in r.adjacent(customer.id, dir, Some(HAS_OPPORTUNITY))? {
            if opportunities.len() >= OPPORTUNITY_CAP || !seen.insert(adj.neighbour) {
                continue;
            }
            if let Some(o) = r.node(adj.neighbour)?.filter(|n| n.has_label(OPPORTUNITY)) {
                opportunities.push(opportunity(r, &o)?);
            }
        }
    }
    Ok(Neighbourhood {
        touchpoints,
        total_touchpoints,
        opportunities,
    })
}

fn opportunity<R: GraphRead + ?Sized>(r: &R, o: &Node) -> Result<Opportunity> {
    let mut stage = string(o.get("stage"));
    let mut progress = num(o.get("progress"));
    for dir in [Direction::Outgoing, Direction::Incoming] {
        for adj in r.adjacent(o.id, dir, Some(AT_STAGE))? {
            if let Some(s) = r.node(adj.neighbour)?.filter(|n| n.has_label(STAGE)) {
                stage = stage.or_else(|| string(s.get("name")));
                progress = progress.or_else(|| num(s.get("progress")));
            }
        }
    }
    Ok(Opportunity {
        id: o.id,
        name: string(o.get("name")),
        stage,
        amount: ["amount", "arr", "estimatedValue"]
            .iter()
            .find_map(|k| num(o.get(k))),
        progress: progress.map(|p| if p > 1.0 { p / 100.0 } else { p }.clamp(0.0, 1.0)),
    })
}

// ---- what an action means ----

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

const OUTBOUND: &[&str] = &["email_sent", "call_placed", "cio_synced", "sms_sent"];
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

fn has_any(action: &str, words: &[&str]) -> bool {
    let a = action.to_ascii_lowercase();
    words.iter().any(|w| a.contains(w))
}

/// The class of an action name.
pub fn classify(action: &str) -> Class {
    let a = action.to_ascii_lowercase();
    if OUTBOUND.contains(&a.as_str()) || a.ends_with("_sent") {
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

// ---- features ----

/// The opportunity features: the most advanced open opportunity, and whether any was won or
/// lost.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OpportunityFeatures {
    pub open: bool,
    /// Progress of the most advanced open opportunity (0 when unknown).
    pub stage_progress: f64,
    pub stage: Option<String>,
    /// Amount of that opportunity.
    pub amount: Option<f64>,
    pub won: bool,
    pub lost: bool,
}

/// Features of one customer at one instant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Features {
    /// Days since the customer's last own activity (capped at [`RECENCY_CAP_DAYS`]; the cap
    /// when there is none).
    pub days_since_last_activity: f64,
    /// Days since the customer was first seen (earliest touchpoint read, or `firstSeen` /
    /// `createdAt`), when known.
    pub days_since_first_seen: Option<f64>,
    pub touchpoints_7d: u32,
    pub touchpoints_30d: u32,
    pub touchpoints_90d: u32,
    /// ln((last 30 days + 1) / (monthly average of the 60 days before + 1)), in [-3, 3]:
    /// positive when activity grows.
    pub activity_trend: f64,
    pub intent_signals_7d: u32,
    pub intent_signals_90d: u32,
    pub positive_events_90d: u32,
    pub negative_events_90d: u32,
    pub support_tickets_90d: u32,
    /// Customer actions attributed to a campaign in the last 90 days.
    pub campaign_responses_90d: u32,
    /// Distinct channels of the customer's actions in the last 90 days.
    pub channels_90d: u32,
    /// A cancellation, churn or unsubscribe event in the last 90 days.
    pub cancel_signal_90d: bool,
    pub purchased: bool,
    pub opportunity: OpportunityFeatures,
}

fn micros_of(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX)
}

fn datetime_prop(node: &Node, keys: &[&str]) -> Option<i64> {
    keys.iter().find_map(|k| match node.get(k) {
        Some(Value::DateTime(us)) => Some(*us),
        Some(Value::String(s)) => {
            time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
                .ok()
                .map(micros_of)
        }
        _ => None,
    })
}

/// The features of `customer` at `now` from its neighbourhood.
pub fn features(customer: &Node, n: &Neighbourhood, now: OffsetDateTime) -> Features {
    let now_us = micros_of(now);
    let days = |ts: i64| (now_us.saturating_sub(ts).max(0) as f64) / DAY_US as f64;
    let own: Vec<&Touch> = n
        .touchpoints
        .iter()
        .filter(|t| t.ts.is_none_or(|ts| ts <= now_us))
        .filter(|t| classify(&t.action) != Class::Outbound)
        .collect();
    let within = |t: &Touch, d: i64| {
        t.ts.is_some_and(|ts| now_us.saturating_sub(ts) < d * DAY_US)
    };
    let count = |d: i64, f: &dyn Fn(&Touch) -> bool| -> u32 {
        own.iter().filter(|&&t| within(t, d) && f(t)).count() as u32
    };
    let class_is = |c: Class| move |t: &Touch| classify(&t.action) == c;

    let last = own.iter().filter_map(|t| t.ts).max();
    let days_since_last_activity =
        last.map_or(RECENCY_CAP_DAYS, |ts| days(ts).min(RECENCY_CAP_DAYS));
    let first = own
        .iter()
        .filter_map(|t| t.ts)
        .chain(datetime_prop(
            customer,
            &["firstSeen", "createdAt", "created_at"],
        ))
        .min();
    let n30 = count(30, &|_| true);
    let n90 = count(90, &|_| true);
    let prior_monthly = f64::from(n90 - n30) / 2.0;
    let trend = ((f64::from(n30) + 1.0) / (prior_monthly + 1.0))
        .ln()
        .clamp(-3.0, 3.0);
    let channels: BTreeSet<&str> = own
        .iter()
        .filter(|t| within(t, 90))
        .filter_map(|t| t.channel.as_deref())
        .collect();

    let mut opp = OpportunityFeatures::default();
    for o in &n.opportunities {
        if o.is_won() {
            opp.won = true;
        } else if o.is_closed() {
            opp.lost = true;
        } else {
            let p = o.progress.unwrap_or(0.0);
            if !opp.open || p > opp.stage_progress {
                opp = OpportunityFeatures {
                    open: true,
                    stage_progress: p,
                    stage: o.stage.clone(),
                    amount: o.amount,
                    ..opp
                };
            }
        }
    }

    Features {
        days_since_last_activity,
        days_since_first_seen: first.map(days),
        touchpoints_7d: count(7, &|_| true),
        touchpoints_30d: n30,
        touchpoints_90d: n90,
        activity_trend: trend,
        intent_signals_7d: count(7, &class_is(Class::Intent)),
        intent_signals_90d: count(90, &class_is(Class::Intent)),
        positive_events_90d: count(90, &class_is(Class::Positive)),
        negative_events_90d: count(90, &class_is(Class::Negative)),
        support_tickets_90d: count(90, &class_is(Class::Support)),
        campaign_responses_90d: count(90, &|t| t.campaign.is_some()),
        channels_90d: channels.len() as u32,
        cancel_signal_90d: count(90, &|t| {
            has_any(&t.action, &["cancel", "churn", "unsubscribe"])
        }) > 0,
        purchased: own.iter().any(|t| is_purchase(&t.action)) || opp.won,
        opportunity: opp,
    }
}

// ---- the prior model ----

/// One term of a prior model: a named transform of the features and its fixed weight.
#[derive(Clone, Copy, Debug)]
pub struct Term {
    pub name: &'static str,
    pub weight: f64,
    /// The transformed feature value the weight multiplies.
    pub x: fn(&Features) -> f64,
    /// The raw feature value shown in `factors`.
    pub shown: fn(&Features) -> Json,
}

/// A fixed-weight logistic model: P = sigmoid(bias + sum(weight * x)).
#[derive(Clone, Copy, Debug)]
pub struct PriorModel {
    pub bias: f64,
    pub terms: &'static [Term],
}

fn ln1p_u(v: u32) -> f64 {
    f64::from(v).ln_1p()
}
fn flag(b: bool) -> f64 {
    f64::from(u8::from(b))
}
fn recency_x(f: &Features) -> f64 {
    (f.days_since_last_activity / 7.0).ln_1p()
}
fn tenure_x(f: &Features) -> f64 {
    f.days_since_first_seen.map_or(0.0, |d| (d / 30.0).ln_1p())
}
fn amount_x(f: &Features) -> f64 {
    match (f.opportunity.open, f.opportunity.amount) {
        (true, Some(a)) if a > 0.0 => (a / 1000.0).ln_1p(),
        _ => 0.0,
    }
}
fn opt(v: Option<f64>) -> Json {
    v.map_or(Json::Null, |x| json!(round(x, 2)))
}

/// Churn risk, `prior-v1`: the probability that the customer goes quiet. Log-odds:
///
/// - bias **-1.6**: an average customer sits near a 17% churn prior, the order of monthly
///   logo churn reported for SMB SaaS and of 90-day lapse rates in e-commerce;
/// - `days_since_last_activity` **+0.9** x ln(1 + days/7): recency is the strongest single
///   predictor of lapse in RFM and BG/NBD-style models; the log makes the first weeks count
///   most (7 days adds 0.62, 30 days 1.51, 90 days 2.38);
/// - `touchpoints_30d` **-0.45** x ln(1 + n): frequency protects, with diminishing returns;
/// - `activity_trend` **-0.5** x trend: falling activity (negative trend) raises risk;
/// - `negative_events_90d` **+0.7** x ln(1 + n): complaints, refunds, downgrades, failed
///   payments;
/// - `cancel_signal_90d` **+1.2**: an explicit cancel, churn or unsubscribe event is the most
///   direct evidence short of the churn itself;
/// - `support_tickets_90d` **+0.4** x ln(1 + n): friction; weaker than a complaint because
///   tickets also mean engagement;
/// - `positive_events_90d` **-0.35** x ln(1 + n): purchases, replies, meetings, activation;
/// - `campaign_responses_90d` **-0.2** x ln(1 + n): the customer still answers campaigns;
/// - `open_opportunity` **-0.4**: a deal in progress keeps the relationship active;
/// - `purchased` **-0.3**: a paying relationship lapses less than a free one;
/// - `days_since_first_seen` **-0.15** x ln(1 + days/30): tenure lowers hazard (early-life
///   churn is the highest).
pub const CHURN_PRIOR: PriorModel = PriorModel {
    bias: -1.6,
    terms: &[
        Term {
            name: "days_since_last_activity",
            weight: 0.9,
            x: recency_x,
            shown: |f| json!(round(f.days_since_last_activity, 1)),
        },
        Term {
            name: "touchpoints_30d",
            weight: -0.45,
            x: |f| ln1p_u(f.touchpoints_30d),
            shown: |f| json!(f.touchpoints_30d),
        },
        Term {
            name: "activity_trend",
            weight: -0.5,
            x: |f| f.activity_trend,
            shown: |f| json!(round(f.activity_trend, 3)),
        },
        Term {
            name: "negative_events_90d",
            weight: 0.7,
            x: |f| ln1p_u(f.negative_events_90d),
            shown: |f| json!(f.negative_events_90d),
        },
        Term {
            name: "cancel_signal_90d",
            weight: 1.2,
            x: |f| flag(f.cancel_signal_90d),
            shown: |f| json!(f.cancel_signal_90d),
        },
        Term {
            name: "support_tickets_90d",
            weight: 0.4,
            x: |f| ln1p_u(f.support_tickets_90d),
            shown: |f| json!(f.support_tickets_90d),
        },
        Term {
            name: "positive_events_90d",
            weight: -0.35,
            x: |f| ln1p_u(f.positive_events_90d + f.intent_signals_90d),
            shown: |f| json!(f.positive_events_90d + f.intent_signals_90d),
        },
        Term {
            name: "campaign_responses_90d",
            weight: -0.2,
            x: |f| ln1p_u(f.campaign_responses_90d),
            shown: |f| json!(f.campaign_responses_90d),
        },
        Term {
            name: "open_opportunity",
            weight: -0.4,
            x: |f| flag(f.opportunity.open),
            shown: |f| json!(f.opportunity.open),
        },
        Term {
            name: "purchased",
            weight: -0.3,
            x: |f| flag(f.purchased),
            shown: |f| json!(f.purchased),
        },
        Term {
            name: "days_since_first_seen",
            weight: -0.15,
            x: tenure_x,
            shown: |f| opt(f.days_since_first_seen),
        },
    ],
};

/// Conversion likelihood, `prior-v1`: the probability of a purchase or a won deal soon.
/// Log-odds:
///
/// - bias **-2.4**: about 8%, the order of lead-to-customer rates of B2B funnels;
/// - `intent_signals_90d` **+0.9** x ln(1 + n): pricing views, demo and trial requests,
///   quotes, checkouts are the classic buying signals of lead scoring;
/// - `intent_signals_7d` **+0.6** x ln(1 + n): fresh intent counts again (intent decays in
///   days, not months);
/// - `positive_events_90d` **+0.4** x ln(1 + n): replies, meetings, activation, downloads;
/// - `days_since_last_activity` **-0.5** x ln(1 + days/7): cold leads convert less;
/// - `touchpoints_30d` **+0.3** x ln(1 + n) and `activity_trend` **+0.3** x trend: momentum;
/// - `negative_events_90d` **-0.6** x ln(1 + n) and `cancel_signal_90d` **-1.5**: an
///   unsubscribe or cancellation all but closes the door;
/// - `support_tickets_90d` **-0.15** x ln(1 + n): friction, mildly;
/// - `campaign_responses_90d` **+0.3** x ln(1 + n): the customer answers campaigns;
/// - `opportunity_stage` **+0.6 + 1.2** x progress for an open opportunity (0 without one):
///   a qualified deal converts far more often than a lead, and later stages more still;
/// - `opportunity_amount` **-0.05** x ln(1 + amount/1000): larger deals close at lower rates
///   and take longer;
/// - `purchased` **+0.5**: a customer who bought once buys again more often than a prospect
///   buys at all.
pub const CONVERSION_PRIOR: PriorModel = PriorModel {
    bias: -2.4,
    terms: &[
        Term {
            name: "intent_signals_90d",
            weight: 0.9,
            x: |f| ln1p_u(f.intent_signals_90d),
            shown: |f| json!(f.intent_signals_90d),
        },
        Term {
            name: "intent_signals_7d",
            weight: 0.6,
            x: |f| ln1p_u(f.intent_signals_7d),
            shown: |f| json!(f.intent_signals_7d),
        },
        Term {
            name: "positive_events_90d",
            weight: 0.4,
            x: |f| ln1p_u(f.positive_events_90d),
            shown: |f| json!(f.positive_events_90d),
        },
        Term {
            name: "days_since_last_activity",
            weight: -0.5,
            x: recency_x,
            shown: |f| json!(round(f.days_since_last_activity, 1)),
        },
        Term {
            name: "touchpoints_30d",
            weight: 0.3,
            x: |f| ln1p_u(f.touchpoints_30d),
            shown: |f| json!(f.touchpoints_30d),
        },
        Term {
            name: "activity_trend",
            weight: 0.3,
            x: |f| f.activity_trend,
            shown: |f| json!(round(f.activity_trend, 3)),
        },
        Term {
            name: "negative_events_90d",
            weight: -0.6,
            x: |f| ln1p_u(f.negative_events_90d),
            shown: |f| json!(f.negative_events_90d),
        },
        Term {
            name: "cancel_signal_90d",
            weight: -1.5,
            x: |f| flag(f.cancel_signal_90d),
            shown: |f| json!(f.cancel_signal_90d),
        },
        Term {
            name: "support_tickets_90d",
            weight: -0.15,
            x: |f| ln1p_u(f.support_tickets_90d),
            shown: |f| json!(f.support_tickets_90d),
        },
        Term {
            name: "campaign_responses_90d",
            weight: 0.3,
            x: |f| ln1p_u(f.campaign_responses_90d),
            shown: |f| json!(f.campaign_responses_90d),
        },
        Term {
            name: "opportunity_stage",
            // The weight multiplies (0.5 + progress) so 0.6 + 1.2 x progress comes out exactly.
            weight: 1.2,
            x: |f| {
                if f.opportunity.open {
                    0.5 + f.opportunity.stage_progress
                } else {
                    0.0
                }
            },
            shown: |f| match (&f.opportunity.stage, f.opportunity.open) {
                (Some(s), true) => json!(s),
                (None, true) => json!(round(f.opportunity.stage_progress, 2)),
                _ => Json::Null,
            },
        },
        Term {
            name: "opportunity_amount",
            weight: -0.05,
            x: amount_x,
            shown: |f| opt(f.opportunity.amount),
        },
        Term {
            name: "purchased",
            weight: 0.5,
            x: |f| flag(f.purchased),
            shown: |f| json!(f.purchased),
        },
    ],
};

fn round(v: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (v * m).round() / m
}

/// A score with its explanation.
#[derive(Clone, Debug, PartialEq)]
pub struct Score {
    /// Probability, 0..1.
    pub probability: f64,
    /// Every term with a non-zero contribution, largest |contribution| first:
    /// (name, shown value, signed log-odds).
    pub factors: Vec<(&'static str, Json, f64)>,
}

impl PriorModel {
    pub fn score(&self, f: &Features) -> Score {
        let mut z = self.bias;
        let mut factors = Vec::new();
        for t in self.terms {
            let c = t.weight * (t.x)(f);
            z += c;
            if c != 0.0 {
                factors.push((t.name, (t.shown)(f), c));
            }
        }
        factors.sort_by(|a, b| b.2.abs().total_cmp(&a.2.abs()).then(a.0.cmp(b.0)));
        Score {
            probability: 1.0 / (1.0 + (-z).exp()),
            factors,
        }
    }
}

/// `low`, `medium` or `high`.
pub fn band(p: f64) -> &'static str {
    if p < LOW_BELOW {
        "low"
    } else if p < HIGH_FROM {
        "medium"
    } else {
        "high"
    }
}

/// Both scores of a customer from one read of its neighbourhood.
#[derive(Clone, Debug)]
pub struct Assessment {
    pub customer_id: String,
    pub features: Features,
    pub churn: Score,
    pub conversion: Score,
    pub neighbourhood: Neighbourhood,
    pub computed_at: String,
}

/// Reads the neighbourhood once and scores it with both prior models.
pub fn assess<R: GraphRead + ?Sized>(
    r: &R,
    customer: &Node,
    now: OffsetDateTime,
) -> Result<Assessment> {
    let neighbourhood = neighbourhood(r, customer)?;
    let features = features(customer, &neighbourhood, now);
    Ok(Assessment {
        customer_id: ids::customer_id(customer.id),
        churn: CHURN_PRIOR.score(&features),
        conversion: CONVERSION_PRIOR.score(&features),
        features,
        neighbourhood,
        computed_at: clock::rfc3339(now),
    })
}

/// The wire form of one score (the `score.churn` / `score.conversion` result).
pub fn to_json(customer_id: &str, s: &Score, computed_at: &str) -> Json {
    let factors: Vec<Json> = s
        .factors
        .iter()
        .take(FACTORS_LISTED)
        .map(|(name, value, c)| json!({"name": name, "value": value, "contribution": round(*c, 4)}))
        .collect();
    json!({
        "customer_id": customer_id,
        "score": round(s.probability, 4),
        "band": band(s.probability),
        "factors": factors,
        "model": {"version": PRIOR_VERSION, "kind": "prior", "trained_on": 0},
        "computed_at": computed_at,
    })
}

/// `score.churn`: the probability that the customer goes quiet, with its top factors.
pub fn churn(w: &WorkspaceTxn<'_, '_>, customer: &Node, now: OffsetDateTime) -> Result<Json> {
    let a = assess(w, customer, now)?;
    Ok(to_json(&a.customer_id, &a.churn, &a.computed_at))
}

/// `score.conversion`: the probability of a purchase or won deal, with its top factors.
pub fn conversion(w: &WorkspaceTxn<'_, '_>, customer: &Node, now: OffsetDateTime) -> Result<Json> {
    let a = assess(w, customer, now)?;
    Ok(to_json(&a.customer_id, &a.conversion, &a.computed_at))
}

// ---- contract ----

/// Input of both score capabilities.
pub fn input_schema() -> Json {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "customer": {
                "type": "string", "minLength": 1, "maxLength": 320,
                "description": "Customer id (cus_...), email, phone or external id."
            }
        },
        "required": ["customer"],
        "additionalProperties": false,
    })
}

/// Output of both score capabilities.
pub fn output_schema() -> Json {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "customer_id": {"type": "string", "pattern": "^cus_"},
            "score": {"type": "number", "minimum": 0, "maximum": 1,
                "description": "Probability, 0 to 1."},
            "band": {"enum": ["low", "medium", "high"],
                "description": "low below 0.3, high from 0.6, medium between."},
            "factors": {
                "type": "array", "maxItems": FACTORS_LISTED,
                "description": "The largest contributions, largest |contribution| first.",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "value": {"description": "The feature's value for this customer."},
                        "contribution": {"type": "number",
                            "description": "Signed log-odds this factor adds."}
                    },
                    "required": ["name", "value", "contribution"]
                }
            },
            "model": {
                "type": "object",
                "properties": {
                    "version": {"type": "string"},
                    "kind": {"enum": ["prior", "trained"]},
                    "trained_on": {"type": "integer", "minimum": 0,
                        "description": "Labelled examples the model was trained on."}
                },
                "required": ["version", "kind", "trained_on"]
            },
            "computed_at": {"type": "string", "format": "date-time"}
        },
        "required": ["customer_id", "score", "band", "factors", "model", "computed_at"],
    })
}

/// An invocation example (input, output) of `score.churn`; it validates against the schemas.
pub fn example() -> (Json, Json) {
    (
        json!({"customer": "ada@example.com"}),
        json!({
            "customer_id": "cus_42",
            "score": 0.7312,
            "band": "high",
            "factors": [
                {"name": "days_since_last_activity", "value": 64.0, "contribution": 2.1002},
                {"name": "support_tickets_90d", "value": 2, "contribution": 0.4394},
                {"name": "days_since_first_seen", "value": 410.5, "contribution": -0.4006},
                {"name": "purchased", "value": true, "contribution": -0.3},
                {"name": "positive_events_90d", "value": 1, "contribution": -0.2426}
            ],
            "model": {"version": PRIOR_VERSION, "kind": "prior", "trained_on": 0},
            "computed_at": "2026-11-20T10:15:00.000Z"
        }),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::events::{self, MarketingEvent};
    use svc_engine::{Graph, GraphOptions, WorkspaceId};
    use time::macros::datetime;

    pub(crate) const WS: WorkspaceId = WorkspaceId(3);

    pub(crate) fn now() -> OffsetDateTime {
        datetime!(2026-11-25 12:00:00 UTC)
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
            .validate(now())
            .expect("valid event");
        graph
            .write(move |tx| events::apply(&mut tx.workspace(WS), &ev, now()).map(|_| ()))
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
                    .ok_or_else(|| crate::error::Error::not_found("customer"))?;
                let node = w
                    .node(id)?
                    .ok_or_else(|| crate::error::Error::not_found("customer"))?;
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
        let before = with_customer(&graph, "q@x.io", |w, c| churn(w, c, now()));
        track(&graph, "q@x.io", "email_sent", 0.5, json!({}));
        let after = with_customer(&graph, "q@x.io", |w, c| churn(w, c, now()));
        assert_eq!(before["score"], after["score"]);
    }

    #[test]
    fn output_names_the_prior_and_its_top_factors_and_validates() {
        let (_dir, graph) = open_graph();
        two_customers(&graph);
        for email in ["hot@x.io", "cold@x.io"] {
            let c = with_customer(&graph, email, |w, c| churn(w, c, now()));
            let v = with_customer(&graph, email, |w, c| conversion(w, c, now()));
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
}
