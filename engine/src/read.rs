//! The narrow read and write interfaces the query engine runs over.
//!
//! Snapshots and write transactions of the engine implement them; so can an in-memory model
//! graph, which is how the query executor is checked against a naive reference.

use std::ops::Bound;

use crate::error::EngineError;
use crate::model::{AdjacentEdge, Direction, Edge, EdgeId, Node, NodeId, Properties, Value};
use crate::readmodel::ModelView;

/// The kind of a declared property index (see `schema`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexKind {
    /// Exact-match lookups on strings (and any other value).
    Equality,
    /// Ordered by numeric / datetime value: range scans and top-k.
    Ordered,
}

/// Scan order of an ordered index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Ascending,
    Descending,
}

/// How many entries of each value type one property index holds (nodes whose value is null,
/// a list, a map or NaN have none). Kept exact by the writer, so reading it costs a few point
/// reads whatever the size of the index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexStats {
    pub booleans: u64,
    pub numbers: u64,
    pub datetimes: u64,
    pub strings: u64,
    /// Dates, times, local datetimes and durations.
    pub other_temporals: u64,
}

impl IndexStats {
    /// Entries of every type.
    pub fn total(&self) -> u64 {
        self.booleans + self.numbers + self.datetimes + self.strings + self.other_temporals
    }
}

/// A comparison operator of a pushed-down property test (`n.key <op> value`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
}

/// `n.key <op> value` with Cypher's semantics: true only when the property exists and the
/// comparison is defined and holds (integers and floats compare numerically; values of other
/// different types are unequal and unordered). `value` is a scalar (not a list or a map).
#[derive(Clone, Debug, PartialEq)]
pub struct PropertyTest {
    pub key: String,
    pub op: Comparison,
    pub value: Value,
}

impl PropertyTest {
    /// Whether a property value (None: absent) passes the test.
    pub fn passes(&self, v: Option<&Value>) -> bool {
        v.is_some_and(|v| match self.op {
            // Temporal equality is stricter than "orders equal": the same instant in two
            // zones is not the same datetime.
            Comparison::Eq => values_equal(v, &self.value),
            op => compare_values(v, &self.value).is_some_and(|o| op.holds(o)),
        })
    }
}

impl Comparison {
    /// Whether an ordering (value against constant) satisfies the operator.
    pub fn holds(self, o: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            Comparison::Eq => o == Equal,
            Comparison::Lt => o == Less,
            Comparison::Le => o != Greater,
            Comparison::Gt => o == Greater,
            Comparison::Ge => o != Less,
        }
    }
}

/// How a stored value compares with a scalar constant under Cypher's rules, as far as a
/// property test needs it: None when the comparison is undefined (null, different types, NaN).
/// Equality of different types is "unequal" in Cypher, which a test treats like undefined
/// (neither passes `=`), so one function serves both.
pub fn compare_values(v: &Value, c: &Value) -> Option<std::cmp::Ordering> {
    match (v, c) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::DateTime(x), Value::DateTime(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::Float(y)) => (*x as f64).partial_cmp(y),
        (Value::Float(x), Value::Int(y)) => x.partial_cmp(&(*y as f64)),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y),
        // Temporal values order within their own type (datetimes by instant, times by their
        // UTC time of day); durations are not ordered.
        (Value::Date(x), Value::Date(y)) | (Value::LocalTime(x), Value::LocalTime(y)) => {
            Some(x.cmp(y))
        }
        (Value::LocalDateTime(s, n), Value::LocalDateTime(t, m)) => Some((s, n).cmp(&(t, m))),
        (Value::Time(..), Value::Time(..)) => Some(time_utc_nanos(v)?.cmp(&time_utc_nanos(c)?)),
        (Value::DateTime(_) | Value::ZonedDateTime(_), _) => {
            Some(instant_nanos(v)?.cmp(&instant_nanos(c)?))
        }
        _ => None,
    }
}

/// Cypher `=` between two non-null scalars: temporal values are equal only when they are the
/// same value (a time's offset and a datetime's zone included), others when they compare equal.
pub fn values_equal(v: &Value, c: &Value) -> bool {
    match (v, c) {
        (Value::Time(..), Value::Time(..))
        | (Value::ZonedDateTime(_), Value::ZonedDateTime(_))
        | (Value::Duration(_), Value::Duration(_)) => v == c,
        (Value::ZonedDateTime(z), Value::DateTime(_))
        | (Value::DateTime(_), Value::ZonedDateTime(z)) => {
            z.offset == 0
                && z.zone.is_none()
                && compare_values(v, c) == Some(std::cmp::Ordering::Equal)
        }
        _ => compare_values(v, c) == Some(std::cmp::Ordering::Equal),
    }
}

/// A datetime's instant in nanoseconds since the epoch.
pub(crate) fn instant_nanos(v: &Value) -> Option<i128> {
    match v {
        Value::DateTime(us) => Some(i128::from(*us) * 1000),
        Value::ZonedDateTime(z) => Some(z.instant_nanos()),
        _ => None,
    }
}

