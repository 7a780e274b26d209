//! Derived customer views (SPEC.md "Customers": segments, journeys, cohorts, products), each
//! computed from one snapshot of the workspace graph. No HTTP types.
//!
//! - Segments are rule-based: activity recency from `lastSeen`, and lifecycle stage (the
//!   `lifecycle_stage` property, else the name of the Stage the customer is AT_STAGE).
//! - Journeys are the most common ordered paths of touchpoint actions (the first
//!   [`JOURNEY_STEPS`] actions of each customer, consecutive repeats collapsed).
//! - Cohorts are the connected components of the customer-campaign graph (customers linked to
//!   the campaigns that influenced their touchpoints), found with petgraph's union-find.
//! - Products are read from touchpoint properties (`product`, `productId`, `product_id`, `sku`,
//!   or a `products` list of strings or objects with one of those keys).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use petgraph::unionfind::UnionFind;
use serde::Serialize;
use svc_engine::schema::{CAMPAIGN, CUSTOMER, HAS_TOUCHPOINT, INFLUENCED_BY, TOUCHPOINT};
use svc_engine::{Direction, GraphRead, Node, NodeId, Value};

use crate::graph_api::node_with_label;
use svc_core::error::Result;
use svc_core::plumbing::ids::PublicIds;
use svc_core::store::{Store, WorkspaceId};
use svc_core::vocabulary::{prop, AT_STAGE, STAGE};

/// Customer ids listed as a sample of each group.
pub const SAMPLE: usize = 10;
/// Steps of a journey path.
pub const JOURNEY_STEPS: usize = 5;
/// Journeys listed.
pub const JOURNEYS_LISTED: usize = 20;

