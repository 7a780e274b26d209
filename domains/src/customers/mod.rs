//! Customer reads (list, profile, timeline), campaigns, opportunities (`opportunities`), and de-duplication
//! (SPEC.md "Customers"). Reads run on one snapshot; dedupe runs in one write transaction. No
//! HTTP types.

pub mod insights;
pub mod opportunities;
pub mod search;

pub use opportunities::{OpportunityList, OpportunityQuery, OpportunitySort, OpportunityView};
pub use search::{CustomerList, CustomerQuery, CustomerSort};

use std::cmp::Reverse;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};
use svc_engine::schema::{CAMPAIGN, CUSTOMER, HAS_TOUCHPOINT, INFLUENCED_BY, TOUCHPOINT};
use svc_engine::{
    normalize_email, Direction, GraphRead, IdentityKeys, Node, NodeId, Record, Value,
};

use crate::events::value_to_json;
use crate::graph_api::{ensure_writable, node_with_label};
use svc_core::error::{Error, Result};
use svc_core::plumbing::ids::PublicIds;
use svc_core::plumbing::{clock, ids};
use svc_core::store::{Store, WorkspaceId};

/// Touchpoints embedded in a profile (newest first); the timeline has them all.
pub const PROFILE_TOUCHPOINTS: usize = 100;

