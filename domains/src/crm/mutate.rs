//! `crm.mutate`: setting and removing a customer's properties (never its identity keys), and
//! the customer's opportunities (`opportunity`: create, set_stage, set_amount, close_won,
//! close_lost; written through `pipeline::apply`, so the stage history is kept the same way as
//! for events).

use std::collections::BTreeSet;

use serde_json::{json, Value};
use svc_core::store::WorkspaceTxn;
use svc_engine::{GraphWrite, NodeId};

use super::{find_customer, str_field};
use crate::events;
use crate::pipeline;
use svc_core::capabilities::Capability;
use svc_core::error::{Error, Result};
use svc_core::plumbing::ids::PublicIds;

/// Properties crm.mutate may not touch: identity keys move only through ingestion and dedupe
/// (so the identity index stays exact), and `lastSeen` only forward through events.
const RESERVED_PROPERTIES: &[&str] = &[
    "email",
    "phone",
    "externalId",
    "external_id",
    "cio_id",
    "lastSeen",
];

/// Applies (or, without `commit`, describes) a crm.mutate input; returns the result and the
/// customer id.
pub fn mutate(
    ids: &PublicIds,
    w: &mut WorkspaceTxn<'_, '_>,
    input: &Value,
    commit: bool,
) -> Result<(Value, String)> {
    let customer = find_customer(ids, w, str_field(input, "customer").unwrap_or_default())?;
    let customer_id = ids.customer(customer.id);
    let empty = serde_json::Map::new();
    let set = input
        .get("set")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let unset: Vec<&str> = input
        .get("unset")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for k in set.keys().map(String::as_str).chain(unset.iter().copied()) {
        if RESERVED_PROPERTIES.contains(&k) {
            return Err(Error::invalid_field(
                "input",
                k,
                "identity keys and lastSeen cannot be changed through crm.mutate",
            ));
        }
    }
    let opportunity = match input.get("opportunity") {
        Some(op) => Some(opportunity_change(w, customer.id, op)?),
        None => None,
    };
    if set.is_empty() && unset.is_empty() && opportunity.is_none() {
        return Err(Error::invalid_input(
            "input: nothing to change (set, unset or opportunity)",
        ));
    }
    let mut changed: BTreeSet<String> = set.keys().cloned().collect();
    changed.extend(
        unset
            .iter()
            .filter(|k| customer.properties.contains_key(**k))
            .map(|k| (*k).to_owned()),
    );
    if !commit {
        let mut preview = json!({"would_change": changed, "customer_id": customer_id,
                "set": set, "unset": unset});
        if let Some((op, change)) = &opportunity {
            preview["would_apply"] = json!({"op": op, "opportunityId": change.opportunity_id,
                "name": change.name, "amount": change.amount, "stage": change.stage,
                "status": change.status.map(pipeline::Status::as_str)});
        }
        return Ok((preview, customer_id));
    }
    if !set.is_empty() || !unset.is_empty() {
        let mut properties = customer.properties.clone();
        for (k, v) in set {
            properties.insert(k.clone(), events::json_to_value(v.clone()));
        }
        for k in &unset {
            properties.remove(*k);
        }
        w.replace_node_properties(customer.id, properties)?;
    }
    let mut result = json!({"customer_id": customer_id, "changed": changed});
    if let Some((_, change)) = &opportunity {
        let now = crate::events::micros(svc_core::plumbing::clock::now())?;
        let applied = pipeline::apply(ids, w, customer.id, change, now, None)?;
        result["opportunity"] = applied.view;
    }
    Ok((result, customer_id))
}

/// Operations on opportunities (the `opportunity` input).
pub const OPPORTUNITY_OPS: &[&str] = &[
    "create",
    "set_stage",
    "set_amount",
    "close_won",
    "close_lost",
];

/// Reads an `opportunity` operation into the change it makes. Every operation but `create`
/// names an existing opportunity of this customer; `create` refuses an id already taken.
fn opportunity_change(
    w: &WorkspaceTxn<'_, '_>,
    customer: NodeId,
    op: &Value,
) -> Result<(String, pipeline::OpportunityChange)> {
    let kind = str_field(op, "op").unwrap_or_default().to_owned();
    if !OPPORTUNITY_OPS.contains(&kind.as_str()) {
        return Err(Error::invalid_field(
            "opportunity.op",
            &kind,
            "must be create, set_stage, set_amount, close_won or close_lost",
        ));
    }
    let id = str_field(op, "opportunityId")
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let amount = match op.get("amount") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_f64()
                .filter(|a| a.is_finite() && *a >= 0.0)
                .ok_or_else(|| {
                    Error::invalid_field(
                        "opportunity.amount",
                        &v.to_string(),
                        "a number of at least 0",
                    )
                })?,
        ),
    };
    let stage = str_field(op, "stage")
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let mut change = pipeline::OpportunityChange {
        name: str_field(op, "name").map(str::to_owned),
        amount,
        stage: stage.map(str::to_owned),
        source: Capability::CrmMutate.id().to_owned(),
        ..pipeline::OpportunityChange::default()
    };
    if kind == "create" {
        let id = match id {
            Some(id) => id.to_owned(),
            None => super::time_ordered_id("opp", svc_core::plumbing::clock::now()),
        };
        if pipeline::find(w, &id)?.is_some() {
            return Err(Error::invalid_field(
                "opportunity.opportunityId",
                &id,
                "an opportunity with this id exists already",
            ));
        }
        change.opportunity_id = id;
        return Ok((kind, change));
    }
    let id = id.ok_or_else(|| {
        Error::invalid_input(format!("opportunity.opportunityId: required by {kind}"))
    })?;
    let found = pipeline::find(w, id)?.ok_or_else(|| Error::not_found("opportunity"))?;
    if pipeline::owner(w, found.id)? != Some(customer) {
        // Another customer's opportunity is not this customer's to change.
        return Err(Error::not_found("opportunity"));
    }
    change.opportunity_id = id.to_owned();
    match kind.as_str() {
        "set_stage" if change.stage.is_none() => {
            return Err(Error::invalid_input(
                "opportunity.stage: required by set_stage",
            ))
        }
        "set_amount" if change.amount.is_none() => {
            return Err(Error::invalid_input(
                "opportunity.amount: required by set_amount",
            ))
        }
        "close_won" => {
            change.stage = Some(pipeline::WON_STAGE.to_owned());
            change.status = Some(pipeline::Status::Won);
        }
        "close_lost" => {
            change.stage = Some(pipeline::LOST_STAGE.to_owned());
            change.status = Some(pipeline::Status::Lost);
        }
        _ => {}
    }
    Ok((kind, change))
}
