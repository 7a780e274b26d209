//! The principal playbook runs act as: the campaign buddy's internal principal (`int_campaign`,
//! `agents::principal`), the same one the chat's campaign buddy acts as. One principal per
//! buddy: its role holds what runs need (drafting, email and call outreach), its `auto_run` lets
//! the workspace's `auto_approve` policy decide whether an `execute` commits (see
//! docs/agents.md).
//!
//! Before that, runs acted as a stored agent key `key_buddy_campaign`. It is never created again.
//! Where the record exists it stays, and is read: approving an action it queued re-reads it
//! (`approvals::run_approved`), ledger rows and receipts keep naming it, and a lead that was
//! under way under it finishes under it ([`key_for_lead`]), because stored idempotent answers
//! are per key and the new principal would draft and queue that lead a second time.

use crate::chat::principal;
use svc_core::error::Result;
use svc_core::keys::AgentKey;
use svc_core::store::{Store, WorkspaceId};

use super::leads::{status as lead_status, RunLead};
use svc_domains::playbooks::Buddy;

/// Id of the agent key runs acted as before they used the campaign buddy's principal.
pub const LEGACY_CAMPAIGN_KEY_ID: &str = "key_buddy_campaign";
/// The buddy runs act as.
pub const CAMPAIGN_BUDDY: &str = "campaign";

/// The campaign buddy's principal in `ws` (written when missing or when its role changed).
pub async fn campaign_principal(store: &Store, ws: WorkspaceId) -> Result<AgentKey> {
    principal::ensure(store, ws, Buddy::Campaign).await
}

/// The key `lead` is worked as: the campaign principal, except for a lead under way that was
/// started by another key still stored and not revoked (a lead started before this release:
/// `key_buddy_campaign`), which finishes as that key and replays its stored answers.
pub async fn key_for_lead(
    store: &Store,
    ws: WorkspaceId,
    campaign: &AgentKey,
    lead: &RunLead,
) -> Result<AgentKey> {
    if lead.status != lead_status::WORKING {
        return Ok(campaign.clone());
    }
    let started_by = lead.key_id.as_deref().unwrap_or(LEGACY_CAMPAIGN_KEY_ID);
    if started_by == campaign.id {
        return Ok(campaign.clone());
    }
    Ok(match store.get::<AgentKey>(ws, started_by).await? {
        Some(k) if !k.is_revoked() => k,
        _ => campaign.clone(),
    })
}
