//! Identity resolution: which customer an event's keys name (priority email > phone > external
//! id, a known customer id first), created when none matches, enriched with keys it lacks that
//! nobody else holds. Runs inside the single writer, so concurrent events carrying one new key
//! create one customer.

use crate::codec::NodeRecord;
use crate::error::EngineError;
use crate::identity::IdentityKeys;
use crate::model::{NodeId, Properties, Value};
use crate::schema;
use crate::txn::WorkspaceTxn;

/// How identity resolution answered, before anything is written.
pub(super) struct Resolution {
    pub id: NodeId,
    pub is_new: bool,
    pub old: Option<NodeRecord>,
    pub new: NodeRecord,
}

impl WorkspaceTxn<'_, '_> {
    /// Decides which customer an event's keys name (priority email > phone > external id),
    /// and the keys it gains, without writing anything.
    pub(super) fn plan_identity(
        &mut self,
        keys_in: &IdentityKeys,
    ) -> Result<Resolution, EngineError> {
        let mut owners = Vec::new();
        for (kind, value) in keys_in.normalized() {
            let owner = self.identity_holder(kind, &value)?;
            owners.push((kind, value, owner));
        }
        let direct = match keys_in.customer_id {
            Some(id) => self
                .load_node(id)?
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
}
