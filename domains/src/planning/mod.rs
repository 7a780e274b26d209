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
//!
//! The parts: `goal` interprets the goal text, `segment` picks a segment's candidates, `steps`
//! turns a customer's situation into steps. This file holds the limits, [`plan`] and the
//! schemas.

mod goal;
pub mod segment;
mod steps;
#[cfg(test)]
mod tests;

pub use goal::{interpret, Interpreted, Metric};

use segment::candidates;
use steps::{fact, Basis, Planner};

use serde_json::{json, Value as Json};
use svc_core::store::WorkspaceTxn;
use svc_engine::Node;
use time::OffsetDateTime;

use crate::brand::BrandContext;
use crate::outreach::draft;
use crate::scoring::{self, Assessment};
use svc_core::capabilities::{ApprovalKind, Capability};
use svc_core::error::{Error, Result};
use svc_core::plumbing::ids::PublicIds;

pub const GOAL_CHARS: usize = 2000;
pub const SEGMENT_CHARS: usize = 200;
pub const HORIZON_DEFAULT_DAYS: u32 = 30;
/// Customers assessed for a plan without a customer (most recently seen first).
pub const CANDIDATES: usize = 50;
/// Customers a segment plan acts on.
pub const CHOSEN: usize = 3;

const DAY_US: i64 = 86_400 * 1_000_000;

fn str_field<'v>(input: &'v Json, name: &str) -> Option<&'v str> {
    input
        .get(name)
        .and_then(Json::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

fn micros_of(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX)
}

/// What the caller may spend and what runs without a person: the plan's steps are priced and
/// gated with it.
#[derive(Clone, Debug)]
pub struct Means {
    /// Credits left this month once the plan itself is charged.
    pub remaining_credits: u64,
    /// The calling key may run approval-gated capabilities without a person...
    pub auto_run: bool,
    /// ...when the workspace's policy auto-approves them (capability ids).
    pub auto_approve: Vec<String>,
}

impl Means {
    /// No credit limit and nothing auto-approved (tests, previews).
    pub fn unlimited() -> Means {
        Means {
            remaining_credits: u64::MAX,
            auto_run: false,
            auto_approve: Vec::new(),
        }
    }
}

/// `plan.goal`: ordered steps toward `input.goal` for `customer` (already resolved from
/// `input.customer`) or, without one, for the best-scoring customers of `input.segment` (all
/// customers when none), priced and gated with `means`. Reads only.
pub fn plan(
    ids: &PublicIds,
    w: &WorkspaceTxn<'_, '_>,
    brand: &BrandContext,
    customer: Option<&Node>,
    input: &Json,
    now: OffsetDateTime,
    means: &Means,
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
        ids,
        w,
        brand,
        now,
        steps: Vec::new(),
        based_on: Vec::new(),
        basis: Basis::default(),
    };
    let mut chosen = Vec::new();

    match customer {
        Some(c) => {
            let a = scoring::assess(w, c, now)?;
            chosen.push(chosen_customer(
                ids,
                c,
                &a,
                "named in the request".to_owned(),
            ));
            p.customer(c, &interpreted, &a)?;
        }
        None => {
            let mut scored = Vec::new();
            for c in candidates(w, segment, micros_of(now), CANDIDATES)? {
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
            for (rank, (c, a)) in scored.iter().take(CHOSEN).enumerate() {
                let why = format!(
                    "rank {} of {} by {} {:.2} ({}, model {})",
                    rank + 1,
                    scored.len(),
                    if interpreted.metric == Metric::Retention {
                        "churn risk"
                    } else {
                        "conversion likelihood"
                    },
                    key(a),
                    scoring::band(key(a)),
                    if interpreted.metric == Metric::Retention {
                        &a.churn_model.version
                    } else {
                        &a.conversion_model.version
                    },
                );
                chosen.push(chosen_customer(ids, c, a, why));
                p.customer(c, &interpreted, a)?;
            }
        }
    }
    let playbook = draft::active_playbook(w, None, None)?;
    if let Some(pb) = &playbook {
        p.based_on.push(json!({"kind": "playbook",
            "text": format!("Active playbook {}: {}", pb.name,
                pb.strategy.hypothesis.chars().take(200).collect::<String>()),
            "source": pb.id}));
    }

    // Price and gate every step; keep them in order while the credits last.
    let mut needed: u64 = 0;
    let mut steps = Vec::new();
    let mut left_out = Vec::new();
    for s in &p.steps {
        let (credits, approval) = price(s.capability, s.mode(), means);
        if needed.saturating_add(credits) > means.remaining_credits {
            left_out.push(
                json!({"capability": s.capability.id(), "customer_id": s.customer_id,
                "credits": credits}),
            );
            continue;
        }
        needed += credits;
        let mut step = json!({"order": steps.len() + 1, "capability": s.capability.id(),
            "rationale": s.rationale, "input": s.input, "mode": s.mode(),
            "customer_id": s.customer_id, "credits": credits, "approval": approval});
        if let Some((value, basis)) = &s.effect {
            step["expected_effect"] = json!({"metric": interpreted.metric.as_str(),
                "value": value, "basis": basis});
        }
        steps.push(step);
    }
    let approvals = steps.iter().filter(|s| s["approval"] == "required").count();
    let expected: f64 = steps
        .iter()
        .filter_map(|s| s["expected_effect"]["value"].as_f64())
        .sum();
    let mut out = json!({
        "goal": goal,
        "interpreted": {
            "metric": interpreted.metric.as_str(),
            "target": interpreted.target,
            "horizon_days": interpreted.horizon_days,
        },
        "steps": steps,
        "customers": chosen,
        "credits": {
            "needed": needed,
            "remaining": (means.remaining_credits != u64::MAX).then_some(means.remaining_credits),
            "fits": left_out.is_empty(),
            "left_out": left_out,
        },
        "approvals_needed": approvals,
        "expected_effect": {"metric": interpreted.metric.as_str(),
                            "value": (expected * 10_000.0).round() / 10_000.0},
        "playbook": playbook.as_ref().map(|pb| json!({"id": pb.id, "name": pb.name})),
        "based_on": p.based_on,
    });
    if let Some(c) = customer {
        out["customer_id"] = json!(ids.customer(c.id));
    }
    Ok(out)
}

