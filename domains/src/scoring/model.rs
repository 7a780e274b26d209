//! The `prior-v1` fixed-weight logistic models (churn and conversion), their scores, bands
//! and factors.

use serde_json::{json, Value as Json};

use super::{Features, HIGH_FROM, LOW_BELOW};

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

pub(super) fn ln1p_u(v: u32) -> f64 {
    f64::from(v).ln_1p()
}
pub(super) fn flag(b: bool) -> f64 {
    f64::from(u8::from(b))
}
pub(super) fn recency_x(f: &Features) -> f64 {
    (f.days_since_last_activity / 7.0).ln_1p()
}
pub(super) fn tenure_x(f: &Features) -> f64 {
    f.days_since_first_seen.map_or(0.0, |d| (d / 30.0).ln_1p())
}
pub(super) fn amount_x(f: &Features) -> f64 {
    match (f.opportunity.open, f.opportunity.amount) {
        (true, Some(a)) if a > 0.0 => (a / 1000.0).ln_1p(),
        _ => 0.0,
    }
}
pub(super) fn opt(v: Option<f64>) -> Json {
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

pub(super) fn round(v: f64, digits: i32) -> f64 {
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
