//! The setup every execution shares, invocations and approved actions alike: the workspace,
//! its settings and the key's budget read once in the write that uses them, the policy and
//! read-only checks, and what executors reach besides the transaction.

use svc_engine::WorkspaceId;
use time::OffsetDateTime;

use super::executors;
use super::registry::Descriptor;
use svc_core::error::{Code, Error, Result};
use svc_core::keys::AgentKey;
use svc_core::ledger;
use svc_core::store::Tx;
use svc_core::workspaces::{self, WorkspaceEntry, WorkspaceSettings};

/// What executors reach besides the transaction: secrets and the public URL.
#[derive(Clone, Debug)]
pub(crate) struct Deps {
    pub sealer: svc_core::plumbing::sealed::Sealer,
    pub public_url: String,
    pub ids: svc_core::plumbing::ids::PublicIds,
}

impl Deps {
    pub(crate) fn of(gateway: &super::Gateway) -> Deps {
        Deps {
            sealer: gateway.sealer.clone(),
            public_url: gateway.public_url(),
            ids: gateway.store.ids().clone(),
        }
    }
}

/// The workspace, its settings and the key's budget, read once in the write that uses them:
/// the setup shared by invocations and approved actions.
pub(crate) struct Prepared {
    pub workspace: WorkspaceEntry,
    pub settings: WorkspaceSettings,
    pub budget: ledger::Budget,
    pub month: String,
}

impl Prepared {
    pub(crate) fn load(tx: &mut Tx<'_, '_>, key: &AgentKey) -> Result<Prepared> {
        let ws = key.workspace_id();
        let workspace = tx
            .get::<WorkspaceEntry>(WorkspaceId::GLOBAL, &workspaces::render_id(ws))?
            .ok_or_else(|| Error::not_found("workspace"))?;
        let w = tx.workspace(ws);
        let settings = w
            .get_record::<WorkspaceSettings>("settings")?
            .ok_or_else(|| Error::internal(format!("workspace {ws} has no settings record")))?;
        let month = ledger::current_month();
        let budget = ledger::budget(&w, &settings, key, &month)?;
        Ok(Prepared {
            workspace,
            settings,
            budget,
            month,
        })
    }

    /// The workspace's policy and read-only switch, for anything beyond a dry run.
    pub(crate) fn ensure_allowed(&self, d: &Descriptor) -> Result<()> {
        if self.settings.policy.forbid.iter().any(|f| f == d.id) {
            return Err(Error::new(
                Code::PolicyForbid,
                format!("workspace policy forbids {}", d.id),
            ));
        }
        if !d.is_read_only() {
            self.settings.ensure_writable()?;
        }
        Ok(())
    }

    pub(crate) fn ctx<'a>(
        &'a self,
        key: &'a AgentKey,
        deps: &'a Deps,
        cost: u64,
        now: OffsetDateTime,
        request_id: &'a str,
        pending_action_id: Option<&'a str>,
    ) -> executors::Ctx<'a> {
        executors::Ctx {
            key,
            workspace: &self.workspace,
            settings: &self.settings,
            budget: &self.budget,
            cost,
            now,
            request_id,
            sealer: &deps.sealer,
            public_url: &deps.public_url,
            ids: &deps.ids,
            pending_action_id,
        }
    }
}
