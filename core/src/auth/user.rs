//! The user record as stored in the global scope, and a user's role in their workspace. It
//! lives with the credentials (sessions carry it); `accounts` holds the flows that create and
//! read it (registration, login, the session answer).

use serde::{Deserialize, Serialize};

use crate::store::Record;

pub(crate) const EMAIL_INDEX: &str = "email";
/// Users by workspace number (`crate::members`). Users written before roles existed are not in
/// it; they are their workspace's owner, found through the workspace entry.
pub const WORKSPACE_INDEX: &str = "workspace";

/// A user as stored in the global scope. Only the argon2id hash of the password is kept.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct User {
    pub id: String,
    /// As registered (trimmed).
    pub email: String,
    /// Lower-cased; unique across the service.
    pub email_normalized: String,
    pub name: String,
    pub password_hash: String,
    pub workspace: u64,
    pub created_at: String,
    /// Absent in records written before roles existed: those users registered their
    /// workspace, so they read as its owner.
    #[serde(default)]
    pub role: Role,
}

/// A user's role in their workspace. The registering user is the owner; invited users are
/// members. Only owners manage keys, integrations, webhook secrets and invites
/// (`http::access`, 403 `owner_required`); the role is read from the user record on every
/// request, never from the JWT, so a change applies from the next request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    #[default]
    Owner,
    Member,
}

impl Record for User {
    const KIND: &'static str = "user";
    fn id(&self) -> String {
        self.id.clone()
    }
    fn indexes(&self) -> Vec<(&'static str, String)> {
        vec![
            (EMAIL_INDEX, self.email_normalized.clone()),
            (WORKSPACE_INDEX, self.workspace.to_string()),
        ]
    }
}
