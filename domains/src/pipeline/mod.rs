//! The sales pipeline in the graph (docs/intelligence.md "Pipeline"):
//! `(Customer)-[:HAS_OPPORTUNITY]->(Opportunity)-[:AT_STAGE]->(Stage)`.
//!
//! An opportunity is keyed by its `opportunityId` (equality index), namespaced per source like
//! external customer ids (`hubspot:123`, `stripe:sub_...`; the workspace's own ids from generic
//! events and crm.mutate as they are). It belongs to one customer and is AT one Stage at a time;
//! every stage change is kept as an `opportunity_stage_changed` touchpoint on the customer (from
//! and to stage, amount, status). [`apply`] is the one write path: ingestion (`sources` reads
//! events and webhooks into an [`OpportunityChange`]) and crm.mutate both call it inside their
//! write transaction, so the read-check-write runs atomically on the writer thread.

pub mod funnel;
pub mod sources;

pub use funnel::{funnel_rank, NO_STAGE};

use serde_json::{json, Value as Json};
use svc_core::store::WorkspaceTxn;
use svc_engine::{
    Direction, EventInput, GraphRead, GraphWrite, IdentityKeys, Node, NodeId, Properties, Value,
};

use crate::graph_api::values::value_to_json;
use svc_core::error::{Error, Result};
use svc_core::plumbing::ids::PublicIds;
use svc_core::vocabulary::{prop, AT_STAGE, CUSTOMER, HAS_OPPORTUNITY, OPPORTUNITY, STAGE};

/// The action of the touchpoints that keep an opportunity's stage history.
pub const STAGE_CHANGED: &str = "opportunity_stage_changed";
/// The generic event that creates (or updates) an opportunity.
pub const CREATED: &str = "opportunity_created";
/// The stage `close_won` / `close_lost` set.
pub const WON_STAGE: &str = "closedwon";
pub const LOST_STAGE: &str = "closedlost";
/// When the opportunity last changed (a datetime: the time of the event that changed it).
pub const UPDATED_AT: &str = "updatedAt";

/// Where an opportunity stands: `open`, `won` or `lost` (its `status` property).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Open,
    Won,
    Lost,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Open => "open",
            Status::Won => "won",
            Status::Lost => "lost",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        match s {
            "open" => Some(Status::Open),
            "won" => Some(Status::Won),
            "lost" => Some(Status::Lost),
            _ => None,
        }
    }

    /// The status a stage name implies. Letters and digits only, lower-cased: `won` and
    /// `closedwon` (HubSpot's id; also `closed_won`, `Closed Won`, `closed-won`) are won;
    /// `lost`, `closedlost` and a bare `closed` are lost; otherwise a name with the word `won`
    /// is won, one with `lost` or `closed` lost, and anything else is open.
    pub fn of_stage(stage: &str) -> Status {
        let squashed: String = stage
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect();
        match squashed.as_str() {
            "won" | "closedwon" => return Status::Won,
            "lost" | "closedlost" | "closed" => return Status::Lost,
            _ => {}
        }
        // Longer names: a word `won` wins over `closed`/`lost` ("Closed - won (renewal)").
        let lower = stage.to_ascii_lowercase();
        let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric()).collect();
        if words.contains(&"won") {
            Status::Won
        } else if words.iter().any(|w| matches!(*w, "lost" | "closed")) {
            Status::Lost
        } else {
            Status::Open
        }
    }
}

/// What an event or a crm.mutate operation says about one opportunity. `None` fields are left
/// as they are.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpportunityChange {
    /// Namespaced opportunity id.
    pub opportunity_id: String,
    pub name: Option<String>,
    /// Currency units (never cents).
    pub amount: Option<f64>,
    pub currency: Option<String>,
    pub stage: Option<String>,
    /// An explicit status (close won/lost); otherwise it follows the stage.
    pub status: Option<Status>,
    /// The event's customer keys are a placeholder (a HubSpot deal event names no contact):
    /// when the opportunity already belongs to a customer, the event is recorded on that one.
    pub follow_owner: bool,
    /// The customer may be a placeholder of this external id, merged into the event's customer
    /// when the association arrives (HubSpot `deal.associationChange`).
    pub merge_placeholder: Option<String>,
    /// Where the change came from (`hubspot`, `stripe`, `api`, `crm.mutate`): the history
    /// touchpoint's channel.
    pub source: String,
}

/// What [`apply`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    pub node: NodeId,
    pub created: bool,
    /// (from, to) when the stage changed.
    pub stage_change: Option<(Option<String>, String)>,
    /// Nodes created or changed (opportunity, stage, history touchpoint).
    pub nodes_mutated: u32,
    /// The opportunity after the change.
    pub view: Json,
}

