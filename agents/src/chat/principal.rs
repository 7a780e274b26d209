//! How a buddy appears to the capability gateway: one internal principal per (workspace,
//! buddy), a stored key record `int_<buddy>` of kind `internal` with the buddy's role as its
//! grants. It has no plaintext and no digest, so no request can present it; it exists so the
//! gateway, the ledger, receipts and approvals (which re-read the key that queued an action)
//! treat a buddy exactly like any agent key. The ledger and receipts show `agent` = the buddy
//! id and `source` = `internal`.
//!
//! Modes: dry_run, queue and execute, with `auto_run` on, so the workspace's policy decides:
//! read capabilities and direct writes run; `queue` always waits for a person; an `execute`
//! of an approval-gated capability commits only when the workspace's `auto_approve` policy
//! lists it, and otherwise becomes a pending approval (the gateway's transition table). This is
//! what both users of a buddy need: a playbook run's `execute` delivery sends when the operator
//! auto-approves `execute.outreach`, and a chat buddy's gated action in a workspace without that
//! policy waits for approval. Credits come from the workspace's pool.
//!
//! Playbook runs act as the campaign buddy's principal (`playbooks::principal`).

use svc_core::capabilities::{grant_for, Capability, Mode};
use svc_core::error::Result;
use svc_core::keys::{AgentKey, KeyKind, DEFAULT_RATE_LIMIT_PER_MIN};
use svc_core::plumbing::clock;
use svc_core::store::{Store, WorkspaceId};
use svc_domains::playbooks::Buddy;

/// The gateway `source` of every call a buddy makes.
pub const SOURCE: &str = "internal";

/// The capabilities of a buddy's role.
pub fn role(buddy: Buddy) -> &'static [Capability] {
    use Capability::*;
    match buddy {
        Buddy::Insights => &[
            ContextGet,
            AccountGet,
            ScoreChurn,
            ScoreConversion,
            PlanGoal,
            ReportGenerate,
            MemoryWrite,
        ],
        Buddy::Prospect => &[
            ContextGet,
            ScoreConversion,
            ScoreChurn,
            PlanGoal,
            DraftOutreach,
            MemoryWrite,
        ],
        Buddy::Campaign => &[
            ContextGet,
            ScoreChurn,
            ScoreConversion,
            PlanGoal,
            DraftOutreach,
            QueueOutreach,
            ExecuteOutreach,
            QueueCall,
            ExecuteCall,
            MemoryWrite,
        ],
        Buddy::Pipeline => &[
            ContextGet,
            AccountGet,
            ScoreChurn,
            ScoreConversion,
            PlanGoal,
            DraftOutreach,
            CrmMutate,
            QueueCall,
            MemoryWrite,
        ],
    }
}

/// The id of a buddy's principal (the same in every workspace; key records are per workspace).
pub fn key_id(buddy: Buddy) -> String {
    format!("{}{}", KeyKind::Internal.prefix(), buddy.as_str())
}

/// The principal as it should be stored now.
pub fn principal(ws: WorkspaceId, buddy: Buddy) -> AgentKey {
    AgentKey {
        id: key_id(buddy),
        workspace: ws.0,
        kind: KeyKind::Internal,
        name: format!("{} buddy (internal)", buddy.as_str()),
        agent: buddy.as_str().to_owned(),
        scopes: Vec::new(),
        grants: role(buddy).iter().map(|c| grant_for(c.id())).collect(),
        allowed_modes: Mode::ALL.iter().map(|m| m.as_str().to_owned()).collect(),
        // The workspace's auto_approve policy decides whether a gated execute commits.
        auto_run: true,
        rate_limit_per_min: DEFAULT_RATE_LIMIT_PER_MIN,
        quota_override_monthly: None,
        prefix: KeyKind::Internal.prefix().to_owned(),
        last_four: String::new(),
        created_at: clock::now_rfc3339(),
        created_by: "system".to_owned(),
        last_used_at: None,
        revoked_at: None,
    }
}

/// The buddy's principal in `ws`, written when missing or when its role changed (a new
/// release's grants apply from the next turn).
pub async fn ensure(store: &Store, ws: WorkspaceId, buddy: Buddy) -> Result<AgentKey> {
    let wanted = principal(ws, buddy);
    if let Some(stored) = store.get::<AgentKey>(ws, wanted.id.clone()).await? {
        if same_role(&stored, &wanted) {
            return Ok(stored);
        }
    }
    store
        .write(move |tx| {
            let created_at = tx
                .get::<AgentKey>(ws, &wanted.id)?
                .map(|k| k.created_at)
                .unwrap_or_else(|| wanted.created_at.clone());
            let key = AgentKey {
                created_at,
                ..wanted
            };
            tx.put(ws, &key)?;
            Ok(key)
        })
        .await
}

fn same_role(a: &AgentKey, b: &AgentKey) -> bool {
    a.kind == b.kind
        && a.grants == b.grants
        && a.allowed_modes == b.allowed_modes
        && a.auto_run == b.auto_run
        && a.agent == b.agent
        && a.revoked_at.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_gateway::registry;

    #[test]
    fn every_role_reads_context_and_the_workspace_policy_decides_gated_executes() {
        for &b in Buddy::ALL {
            let key = principal(WorkspaceId(1), b);
            assert!(key.has_grant("context.get"), "{b:?}");
            assert_eq!(key.agent, b.as_str());
            assert!(key.auto_run);
            assert!(key.id.starts_with("int_"));
            // Every granted capability is in the catalogue.
            for g in &key.grants {
                let id = g.strip_prefix("capability:").expect("capability grant");
                assert!(registry::get(id).is_some(), "{id}");
            }
        }
        let campaign = principal(WorkspaceId(1), Buddy::Campaign);
        // What playbook runs invoke.
        for c in [
            "draft.outreach",
            "queue.outreach",
            "execute.outreach",
            "queue.call",
            "execute.call",
        ] {
            assert!(campaign.has_grant(c), "{c}");
        }
        assert!(!principal(WorkspaceId(1), Buddy::Insights).has_grant("queue.outreach"));
    }
}
