//! The trained models' inputs: every feature as one number, by name, in a fixed order.
//!
//! Counts enter as ln(1 + n) (diminishing returns, and robust to a few very busy customers),
//! recency as ln(1 + days/7), tenure as ln(1 + days/30), the amount as ln(1 + amount/1000),
//! flags as 0/1. A trained model stores the names it was fitted on; scoring maps them back
//! through [`by_name`], so adding a feature later does not break stored models.

use serde_json::{json, Value as Json};

use super::model::{amount_x, flag, ln1p_u, opt, recency_x, round, tenure_x};
use super::Features;

/// One model input: its name, its transform and the raw value shown in `factors`.
#[derive(Clone, Copy, Debug)]
pub struct FeatureDef {
    pub name: &'static str,
    pub x: fn(&Features) -> f64,
    pub shown: fn(&Features) -> Json,
}

/// Every input of the trained models (recency, frequency and trend, engagement mix by action
/// class and channel, support, campaigns, opportunity, tenure).
pub const FEATURES: &[FeatureDef] = &[
    FeatureDef {
        name: "days_since_last_activity",
        x: recency_x,
        shown: |f| json!(round(f.days_since_last_activity, 1)),
    },
    FeatureDef {
        name: "touchpoints_7d",
        x: |f| ln1p_u(f.touchpoints_7d),
        shown: |f| json!(f.touchpoints_7d),
    },
    FeatureDef {
        name: "touchpoints_30d",
        x: |f| ln1p_u(f.touchpoints_30d),
        shown: |f| json!(f.touchpoints_30d),
    },
    FeatureDef {
        name: "touchpoints_90d",
        x: |f| ln1p_u(f.touchpoints_90d),
        shown: |f| json!(f.touchpoints_90d),
    },
    FeatureDef {
        name: "activity_trend",
        x: |f| f.activity_trend,
        shown: |f| json!(round(f.activity_trend, 3)),
    },
    FeatureDef {
        name: "intent_signals_7d",
        x: |f| ln1p_u(f.intent_signals_7d),
        shown: |f| json!(f.intent_signals_7d),
    },
    FeatureDef {
        name: "intent_signals_90d",
        x: |f| ln1p_u(f.intent_signals_90d),
        shown: |f| json!(f.intent_signals_90d),
    },
    FeatureDef {
        name: "positive_events_90d",
        x: |f| ln1p_u(f.positive_events_90d),
        shown: |f| json!(f.positive_events_90d),
    },
    FeatureDef {
        name: "negative_events_90d",
        x: |f| ln1p_u(f.negative_events_90d),
        shown: |f| json!(f.negative_events_90d),
    },
    FeatureDef {
        name: "cancel_signal_90d",
        x: |f| flag(f.cancel_signal_90d),
        shown: |f| json!(f.cancel_signal_90d),
    },
    FeatureDef {
        name: "support_tickets_90d",
        x: |f| ln1p_u(f.support_tickets_90d),
        shown: |f| json!(f.support_tickets_90d),
    },
    FeatureDef {
        name: "campaign_responses_90d",
        x: |f| ln1p_u(f.campaign_responses_90d),
        shown: |f| json!(f.campaign_responses_90d),
    },
    FeatureDef {
        name: "channels_90d",
        x: |f| ln1p_u(f.channels_90d),
        shown: |f| json!(f.channels_90d),
    },
    FeatureDef {
        name: "purchased",
        x: |f| flag(f.purchased),
        shown: |f| json!(f.purchased),
    },
    FeatureDef {
        name: "open_opportunity",
        x: |f| flag(f.opportunity.open),
        shown: |f| json!(f.opportunity.open),
    },
    FeatureDef {
        name: "opportunity_stage",
        x: |f| {
            if f.opportunity.open {
                f.opportunity.stage_progress
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
    FeatureDef {
        name: "opportunity_amount",
        x: amount_x,
        shown: |f| opt(f.opportunity.amount),
    },
    FeatureDef {
        name: "days_since_first_seen",
        x: tenure_x,
        shown: |f| opt(f.days_since_first_seen),
    },
];

/// The feature named `name`.
pub fn by_name(name: &str) -> Option<&'static FeatureDef> {
    FEATURES.iter().find(|d| d.name == name)
}

/// The names of [`FEATURES`], in order.
pub fn names() -> Vec<String> {
    FEATURES.iter().map(|d| d.name.to_owned()).collect()
}

/// `f` as the trained models' input row.
pub fn vector(f: &Features) -> Vec<f64> {
    FEATURES.iter().map(|d| (d.x)(f)).collect()
}
