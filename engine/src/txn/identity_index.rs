//! The identity index (normalised email, phone or external id -> the customer holding it),
//! kept exact as customer nodes change; resolution itself reads it from `events`.

use std::collections::BTreeSet;

use crate::codec::NodeRecord;
use crate::columns::Cf;
use crate::error::EngineError;
use crate::identity;
use crate::keys::{self, IdentityKind};
use crate::model::NodeId;
use crate::schema;
use crate::store::KvRead;

use super::WorkspaceTxn;

/// The identity values a node holds (none unless it is a customer).
pub(crate) fn customer_identities(rec: Option<&NodeRecord>) -> BTreeSet<(IdentityKind, String)> {
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

    /// The customer holding a normalised identity value.
    pub(crate) fn identity_holder(
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

    /// Hands an identity value to `holder` (a merge moving the duplicate's keys).
    pub(crate) fn set_identity_holder(&mut self, kind: IdentityKind, value: &str, holder: NodeId) {
        self.txn.put(
            Cf::Identity,
            keys::identity_key(self.ws, kind, value),
            holder.0.to_be_bytes().to_vec(),
        );
    }
}
