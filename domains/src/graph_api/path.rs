//! `GET /v1/graph/path`: the shortest path between two nodes, relationships taken in either
//! direction, for the graph explorer.
//!
//! The search runs on a bounded subgraph read from one snapshot: breadth-first balls grow
//! around both ends, one layer at a time (the smaller frontier first), until they meet, the
//! hop limit is spent or [`MAX_LOADED_NODES`] nodes are loaded; petgraph's A* (unit weights,
//! so a shortest path by hops) then finds the path in what was loaded. Growing from both ends
//! keeps a path through a hub (a campaign with thousands of touchpoints) from loading the
//! whole hub ball of one side.

use std::collections::{BTreeMap, HashMap, HashSet};

use petgraph::graph::{NodeIndex, UnGraph};
use serde::Serialize;
use svc_engine::{Direction, EdgeId, GraphRead, NodeId};

use super::export::{properties_json, GraphNode, GraphRelationship};
use svc_core::error::{Code, Error, Result};
use svc_core::plumbing::ids::{self, PublicIds};

/// Most hops a path may have (and the default).
pub const MAX_HOPS: u32 = 8;
pub const DEFAULT_HOPS: u32 = 6;
/// Most nodes the two balls may hold together before the search gives up (`truncated`).
pub const MAX_LOADED_NODES: usize = 20_000;

/// The answer: the path's nodes from `from` to `to` and the relationships between them, in
/// order; empty when no path was found within the limits.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct GraphPath {
    pub found: bool,
    /// Hops (relationships) on the path; 0 when `from` = `to`.
    pub length: Option<u32>,
    pub nodes: Vec<GraphNode>,
    pub relationships: Vec<GraphRelationship>,
    /// Nodes read to answer.
    pub explored: usize,
    /// True when the node limit stopped the search before the hop limit: a longer search
    /// might still find a path.
    pub truncated: bool,
}

/// The engine node named by a node id (`cus_...`, `tp_...` or `node_...`) if it exists in
/// `r` and its prefix matches its labels; 404 otherwise, 400 for a malformed id.
fn resolve<R: GraphRead + ?Sized>(
    ids: &PublicIds,
    r: &R,
    field: &str,
    wire: &str,
) -> Result<NodeId> {
    let not_found = || {
        Error::new(
            Code::NotFound,
            format!("{field}: no node {wire} in this workspace"),
        )
    };
    let Some(id) = ids.parse_any_node(wire) else {
        // An id of the right shape that names nothing (past the legacy ceiling, say): 404,
        // as any absent id.
        if ids::is_node_id_shaped(wire) {
            return Err(not_found());
        }
        return Err(Error::invalid_field(
            field,
            wire,
            "must be a node id: cus_..., tp_... or node_...",
        ));
    };
    match r.node(id)? {
        // The prefix must fit the labels (a legacy id is compared in its current form).
        Some(n) if ids.node(&n.labels, n.id) == ids.current(wire) => Ok(id),
        _ => Err(not_found()),
    }
}

/// One breadth-first ball: every node it reached, and its current frontier.
struct Ball {
    seen: HashSet<NodeId>,
    frontier: Vec<NodeId>,
}

impl Ball {
    fn new(start: NodeId) -> Ball {
        Ball {
            seen: HashSet::from([start]),
            frontier: vec![start],
        }
    }
}

/// Loaded relationships (each once, by edge id) and the node count.
struct Loaded {
    /// By id, so the subgraph (and so the path among equals) is the same on every call.
    edges: BTreeMap<EdgeId, (NodeId, NodeId)>,
    nodes: usize,
}

/// Grows `ball` by one layer, recording the relationships it crosses. False when the node
/// limit stopped it part-way.
fn grow<R: GraphRead + ?Sized>(r: &R, ball: &mut Ball, loaded: &mut Loaded) -> Result<bool> {
    let mut next = Vec::new();
    for &n in &ball.frontier {
        for direction in [Direction::Outgoing, Direction::Incoming] {
            for adj in r.adjacent(n, direction, None)? {
                let ends = match direction {
                    Direction::Outgoing => (n, adj.neighbour),
                    Direction::Incoming => (adj.neighbour, n),
                };
                loaded.edges.entry(adj.edge).or_insert(ends);
                if ball.seen.insert(adj.neighbour) {
                    loaded.nodes += 1;
                    next.push(adj.neighbour);
                    if loaded.nodes >= MAX_LOADED_NODES {
                        ball.frontier = next;
                        return Ok(false);
                    }
                }
            }
        }
    }
    ball.frontier = next;
    Ok(true)
}