/// A chosen customer with its scores and why it was chosen.
fn chosen_customer(ids: &PublicIds, c: &Node, a: &Assessment, why: String) -> Json {
    let text = |k: &str| match c.get(k) {
        Some(svc_engine::Value::String(s)) => Some(s.clone()),
        _ => None,
    };
    json!({
        "customer_id": ids.customer(a.customer),
        "name": text("name"),
        "email": text("email"),
        "churn": (a.churn.probability * 10_000.0).round() / 10_000.0,
        "conversion": (a.conversion.probability * 10_000.0).round() / 10_000.0,
        "model": a.conversion_model.version,
        "why": why,
    })
}

/// A step's credits (the capability's cost in its mode) and approval: `required` when a person
/// must approve it, `auto` when the key's auto_run and the workspace's policy let it run,
/// `none` for reads.
fn price(c: Capability, mode: &str, means: &Means) -> (u64, &'static str) {
    // The gateway's rule: a queued call always waits for a person; an executed one only when
    // its capability is gated and neither auto_run nor the policy lets it through.
    let auto = means.auto_run && means.auto_approve.iter().any(|a| a == c.id());
    let approval = match c.approval() {
        _ if mode == "queue" => "required",
        ApprovalKind::None | ApprovalKind::Direct => "none",
        ApprovalKind::ApprovalGated if auto => "auto",
        ApprovalKind::ApprovalGated | ApprovalKind::QueueRequired => "required",
    };
    (c.credit_cost(), approval)
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
    let ids: Vec<&str> = svc_core::capabilities::ids().collect();
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
                        "mode": {"enum": ["dry_run", "queue", "execute"]},
                        "customer_id": {"type": "string", "pattern": "^cus_"},
                        "credits": {"type": "integer", "minimum": 0,
                            "description": "Credits the call costs in its mode."},
                        "approval": {"enum": ["none", "auto", "required"],
                            "description": "required: a person approves it (/v1/approvals); \
                                            auto: the key's auto_run and the workspace policy \
                                            let it run; none: nothing to approve."},
                        "expected_effect": {
                            "type": "object",
                            "description": "Expected change of the goal's metric (its unit; \
                                            rates as fractions) and how it was estimated.",
                            "properties": {"metric": {"type": "string"},
                                           "value": {"type": "number"},
                                           "basis": {"type": "string"}},
                            "required": ["metric", "value", "basis"]
                        }
                    },
                    "required": ["order", "capability", "rationale", "input", "mode",
                                 "customer_id", "credits", "approval"]
                }
            },
            "customers": {
                "type": "array",
                "description": "The customers the plan acts on, with their scores and why each \
                                was chosen.",
                "items": {
                    "type": "object",
                    "properties": {
                        "customer_id": {"type": "string", "pattern": "^cus_"},
                        "name": {"type": ["string", "null"]},
                        "email": {"type": ["string", "null"]},
                        "churn": {"type": "number"},
                        "conversion": {"type": "number"},
                        "model": {"type": "string"},
                        "why": {"type": "string"}
                    },
                    "required": ["customer_id", "churn", "conversion", "model", "why"]
                }
            },
            "credits": {
                "type": "object",
                "properties": {
                    "needed": {"type": "integer", "minimum": 0},
                    "remaining": {"type": ["integer", "null"],
                        "description": "This month's credits left after the plan's own charge."},
                    "fits": {"type": "boolean"},
                    "left_out": {"type": "array", "items": {"type": "object"},
                        "description": "Steps dropped because the credits would not cover them."}
                },
                "required": ["needed", "remaining", "fits", "left_out"]
            },
            "approvals_needed": {"type": "integer", "minimum": 0},
            "expected_effect": {
                "type": "object",
                "properties": {"metric": {"type": "string"}, "value": {"type": "number"}},
                "required": ["metric", "value"]
            },
            "playbook": {
                "type": ["object", "null"],
                "description": "The active playbook the plan follows.",
                "properties": {"id": {"type": "string"}, "name": {"type": "string"}}
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
        "required": ["goal", "interpreted", "steps", "customers", "credits",
                     "approvals_needed", "expected_effect", "playbook", "based_on"],
    })
}

