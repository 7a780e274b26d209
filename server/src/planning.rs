//! `plan.goal`: ordered next steps toward a goal for a customer or a segment. No HTTP types.
//!
//! Rule-based, deterministic and offline; reads only. The goal text is interpreted (metric,
//! target, horizon: explicit fields win over words), the customer (or, without one, the best
//! candidates of the segment by score) is assessed with [`crate::scoring`], and its situation
//! picks the steps, each a ready-to-use capability call:
//! - suppressed (unsubscribed, bounced): no contact; a `memory.write` decision note only;
//! - at risk (churn band high, or medium with falling activity, after real history):
//!   `draft.outreach` win-back, `queue.outreach` with that draft, and for a paying customer
//!   at high risk a `queue.call` to follow;
//! - an open opportunity: `queue.call` to move the deal, then a `draft.outreach` /
//!   `queue.outreach` follow-up;
//! - otherwise by metric and intent: a demo for meetings, pricing after pricing interest,
//!   onboarding after a signup or trial, a follow-up for reply rate; high conversion
//!   likelihood adds a `queue.call`.
//!
//! Side-effecting steps are `queue` (a person approves), never `execute`; reads are
//! `execute`. The email steps carry the drafted subject and body, so `queue.outreach` can be
//! invoked as is.

use std::ops::Bound;

use serde_json::{json, Value as Json};
use svc_engine::schema::CUSTOMER;
use svc_engine::{GraphRead, Node, Order, Value, WorkspaceTxn};
use time::OffsetDateTime;

use crate::brand::BrandContext;
use crate::capabilities::Capability;
use crate::error::{Error, Result};
use crate::outreach::draft;
use crate::scoring::{self, Assessment};

pub const GOAL_CHARS: usize = 2000;
pub const SEGMENT_CHARS: usize = 200;
pub const HORIZON_DEFAULT_DAYS: u32 = 30;
/// Customers assessed for a plan without a customer (most recently seen first).
pub const CANDIDATES: usize = 50;
/// Customers a segment plan acts on.
pub const CHOSEN: usize = 3;

const DAY_US: i64 = 86_400 * 1_000_000;

/// What the goal is measured by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    ReplyRate,
    MeetingBooked,
    PipelineArr,
    Conversion,
    Retention,
}

impl Metric {
    pub const ALL: [Metric; 5] = [
        Metric::ReplyRate,
        Metric::MeetingBooked,
        Metric::PipelineArr,
        Metric::Conversion,
        Metric::Retention,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Metric::ReplyRate => "reply_rate",
            Metric::MeetingBooked => "meeting_booked",
            Metric::PipelineArr => "pipeline_arr",
            Metric::Conversion => "conversion",
            Metric::Retention => "retention",
        }
    }

    pub fn parse(s: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.as_str() == s)
    }

    fn is_rate(self) -> bool {
        matches!(
            self,
            Metric::ReplyRate | Metric::Conversion | Metric::Retention
        )
    }

    /// The metric a goal's words name; conversion when none does.
    pub fn from_goal(goal: &str) -> Metric {
        let g = goal.to_lowercase();
        let any = |ws: &[&str]| ws.iter().any(|w| g.contains(w));
        if any(&[
            "churn",
            "retain",
            "retention",
            "renew",
            "at-risk",
            "at risk",
            "save ",
            "win back",
            "win-back",
        ]) {
            Metric::Retention
        } else if any(&["meeting", "demo", "call booked", "book"]) {
            Metric::MeetingBooked
        } else if any(&["pipeline", "arr", "revenue", "deal", "mrr"]) {
            Metric::PipelineArr
        } else if any(&["reply", "replies", "response", "respond"]) {
            Metric::ReplyRate
        } else {
            Metric::Conversion
        }
    }
}

/// The interpreted goal.
#[derive(Clone, Debug, PartialEq)]
pub struct Interpreted {
    pub metric: Metric,
    /// In the metric's unit (rates as fractions); `None` when neither given nor stated.
    pub target: Option<f64>,
    pub horizon_days: u32,
}

