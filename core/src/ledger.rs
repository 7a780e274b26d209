//! The action-credit ledger: one row per recorded invocation (charges, 0-credit previews and,
//! later, reversing refund rows), and the monthly counters the quota check reads. The gateway
//! writes it; customer context, plans and the dashboard read it, so it sits below them all.
//!
//! Everything here runs inside the caller's write transaction, so "check the quota, charge,
//! write the row" is one atomic step on the engine's single writer: under any concurrency the
//! balance never goes past the limit, and the counters always equal the sum of the rows.

use crate::store::WorkspaceTxn;
use serde::{Deserialize, Serialize};

use crate::error::{Code, Error, Result};
use crate::keys::AgentKey;
use crate::plumbing::clock;
use crate::plumbing::ids;
use crate::store::{Record, RecordScan};
use crate::workspaces::WorkspaceSettings;

/// One ledger row. Stored under `<key id>/<time-ordered row id>`, so a key's rows scan newest
/// first without an index; the workspace-wide lookup by request id uses the `request` index.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct LedgerRow {
    /// `led_` + time-ordered base62 (sorts by creation time).
    pub id: String,
    pub request_id: String,
    pub key_id: String,
    pub agent: String,
    pub capability: String,
    pub mode: String,
    pub source: String,
    /// Invocation status: `preview`, `queued` or `committed` (`refunded` for reversals).
    pub status: String,
    /// Credits charged; negative on a reversing row.
    pub credits: i64,
    /// Calendar month (UTC) the credits count against, `YYYY-MM`.
    pub month: String,
    /// Customer the invocation acted on, when it names one (`cus_...`).
    #[serde(
        default,
        skip_serializing_if = "svc_engine::record_encoding::skip_none_in_json"
    )]
    pub customer_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "svc_engine::record_encoding::skip_none_in_json"
    )]
    pub idempotency_key: Option<String>,
    /// The approval request this row charged or refunded.
    #[serde(
        default,
        skip_serializing_if = "svc_engine::record_encoding::skip_none_in_json"
    )]
    pub pending_action_id: Option<String>,
    pub created_at: String,
}

impl Record for LedgerRow {
    const KIND: &'static str = "ledger_row";
    fn id(&self) -> String {
        format!("{}/{}", self.key_id, self.id)
    }
    fn indexes(&self) -> Vec<(&'static str, String)> {
        let mut ix = vec![("request", self.request_id.clone())];
        // Only decisions are looked up by customer (context.get's recent_decisions); indexing
        // reads and ingested observations too would make every context read scan them all.
        if let Some(c) = &self.customer_id {
            if self.status != "preview" && crate::capabilities::is_decision(&self.capability) {
                ix.push(("customer", c.clone()));
            }
        }
        ix
    }
}

/// Credits used in one month by the workspace (`ws/<month>`) or by one key (`key/<id>/<month>`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CreditCounter {
    id: String,
    used: u64,
}

impl Record for CreditCounter {
    const KIND: &'static str = "credit_counter";
    fn id(&self) -> String {
        self.id.clone()
    }
}

fn workspace_counter_id(month: &str) -> String {
    format!("ws/{month}")
}

fn key_counter_id(key_id: &str, month: &str) -> String {
    format!("key/{key_id}/{month}")
}

/// The calendar month (UTC) of now, `YYYY-MM`.
pub fn current_month() -> String {
    let now = clock::now();
    format!("{:04}-{:02}", now.year(), u8::from(now.month()))
}

/// `led_` + 11 base62 digits of the microsecond clock + 6 random: time-ordered, unique.
pub fn new_row_id() -> String {
    let micros = (clock::now().unix_timestamp_nanos() / 1000).max(0) as u64;
    format!(
        "led_{}{}",
        ids::base62_fixed(micros, 11),
        ids::random_base62(6)
    )
}

/// The quota object of SPEC.md's envelope.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct Quota {
    pub plan: String,
    pub limit: u64,
    pub used: u64,
    pub remaining: u64,
    /// Whether the invocation this quota was computed for fitted within it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<bool>,
}

