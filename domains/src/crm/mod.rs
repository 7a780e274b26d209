//! The customer graph as the CRM sees it: resolving a customer reference, reading a customer's
//! properties and touchpoints, and the CRM operations agents invoke through the gateway
//! (`context` for context.get, `memory` for memory.write, `mutate` for crm.mutate).

pub mod context;
pub mod memory;
pub mod mutate;
pub mod sentiment;

use serde_json::Value;
use svc_engine::{normalize_email, normalize_phone, GraphRead, Node, NodeId, WorkspaceId};
use time::OffsetDateTime;

use svc_core::error::{Error, Result};
use svc_core::plumbing::ids::{self, PublicIds};

pub fn str_field<'v>(input: &'v Value, name: &str) -> Option<&'v str> {
    input.get(name).and_then(Value::as_str)
}

/// The customer a reference names: its id (`cus_...`), else an email (contains `@`), else a
/// phone (when it normalizes as one), else an external id. Not found is a 404.
pub fn find_customer<R: GraphRead + ?Sized>(
    ids: &PublicIds,
    w: &R,
    reference: &str,
) -> Result<Node> {
    let r = reference.trim();
    let mut candidates: Vec<NodeId> = Vec::new();
    if let Some(id) = ids.parse_customer(r) {
        candidates.push(id);
    } else {
        let seek = |prop: &str, values: &[String]| -> Result<Vec<NodeId>> {
            let mut out = Vec::new();
            for v in values {
                let found = w
                    .index_seek(
                        svc_engine::schema::CUSTOMER,
                        prop,
                        &svc_engine::Value::String(v.clone()),
                    )?
                    .unwrap_or_default();
                out.extend(found);
            }
            Ok(out)
        };
        if r.contains('@') {
            let mut values = vec![r.to_owned()];
            values.extend(normalize_email(r));
            candidates = seek("email", &values)?;
        } else if let Some(phone) = normalize_phone(r) {
            candidates = seek("phone", &[r.to_owned(), phone])?;
        }
        if candidates.is_empty() {
            candidates = seek("externalId", &[r.to_owned()])?;
        }
    }
    candidates.sort();
    for id in candidates {
        if let Some(node) = w.node(id)? {
            if node.has_label(svc_engine::schema::CUSTOMER) {
                return Ok(node);
            }
        }
    }
    Err(Error::not_found("customer"))
}

pub fn prop_str<'n>(node: &'n Node, key: &str) -> Option<&'n str> {
    match node.properties.get(key) {
        Some(svc_engine::Value::String(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

pub fn customer_label(ids: &PublicIds, node: &Node) -> String {
    prop_str(node, "name")
        .or_else(|| prop_str(node, "email"))
        .or_else(|| prop_str(node, "externalId"))
        .map(str::to_owned)
        .unwrap_or_else(|| ids.customer(node.id))
}

pub use svc_core::plumbing::clock::{micros_of, micros_rfc3339};

pub const DAY_US: i64 = 86_400 * 1_000_000;

/// `<prefix>_` + 11 base62 digits of the time in microseconds + 6 random ones.
pub fn time_ordered_id(prefix: &str, now: OffsetDateTime) -> String {
    let micros = u64::try_from(micros_of(now)).unwrap_or(0);
    format!(
        "{prefix}_{}{}",
        ids::base62_fixed(micros, 11),
        ids::random_base62(6)
    )
}

/// The customer id a reference names, from a snapshot of the workspace (routes outside the
/// gateway's transactions).
pub async fn resolve(
    store: &svc_core::store::Store,
    ws: WorkspaceId,
    reference: String,
) -> Result<String> {
    let ids = store.ids().clone();
    store
        .read(ws, move |snap| {
            find_customer(&ids, snap, &reference).map(|n| ids.customer(n.id))
        })
        .await
}