fn unit_days(word: &str) -> Option<u32> {
    let w = word.trim_end_matches(|c: char| !c.is_alphabetic());
    match w {
        "day" | "days" => Some(1),
        "week" | "weeks" => Some(7),
        "month" | "months" => Some(30),
        "quarter" | "quarters" => Some(90),
        "year" | "years" => Some(365),
        _ => None,
    }
}

/// "20%" -> (20, true), "50k" -> (50000, false), "$1.5m" -> (1500000, false).
fn number(token: &str) -> Option<(f64, bool)> {
    let t = token
        .trim_start_matches(['$', '€', '£'])
        .trim_end_matches([',', '.', ';', ':', ')', '!', '?']);
    let (t, percent) = match t.strip_suffix('%') {
        Some(rest) => (rest, true),
        None => (t, false),
    };
    let (t, scale) = match t.to_ascii_lowercase().chars().last() {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        _ => (t, 1.0),
    };
    let v: f64 = t.replace(',', "").parse().ok()?;
    v.is_finite().then_some((v * scale, percent))
}

/// Reads the goal: metric, target and horizon from explicit fields, else from the words
/// ("book 5 meetings in 3 weeks", "reply rate to 20% this quarter").
pub fn interpret(
    goal: &str,
    metric: Option<Metric>,
    target: Option<f64>,
    horizon: Option<u32>,
) -> Interpreted {
    let metric = metric.unwrap_or_else(|| Metric::from_goal(goal));
    let lower = goal.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let mut stated_target = None;
    let mut stated_horizon = None;
    for (i, w) in words.iter().enumerate() {
        let Some((v, percent)) = number(w) else {
            continue;
        };
        match words.get(i + 1).and_then(|n| unit_days(n)) {
            Some(unit) if !percent && stated_horizon.is_none() => {
                stated_horizon = Some((v.max(0.0) * f64::from(unit)).round() as u32);
            }
            _ if stated_target.is_none() => {
                let rate = metric.is_rate() && (percent || v > 1.0);
                stated_target = Some(if rate { v / 100.0 } else { v });
            }
            _ => {}
        }
    }
    if stated_horizon.is_none() {
        stated_horizon = [
            ("this week", 7),
            ("next week", 14),
            ("this month", 30),
            ("next month", 60),
            ("this quarter", 90),
            ("quarter", 90),
            ("this year", 365),
        ]
        .iter()
        .find(|(p, _)| lower.contains(p))
        .map(|(_, d)| *d);
    }
    Interpreted {
        metric,
        target: target.or(stated_target),
        horizon_days: horizon
            .or(stated_horizon)
            .unwrap_or(HORIZON_DEFAULT_DAYS)
            .clamp(1, 365),
    }
}

fn str_field<'v>(input: &'v Json, name: &str) -> Option<&'v str> {
    input
        .get(name)
        .and_then(Json::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// A planned capability call.
struct Step {
    capability: Capability,
    rationale: String,
    input: Json,
}

impl Step {
    fn mode(&self) -> &'static str {
        match self.capability {
            Capability::QueueOutreach
            | Capability::ExecuteOutreach
            | Capability::QueueCall
            | Capability::ExecuteCall
            | Capability::CrmMutate
            | Capability::CioWrite => "queue",
            _ => "execute",
        }
    }
}

fn fact(kind: &str, text: String) -> Json {
    json!({"kind": kind, "text": text})
}

fn has_prop(c: &Node, key: &str) -> bool {
    matches!(c.get(key), Some(Value::String(s)) if !s.trim().is_empty())
}

fn first_name(c: &Node) -> Option<String> {
    match c.get("name") {
        Some(Value::String(s)) => s.split_whitespace().next().map(str::to_owned),
        _ => None,
    }
}

/// Where the customer stands, for choosing steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Situation {
    Suppressed,
    AtRisk,
    OpenDeal,
    Active,
}