fn string_prop(n: &Node, key: &str) -> Option<String> {
    match n.properties.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// A number as the engine stores it: whole numbers as integers.
pub fn amount_value(a: f64) -> Value {
    if a.fract() == 0.0 && a.abs() < 9.0e15 {
        Value::Int(a as i64)
    } else {
        Value::Float(a)
    }
}

/// The opportunity with this id, through the equality index.
pub fn find<R: GraphRead + ?Sized>(r: &R, opportunity_id: &str) -> Result<Option<Node>> {
    let ids = r
        .index_seek(
            OPPORTUNITY,
            prop::OPPORTUNITY_ID,
            &Value::String(opportunity_id.to_owned()),
        )?
        .ok_or_else(|| Error::internal("no equality index on Opportunity.opportunityId"))?;
    for id in ids {
        if let Some(n) = r.node(id)?.filter(|n| n.has_label(OPPORTUNITY)) {
            return Ok(Some(n));
        }
    }
    Ok(None)
}

/// The customer an opportunity belongs to.
pub fn owner<R: GraphRead + ?Sized>(r: &R, opportunity: NodeId) -> Result<Option<NodeId>> {
    for adj in r.adjacent(opportunity, Direction::Incoming, Some(HAS_OPPORTUNITY))? {
        if r.has_label(adj.neighbour, CUSTOMER)? {
            return Ok(Some(adj.neighbour));
        }
    }
    Ok(None)
}

/// The opportunities of a customer.
pub fn of_customer<R: GraphRead + ?Sized>(r: &R, customer: NodeId) -> Result<Vec<Node>> {
    let mut out = Vec::new();
    for adj in r.adjacent(customer, Direction::Outgoing, Some(HAS_OPPORTUNITY))? {
        if let Some(n) = r.node(adj.neighbour)?.filter(|n| n.has_label(OPPORTUNITY)) {
            out.push(n);
        }
    }
    Ok(out)
}

/// The name of the Stage an opportunity is AT_STAGE, else its `stage` property.
pub fn stage_of<R: GraphRead + ?Sized>(r: &R, o: &Node) -> Result<Option<String>> {
    for adj in r.adjacent(o.id, Direction::Outgoing, Some(AT_STAGE))? {
        if let Some(s) = r.node(adj.neighbour)?.filter(|n| n.has_label(STAGE)) {
            if let Some(name) = string_prop(&s, prop::NAME) {
                return Ok(Some(name));
            }
        }
    }
    Ok(string_prop(o, prop::STAGE))
}

/// An opportunity's status: its `status` property, else what its stage implies.
pub fn status_of<R: GraphRead + ?Sized>(r: &R, o: &Node) -> Result<Status> {
    if let Some(s) = string_prop(o, prop::STATUS).and_then(|s| Status::parse(&s)) {
        return Ok(s);
    }
    Ok(stage_of(r, o)?.map_or(Status::Open, |s| Status::of_stage(&s)))
}

/// The Stage node of this name, created when absent.
fn stage_node(w: &mut WorkspaceTxn<'_, '_>, name: &str) -> Result<(NodeId, bool)> {
    let found = w
        .index_seek(STAGE, prop::NAME, &Value::String(name.to_owned()))?
        .unwrap_or_default();
    if let Some(id) = found.first() {
        return Ok((*id, false));
    }
    let mut p = Properties::new();
    p.insert(prop::NAME.into(), Value::String(name.to_owned()));
    Ok((w.create_node(&[STAGE], p)?, true))
}

/// The customer an event carrying `change` is recorded on, when it follows the opportunity's
/// owner rather than its own (placeholder) keys.
pub fn owner_for_event(
    w: &WorkspaceTxn<'_, '_>,
    change: &OpportunityChange,
) -> Result<Option<NodeId>> {
    if !change.follow_owner {
        return Ok(None);
    }
    match find(w, &change.opportunity_id)? {
        Some(o) => owner(w, o.id),
        None => Ok(None),
    }
}

/// Creates or updates the opportunity of `change` for `customer` at `ts` (engine
/// microseconds): links it to the customer (an opportunity has one owner: a new owner takes it
/// over, and a placeholder owner named by `merge_placeholder` is merged into the customer),
/// sets name, amount, stage and status, moves AT_STAGE, and records the stage change. When
/// `history` is given (the event itself is the stage-change record), the from/to details are
/// added to that touchpoint instead of writing a new one.
pub fn apply(
    ids: &PublicIds,
    w: &mut WorkspaceTxn<'_, '_>,
    customer: NodeId,
    change: &OpportunityChange,
    ts: i64,
    history: Option<NodeId>,
) -> Result<Applied> {
    let mut mutated = 0u32;
    let existing = find(w, &change.opportunity_id)?;
    let created = existing.is_none();
    let (id, mut props) = match existing {
        Some(n) => (n.id, n.properties),
        None => {
            let mut p = Properties::new();
            p.insert(
                prop::OPPORTUNITY_ID.into(),
                Value::String(change.opportunity_id.clone()),
            );
            p.insert(prop::STATUS.into(), Value::String("open".into()));
            p.insert(prop::SOURCE.into(), Value::String(change.source.clone()));
            (w.create_node(&[OPPORTUNITY], p.clone())?, p)
        }
    };
    let before = props.clone();

    // Ownership.
    let current_owner = owner(w, id)?;
    if current_owner != Some(customer) {
        if let Some(old) = current_owner {
            let placeholder = change.merge_placeholder.as_deref().is_some_and(|p| {
                w.node(old)
                    .ok()
                    .flatten()
                    .and_then(|n| string_prop(&n, prop::EXTERNAL_ID))
                    .as_deref()
                    == Some(p)
            });
            if placeholder {
                // The placeholder's touchpoints and this very edge move to the customer.
                w.merge_nodes(customer, old)?;
            } else {
                for adj in w.adjacent(id, Direction::Incoming, Some(HAS_OPPORTUNITY))? {
                    w.delete_edge(adj.edge)?;
                }
            }
        }
        if owner(w, id)? != Some(customer) {
            w.create_edge(customer, id, HAS_OPPORTUNITY, Properties::new())?;
        }
    }

    if let Some(name) = &change.name {
        props.insert(prop::NAME.into(), Value::String(name.clone()));
    }
    if let Some(a) = change.amount {
        props.insert(prop::AMOUNT.into(), amount_value(a));
    }
    if let Some(c) = &change.currency {
        props.insert(prop::CURRENCY.into(), Value::String(c.to_ascii_lowercase()));
    }
    let old_stage = match props.get(prop::STAGE) {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    };
    let mut stage_change = None;
    if let Some(stage) = &change.stage {
        if old_stage.as_deref() != Some(stage.as_str()) {
            props.insert(prop::STAGE.into(), Value::String(stage.clone()));
            for adj in w.adjacent(id, Direction::Outgoing, Some(AT_STAGE))? {
                w.delete_edge(adj.edge)?;
            }
            let (stage_id, stage_created) = stage_node(w, stage)?;
            mutated += u32::from(stage_created);
            w.create_edge(id, stage_id, AT_STAGE, Properties::new())?;
            stage_change = Some((old_stage.clone(), stage.clone()));
        }
    }
    let status = change.status.unwrap_or_else(|| {
        let stage = props.get(prop::STAGE).and_then(Value::as_str);
        stage.map_or(Status::Open, Status::of_stage)
    });
    props.insert(prop::STATUS.into(), Value::String(status.as_str().into()));
    if props != before {
        // When it last changed (the event's time), for lists sorted by "updated"; an older
        // event replayed late does not move it back.
        let newer = match before.get(UPDATED_AT) {
            Some(Value::DateTime(t)) => ts > *t,
            _ => true,
        };
        if newer {
            props.insert(UPDATED_AT.into(), Value::DateTime(ts));
        }
        w.replace_node_properties(id, props.clone())?;
    }
    if created || props != before {
        mutated += 1;
    }

    if let Some((from, to)) = &stage_change {
        let mut details = Properties::new();
        details.insert(
            prop::OPPORTUNITY_ID.into(),
            Value::String(change.opportunity_id.clone()),
        );
        details.insert(
            prop::FROM_STAGE.into(),
            from.clone().map_or(Value::Null, Value::String),
        );
        details.insert(prop::TO_STAGE.into(), Value::String(to.clone()));
        details.insert(
            prop::STATUS.into(),
            Value::String(status.as_str().to_owned()),
        );
        if let Some(a) = props.get(prop::AMOUNT) {
            details.insert(prop::AMOUNT.into(), a.clone());
        }
        match history {
            Some(tp) => {
                let mut merged = match w
                    .node(tp)?
                    .and_then(|n| n.properties.get("properties").cloned())
                {
                    Some(Value::Map(m)) => m,
                    _ => Properties::new(),
                };
                merged.extend(details);
                w.set_node_property(tp, "properties", Value::Map(merged))?;
            }
            None => {
                w.record_event(&EventInput {
                    keys: IdentityKeys {
                        customer_id: Some(customer),
                        ..IdentityKeys::default()
                    },
                    action: STAGE_CHANGED.to_owned(),
                    channel: Some(change.source.clone()),
                    ts,
                    properties: details,
                    campaign_id: None,
                    outbound: crate::events::activity::is_outbound(STAGE_CHANGED),
                })?;
                mutated += 1;
            }
        }
    }
    let node = w
        .node(id)?
        .ok_or_else(|| Error::internal("opportunity vanished while writing it"))?;
    Ok(Applied {
        node: id,
        created,
        stage_change,
        nodes_mutated: mutated,
        view: view(ids, &node, Some(customer)),
    })
}

/// An opportunity as the API shows it.
pub fn view(ids: &PublicIds, o: &Node, customer: Option<NodeId>) -> Json {
    let get = |k: &str| o.properties.get(k).map(value_to_json).unwrap_or(Json::Null);
    json!({
        "id": ids.node(&o.labels, o.id),
        "opportunityId": get(prop::OPPORTUNITY_ID),
        "name": get(prop::NAME),
        "amount": get(prop::AMOUNT),
        "stage": get(prop::STAGE),
        "status": get(prop::STATUS),
        "customer_id": customer.map(|c| ids.customer(c)),
    })
}

#[cfg(test)]
mod tests;
