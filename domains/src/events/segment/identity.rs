//! Segment's identities beyond the identity keys, applied inside the pipeline's write
//! (`events::apply` calls [`anonymous_customer`] before recording and [`link`] after):
//!
//! - `anonymousId` is an identity of its own: an [`AnonymousIdentity`] record names the customer
//!   it belongs to. A message with only an `anonymousId` lands on that customer, created as an
//!   anonymous Customer node (property `anonymousId`, no identity keys) the first time.
//! - `identify` and `alias` link the `anonymousId` (and alias's `previousId`) to the customer
//!   the message resolved to: an anonymous customer is merged into it (its touchpoints move),
//!   and the record points at it from then on.
//! - `group` links the customer to a Company node keyed by `groupId` (`MEMBER_OF`), whose
//!   properties are the group's traits.

use serde::{Deserialize, Serialize};
use svc_engine::{
    Direction, GraphRead, GraphWrite, IdentityKeys, IdentityKind, NodeId, Properties, Value,
};

use super::links::{Group, Links};
use svc_core::error::{Error, Result};
use svc_core::plumbing::clock;
use svc_core::store::WorkspaceTxn;

pub use svc_core::vocabulary::prop::{ANONYMOUS_ID, GROUP_ID};
pub use svc_core::vocabulary::{COMPANY, MEMBER_OF};
/// Longest accepted anonymous id, group id or previous id (record ids are bounded).
pub const MAX_ID_CHARS: usize = 255;

/// Where an `anonymousId` points.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnonymousIdentity {
    pub anonymous_id: String,
    /// The engine id of the customer (`cus_...` on the wire).
    pub customer: u64,
    pub first_seen_at: String,
    /// `identify` or `alias` once a known customer claimed it; `None` while anonymous.
    pub linked_by: Option<String>,
    pub linked_at: Option<String>,
}

impl svc_core::store::Record for AnonymousIdentity {
    const KIND: &'static str = "segment_anonymous_id";
    fn id(&self) -> String {
        self.anonymous_id.clone()
    }
}

/// The Company node of a `groupId` (Company nodes have no declared index; this is it).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GroupNode {
    pub group_id: String,
    pub node: u64,
}

impl svc_core::store::Record for GroupNode {
    const KIND: &'static str = "segment_group";
    fn id(&self) -> String {
        self.group_id.clone()
    }
}

fn bounded<'a>(field: &str, v: &'a str) -> Result<&'a str> {
    if v.chars().count() > MAX_ID_CHARS {
        return Err(Error::invalid_field(
            field,
            v,
            &format!("longer than {MAX_ID_CHARS} characters"),
        ));
    }
    Ok(v)
}

/// Checks the ids of `links` (the pipeline's validation step).
pub fn validate(links: &Links) -> Result<()> {
    if let Some(a) = &links.anonymous_id {
        bounded("anonymousId", a)?;
    }
    if let Some(p) = &links.previous_id {
        bounded("previousId", p)?;
    }
    if let Some(g) = &links.group {
        bounded("groupId", &g.group_id)?;
    }
    Ok(())
}

/// A live Customer node with this engine id.
fn customer_node(w: &WorkspaceTxn<'_, '_>, id: u64) -> Result<Option<svc_engine::Node>> {
    Ok(w.node(NodeId(id))?
        .filter(|n| n.has_label(svc_engine::schema::CUSTOMER)))
}

/// Whether a customer holds no identity key (only an anonymous visitor so far).
fn is_anonymous(n: &svc_engine::Node) -> bool {
    IdentityKind::ALL.iter().all(|k| {
        n.properties
            .get(k.property())
            .is_none_or(|v| matches!(v, Value::Null))
    })
}

/// The customer of an event that names nobody but an `anonymousId`: the one its record names,
/// else a new anonymous customer. `None` when the keys name someone (resolution decides).
pub fn anonymous_customer(
    w: &mut WorkspaceTxn<'_, '_>,
    links: &Links,
    keys: &IdentityKeys,
) -> Result<Option<NodeId>> {
    let Some(anon) = &links.anonymous_id else {
        return Ok(None);
    };
    if keys.customer_id.is_some() || !keys.normalized().is_empty() {
        return Ok(None);
    }
    if let Some(rec) = w.get_record::<AnonymousIdentity>(anon)? {
        if customer_node(w, rec.customer)?.is_some() {
            return Ok(Some(NodeId(rec.customer)));
        }
    }
    let mut props = Properties::new();
    props.insert(ANONYMOUS_ID.to_owned(), Value::String(anon.clone()));
    let node = w.create_node(&[svc_engine::schema::CUSTOMER], props)?;
    w.put_record(&AnonymousIdentity {
        anonymous_id: anon.clone(),
        customer: node.0,
        first_seen_at: clock::now_rfc3339(),
        linked_by: None,
        linked_at: None,
    })?;
    Ok(Some(node))
}

/// After the event is recorded on `customer`: identify/alias link the anonymous id (and
/// alias's previous id) to it, group links the company. Returns the nodes it changed.
pub fn link(
    w: &mut WorkspaceTxn<'_, '_>,
    links: &Links,
    customer: NodeId,
    call: &str,
) -> Result<u32> {
    let mut mutated = 0;
    // Linking needs someone known: an identify with nothing but the anonymous id only sets
    // the visitor's traits.
    let known = match customer_node(w, customer.0)? {
        Some(n) => !is_anonymous(&n),
        None => false,
    };
    if links.link_anonymous && known {
        if let Some(anon) = &links.anonymous_id {
            mutated += claim(w, anon, customer, call)?;
        }
        if let Some(previous) = &links.previous_id {
            mutated += alias_previous(w, previous, customer)?;
        }
    }
    if let Some(group) = &links.group {
        mutated += join_group(w, group, customer)?;
    }
    Ok(mutated)
}