fn situation(c: &Node, a: &Assessment) -> Situation {
    let f = &a.features;
    let history = f.purchased || a.neighbourhood.total_touchpoints >= 3;
    let churn_band = scoring::band(a.churn.probability);
    if scoring::is_suppressed(c, &a.neighbourhood.touchpoints) {
        Situation::Suppressed
    } else if history
        && (churn_band == "high" || (churn_band == "medium" && f.activity_trend < 0.0))
    {
        Situation::AtRisk
    } else if f.opportunity.open {
        Situation::OpenDeal
    } else {
        Situation::Active
    }
}

/// The draft intent that serves the metric for an active customer.
fn intent_for(metric: Metric, a: &Assessment) -> &'static str {
    let recent = |words: &[&str]| {
        a.neighbourhood.touchpoints.iter().rev().take(50).any(|t| {
            let act = t.action.to_ascii_lowercase();
            words.iter().any(|w| act.contains(w))
        })
    };
    match metric {
        Metric::MeetingBooked => "demo",
        Metric::Retention | Metric::ReplyRate => "follow-up",
        Metric::Conversion | Metric::PipelineArr if recent(&["pricing", "quote", "checkout"]) => {
            "pricing"
        }
        Metric::Conversion | Metric::PipelineArr if recent(&["signup", "sign_up", "trial"]) => {
            "onboarding"
        }
        Metric::Conversion | Metric::PipelineArr => "demo",
    }
}

/// Builds the steps of one plan.
struct Planner<'w, 't, 'a> {
    w: &'w WorkspaceTxn<'t, 'a>,
    brand: &'w BrandContext,
    now: OffsetDateTime,
    steps: Vec<Step>,
    based_on: Vec<Json>,
}

