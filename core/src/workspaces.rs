//! Workspaces: the directory entry (global scope) and the per-workspace settings record
//! (plan, read-only flag, policy).

use serde::{Deserialize, Serialize};

use crate::capabilities;
use crate::error::{Error, Result};
use crate::store::{Record, Store, Tx, WorkspaceId};

/// Directory entry of a workspace, stored in the global scope under its `ws_` id.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkspaceEntry {
    pub id: String,
    pub number: u64,
    pub name: String,
    pub owner_user_id: String,
    pub created_at: String,
}

impl Record for WorkspaceEntry {
    const KIND: &'static str = "workspace";
    fn id(&self) -> String {
        self.id.clone()
    }
}

/// Billing plan; it fixes the monthly action-credit limit (SPEC.md, Limits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Plan {
    Free,
    Starter,
    Growth,
    Pro,
    Enterprise,
}

impl Plan {
    pub const ALL: [Plan; 5] = [
        Plan::Free,
        Plan::Starter,
        Plan::Growth,
        Plan::Pro,
        Plan::Enterprise,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Starter => "starter",
            Plan::Growth => "growth",
            Plan::Pro => "pro",
            Plan::Enterprise => "enterprise",
        }
    }

    pub fn parse(s: &str) -> Option<Plan> {
        Plan::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// The fixed limit of the plan; `None` for enterprise, whose limit is configured.
    pub fn fixed_monthly_limit(self) -> Option<u64> {
        match self {
            Plan::Free => Some(100),
            Plan::Starter => Some(500),
            Plan::Growth => Some(3000),
            Plan::Pro => Some(15000),
            Plan::Enterprise => None,
        }
    }
}

/// Capability ids the workspace forbids, those the approval system approves on its own, and the
/// outreach frequency cap.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Policy {
    pub forbid: Vec<String>,
    pub auto_approve: Vec<String>,
    /// Emails and calls one customer may receive in any 7 days (queued, sending, sent or of
    /// unknown outcome); past it outreach answers 409 `frequency_capped`.
    #[serde(default = "default_outreach_cap")]
    pub max_outreach_per_customer_per_week: u32,
}

/// Default of [`Policy::max_outreach_per_customer_per_week`].
pub const DEFAULT_OUTREACH_CAP: u32 = 3;

fn default_outreach_cap() -> u32 {
    DEFAULT_OUTREACH_CAP
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            forbid: Vec::new(),
            auto_approve: Vec::new(),
            max_outreach_per_customer_per_week: DEFAULT_OUTREACH_CAP,
        }
    }
}

/// Per-workspace settings, stored inside the workspace under the fixed id `settings`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkspaceSettings {
    pub plan: Plan,
    /// Only for the enterprise plan.
    pub enterprise_monthly_limit: Option<u64>,
    pub read_only: bool,
    pub policy: Policy,
    pub updated_at: String,
}

impl Record for WorkspaceSettings {
    const KIND: &'static str = "workspace_settings";
    fn id(&self) -> String {
        SETTINGS_ID.to_owned()
    }
}

pub const SETTINGS_ID: &str = "settings";

/// Refuses a mutation of a read-only workspace, inside the write (atomic with it).
pub fn ensure_writable(tx: &mut Tx<'_, '_>, ws: WorkspaceId) -> Result<()> {
    match tx.get::<WorkspaceSettings>(ws, SETTINGS_ID)? {
        Some(settings) => settings.ensure_writable(),
        None => Ok(()),
    }
}

impl WorkspaceSettings {
    pub fn new_default(now: &str) -> Self {
        WorkspaceSettings {
            plan: Plan::Free,
            enterprise_monthly_limit: None,
            read_only: false,
            policy: Policy::default(),
            updated_at: now.to_owned(),
        }
    }

    /// Refuses mutations of workspace data while the workspace is read-only (SPEC.md: 403).
    pub fn ensure_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::new(
                crate::error::Code::ReadOnlyWorkspace,
                "the workspace is read-only",
            ));
        }
        Ok(())
    }

    /// The monthly action-credit limit the plan gives this workspace.
    pub fn monthly_credit_limit(&self) -> u64 {
        self.plan
            .fixed_monthly_limit()
            .or(self.enterprise_monthly_limit)
            .unwrap_or(0)
    }
}

/// A workspace as the API shows it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct WorkspaceView {
    /// `ws_` + 16 hex digits.
    pub id: String,
    pub name: String,
    pub plan: Plan,
    /// Monthly action credits of the plan (configured for enterprise).
    pub monthly_credit_limit: u64,
    pub read_only: bool,
    pub policy: Policy,
    pub created_at: String,
    pub updated_at: String,
}

impl WorkspaceView {
    fn new(entry: &WorkspaceEntry, settings: &WorkspaceSettings) -> Self {
        WorkspaceView {
            id: entry.id.clone(),
            name: entry.name.clone(),
            plan: settings.plan,
            monthly_credit_limit: settings.monthly_credit_limit(),
            read_only: settings.read_only,
            policy: settings.policy.clone(),
            created_at: entry.created_at.clone(),
            updated_at: settings.updated_at.clone(),
        }
    }
}

