//! Churn and conversion scores of a customer from its graph neighbourhood (`score.churn`,
//! `score.conversion`). No HTTP types.
//!
//! Each score comes from the workspace's current trained model when it has one for that score
//! (logistic regression fitted per workspace on its own outcomes, `lr-v<n>`, see [`retrain`]),
//! else from the documented fixed-weight logistic prior `prior-v1` ([`CHURN_PRIOR`],
//! [`CONVERSION_PRIOR`]). Every answer says which: `model.kind` is `trained` or `prior`, with
//! the version, the training size and, for a prior, why no trained model applies.
//!
//! Features are computed from one consistent read of the customer's neighbourhood: its latest
//! [`TOUCHPOINT_CAP`] touchpoints (by ingestion order) and its linked opportunities. Activity
//! the service itself caused (`events::activity::is_outbound`: `email_sent`, `call_placed`,
//! `cio_synced`, any `*_sent`...) is not customer activity and is left out of every feature
//! (and does not move `lastSeen`), and touchpoints dated after `now` are
//! ignored, so a score is "as of now" and can be recomputed at any past instant.
//!
//! The parts: `neighbourhood` reads a customer's touchpoints and opportunities, `actions` says
//! what an action name means, `features` turns a neighbourhood into [`Features`], `vector`
//! turns features into model inputs, `model` holds the `prior-v1` models, bands and factors,
//! `trained` fits and stores trained models, `labels` builds time-split examples, `retrain`
//! trains, publishes and writes scores back, `invoke` answers the capabilities (one customer,
//! a list or a segment). This file holds the constants, [`Models`], [`assess`] and the schemas.

mod actions;
mod features;
pub mod invoke;
pub mod labels;
mod model;
mod neighbourhood;
pub mod retrain;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_trained;
pub mod trained;
pub mod vector;

pub use actions::{classify, is_purchase, is_suppressed, open_loops, Class};
pub use features::{features, Features, OpportunityFeatures};
pub use model::{band, PriorModel, Score, Term, CHURN_PRIOR, CONVERSION_PRIOR};
pub use neighbourhood::{neighbourhood, Neighbourhood, Opportunity, Touch};
pub use trained::{CurrentModel, Fitted, ScoreModel};

use serde::Serialize;
use serde_json::{json, Value as Json};
use svc_core::store::WorkspaceTxn;
use svc_engine::{GraphRead, GraphWrite, Node, NodeId, Snapshot, Value};
use time::OffsetDateTime;

use model::round;
use svc_core::error::Result;
use svc_core::plumbing::clock;
use svc_core::plumbing::ids::PublicIds;
use svc_core::vocabulary::prop;

/// Touchpoints read per customer: the latest ones by ingestion order. Executors run on the
/// writer thread, so a customer with a long history must not cost a long read.
pub const TOUCHPOINT_CAP: usize = 500;
/// Opportunities read per customer.
pub const OPPORTUNITY_CAP: usize = 20;
/// The customer -> opportunity relationship (issue 13).
pub const HAS_OPPORTUNITY: &str = svc_core::vocabulary::HAS_OPPORTUNITY;
const OPPORTUNITY: &str = svc_core::vocabulary::OPPORTUNITY;
const STAGE: &str = svc_core::vocabulary::STAGE;
const AT_STAGE: &str = svc_core::vocabulary::AT_STAGE;
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

/// Which model gave a score.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelInfo {
    pub version: String,
    /// `prior` or `trained`.
    pub kind: &'static str,
    /// Labelled examples the model was fitted on (0 for the prior).
    pub trained_on: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trained_at: Option<String>,
    /// Why the prior is used, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The models a workspace scores with: its current trained record, if any.
#[derive(Clone, Debug, Default)]
pub struct Models(pub Option<ScoreModel>);

/// Which score.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Churn,
    Conversion,
}

impl Models {
    /// The current model as a write transaction sees it (executors).
    pub fn current_in(w: &WorkspaceTxn<'_, '_>) -> Result<Models> {
        Ok(Models(
            w.get_record::<CurrentModel>("current")?.map(|c| c.0),
        ))
    }

    /// The current model as a snapshot sees it (batch jobs).
    pub fn current_at(s: &Snapshot<'_>) -> Result<Models> {
        Ok(Models(
            s.get_record::<CurrentModel>("current")?.map(|c| c.0),
        ))
    }

