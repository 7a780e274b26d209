//! The customers a plan without a customer considers: a segment's candidates by `lastSeen`.

use std::ops::Bound;

use svc_core::store::WorkspaceTxn;
use svc_engine::schema::CUSTOMER;
use svc_engine::{GraphRead, Node, Order, Value};

use super::DAY_US;
use svc_core::error::{Error, Result};

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

/// Up to `wanted` customers of the segment, most recently seen first (plans take
/// [`CANDIDATES`](super::CANDIDATES); batch scoring up to 500).
pub fn candidates(
    w: &WorkspaceTxn<'_, '_>,
    segment: Option<&str>,
    now_us: i64,
    wanted: usize,
) -> Result<Vec<Node>> {
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
    let limit = if stage.is_some() { wanted * 10 } else { wanted };
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
        if out.len() >= wanted {
            break;
        }
    }
    Ok(out)
}