/// Partial update of the settings (`PUT /api/v1/workspace`); absent fields stay as they are.
/// Members change `read_only` and `policy`; the plan and credit limits are the operator's.
#[derive(Clone, Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceUpdate {
    /// Read-only here: only the operator changes the plan (`svcd admin`). Sending it is 403
    /// `forbidden`.
    #[schema(read_only)]
    pub plan: Option<String>,
    /// Read-only here, like `plan`.
    #[schema(read_only)]
    pub monthly_credit_limit: Option<u64>,
    pub read_only: Option<bool>,
    pub policy: Option<PolicyUpdate>,
}

#[derive(Clone, Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyUpdate {
    pub forbid: Option<Vec<String>>,
    pub auto_approve: Option<Vec<String>>,
    #[schema(maximum = 1000)]
    pub max_outreach_per_customer_per_week: Option<u32>,
}

/// The workspace id as rendered on the wire.
pub fn render_id(ws: WorkspaceId) -> String {
    ws.to_string()
}

/// Inverse of [`render_id`]; `None` for anything that is not `ws_` + 16 hex digits.
pub fn parse_id(s: &str) -> Option<WorkspaceId> {
    let hex = s.strip_prefix("ws_")?;
    if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16)
        .ok()
        .filter(|n| *n != 0)
        .map(WorkspaceId)
}

/// Writes a new workspace's directory entry and default settings (inside the caller's
/// transaction, so registration creates user and workspace together).
pub fn create_in(tx: &mut Tx<'_, '_>, entry: &WorkspaceEntry, now: &str) -> Result<()> {
    tx.put(WorkspaceId::GLOBAL, entry)?;
    tx.put(
        WorkspaceId(entry.number),
        &WorkspaceSettings::new_default(now),
    )
}

pub async fn get(store: &Store, ws: WorkspaceId) -> Result<WorkspaceView> {
    let entry = store
        .get::<WorkspaceEntry>(WorkspaceId::GLOBAL, render_id(ws))
        .await?
        .ok_or_else(|| Error::not_found("workspace"))?;
    let settings = settings(store, ws).await?;
    Ok(WorkspaceView::new(&entry, &settings))
}

pub async fn settings(store: &Store, ws: WorkspaceId) -> Result<WorkspaceSettings> {
    store
        .get::<WorkspaceSettings>(ws, SETTINGS_ID)
        .await?
        .ok_or_else(|| Error::internal(format!("workspace {ws} has no settings record")))
}

/// A member's partial update of read-only flag and policy, validated and applied atomically;
/// returns the new view. The plan and credit limit are refused: a member must not be able to
/// raise what the workspace may spend ([`set_plan`] is the operator's).
pub async fn update(
    store: &Store,
    ws: WorkspaceId,
    update: WorkspaceUpdate,
) -> Result<WorkspaceView> {
    for (field, sent) in [
        ("plan", update.plan.is_some()),
        (
            "monthly_credit_limit",
            update.monthly_credit_limit.is_some(),
        ),
    ] {
        if sent {
            return Err(Error::forbidden(format!(
                "{field} is read-only here: only the operator of the service changes the plan \
                 and credit limits (svcd admin); members change read_only and policy"
            ))
            .with_details(serde_json::json!({ "field": field })));
        }
    }
    if let Some(policy) = &update.policy {
        if let Some(cap) = policy.max_outreach_per_customer_per_week {
            if cap > 1000 {
                return Err(Error::invalid_field(
                    "policy.max_outreach_per_customer_per_week",
                    &cap.to_string(),
                    "must be 0 to 1000",
                ));
            }
        }
        for (field, ids) in [
            ("policy.forbid", &policy.forbid),
            ("policy.auto_approve", &policy.auto_approve),
        ] {
            for (i, id) in ids.iter().flatten().enumerate() {
                if !capabilities::is_known(id) {
                    return Err(Error::invalid_field(
                        &format!("{field}[{i}]"),
                        id,
                        "unknown capability id",
                    ));
                }
            }
        }
    }
    let now = crate::plumbing::clock::now_rfc3339();
    let (entry, settings) = store
        .write(move |tx| {
            let (entry, mut s) = load_in(tx, ws)?;
            if let Some(read_only) = update.read_only {
                s.read_only = read_only;
            }
            if let Some(policy) = update.policy {
                if let Some(forbid) = policy.forbid {
                    s.policy.forbid = dedup(forbid);
                }
                if let Some(auto) = policy.auto_approve {
                    s.policy.auto_approve = dedup(auto);
                }
                if let Some(cap) = policy.max_outreach_per_customer_per_week {
                    s.policy.max_outreach_per_customer_per_week = cap;
                }
            }
            s.updated_at = now;
            tx.put(ws, &s)?;
            Ok((entry, s))
        })
        .await?;
    Ok(WorkspaceView::new(&entry, &settings))
}

