//! MCP authorization (OAuth 2.1, docs/mcp-oauth.md): registered clients, authorization codes
//! and the access and refresh tokens they turn into. No HTTP here (svc-server's `oauth` is the
//! protocol face); this is what is stored and the rules it obeys.
//!
//! An approval is an agent key of kind [`KeyKind::OAuth`]: a key record with the grants and
//! modes the approving person chose and no plaintext or digest of its own, so nothing but this
//! module's tokens can present it. A token resolves to that key, so the token acts exactly as
//! an agent key (same gateway, credits, rate limit, approvals, receipts), and revoking the key
//! (`keys::revoke`, the keys page) ends every token of the approval from the next request on.
//!
//! Codes and tokens are stored only as SHA-256 digests, in the global scope (a request carries
//! no workspace), each naming its workspace and approval key.

pub mod clients;
pub mod giving;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::keys::{AgentKey, KeyKind, DEFAULT_RATE_LIMIT_PER_MIN};
use crate::plumbing::{clock, ids};
use crate::retention::{self, Expiring};
use crate::store::{Record, Store, Tx, WorkspaceId};

pub use clients::RegisteredClient;

/// Prefixes of the plaintexts: access token, refresh token, authorization code.
pub const ACCESS_PREFIX: &str = "svc_oat_";
pub const REFRESH_PREFIX: &str = "svc_ort_";
pub const CODE_PREFIX: &str = "svc_oac_";
/// Random characters after the prefix (~256 bits).
const SECRET_LEN: usize = 43;
/// How long an authorization code may wait for its exchange (OAuth 2.1 recommends minutes at
/// most; MCP clients exchange it at once).
pub const CODE_TTL_MS: i64 = 60_000;

/// How long tokens live (configurable: `Config::oauth_*_ttl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lifetimes {
    pub access_ms: i64,
    pub refresh_ms: i64,
}

impl Default for Lifetimes {
    fn default() -> Self {
        Lifetimes {
            access_ms: 3_600_000,
            refresh_ms: 30 * 24 * 3_600_000,
        }
    }
}

/// Why a code or token request is refused, as RFC 6749 §5.2 names it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The code or refresh token is unknown, used, expired, revoked or not this client's, or
    /// the PKCE verifier does not match.
    #[error("invalid_grant: {0}")]
    InvalidGrant(String),
    /// The `resource` is not the one the grant was made for.
    #[error("invalid_target: {0}")]
    InvalidTarget(String),
}

/// What the consent step produced, waiting for the client to exchange it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AuthCode {
    /// SHA-256 of the code.
    pub digest: String,
    pub workspace: u64,
    /// Who approved (the key's `created_by`).
    pub user_id: String,
    pub client_id: String,
    pub client_name: String,
    pub redirect_uri: String,
    /// base64url SHA-256 of the verifier (PKCE S256).
    pub code_challenge: String,
    pub resource: String,
    pub grants: Vec<String>,
    pub allowed_modes: Vec<String>,
    pub expires_at_ms: i64,
    /// `expires_at_ms` as RFC 3339: the record is purged a day after it (`PURGE_AFTER`).
    pub expires_at: String,
    /// Set at the first exchange; a second one revokes this approval key.
    pub used: bool,
    pub key_id: Option<String>,
}

impl Record for AuthCode {
    const KIND: &'static str = "oauth_code";
    fn id(&self) -> String {
        self.digest.clone()
    }
    fn indexes(&self) -> Vec<(&'static str, String)> {
        vec![retention::bucket_index(&self.expires_at)]
    }
}

/// Codes and tokens are purged this long after they expire (`purge_expired`, run by the
/// sweeper): a replay within it is still recognised as a replay (and revokes the family);
/// after it, the code or token is merely unknown. Either way it is refused.
pub const PURGE_AFTER: time::Duration = time::Duration::days(1);

impl Expiring for AuthCode {
    const RETENTION: time::Duration = PURGE_AFTER;
    // The retention clock starts at expiry, not at issue: lifetimes differ per kind and config.
    fn stored_at(&self) -> &str {
        &self.expires_at
    }
}