impl Planner<'_, '_, '_> {
    /// The email steps: the draft to review, and the queue call carrying it (when the customer
    /// has an email address).
    fn email(&mut self, c: &Node, customer_id: &str, intent: &str, why: &str) -> Result<()> {
        let draft_input = json!({"customer": customer_id, "intent": intent, "channel": "email"});
        let drafted = draft::draft(self.w, self.brand, c, &draft_input, self.now)?;
        self.steps.push(Step {
            capability: Capability::DraftOutreach,
            rationale: format!("{why}: draft a {intent} email in the brand voice to review."),
            input: draft_input,
        });
        if !has_prop(c, "email") {
            return Ok(());
        }
        self.steps.push(Step {
            capability: Capability::QueueOutreach,
            rationale: "Queue that email for approval; subject and body are the draft's (edit \
                        them first if needed)."
                .to_owned(),
            input: json!({
                "customer": customer_id,
                "subject": drafted["subject"],
                "body": drafted["body_text"],
            }),
        });
        Ok(())
    }

    /// A call, queued for approval, when the customer has a phone number.
    fn call(&mut self, c: &Node, customer_id: &str, objective: &str, why: &str) {
        if !has_prop(c, "phone") {
            return;
        }
        let business = self
            .brand
            .business_name
            .as_deref()
            .map(str::trim)
            .filter(|b| !b.is_empty())
            .unwrap_or("our team");
        let hello = match first_name(c) {
            Some(n) => format!("Hi {n}, this is"),
            None => "Hi, this is".to_owned(),
        };
        let script = format!(
            "{hello} a member of the {business} team. {objective} Listen first, answer \
             questions, agree on one next step, and thank them for their time."
        );
        self.steps.push(Step {
            capability: Capability::QueueCall,
            rationale: why.to_owned(),
            input: json!({"customer": customer_id, "script": script, "objective": objective}),
        });
    }

    /// The steps for one customer, with the facts that chose them.
    fn customer(&mut self, c: &Node, goal: &Interpreted, a: &Assessment) -> Result<()> {
        let id = a.customer_id.clone();
        let churn = a.churn.probability;
        let conv = a.conversion.probability;
        self.based_on.push(fact(
            "score",
            format!(
                "{id}: churn {churn:.2} ({}), conversion {conv:.2} ({}), model {}",
                scoring::band(churn),
                scoring::band(conv),
                scoring::PRIOR_VERSION
            ),
        ));
        for (name, value, _) in a.churn.factors.iter().take(2) {
            self.based_on
                .push(fact("churn_factor", format!("{id}: {name} = {value}")));
        }
        for t in scoring::open_loops(&a.neighbourhood.touchpoints)
            .into_iter()
            .take(3)
        {
            self.based_on.push(fact(
                "open_loop",
                format!("{id}: {} ({})", t.action, t.wire_id()),
            ));
        }
        self.steps.push(Step {
            capability: Capability::ContextGet,
            rationale: format!(
                "Read {id}'s current picture (open loops, blockers, recent decisions) before \
                 acting."
            ),
            input: json!({"customer": id}),
        });
        let f = &a.features;
        match situation(c, a) {
            Situation::Suppressed => {
                self.based_on.push(fact(
                    "suppressed",
                    format!("{id} unsubscribed, bounced or is marked suppressed"),
                ));
                self.steps.push(Step {
                    capability: Capability::MemoryWrite,
                    rationale: "The customer must not be contacted; record the decision so no \
                                agent tries again."
                        .to_owned(),
                    input: json!({"customer": id, "kind": "decision",
                        "text": format!("No outreach toward the goal ({}): the customer is suppressed.",
                                        goal.metric.as_str())}),
                });
            }
            Situation::AtRisk => {
                let why = format!(
                    "At risk: churn {churn:.2}, {:.0} days since the last own activity",
                    f.days_since_last_activity
                );
                self.email(c, &id, "win-back", &why)?;
                if f.purchased && scoring::band(churn) == "high" {
                    self.call(
                        c,
                        &id,
                        "We noticed you have been less active and want to make sure you are \
                         getting value; ask what changed and what would help.",
                        "A paying customer at high risk: follow the email with a call if it \
                         gets no reply within a few days.",
                    );
                }
            }
            Situation::OpenDeal => {
                let stage = f
                    .opportunity
                    .stage
                    .clone()
                    .unwrap_or_else(|| "open".to_owned());
                self.based_on.push(fact(
                    "opportunity",
                    format!(
                        "{id}: open opportunity at stage {stage}{}",
                        f.opportunity
                            .amount
                            .map(|v| format!(", amount {v:.0}"))
                            .unwrap_or_default()
                    ),
                ));
                self.call(
                    c,
                    &id,
                    &format!(
                        "The opportunity is at stage {stage}: confirm the decision process, the \
                         timeline and the next meeting."
                    ),
                    "An open opportunity moves fastest in conversation: call to agree the next \
                     step.",
                );
                self.email(
                    c,
                    &id,
                    "follow-up",
                    &format!("Open opportunity at stage {stage}"),
                )?;
            }
            Situation::Active => {
                let intent = intent_for(goal.metric, a);
                let why = format!(
                    "Conversion {conv:.2} ({}), {} intent signal(s) in 90 days; a {intent} \
                     message serves {}",
                    scoring::band(conv),
                    f.intent_signals_90d,
                    goal.metric.as_str()
                );
                self.email(c, &id, intent, &why)?;
                if scoring::band(conv) == "high" {
                    self.call(
                        c,
                        &id,
                        "They have shown strong buying interest: offer help choosing a plan and \
                         book a short meeting.",
                        "High conversion likelihood: a call converts interest sooner than email \
                         alone.",
                    );
                }
            }
        }
        Ok(())
    }
}

/// The segment's bounds on `lastSeen` (microseconds), for `recency:*` segment ids of
/// `/v1/segments`; `None` for anything else.
fn segment_window(segment: &str, now_us: i64) -> Option<(Bound<i64>, Bound<i64>)> {
    let days = |d: i64| now_us - d * DAY_US;
    match segment.strip_prefix("recency:")? {
        "active_7d" => Some((Bound::Included(days(7)), Bound::Unbounded)),
        "active_30d" => Some((Bound::Included(days(30)), Bound::Excluded(days(7)))),
        "dormant_90d" => Some((Bound::Included(days(90)), Bound::Excluded(days(30)))),
        "lapsed" => Some((Bound::Unbounded, Bound::Excluded(days(90)))),
        _ => None,
    }
}

