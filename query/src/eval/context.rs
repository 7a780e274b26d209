//! The per-query execution context ([`Cx`]): the graph, caches of loaded entities, the time
//! budget, the rows handed between operators and the values of expression-local variables.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;

use svc_engine::{Edge, EdgeId, GraphRead, Node, NodeId};

use super::Row;
use crate::error::QueryError;
use crate::result::Limits;
use crate::value::Val;

/// Per-query execution context: the graph, caches of loaded entities, the deadline.
pub(crate) struct Cx<'g> {
    pub g: &'g dyn GraphRead,
    pub limits: Limits,
    pub deadline: Instant,
    ticks: Cell<u32>,
    nodes: RefCell<HashMap<NodeId, Rc<Node>>>,
    edges: RefCell<HashMap<EdgeId, Rc<Edge>>>,
    /// Outer rows handed to `Argument` leaves (by argument id).
    pub args: RefCell<Vec<Row>>,
    /// Rows handed from a previous stage to a `StageInput` leaf.
    pub stage_input: RefCell<Vec<Row>>,
    /// Per-operator (rows, nanoseconds) when profiling.
    pub profile: Option<RefCell<Vec<(u64, u64)>>>,
    /// Values of the variables bound inside expressions, by nesting level.
    locals: RefCell<Vec<Val>>,
}

/// Loaded entities kept per query before the cache is dropped and refilled.
const CACHE_CAP: usize = 100_000;

impl<'g> Cx<'g> {
    pub(crate) fn new(
        g: &'g dyn GraphRead,
        limits: &Limits,
        deadline: Instant,
        operators: usize,
        profile: bool,
    ) -> Self {
        Cx {
            g,
            limits: limits.clone(),
            deadline,
            ticks: Cell::new(0),
            nodes: RefCell::new(HashMap::new()),
            edges: RefCell::new(HashMap::new()),
            args: RefCell::new(Vec::new()),
            stage_input: RefCell::new(Vec::new()),
            profile: profile.then(|| RefCell::new(vec![(0, 0); operators])),
            locals: RefCell::new(Vec::new()),
        }
    }

    /// Counts work and checks the time budget every so often (reading the clock is not free).
    pub(crate) fn tick(&self) -> Result<(), QueryError> {
        let t = self.ticks.get().wrapping_add(1);
        self.ticks.set(t);
        if t % 256 == 0 && Instant::now() > self.deadline {
            return Err(QueryError::Timeout(self.limits.time));
        }
        Ok(())
    }

    pub(crate) fn node(&self, id: NodeId) -> Result<Option<Rc<Node>>, QueryError> {
        cached(&self.nodes, id, || self.g.node(id))
    }

    /// Property `key` of node `id` (None: no such node): from the node when it is loaded, else
    /// from the source when it can answer without loading the node (a snapshot's read model),
    /// else from the node, loaded and kept.
    pub(crate) fn node_property(&self, id: NodeId, key: &str) -> Result<Option<Val>, QueryError> {
        if let Some(n) = self.nodes.borrow().get(&id) {
            return Ok(Some(n.get(key).map_or(Val::Null, Val::from)));
        }
        if let Some(v) = self.g.node_property(id, key)? {
            return Ok(Some(v.map_or(Val::Null, Val::from)));
        }
        Ok(self
            .node(id)?
            .map(|n| n.get(key).map_or(Val::Null, Val::from)))
    }

    pub(crate) fn edge(&self, id: EdgeId) -> Result<Option<Rc<Edge>>, QueryError> {
        cached(&self.edges, id, || self.g.edge(id))
    }

    pub(crate) fn has_labels(&self, id: NodeId, labels: &[String]) -> Result<bool, QueryError> {
        if labels.is_empty() {
            return Ok(true);
        }
        if let Some(n) = self.nodes.borrow().get(&id) {
            return Ok(labels.iter().all(|l| n.has_label(l)));
        }
        // The engine answers from the label bitmap without loading the node.
        for l in labels {
            if !self.g.has_label(id, l)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

impl Cx<'_> {
    pub(super) fn bind(&self, level: usize, v: Val) {
        let mut l = self.locals.borrow_mut();
        if l.len() <= level {
            l.resize(level + 1, Val::Null);
        }
        l[level] = v;
    }

    pub(super) fn local(&self, level: usize) -> Result<Val, QueryError> {
        self.locals
            .borrow()
            .get(level)
            .cloned()
            .ok_or_else(|| QueryError::semantic("a local variable was read outside its scope"))
    }
}

/// The entity `id` from `cache`, else loaded (and kept, the cache being emptied when full).
fn cached<K: std::hash::Hash + Eq + Copy, V>(
    cache: &RefCell<HashMap<K, Rc<V>>>,
    id: K,
    load: impl FnOnce() -> Result<Option<V>, svc_engine::EngineError>,
) -> Result<Option<Rc<V>>, QueryError> {
    if let Some(v) = cache.borrow().get(&id) {
        return Ok(Some(v.clone()));
    }
    let Some(v) = load()? else {
        return Ok(None);
    };
    let v = Rc::new(v);
    let mut cache = cache.borrow_mut();
    if cache.len() >= CACHE_CAP {
        cache.clear();
    }
    cache.insert(id, v.clone());
    Ok(Some(v))
}
