//! Who is calling: credential resolution (SPEC.md, Authentication 3) over the raw header
//! values, independent of the HTTP framework.

pub mod jwt;
pub mod login_limiter;
pub mod password;
pub mod user;

use crate::error::{Code, Error, Result};
use crate::keys::{self, AgentKey, KeyKind};
use crate::store::{Store, WorkspaceId};
use crate::workspaces;
use jwt::JwtKeys;
use user::User;

/// The credential headers of a request, as sent.
#[derive(Clone, Copy, Debug, Default)]
pub struct Presented<'a> {
    /// `Authorization` header value.
    pub authorization: Option<&'a str>,
    /// `X-API-Key` header value.
    pub api_key: Option<&'a str>,
}

/// What a route accepts beyond agent keys and JWTs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Legacy {
    /// Legacy `dsk_` keys count as credentials (direct event routes and webhooks only).
    Accepted,
    /// Legacy keys are not credentials here.
    Refused,
}

/// A dashboard user authenticated by JWT.
#[derive(Clone, Debug)]
pub struct UserSession {
    pub user: User,
    pub workspace: WorkspaceId,
    pub issued_at: i64,
    pub expires_at: i64,
}

/// The authenticated caller.
#[derive(Clone, Debug)]
pub enum Principal {
    User(UserSession),
    /// An agent (`svc_live_`) or, where accepted, a legacy (`dsk_`) key.
    Key(AgentKey),
}

impl Principal {
    pub fn workspace(&self) -> WorkspaceId {
        match self {
            Principal::User(s) => s.workspace,
            Principal::Key(k) => k.workspace_id(),
        }
    }

    /// Identity used to tell whether two credentials are "the same".
    fn identity(&self) -> (&'static str, &str) {
        match self {
            Principal::User(s) => ("user", s.user.id.as_str()),
            Principal::Key(k) => ("key", k.id.as_str()),
        }
    }
}

/// Resolves the caller. Candidates are tried in SPEC.md's order: (1) bearer agent key,
/// (2) bearer JWT, (3) `X-API-Key` agent key, (4) `X-API-Key` legacy key. The first valid one
/// wins, except that two valid credentials naming different principals are refused (400): a
/// client must not be able to act as one identity while presenting another.
pub async fn resolve(
    store: &Store,
    jwt: &JwtKeys,
    presented: Presented<'_>,
    legacy: Legacy,
) -> Result<Principal> {
    let bearer = match presented.authorization {
        Some(value) => Some(bearer_token(value).ok_or_else(|| {
            Error::unauthenticated("the Authorization header must be `Bearer <token>`")
        })?),
        None => None,
    };
    let mut found: Option<Principal> = None;
    let mut consider = |candidate: Option<Principal>| -> Result<()> {
        match (&found, candidate) {
            (None, Some(c)) => found = Some(c),
            (Some(f), Some(c)) if f.identity() != c.identity() => {
                return Err(Error::new(
                    Code::AmbiguousCredentials,
                    "the Authorization and X-API-Key headers carry different credentials; send one",
                ));
            }
            _ => {}
        }
        Ok(())
    };
    if let Some(token) = bearer {
        if keys::token::parse(token) == Some(KeyKind::Agent) {
            consider(key_principal(store, token).await?)?;
        } else if jwt::looks_like_jwt(token) {
            consider(user_principal(store, jwt, token).await?)?;
        }
    }
    if let Some(value) = presented.api_key.map(str::trim) {
        match keys::token::parse(value) {
            Some(KeyKind::Agent) => consider(key_principal(store, value).await?)?,
            Some(KeyKind::Legacy) if legacy == Legacy::Accepted => {
                consider(key_principal(store, value).await?)?
            }
            _ => {}
        }
    }
    found.ok_or_else(|| Error::unauthenticated("a valid agent key or session token is required"))
}

async fn key_principal(store: &Store, plaintext: &str) -> Result<Option<Principal>> {
    Ok(keys::authenticate(store, plaintext)
        .await?
        .map(Principal::Key))
}

/// A session from a JWT, valid only while its user exists and still belongs to the workspace.
async fn user_principal(store: &Store, jwt: &JwtKeys, token: &str) -> Result<Option<Principal>> {
    let Ok(claims) = jwt.verify(token) else {
        return Ok(None);
    };
    let Some(workspace) = workspaces::parse_id(&claims.ws) else {
        return Ok(None);
    };
    let Some(user) = store
        .get::<User>(WorkspaceId::GLOBAL, claims.sub.clone())
        .await?
    else {
        return Ok(None);
    };
    if user.workspace != workspace.0 {
        return Ok(None);
    }
    Ok(Some(Principal::User(UserSession {
        user,
        workspace,
        issued_at: claims.iat,
        expires_at: claims.exp,
    })))
}

/// Whether `principal`, authenticated earlier, still holds: its key unrevoked, or its user
/// still a member of the workspace with an unexpired session. What outlives the request that
/// authenticated it (a stream, a stream ticket) asks again before acting on it.
pub async fn still_valid(store: &Store, principal: &Principal) -> Result<bool> {
    match principal {
        Principal::Key(key) => Ok(store
            .get::<AgentKey>(key.workspace_id(), key.id.clone())
            .await?
            .is_some_and(|k| !k.is_revoked())),
        Principal::User(s) => {
            if s.expires_at <= crate::plumbing::clock::now().unix_timestamp() {
                return Ok(false);
            }
            Ok(store
                .get::<User>(WorkspaceId::GLOBAL, s.user.id.clone())
                .await?
                .is_some_and(|u| u.workspace == s.workspace.0))
        }
    }
}

/// The token of `Bearer <token>` (scheme case-insensitive, RFC 7235).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_parsing() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
        assert_eq!(bearer_token("Bearer "), None);
    }
}
