//! The key record as stored (never its plaintext).

use serde::{Deserialize, Serialize};

use super::token::KeyKind;
use crate::capabilities::{self, Mode};
use crate::store::{Record, WorkspaceId};

/// A key as stored (never its plaintext).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgentKey {
    pub id: String,
    pub workspace: u64,
    pub kind: KeyKind,
    pub name: String,
    pub agent: String,
    pub scopes: Vec<String>,
    pub grants: Vec<String>,
    pub allowed_modes: Vec<String>,
    pub auto_run: bool,
    pub rate_limit_per_min: u32,
    pub quota_override_monthly: Option<u64>,
    pub prefix: String,
    pub last_four: String,
    pub created_at: String,
    pub created_by: String,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
}

impl Record for AgentKey {
    const KIND: &'static str = "agent_key";
    fn id(&self) -> String {
        self.id.clone()
    }
}

impl AgentKey {
    pub fn workspace_id(&self) -> WorkspaceId {
        WorkspaceId(self.workspace)
    }

    pub fn is_revoked(&self) -> bool {
        self.revoked_at.is_some()
    }

    pub fn allows_mode(&self, mode: Mode) -> bool {
        self.allowed_modes.iter().any(|m| m == mode.as_str())
    }

    pub fn has_grant(&self, capability_id: &str) -> bool {
        let grant = capabilities::grant_for(capability_id);
        self.grants.contains(&grant)
    }
}
