//! `memory.write`: notes agents keep on a customer (open loops, blockers, decisions), read back
//! by `context.get`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use svc_core::store::WorkspaceTxn;
use time::OffsetDateTime;

use super::{find_customer, str_field, time_ordered_id};
use svc_core::error::Result;
use svc_core::keys::AgentKey;
use svc_core::plumbing::clock;
use svc_core::plumbing::ids::PublicIds;
use svc_core::store::Record;

/// A memory note on a customer (`memory.write`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MemoryNote {
    /// `mem_` + time-ordered base62.
    pub id: String,
    pub customer_id: String,
    pub kind: String,
    pub text: String,
    pub tags: Vec<String>,
    pub key_id: String,
    pub agent: String,
    pub request_id: String,
    pub created_at: String,
}

impl Record for MemoryNote {
    const KIND: &'static str = "memory_note";
    fn id(&self) -> String {
        self.id.clone()
    }
    fn indexes(&self) -> Vec<(&'static str, String)> {
        vec![("customer", self.customer_id.clone())]
    }
}

/// The notes on a customer; `references` are the forms of its id notes may hold
/// (`PublicIds::customer_references`).
pub fn notes_of(w: &WorkspaceTxn<'_, '_>, references: &[String]) -> Result<Vec<MemoryNote>> {
    let mut notes = Vec::new();
    for reference in references {
        notes.extend(w.find_records::<MemoryNote>("customer", reference)?);
    }
    notes.sort_by(|a, b| a.id.cmp(&b.id));
    notes.dedup_by(|a, b| a.id == b.id);
    Ok(notes)
}

/// Writes (or, without `commit`, describes) the note of a memory.write input; returns the
/// result and the customer id.
pub fn write(
    ids: &PublicIds,
    w: &mut WorkspaceTxn<'_, '_>,
    key: &AgentKey,
    request_id: &str,
    input: &Value,
    commit: bool,
    now: OffsetDateTime,
) -> Result<(Value, String)> {
    let customer = find_customer(ids, w, str_field(input, "customer").unwrap_or_default())?;
    let customer_id = ids.customer(customer.id);
    let kind = str_field(input, "kind").unwrap_or("note").to_owned();
    let text = str_field(input, "text").unwrap_or_default().to_owned();
    let tags: Vec<String> = input
        .get("tags")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect()
        })
        .unwrap_or_default();
    if !commit {
        return Ok((
            json!({"would_write": "memory_note", "customer_id": customer_id,
                "kind": kind, "text": text, "tags": tags}),
            customer_id,
        ));
    }
    let note = MemoryNote {
        id: time_ordered_id("mem", now),
        customer_id: customer_id.clone(),
        kind,
        text,
        tags,
        key_id: key.id.clone(),
        agent: key.agent.clone(),
        request_id: request_id.to_owned(),
        created_at: clock::rfc3339(now),
    };
    w.put_record(&note)?;
    Ok((
        json!({"memory_id": note.id, "customer_id": customer_id, "kind": note.kind,
            "created_at": note.created_at}),
        customer_id,
    ))
}