fn time_utc_nanos(v: &Value) -> Option<i128> {
    match v {
        Value::Time(n, off) => Some(i128::from(*n) - i128::from(*off) * 1_000_000_000),
        _ => None,
    }
}

/// One step of a reachability walk (`reach_count`): relationships of one type in one
/// direction, to nodes carrying `label` (any node when None).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    pub direction: Direction,
    pub rel_type: String,
    pub label: Option<String>,
}

/// A read handle's identity for plan caching (`GraphRead::plan_scope`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PlanScope {
    /// The open graph (unique within the process).
    pub graph: u64,
    pub workspace: u64,
    /// The workspace's index catalog version: it changes whenever an index of the workspace
    /// is declared, comes online or is dropped (another workspace's indexes leave it alone).
    pub schema: u64,
}

/// Read access to one workspace's graph at one consistent point in time.
pub trait GraphRead {
    /// The node with this id, if it exists in this workspace.
    fn node(&self, id: NodeId) -> Result<Option<Node>, EngineError>;
    /// The edge with this id, if it exists in this workspace.
    fn edge(&self, id: EdgeId) -> Result<Option<Edge>, EngineError>;
    /// Whether node `id` exists in this workspace. Snapshots answer from the all-nodes bitmap
    /// without reading the node.
    fn node_exists(&self, id: NodeId) -> Result<bool, EngineError> {
        Ok(self.node(id)?.is_some())
    }
    /// Property `key` of node `id` (`Some(None)`: the node exists without it), when the source
    /// can answer without loading the node: snapshots answer from the read model's columns for
    /// a node no commit touched since the model was built. None: not available (the node may
    /// or may not exist); the caller loads the node.
    fn node_property(&self, id: NodeId, key: &str) -> Result<Option<Option<Value>>, EngineError> {
        let _ = (id, key);
        Ok(None)
    }
    /// Number of nodes carrying `label` (a bitmap cardinality).
    fn label_count(&self, label: &str) -> Result<u64, EngineError>;
    /// Ids of the nodes carrying `label`, ascending.
    fn label_scan(&self, label: &str) -> Result<Vec<NodeId>, EngineError>;
    /// Whether node `id` exists and carries `label`. Snapshots answer from the label bitmap
    /// without reading the node.
    fn has_label(&self, id: NodeId, label: &str) -> Result<bool, EngineError> {
        Ok(self.node(id)?.is_some_and(|n| n.has_label(label)))
    }
    /// Ids of every node of the workspace, ascending.
    fn all_nodes(&self) -> Result<Vec<NodeId>, EngineError>;
    /// Number of nodes in the workspace.
    fn node_count(&self) -> Result<u64, EngineError>;
    /// Adjacency of `id` in one direction, optionally restricted to one relationship type.
    fn adjacent(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
    ) -> Result<Vec<AdjacentEdge>, EngineError>;
    /// Number of adjacency entries (same filter as `adjacent`), without materialising them.
    fn degree(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
    ) -> Result<u64, EngineError>;
    /// Number of relationships of `id` in one direction (optionally of one type) whose other
    /// end carries `neighbour_label` (any node when None). Snapshots answer the unlabelled case
    /// from the writer's degree counters, and the labelled case from adjacency keys and the
    /// label bitmap, without loading a node or an edge.
    fn count_adjacent(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
        neighbour_label: Option<&str>,
    ) -> Result<u64, EngineError> {
        let Some(label) = neighbour_label else {
            return self.degree(id, direction, rel_type);
        };
        let mut n = 0;
        for a in self.adjacent(id, direction, rel_type)? {
            if self.has_label(a.neighbour, label)? {
                n += 1;
            }
        }
        Ok(n)
    }
    /// Visits the nodes carrying `label` in ascending id order, each with the values of the
    /// properties `keys` (None: absent), until `visit` returns false. Snapshots read the node
    /// records sequentially and decode only those properties, instead of a point read and a
    /// full decode per node.
    fn scan_label_values(
        &self,
        label: &str,
        keys: &[&str],
        visit: &mut dyn FnMut(NodeId, &[Option<Value>]) -> bool,
    ) -> Result<(), EngineError> {
        let mut values = vec![None; keys.len()];
        for id in self.label_scan(label)? {
            let Some(node) = self.node(id)? else {
                continue;
            };
            for (v, k) in values.iter_mut().zip(keys) {
                *v = node.properties.get(*k).cloned();
            }
            if !visit(id, &values) {
                break;
            }
        }
        Ok(())
    }
    /// Entry counts per value type of the index on (label, property); None when no index is
    /// declared or the source keeps no such counts.
    fn index_stats(&self, label: &str, property: &str) -> Result<Option<IndexStats>, EngineError> {
        let _ = (label, property);
        Ok(None)
    }
    /// Number of nodes carrying `label` that pass every test, when the source can answer it
    /// without walking the nodes one by one (snapshots: from the in-memory read model, see
    /// `readmodel`). None: not available now; the caller runs its own plan instead.
    fn count_label_where(
        &self,
        label: &str,
        tests: &[PropertyTest],
    ) -> Result<Option<u64>, EngineError> {
        let _ = (label, tests);
        Ok(None)
    }
    /// Number of distinct nodes reached from any of `starts` by following `hops` in order
    /// (each hop from the distinct nodes the previous one reached), when the source can answer
    /// it from memory. None: not available now.
    fn reach_count(&self, starts: &[NodeId], hops: &[Hop]) -> Result<Option<u64>, EngineError> {
        let _ = (starts, hops);
        Ok(None)
    }
    /// The in-memory read model of this source as of this moment, when there is one: the
    /// query engine's batch executor reads its columns and CSR lists instead of reading nodes
    /// one by one (snapshots; see `readmodel`). Nodes the view marks touched must be read
    /// through this source. None: no model (the row-at-a-time path runs).
    fn model_view(&self) -> Option<ModelView> {
        None
    }
    /// Whether a property index is declared for (label, property), and which kind.
    fn index_kind(&self, label: &str, property: &str) -> Option<IndexKind>;
    /// Where a query plan made over this handle may be reused: two handles with equal scopes
    /// are the same graph and workspace with the same index catalog. None (the default): plans
    /// must not be cached (write transactions, in-memory graphs).
    fn plan_scope(&self) -> Option<PlanScope> {
        None
    }
    /// A version of the statistics a planner reads (label and node counts, `index_stats`):
    /// two handles of one `plan_scope` with the same version read the same statistics, so a
    /// cached plan's assumptions checked at one version hold at it. None: unknown (check them).
    fn statistics_version(&self) -> Option<u64> {
        None
    }
    /// Nodes of `label` whose `property` equals `value`, via an index. `None` when no index
    /// covers (label, property). Ordered indexes answer equality too.
    fn index_seek(
        &self,
        label: &str,
        property: &str,
        value: &Value,
    ) -> Result<Option<Vec<NodeId>>, EngineError>;
    /// Nodes of `label` whose numeric/datetime `property` lies within the bounds, in index order,
    /// at most `limit` of them. `None` when no ordered index covers (label, property).
    /// Nodes whose value is not of the bounds' type (or null) are never returned.
    fn index_range(
        &self,
        label: &str,
        property: &str,
        lower: Bound<&Value>,
        upper: Bound<&Value>,
        order: Order,
        limit: Option<usize>,
    ) -> Result<Option<Vec<NodeId>>, EngineError>;
}

