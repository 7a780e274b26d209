//! Agent keys and legacy dashboard keys: minting, listing, revocation and lookup by plaintext.
//!
//! A key record lives inside its workspace; a global digest record maps the SHA-256 of the
//! plaintext to (workspace, key id), so a request's key is found with two point reads.
//! Revocation rewrites the key record before the DELETE returns, and every request reads it,
//! so a revoked key is refused from the next request on.

pub mod grants;
pub mod record;
pub mod token;
pub mod usage;

use serde::{Deserialize, Serialize};

use crate::capabilities::{self, Mode};
use crate::error::{Error, Result};
use crate::plumbing::clock;
use crate::plumbing::ids;
use crate::store::{Record, RecordScan, Store, WorkspaceId};
use crate::workspaces;
pub use grants::RouteGrant;
pub use record::AgentKey;
pub use token::KeyKind;
use usage::UsageTracker;

/// DESIGN.md §4: default `rate_limit_per_min`.
pub const DEFAULT_RATE_LIMIT_PER_MIN: u32 = 600;
pub const MAX_RATE_LIMIT_PER_MIN: u32 = 1_000_000;
/// Largest `quota_override_monthly` (a trillion credits: "unlimited" for any real plan).
pub const MAX_QUOTA_OVERRIDE_MONTHLY: u64 = 1_000_000_000_000;
const MAX_LABEL_CHARS: usize = 200;
/// The largest page of a listing (and the page when none is asked for); a listing says
/// `has_more` and `total`, so nothing is cut away silently.
pub const MAX_LISTED: usize = 1000;

/// Global map from a plaintext's digest to its key.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KeyDigest {
    pub digest: String,
    pub workspace: u64,
    pub key_id: String,
}

impl Record for KeyDigest {
    const KIND: &'static str = "key_digest";
    fn id(&self) -> String {
        self.digest.clone()
    }
}

/// `POST /api/v1/keys` body.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKey {
    /// Label of the key: 1 to 200 characters after trimming.
    #[schema(pattern = r"\S", max_length = 200)]
    pub name: String,
    /// Agent label (1 to 200 characters after trimming); defaults to `name`.
    #[schema(pattern = r"\S", max_length = 200)]
    pub agent: Option<String>,
    /// Legacy scopes, each `v1:<area>:<verb>`.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Capability grants (`capability:<capability id>`, for the gateway) and route grants
    /// (`customers:read`, `graph:read`, `events:write`, `playbooks:read`, `brand:read`,
    /// `outbox:read`, for the REST routes outside the gateway).
    #[serde(default)]
    pub grants: Vec<String>,
    /// Subset of `dry_run`, `queue`, `execute`; defaults to `["dry_run"]` (least privilege).
    pub allowed_modes: Option<Vec<String>>,
    #[serde(default)]
    pub auto_run: bool,
    /// Requests per minute; default 600.
    #[schema(minimum = 1, maximum = 1_000_000)]
    #[serde(default, deserialize_with = "crate::fields::optional_integer")]
    pub rate_limit_per_min: Option<u32>,
    /// Replaces the plan's monthly credit limit for this key's invocations. At most the
    /// workspace's monthly credit limit: only the operator raises limits (`svcd admin`).
    #[serde(default, deserialize_with = "crate::fields::optional_integer")]
    pub quota_override_monthly: Option<u64>,
}

/// `POST /api/v1/keys/legacy` body.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateLegacyKey {
    /// 1 to 200 characters after trimming.
    #[schema(pattern = r"\S", max_length = 200)]
    pub name: String,
}

/// Key metadata as listed (no plaintext, no digest).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct KeyView {
    pub id: String,
    pub kind: KeyKind,
    pub workspace_id: String,
    pub name: String,
    pub agent: String,
    pub scopes: Vec<String>,
    pub grants: Vec<String>,
    pub allowed_modes: Vec<String>,
    pub auto_run: bool,
    pub rate_limit_per_min: u32,
    pub quota_override_monthly: Option<u64>,
    /// First characters of the key, e.g. `svc_live_AbCd`.
    pub prefix: String,
    /// Last four characters of the key.
    pub last_four: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
    pub revoked: bool,
    pub revoked_at: Option<String>,
}