/// Access or refresh.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenKind {
    Access,
    Refresh,
}

/// An issued token (its digest only).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TokenRecord {
    pub digest: String,
    pub kind: TokenKind,
    pub workspace: u64,
    /// The approval key this token acts as; also the token family (all tokens of one code).
    pub key_id: String,
    pub client_id: String,
    /// The audience: this server's `/mcp` URL at issue.
    pub resource: String,
    pub issued_at_ms: i64,
    pub expires_at_ms: i64,
    /// `expires_at_ms` as RFC 3339 (purged a day after, like codes).
    pub expires_at: String,
    /// Refresh tokens: set when exchanged; presenting it again revokes the family.
    pub rotated: bool,
}

impl Record for TokenRecord {
    const KIND: &'static str = "oauth_token";
    fn id(&self) -> String {
        self.digest.clone()
    }
    fn indexes(&self) -> Vec<(&'static str, String)> {
        vec![retention::bucket_index(&self.expires_at)]
    }
}

impl Expiring for TokenRecord {
    const RETENTION: time::Duration = PURGE_AFTER;
    fn stored_at(&self) -> &str {
        &self.expires_at
    }
}

/// Deletes codes and tokens that expired more than [`PURGE_AFTER`] before `now`; how many.
pub async fn purge_expired(store: &Store, now: time::OffsetDateTime) -> Result<usize> {
    Ok(
        retention::purge::<AuthCode>(store, WorkspaceId::GLOBAL, now).await?
            + retention::purge::<TokenRecord>(store, WorkspaceId::GLOBAL, now).await?,
    )
}

/// RFC 3339 of a time in Unix milliseconds (fixed width: string order is time order).
fn ms_rfc3339(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .map(clock::rfc3339)
        .unwrap_or_else(|_| ms.to_string())
}

/// The consent as submitted: who, for which client, what they hand over.
#[derive(Clone, Debug)]
pub struct Consent {
    pub workspace: WorkspaceId,
    pub user_id: String,
    pub client_id: String,
    pub client_name: String,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub resource: String,
    pub grants: Vec<String>,
    pub allowed_modes: Vec<String>,
}

/// A token response's contents.
#[derive(Debug)]
pub struct Issued {
    pub access_token: String,
    pub refresh_token: String,
    pub expires_in_secs: i64,
    pub key: AgentKey,
}

/// SHA-256 of a code or token, hex: the only form stored.
pub fn digest(plaintext: &str) -> String {
    ids::hex(&Sha256::digest(plaintext.as_bytes()))
}

fn mint(prefix: &str) -> String {
    format!("{prefix}{}", ids::random_base62(SECRET_LEN))
}