/// The shortest path from `from` to `to` (wire ids) within `max_hops` (1 to [`MAX_HOPS`]).
pub fn shortest_path<R: GraphRead + ?Sized>(
    ids: &PublicIds,
    r: &R,
    from: &str,
    to: &str,
    max_hops: u32,
) -> Result<GraphPath> {
    if !(1..=MAX_HOPS).contains(&max_hops) {
        return Err(Error::invalid_field(
            "max_hops",
            &max_hops.to_string(),
            &format!("must be 1 to {MAX_HOPS}"),
        ));
    }
    let start = resolve(ids, r, "from", from)?;
    let goal = resolve(ids, r, "to", to)?;
    let mut a = Ball::new(start);
    let mut b = Ball::new(goal);
    let mut loaded = Loaded {
        edges: BTreeMap::new(),
        nodes: if start == goal { 1 } else { 2 },
    };
    let mut hops = 0;
    let mut truncated = false;
    while start != goal && hops < max_hops && a.seen.is_disjoint(&b.seen) {
        let side = if a.frontier.len() <= b.frontier.len() {
            &mut a
        } else {
            &mut b
        };
        if side.frontier.is_empty() {
            break;
        }
        if !grow(r, side, &mut loaded)? {
            truncated = true;
            break;
        }
        hops += 1;
    }

    // The loaded subgraph, undirected, for petgraph.
    let mut graph: UnGraph<NodeId, EdgeId> = UnGraph::default();
    let mut index: HashMap<NodeId, NodeIndex> = HashMap::new();
    let mut at = |g: &mut UnGraph<NodeId, EdgeId>, n: NodeId| {
        *index.entry(n).or_insert_with(|| g.add_node(n))
    };
    at(&mut graph, start);
    at(&mut graph, goal);
    for (&edge, &(s, e)) in &loaded.edges {
        let (si, ei) = (at(&mut graph, s), at(&mut graph, e));
        graph.add_edge(si, ei, edge);
    }
    let (si, gi) = (index[&start], index[&goal]);
    let found = petgraph::algo::astar(&graph, si, |n| n == gi, |_| 1u32, |_| 0u32)
        .filter(|(cost, _)| *cost <= max_hops);
    let Some((length, steps)) = found else {
        return Ok(GraphPath {
            found: false,
            length: None,
            nodes: Vec::new(),
            relationships: Vec::new(),
            explored: loaded.nodes,
            truncated,
        });
    };

    let mut nodes = Vec::with_capacity(steps.len());
    for &i in &steps {
        let n = r
            .node(graph[i])?
            .ok_or_else(|| Error::internal("a node of the snapshot vanished"))?;
        nodes.push(GraphNode {
            id: ids.node(&n.labels, n.id),
            labels: n.labels,
            properties: properties_json(&n.properties),
        });
    }
    let mut relationships = Vec::with_capacity(steps.len().saturating_sub(1));
    for pair in steps.windows(2) {
        // The cheapest of possibly several relationships between the two (any one is a
        // shortest path): the lowest id, so answers are stable.
        let edge = graph
            .edges_connecting(pair[0], pair[1])
            .map(|e| *e.weight())
            .min()
            .ok_or_else(|| Error::internal("a path step without a relationship"))?;
        let e = r
            .edge(edge)?
            .ok_or_else(|| Error::internal("a relationship of the snapshot vanished"))?;
        let wire = |n: NodeId| -> Result<String> {
            let node = r
                .node(n)?
                .ok_or_else(|| Error::internal("a node of the snapshot vanished"))?;
            Ok(ids.node(&node.labels, node.id))
        };
        relationships.push(GraphRelationship {
            id: ids.edge(e.id),
            rel_type: e.rel_type.clone(),
            source: wire(e.start)?,
            target: wire(e.end)?,
            properties: properties_json(&e.properties),
        });
    }
    Ok(GraphPath {
        found: true,
        length: Some(length),
        nodes,
        relationships,
        explored: loaded.nodes,
        truncated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_query::model::ModelGraph;

    const G: &str = "\
CREATE (a:Customer {email: 'a'}), (b:Customer {email: 'b'}), (c:Customer {email: 'c'}),
       (s:Campaign {campaignId: 'spring'}),
       (a)-[:HAS_TOUCHPOINT]->(a1:Touchpoint {action: 'visit'}),
       (b)-[:HAS_TOUCHPOINT]->(b1:Touchpoint {action: 'visit'}),
       (c)-[:HAS_TOUCHPOINT]->(c1:Touchpoint {action: 'visit'}),
       (a1)-[:INFLUENCED_BY]->(s), (b1)-[:INFLUENCED_BY]->(s)";

    fn graph() -> ModelGraph {
        let mut g = ModelGraph::new();
        let stmt = svc_query::parse(G).expect("parse");
        svc_query::run_write(&mut g, &stmt, &Default::default(), &Default::default())
            .expect("create");
        g
    }

    fn test_ids() -> PublicIds {
        PublicIds::new(&[3; ids::KEY_BYTES], 100)
    }

    /// The wire id of the customer with `email`.
    fn customer(g: &ModelGraph, email: &str) -> String {
        for id in g.label_scan("Customer").expect("scan") {
            let n = g.node(id).expect("read").expect("node");
            if n.get("email") == Some(&svc_engine::Value::String(email.to_owned())) {
                return test_ids().customer(id);
            }
        }
        panic!("no customer {email}")
    }

    #[test]
    fn the_path_goes_through_the_shared_campaign_against_the_edges_directions() {
        let g = graph();
        let (a, b) = (customer(&g, "a"), customer(&g, "b"));
        let p = shortest_path(&test_ids(), &g, &a, &b, DEFAULT_HOPS).expect("path");
        assert!(p.found && !p.truncated);
        assert_eq!(p.length, Some(4));
        let labels: Vec<&str> = p.nodes.iter().map(|n| n.labels[0].as_str()).collect();
        assert_eq!(
            labels,
            [
                "Customer",
                "Touchpoint",
                "Campaign",
                "Touchpoint",
                "Customer"
            ]
        );
        assert_eq!(
            (p.nodes[0].id.as_str(), p.nodes[4].id.as_str()),
            (a.as_str(), b.as_str())
        );
        let types: Vec<&str> = p
            .relationships
            .iter()
            .map(|r| r.rel_type.as_str())
            .collect();
        assert_eq!(
            types,
            [
                "HAS_TOUCHPOINT",
                "INFLUENCED_BY",
                "INFLUENCED_BY",
                "HAS_TOUCHPOINT"
            ]
        );
        // Relationships keep their own direction: b1 -> spring is the third step.
        assert_eq!(p.relationships[2].source, p.nodes[3].id);
        assert_eq!(p.relationships[2].target, p.nodes[2].id);
    }

    #[test]
    fn unreachable_too_far_and_the_same_node() {
        let g = graph();
        let (a, b, c) = (customer(&g, "a"), customer(&g, "b"), customer(&g, "c"));
        let none = shortest_path(&test_ids(), &g, &a, &c, MAX_HOPS).expect("answer");
        assert!(!none.found && none.nodes.is_empty() && none.length.is_none());
        let short = shortest_path(&test_ids(), &g, &a, &b, 3).expect("answer");
        assert!(!short.found, "4 hops needed, 3 allowed");
        let same = shortest_path(&test_ids(), &g, &a, &a, 1).expect("answer");
        assert_eq!(
            (same.found, same.length, same.nodes.len()),
            (true, Some(0), 1)
        );
    }

    #[test]
    fn ids_are_checked() {
        let g = graph();
        let a = customer(&g, "a");
        let bad = shortest_path(&test_ids(), &g, "cus_x", &a, 2).expect_err("malformed");
        assert_eq!(bad.code, Code::InvalidInput);
        let missing = shortest_path(&test_ids(), &g, &a, "node_999999", 2).expect_err("unknown");
        assert_eq!(missing.code, Code::NotFound);
        // Well formed but naming nothing: past the legacy ceiling, or any digits.
        for absent in ["tp_264617049115893906797", "cus_100", "node_00000000009"] {
            let e = shortest_path(&test_ids(), &g, absent, &a, 2).expect_err("absent");
            assert_eq!(e.code, Code::NotFound, "{absent}");
        }
        // A legacy id below the ceiling still names its node.
        let n = test_ids().parse_customer(&a).expect("id").0;
        let same = shortest_path(&test_ids(), &g, &format!("cus_{n}"), &a, 1).expect("legacy");
        assert!(same.found);
        // A customer named with the touchpoint prefix is not that node.
        let wrong = a.replace("cus_", "tp_");
        let mislabelled = shortest_path(&test_ids(), &g, &wrong, &a, 2).expect_err("prefix");
        assert_eq!(mislabelled.code, Code::NotFound);
        let hops = shortest_path(&test_ids(), &g, &a, &a, MAX_HOPS + 1).expect_err("hops");
        assert_eq!(hops.code, Code::InvalidInput);
    }
}