impl KeyView {
    pub fn new(key: &AgentKey, usage: &UsageTracker) -> Self {
        KeyView {
            id: key.id.clone(),
            kind: key.kind,
            workspace_id: workspaces::render_id(key.workspace_id()),
            name: key.name.clone(),
            agent: key.agent.clone(),
            scopes: key.scopes.clone(),
            grants: key.grants.clone(),
            allowed_modes: key.allowed_modes.clone(),
            auto_run: key.auto_run,
            rate_limit_per_min: key.rate_limit_per_min,
            quota_override_monthly: key.quota_override_monthly,
            prefix: key.prefix.clone(),
            last_four: key.last_four.clone(),
            created_at: key.created_at.clone(),
            last_used_at: usage.last_used(key),
            revoked: key.is_revoked(),
            revoked_at: key.revoked_at.clone(),
        }
    }
}

/// `GET /api/v1/keys/whoami` response: the calling key as its agent sees it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct WhoAmI {
    pub workspace_id: String,
    pub key_id: String,
    pub name: String,
    pub agent: String,
    pub scopes: Vec<String>,
    pub grants: Vec<String>,
    pub allowed_modes: Vec<String>,
    pub auto_run: bool,
    pub rate_limit_per_min: u32,
    pub quota_override_monthly: Option<u64>,
    /// Includes the current request.
    pub last_used_at: Option<String>,
}

impl WhoAmI {
    pub fn new(key: &AgentKey, usage: &UsageTracker) -> Self {
        WhoAmI {
            workspace_id: workspaces::render_id(key.workspace_id()),
            key_id: key.id.clone(),
            name: key.name.clone(),
            agent: key.agent.clone(),
            scopes: key.scopes.clone(),
            grants: key.grants.clone(),
            allowed_modes: key.allowed_modes.clone(),
            auto_run: key.auto_run,
            rate_limit_per_min: key.rate_limit_per_min,
            quota_override_monthly: key.quota_override_monthly,
            last_used_at: usage.last_used(key),
        }
    }
}

/// The create response: metadata plus the plaintext, shown this once.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedKey {
    #[serde(flatten)]
    pub meta: KeyView,
    /// The key itself. It is not stored and cannot be shown again.
    pub key: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct KeyList {
    /// One page, newest first by default.
    pub keys: Vec<KeyView>,
    /// More keys match after this page.
    pub has_more: bool,
    /// Keys matching the search and filters, in all.
    pub total: usize,
    pub offset: usize,
    pub limit: usize,
}

/// The column keys are sorted by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeySort {
    /// Creation time (the default, newest first).
    #[default]
    Created,
    Name,
    Agent,
    /// Last use; never-used keys come last.
    LastUsed,
}

impl KeySort {
    pub fn parse(s: &str) -> Option<KeySort> {
        Some(match s {
            "created" | "created_at" => KeySort::Created,
            "name" => KeySort::Name,
            "agent" => KeySort::Agent,
            "last_used" | "last_used_at" => KeySort::LastUsed,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            KeySort::Created => "created",
            KeySort::Name => "name",
            KeySort::Agent => "agent",
            KeySort::LastUsed => "last_used",
        }
    }
}

/// Which keys to list. `Default`: every key people hold (agent, legacy, OAuth approvals),
/// newest first, the historical 1000.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyQuery {
    /// Case-insensitive text in the name, agent label, id or last four characters.
    pub q: String,
    /// Only keys of these kinds (none: every kind but the buddies' internal principals).
    pub kinds: Vec<KeyKind>,
    /// Only revoked (true) or only usable (false) keys.
    pub revoked: Option<bool>,
    pub sort: KeySort,
    pub ascending: bool,
    pub offset: usize,
    pub limit: usize,
}

impl Default for KeyQuery {
    fn default() -> Self {
        KeyQuery {
            q: String::new(),
            kinds: Vec::new(),
            revoked: None,
            sort: KeySort::Created,
            ascending: false,
            offset: 0,
            limit: MAX_LISTED,
        }
    }
}

impl KeyQuery {
    /// `q`, `state` (`active` or `revoked`), `sort` (`created`, `name`, `agent`,
    /// `last_used`), `order` (`asc`, `desc`), `offset`, `limit` (1 to 1000); unknown names are
    /// ignored.
    pub fn from_params<'p>(params: impl IntoIterator<Item = (&'p str, &'p str)>) -> Result<Self> {
        use crate::plumbing::paging;
        let mut q = KeyQuery::default();
        for (name, value) in params {
            let value = value.trim();
            match name {
                "q" => q.q = paging::text(name, value, MAX_LABEL_CHARS)?,
                "state" => {
                    q.revoked = Some(match value {
                        "active" => false,
                        "revoked" => true,
                        _ => return Err(Error::invalid_field(name, value, "active or revoked")),
                    })
                }
                "sort" => {
                    q.sort = KeySort::parse(value).ok_or_else(|| {
                        Error::invalid_field(name, value, "one of created, name, agent, last_used")
                    })?
                }
                "order" | "dir" => q.ascending = paging::ascending(name, value)?,
                "offset" => q.offset = paging::offset(name, value)?,
                "limit" => q.limit = paging::limit(name, value, MAX_LISTED)?,
                _ => {}
            }
        }
        Ok(q)
    }
}