    /// Scores `f` with the trained model of `which` when there is one, else the prior.
    pub fn score(&self, which: Which, f: &Features) -> (Score, ModelInfo) {
        let fitted = self.0.as_ref().and_then(|m| match which {
            Which::Churn => m.churn.as_ref().map(|fit| (m, fit)),
            Which::Conversion => m.conversion.as_ref().map(|fit| (m, fit)),
        });
        if let Some((m, fitted)) = fitted {
            return (
                fitted.score(f),
                ModelInfo {
                    version: m.version.clone(),
                    kind: "trained",
                    trained_on: fitted.trained_on,
                    trained_at: Some(m.trained_at.clone()),
                    note: None,
                },
            );
        }
        let prior = match which {
            Which::Churn => CHURN_PRIOR,
            Which::Conversion => CONVERSION_PRIOR,
        };
        let note = match &self.0 {
            None => "no trained model yet for this workspace: documented prior weights".to_owned(),
            Some(m) => format!(
                "model {} has no {} model (too few labels): documented prior weights",
                m.version,
                if which == Which::Churn {
                    "churn"
                } else {
                    "conversion"
                }
            ),
        };
        (
            prior.score(f),
            ModelInfo {
                version: PRIOR_VERSION.to_owned(),
                kind: "prior",
                trained_on: 0,
                trained_at: None,
                note: Some(note),
            },
        )
    }
}

/// Both scores of a customer from one read of its neighbourhood.
#[derive(Clone, Debug)]
pub struct Assessment {
    /// The customer scored (its public id is rendered where the assessment is shown).
    pub customer: NodeId,
    pub features: Features,
    pub churn: Score,
    pub churn_model: ModelInfo,
    pub conversion: Score,
    pub conversion_model: ModelInfo,
    pub neighbourhood: Neighbourhood,
    pub computed_at: String,
}

/// Reads the neighbourhood once and scores it with the workspace's current models.
pub fn assess(
    w: &WorkspaceTxn<'_, '_>,
    customer: &Node,
    now: OffsetDateTime,
) -> Result<Assessment> {
    assess_with(w, customer, now, &Models::current_in(w)?)
}

/// [`assess`] with the models given (a batch reads them once).
pub fn assess_with<R: GraphRead + ?Sized>(
    r: &R,
    customer: &Node,
    now: OffsetDateTime,
    models: &Models,
) -> Result<Assessment> {
    let neighbourhood = neighbourhood(r, customer)?;
    let features = features(customer, &neighbourhood, now);
    let (churn, churn_model) = models.score(Which::Churn, &features);
    let (conversion, conversion_model) = models.score(Which::Conversion, &features);
    Ok(Assessment {
        customer: customer.id,
        churn,
        churn_model,
        conversion,
        conversion_model,
        features,
        neighbourhood,
        computed_at: clock::rfc3339(now),
    })
}

/// Writes the scores onto the customer (`churnScore`, `conversionScore`, and `score` =
/// conversion), so Cypher, `/v1/customers` and reporting read them.
pub fn write_back<W: GraphWrite + ?Sized>(
    w: &mut W,
    customer: svc_engine::NodeId,
    churn: f64,
    conversion: f64,
) -> Result<()> {
    w.set_node_property(customer, prop::CHURN_SCORE, Value::Float(round(churn, 4)))?;
    w.set_node_property(
        customer,
        prop::CONVERSION_SCORE,
        Value::Float(round(conversion, 4)),
    )?;
    w.set_node_property(customer, prop::SCORE, Value::Float(round(conversion, 4)))?;
    Ok(())
}

/// The wire form of one score (the `score.churn` / `score.conversion` result).
pub fn to_json(customer_id: &str, s: &Score, model: &ModelInfo, computed_at: &str) -> Json {
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
        "model": model,
        "computed_at": computed_at,
    })
}

/// `score.churn` of one customer: the probability that it goes quiet, with its top factors.
pub fn churn(
    ids: &PublicIds,
    w: &WorkspaceTxn<'_, '_>,
    customer: &Node,
    now: OffsetDateTime,
) -> Result<Json> {
    let a = assess(w, customer, now)?;
    Ok(to_json(
        &ids.customer(a.customer),
        &a.churn,
        &a.churn_model,
        &a.computed_at,
    ))
}

/// `score.conversion` of one customer: the probability of a purchase or won deal.
pub fn conversion(
    ids: &PublicIds,
    w: &WorkspaceTxn<'_, '_>,
    customer: &Node,
    now: OffsetDateTime,
) -> Result<Json> {
    let a = assess(w, customer, now)?;
    Ok(to_json(
        &ids.customer(a.customer),
        &a.conversion,
        &a.conversion_model,
        &a.computed_at,
    ))
}

