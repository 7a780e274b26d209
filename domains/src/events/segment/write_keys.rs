//! Source write keys: what Segment's clients authenticate with (HTTP Basic user name, or
//! `writeKey` in the body). Created and revoked by a workspace owner; stored as a SHA-256
//! digest (a global digest record maps it to its workspace), like agent keys.

use serde::{Deserialize, Serialize};

use svc_core::error::{Code, Error, Result};
use svc_core::plumbing::{clock, ids};
use svc_core::store::{RecordScan, Store, WorkspaceId};

/// Plaintext prefix of a write key.
pub const PREFIX: &str = "swk_";
const RANDOM_LEN: usize = 32;
/// Default requests per minute of one write key (Segment's clients send batches of up to
/// 500 events, so this is up to 3M events a minute).
pub const DEFAULT_RATE_PER_MIN: u32 = 6000;
const MAX_RATE_PER_MIN: u32 = 1_000_000;
/// At most this many write keys are listed (and may exist) per workspace.
pub const MAX_KEYS: usize = 100;

/// A write key as stored (never its plaintext).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WriteKey {
    pub id: String,
    pub workspace: u64,
    pub name: String,
    pub prefix: String,
    pub last_four: String,
    pub rate_limit_per_min: u32,
    pub created_at: String,
    pub created_by: String,
    pub revoked_at: Option<String>,
}

impl svc_core::store::Record for WriteKey {
    const KIND: &'static str = "segment_write_key";
    fn id(&self) -> String {
        self.id.clone()
    }
}

/// Global map from a write key's digest to its record.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WriteKeyDigest {
    pub digest: String,
    pub workspace: u64,
    pub key_id: String,
}

impl svc_core::store::Record for WriteKeyDigest {
    const KIND: &'static str = "segment_write_key_digest";
    fn id(&self) -> String {
        self.digest.clone()
    }
}

/// `POST /api/v1/segment/write-keys` body.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWriteKey {
    /// A label for people (1 to 100 characters, not blank), e.g. the source's name.
    #[schema(min_length = 1, max_length = 100, pattern = "\\S")]
    pub name: String,
    /// Requests per minute (1..=1,000,000); default 6,000.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000000)]
    pub rate_limit_per_min: Option<u32>,
}

/// A write key as listed (never the plaintext).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct WriteKeyView {
    pub id: String,
    pub name: String,
    /// `swk_` and the first four random characters.
    pub prefix: String,
    pub last_four: String,
    pub rate_limit_per_min: u32,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// The created key: the plaintext is shown this once.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedWriteKey {
    /// `swk_...`: the write key to configure in Segment's clients.
    pub write_key: String,
    #[serde(flatten)]
    pub key: WriteKeyView,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct WriteKeyList {
    /// Newest first, revoked ones included.
    pub write_keys: Vec<WriteKeyView>,
}

impl From<&WriteKey> for WriteKeyView {
    fn from(k: &WriteKey) -> Self {
        WriteKeyView {
            id: k.id.clone(),
            name: k.name.clone(),
            prefix: k.prefix.clone(),
            last_four: k.last_four.clone(),
            rate_limit_per_min: k.rate_limit_per_min,
            created_at: k.created_at.clone(),
            revoked_at: k.revoked_at.clone(),
        }
    }
}

/// Creates a write key; the plaintext is returned once.
pub async fn create(
    store: &Store,
    ws: WorkspaceId,
    user_id: &str,
    body: CreateWriteKey,
) -> Result<CreatedWriteKey> {
    let name = svc_core::fields::trim_blank(&body.name).to_owned();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(Error::invalid_field(
            "name",
            &name,
            "must be 1 to 100 characters",
        ));
    }
    let rate = body.rate_limit_per_min.unwrap_or(DEFAULT_RATE_PER_MIN);
    if !(1..=MAX_RATE_PER_MIN).contains(&rate) {
        return Err(Error::invalid_field(
            "rate_limit_per_min",
            &rate.to_string(),
            "must be 1 to 1000000",
        ));
    }
    let plaintext = format!("{PREFIX}{}", ids::random_base62(RANDOM_LEN));
    let key = WriteKey {
        id: ids::new_id("swkid"),
        workspace: ws.0,
        name,
        prefix: plaintext[..PREFIX.len() + 4].to_owned(),
        last_four: plaintext[plaintext.len() - 4..].to_owned(),
        rate_limit_per_min: rate,
        created_at: clock::now_rfc3339(),
        created_by: user_id.to_owned(),
        revoked_at: None,
    };
    let lookup = WriteKeyDigest {
        digest: svc_core::keys::token::digest(&plaintext),
        workspace: ws.0,
        key_id: key.id.clone(),
    };
    let stored = key.clone();
    store
        .write(move |tx| {
            // Revoked keys stay listed but do not count: revoking frees a place.
            let existing = tx
                .workspace(ws)
                .scan_records::<WriteKey>(&RecordScan::default())?
                .iter()
                .filter(|k| k.revoked_at.is_none())
                .count();
            if existing >= MAX_KEYS {
                // A valid request the workspace's state refuses: 409, like a taken name.
                return Err(Error::new(
                    Code::Conflict,
                    format!(
                        "a workspace may have at most {MAX_KEYS} write keys; revoke unused ones"
                    ),
                ));
            }
            tx.put(ws, &stored)?;
            tx.put(WorkspaceId::GLOBAL, &lookup)
        })
        .await?;
    Ok(CreatedWriteKey {
        write_key: plaintext,
        key: WriteKeyView::from(&key),
    })
}

/// The workspace's write keys, newest first.
pub async fn list(store: &Store, ws: WorkspaceId) -> Result<WriteKeyList> {
    let scan = RecordScan {
        limit: Some(MAX_KEYS),
        ..RecordScan::default()
    };
    let mut keys = store.scan::<WriteKey>(ws, scan).await?;
    keys.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    Ok(WriteKeyList {
        write_keys: keys.iter().map(WriteKeyView::from).collect(),
    })
}

/// Revokes a write key (idempotent); its digest record goes, so it stops working at once.
pub async fn revoke(store: &Store, ws: WorkspaceId, id: &str) -> Result<WriteKeyView> {
    let id = id.to_owned();
    let key = store
        .write(move |tx| {
            let mut key = tx
                .get::<WriteKey>(ws, &id)?
                .ok_or_else(|| Error::not_found("write key"))?;
            if key.revoked_at.is_none() {
                key.revoked_at = Some(clock::now_rfc3339());
                tx.put(ws, &key)?;
            }
            Ok(key)
        })
        .await?;
    Ok(WriteKeyView::from(&key))
}

/// The live write key whose plaintext is `candidate`, if any.
pub async fn authenticate(store: &Store, candidate: &str) -> Result<Option<WriteKey>> {
    if !candidate.starts_with(PREFIX)
        || candidate.len() != PREFIX.len() + RANDOM_LEN
        || !ids::is_base62(&candidate[PREFIX.len()..])
    {
        return Ok(None);
    }
    let digest = svc_core::keys::token::digest(candidate);
    let Some(lookup) = store
        .get::<WriteKeyDigest>(WorkspaceId::GLOBAL, digest)
        .await?
    else {
        return Ok(None);
    };
    let key = store
        .get::<WriteKey>(WorkspaceId(lookup.workspace), lookup.key_id)
        .await?;
    Ok(key.filter(|k| k.revoked_at.is_none()))
}

/// The rate-limit bucket of a write key (never collides with a `key_` id).
pub fn rate_bucket(key: &WriteKey) -> String {
    format!("segment_write_key:{}", key.id)
}
