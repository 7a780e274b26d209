//! Outcomes from events attributed to a playbook's campaign.
//!
//! A playbook's campaign id is its own id: events ingested with `campaignId: "pb_..."` are
//! linked (INFLUENCED_BY) to the Campaign node of that id, and count for the playbook's runs
//! from the run's `startedAt` on. Samples are the distinct customers the campaign touched;
//! successes the distinct customers with a success event for the spec's metric:
//!
//! - any metric: an event whose `properties.playbook_outcome` is `"success"`;
//! - `reply_rate`: `email_replied`, `replied`, `reply_received`, `email_reply`;
//! - `meeting_booked`: `meeting_booked`, `meeting_scheduled`;
//! - `pipeline_arr`: `opportunity_created`, `deal_created`, whose `properties.amount` (else `arr`,
//!   `estimatedValue`, `value`) adds to the value.
//!
//! A sync compares these totals with the ones it last folded into the run and reports the
//! difference as an outcome (so repeating a sync adds nothing).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use svc_engine::schema::{CAMPAIGN, HAS_TOUCHPOINT, INFLUENCED_BY, TOUCHPOINT};
use svc_engine::{Direction, GraphRead, Node, Value};

use svc_core::error::Result;
use svc_domains::playbooks::SuccessMetric;

/// Totals of the attributed events (also what a run last synced).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Attributed {
    pub samples: u64,
    pub successes: u64,
    pub value: f64,
}

fn event_prop<'a>(tp: &'a Node, key: &str) -> Option<&'a Value> {
    match tp.properties.get("properties")? {
        Value::Map(m) => m.get(key),
        _ => None,
    }
}

fn number(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) if f.is_finite() && *f >= 0.0 => Some(*f),
        Value::String(s) => s
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite() && *f >= 0.0),
        _ => None,
    }
}

/// Whether the touchpoint is a success of `metric` (see the module documentation).
pub fn is_success(tp: &Node, metric: Option<SuccessMetric>) -> bool {
    if matches!(event_prop(tp, "playbook_outcome"), Some(Value::String(s)) if s == "success") {
        return true;
    }
    let action = match tp.properties.get("action") {
        Some(Value::String(s)) => s.to_ascii_lowercase(),
        _ => return false,
    };
    let names: &[&str] = match metric {
        Some(SuccessMetric::ReplyRate) => {
            &["email_replied", "replied", "reply_received", "email_reply"]
        }
        Some(SuccessMetric::MeetingBooked) => &["meeting_booked", "meeting_scheduled"],
        Some(SuccessMetric::PipelineArr) => &["opportunity_created", "deal_created"],
        Some(SuccessMetric::Custom) | None => &[],
    };
    names.contains(&action.as_str())
}

/// Totals of the events attributed to `campaign_id` at or after `since_us` (engine µs).
pub fn attributed<R: GraphRead + ?Sized>(
    r: &R,
    campaign_id: &str,
    since_us: i64,
    metric: Option<SuccessMetric>,
) -> Result<Attributed> {
    let campaigns = r
        .index_seek(
            CAMPAIGN,
            "campaignId",
            &Value::String(campaign_id.to_owned()),
        )?
        .unwrap_or_default();
    let mut touched = HashSet::new();
    let mut succeeded = HashSet::new();
    let mut value = 0.0;
    for campaign in campaigns {
        for adj in r.adjacent(campaign, Direction::Incoming, Some(INFLUENCED_BY))? {
            let Some(tp) = r.node(adj.neighbour)? else {
                continue;
            };
            if !tp.has_label(TOUCHPOINT) {
                continue;
            }
            match tp.properties.get("ts") {
                Some(Value::DateTime(ts)) if *ts >= since_us => {}
                _ => continue,
            }
            let success = is_success(&tp, metric);
            if success && metric == Some(SuccessMetric::PipelineArr) {
                value += ["amount", "arr", "estimatedValue", "value"]
                    .iter()
                    .find_map(|k| number(event_prop(&tp, k)))
                    .unwrap_or(0.0);
            }
            for owner in r.adjacent(tp.id, Direction::Incoming, Some(HAS_TOUCHPOINT))? {
                touched.insert(owner.neighbour);
                if success {
                    succeeded.insert(owner.neighbour);
                }
            }
        }
    }
    Ok(Attributed {
        samples: touched.len() as u64,
        successes: succeeded.len() as u64,
        value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_engine::{NodeId, Properties};

    fn tp(action: &str, props: &[(&str, Value)]) -> Node {
        let mut p = Properties::new();
        p.insert("action".into(), Value::from(action));
        p.insert(
            "properties".into(),
            Value::Map(
                props
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), v.clone()))
                    .collect(),
            ),
        );
        Node {
            id: NodeId(1),
            labels: vec![TOUCHPOINT.to_owned()],
            properties: p,
        }
    }

    #[test]
    fn success_events_follow_the_metric() {
        let reply = tp("Email_Replied", &[]);
        assert!(is_success(&reply, Some(SuccessMetric::ReplyRate)));
        assert!(!is_success(&reply, Some(SuccessMetric::MeetingBooked)));
        assert!(is_success(
            &tp("meeting_booked", &[]),
            Some(SuccessMetric::MeetingBooked)
        ));
        assert!(is_success(
            &tp("deal_created", &[]),
            Some(SuccessMetric::PipelineArr)
        ));
        let marked = tp("anything", &[("playbook_outcome", Value::from("success"))]);
        assert!(is_success(&marked, Some(SuccessMetric::Custom)));
        assert!(is_success(&marked, None));
        assert!(!is_success(
            &tp("email_sent", &[]),
            Some(SuccessMetric::ReplyRate)
        ));
    }
}