/// Where a key's credits come from: the plan's workspace pool, or its own monthly override
/// (which replaces the plan limit for that key's invocations and counts that key's usage).
#[derive(Clone, Debug)]
pub struct Budget {
    pub plan: String,
    pub limit: u64,
    pub month: String,
    pub workspace_used: u64,
    pub key_used: u64,
    override_key: bool,
}

impl Budget {
    pub fn used(&self) -> u64 {
        if self.override_key {
            self.key_used
        } else {
            self.workspace_used
        }
    }

    pub fn fits(&self, cost: u64) -> bool {
        self.used().saturating_add(cost) <= self.limit
    }

    pub fn quota(&self, allowed: Option<bool>) -> Quota {
        Quota {
            plan: self.plan.clone(),
            limit: self.limit,
            used: self.used(),
            remaining: self.limit.saturating_sub(self.used()),
            allowed,
        }
    }
}

fn counter(w: &WorkspaceTxn<'_, '_>, id: &str) -> Result<u64> {
    Ok(w.get_record::<CreditCounter>(id)?.map_or(0, |c| c.used))
}

/// The key's budget for `month`, as committed so far (inside the caller's transaction).
pub fn budget(
    w: &WorkspaceTxn<'_, '_>,
    settings: &WorkspaceSettings,
    key: &AgentKey,
    month: &str,
) -> Result<Budget> {
    let (limit, override_key) = match key.quota_override_monthly {
        Some(limit) => (limit, true),
        None => (settings.monthly_credit_limit(), false),
    };
    Ok(Budget {
        plan: settings.plan.as_str().to_owned(),
        limit,
        month: month.to_owned(),
        workspace_used: counter(w, &workspace_counter_id(month))?,
        key_used: counter(w, &key_counter_id(&key.id, month))?,
        override_key,
    })
}

/// Checks that `row.credits` fits the budget and charges it: the row and both counters are
/// written in the caller's transaction. Returns the budget after the charge.
pub fn charge(w: &mut WorkspaceTxn<'_, '_>, budget: &Budget, row: &LedgerRow) -> Result<Budget> {
    let cost = u64::try_from(row.credits).unwrap_or(0);
    if !budget.fits(cost) {
        return Err(quota_exceeded(budget, cost));
    }
    apply_credits(w, budget, row)
}

/// The `quota_exceeded` error for an action of `cost` credits, with the quota in `details`.
pub fn quota_exceeded(budget: &Budget, cost: u64) -> Error {
    Error::new(
        Code::QuotaExceeded,
        format!(
            "monthly action credits exhausted: {} of {} used, this action costs {cost}",
            budget.used(),
            budget.limit
        ),
    )
    .with_details(serde_json::json!({ "quota": budget.quota(Some(false)) }))
}

/// Writes a row and moves the month's counters (workspace and key) by its credits, positive
/// or a negative reversal, without a limit check. Counters never go below zero. Returns the
/// budget after the row.
pub fn apply_credits(
    w: &mut WorkspaceTxn<'_, '_>,
    budget: &Budget,
    row: &LedgerRow,
) -> Result<Budget> {
    let (workspace_used, key_used) = move_counters(w, row)?;
    let mut after = budget.clone();
    if after.month == row.month {
        after.workspace_used = workspace_used;
        after.key_used = key_used;
    }
    Ok(after)
}

/// Writes a reversing row: the same month and key as the charge it reverses, negative credits.
pub fn reverse(w: &mut WorkspaceTxn<'_, '_>, row: &LedgerRow) -> Result<()> {
    move_counters(w, row).map(|_| ())
}

fn move_counters(w: &mut WorkspaceTxn<'_, '_>, row: &LedgerRow) -> Result<(u64, u64)> {
    let ws_id = workspace_counter_id(&row.month);
    let key_id = key_counter_id(&row.key_id, &row.month);
    let mut used = (counter(w, &ws_id)?, counter(w, &key_id)?);
    if row.credits != 0 {
        let delta = |u: u64| -> u64 {
            if row.credits >= 0 {
                u.saturating_add(row.credits.unsigned_abs())
            } else {
                u.saturating_sub(row.credits.unsigned_abs())
            }
        };
        used = (delta(used.0), delta(used.1));
        w.put_record(&CreditCounter {
            id: ws_id,
            used: used.0,
        })?;
        w.put_record(&CreditCounter {
            id: key_id,
            used: used.1,
        })?;
    }
    w.put_record(row)?;
    Ok(used)
}

