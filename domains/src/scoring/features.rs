//! The features of a customer at one instant, computed from its neighbourhood.

use std::collections::BTreeSet;

use serde::Serialize;
use svc_engine::{Node, Value};
use time::OffsetDateTime;

use super::actions::has_any;
use super::{classify, is_purchase, Class, Neighbourhood, Touch, DAY_US, RECENCY_CAP_DAYS};

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