/// The operator's change of plan (never reachable over the members' HTTP API):
/// `monthly_credit_limit` is required with, and only allowed for, the enterprise plan.
pub async fn set_plan(
    store: &Store,
    ws: WorkspaceId,
    plan: Plan,
    monthly_credit_limit: Option<u64>,
) -> Result<WorkspaceView> {
    let enterprise_limit = enterprise_limit(plan, monthly_credit_limit)?;
    let now = crate::plumbing::clock::now_rfc3339();
    let (entry, settings) = store
        .write(move |tx| {
            let (entry, mut s) = load_in(tx, ws)?;
            s.plan = plan;
            s.enterprise_monthly_limit = enterprise_limit;
            s.updated_at = now;
            tx.put(ws, &s)?;
            Ok((entry, s))
        })
        .await?;
    Ok(WorkspaceView::new(&entry, &settings))
}

/// The configured limit a plan takes: required with, and only allowed for, enterprise.
fn enterprise_limit(plan: Plan, monthly_credit_limit: Option<u64>) -> Result<Option<u64>> {
    match (plan, monthly_credit_limit) {
        (Plan::Enterprise, Some(0)) => Err(Error::invalid_input(
            "monthly_credit_limit must be at least 1",
        )),
        (Plan::Enterprise, Some(limit)) => Ok(Some(limit)),
        (Plan::Enterprise, None) => Err(Error::invalid_input(
            "the enterprise plan needs monthly_credit_limit (its limit is configurable)",
        )),
        (_, Some(_)) => Err(Error::invalid_input(
            "monthly_credit_limit can only be set on the enterprise plan",
        )),
        (_, None) => Ok(None),
    }
}

fn load_in(tx: &mut Tx<'_, '_>, ws: WorkspaceId) -> Result<(WorkspaceEntry, WorkspaceSettings)> {
    let entry = tx
        .get::<WorkspaceEntry>(WorkspaceId::GLOBAL, &render_id(ws))?
        .ok_or_else(|| Error::not_found("workspace"))?;
    let settings = tx
        .get::<WorkspaceSettings>(ws, SETTINGS_ID)?
        .ok_or_else(|| Error::internal(format!("workspace {ws} has no settings record")))?;
    Ok((entry, settings))
}

fn dedup(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids.dedup();
    ids
}

/// Directory entries read per page by [`all_ids`].
const PAGE: usize = 500;

/// Every workspace's id, walking the directory a page at a time (the sweeper and start-up
/// recovery visit each workspace). An entry with a malformed id is logged and skipped.
pub async fn all_ids(store: &Store) -> Result<Vec<WorkspaceId>> {
    let mut ids = Vec::new();
    let mut after = None;
    loop {
        let page: Vec<WorkspaceEntry> = store
            .scan(
                WorkspaceId::GLOBAL,
                crate::store::RecordScan {
                    after: after.clone(),
                    limit: Some(PAGE),
                    ..Default::default()
                },
            )
            .await?;
        let Some(last) = page.last() else { break };
        after = Some(last.id.clone());
        let full = page.len() == PAGE;
        for entry in &page {
            match parse_id(&entry.id) {
                Some(ws) => ids.push(ws),
                None => {
                    tracing::warn!(id = %entry.id, "workspace entry with a malformed id; skipped")
                }
            }
        }
        if !full {
            break;
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_ids_round_trip() {
        let ws = WorkspaceId(0x00ab_cdef_0123_4567);
        let s = render_id(ws);
        assert_eq!(s, "ws_00abcdef01234567");
        assert_eq!(parse_id(&s), Some(ws));
        assert_eq!(parse_id("ws_0000000000000000"), None);
        assert_eq!(parse_id("ws_123"), None);
        assert_eq!(parse_id("usr_00abcdef01234567"), None);
    }

    #[test]
    fn only_enterprise_takes_a_configured_limit() {
        assert_eq!(
            enterprise_limit(Plan::Enterprise, Some(5)).ok(),
            Some(Some(5))
        );
        assert!(enterprise_limit(Plan::Enterprise, None).is_err());
        assert!(enterprise_limit(Plan::Enterprise, Some(0)).is_err());
        assert!(enterprise_limit(Plan::Pro, Some(5)).is_err());
        assert_eq!(enterprise_limit(Plan::Pro, None).ok(), Some(None));
    }

    #[test]
    fn plan_limits_follow_spec() {
        let limits: Vec<_> = Plan::ALL.iter().map(|p| p.fixed_monthly_limit()).collect();
        assert_eq!(
            limits,
            [Some(100), Some(500), Some(3000), Some(15000), None]
        );
        let mut s = WorkspaceSettings::new_default("t");
        s.plan = Plan::Enterprise;
        s.enterprise_monthly_limit = Some(42);
        assert_eq!(s.monthly_credit_limit(), 42);
    }
}