fn now_ms() -> i64 {
    i64::try_from(clock::now().unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// PKCE S256 (RFC 7636 §4.6): base64url(SHA-256(verifier)) == challenge. The verifier must be
/// 43 to 128 unreserved characters.
pub fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    // Both are public-length strings; a timing difference reveals nothing about a 256-bit hash
    // preimage.
    well_formed && computed == challenge
}

/// Whether `challenge` has the shape of an S256 challenge (43 base64url characters).
pub fn challenge_well_formed(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Stores the code of an approved consent and returns its plaintext (it leaves in the
/// redirect to the client, once).
pub async fn issue_code(store: &Store, consent: Consent) -> Result<String> {
    let code = mint(CODE_PREFIX);
    let record = AuthCode {
        digest: digest(&code),
        workspace: consent.workspace.0,
        user_id: consent.user_id,
        client_id: consent.client_id,
        client_name: consent.client_name,
        redirect_uri: consent.redirect_uri,
        code_challenge: consent.code_challenge,
        resource: consent.resource,
        grants: consent.grants,
        allowed_modes: consent.allowed_modes,
        expires_at_ms: now_ms().saturating_add(CODE_TTL_MS),
        expires_at: ms_rfc3339(now_ms().saturating_add(CODE_TTL_MS)),
        used: false,
        key_id: None,
    };
    store
        .write(move |tx| tx.put(WorkspaceId::GLOBAL, &record))
        .await?;
    Ok(code)
}

/// The `authorization_code` grant's parameters.
#[derive(Clone, Debug)]
pub struct CodeExchange {
    pub code: String,
    pub client_id: String,
    pub redirect_uri: String,
    pub code_verifier: String,
    /// RFC 8707: when sent, must name the resource the code was issued for.
    pub resource: Option<String>,
}

/// Exchanges a code: checked, spent, and turned into the approval key and its first tokens,
/// all in one write. A code presented a second time revokes the key its first exchange made
/// (RFC 6749 §4.1.2: the code may have been stolen). Any refused attempt spends the code too.
pub async fn exchange_code(
    store: &Store,
    lifetimes: Lifetimes,
    req: CodeExchange,
) -> Result<std::result::Result<Issued, Refusal>> {
    let now = now_ms();
    let outcome = store
        .write(move |tx| {
            let id = digest(&req.code);
            let Some(mut code) = tx.get::<AuthCode>(WorkspaceId::GLOBAL, &id)? else {
                return Ok(Err(invalid_grant("the authorization code is unknown")));
            };
            if code.used {
                let revoked = match &code.key_id {
                    Some(key_id) => revoke_key(tx, WorkspaceId(code.workspace), key_id)?,
                    None => false,
                };
                return Ok(Err(invalid_grant(if revoked {
                    "the authorization code was already used; the tokens issued for it are revoked"
                } else {
                    "the authorization code was already used"
                })));
            }
            code.used = true;
            tx.put(WorkspaceId::GLOBAL, &code)?;
            if code.expires_at_ms <= now {
                return Ok(Err(invalid_grant("the authorization code has expired")));
            }
            if code.client_id != req.client_id {
                return Ok(Err(invalid_grant(
                    "the authorization code was issued to another client",
                )));
            }
            if code.redirect_uri != req.redirect_uri {
                return Ok(Err(invalid_grant(
                    "redirect_uri differs from the one of the authorization request",
                )));
            }
            if !pkce_matches(&req.code_verifier, &code.code_challenge) {
                return Ok(Err(invalid_grant(
                    "the PKCE code_verifier does not match the code_challenge",
                )));
            }
            if req.resource.as_ref().is_some_and(|r| *r != code.resource) {
                return Ok(Err(Refusal::InvalidTarget(
                    "resource differs from the one the code was issued for".into(),
                )));
            }
            let key = approval_key(&code);
            tx.put(key.workspace_id(), &key)?;
            code.key_id = Some(key.id.clone());
            tx.put(WorkspaceId::GLOBAL, &code)?;
            let issued = issue_pair(tx, &key, &code.client_id, &code.resource, lifetimes, now)?;
            Ok(Ok(issued))
        })
        .await?;
    if matches!(&outcome, Err(Refusal::InvalidGrant(m)) if m.contains("are revoked")) {
        store.note_revocation();
    }
    Ok(outcome)
}

/// The `refresh_token` grant's parameters.
#[derive(Clone, Debug)]
pub struct RefreshExchange {
    pub refresh_token: String,
    pub client_id: String,
    pub resource: Option<String>,
}

/// Rotates a refresh token: the old one is spent and a new pair issued. An already rotated
/// token presented again means two parties hold the family: the whole family (the approval
/// key) is revoked (OAuth 2.1 §4.3.1).
pub async fn refresh(
    store: &Store,
    lifetimes: Lifetimes,
    req: RefreshExchange,
) -> Result<std::result::Result<Issued, Refusal>> {
    let now = now_ms();
    let (outcome, revoked) = store
        .write(move |tx| {
            let id = digest(&req.refresh_token);
            let Some(mut old) = tx
                .get::<TokenRecord>(WorkspaceId::GLOBAL, &id)?
                .filter(|t| t.kind == TokenKind::Refresh)
            else {
                return Ok((Err(invalid_grant("the refresh token is unknown")), false));
            };
            let ws = WorkspaceId(old.workspace);
            if old.client_id != req.client_id {
                return Ok((
                    Err(invalid_grant("the refresh token was issued to another client")),
                    false,
                ));
            }
            if old.rotated {
                let revoked = revoke_key(tx, ws, &old.key_id)?;
                return Ok((
                    Err(invalid_grant(
                        "the refresh token was already used; every token of this approval is revoked",
                    )),
                    revoked,
                ));
            }
            if old.expires_at_ms <= now {
                return Ok((Err(invalid_grant("the refresh token has expired")), false));
            }
            if req.resource.as_ref().is_some_and(|r| *r != old.resource) {
                return Ok((
                    Err(Refusal::InvalidTarget(
                        "resource differs from the one the token was issued for".into(),
                    )),
                    false,
                ));
            }
            let Some(key) = tx
                .get::<AgentKey>(ws, &old.key_id)?
                .filter(|k| !k.is_revoked())
            else {
                return Ok((
                    Err(invalid_grant("the approval has been revoked")),
                    false,
                ));
            };
            old.rotated = true;
            tx.put(WorkspaceId::GLOBAL, &old)?;
            let issued = issue_pair(tx, &key, &old.client_id, &old.resource, lifetimes, now)?;
            Ok((Ok(issued), false))
        })
        .await?;
    if revoked {
        store.note_revocation();
    }
    Ok(outcome)
}

/// Why an access token does not open `/mcp`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenRejection {
    #[error("the access token is unknown or revoked")]
    Unknown,
    #[error("the access token has expired")]
    Expired,
    #[error("the access token was issued for another resource ({0})")]
    WrongAudience(String),
}

/// The approval key an access token acts as, if the token is live, unexpired, issued for
/// `resource` (this server's `/mcp`), and its approval unrevoked. Two point reads, like an
/// agent key.
pub async fn authenticate(
    store: &Store,
    token: &str,
    resource: &str,
) -> Result<std::result::Result<AgentKey, TokenRejection>> {
    let Some(record) = store
        .get::<TokenRecord>(WorkspaceId::GLOBAL, digest(token))
        .await?
        .filter(|t| t.kind == TokenKind::Access)
    else {
        return Ok(Err(TokenRejection::Unknown));
    };
    if record.resource != resource {
        return Ok(Err(TokenRejection::WrongAudience(record.resource)));
    }
    if record.expires_at_ms <= now_ms() {
        return Ok(Err(TokenRejection::Expired));
    }
    let key = store
        .get::<AgentKey>(WorkspaceId(record.workspace), record.key_id)
        .await?
        .filter(|k| k.kind == KeyKind::OAuth && !k.is_revoked());
    Ok(key.ok_or(TokenRejection::Unknown))
}

fn invalid_grant(message: &str) -> Refusal {
    Refusal::InvalidGrant(message.to_owned())
}

/// The key an approval acts as: the consent's grants and modes, never auto-run.
fn approval_key(code: &AuthCode) -> AgentKey {
    AgentKey {
        id: ids::key_id(),
        workspace: code.workspace,
        kind: KeyKind::OAuth,
        name: code.client_name.clone(),
        agent: code.client_id.clone(),
        scopes: Vec::new(),
        grants: code.grants.clone(),
        allowed_modes: code.allowed_modes.clone(),
        auto_run: false,
        rate_limit_per_min: DEFAULT_RATE_LIMIT_PER_MIN,
        quota_override_monthly: None,
        prefix: KeyKind::OAuth.prefix().to_owned(),
        last_four: String::new(),
        created_at: clock::now_rfc3339(),
        created_by: code.user_id.clone(),
        last_used_at: None,
        revoked_at: None,
    }
}

fn issue_pair(
    tx: &mut Tx<'_, '_>,
    key: &AgentKey,
    client_id: &str,
    resource: &str,
    lifetimes: Lifetimes,
    now: i64,
) -> Result<Issued> {
    let access = mint(ACCESS_PREFIX);
    let refresh = mint(REFRESH_PREFIX);
    for (plaintext, kind, ttl) in [
        (&access, TokenKind::Access, lifetimes.access_ms),
        (&refresh, TokenKind::Refresh, lifetimes.refresh_ms),
    ] {
        tx.put(
            WorkspaceId::GLOBAL,
            &TokenRecord {
                digest: digest(plaintext),
                kind,
                workspace: key.workspace,
                key_id: key.id.clone(),
                client_id: client_id.to_owned(),
                resource: resource.to_owned(),
                issued_at_ms: now,
                expires_at_ms: now.saturating_add(ttl),
                expires_at: ms_rfc3339(now.saturating_add(ttl)),
                rotated: false,
            },
        )?;
    }
    Ok(Issued {
        access_token: access,
        refresh_token: refresh,
        expires_in_secs: (lifetimes.access_ms / 1000).max(1),
        key: key.clone(),
    })
}

/// Marks the approval key revoked (inside the caller's write); whether it changed.
fn revoke_key(tx: &mut Tx<'_, '_>, ws: WorkspaceId, key_id: &str) -> Result<bool> {
    let Some(mut key) = tx.get::<AgentKey>(ws, key_id)? else {
        return Ok(false);
    };
    if key.revoked_at.is_some() {
        return Ok(false);
    }
    key.revoked_at = Some(clock::now_rfc3339());
    tx.put(ws, &key)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_matches_the_rfc_example() {
        // RFC 7636 Appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(pkce_matches(verifier, challenge));
        assert!(challenge_well_formed(challenge));
        assert!(!pkce_matches(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXx",
            challenge
        ));
        assert!(!pkce_matches("short", challenge));
        assert!(!challenge_well_formed("plain"));
    }

    fn consent(challenge: &str) -> Consent {
        Consent {
            workspace: WorkspaceId(7),
            user_id: "usr_a".into(),
            client_id: "mcpc_x".into(),
            client_name: "x".into(),
            redirect_uri: "http://127.0.0.1/cb".into(),
            code_challenge: challenge.into(),
            resource: "http://svc/mcp".into(),
            grants: vec!["capability:context.get".into()],
            allowed_modes: vec!["dry_run".into()],
        }
    }

    #[tokio::test]
    async fn expired_codes_and_tokens_are_purged_a_day_later() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let verifier = "v".repeat(43);
        let challenge = {
            use base64::engine::general_purpose::URL_SAFE_NO_PAD;
            use base64::Engine as _;
            URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
        };
        let code = issue_code(&store, consent(&challenge)).await.expect("code");
        let issued = exchange_code(
            &store,
            Lifetimes::default(),
            CodeExchange {
                code,
                client_id: "mcpc_x".into(),
                redirect_uri: "http://127.0.0.1/cb".into(),
                code_verifier: verifier,
                resource: None,
            },
        )
        .await
        .expect("store")
        .expect("issued");
        let live = authenticate(&store, &issued.access_token, "http://svc/mcp")
            .await
            .expect("store");
        assert!(live.is_ok());
        // Within a day of the code's expiry nothing goes; a year on, all three records do.
        let soon = clock::now() + time::Duration::hours(1);
        assert_eq!(purge_expired(&store, soon).await.expect("purge"), 0);
        let later = clock::now() + time::Duration::days(400);
        assert_eq!(purge_expired(&store, later).await.expect("purge"), 3);
        let gone = authenticate(&store, &issued.access_token, "http://svc/mcp")
            .await
            .expect("store");
        assert_eq!(gone.err(), Some(TokenRejection::Unknown));
    }

    #[test]
    fn minted_secrets_are_long_and_prefixed() {
        let t = mint(ACCESS_PREFIX);
        assert!(t.starts_with("svc_oat_") && t.len() == 8 + SECRET_LEN);
        assert_ne!(t, mint(ACCESS_PREFIX));
        assert_eq!(digest(&t).len(), 64);
    }
}
