//! Who belongs to a workspace: its owner (the user who registered it) and the members the
//! owners invite. An invite names an email and carries a one-time token (`inv_` + 32 base62
//! characters, shown once; only its SHA-256 is stored, in the global scope so the public
//! accept route finds it with one point read). Accepting it with a password and a name creates
//! the user in the inviting workspace as a `member` and answers like registration.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::accounts::{self, Role, TokenResponse, User, UserView, WORKSPACE_INDEX};
use crate::auth::jwt::JwtKeys;
use crate::auth::{password, UserSession};
use crate::error::{Code, Error, Result};
use crate::plumbing::clock;
use crate::plumbing::ids;
use crate::store::{Record, Store, WorkspaceId};
use crate::workspaces::{self, WorkspaceEntry};

/// How long an invite can be accepted.
pub const INVITE_TTL_SECS: i64 = 7 * 24 * 60 * 60;
const TOKEN_PREFIX: &str = "inv_";
const TOKEN_CHARS: usize = 32;

/// An invite as stored: global scope, id = the SHA-256 (hex) of its token.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Invite {
    digest: String,
    workspace: u64,
    email: String,
    email_normalized: String,
    invited_by: String,
    created_at: String,
    /// Unix seconds.
    expires_at: i64,
    accepted_at: Option<String>,
}

impl Record for Invite {
    const KIND: &'static str = "invite";
    fn id(&self) -> String {
        self.digest.clone()
    }
}

/// `POST /api/v1/workspace/invites` body.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InviteRequest {
    /// One `@` between a non-empty local part and domain, no inner whitespace, at most 254
    /// characters (surrounding whitespace is trimmed).
    // Whitespace spelled out as Rust's `char::is_whitespace` (what `trim` removes): `\s`
    // differs between regex dialects.
    #[schema(
        pattern = r"^[\x09-\x0d \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*[^\x09-\x0d \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000@]+@[^\x09-\x0d \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000@]+[\x09-\x0d \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$",
        max_length = 254
    )]
    pub email: String,
}

/// The created invite; `token` is shown this once.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedInvite {
    pub email: String,
    pub workspace_id: String,
    /// One-time token for `POST /api/auth/accept-invite`; not stored, not shown again.
    pub token: String,
    pub expires_at: String,
}

/// `POST /api/auth/accept-invite` body.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptInvite {
    pub token: String,
    /// 8 to 256 characters.
    #[schema(min_length = 8, max_length = 256)]
    pub password: String,
    /// 1 to 200 characters after trimming.
    #[schema(pattern = r"\S", max_length = 200)]
    pub name: String,
}

/// `GET /api/v1/workspace/members` response.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct MemberList {
    /// Oldest first; the owner who registered the workspace comes first.
    pub members: Vec<UserView>,
}

fn digest(token: &str) -> String {
    ids::hex(&Sha256::digest(token.trim().as_bytes()))
}

/// An owner invites `email` into their workspace. The answer is the same whether or not the
/// email has an account, so inviting cannot be used to learn who has one; an invite for an
/// email that has an account can never be accepted (an account belongs to one workspace, and
/// [`accept`] refuses it as registration does).
pub async fn invite(store: &Store, by: &UserSession, req: InviteRequest) -> Result<CreatedInvite> {
    let email = accounts::parse_email(&req.email)?;
    let token = format!("{TOKEN_PREFIX}{}", ids::random_base62(TOKEN_CHARS));
    let now = clock::now();
    let invite = Invite {
        digest: digest(&token),
        workspace: by.workspace.0,
        email_normalized: accounts::normalize_email(&email),
        email: email.clone(),
        invited_by: by.user.id.clone(),
        created_at: clock::rfc3339(now),
        expires_at: now.unix_timestamp() + INVITE_TTL_SECS,
        accepted_at: None,
    };
    let expires_at = clock::unix_rfc3339(invite.expires_at);
    store
        .write(move |tx| tx.put(WorkspaceId::GLOBAL, &invite))
        .await?;
    tracing::info!(workspace = %by.workspace, "member invited");
    Ok(CreatedInvite {
        email,
        workspace_id: workspaces::render_id(by.workspace),
        token,
        expires_at,
    })
}

