//! Dashboard users: registration (user plus workspace in one commit), login and sessions.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::auth::jwt::JwtKeys;
use crate::auth::login_limiter::LoginLimiter;
use crate::auth::user::EMAIL_INDEX;
/// The user record lives with the credentials (`auth::user`); accounts are its flows.
pub use crate::auth::user::{Role, User, WORKSPACE_INDEX};
use crate::auth::{password, UserSession};
use crate::error::{Code, Error, Result};
use crate::plumbing::clock;
use crate::plumbing::ids;
use crate::store::{Store, WorkspaceId};
use crate::workspaces::{self, WorkspaceEntry, WorkspaceView};

const MAX_EMAIL_LEN: usize = 254;
const MAX_NAME_CHARS: usize = 200;

#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
pub struct RegisterRequest {
    /// One `@` between a non-empty local part and domain, no inner whitespace, at most 254
    /// characters (surrounding whitespace is trimmed).
    // Whitespace spelled out as Rust's `char::is_whitespace` (what `trim` removes): `\s`
    // differs between regex dialects.
    #[schema(
        pattern = r"^[\x09-\x0d \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*[^\x09-\x0d \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000@]+@[^\x09-\x0d \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000@]+[\x09-\x0d \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$",
        max_length = 254
    )]
    pub email: String,
    /// 8 to 256 characters.
    #[schema(min_length = 8, max_length = 256)]
    pub password: String,
    /// 1 to 200 characters after trimming.
    #[schema(pattern = r"\S", max_length = 200)]
    pub name: String,
}

#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
pub struct LoginRequest {
    pub email: String,
    pub password: String,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct UserView {
    pub id: String,
    pub email: String,
    pub name: String,
    pub created_at: String,
    /// `owner` or `member` of the workspace.
    pub role: Role,
}

impl From<&User> for UserView {
    fn from(u: &User) -> Self {
        UserView {
            id: u.id.clone(),
            email: u.email.clone(),
            name: u.name.clone(),
            created_at: u.created_at.clone(),
            role: u.role,
        }
    }
}

/// Register and login response: the JWT plus who it is for.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct TokenResponse {
    /// HS256 JWT; send as `Authorization: Bearer <token>`.
    pub token: String,
    pub token_type: String,
    pub expires_at: String,
    pub user: UserView,
    pub workspace: WorkspaceView,
}

/// `GET /api/auth/session` response.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct SessionView {
    pub user: UserView,
    pub workspace: WorkspaceView,
    pub issued_at: String,
    pub expires_at: String,
}

pub fn normalize_email(email: &str) -> String {
    email.trim().to_lowercase()
}

/// An email address as sent (register, invites): the length bound counts what was sent (the
/// schema's `maxLength`), before the surrounding whitespace is trimmed; the trimmed address
/// must then be valid.
pub(crate) fn parse_email(raw: &str) -> Result<String> {
    if raw.chars().count() > MAX_EMAIL_LEN {
        return Err(Error::invalid_field(
            "email",
            raw,
            "longer than 254 characters",
        ));
    }
    let email = raw.trim();
    validate_email(email)?;
    Ok(email.to_owned())
}

pub(crate) fn validate_email(email: &str) -> Result<()> {
    let bad = || Error::invalid_field("email", email, "not a valid email address");
    if email.chars().count() > MAX_EMAIL_LEN || email.chars().any(char::is_whitespace) {
        return Err(bad());
    }
    match email.split_once('@') {
        Some((local, domain))
            if !local.is_empty() && !domain.is_empty() && !domain.contains('@') =>
        {
            Ok(())
        }
        _ => Err(bad()),
    }
}

/// Creates the user and their workspace atomically (409 when the email is taken) and signs a
/// session token.
pub async fn register(store: &Store, jwt: &JwtKeys, req: RegisterRequest) -> Result<TokenResponse> {
    let email = parse_email(&req.email)?;
    password::validate(&req.password)?;
    let name = validate_name(&req.name)?;
    let hash = hash_password(req.password).await?;

    let now = clock::now_rfc3339();
    let ws = WorkspaceId(ids::workspace_number());
    let user = User {
        id: ids::user_id(),
        email_normalized: normalize_email(&email),
        email,
        name,
        password_hash: hash,
        workspace: ws.0,
        created_at: now.clone(),
        role: Role::Owner,
    };
    let entry = WorkspaceEntry {
        id: workspaces::render_id(ws),
        number: ws.0,
        name: format!("{}'s workspace", user.name),
        owner_user_id: user.id.clone(),
        created_at: now.clone(),
    };
    let stored = user.clone();
    store
        .write(move |tx| {
            // Check and insert on the single writer: two registrations of one email cannot both
            // pass.
            if email_taken(tx, &stored.email_normalized)? {
                return Err(Error::new(
                    Code::Conflict,
                    "an account with this email already exists",
                ));
            }
            if tx
                .get::<WorkspaceEntry>(WorkspaceId::GLOBAL, &entry.id)?
                .is_some()
            {
                return Err(Error::internal("workspace id collision"));
            }
            tx.put(WorkspaceId::GLOBAL, &stored)?;
            workspaces::create_in(tx, &entry, &now)
        })
        .await?;
    token_response(store, jwt, &user).await
}

