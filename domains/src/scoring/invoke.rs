//! `score.churn` / `score.conversion` as invoked: one customer, a list or a segment, scored
//! with the workspace's current models read once; a committed invocation also writes the
//! scores onto each customer scored (see [`write_back`](super::write_back)).

use std::collections::BTreeSet;

use serde_json::{json, Value as Json};
use svc_core::store::WorkspaceTxn;
use svc_engine::Node;
use time::OffsetDateTime;

use super::{assess_with, to_json, write_back, Assessment, Models, Which};
use crate::crm;
use crate::planning::segment::candidates;
use svc_core::error::{Code, Error, Result};
use svc_core::plumbing::ids::PublicIds;

/// Customers one invocation scores at most.
pub const BATCH_MAX: usize = 500;
/// Customers of a segment scored when no `limit` is given.
pub const SEGMENT_DEFAULT: usize = 100;

fn micros_of(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX)
}

fn item(ids: &PublicIds, which: Which, a: &Assessment) -> Json {
    let customer_id = ids.customer(a.customer);
    match which {
        Which::Churn => to_json(&customer_id, &a.churn, &a.churn_model, &a.computed_at),
        Which::Conversion => to_json(
            &customer_id,
            &a.conversion,
            &a.conversion_model,
            &a.computed_at,
        ),
    }
}

fn text<'a>(input: &'a Json, key: &str) -> Option<&'a str> {
    input.get(key).and_then(Json::as_str).map(str::trim)
}

/// Scores one customer and, when `commit`, writes its scores back.
fn score_one(
    w: &mut WorkspaceTxn<'_, '_>,
    c: &Node,
    now: OffsetDateTime,
    models: &Models,
    commit: bool,
) -> Result<Assessment> {
    let a = assess_with(&*w, c, now, models)?;
    if commit {
        write_back(w, c.id, a.churn.probability, a.conversion.probability)?;
    }
    Ok(a)
}

/// Runs a score capability; `commit` writes the scores back. Answers the result and, for one
/// customer, its id.
pub fn run(
    ids: &PublicIds,
    w: &mut WorkspaceTxn<'_, '_>,
    which: Which,
    input: &Json,
    commit: bool,
    now: OffsetDateTime,
) -> Result<(Json, Option<String>)> {
    let given = ["customer", "customers", "segment"]
        .iter()
        .filter(|k| input.get(**k).is_some_and(|v| !v.is_null()))
        .count();
    if given != 1 {
        return Err(Error::invalid_input(
            "exactly one of customer, customers or segment is required",
        ));
    }
    if input.get("limit").is_some() && text(input, "segment").is_none() {
        return Err(Error::invalid_field(
            "limit",
            &input["limit"].to_string(),
            "only with segment",
        ));
    }
    let models = Models::current_in(w)?;
    if let Some(r) = text(input, "customer") {
        let c = crm::find_customer(ids, &*w, r)?;
        let a = score_one(w, &c, now, &models, commit)?;
        return Ok((item(ids, which, &a), Some(ids.customer(a.customer))));
    }
    let mut not_found = Vec::new();
    let list = input.get("customers").and_then(Json::as_array);
    let chosen: Vec<Node> = match (list, text(input, "segment")) {
        (Some(list), _) => {
            let mut seen = BTreeSet::new();
            let mut out = Vec::new();
            for r in list.iter().filter_map(Json::as_str).take(BATCH_MAX) {
                match crm::find_customer(ids, &*w, r) {
                    Ok(c) => {
                        if seen.insert(c.id) {
                            out.push(c);
                        }
                    }
                    Err(e) if e.code == Code::NotFound => not_found.push(r.to_owned()),
                    Err(e) => return Err(e),
                }
            }
            out
        }
        (None, Some(segment)) => {
            let limit = input
                .get("limit")
                .and_then(Json::as_u64)
                .map_or(SEGMENT_DEFAULT, |l| (l as usize).clamp(1, BATCH_MAX));
            candidates(w, Some(segment), micros_of(now), limit)?
        }
        (None, None) => {
            return Err(Error::invalid_input(
                "exactly one of customer, customers or segment is required",
            ))
        }
    };
    let mut results = Vec::with_capacity(chosen.len());
    for c in &chosen {
        results.push(item(ids, which, &score_one(w, c, now, &models, commit)?));
    }
    let mut out = json!({"count": results.len(), "results": results});
    if !not_found.is_empty() {
        out["not_found"] = json!(not_found);
    }
    if let Some(s) = text(input, "segment") {
        out["segment"] = json!(s);
    }
    Ok((out, None))
}
