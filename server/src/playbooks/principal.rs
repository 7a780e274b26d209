//! The campaign buddy's internal principal: the agent key playbook runs act with.
//!
//! Runs invoke capabilities through `gateway::invoke` like any agent, so they need an
//! [`AgentKey`]. It is a stored key record (`key_buddy_campaign`) because approving a queued
//! action later loads the key that queued it (`approvals::run_approved`). It has no plaintext
//! and no digest record, so nothing can authenticate with it; it is listed with the
//! workspace's keys, and revoking it stops the workspace's runs (they end `failed`).
//!
//! TODO(lead): the chat agents (`server/src/agents/`) build an internal principal for buddies
//! at the same time; this one should become theirs (one key per buddy), keeping the id stable
//! or migrating stored ledger rows and pending actions that name it.

use crate::capabilities::{self, Capability, Mode};
use crate::clock;
use crate::error::{Code, Error, Result};
use crate::keys::{AgentKey, KeyKind, DEFAULT_RATE_LIMIT_PER_MIN};
use crate::store::{Store, WorkspaceId};

/// Id of the campaign buddy's key in every workspace.
pub const CAMPAIGN_BUDDY_KEY_ID: &str = "key_buddy_campaign";
/// The buddy runs act as.
pub const CAMPAIGN_BUDDY: &str = "campaign";

/// What the campaign buddy may invoke: drafting and the outbound email and call capabilities.
const GRANTS: [Capability; 5] = [
    Capability::DraftOutreach,
    Capability::QueueOutreach,
    Capability::ExecuteOutreach,
    Capability::QueueCall,
    Capability::ExecuteCall,
];

fn new_key(ws: WorkspaceId) -> AgentKey {
    AgentKey {
        id: CAMPAIGN_BUDDY_KEY_ID.to_owned(),
        workspace: ws.0,
        kind: KeyKind::Agent,
        name: "Campaign buddy (playbook runs)".to_owned(),
        agent: CAMPAIGN_BUDDY.to_owned(),
        scopes: Vec::new(),
        grants: GRANTS
            .iter()
            .map(|c| capabilities::grant_for(c.id()))
            .collect(),
        allowed_modes: Mode::ALL.iter().map(|m| m.as_str().to_owned()).collect(),
        // Execute still needs the workspace's auto_approve policy (gateway::decide); without
        // it the gateway queues for approval.
        auto_run: true,
        rate_limit_per_min: DEFAULT_RATE_LIMIT_PER_MIN,
        quota_override_monthly: None,
        prefix: "internal".to_owned(),
        last_four: String::new(),
        created_at: clock::now_rfc3339(),
        created_by: "system".to_owned(),
        last_used_at: None,
        revoked_at: None,
    }
}

/// The workspace's campaign buddy key, created on first use. A revoked key is refused
/// (`forbidden`): the operator stopped the buddy.
pub async fn campaign_buddy_key(store: &Store, ws: WorkspaceId) -> Result<AgentKey> {
    let stored = store.get::<AgentKey>(ws, CAMPAIGN_BUDDY_KEY_ID).await?;
    let key = match stored {
        Some(k) => k,
        None => create(store, ws).await?,
    };
    if key.is_revoked() {
        return Err(Error::new(
            Code::Forbidden,
            format!(
                "the campaign buddy's key ({CAMPAIGN_BUDDY_KEY_ID}) was revoked; playbook runs \
                 cannot act"
            ),
        ));
    }
    Ok(key)
}

/// Creates the key unless a concurrent run just did.
async fn create(store: &Store, ws: WorkspaceId) -> Result<AgentKey> {
    store
        .write(move |tx| {
            if let Some(k) = tx.get::<AgentKey>(ws, CAMPAIGN_BUDDY_KEY_ID)? {
                return Ok(k);
            }
            let k = new_key(ws);
            tx.put(ws, &k)?;
            Ok(k)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_holds_the_outreach_grants_and_every_mode() {
        let k = new_key(WorkspaceId(7));
        for c in GRANTS {
            assert!(k.has_grant(c.id()), "{}", c.id());
        }
        assert!(!k.has_grant(Capability::CrmMutate.id()));
        assert!(Mode::ALL.iter().all(|m| k.allows_mode(*m)));
        assert_eq!(k.workspace_id(), WorkspaceId(7));
    }
}
