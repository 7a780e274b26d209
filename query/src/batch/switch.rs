//! `ModelSwitch`: any graph source with its read model chosen by the caller: hidden (the row
//! path runs even where a model exists) or given (the batch path runs over a model built from
//! the source, e.g. the in-memory `ModelGraph`, which has none of its own). The differential
//! test and the `exec_vs_model` fuzz target compare the paths through it.

use std::ops::Bound;

use svc_engine::{
    AdjacentEdge, Direction, Edge, EdgeId, EngineError, GraphRead, Hop, IndexKind, IndexStats,
    ModelView, Node, NodeId, Order, PropertyTest, Value,
};

/// A graph source whose `model_view` is `model` (None: no model, the row path).
pub struct ModelSwitch<'g> {
    g: &'g dyn GraphRead,
    model: Option<ModelView>,
}

impl std::fmt::Debug for ModelSwitch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSwitch")
            .field("model", &self.model.is_some())
            .finish()
    }
}

impl<'g> ModelSwitch<'g> {
    /// `g` without any read model.
    pub fn rows(g: &'g dyn GraphRead) -> Self {
        ModelSwitch { g, model: None }
    }

    /// `g` with a model built from it now (nothing touched).
    pub fn batch(g: &'g dyn GraphRead) -> Result<Self, EngineError> {
        Ok(ModelSwitch {
            g,
            model: Some(ModelView::from_graph(g)?),
        })
    }

    /// `g` with the given model (e.g. one built earlier, with the nodes changed since marked
    /// touched).
    pub fn with_model(g: &'g dyn GraphRead, model: ModelView) -> Self {
        ModelSwitch {
            g,
            model: Some(model),
        }
    }
}

impl GraphRead for ModelSwitch<'_> {
    fn node(&self, id: NodeId) -> Result<Option<Node>, EngineError> {
        self.g.node(id)
    }
    fn edge(&self, id: EdgeId) -> Result<Option<Edge>, EngineError> {
        self.g.edge(id)
    }
    fn node_exists(&self, id: NodeId) -> Result<bool, EngineError> {
        self.g.node_exists(id)
    }
    /// From this switch's model (so the row path's model reads are checked as well), never
    /// from the source's own when the model is hidden.
    fn node_property(&self, id: NodeId, key: &str) -> Result<Option<Option<Value>>, EngineError> {
        Ok(self
            .model
            .as_ref()
            .and_then(|m| svc_engine::model_node_property(m, id, key)))
    }
    fn label_count(&self, label: &str) -> Result<u64, EngineError> {
        self.g.label_count(label)
    }
    fn label_scan(&self, label: &str) -> Result<Vec<NodeId>, EngineError> {
        self.g.label_scan(label)
    }
    fn has_label(&self, id: NodeId, label: &str) -> Result<bool, EngineError> {
        self.g.has_label(id, label)
    }
    fn all_nodes(&self) -> Result<Vec<NodeId>, EngineError> {
        self.g.all_nodes()
    }
    fn node_count(&self) -> Result<u64, EngineError> {
        self.g.node_count()
    }
    fn adjacent(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
    ) -> Result<Vec<AdjacentEdge>, EngineError> {
        self.g.adjacent(id, direction, rel_type)
    }
    fn degree(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
    ) -> Result<u64, EngineError> {
        self.g.degree(id, direction, rel_type)
    }
    fn count_adjacent(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
        neighbour_label: Option<&str>,
    ) -> Result<u64, EngineError> {
        self.g
            .count_adjacent(id, direction, rel_type, neighbour_label)
    }
    fn scan_label_values(
        &self,
        label: &str,
        keys: &[&str],
        visit: &mut dyn FnMut(NodeId, &[Option<Value>]) -> bool,
    ) -> Result<(), EngineError> {
        self.g.scan_label_values(label, keys, visit)
    }
    fn index_stats(&self, label: &str, property: &str) -> Result<Option<IndexStats>, EngineError> {
        self.g.index_stats(label, property)
    }
    fn count_label_where(
        &self,
        label: &str,
        tests: &[PropertyTest],
    ) -> Result<Option<u64>, EngineError> {
        match self.model {
            Some(_) => self.g.count_label_where(label, tests),
            None => Ok(None),
        }
    }
    fn reach_count(&self, starts: &[NodeId], hops: &[Hop]) -> Result<Option<u64>, EngineError> {
        match self.model {
            Some(_) => self.g.reach_count(starts, hops),
            None => Ok(None),
        }
    }
    fn model_view(&self) -> Option<ModelView> {
        self.model.clone()
    }
    fn index_kind(&self, label: &str, property: &str) -> Option<IndexKind> {
        self.g.index_kind(label, property)
    }
    fn index_seek(
        &self,
        label: &str,
        property: &str,
        value: &Value,
    ) -> Result<Option<Vec<NodeId>>, EngineError> {
        self.g.index_seek(label, property, value)
    }
    fn index_range(
        &self,
        label: &str,
        property: &str,
        lower: Bound<&Value>,
        upper: Bound<&Value>,
        order: Order,
        limit: Option<usize>,
    ) -> Result<Option<Vec<NodeId>>, EngineError> {
        self.g
            .index_range(label, property, lower, upper, order, limit)
    }
}
