//! Identity resolution, event recording and node merge: the customer an event's keys name,
//! the touchpoint and campaign it writes, and the identity index kept exact as nodes change.

use std::collections::BTreeSet;

use crate::codec::{EdgeRecord, NodeRecord};
use crate::columns::Cf;
use crate::error::EngineError;
use crate::identity::{self, EventInput, EventOutcome, IdentityKeys};
use crate::keys::{self, IdentityKind};
use crate::model::{EdgeId, NodeId, Properties, Value};
use crate::read::{GraphRead, GraphWrite};
use crate::schema;
use crate::store::KvRead;
use crate::view;

use super::graph_ops::{check_name, check_properties};
use super::WorkspaceTxn;

/// How identity resolution answered, before anything is written.
struct Resolution {
    id: NodeId,
    is_new: bool,
    old: Option<NodeRecord>,
    new: NodeRecord,
}

/// What a node merge did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeOutcome {
    /// Edges re-pointed from the duplicate to the canonical node.
    pub edges_moved: u64,
}

fn customer_identities(rec: Option<&NodeRecord>) -> BTreeSet<(IdentityKind, String)> {
    rec.filter(|r| r.labels.iter().any(|l| l == schema::CUSTOMER))
        .map(|r| identity::identities_of(&r.properties).into_iter().collect())
        .unwrap_or_default()
}

impl WorkspaceTxn<'_, '_> {
    /// Keeps the identity index exact: entries this node held for values it no longer carries
    /// are dropped; values it now carries are claimed when no other customer holds them.
    pub(super) fn sync_identity(
        &mut self,
        id: NodeId,
        old: Option<&NodeRecord>,
        new: Option<&NodeRecord>,
    ) -> Result<(), EngineError> {
        let (before, after) = (customer_identities(old), customer_identities(new));
        if before == after {
            return Ok(());
        }
        for (kind, value) in before.difference(&after) {
            let key = keys::identity_key(self.ws, *kind, value);
            if self.txn.get(Cf::Identity, &key)?.as_deref() == Some(&id.0.to_be_bytes()[..]) {
                self.txn.delete(Cf::Identity, key);
            }
        }
        for (kind, value) in after.difference(&before) {
            let key = keys::identity_key(self.ws, *kind, value);
            if self.txn.get(Cf::Identity, &key)?.is_none() {
                self.txn.put(Cf::Identity, key, id.0.to_be_bytes().to_vec());
            }
        }
        Ok(())
    }

    fn identity_holder(
        &self,
        kind: IdentityKind,
        value: &str,
    ) -> Result<Option<NodeId>, EngineError> {
        let Some(b) = self
            .txn
            .get(Cf::Identity, &keys::identity_key(self.ws, kind, value))?
        else {
            return Ok(None);
        };
        keys::read_u64(&b)
            .map(|v| Some(NodeId(v)))
            .ok_or_else(|| EngineError::Corrupt {
                context: "identity index",
                detail: format!("{b:?}"),
            })
    }

    /// Decides which customer an event's keys name (priority email > phone > external id),
    /// and the keys it gains, without writing anything.
    fn plan_identity(&mut self, keys_in: &IdentityKeys) -> Result<Resolution, EngineError> {
        let mut owners = Vec::new();
        for (kind, value) in keys_in.normalized() {
            let owner = self.identity_holder(kind, &value)?;
            owners.push((kind, value, owner));
        }
        let direct = match keys_in.customer_id {
            Some(id) => view::load_node(&*self.txn, self.ws, id)?
                .filter(|r| r.labels.iter().any(|l| l == schema::CUSTOMER))
                .map(|r| (id, r)),
            None => None,
        };
        let matched = match direct {
            Some(found) => Some(found),
            None => match owners.iter().find_map(|(_, _, o)| *o) {
                Some(id) => Some((id, self.node_record(id)?)),
                None => None,
            },
        };
        match matched {
            None => {
                if owners.is_empty() {
                    return Err(EngineError::NoIdentity);
                }
                let mut properties = Properties::new();
                for (kind, value, _) in &owners {
                    properties.insert(kind.property().to_owned(), Value::String(value.clone()));
                }
                let id = NodeId(self.alloc_id()?);
                Ok(Resolution {
                    id,
                    is_new: true,
                    old: None,
                    new: NodeRecord {
                        labels: vec![schema::CUSTOMER.to_owned()],
                        properties,
                    },
                })
            }
            Some((id, old)) => {
                let mut new = old.clone();
                for (kind, value, owner) in owners {
                    let absent = new
                        .properties
                        .get(kind.property())
                        .is_none_or(Value::is_null);
                    if owner.is_none() && absent {
                        new.properties
                            .insert(kind.property().to_owned(), Value::String(value));
                    }
                }
                Ok(Resolution {
                    id,
                    is_new: false,
                    old: Some(old),
                    new,
                })
            }
        }
    }