/// Customer properties lifted to top-level fields of [`CustomerView`].
const LIFTED: &[&str] = &["email", "phone", "externalId", "name", "cio_id", "lastSeen"];

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CustomerView {
    /// `cus_...`
    pub id: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    #[serde(rename = "externalId")]
    pub external_id: Option<String>,
    pub name: Option<String>,
    pub cio_id: Option<String>,
    /// Latest event time, RFC 3339 UTC.
    #[serde(rename = "lastSeen")]
    pub last_seen: Option<String>,
    /// Every other property of the customer.
    #[schema(value_type = Object)]
    pub properties: Map<String, Json>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct TouchpointView {
    /// `tp_...`
    pub id: String,
    pub action: Option<String>,
    pub channel: Option<String>,
    /// Campaign attribution: the campaign id the event named, or the campaign it is linked to.
    #[serde(rename = "campaignId")]
    pub campaign_id: Option<String>,
    /// Event time, RFC 3339 UTC.
    pub timestamp: Option<String>,
    #[schema(value_type = Object)]
    pub properties: Json,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CustomerProfile {
    pub customer: CustomerView,
    pub touchpoint_count: usize,
    /// The 100 most recent touchpoints, newest first.
    pub touchpoints: Vec<TouchpointView>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Timeline {
    pub customer_id: String,
    /// Every touchpoint, oldest first.
    pub touchpoints: Vec<TouchpointView>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CampaignView {
    /// `node_...`
    pub id: String,
    #[serde(rename = "campaignId")]
    pub campaign_id: Option<String>,
    pub name: Option<String>,
    /// Touchpoints attributed to the campaign (INFLUENCED_BY).
    pub touchpoints: u64,
    #[schema(value_type = Object)]
    pub properties: Map<String, Json>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CampaignList {
    /// Most touchpoints first.
    pub campaigns: Vec<CampaignView>,
}

/// A property as text: strings as they are, datetimes in RFC 3339, anything else as JSON.
pub(crate) fn str_prop(n: &Node, key: &str) -> Option<String> {
    match n.get(key)? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => match value_to_json(other) {
            Json::String(s) => Some(s),
            j => Some(j.to_string()),
        },
    }
}

pub(crate) fn props_except(n: &Node, except: &[&str]) -> Map<String, Json> {
    n.properties
        .iter()
        .filter(|(k, _)| !except.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), value_to_json(v)))
        .collect()
}

pub fn customer_view(ids: &PublicIds, n: &Node) -> CustomerView {
    CustomerView {
        id: ids.customer(n.id),
        email: str_prop(n, "email"),
        phone: str_prop(n, "phone"),
        external_id: str_prop(n, "externalId"),
        name: str_prop(n, "name"),
        cio_id: str_prop(n, "cio_id"),
        last_seen: str_prop(n, "lastSeen"),
        properties: props_except(n, LIFTED),
    }
}

fn ts_of(n: &Node) -> Option<i64> {
    match n.get("ts") {
        Some(Value::DateTime(us)) => Some(*us),
        _ => None,
    }
}

fn touchpoint_view<R: GraphRead + ?Sized>(
    ids: &PublicIds,
    r: &R,
    n: &Node,
) -> Result<TouchpointView> {
    let mut campaign_id = str_prop(n, "campaignId");
    if campaign_id.is_none() {
        for adj in r.adjacent(n.id, Direction::Outgoing, Some(INFLUENCED_BY))? {
            if let Some(c) = node_with_label(r, adj.neighbour, CAMPAIGN)? {
                campaign_id = str_prop(&c, "campaignId").or_else(|| str_prop(&c, "name"));
                break;
            }
        }
    }
    Ok(TouchpointView {
        id: ids.touchpoint(n.id),
        action: str_prop(n, "action"),
        channel: str_prop(n, "channel"),
        campaign_id,
        timestamp: str_prop(n, "ts"),
        properties: n
            .get("properties")
            .map(value_to_json)
            .filter(Json::is_object)
            .unwrap_or_else(|| Json::Object(Map::new())),
    })
}

/// The customer a path segment names: its id or an email (resolved like an event's email).
fn find_customer<R: GraphRead + ?Sized>(
    ids: &PublicIds,
    r: &R,
    find: impl Fn(&IdentityKeys) -> Result<Option<NodeId>>,
    reference: &str,
) -> Result<Node> {
    let id = if let Some(id) = ids.parse_customer(reference) {
        Some(id)
    } else if reference.contains('@') {
        find(&IdentityKeys {
            email: Some(reference.to_owned()),
            ..IdentityKeys::default()
        })?
    } else {
        None
    };
    match id {
        Some(id) => node_with_label(r, id, CUSTOMER)?.ok_or_else(|| Error::not_found("customer")),
        None => Err(Error::not_found("customer")),
    }
}

/// Touchpoints of a customer, oldest first (untimed ones last), ties by id.
fn touchpoints_of<R: GraphRead + ?Sized>(r: &R, customer: NodeId) -> Result<Vec<Node>> {
    let mut out = Vec::new();
    for adj in r.adjacent(customer, Direction::Outgoing, Some(HAS_TOUCHPOINT))? {
        if let Some(tp) = node_with_label(r, adj.neighbour, TOUCHPOINT)? {
            out.push(tp);
        }
    }
    out.sort_by_key(|n| (ts_of(n).unwrap_or(i64::MAX), n.id));
    Ok(out)
}

/// One page of the workspace's customers matching `q` (see [`search`]): the API's list, the
/// dashboard's and every reader that needs customers beyond the most recently seen.
pub async fn list(store: &Store, ws: WorkspaceId, q: CustomerQuery) -> Result<CustomerList> {
    let q = q.checked()?;
    let ids = store.ids().clone();
    store
        .read(ws, move |snap| search::search_in(&ids, snap, &q))
        .await
}

pub async fn profile(store: &Store, ws: WorkspaceId, reference: String) -> Result<CustomerProfile> {
    let ids = store.ids().clone();
    store
        .read(ws, move |snap| {
            let c = find_customer(&ids, snap, |k| Ok(snap.find_customer(k)?), &reference)?;
            let tps = touchpoints_of(snap, c.id)?;
            let touchpoints = tps
                .iter()
                .rev()
                .take(PROFILE_TOUCHPOINTS)
                .map(|n| touchpoint_view(&ids, snap, n))
                .collect::<Result<Vec<_>>>()?;
            Ok(CustomerProfile {
                customer: customer_view(&ids, &c),
                touchpoint_count: tps.len(),
                touchpoints,
            })
        })
        .await
}

pub async fn timeline(store: &Store, ws: WorkspaceId, reference: String) -> Result<Timeline> {
    let ids = store.ids().clone();
    store
        .read(ws, move |snap| {
            let c = find_customer(&ids, snap, |k| Ok(snap.find_customer(k)?), &reference)?;
            let touchpoints = touchpoints_of(snap, c.id)?
                .iter()
                .map(|n| touchpoint_view(&ids, snap, n))
                .collect::<Result<Vec<_>>>()?;
            Ok(Timeline {
                customer_id: ids.customer(c.id),
                touchpoints,
            })
        })
        .await
}

pub async fn campaigns(store: &Store, ws: WorkspaceId) -> Result<CampaignList> {
    let ids = store.ids().clone();
    store
        .read(ws, move |snap| {
            let mut campaigns = Vec::new();
            for id in snap.label_scan(CAMPAIGN)? {
                let Some(n) = snap.node(id)? else { continue };
                campaigns.push(CampaignView {
                    id: ids.node(&n.labels, n.id),
                    campaign_id: str_prop(&n, "campaignId"),
                    name: str_prop(&n, "name"),
                    touchpoints: snap.degree(id, Direction::Incoming, Some(INFLUENCED_BY))?,
                    properties: props_except(&n, &["campaignId", "name"]),
                });
            }
            campaigns.sort_by(|a, b| {
                (Reverse(a.touchpoints), &a.campaign_id, &a.id).cmp(&(
                    Reverse(b.touchpoints),
                    &b.campaign_id,
                    &b.id,
                ))
            });
            Ok(CampaignList { campaigns })
        })
        .await
}

/// One page of the workspace's opportunities matching `q` (see [`opportunities`]).
pub async fn opportunities(
    store: &Store,
    ws: WorkspaceId,
    q: OpportunityQuery,
) -> Result<OpportunityList> {
    let q = q.checked()?;
    let ids = store.ids().clone();
    store
        .read(ws, move |snap| opportunities::search_in(&ids, snap, &q))
        .await
}

// ---- de-duplication ----

/// One duplicate group: customers sharing a normalized email.
#[derive(Clone, Debug, PartialEq, Eq)]
struct GroupPlan {
    email: String,
    canonical: NodeId,
    duplicates: Vec<NodeId>,
    /// Edges of the duplicates, re-pointed to the canonical record.
    edges: u64,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct DedupeGroup {
    /// The normalized email shared by the group.
    pub email: String,
    /// The record that stays (`cus_...`).
    pub canonical: String,
    /// Records merged into it and deleted.
    pub duplicates: Vec<String>,
    /// Relationships re-pointed to the canonical record.
    pub edges_moved: u64,
    /// Audit record of the merge (absent in a dry run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge_id: Option<String>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct DedupeReport {
    pub dry_run: bool,
    pub groups: Vec<DedupeGroup>,
    /// Customer records merged away (0 on a clean workspace).
    pub merged: usize,
}

/// The audit trail of one group's merge: who, when, which ids, which edges.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MergeRecord {
    pub id: String,
    pub at: String,
    /// User id (JWT) or key id of the caller.
    pub actor: String,
    pub email: String,
    pub canonical: String,
    pub duplicates: Vec<MergedDuplicate>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MergedDuplicate {
    pub id: String,
    /// Relationship ids (`rel_...`) re-pointed from it to the canonical record.
    pub edges: Vec<String>,
}

impl Record for MergeRecord {
    const KIND: &'static str = "customer_merge";
    fn id(&self) -> String {
        self.id.clone()
    }
}

fn has_cio_id(n: &Node) -> bool {
    match n.get("cio_id") {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(_) => true,
    }
}

fn edge_count<R: GraphRead + ?Sized>(r: &R, id: NodeId) -> Result<u64> {
    Ok(r.degree(id, Direction::Outgoing, None)? + r.degree(id, Direction::Incoming, None)?)
}

/// SPEC.md's rules: group Customers by normalized email; in each group of two or more the
/// canonical record is the one (1) with a `cio_id`, then (2) with more edges, then (3) with the
/// lexicographically smallest id (of the `cus_...` ids clients see).
fn plan_dedupe<R: GraphRead + ?Sized>(ids: &PublicIds, r: &R) -> Result<Vec<GroupPlan>> {
    struct Candidate {
        id: NodeId,
        wire: String,
        cio: bool,
        edges: u64,
    }
    let mut groups: BTreeMap<String, Vec<Candidate>> = BTreeMap::new();
    for id in r.label_scan(CUSTOMER)? {
        let Some(n) = r.node(id)? else { continue };
        let Some(email) = n
            .get("email")
            .and_then(Value::as_str)
            .and_then(normalize_email)
        else {
            continue;
        };
        groups.entry(email).or_default().push(Candidate {
            id,
            wire: ids.customer(id),
            cio: has_cio_id(&n),
            edges: edge_count(r, id)?,
        });
    }
    let mut plans = Vec::new();
    for (email, mut members) in groups {
        if members.len() < 2 {
            continue;
        }
        members.sort_by(|a, b| {
            (!a.cio, Reverse(a.edges), &a.wire).cmp(&(!b.cio, Reverse(b.edges), &b.wire))
        });
        let canonical = members[0].id;
        let dups = &members[1..];
        plans.push(GroupPlan {
            email,
            canonical,
            edges: dups.iter().map(|d| d.edges).sum(),
            duplicates: dups.iter().map(|d| d.id).collect(),
        });
    }
    Ok(plans)
}

fn group_view(ids: &PublicIds, p: &GroupPlan, merge_id: Option<String>) -> DedupeGroup {
    DedupeGroup {
        email: p.email.clone(),
        canonical: ids.customer(p.canonical),
        duplicates: p.duplicates.iter().map(|d| ids.customer(*d)).collect(),
        edges_moved: p.edges,
        merge_id,
    }
}

/// `POST /v1/customers/dedupe`. A dry run reports the plan from a snapshot; otherwise the plan
/// is made and applied in one write transaction (so nothing can slip in between), every merge
/// is recorded, and the identity index follows the canonical records.
pub async fn dedupe(
    store: &Store,
    ws: WorkspaceId,
    actor: String,
    dry_run: bool,
) -> Result<DedupeReport> {
    let ids = store.ids().clone();
    if dry_run {
        let plans = {
            let ids = ids.clone();
            store.read(ws, move |snap| plan_dedupe(&ids, snap)).await?
        };
        return Ok(DedupeReport {
            dry_run: true,
            merged: plans.iter().map(|p| p.duplicates.len()).sum(),
            groups: plans.iter().map(|p| group_view(&ids, p, None)).collect(),
        });
    }
    let now = clock::now();
    store
        .write(move |tx| {
            let mut w = tx.workspace(ws);
            ensure_writable(&w)?;
            let plans = plan_dedupe(&ids, &w)?;
            let mut groups = Vec::with_capacity(plans.len());
            for (i, plan) in plans.iter().enumerate() {
                let mut merged = Vec::with_capacity(plan.duplicates.len());
                for dup in &plan.duplicates {
                    let mut edges = Vec::new();
                    for dir in [Direction::Outgoing, Direction::Incoming] {
                        for adj in w.adjacent(*dup, dir, None)? {
                            edges.push(ids.edge(adj.edge));
                        }
                    }
                    edges.sort();
                    edges.dedup();
                    w.merge_nodes(plan.canonical, *dup)?;
                    merged.push(MergedDuplicate {
                        id: ids.customer(*dup),
                        edges,
                    });
                }
                let record = MergeRecord {
                    id: format!(
                        "mrg_{:020}_{i:04}_{}",
                        crate::events::micros(now)?.max(0),
                        ids::random_base62(6)
                    ),
                    at: clock::rfc3339(now),
                    actor: actor.clone(),
                    email: plan.email.clone(),
                    canonical: ids.customer(plan.canonical),
                    duplicates: merged,
                };
                w.put_record(&record)?;
                groups.push(group_view(&ids, plan, Some(record.id)));
            }
            Ok(DedupeReport {
                dry_run: false,
                merged: plans.iter().map(|p| p.duplicates.len()).sum(),
                groups,
            })
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_engine::{GraphWrite, Properties, RecordScan};

    const WS: WorkspaceId = WorkspaceId(3);

    fn props(pairs: &[(&str, Value)]) -> Properties {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    async fn create(store: &Store, p: Properties, touchpoints: usize) -> NodeId {
        store
            .write(move |tx| {
                let mut w = tx.workspace(WS);
                let c = w.create_node(&[CUSTOMER], p)?;
                for i in 0..touchpoints {
                    let tp = w.create_node(
                        &[TOUCHPOINT],
                        props(&[
                            ("action", Value::from("x")),
                            ("ts", Value::DateTime(i as i64)),
                        ]),
                    )?;
                    w.create_edge(c, tp, HAS_TOUCHPOINT, Properties::new())?;
                }
                Ok(c)
            })
            .await
            .expect("create")
    }

    #[tokio::test]
    async fn canonical_is_cio_id_then_edges_then_smallest_id_and_dedupe_is_idempotent() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        // Group 1: the one with cio_id wins although it has fewer edges.
        let a1 = create(&store, props(&[("email", Value::from("a@x.io"))]), 3).await;
        let a2 = create(
            &store,
            props(&[
                ("email", Value::from("A@X.io ")),
                ("cio_id", Value::from("c1")),
            ]),
            1,
        )
        .await;
        // Group 2: more edges win.
        let b1 = create(&store, props(&[("email", Value::from("b@x.io"))]), 0).await;
        let b2 = create(&store, props(&[("email", Value::from("b@x.io"))]), 2).await;
        // Group 3: a tie goes to the lexicographically smallest id.
        let c1 = create(&store, props(&[("email", Value::from("c@x.io"))]), 1).await;
        let c2 = create(&store, props(&[("email", Value::from("c@x.io"))]), 1).await;
        let (c_win, c_lose) = if store.ids().customer(c1) < store.ids().customer(c2) {
            (c1, c2)
        } else {
            (c2, c1)
        };
        let lone = create(&store, props(&[("email", Value::from("d@x.io"))]), 1).await;

        let plan = dedupe(&store, WS, "usr_t".into(), true)
            .await
            .expect("plan");
        assert!(plan.dry_run);
        assert_eq!(plan.merged, 3);
        let canon: Vec<(String, Vec<String>, u64)> = plan
            .groups
            .iter()
            .map(|g| (g.canonical.clone(), g.duplicates.clone(), g.edges_moved))
            .collect();
        assert_eq!(
            canon,
            vec![
                (store.ids().customer(a2), vec![store.ids().customer(a1)], 3),
                (store.ids().customer(b2), vec![store.ids().customer(b1)], 0),
                (
                    store.ids().customer(c_win),
                    vec![store.ids().customer(c_lose)],
                    1
                ),
            ]
        );
        // The dry run changed nothing.
        let again = dedupe(&store, WS, "usr_t".into(), true)
            .await
            .expect("plan");
        assert_eq!(again.merged, 3);

        let done = dedupe(&store, WS, "usr_t".into(), false)
            .await
            .expect("apply");
        assert_eq!(done.merged, 3);
        let graph = store.graph().expect("graph");
        {
            let snap = graph.snapshot(WS);
            assert_eq!(snap.label_count(CUSTOMER).expect("count"), 4);
            assert!(snap.node(a1).expect("read").is_none());
            assert_eq!(
                snap.degree(a2, Direction::Outgoing, Some(HAS_TOUCHPOINT))
                    .expect("deg"),
                4
            );
            let keys = IdentityKeys {
                email: Some("a@x.io".into()),
                ..IdentityKeys::default()
            };
            assert!(snap
                .find_customer(&keys)
                .expect("find")
                .is_none_or(|id| id == a2));
            assert!(snap.node(lone).expect("read").is_some());
            let records: Vec<MergeRecord> =
                snap.scan_records(&RecordScan::default()).expect("records");
            assert_eq!(records.len(), 3);
            assert_eq!(records[0].actor, "usr_t");
            assert_eq!(records[0].duplicates[0].edges.len(), 3);
        }
        let second = dedupe(&store, WS, "usr_t".into(), false)
            .await
            .expect("again");
        assert_eq!((second.merged, second.groups.len()), (0, 0));
    }
}