const DAY_US: i64 = 24 * 60 * 60 * 1_000_000;
/// Recency segments: (id, name, upper bound in days, inclusive); the last catches the rest.
const RECENCY: &[(&str, &str, i64)] = &[
    ("active_7d", "Active in the last 7 days", 7),
    ("active_30d", "Active 8 to 30 days ago", 30),
    ("dormant_90d", "Dormant: last active 31 to 90 days ago", 90),
    (
        "lapsed",
        "Lapsed: last active more than 90 days ago",
        i64::MAX,
    ),
];

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Segment {
    /// `recency:<bucket>` or `lifecycle:<stage>`.
    pub id: String,
    pub name: String,
    /// `recency` or `lifecycle`.
    pub kind: String,
    /// The rule in words.
    pub rule: String,
    pub size: usize,
    /// Up to 10 customer ids.
    pub sample: Vec<String>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct SegmentList {
    pub segments: Vec<Segment>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Journey {
    /// Ordered touchpoint actions.
    pub path: Vec<String>,
    /// Customers whose journey starts with exactly this path.
    pub customers: usize,
    /// `customers` over all customers with touchpoints, 0..1.
    pub share: f64,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct JourneyList {
    pub journeys: Vec<Journey>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Cohort {
    /// `cohort_<n>`, largest first.
    pub id: String,
    pub size: usize,
    /// Campaign ids of the component (empty for the unattributed cohort).
    pub campaigns: Vec<String>,
    pub sample: Vec<String>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CohortList {
    /// How the cohorts were found.
    pub method: String,
    pub cohorts: Vec<Cohort>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Product {
    pub id: String,
    /// Touchpoints naming the product.
    pub touchpoints: usize,
    /// Distinct customers with such a touchpoint.
    pub customers: usize,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct ProductList {
    pub products: Vec<Product>,
}

fn customers<R: GraphRead + ?Sized>(r: &R) -> Result<Vec<Node>> {
    let mut out = Vec::new();
    for id in r.label_scan(CUSTOMER)? {
        if let Some(n) = r.node(id)? {
            out.push(n);
        }
    }
    Ok(out)
}

/// A customer's touchpoints in time order (untimed last).
fn touchpoints<R: GraphRead + ?Sized>(r: &R, customer: NodeId) -> Result<Vec<Node>> {
    let mut out = Vec::new();
    for adj in r.adjacent(customer, Direction::Outgoing, Some(HAS_TOUCHPOINT))? {
        if let Some(tp) = node_with_label(r, adj.neighbour, TOUCHPOINT)? {
            out.push(tp);
        }
    }
    out.sort_by_key(|n| {
        let ts = match n.get("ts") {
            Some(Value::DateTime(us)) => *us,
            _ => i64::MAX,
        };
        (ts, n.id)
    });
    Ok(out)
}

fn sample(ids: &PublicIds, members: &[NodeId]) -> Vec<String> {
    members
        .iter()
        .take(SAMPLE)
        .map(|id| ids.customer(*id))
        .collect()
}

fn stage_of<R: GraphRead + ?Sized>(r: &R, c: &Node) -> Result<Option<String>> {
    if let Some(Value::String(s)) = c.get(prop::LIFECYCLE_STAGE) {
        if !s.trim().is_empty() {
            return Ok(Some(s.trim().to_owned()));
        }
    }
    for adj in r.adjacent(c.id, Direction::Outgoing, Some(AT_STAGE))? {
        if let Some(stage) = node_with_label(r, adj.neighbour, STAGE)? {
            if let Some(Value::String(name)) = stage.get(prop::NAME) {
                return Ok(Some(name.clone()));
            }
        }
    }
    Ok(None)
}

fn compute_segments<R: GraphRead + ?Sized>(
    ids: &PublicIds,
    r: &R,
    now_us: i64,
) -> Result<SegmentList> {
    let mut recency: Vec<Vec<NodeId>> = vec![Vec::new(); RECENCY.len()];
    let mut never = Vec::new();
    let mut stages: BTreeMap<String, Vec<NodeId>> = BTreeMap::new();
    for c in customers(r)? {
        match c.get("lastSeen") {
            Some(Value::DateTime(seen)) => {
                let days = now_us.saturating_sub(*seen).max(0) / DAY_US;
                let bucket = RECENCY
                    .iter()
                    .position(|(_, _, max)| days <= *max)
                    .unwrap_or(RECENCY.len() - 1);
                recency[bucket].push(c.id);
            }
            _ => never.push(c.id),
        }
        if let Some(stage) = stage_of(r, &c)? {
            stages.entry(stage).or_default().push(c.id);
        }
    }
    let mut segments: Vec<Segment> = RECENCY
        .iter()
        .zip(&recency)
        .map(|((id, name, max), members)| Segment {
            id: format!("recency:{id}"),
            name: (*name).to_owned(),
            kind: "recency".to_owned(),
            rule: if *max == i64::MAX {
                "lastSeen more than 90 days ago".to_owned()
            } else {
                format!("lastSeen within the segment's window, at most {max} days ago")
            },
            size: members.len(),
            sample: sample(ids, members),
        })
        .collect();
    segments.push(Segment {
        id: "recency:never_seen".to_owned(),
        name: "Never seen: no events recorded".to_owned(),
        kind: "recency".to_owned(),
        rule: "no lastSeen".to_owned(),
        size: never.len(),
        sample: sample(ids, &never),
    });
    for (stage, members) in stages {
        segments.push(Segment {
            id: format!("lifecycle:{stage}"),
            name: format!("Lifecycle stage: {stage}"),
            kind: "lifecycle".to_owned(),
            rule: format!("lifecycle_stage = {stage:?}, or AT_STAGE a Stage named {stage:?}"),
            size: members.len(),
            sample: sample(ids, &members),
        });
    }
    Ok(SegmentList { segments })
}

fn compute_journeys<R: GraphRead + ?Sized>(r: &R) -> Result<JourneyList> {
    let mut paths: HashMap<Vec<String>, usize> = HashMap::new();
    let mut total = 0usize;
    for c in customers(r)? {
        let mut path: Vec<String> = Vec::new();
        for tp in touchpoints(r, c.id)? {
            let Some(Value::String(action)) = tp.get("action") else {
                continue;
            };
            if path.last() != Some(action) {
                path.push(action.clone());
            }
            if path.len() == JOURNEY_STEPS {
                break;
            }
        }
        if !path.is_empty() {
            total += 1;
            *paths.entry(path).or_default() += 1;
        }
    }
    let mut journeys: Vec<Journey> = paths
        .into_iter()
        .map(|(path, customers)| Journey {
            path,
            customers,
            share: customers as f64 / total.max(1) as f64,
        })
        .collect();
    journeys.sort_by(|a, b| {
        b.customers
            .cmp(&a.customers)
            .then_with(|| a.path.cmp(&b.path))
    });
    journeys.truncate(JOURNEYS_LISTED);
    Ok(JourneyList { journeys })
}

fn compute_cohorts<R: GraphRead + ?Sized>(ids: &PublicIds, r: &R) -> Result<CohortList> {
    let custs = customers(r)?;
    // Dense indexes: customers first, then campaigns as they are met.
    let mut campaign_index: BTreeMap<NodeId, usize> = BTreeMap::new();
    let mut campaign_names: Vec<String> = Vec::new();
    let mut links: Vec<(usize, usize)> = Vec::new();
    for (ci, c) in custs.iter().enumerate() {
        for tp in touchpoints(r, c.id)? {
            for adj in r.adjacent(tp.id, Direction::Outgoing, Some(INFLUENCED_BY))? {
                let Some(camp) = node_with_label(r, adj.neighbour, CAMPAIGN)? else {
                    continue;
                };
                let next = campaign_index.len();
                let k = *campaign_index.entry(camp.id).or_insert_with(|| {
                    campaign_names.push(match camp.get("campaignId") {
                        Some(Value::String(s)) => s.clone(),
                        _ => ids.node(&camp.labels, camp.id),
                    });
                    next
                });
                links.push((ci, custs.len() + k));
            }
        }
    }
    let mut uf = UnionFind::<usize>::new(custs.len() + campaign_names.len());
    for (a, b) in &links {
        uf.union(*a, *b);
    }
    let mut attributed: BTreeMap<usize, (Vec<NodeId>, BTreeSet<String>)> = BTreeMap::new();
    let mut unattributed = Vec::new();
    let linked: BTreeSet<usize> = links.iter().map(|(c, _)| *c).collect();
    for (ci, c) in custs.iter().enumerate() {
        if linked.contains(&ci) {
            let root = uf.find_mut(ci);
            attributed.entry(root).or_default().0.push(c.id);
        } else {
            unattributed.push(c.id);
        }
    }
    for (k, name) in campaign_names.iter().enumerate() {
        let root = uf.find_mut(custs.len() + k);
        if let Some(entry) = attributed.get_mut(&root) {
            entry.1.insert(name.clone());
        }
    }
    let mut groups: Vec<(Vec<NodeId>, Vec<String>)> = attributed
        .into_values()
        .map(|(members, camps)| (members, camps.into_iter().collect()))
        .collect();
    if !unattributed.is_empty() {
        groups.push((unattributed, Vec::new()));
    }
    groups.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
    let cohorts = groups
        .into_iter()
        .enumerate()
        .map(|(i, (members, campaigns))| Cohort {
            id: format!("cohort_{}", i + 1),
            size: members.len(),
            campaigns,
            sample: sample(ids, &members),
        })
        .collect();
    Ok(CohortList {
        method: "connected components (petgraph's union-find) of the customer-campaign graph: customers \
                 are linked to the campaigns that influenced their touchpoints; customers with \
                 no attributed touchpoint form one unattributed cohort"
            .to_owned(),
        cohorts,
    })
}

const PRODUCT_KEYS: &[&str] = &["product", "productId", "product_id", "sku"];

fn product_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Int(i) => Some(i.to_string()),
        Value::Map(m) => PRODUCT_KEYS
            .iter()
            .find_map(|k| m.get(*k).and_then(product_of)),
        _ => None,
    }
}

fn products_in(props: &BTreeMap<String, Value>) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = PRODUCT_KEYS
        .iter()
        .filter_map(|k| props.get(*k).and_then(product_of))
        .collect();
    if let Some(Value::List(items)) = props.get("products") {
        out.extend(items.iter().filter_map(product_of));
    }
    out
}

fn compute_products<R: GraphRead + ?Sized>(r: &R) -> Result<ProductList> {
    let mut counts: BTreeMap<String, (usize, BTreeSet<NodeId>)> = BTreeMap::new();
    for c in customers(r)? {
        for tp in touchpoints(r, c.id)? {
            let Some(Value::Map(props)) = tp.get("properties") else {
                continue;
            };
            for p in products_in(props) {
                let e = counts.entry(p).or_default();
                e.0 += 1;
                e.1.insert(c.id);
            }
        }
    }
    let mut products: Vec<Product> = counts
        .into_iter()
        .map(|(id, (touchpoints, who))| Product {
            id,
            touchpoints,
            customers: who.len(),
        })
        .collect();
    products.sort_by(|a, b| {
        b.touchpoints
            .cmp(&a.touchpoints)
            .then_with(|| a.id.cmp(&b.id))
    });
    Ok(ProductList { products })
}

pub async fn segments(store: &Store, ws: WorkspaceId) -> Result<SegmentList> {
    let now_us = crate::events::micros(svc_core::plumbing::clock::now())?;
    let ids = store.ids().clone();
    store
        .read(ws, move |snap| compute_segments(&ids, snap, now_us))
        .await
}

pub async fn journeys(store: &Store, ws: WorkspaceId) -> Result<JourneyList> {
    store.read(ws, |snap| compute_journeys(snap)).await
}

pub async fn cohorts(store: &Store, ws: WorkspaceId) -> Result<CohortList> {
    let ids = store.ids().clone();
    store
        .read(ws, move |snap| compute_cohorts(&ids, snap))
        .await
}

pub async fn products(store: &Store, ws: WorkspaceId) -> Result<ProductList> {
    store.read(ws, |snap| compute_products(snap)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_query::model::ModelGraph;

    fn graph(q: &str) -> ModelGraph {
        let mut g = ModelGraph::new();
        let stmt = svc_query::parse(q).expect("parse");
        svc_query::run_write(&mut g, &stmt, &Default::default(), &Default::default())
            .expect("create");
        g
    }

    const G: &str = "\
CREATE (a:Customer {email: 'a', lastSeen: datetime('2026-03-01T00:00:00Z'), lifecycle_stage: 'trial'}),
       (b:Customer {email: 'b', lastSeen: datetime('2026-02-10T00:00:00Z')}),
       (c:Customer {email: 'c', lastSeen: datetime('2025-01-01T00:00:00Z')}),
       (d:Customer {email: 'd'}),
       (s:Campaign {campaignId: 'spring'}), (f:Campaign {campaignId: 'fall'}), (w:Campaign {campaignId: 'winter'}),
       (a)-[:HAS_TOUCHPOINT]->(a1:Touchpoint {action: 'visit', ts: datetime('2026-01-01T00:00:00Z'), properties: {sku: 'A1'}}),
       (a)-[:HAS_TOUCHPOINT]->(a2:Touchpoint {action: 'visit', ts: datetime('2026-01-02T00:00:00Z')}),
       (a)-[:HAS_TOUCHPOINT]->(a3:Touchpoint {action: 'buy', ts: datetime('2026-01-03T00:00:00Z'), properties: {products: [{sku: 'A1'}, 'B2']}}),
       (b)-[:HAS_TOUCHPOINT]->(b2:Touchpoint {action: 'buy', ts: datetime('2026-01-05T00:00:00Z')}),
       (b)-[:HAS_TOUCHPOINT]->(b1:Touchpoint {action: 'visit', ts: datetime('2026-01-04T00:00:00Z'), properties: {product: 'A1'}}),
       (c)-[:HAS_TOUCHPOINT]->(c1:Touchpoint {action: 'visit', ts: datetime('2026-01-04T00:00:00Z')}),
       (a1)-[:INFLUENCED_BY]->(s), (b1)-[:INFLUENCED_BY]->(s), (b2)-[:INFLUENCED_BY]->(f), (c1)-[:INFLUENCED_BY]->(w)";

    #[test]
    fn segments_by_recency_and_stage() {
        let g = graph(G);
        let now =
            crate::events::micros(time::macros::datetime!(2026-03-02 00:00 UTC)).expect("now");
        let s = compute_segments(&PublicIds::random(0), &g, now).expect("segments");
        let sizes: BTreeMap<&str, usize> =
            s.segments.iter().map(|s| (s.id.as_str(), s.size)).collect();
        assert_eq!(sizes["recency:active_7d"], 1);
        assert_eq!(sizes["recency:active_30d"], 1);
        assert_eq!(sizes["recency:dormant_90d"], 0);
        assert_eq!(sizes["recency:lapsed"], 1);
        assert_eq!(sizes["recency:never_seen"], 1);
        assert_eq!(sizes["lifecycle:trial"], 1);
    }

    #[test]
    fn journeys_collapse_repeats_and_rank_by_customers() {
        let j = compute_journeys(&graph(G)).expect("journeys");
        let top: Vec<(Vec<&str>, usize)> = j
            .journeys
            .iter()
            .map(|j| (j.path.iter().map(String::as_str).collect(), j.customers))
            .collect();
        assert_eq!(top, vec![(vec!["visit", "buy"], 2), (vec!["visit"], 1)]);
        assert!((j.journeys[0].share - 2.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn cohorts_are_components_of_the_customer_campaign_graph() {
        let c = compute_cohorts(&PublicIds::random(0), &graph(G)).expect("cohorts");
        let got: Vec<(usize, Vec<&str>)> = c
            .cohorts
            .iter()
            .map(|c| (c.size, c.campaigns.iter().map(String::as_str).collect()))
            .collect();
        // a and b share spring (b also fall); c alone with winter; d unattributed.
        assert_eq!(
            got,
            vec![
                (2, vec!["fall", "spring"]),
                (1, vec!["winter"]),
                (1, vec![])
            ]
        );
    }

    #[test]
    fn products_from_touchpoint_properties() {
        let p = compute_products(&graph(G)).expect("products");
        let got: Vec<(&str, usize, usize)> = p
            .products
            .iter()
            .map(|p| (p.id.as_str(), p.touchpoints, p.customers))
            .collect();
        assert_eq!(got, vec![("A1", 3, 2), ("B2", 1, 1)]);
    }
}