// ---- contract ----

/// Input of both score capabilities: exactly one of `customer`, `customers` or `segment`
/// (`limit` only with `segment`).
pub fn input_schema() -> Json {
    let reference = json!({"type": "string", "minLength": 1, "maxLength": 320});
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "customer": {
                "type": "string", "minLength": 1, "maxLength": 320,
                "description": "Customer id (cus_...), email, phone or external id."
            },
            "customers": {
                "type": "array", "minItems": 1, "maxItems": invoke::BATCH_MAX,
                "items": reference,
                "description": "A list of customer references to score in one call."
            },
            "segment": {
                "type": "string", "minLength": 1, "maxLength": 200,
                "description": "A segment id of /v1/segments (recency:active_7d, \
                                recency:active_30d, recency:dormant_90d, recency:lapsed, \
                                lifecycle:<stage>): its most recently seen customers."
            },
            "limit": {
                "type": "integer", "minimum": 1, "maximum": invoke::BATCH_MAX,
                "description": "Customers of the segment to score (default 100)."
            }
        },
        // "Exactly one of" is checked by `invoke::run`: a top-level oneOf is refused by some
        // tool-calling clients (the schema is also the MCP tool's).
        "additionalProperties": false,
    })
}

fn score_item_schema() -> Json {
    json!({
        "type": "object",
        "properties": {
            "customer_id": {"type": "string", "pattern": "^cus_"},
            "score": {"type": "number", "minimum": 0, "maximum": 1,
                "description": "Probability, 0 to 1."},
            "band": {"enum": ["low", "medium", "high"],
                "description": "low below 0.3, high from 0.6, medium between."},
            "factors": {
                "type": "array", "maxItems": FACTORS_LISTED,
                "description": "The largest contributions, largest |contribution| first. A \
                                trained model's contributions are measured against the \
                                average customer of its training data.",
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
                    "version": {"type": "string",
                        "description": "prior-v1, or lr-v<n> for a trained model."},
                    "kind": {"enum": ["prior", "trained"]},
                    "trained_on": {"type": "integer", "minimum": 0,
                        "description": "Labelled examples the model was trained on."},
                    "trained_at": {"type": "string", "format": "date-time"},
                    "note": {"type": "string", "description": "Why the prior is used."}
                },
                "required": ["version", "kind", "trained_on"]
            },
            "computed_at": {"type": "string", "format": "date-time"}
        },
        "required": ["customer_id", "score", "band", "factors", "model", "computed_at"],
    })
}

/// Output of both score capabilities: one score, or `results` for a list or segment.
pub fn output_schema() -> Json {
    let item = score_item_schema();
    let mut out = item.clone();
    out["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    out["properties"]["results"] = json!({"type": "array", "items": item});
    out["properties"]["count"] = json!({"type": "integer", "minimum": 0});
    out["properties"]["not_found"] = json!({"type": "array", "items": {"type": "string"},
        "description": "References of the list that match no customer."});
    out["properties"]["segment"] = json!({"type": "string"});
    out.as_object_mut().map(|o| o.remove("required"));
    out["anyOf"] = json!([
        {"required": ["customer_id", "score", "band", "factors", "model", "computed_at"]},
        {"required": ["results", "count"]}
    ]);
    out
}

/// An invocation example (input, output) of `score.churn`; it validates against the schemas.
pub fn example() -> (Json, Json) {
    (
        json!({"customer": "ada@example.com"}),
        json!({
            "customer_id": "cus_3kTMd92jFpQ",
            "score": 0.7312,
            "band": "high",
            "factors": [
                {"name": "days_since_last_activity", "value": 64.0, "contribution": 2.1002},
                {"name": "touchpoints_90d", "value": 2, "contribution": 0.4394},
                {"name": "days_since_first_seen", "value": 410.5, "contribution": -0.4006},
                {"name": "purchased", "value": true, "contribution": -0.3},
                {"name": "positive_events_90d", "value": 1, "contribution": -0.2426}
            ],
            "model": {"version": "lr-v3", "kind": "trained", "trained_on": 1840,
                      "trained_at": "2026-11-20T09:00:00.000Z"},
            "computed_at": "2026-11-20T10:15:00.000Z"
        }),
    )
}
