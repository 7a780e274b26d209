//! Reading a customer's neighbourhood: its latest touchpoints and its linked opportunities.

use std::collections::{BTreeMap, BTreeSet};

use svc_engine::schema::{HAS_TOUCHPOINT, TOUCHPOINT};
use svc_engine::{Direction, GraphRead, Node, NodeId, Value};

use super::{AT_STAGE, HAS_OPPORTUNITY, OPPORTUNITY, OPPORTUNITY_CAP, STAGE, TOUCHPOINT_CAP};
use svc_core::error::Result;
use svc_core::plumbing::ids::PublicIds;

/// One touchpoint as the scoring, drafting and planning rules read it.
#[derive(Clone, Debug, PartialEq)]
pub struct Touch {
    pub id: NodeId,
    pub action: String,
    pub channel: Option<String>,
    pub campaign: Option<String>,
    /// Microseconds since the epoch; `None` for an untimed touchpoint.
    pub ts: Option<i64>,
    pub properties: BTreeMap<String, Value>,
}

impl Touch {
    /// The touchpoint's wire id (`tp_...`).
    pub fn wire_id(&self, ids: &PublicIds) -> String {
        ids.touchpoint(self.id)
    }

    /// A string property of the event (`properties.<key>`), when present and not blank.
    pub fn prop_str(&self, key: &str) -> Option<&str> {
        match self.properties.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim()),
            _ => None,
        }
    }
}

/// An opportunity linked to the customer.
#[derive(Clone, Debug, PartialEq)]
pub struct Opportunity {
    pub id: NodeId,
    pub name: Option<String>,
    /// The `stage` property, else the name of the Stage it is AT_STAGE.
    pub stage: Option<String>,
    /// The first numeric of `amount`, `arr`, `estimatedValue` (as reporting reads it).
    pub amount: Option<f64>,
    /// Stage progress 0..1: the opportunity's or its Stage's `progress` (percentages scaled).
    pub progress: Option<f64>,
    /// The `status` property (`open`, `won` or `lost`), when set.
    pub status: Option<String>,
}

impl Opportunity {
    /// Won, lost or closed: the `status`, else reporting's rule (a word of the stage name).
    pub fn is_closed(&self) -> bool {
        if let Some(s) = self.status.as_deref() {
            return matches!(s, "won" | "lost");
        }
        self.stage.as_deref().is_some_and(|s| {
            s.to_ascii_lowercase()
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| matches!(w, "won" | "lost" | "closed"))
        })
    }

    pub fn is_won(&self) -> bool {
        if let Some(s) = self.status.as_deref() {
            return s == "won";
        }
        self.stage
            .as_deref()
            .is_some_and(|s| s.to_ascii_lowercase().contains("won"))
    }
}

/// What one read of a customer's neighbourhood holds.
#[derive(Clone, Debug)]
pub struct Neighbourhood {
    /// The latest [`TOUCHPOINT_CAP`] touchpoints, oldest first (untimed ones first).
    pub touchpoints: Vec<Touch>,
    /// Every HAS_TOUCHPOINT edge of the customer, read or not.
    pub total_touchpoints: usize,
    pub opportunities: Vec<Opportunity>,
}

fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) if f.is_finite() => Some(*f),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
}

fn string(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        _ => None,
    }
}

/// Reads the customer's latest touchpoints and its opportunities.
pub fn neighbourhood<R: GraphRead + ?Sized>(r: &R, customer: &Node) -> Result<Neighbourhood> {
    // Node ids are allocated in increasing order, so the highest neighbour ids are the latest
    // ingested touchpoints; adjacency entries are keys only, cheap to list in full.
    let mut edges = r.adjacent(customer.id, Direction::Outgoing, Some(HAS_TOUCHPOINT))?;
    let total_touchpoints = edges.len();
    edges.sort_by_key(|e| e.neighbour);
    let skip = edges.len().saturating_sub(TOUCHPOINT_CAP);
    let mut touchpoints = Vec::with_capacity(edges.len() - skip);
    for adj in &edges[skip..] {
        let Some(node) = r.node(adj.neighbour)? else {
            continue;
        };
        if !node.has_label(TOUCHPOINT) {
            continue;
        }
        let properties = match node.get("properties") {
            Some(Value::Map(m)) => m.clone(),
            _ => BTreeMap::new(),
        };
        touchpoints.push(Touch {
            id: node.id,
            action: string(node.get("action")).unwrap_or_default(),
            channel: string(node.get("channel")),
            campaign: string(node.get("campaignId")),
            ts: match node.get("ts") {
                Some(Value::DateTime(us)) => Some(*us),
                _ => None,
            },
            properties,
        });
    }
    touchpoints.sort_by_key(|t| (t.ts, t.id));

    let mut opportunities = Vec::new();
    let mut seen = BTreeSet::new();
    for dir in [Direction::Outgoing, Direction::Incoming] {
        for adj in r.adjacent(customer.id, dir, Some(HAS_OPPORTUNITY))? {
            if opportunities.len() >= OPPORTUNITY_CAP || !seen.insert(adj.neighbour) {
                continue;
            }
            if let Some(o) = r.node(adj.neighbour)?.filter(|n| n.has_label(OPPORTUNITY)) {
                opportunities.push(opportunity(r, &o)?);
            }
        }
    }
    Ok(Neighbourhood {
        touchpoints,
        total_touchpoints,
        opportunities,
    })
}

fn opportunity<R: GraphRead + ?Sized>(r: &R, o: &Node) -> Result<Opportunity> {
    let mut stage = string(o.get("stage"));
    let mut progress = num(o.get("progress"));
    for dir in [Direction::Outgoing, Direction::Incoming] {
        for adj in r.adjacent(o.id, dir, Some(AT_STAGE))? {
            if let Some(s) = r.node(adj.neighbour)?.filter(|n| n.has_label(STAGE)) {
                stage = stage.or_else(|| string(s.get("name")));
                progress = progress.or_else(|| num(s.get("progress")));
            }
        }
    }
    Ok(Opportunity {
        id: o.id,
        name: string(o.get("name")),
        stage,
        amount: ["amount", "arr", "estimatedValue"]
            .iter()
            .find_map(|k| num(o.get(k))),
        progress: progress.map(|p| if p > 1.0 { p / 100.0 } else { p }.clamp(0.0, 1.0)),
        status: string(o.get(svc_core::vocabulary::prop::STATUS)).map(|s| s.to_ascii_lowercase()),
    })
}