/// Mutations of one workspace's graph inside a write transaction. Every method keeps labels,
/// property indexes, adjacency and the identity index exact.
pub trait GraphWrite: GraphRead {
    fn create_node(
        &mut self,
        labels: &[&str],
        properties: Properties,
    ) -> Result<NodeId, EngineError>;
    /// Sets (or, with `Value::Null`, removes) one property.
    fn set_node_property(&mut self, id: NodeId, key: &str, value: Value)
        -> Result<(), EngineError>;
    /// Replaces every property of the node with `properties`.
    fn replace_node_properties(
        &mut self,
        id: NodeId,
        properties: Properties,
    ) -> Result<(), EngineError>;
    fn add_node_label(&mut self, id: NodeId, label: &str) -> Result<(), EngineError>;
    fn remove_node_label(&mut self, id: NodeId, label: &str) -> Result<(), EngineError>;
    /// Deletes a node that has no edges; `EngineError::NodeHasEdges` otherwise.
    fn delete_node(&mut self, id: NodeId) -> Result<(), EngineError>;
    /// Deletes a node and every edge touching it.
    fn detach_delete_node(&mut self, id: NodeId) -> Result<(), EngineError>;
    fn create_edge(
        &mut self,
        start: NodeId,
        end: NodeId,
        rel_type: &str,
        properties: Properties,
    ) -> Result<EdgeId, EngineError>;
    /// Sets (or, with `Value::Null`, removes) one property of an edge.
    fn set_edge_property(&mut self, id: EdgeId, key: &str, value: Value)
        -> Result<(), EngineError>;
    fn replace_edge_properties(
        &mut self,
        id: EdgeId,
        properties: Properties,
    ) -> Result<(), EngineError>;
    fn delete_edge(&mut self, id: EdgeId) -> Result<(), EngineError>;
}

/// Property `key` of node `id` from a read model (see `GraphRead::node_property`): None unless
/// the node is in the model's base, untouched since, and carries a label (every property of a
/// labelled node is in each of its labels' columns; an unlabelled node is in none).
pub fn model_node_property(m: &ModelView, id: NodeId, key: &str) -> Option<Option<Value>> {
    let d = m.dense(id)?;
    if m.is_touched(d) {
        return None;
    }
    let label = m.label_of(d)?;
    let row = label.row_of(d)?;
    Some(label.column(key).and_then(|c| c.get(row)))
}