/// The row of an invocation, by its request id.
pub fn row_by_request(w: &impl RecordSource, request_id: &str) -> Result<Option<LedgerRow>> {
    Ok(w.find_rows("request", request_id)?.into_iter().next())
}

/// The newest rows of one key, newest first.
pub fn recent_rows(w: &impl RecordSource, key_id: &str, limit: usize) -> Result<Vec<LedgerRow>> {
    w.scan_rows(&RecordScan {
        prefix: format!("{key_id}/"),
        after: None,
        reverse: true,
        limit: Some(limit),
    })
}

/// Decision rows (side-effecting, not previews, not event ingestion) that acted on one
/// customer, oldest first; `references` are the forms of its id rows may hold
/// (`PublicIds::customer_references`).
pub fn rows_for_customer(w: &impl RecordSource, references: &[String]) -> Result<Vec<LedgerRow>> {
    let mut rows = Vec::new();
    for reference in references {
        rows.extend(w.find_rows("customer", reference)?);
    }
    rows.sort_by(|a, b| a.id.cmp(&b.id));
    rows.dedup_by(|a, b| a.id == b.id);
    Ok(rows)
}

/// Read access to ledger rows from a write transaction or a snapshot.
pub trait RecordSource {
    fn find_rows(&self, index: &str, value: &str) -> Result<Vec<LedgerRow>>;
    fn scan_rows(&self, scan: &RecordScan) -> Result<Vec<LedgerRow>>;
}

impl RecordSource for WorkspaceTxn<'_, '_> {
    fn find_rows(&self, index: &str, value: &str) -> Result<Vec<LedgerRow>> {
        Ok(self.find_records::<LedgerRow>(index, value)?)
    }
    fn scan_rows(&self, scan: &RecordScan) -> Result<Vec<LedgerRow>> {
        Ok(self.scan_records::<LedgerRow>(scan)?)
    }
}

impl RecordSource for svc_engine::Snapshot<'_> {
    fn find_rows(&self, index: &str, value: &str) -> Result<Vec<LedgerRow>> {
        Ok(self.find_records::<LedgerRow>(index, value)?)
    }
    fn scan_rows(&self, scan: &RecordScan) -> Result<Vec<LedgerRow>> {
        Ok(self.scan_records::<LedgerRow>(scan)?)
    }
}

/// Counters of the month as a snapshot sees them: (workspace used, key used).
pub fn month_usage(
    snap: &svc_engine::Snapshot<'_>,
    key_id: &str,
    month: &str,
) -> Result<(u64, u64)> {
    let get = |id: String| -> Result<u64> {
        Ok(snap.get_record::<CreditCounter>(&id)?.map_or(0, |c| c.used))
    };
    Ok((
        get(workspace_counter_id(month))?,
        get(key_counter_id(key_id, month))?,
    ))
}

/// Credits the whole workspace used in `month`, as a snapshot sees them (the dashboard's
/// credits chart).
pub fn workspace_month_used(snap: &svc_engine::Snapshot<'_>, month: &str) -> Result<u64> {
    Ok(snap
        .get_record::<CreditCounter>(&workspace_counter_id(month))?
        .map_or(0, |c| c.used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_ids_are_time_ordered() {
        let a = new_row_id();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_row_id();
        assert!(b > a, "{a} {b}");
        assert_eq!(a.len(), "led_".len() + 17);
    }

    #[test]
    fn month_is_calendar_utc() {
        let m = current_month();
        assert_eq!(m.len(), 7);
        assert_eq!(&m[4..5], "-");
    }

    #[test]
    fn budget_uses_the_override_pool() {
        let b = Budget {
            plan: "free".into(),
            limit: 5,
            month: "2026-11".into(),
            workspace_used: 90,
            key_used: 4,
            override_key: true,
        };
        assert!(b.fits(1));
        assert!(!b.fits(2));
        assert_eq!(b.quota(None).remaining, 1);
    }
}
