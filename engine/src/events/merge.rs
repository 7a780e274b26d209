//! Node merge: a duplicate customer folded into the canonical one, edges, properties, labels
//! and identity keys included.

use crate::error::EngineError;
use crate::model::{NodeId, Value};
use crate::txn::{customer_identities, WorkspaceTxn};

/// What a node merge did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeOutcome {
    /// Edges re-pointed from the duplicate to the canonical node.
    pub edges_moved: u64,
}

impl WorkspaceTxn<'_, '_> {
    /// Merges `duplicate` into `canonical`: every edge of the duplicate is re-pointed to the
    /// canonical node, properties and labels the canonical node lacks are copied, identity
    /// keys held by the duplicate move to the canonical node, then the duplicate is deleted.
    pub fn merge_nodes(
        &mut self,
        canonical: NodeId,
        duplicate: NodeId,
    ) -> Result<MergeOutcome, EngineError> {
        if canonical == duplicate {
            return Err(EngineError::invalid(
                "merge",
                "a node cannot be merged into itself",
            ));
        }
        let canon_old = self.node_record(canonical)?;
        let dup = self.node_record(duplicate)?;
        let edge_ids = self.edges_of(duplicate)?;
        for eid in &edge_ids {
            let old = self.edge_record(*eid)?;
            let mut moved = old.clone();
            if moved.start == duplicate {
                moved.start = canonical;
            }
            if moved.end == duplicate {
                moved.end = canonical;
            }
            self.remove_edge(*eid, &old)?;
            let ends = (self.labels_of(moved.start)?, self.labels_of(moved.end)?);
            self.insert_edge(*eid, &moved, (&ends.0, &ends.1));
        }
        // Identity keys the duplicate holds now answer with the canonical node.
        for (kind, value) in customer_identities(Some(&dup)) {
            if self.identity_holder(kind, &value)? == Some(duplicate) {
                self.set_identity_holder(kind, &value, canonical);
            }
        }
        let mut canon = canon_old.clone();
        for l in &dup.labels {
            if !canon.labels.contains(l) {
                canon.labels.push(l.clone());
            }
        }
        for (k, v) in &dup.properties {
            if canon.properties.get(k).is_none_or(Value::is_null) {
                canon.properties.insert(k.clone(), v.clone());
            }
        }
        if let (Some(Value::DateTime(a)), Some(Value::DateTime(b))) = (
            canon.properties.get("lastSeen"),
            dup.properties.get("lastSeen"),
        ) {
            let latest = (*a).max(*b);
            canon
                .properties
                .insert("lastSeen".into(), Value::DateTime(latest));
        }
        self.write_node(canonical, Some(&canon_old), Some(&canon))?;
        self.write_node(duplicate, Some(&dup), None)?;
        Ok(MergeOutcome {
            edges_moved: edge_ids.len() as u64,
        })
    }
}