/// Checks a create request and returns the normalized key settings.
fn validate(req: CreateKey) -> Result<AgentKeySettings> {
    let name = label("name", &req.name)?;
    let agent = match req.agent.as_deref() {
        Some(a) => label("agent", a)?,
        None => name.clone(),
    };
    for (i, scope) in req.scopes.iter().enumerate() {
        if !capabilities::is_legacy_scope(scope) {
            return Err(Error::invalid_field(
                &format!("scopes[{i}]"),
                scope,
                "expected v1:<area>:<verb>",
            ));
        }
    }
    for (i, grant) in req.grants.iter().enumerate() {
        if capabilities::capability_of_grant(grant).is_none() && RouteGrant::parse(grant).is_none()
        {
            return Err(Error::invalid_field(
                &format!("grants[{i}]"),
                grant,
                &format!(
                    "expected capability:<id> with a known capability id, or a route grant ({})",
                    RouteGrant::list()
                ),
            ));
        }
    }
    let modes = req
        .allowed_modes
        .unwrap_or_else(|| vec![Mode::DryRun.as_str().to_owned()]);
    for (i, mode) in modes.iter().enumerate() {
        if Mode::parse(mode).is_none() {
            return Err(Error::invalid_field(
                &format!("allowed_modes[{i}]"),
                mode,
                "expected one of dry_run, queue, execute",
            ));
        }
    }
    let rate = req.rate_limit_per_min.unwrap_or(DEFAULT_RATE_LIMIT_PER_MIN);
    if !(1..=MAX_RATE_LIMIT_PER_MIN).contains(&rate) {
        return Err(Error::invalid_field(
            "rate_limit_per_min",
            &rate.to_string(),
            &format!("must be between 1 and {MAX_RATE_LIMIT_PER_MIN}"),
        ));
    }
    if let Some(q) = req.quota_override_monthly {
        if q > MAX_QUOTA_OVERRIDE_MONTHLY {
            return Err(Error::invalid_field(
                "quota_override_monthly",
                &q.to_string(),
                &format!("must be at most {MAX_QUOTA_OVERRIDE_MONTHLY}"),
            ));
        }
    }
    Ok(AgentKeySettings {
        name,
        agent,
        scopes: sorted_unique(req.scopes),
        grants: sorted_unique(req.grants),
        allowed_modes: canonical_modes(&modes),
        auto_run: req.auto_run,
        rate_limit_per_min: rate,
        quota_override_monthly: req.quota_override_monthly,
    })
}

/// A key's own monthly budget may narrow the plan's limit, never widen it: plan and credit
/// limits are the operator's.
fn check_override(asked: u64, plan_limit: u64) -> Result<()> {
    if asked > plan_limit {
        return Err(Error::invalid_field(
            "quota_override_monthly",
            &asked.to_string(),
            &format!(
                "must not exceed the workspace's monthly credit limit ({plan_limit}); only the \
                 operator of the service raises it (svcd admin)"
            ),
        ));
    }
    Ok(())
}

struct AgentKeySettings {
    name: String,
    agent: String,
    scopes: Vec<String>,
    grants: Vec<String>,
    allowed_modes: Vec<String>,
    auto_run: bool,
    rate_limit_per_min: u32,
    quota_override_monthly: Option<u64>,
}

fn label(field: &str, value: &str) -> Result<String> {
    let v = value.trim();
    if v.is_empty() || v.chars().count() > MAX_LABEL_CHARS {
        return Err(Error::invalid_field(
            field,
            value,
            &format!("must be 1 to {MAX_LABEL_CHARS} characters"),
        ));
    }
    Ok(v.to_owned())
}