/// Up to [`CANDIDATES`] customers of the segment, most recently seen first.
fn candidates(w: &WorkspaceTxn<'_, '_>, segment: Option<&str>, now_us: i64) -> Result<Vec<Node>> {
    let (lo, hi) = match segment {
        None => (Bound::Unbounded, Bound::Unbounded),
        Some(s) => match segment_window(s, now_us) {
            Some(b) => b,
            None if s.starts_with("lifecycle:") => (Bound::Unbounded, Bound::Unbounded),
            None => {
                return Err(Error::invalid_field(
                    "segment",
                    s,
                    "a segment id of /v1/segments (recency:active_7d, recency:active_30d, \
                     recency:dormant_90d, recency:lapsed, lifecycle:<stage>)",
                ))
            }
        },
    };
    let as_value = |b: Bound<i64>| b.map(Value::DateTime);
    let (lo, hi) = (as_value(lo), as_value(hi));
    // An unbounded lower end would not fix the value type; customers never seen stay out.
    let floor = Value::DateTime(i64::MIN);
    let lo = match &lo {
        Bound::Unbounded => Bound::Included(&floor),
        b => b.as_ref(),
    };
    let stage = segment.and_then(|s| s.strip_prefix("lifecycle:"));
    // Scan more when a stage filter will drop some.
    let limit = if stage.is_some() {
        CANDIDATES * 10
    } else {
        CANDIDATES
    };
    let ids = w
        .index_range(
            CUSTOMER,
            "lastSeen",
            lo,
            hi.as_ref(),
            Order::Descending,
            Some(limit),
        )?
        .ok_or_else(|| Error::internal("no ordered index on Customer.lastSeen"))?;
    let mut out = Vec::new();
    for id in ids {
        let Some(n) = w.node(id)? else { continue };
        let in_stage = stage.is_none_or(|want| {
            ["lifecycle_stage", "lifecycleStage"]
                .iter()
                .any(|k| matches!(n.get(k), Some(Value::String(s)) if s == want))
        });
        if in_stage && n.has_label(CUSTOMER) {
            out.push(n);
        }
        if out.len() >= CANDIDATES {
            break;
        }
    }
    Ok(out)
}

fn micros_of(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX)
}