/// Points `anon` at `customer`, merging the anonymous customer it named into it.
fn claim(w: &mut WorkspaceTxn<'_, '_>, anon: &str, customer: NodeId, call: &str) -> Result<u32> {
    let now = clock::now_rfc3339();
    let mut mutated = 0;
    let rec = match w.get_record::<AnonymousIdentity>(anon)? {
        Some(mut rec) => {
            if rec.customer != customer.0 {
                // Only a customer nobody has identified yet is folded in: two known customers
                // are never merged because they once shared a device.
                if let Some(old) = customer_node(w, rec.customer)? {
                    if is_anonymous(&old) {
                        w.merge_nodes(customer, old.id)?;
                        mutated += 1;
                    }
                }
                rec.customer = customer.0;
            } else if rec.linked_by.is_some() {
                return Ok(0);
            }
            rec.linked_by = Some(call.to_owned());
            rec.linked_at = Some(now);
            rec
        }
        None => AnonymousIdentity {
            anonymous_id: anon.to_owned(),
            customer: customer.0,
            first_seen_at: now.clone(),
            linked_by: Some(call.to_owned()),
            linked_at: Some(now),
        },
    };
    w.put_record(&rec)?;
    let node = w
        .node(customer)?
        .ok_or_else(|| Error::internal("customer vanished while linking"))?;
    if !node.properties.contains_key(ANONYMOUS_ID) {
        w.set_node_property(customer, ANONYMOUS_ID, Value::String(anon.to_owned()))?;
        mutated += 1;
    }
    Ok(mutated)
}

/// alias: `previousId` is an anonymous id, or the user id (external id) of an earlier
/// customer; either is the same person as `customer` and is merged into it.
fn alias_previous(w: &mut WorkspaceTxn<'_, '_>, previous: &str, customer: NodeId) -> Result<u32> {
    let by_user_id = match svc_engine::normalize_external_id(previous) {
        Some(x) => w
            .index_seek(
                svc_engine::schema::CUSTOMER,
                IdentityKind::ExternalId.property(),
                &Value::String(x),
            )?
            .and_then(|found| found.into_iter().next()),
        None => None,
    };
    match by_user_id {
        Some(old) if old != customer => {
            w.merge_nodes(customer, old)?;
            Ok(1)
        }
        Some(_) => Ok(0),
        None => claim(w, previous, customer, "alias"),
    }
}

/// Links `customer` to the group's Company node (created on first sight) and sets its traits.
fn join_group(w: &mut WorkspaceTxn<'_, '_>, group: &Group, customer: NodeId) -> Result<u32> {
    let mut mutated = 0;
    let existing = match w.get_record::<GroupNode>(&group.group_id)? {
        Some(rec) => w
            .node(NodeId(rec.node))?
            .filter(|n| n.has_label(COMPANY))
            .map(|n| n.id),
        None => None,
    };
    let company = match existing {
        Some(id) => id,
        None => {
            let mut props = Properties::new();
            props.insert(GROUP_ID.to_owned(), Value::String(group.group_id.clone()));
            let id = w.create_node(&[COMPANY], props)?;
            w.put_record(&GroupNode {
                group_id: group.group_id.clone(),
                node: id.0,
            })?;
            mutated += 1;
            id
        }
    };
    let node = w
        .node(company)?
        .ok_or_else(|| Error::internal("company vanished while linking"))?;
    let mut changed = false;
    for (k, v) in &group.traits {
        if k == GROUP_ID || node.properties.get(k) == Some(v) {
            continue;
        }
        // A trait the engine refuses (an empty or over-long name) is the client's fault.
        w.set_node_property(company, k, v.clone())
            .map_err(crate::events::refusal::input_error)?;
        changed = true;
    }
    if changed && existing.is_some() {
        mutated += 1;
    }
    let member = w
        .adjacent(customer, Direction::Outgoing, Some(MEMBER_OF))?
        .iter()
        .any(|a| a.neighbour == company);
    if !member {
        w.create_edge(customer, company, MEMBER_OF, Properties::new())?;
    }
    Ok(mutated)
}

/// What an `anonymousId` resolves to now, for the read-back route.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct AnonymousView {
    #[serde(rename = "anonymousId")]
    pub anonymous_id: String,
    /// `cus_...`
    pub customer_id: String,
    pub first_seen_at: String,
    /// `identify` or `alias`; null while the visitor is anonymous.
    pub linked_by: Option<String>,
    pub linked_at: Option<String>,
}

/// The customer an anonymous id belongs to; `not_found` for an unknown one.
pub async fn lookup(
    store: &svc_core::store::Store,
    ws: svc_core::store::WorkspaceId,
    anonymous_id: String,
) -> Result<AnonymousView> {
    let rec = store
        .get::<AnonymousIdentity>(ws, anonymous_id)
        .await?
        .ok_or_else(|| Error::not_found("anonymous id"))?;
    Ok(AnonymousView {
        customer_id: store.ids().customer(NodeId(rec.customer)),
        anonymous_id: rec.anonymous_id,
        first_seen_at: rec.first_seen_at,
        linked_by: rec.linked_by,
        linked_at: rec.linked_at,
    })
}
