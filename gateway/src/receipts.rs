//! Receipts and usage: what an invocation left behind (its receipt: the ledger row, the
//! sanitized answer, the approval timeline) and the month's credit usage of a key.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use svc_core::store::WorkspaceTxn;

use crate::approvals;
use svc_core::error::{Error, Result};
use svc_core::keys::AgentKey;
use svc_core::ledger::{self, LedgerRow};
use svc_core::store::{Record, Store};
use svc_core::workspaces::WorkspaceSettings;

/// `GET .../usage/actions`: default and largest `limit`.
pub const DEFAULT_USAGE_ROWS: usize = 25;
pub const MAX_USAGE_ROWS: usize = 100;

/// Receipt of an invocation (stored by request id).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReceiptRecord {
    pub(super) request_id: String,
    pub(super) ledger_row_id: String,
    #[serde(default)]
    pub(super) pending_action_id: Option<String>,
    pub(super) key_id: String,
    /// The response envelope with secrets and contact details masked.
    #[serde(with = "svc_engine::record_encoding::json_text")]
    pub(super) response: Value,
}

impl Record for ReceiptRecord {
    const KIND: &'static str = "receipt";
    fn id(&self) -> String {
        self.request_id.clone()
    }
}

/// `GET /api/v1/capabilities/actions/:request_id`.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Receipt {
    pub request_id: String,
    pub capability: String,
    pub mode: String,
    pub status: String,
    pub ledger_row: LedgerRow,
    /// The envelope as answered, sanitized (contact details and secrets masked).
    #[schema(value_type = Object)]
    pub response: Value,
    /// Pending-action state when the invocation was queued; null otherwise.
    #[schema(value_type = Option<Object>)]
    pub pending_action: Option<Value>,
    /// AOS timeline of the pending action (empty when none).
    #[schema(value_type = Vec<Object>)]
    pub timeline: Vec<Value>,
}

/// `GET /api/v1/capabilities/usage/actions` response.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Usage {
    /// Calendar month (UTC), `YYYY-MM`.
    pub month: String,
    pub plan: String,
    /// The limit that applies to this key (its override, else the plan's).
    pub limit: u64,
    pub used: u64,
    pub remaining: u64,
    pub workspace_used: u64,
    pub key_used: u64,
    pub quota_override_monthly: Option<u64>,
    /// The key's most recent ledger rows, newest first.
    pub rows: Vec<LedgerRow>,
}

/// Replaces the answer a receipt shows (an outbound action's outcome arrived).
pub(super) fn rewrite_receipt(
    w: &mut WorkspaceTxn<'_, '_>,
    request_id: &str,
    response: Value,
) -> Result<()> {
    if let Some(mut rec) = w.get_record::<ReceiptRecord>(request_id)? {
        rec.response = response;
        w.put_record(&rec)?;
    }
    Ok(())
}

/// The receipt of one invocation of the key's workspace.
pub async fn receipt(store: &Store, key: &AgentKey, request_id: &str) -> Result<Receipt> {
    let ws = key.workspace_id();
    let request_id = request_id.to_owned();
    store
        .read(ws, move |snap| -> Result<Receipt> {
            let rec = snap
                .get_record::<ReceiptRecord>(&request_id)?
                .ok_or_else(|| Error::not_found("receipt"))?;
            let row = ledger::row_by_request(snap, &request_id)?.ok_or_else(|| {
                Error::internal(format!("receipt {request_id} has no ledger row"))
            })?;
            let pending = match &rec.pending_action_id {
                Some(id) => snap.get_record::<approvals::PendingAction>(id)?,
                None => None,
            };
            let timeline = pending
                .as_ref()
                .map(|p| {
                    p.timeline
                        .iter()
                        .filter_map(|t| serde_json::to_value(t).ok())
                        .collect()
                })
                .unwrap_or_default();
            let pending_action = pending
                .as_ref()
                .and_then(|p| serde_json::to_value(approvals::PendingView::new(p)).ok());
            Ok(Receipt {
                request_id: rec.request_id,
                capability: row.capability.clone(),
                mode: row.mode.clone(),
                status: row.status.clone(),
                ledger_row: row,
                response: rec.response,
                pending_action,
                timeline,
            })
        })
        .await
}

/// Month usage of the key's budget and its most recent ledger rows.
pub async fn usage(store: &Store, key: &AgentKey, limit: Option<usize>) -> Result<Usage> {
    let limit = limit.unwrap_or(DEFAULT_USAGE_ROWS).clamp(1, MAX_USAGE_ROWS);
    let key = key.clone();
    store
        .read(key.workspace_id(), move |snap| -> Result<Usage> {
            let ws = key.workspace_id();
            let settings = snap
                .get_record::<WorkspaceSettings>("settings")?
                .ok_or_else(|| Error::internal(format!("workspace {ws} has no settings record")))?;
            let month = ledger::current_month();
            let (workspace_used, key_used) = ledger::month_usage(snap, &key.id, &month)?;
            let (limit_credits, used) = match key.quota_override_monthly {
                Some(l) => (l, key_used),
                None => (settings.monthly_credit_limit(), workspace_used),
            };
            Ok(Usage {
                month,
                plan: settings.plan.as_str().to_owned(),
                limit: limit_credits,
                used,
                remaining: limit_credits.saturating_sub(used),
                workspace_used,
                key_used,
                quota_override_monthly: key.quota_override_monthly,
                rows: ledger::recent_rows(snap, &key.id, limit)?,
            })
        })
        .await
}