/// `plan.goal`: ordered steps toward `input.goal` for `customer` (already resolved from
/// `input.customer`) or, without one, for the best-scoring customers of `input.segment` (all
/// customers when none). Reads only.
pub fn plan(
    w: &WorkspaceTxn<'_, '_>,
    brand: &BrandContext,
    customer: Option<&Node>,
    input: &Json,
    now: OffsetDateTime,
) -> Result<Json> {
    let goal = str_field(input, "goal")
        .ok_or_else(|| Error::invalid_field("goal", "", "required (a non-empty string)"))?;
    if goal.chars().count() > GOAL_CHARS {
        return Err(Error::invalid_input(format!(
            "goal: at most {GOAL_CHARS} characters"
        )));
    }
    let metric = match input.get("target_metric") {
        None | Some(Json::Null) => None,
        Some(v) => Some(v.as_str().and_then(Metric::parse).ok_or_else(|| {
            Error::invalid_field(
                "target_metric",
                &v.to_string(),
                "one of reply_rate, meeting_booked, pipeline_arr, conversion, retention",
            )
        })?),
    };
    let target = match input.get("target") {
        None | Some(Json::Null) => None,
        Some(v) => Some(
            v.as_f64()
                .filter(|t| t.is_finite() && *t >= 0.0)
                .ok_or_else(|| {
                    Error::invalid_field("target", &v.to_string(), "a number of at least 0")
                })?,
        ),
    };
    let horizon = match input.get("horizon_days") {
        None | Some(Json::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .filter(|d| (1..=365).contains(d))
                .map(|d| d as u32)
                .ok_or_else(|| {
                    Error::invalid_field("horizon_days", &v.to_string(), "an integer from 1 to 365")
                })?,
        ),
    };
    let segment = str_field(input, "segment");
    if segment.is_some_and(|s| s.chars().count() > SEGMENT_CHARS) {
        return Err(Error::invalid_input(format!(
            "segment: at most {SEGMENT_CHARS} characters"
        )));
    }
    let interpreted = interpret(goal, metric, target, horizon);
    let mut p = Planner {
        w,
        brand,
        now,
        steps: Vec::new(),
        based_on: Vec::new(),
    };

    match customer {
        Some(c) => {
            let a = scoring::assess(w, c, now)?;
            p.customer(c, &interpreted, &a)?;
        }
        None => {
            let mut scored = Vec::new();
            for c in candidates(w, segment, micros_of(now))? {
                let a = scoring::assess(w, &c, now)?;
                if scoring::is_suppressed(&c, &a.neighbourhood.touchpoints) {
                    continue;
                }
                scored.push((c, a));
            }
            // Retention acts on the likeliest to churn; everything else on the likeliest to
            // convert. Ties go to the most recently seen (the candidate order).
            let key = |a: &Assessment| match interpreted.metric {
                Metric::Retention => a.churn.probability,
                _ => a.conversion.probability,
            };
            scored.sort_by(|x, y| key(&y.1).total_cmp(&key(&x.1)));
            p.based_on.push(fact(
                "candidates",
                format!(
                    "{} customer(s) of {} assessed (the {CANDIDATES} most recently seen at \
                     most); the top {CHOSEN} by {} chosen",
                    scored.len(),
                    segment.unwrap_or("the workspace"),
                    if interpreted.metric == Metric::Retention {
                        "churn risk"
                    } else {
                        "conversion likelihood"
                    }
                ),
            ));
            for (c, a) in scored.iter().take(CHOSEN) {
                p.customer(c, &interpreted, a)?;
            }
        }
    }
    if let Some(pb) = draft::active_playbook(w, None, None)? {
        p.based_on.push(json!({"kind": "playbook",
            "text": format!("Active playbook {}: {}", pb.name,
                pb.strategy.hypothesis.chars().take(200).collect::<String>()),
            "source": pb.id}));
    }

    let steps: Vec<Json> = p
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({"order": i + 1, "capability": s.capability.id(), "rationale": s.rationale,
                   "input": s.input, "mode": s.mode()})
        })
        .collect();
    let mut out = json!({
        "goal": goal,
        "interpreted": {
            "metric": interpreted.metric.as_str(),
            "target": interpreted.target,
            "horizon_days": interpreted.horizon_days,
        },
        "steps": steps,
        "based_on": p.based_on,
    });
    if let Some(c) = customer {
        out["customer_id"] = json!(crate::ids::customer_id(c.id));
    }
    Ok(out)
}

// ---- contract ----

pub fn input_schema() -> Json {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "goal": {"type": "string", "minLength": 1, "maxLength": GOAL_CHARS,
                "description": "The goal in words, e.g. \"book 5 demos this month\"."},
            "customer": {
                "type": "string", "minLength": 1, "maxLength": 320,
                "description": "Customer id (cus_...), email, phone or external id. Without \
                                it the plan picks customers of the segment by score."
            },
            "target_metric": {"enum": Metric::ALL.iter().map(|m| m.as_str()).collect::<Vec<_>>()},
            "target": {"type": "number", "minimum": 0,
                "description": "In the metric's unit; rates as fractions (0.2 = 20%)."},
            "horizon_days": {"type": "integer", "minimum": 1, "maximum": 365},
            "segment": {"type": "string", "minLength": 1, "maxLength": SEGMENT_CHARS,
                "description": "A segment id of /v1/segments: recency:active_7d, \
                                recency:active_30d, recency:dormant_90d, recency:lapsed or \
                                lifecycle:<stage>."}
        },
        "required": ["goal"],
        "additionalProperties": false,
    })
}

