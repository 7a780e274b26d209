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
//!
//! The parts: `neighbourhood` reads a customer's touchpoints and
//! opportunities, `actions` says what an action name means, `features` turns a neighbourhood
//! into [`Features`], `model` holds the `prior-v1` logistic models, their bands and factors.
//! This file holds the constants, the entry points (`score.churn`, `score.conversion`) and
//! their schemas.

mod actions;
mod features;
mod model;
mod neighbourhood;
#[cfg(test)]
pub(crate) mod tests;

pub use actions::{classify, is_purchase, is_suppressed, open_loops, Class};
pub use features::{features, Features, OpportunityFeatures};
pub use model::{band, PriorModel, Score, Term, CHURN_PRIOR, CONVERSION_PRIOR};
pub use neighbourhood::{neighbourhood, Neighbourhood, Opportunity, Touch};

use serde_json::{json, Value as Json};
use svc_engine::{GraphRead, Node, WorkspaceTxn};
use time::OffsetDateTime;

use crate::clock;
use crate::error::Result;
use crate::ids;
use model::round;

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