/// Checks email and password. Unknown email and wrong password give the same 401 after the same
/// amount of hashing work; too many failures for one email give 429 until the window passes.
pub async fn login(
    store: &Store,
    jwt: &JwtKeys,
    limiter: &LoginLimiter,
    req: LoginRequest,
) -> Result<TokenResponse> {
    let email = normalize_email(&req.email);
    if let Some(wait) = limiter.check(&email, Instant::now()) {
        return Err(Error::rate_limited(wait));
    }
    let user = store
        .find::<User>(WorkspaceId::GLOBAL, EMAIL_INDEX, email.clone())
        .await?
        .into_iter()
        .next();
    let plain = req.password;
    let candidate = user.clone();
    let ok = tokio::task::spawn_blocking(move || match candidate {
        Some(u) => password::verify(&plain, &u.password_hash),
        None => {
            password::verify_dummy(&plain);
            false
        }
    })
    .await
    .map_err(|e| Error::internal(format!("hashing task failed: {e}")))?;
    match user {
        Some(user) if ok => {
            limiter.record_success(&email);
            token_response(store, jwt, &user).await
        }
        _ => {
            limiter.record_failure(&email, Instant::now());
            Err(Error::unauthenticated("invalid email or password"))
        }
    }
}

pub async fn session(store: &Store, s: &UserSession) -> Result<SessionView> {
    Ok(SessionView {
        user: UserView::from(&s.user),
        workspace: workspaces::get(store, s.workspace).await?,
        issued_at: clock::unix_rfc3339(s.issued_at),
        expires_at: clock::unix_rfc3339(s.expires_at),
    })
}

/// A display name: trimmed, 1 to 200 characters.
pub(crate) fn validate_name(name: &str) -> Result<String> {
    let trimmed = crate::fields::trim_blank(name).to_owned();
    if trimmed.is_empty() || trimmed.chars().count() > MAX_NAME_CHARS {
        return Err(Error::invalid_field(
            "name",
            name,
            &format!("must be 1 to {MAX_NAME_CHARS} characters"),
        ));
    }
    Ok(trimmed)
}

/// The argon2id hash of `plain`, computed off the async threads.
pub(crate) async fn hash_password(plain: String) -> Result<String> {
    tokio::task::spawn_blocking(move || password::hash(&plain))
        .await
        .map_err(|e| Error::internal(format!("hashing task failed: {e}")))?
}

/// Whether an account uses `email_normalized` (inside the caller's transaction).
pub(crate) fn email_taken(
    tx: &mut crate::store::Tx<'_, '_>,
    email_normalized: &str,
) -> Result<bool> {
    Ok(!tx
        .find::<User>(WorkspaceId::GLOBAL, EMAIL_INDEX, email_normalized)?
        .is_empty())
}

/// The register / login answer for `user`: a fresh session token.
pub(crate) async fn token_response(
    store: &Store,
    jwt: &JwtKeys,
    user: &User,
) -> Result<TokenResponse> {
    let ws = WorkspaceId(user.workspace);
    let (token, claims) = jwt.issue(
        &user.id,
        &workspaces::render_id(ws),
        clock::now().unix_timestamp(),
    )?;
    Ok(TokenResponse {
        token,
        token_type: "Bearer".to_owned(),
        expires_at: clock::unix_rfc3339(claims.exp),
        user: UserView::from(user),
        workspace: workspaces::get(store, ws).await?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn email_rules() {
        assert!(validate_email("a@b.co").is_ok());
        for bad in ["", "ab", "@b", "a@", "a b@c", "a@b@c"] {
            assert!(validate_email(bad).is_err(), "{bad}");
        }
        assert_eq!(normalize_email("  Alice@Example.COM "), "alice@example.com");
    }
}