    /// Identity resolution: the customer the keys name, created when none matches, enriched
    /// with keys it lacks that nobody else holds. Returns (customer, created).
    pub fn resolve_identity(
        &mut self,
        keys_in: &IdentityKeys,
    ) -> Result<(NodeId, bool), EngineError> {
        let r = self.plan_identity(keys_in)?;
        if r.old.as_ref() != Some(&r.new) {
            self.write_node(r.id, r.old.as_ref(), Some(&r.new))?;
        }
        Ok((r.id, r.is_new))
    }

    /// Records one event: resolves the customer, creates the touchpoint, its HAS_TOUCHPOINT
    /// edge, the campaign (merged by id) with INFLUENCED_BY, and moves `lastSeen` forward.
    pub fn record_event(&mut self, ev: &EventInput) -> Result<EventOutcome, EngineError> {
        check_name("event name", &ev.action)?;
        if let Some(c) = &ev.channel {
            check_name("channel", c)?;
        }
        if let Some(c) = &ev.campaign_id {
            check_name("campaign id", c)?;
        }
        check_properties(&ev.properties)?;

        let mut r = self.plan_identity(&ev.keys)?;
        let newer = match r.new.properties.get("lastSeen") {
            Some(Value::DateTime(seen)) => ev.ts > *seen,
            _ => true,
        };
        if newer {
            r.new
                .properties
                .insert("lastSeen".into(), Value::DateTime(ev.ts));
        }
        let mut mutated = 0u32;
        if r.old.as_ref() != Some(&r.new) {
            self.write_node(r.id, r.old.as_ref(), Some(&r.new))?;
            mutated += 1;
        }

        let mut tp = Properties::new();
        tp.insert("action".into(), Value::String(ev.action.clone()));
        if let Some(c) = &ev.channel {
            tp.insert("channel".into(), Value::String(c.clone()));
        }
        tp.insert("ts".into(), Value::DateTime(ev.ts));
        if let Some(c) = &ev.campaign_id {
            tp.insert("campaignId".into(), Value::String(c.clone()));
        }
        if !ev.properties.is_empty() {
            tp.insert("properties".into(), Value::Map(ev.properties.clone()));
        }
        let tp_rec = NodeRecord {
            labels: vec![schema::TOUCHPOINT.to_owned()],
            properties: tp,
        };
        let tp_id = NodeId(self.alloc_id()?);
        self.write_node(tp_id, None, Some(&tp_rec))?;
        mutated += 1;
        // Both ends were just written by this transaction: no existence checks needed.
        let has_tp = EdgeId(self.alloc_id()?);
        self.insert_edge(
            has_tp,
            &EdgeRecord {
                rel_type: schema::HAS_TOUCHPOINT.into(),
                start: r.id,
                end: tp_id,
                properties: Properties::new(),
            },
            (&r.new.labels, &tp_rec.labels),
        );

        if let Some(campaign) = &ev.campaign_id {
            let value = Value::String(campaign.clone());
            let existing = self
                .view()
                .index_seek(schema::CAMPAIGN, "campaignId", &value)?
                .unwrap_or_default();
            let (campaign_id, campaign_labels) = match existing.first() {
                Some(id) => (*id, self.labels_of(*id)?),
                None => {
                    let mut p = Properties::new();
                    p.insert("campaignId".into(), value);
                    mutated += 1;
                    (
                        self.create_node(&[schema::CAMPAIGN], p)?,
                        vec![schema::CAMPAIGN.to_owned()],
                    )
                }
            };
            let influenced = EdgeId(self.alloc_id()?);
            let edge = EdgeRecord {
                rel_type: schema::INFLUENCED_BY.into(),
                start: tp_id,
                end: campaign_id,
                properties: Properties::new(),
            };
            self.insert_edge(influenced, &edge, (&tp_rec.labels, &campaign_labels));
        }
        Ok(EventOutcome {
            customer_id: r.id,
            touchpoint_id: tp_id,
            is_new: r.is_new,
            nodes_mutated: mutated,
        })
    }

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
                self.txn.put(
                    Cf::Identity,
                    keys::identity_key(self.ws, kind, &value),
                    canonical.0.to_be_bytes().to_vec(),
                );
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