/// Accepts an invite: creates the invited user as a member of the inviting workspace and
/// signs a session token. An unknown, used or expired token is 401 (the three are not told
/// apart); an email that got an account meanwhile is 409.
pub async fn accept(store: &Store, jwt: &JwtKeys, req: AcceptInvite) -> Result<TokenResponse> {
    password::validate(&req.password)?;
    let name = accounts::validate_name(&req.name)?;
    let digest = digest(&req.token);
    let refused = || Error::unauthenticated("invalid, used or expired invite token");
    // Checked before the costly hash, and again inside the write (it may be used meanwhile).
    let found = store
        .get::<Invite>(WorkspaceId::GLOBAL, digest.clone())
        .await?;
    let now = clock::now();
    if !found
        .as_ref()
        .is_some_and(|i| i.accepted_at.is_none() && now.unix_timestamp() < i.expires_at)
    {
        return Err(refused());
    }
    let hash = accounts::hash_password(req.password).await?;
    let user_id = ids::user_id();
    let at = clock::rfc3339(now);
    let user = store
        .write(move |tx| {
            let mut invite = tx
                .get::<Invite>(WorkspaceId::GLOBAL, &digest)?
                .filter(|i| i.accepted_at.is_none() && now.unix_timestamp() < i.expires_at)
                .ok_or_else(refused)?;
            if accounts::email_taken(tx, &invite.email_normalized)? {
                return Err(Error::new(
                    Code::Conflict,
                    "an account with this email already exists",
                ));
            }
            let user = User {
                id: user_id,
                email: invite.email.clone(),
                email_normalized: invite.email_normalized.clone(),
                name,
                password_hash: hash,
                workspace: invite.workspace,
                created_at: at.clone(),
                role: Role::Member,
            };
            tx.put(WorkspaceId::GLOBAL, &user)?;
            invite.accepted_at = Some(at);
            tx.put(WorkspaceId::GLOBAL, &invite)?;
            Ok(user)
        })
        .await?;
    tracing::info!(workspace = %WorkspaceId(user.workspace), "invite accepted");
    accounts::token_response(store, jwt, &user).await
}

/// The workspace's users, oldest first.
pub async fn list(store: &Store, ws: WorkspaceId) -> Result<MemberList> {
    let mut users = store
        .find::<User>(WorkspaceId::GLOBAL, WORKSPACE_INDEX, ws.0.to_string())
        .await?;
    // Users written before the index existed: the owner, named by the workspace entry.
    if let Some(entry) = store
        .get::<WorkspaceEntry>(WorkspaceId::GLOBAL, workspaces::render_id(ws))
        .await?
    {
        if !users.iter().any(|u| u.id == entry.owner_user_id) {
            if let Some(owner) = store
                .get::<User>(WorkspaceId::GLOBAL, entry.owner_user_id)
                .await?
            {
                users.push(owner);
            }
        }
    }
    users.retain(|u| u.workspace == ws.0);
    users.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
    Ok(MemberList {
        members: users.iter().map(UserView::from).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_matched_by_digest_only() {
        let a = digest("inv_abc");
        assert_eq!(a.len(), 64);
        assert_eq!(
            a,
            digest(" inv_abc\n"),
            "surrounding space is not part of it"
        );
        assert_ne!(a, digest("inv_abd"));
    }

    #[test]
    fn users_without_a_role_read_as_owners() {
        let old = serde_json::json!({
            "id": "usr_1", "email": "a@b.co", "email_normalized": "a@b.co", "name": "A",
            "password_hash": "x", "workspace": 7, "created_at": "2025-01-01T00:00:00Z"
        });
        let user: User = serde_json::from_value(old).expect("old record");
        assert_eq!(user.role, Role::Owner);
        let member: User = serde_json::from_value(serde_json::json!({
            "id": "usr_2", "email": "m@b.co", "email_normalized": "m@b.co", "name": "M",
            "password_hash": "x", "workspace": 7, "created_at": "2025-01-01T00:00:00Z",
            "role": "member"
        }))
        .expect("member record");
        assert_eq!(member.role, Role::Member);
    }
}
