//! `report.generate`: an activity report of the workspace over a window (touchpoints by action
//! and channel, active and new customers), stored as a record when committed.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use svc_core::store::WorkspaceTxn;
use svc_engine::{Direction, GraphRead, NodeId, Order};
use time::OffsetDateTime;

use crate::crm::{micros_of, micros_rfc3339, prop_str, time_ordered_id, DAY_US};
use svc_core::error::{Error, Result};
use svc_core::plumbing::clock;
use svc_core::store::Record;

/// A stored report (`report.generate`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub id: String,
    pub request_id: String,
    pub key_id: String,
    pub created_at: String,
    #[serde(with = "svc_engine::record_encoding::json_text")]
    pub body: Value,
}

impl Record for Report {
    const KIND: &'static str = "report";
    fn id(&self) -> String {
        self.id.clone()
    }
}

/// Touchpoints read for one report at most; past it the report says `truncated`.
const REPORT_MAX_TOUCHPOINTS: usize = 10_000;

/// Builds the report of a report.generate input as of `now`; stores it when `commit`.
pub fn generate(
    w: &mut WorkspaceTxn<'_, '_>,
    request_id: &str,
    key_id: &str,
    input: &Value,
    commit: bool,
    now: OffsetDateTime,
) -> Result<Value> {
    let days = input
        .get("window_days")
        .and_then(Value::as_i64)
        .unwrap_or(7);
    let now_us = micros_of(now);
    let from_us = now_us - days * DAY_US;
    let lower = svc_engine::Value::DateTime(from_us);
    let upper = svc_engine::Value::DateTime(now_us);
    let ids_in_window = w
        .index_range(
            svc_engine::schema::TOUCHPOINT,
            "ts",
            Bound::Included(&lower),
            Bound::Included(&upper),
            Order::Ascending,
            Some(REPORT_MAX_TOUCHPOINTS + 1),
        )?
        .ok_or_else(|| Error::internal("no ordered index on Touchpoint.ts"))?;
    let truncated = ids_in_window.len() > REPORT_MAX_TOUCHPOINTS;
    let mut by_action: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_channel: BTreeMap<String, u64> = BTreeMap::new();
    let mut active: BTreeSet<NodeId> = BTreeSet::new();
    let mut touchpoints = 0u64;
    for id in ids_in_window.into_iter().take(REPORT_MAX_TOUCHPOINTS) {
        let Some(node) = w.node(id)? else { continue };
        touchpoints += 1;
        *by_action
            .entry(prop_str(&node, "action").unwrap_or("unknown").to_owned())
            .or_default() += 1;
        *by_channel
            .entry(prop_str(&node, "channel").unwrap_or("unknown").to_owned())
            .or_default() += 1;
        for adj in w.adjacent(
            id,
            Direction::Incoming,
            Some(svc_engine::schema::HAS_TOUCHPOINT),
        )? {
            active.insert(adj.neighbour);
        }
    }
    let report_id = commit.then(|| time_ordered_id("rpt", now));
    let body = json!({
        "report_id": report_id,
        "kind": "activity",
        "window_days": days,
        "from": micros_rfc3339(from_us),
        "to": micros_rfc3339(now_us),
        "touchpoints": touchpoints,
        "active_customers": active.len(),
        "customers_total": w.label_count(svc_engine::schema::CUSTOMER)?,
        "by_action": by_action,
        "by_channel": by_channel,
        "truncated": truncated,
    });
    if let Some(id) = &report_id {
        w.put_record(&Report {
            id: id.clone(),
            request_id: request_id.to_owned(),
            key_id: key_id.to_owned(),
            created_at: clock::rfc3339(now),
            body: body.clone(),
        })?;
    }
    Ok(body)
}