/// An invocation example (input, output); it validates against the schemas.
pub fn example() -> (Json, Json) {
    (
        json!({"goal": "Win back at-risk customers this month", "customer": "cus_3kTMd92jFpQ"}),
        json!({
            "goal": "Win back at-risk customers this month",
            "interpreted": {"metric": "retention", "target": null, "horizon_days": 30},
            "steps": [
                {"order": 1, "capability": Capability::ContextGet.id(), "mode": "execute",
                 "customer_id": "cus_3kTMd92jFpQ", "credits": 1, "approval": "none",
                 "rationale": "Read cus_3kTMd92jFpQ's current picture (open loops, blockers, recent \
                               decisions) before acting.",
                 "input": {"customer": "cus_3kTMd92jFpQ"}},
                {"order": 2, "capability": Capability::DraftOutreach.id(), "mode": "execute",
                 "customer_id": "cus_3kTMd92jFpQ", "credits": 1, "approval": "none",
                 "rationale": "At risk: churn 0.73, 64 days since the last own activity: draft \
                               a win-back email in the brand voice to review.",
                 "input": {"customer": "cus_3kTMd92jFpQ", "intent": "win-back", "channel": "email"}},
                {"order": 3, "capability": Capability::QueueOutreach.id(), "mode": "queue",
                 "customer_id": "cus_3kTMd92jFpQ", "credits": 1, "approval": "required",
                 "expected_effect": {"metric": "retention", "value": 0.073,
                                     "basis": "assumed email lift 0.1 x churn 0.73 (see \
                                               docs/intelligence.md)"},
                 "rationale": "Queue that email for approval; subject and body are the draft's \
                               (edit them first if needed).",
                 "input": {"customer": "cus_3kTMd92jFpQ", "subject": "We'd love to have you back",
                           "body": "Hi Ada,\n\nIt's been a while since you placed an order on \
                                    Sep 22.\n\n...\n\nBest,\nThe Acme team"}}
            ],
            "customer_id": "cus_3kTMd92jFpQ",
            "customers": [{"customer_id": "cus_3kTMd92jFpQ", "name": "Ada Lovelace",
                           "email": "ada@example.com", "churn": 0.73, "conversion": 0.05,
                           "model": "lr-v3", "why": "named in the request"}],
            "credits": {"needed": 3, "remaining": 95, "fits": true, "left_out": []},
            "approvals_needed": 1,
            "expected_effect": {"metric": "retention", "value": 0.073},
            "playbook": null,
            "based_on": [
                {"kind": "score", "text": "cus_3kTMd92jFpQ: churn 0.73 (high), conversion 0.05 (low), \
                                           model lr-v3"},
                {"kind": "churn_factor", "text": "cus_3kTMd92jFpQ: days_since_last_activity = 64.0"}
            ]
        }),
    )
}
