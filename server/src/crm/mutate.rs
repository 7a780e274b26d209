//! `crm.mutate`: setting and removing a customer's properties (never its identity keys).

use std::collections::BTreeSet;

use serde_json::{json, Value};
use svc_engine::{GraphWrite, WorkspaceTxn};

use super::{find_customer, str_field};
use crate::error::{Error, Result};
use crate::events;
use crate::ids;

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
    w: &mut WorkspaceTxn<'_, '_>,
    input: &Value,
    commit: bool,
) -> Result<(Value, String)> {
    let customer = find_customer(w, str_field(input, "customer").unwrap_or_default())?;
    let customer_id = ids::customer_id(customer.id);
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
    if set.is_empty() && unset.is_empty() {
        return Err(Error::invalid_input(
            "input: nothing to change (set or unset)",
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
        return Ok((
            json!({"would_change": changed, "customer_id": customer_id,
                "set": set, "unset": unset}),
            customer_id,
        ));
    }
    let mut properties = customer.properties.clone();
    for (k, v) in set {
        properties.insert(k.clone(), events::json_to_value(v.clone()));
    }
    for k in &unset {
        properties.remove(*k);
    }
    w.replace_node_properties(customer.id, properties)?;
    Ok((
        json!({"customer_id": customer_id, "changed": changed}),
        customer_id,
    ))
}
