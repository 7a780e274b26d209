//! The planner: where a customer stands (its situation) and the steps that follow from it.

use serde_json::{json, Value as Json};
use svc_core::store::WorkspaceTxn;
use svc_engine::{Node, Value};
use time::OffsetDateTime;

use super::{Interpreted, Metric};
use crate::brand::BrandContext;
use crate::outreach::draft;
use crate::scoring::{self, Assessment};
use svc_core::capabilities::Capability;
use svc_core::error::Result;
use svc_core::plumbing::ids::PublicIds;

/// A planned capability call.
pub(super) struct Step {
    pub(super) capability: Capability,
    pub(super) rationale: String,
    pub(super) input: Json,
    /// The customer it acts on.
    pub(super) customer_id: String,
    /// The expected change of the goal's metric (in its unit) and how it was estimated; `None`
    /// for a step that changes nothing by itself (reads, drafts, notes).
    pub(super) effect: Option<(f64, String)>,
}

impl Step {
    pub(super) fn mode(&self) -> &'static str {
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

pub(super) fn fact(kind: &str, text: String) -> Json {
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
pub(super) struct Planner<'w, 't, 'a> {
    pub(super) ids: &'w PublicIds,
    pub(super) w: &'w WorkspaceTxn<'t, 'a>,
    pub(super) brand: &'w BrandContext,
    pub(super) now: OffsetDateTime,
    pub(super) steps: Vec<Step>,
    pub(super) based_on: Vec<Json>,
    /// The metric and the customer's probabilities the effects of its steps are estimated from.
    pub(super) basis: Basis,
}

/// What the expected effects of a customer's steps are estimated from.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Basis {
    pub(super) metric: Option<Metric>,
    pub(super) churn: f64,
    pub(super) conversion: f64,
    pub(super) amount: f64,
}

/// Assumed relative lift of one contact on the outcome it aims at (documented assumptions in
/// docs/intelligence.md, not measured: the workspace's outcomes are not yet split by contact).
pub(super) const EMAIL_UPLIFT: f64 = 0.10;
pub(super) const CALL_UPLIFT: f64 = 0.20;

impl Planner<'_, '_, '_> {
    /// The expected change of the goal's metric from one contact with relative lift `lift`:
    /// retention saves lift x churn probability customers, conversion and meetings gain lift x
    /// conversion probability, pipeline gains that times the open amount, reply rate gains lift
    /// x (1 - churn) replies.
    fn effect(&self, lift: f64, what: &str) -> (f64, String) {
        let b = self.basis;
        let (value, basis) = match b.metric.unwrap_or(Metric::Conversion) {
            Metric::Retention => (lift * b.churn, format!("{lift} x churn {:.2}", b.churn)),
            Metric::PipelineArr => (
                lift * b.conversion * b.amount,
                format!(
                    "{lift} x conversion {:.2} x amount {:.0}",
                    b.conversion, b.amount
                ),
            ),
            Metric::ReplyRate => (
                lift * (1.0 - b.churn),
                format!("{lift} x (1 - churn {:.2})", b.churn),
            ),
            Metric::Conversion | Metric::MeetingBooked => (
                lift * b.conversion,
                format!("{lift} x conversion {:.2}", b.conversion),
            ),
        };
        let value = (value * 10_000.0).round() / 10_000.0;
        (
            value,
            format!("assumed {what} lift {basis} (see docs/intelligence.md)"),
        )
    }

    /// The email steps: the draft to review, and the queue call carrying it (when the customer
    /// has an email address).
    fn email(&mut self, c: &Node, customer_id: &str, intent: &str, why: &str) -> Result<()> {
        let draft_input = json!({"customer": customer_id, "intent": intent, "channel": "email"});
        let drafted = draft::draft(self.ids, self.w, self.brand, c, &draft_input, self.now)?;
        self.steps.push(Step {
            capability: Capability::DraftOutreach,
            rationale: format!("{why}: draft a {intent} email in the brand voice to review."),
            input: draft_input,
            customer_id: customer_id.to_owned(),
            effect: None,
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
            customer_id: customer_id.to_owned(),
            effect: Some(self.effect(EMAIL_UPLIFT, "email")),
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
            customer_id: customer_id.to_owned(),
            effect: Some(self.effect(CALL_UPLIFT, "call")),
        });
    }

    /// The steps for one customer, with the facts that chose them.
    pub(super) fn customer(&mut self, c: &Node, goal: &Interpreted, a: &Assessment) -> Result<()> {
        let id = self.ids.customer(a.customer);
        let churn = a.churn.probability;
        let conv = a.conversion.probability;
        self.basis = Basis {
            metric: Some(goal.metric),
            churn,
            conversion: conv,
            amount: a.features.opportunity.amount.unwrap_or(0.0),
        };
        self.based_on.push(fact(
            "score",
            format!(
                "{id}: churn {churn:.2} ({}), conversion {conv:.2} ({}), model {}",
                scoring::band(churn),
                scoring::band(conv),
                a.conversion_model.version
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
                format!("{id}: {} ({})", t.action, t.wire_id(self.ids)),
            ));
        }
        self.steps.push(Step {
            capability: Capability::ContextGet,
            rationale: format!(
                "Read {id}'s current picture (open loops, blockers, recent decisions) before \
                 acting."
            ),
            input: json!({"customer": id}),
            customer_id: id.clone(),
            effect: None,
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
                    customer_id: id.clone(),
                    effect: None,
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