fn sorted_unique(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

/// Modes in their canonical order (dry_run, queue, execute), without repeats.
fn canonical_modes(modes: &[String]) -> Vec<String> {
    Mode::ALL
        .iter()
        .filter(|m| modes.iter().any(|s| s == m.as_str()))
        .map(|m| m.as_str().to_owned())
        .collect()
}

/// Mints an agent key in `ws` for `user_id`. The plaintext is in the result and nowhere else.
pub async fn create(
    store: &Store,
    usage: &UsageTracker,
    ws: WorkspaceId,
    user_id: &str,
    req: CreateKey,
) -> Result<CreatedKey> {
    let s = validate(req)?;
    if let Some(asked) = s.quota_override_monthly {
        let plan_limit = workspaces::settings(store, ws)
            .await?
            .monthly_credit_limit();
        check_override(asked, plan_limit)?;
    }
    let minted = token::mint(KeyKind::Agent);
    let key = AgentKey {
        id: ids::key_id(),
        workspace: ws.0,
        kind: KeyKind::Agent,
        name: s.name,
        agent: s.agent,
        scopes: s.scopes,
        grants: s.grants,
        allowed_modes: s.allowed_modes,
        auto_run: s.auto_run,
        rate_limit_per_min: s.rate_limit_per_min,
        quota_override_monthly: s.quota_override_monthly,
        prefix: minted.display_prefix.clone(),
        last_four: minted.last_four.clone(),
        created_at: clock::now_rfc3339(),
        created_by: user_id.to_owned(),
        last_used_at: None,
        revoked_at: None,
    };
    store_new(store, key.clone(), minted.digest.clone()).await?;
    Ok(CreatedKey {
        meta: KeyView::new(&key, usage),
        key: minted.plaintext,
    })
}

/// Mints a legacy `dsk_` key: no grants, no modes; only event and webhook routes accept it.
pub async fn create_legacy(
    store: &Store,
    usage: &UsageTracker,
    ws: WorkspaceId,
    user_id: &str,
    req: CreateLegacyKey,
) -> Result<CreatedKey> {
    let name = label("name", &req.name)?;
    let minted = token::mint(KeyKind::Legacy);
    let key = AgentKey {
        id: ids::key_id(),
        workspace: ws.0,
        kind: KeyKind::Legacy,
        agent: name.clone(),
        name,
        scopes: Vec::new(),
        grants: Vec::new(),
        allowed_modes: Vec::new(),
        auto_run: false,
        rate_limit_per_min: DEFAULT_RATE_LIMIT_PER_MIN,
        quota_override_monthly: None,
        prefix: minted.display_prefix.clone(),
        last_four: minted.last_four.clone(),
        created_at: clock::now_rfc3339(),
        created_by: user_id.to_owned(),
        last_used_at: None,
        revoked_at: None,
    };
    store_new(store, key.clone(), minted.digest.clone()).await?;
    Ok(CreatedKey {
        meta: KeyView::new(&key, usage),
        key: minted.plaintext,
    })
}

async fn store_new(store: &Store, key: AgentKey, digest: String) -> Result<()> {
    store
        .write(move |tx| {
            let lookup = KeyDigest {
                digest,
                workspace: key.workspace,
                key_id: key.id.clone(),
            };
            tx.put(key.workspace_id(), &key)?;
            tx.put(WorkspaceId::GLOBAL, &lookup)
        })
        .await
}

/// The workspace's keys people hold, newest first, revoked ones included (they show
/// `revoked`): [`list_page`] of the default query.
pub async fn list(store: &Store, usage: &UsageTracker, ws: WorkspaceId) -> Result<KeyList> {
    list_page(store, usage, ws, &KeyQuery::default()).await
}

/// One page of the workspace's keys matching `q` (revoked ones included unless filtered),
/// with the total.
pub async fn list_page(
    store: &Store,
    usage: &UsageTracker,
    ws: WorkspaceId,
    q: &KeyQuery,
) -> Result<KeyList> {
    let keys = store.scan::<AgentKey>(ws, RecordScan::default()).await?;
    Ok(page_of(keys, usage, q))
}

/// Filters, sorts and pages keys.
fn page_of(mut keys: Vec<AgentKey>, usage: &UsageTracker, q: &KeyQuery) -> KeyList {
    let needle = q.q.to_lowercase();
    keys.retain(|k| {
        // Buddies' internal principals are not keys anyone holds (docs/agents.md).
        let kind = if q.kinds.is_empty() {
            k.kind != KeyKind::Internal
        } else {
            q.kinds.contains(&k.kind)
        };
        kind && q.revoked.is_none_or(|r| k.is_revoked() == r)
            && (needle.is_empty()
                || [&k.name, &k.agent, &k.id, &k.last_four]
                    .iter()
                    .any(|t| t.to_lowercase().contains(&needle)))
    });
    let last_used: std::collections::HashMap<String, Option<String>> = match q.sort {
        KeySort::LastUsed => keys
            .iter()
            .map(|k| (k.id.clone(), usage.last_used(k)))
            .collect(),
        _ => std::collections::HashMap::new(),
    };
    let never = None;
    keys.sort_by(|a, b| {
        let dir = |o: std::cmp::Ordering| if q.ascending { o } else { o.reverse() };
        let by = match q.sort {
            // RFC 3339 UTC strings sort chronologically.
            KeySort::Created => dir(a.created_at.cmp(&b.created_at)),
            KeySort::Name => dir(a.name.to_lowercase().cmp(&b.name.to_lowercase())),
            KeySort::Agent => dir(a.agent.to_lowercase().cmp(&b.agent.to_lowercase())),
            KeySort::LastUsed => {
                let la = last_used.get(&a.id).unwrap_or(&never);
                let lb = last_used.get(&b.id).unwrap_or(&never);
                match (la, lb) {
                    (Some(x), Some(y)) => dir(x.cmp(y)),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                }
            }
        };
        by.then_with(|| a.id.cmp(&b.id))
    });
    let limit = q.limit.clamp(1, MAX_LISTED);
    let total = keys.len();
    let page: Vec<KeyView> = keys
        .iter()
        .skip(q.offset)
        .take(limit)
        .map(|k| KeyView::new(k, usage))
        .collect();
    KeyList {
        has_more: q.offset.saturating_add(page.len()) < total,
        keys: page,
        total,
        offset: q.offset,
        limit,
    }
}

/// Revokes a key of `ws`; idempotent. A key of another workspace is "not found", like an
/// unknown id. Returns after the revocation is durable.
pub async fn revoke(
    store: &Store,
    usage: &UsageTracker,
    ws: WorkspaceId,
    key_id: &str,
) -> Result<KeyView> {
    let key_id = key_id.to_owned();
    let key = store
        .write(move |tx| {
            let mut key = tx
                .get::<AgentKey>(ws, &key_id)?
                .filter(|k| k.kind != KeyKind::Internal)
                .ok_or_else(|| Error::not_found("key"))?;
            if key.revoked_at.is_none() {
                key.revoked_at = Some(clock::now_rfc3339());
                tx.put(ws, &key)?;
            }
            Ok(key)
        })
        .await?;
    store.note_revocation();
    Ok(KeyView::new(&key, usage))
}

/// The live (unrevoked) key whose plaintext is `candidate`, if any.
pub async fn authenticate(store: &Store, candidate: &str) -> Result<Option<AgentKey>> {
    let Some(kind) = token::parse(candidate) else {
        return Ok(None);
    };
    let Some(lookup) = store
        .get::<KeyDigest>(WorkspaceId::GLOBAL, token::digest(candidate))
        .await?
    else {
        return Ok(None);
    };
    let key = store
        .get::<AgentKey>(WorkspaceId(lookup.workspace), lookup.key_id)
        .await?;
    Ok(key.filter(|k| k.kind == kind && !k.is_revoked()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_override_stays_within_the_plan() {
        assert!(check_override(100, 100).is_ok());
        assert!(check_override(0, 100).is_ok());
        let e = check_override(101, 100).expect_err("above the plan");
        assert!(e.message.contains("svcd admin"), "{}", e.message);
    }

    fn req() -> CreateKey {
        CreateKey {
            name: " bot ".into(),
            agent: None,
            scopes: vec!["v1:context:read".into()],
            grants: vec![
                "capability:events.ingest".into(),
                "customers:read".into(),
                "capability:context.get".into(),
            ],
            allowed_modes: Some(vec!["execute".into(), "dry_run".into(), "execute".into()]),
            auto_run: false,
            rate_limit_per_min: None,
            quota_override_monthly: Some(10),
        }
    }

    #[test]
    fn validation_normalizes() {
        let s = validate(req()).expect("valid");
        assert_eq!(s.name, "bot");
        assert_eq!(s.agent, "bot");
        assert_eq!(s.allowed_modes, ["dry_run", "execute"]);
        assert_eq!(
            s.grants,
            [
                "capability:context.get",
                "capability:events.ingest",
                "customers:read"
            ]
        );
        assert_eq!(s.rate_limit_per_min, DEFAULT_RATE_LIMIT_PER_MIN);
    }

    #[test]
    fn validation_names_the_bad_value() {
        let mut r = req();
        r.grants.push("capability:teleport".into());
        let e = validate(r).err().expect("invalid");
        assert!(
            e.message.contains("grants[3]") && e.message.contains("capability:teleport"),
            "{}",
            e.message
        );

        // An unknown route grant is named, and the message lists the known ones.
        let mut r = req();
        r.grants.push("customers:write".into());
        let e = validate(r).err().expect("invalid");
        assert!(
            e.message.contains("grants[3]")
                && e.message.contains("customers:write")
                && e.message.contains("customers:read, graph:read"),
            "{}",
            e.message
        );

        let mut r = req();
        r.allowed_modes = Some(vec!["dry_run".into(), "yolo".into()]);
        let e = validate(r).err().expect("invalid");
        assert!(
            e.message.contains("allowed_modes[1]") && e.message.contains("yolo"),
            "{}",
            e.message
        );

        let mut r = req();
        r.rate_limit_per_min = Some(0);
        assert!(validate(r).is_err());

        let mut r = req();
        r.name = "  ".into();
        assert!(validate(r).is_err());
    }

    #[test]
    fn default_modes_are_dry_run_only() {
        let mut r = req();
        r.allowed_modes = None;
        assert_eq!(validate(r).expect("valid").allowed_modes, ["dry_run"]);
    }

    fn key(i: usize, kind: KeyKind) -> AgentKey {
        AgentKey {
            id: format!("key_{i:03}"),
            workspace: 1,
            kind,
            name: format!("Bot {i:02}"),
            agent: format!("agent-{}", i % 3),
            scopes: Vec::new(),
            grants: Vec::new(),
            allowed_modes: vec!["dry_run".into()],
            auto_run: false,
            rate_limit_per_min: DEFAULT_RATE_LIMIT_PER_MIN,
            quota_override_monthly: None,
            prefix: "svc_live_x".into(),
            last_four: format!("{i:04}"),
            created_at: format!("2026-01-01T00:00:{i:02}Z"),
            created_by: "usr_1".into(),
            last_used_at: (i % 4 == 0).then(|| format!("2026-02-01T00:00:{i:02}Z")),
            revoked_at: (i % 5 == 0).then(|| "2026-03-01T00:00:00Z".to_owned()),
        }
    }

    #[test]
    fn keys_are_searched_filtered_sorted_and_paged_with_the_total() {
        let usage = UsageTracker::new();
        let mut keys: Vec<AgentKey> = (0..40).map(|i| key(i, KeyKind::Agent)).collect();
        keys.push(key(40, KeyKind::Internal));
        keys.push(key(41, KeyKind::OAuth));
        let page = |q: KeyQuery| page_of(keys.clone(), &usage, &q);
        // The buddies' internal principals are never listed; newest first.
        let all = page(KeyQuery::default());
        assert_eq!((all.total, all.has_more), (41, false));
        assert_eq!(all.keys[0].name, "Bot 41");
        let second = page(KeyQuery::from_params([("limit", "15"), ("offset", "15")]).expect("q"));
        assert_eq!(
            (second.keys.len(), second.total, second.has_more),
            (15, 41, true)
        );
        assert_eq!(second.keys[0].name, "Bot 25");
        let found = page(KeyQuery::from_params([("q", "bot 1")]).expect("q"));
        assert_eq!(found.total, 10);
        let revoked = page(KeyQuery::from_params([("state", "revoked")]).expect("q"));
        assert_eq!(revoked.total, 8);
        let agents = page(KeyQuery {
            kinds: vec![KeyKind::Agent],
            sort: KeySort::Name,
            ascending: true,
            ..KeyQuery::default()
        });
        assert_eq!((agents.total, agents.keys[0].name.as_str()), (40, "Bot 00"));
        // Never-used keys last, in either order.
        let used =
            page(KeyQuery::from_params([("sort", "last_used"), ("order", "asc")]).expect("q"));
        assert_eq!(used.keys[0].name, "Bot 00");
        assert!(used.keys[10..].iter().all(|k| k.last_used_at.is_none()));
        for bad in [
            ("state", ""),
            ("state", "gone"),
            ("sort", "colour"),
            ("limit", "0"),
            ("limit", "1001"),
            ("order", "up"),
        ] {
            assert!(KeyQuery::from_params([bad]).is_err(), "{bad:?}");
        }
    }
}