pub fn output_schema() -> Json {
    let ids: Vec<&str> = crate::capabilities::ids().collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "goal": {"type": "string"},
            "interpreted": {
                "type": "object",
                "properties": {
                    "metric": {"enum": Metric::ALL.iter().map(|m| m.as_str()).collect::<Vec<_>>()},
                    "target": {"type": ["number", "null"]},
                    "horizon_days": {"type": "integer", "minimum": 1, "maximum": 365}
                },
                "required": ["metric", "target", "horizon_days"]
            },
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "order": {"type": "integer", "minimum": 1},
                        "capability": {"enum": ids},
                        "rationale": {"type": "string"},
                        "input": {"type": "object",
                            "description": "Ready to pass as the capability's input."},
                        "mode": {"enum": ["dry_run", "queue", "execute"]}
                    },
                    "required": ["order", "capability", "rationale", "input", "mode"]
                }
            },
            "customer_id": {"type": "string", "pattern": "^cus_"},
            "based_on": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"kind": {"type": "string"}, "text": {"type": "string"},
                                   "source": {"type": "string"}},
                    "required": ["kind", "text"]
                }
            }
        },
        "required": ["goal", "interpreted", "steps", "based_on"],
    })
}

/// An invocation example (input, output); it validates against the schemas.
pub fn example() -> (Json, Json) {
    (
        json!({"goal": "Win back at-risk customers this month", "customer": "cus_42"}),
        json!({
            "goal": "Win back at-risk customers this month",
            "interpreted": {"metric": "retention", "target": null, "horizon_days": 30},
            "steps": [
                {"order": 1, "capability": Capability::ContextGet.id(), "mode": "execute",
                 "rationale": "Read cus_42's current picture (open loops, blockers, recent \
                               decisions) before acting.",
                 "input": {"customer": "cus_42"}},
                {"order": 2, "capability": Capability::DraftOutreach.id(), "mode": "execute",
                 "rationale": "At risk: churn 0.73, 64 days since the last own activity: draft \
                               a win-back email in the brand voice to review.",
                 "input": {"customer": "cus_42", "intent": "win-back", "channel": "email"}},
                {"order": 3, "capability": Capability::QueueOutreach.id(), "mode": "queue",
                 "rationale": "Queue that email for approval; subject and body are the draft's \
                               (edit them first if needed).",
                 "input": {"customer": "cus_42", "subject": "We'd love to have you back",
                           "body": "Hi Ada,\n\nIt's been a while since you placed an order on \
                                    Sep 22.\n\n...\n\nBest,\nThe Acme team"}}
            ],
            "customer_id": "cus_42",
            "based_on": [
                {"kind": "score", "text": "cus_42: churn 0.73 (high), conversion 0.05 (low), \
                                           model prior-v1"},
                {"kind": "churn_factor", "text": "cus_42: days_since_last_activity = 64.0"}
            ]
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::Capability;
    use crate::scoring::tests::{now, open_graph, track, two_customers, with_customer};
    use svc_engine::Graph;

    fn planned(graph: &Graph, email: Option<&str>, input: Json) -> Json {
        let brand = BrandContext {
            business_name: Some("Acme".into()),
            ..BrandContext::default()
        };
        match email {
            Some(e) => with_customer(graph, e, move |w, c| {
                plan(w, &brand, Some(c), &input, now())
            }),
            None => graph
                .write(move |tx| {
                    plan(
                        &tx.workspace(crate::scoring::tests::WS),
                        &brand,
                        None,
                        &input,
                        now(),
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
        let hot = with_customer(&graph, "hot@x.io", |_, c| Ok(crate::ids::customer_id(c.id)));
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
        let hot = with_customer(&graph, "hot@x.io", |_, c| Ok(crate::ids::customer_id(c.id)));
        let out = planned(&graph, None, json!({"goal": "more conversions"}));
        validates(&output_schema(), &out);
        assert_eq!(out["steps"][0]["input"]["customer"], hot.as_str());
        assert!(out.get("customer_id").is_none());
        let err = with_customer(&graph, "hot@x.io", |w, _| {
            Ok(plan(
                w,
                &BrandContext::default(),
                None,
                &json!({"goal": "x", "segment": "nope"}),
                now(),
            )
            .is_err())
        });
        assert!(err);
        let (input, output) = example();
        validates(&input_schema(), &input);
        validates(&output_schema(), &output);
    }
}
