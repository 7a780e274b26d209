//! The capability gateway: the one public contract for external agents (SPEC.md 2-5). The REST
//! adapter (`http::routes::gateway`), the CLI and the MCP server all end up in [`invoke`] and
//! [`list`], so grants, modes, credits, idempotency and receipts behave the same everywhere.
//!
//! Invocation order (SPEC.md): capability exists -> grant (or legacy scope) -> mode (capability
//! and key) -> input schema -> quota -> idempotency, then the transition table. Everything from
//! the quota check on runs in one engine write transaction: the idempotency lookup, the policy
//! check, the charge, the executor's reads and writes, the ledger row, the receipt and the
//! stored response commit together or not at all.

pub(crate) mod exec;
pub mod idempotency;
pub mod registry;
mod sanitize;

pub use sanitize::sanitize;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use svc_engine::{WorkspaceId, WriteTxn};

use crate::approvals;
use crate::capabilities::Mode;
use crate::clock;
use crate::error::{Code, Error, Result};
use crate::keys::AgentKey;
use crate::ledger::{self, LedgerRow, Quota};
use crate::store::{Record, Store};
use crate::workspaces::{self, WorkspaceEntry, WorkspaceSettings};
use idempotency::{Fingerprint, InFlight, StoredResponse};
use registry::{ApprovalKind, Descriptor, Entry, LEGACY_INVOKE_SCOPE};

/// Longest idempotency key accepted (DESIGN.md §4).
pub const MAX_IDEMPOTENCY_KEY: usize = 255;
const MAX_SOURCE: usize = 64;
/// `GET .../usage/actions`: default and largest `limit`.
pub const DEFAULT_USAGE_ROWS: usize = 25;
pub const MAX_USAGE_ROWS: usize = 100;

/// `POST /api/v1/capabilities/:id/invoke` body.
#[derive(Clone, Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InvokeRequest {
    /// `dry_run`, `queue` or `execute`; when omitted, the capability's most direct mode
    /// (execute, else queue).
    pub mode: Option<String>,
    /// The client: `api` (the default), `cli`, `mcp`, or another short label.
    pub source: Option<String>,
    /// At most 255 characters; scoped to (workspace, key, capability).
    pub idempotency_key: Option<String>,
    /// Capability input; `{}` when omitted.
    #[schema(value_type = Option<Object>)]
    pub input: Option<Value>,
}

/// The response envelope of SPEC.md.
#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Envelope {
    /// `preview` (dry_run), `queued` or `committed`.
    pub status: String,
    #[schema(value_type = Object)]
    pub result: Value,
    pub pending_action_id: Option<String>,
    pub action_credit_cost: u64,
    pub request_id: String,
    pub quota: Quota,
    pub receipt_url: String,
    pub capability: String,
    pub mode: String,
}

/// An invocation's answer: the JSON body exactly as first produced, and whether it is a
/// replay of an earlier completed request with the same idempotency key.
#[derive(Clone, Debug)]
pub struct InvokeResponse {
    pub body: String,
    pub replayed: bool,
    /// Real-time message for the workspace's stream (events.ingest commits); the caller
    /// publishes it. Never set on a replay.
    pub stream: Option<crate::events::StreamMessage>,
}

/// Receipt of an invocation (stored by request id).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct ReceiptRecord {
    request_id: String,
    ledger_row_id: String,
    #[serde(default)]
    pending_action_id: Option<String>,
    key_id: String,
    /// The response envelope with secrets and contact details masked.
    response: Value,
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

/// `GET /api/v1/capabilities` response.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CapabilityList {
    #[schema(value_type = Vec<Object>)]
    pub capabilities: Vec<Descriptor>,
    pub key: KeySummary,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct KeySummary {
    pub id: String,
    pub agent: String,
    pub grants: Vec<String>,
    pub allowed_modes: Vec<String>,
    pub auto_run: bool,
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

fn key_summary(key: &AgentKey) -> KeySummary {
    KeySummary {
        id: key.id.clone(),
        agent: key.agent.clone(),
        grants: key.grants.clone(),
        allowed_modes: key.allowed_modes.clone(),
        auto_run: key.auto_run,
    }
}

/// Whether the key may call the capability at all: its grant, the capability's legacy scope,
/// or (read-only capabilities only) the broad legacy invoke scope.
pub fn key_has_grant(key: &AgentKey, d: &Descriptor) -> bool {
    key.has_grant(d.id)
        || key.scopes.iter().any(|s| s == d.legacy_scope)
        || (d.is_read_only() && key.scopes.iter().any(|s| s == LEGACY_INVOKE_SCOPE))
}

/// Capabilities whose executors work in this build; the others are neither listed nor invocable.
fn available(entry: &Entry) -> bool {
    exec::implemented(entry.descriptor.id)
}

/// The catalogue as the key sees it: capabilities it holds a grant for, with `allowed_modes`
/// narrowed to the key's modes; a capability left with no mode is not listed.
pub fn list(key: &AgentKey) -> CapabilityList {
    let capabilities = registry::all()
        .iter()
        .filter(|e| available(e) && key_has_grant(key, &e.descriptor))
        .filter_map(|e| {
            let mut d = e.descriptor.clone();
            d.allowed_modes
                .retain(|m| Mode::parse(m).is_some_and(|m| key.allows_mode(m)));
            (!d.allowed_modes.is_empty()).then_some(d)
        })
        .collect();
    CapabilityList {
        capabilities,
        key: key_summary(key),
    }
}

/// A request that passed the checks that need no store (exists, grant, mode, input).
struct Checked {
    entry: &'static Entry,
    mode: Mode,
    source: String,
    idempotency_key: Option<String>,
    input: Value,
}

fn check_request(key: &AgentKey, capability_id: &str, req: InvokeRequest) -> Result<Checked> {
    let entry = registry::get(capability_id)
        .filter(|e| available(e))
        .ok_or_else(|| {
            Error::new(
                Code::CapabilityNotFound,
                "no such capability (see GET /api/v1/capabilities)",
            )
        })?;
    let d = &entry.descriptor;
    if !key_has_grant(key, d) {
        return Err(Error::new(
            Code::GrantDenied,
            format!(
                "the key lacks the grant {} (or the legacy scope {})",
                d.grant, d.legacy_scope
            ),
        ));
    }
    let mode = match req.mode.as_deref() {
        None => d.default_mode(),
        Some(m) => Mode::parse(m).ok_or_else(|| {
            Error::new(
                Code::ModeDenied,
                format!("unknown mode {m:?}; expected dry_run, queue or execute"),
            )
        })?,
    };
    if !d.allows_mode(mode) {
        return Err(Error::new(
            Code::ModeDenied,
            format!("{} does not support mode {}", d.id, mode.as_str()),
        ));
    }
    if !key.allows_mode(mode) {
        return Err(Error::new(
            Code::ModeDenied,
            format!("the key does not allow mode {}", mode.as_str()),
        ));
    }
    let input = req.input.unwrap_or_else(|| json!({}));
    entry.validate_input(&input)?;
    exec::prevalidate(d.id, &input, clock::now())?;
    let source = req.source.unwrap_or_else(|| "api".to_owned());
    if source.is_empty()
        || source.len() > MAX_SOURCE
        || !source
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
    {
        return Err(Error::invalid_field(
            "source",
            &source,
            "must be 1 to 64 characters of letters, digits, '_', '-' or '.'",
        ));
    }
    if let Some(k) = &req.idempotency_key {
        if k.is_empty() || k.chars().count() > MAX_IDEMPOTENCY_KEY {
            return Err(Error::invalid_field(
                "idempotency_key",
                k,
                "must be 1 to 255 characters",
            ));
        }
    }
    Ok(Checked {
        entry,
        mode,
        source,
        idempotency_key: req.idempotency_key,
        input,
    })
}

/// Runs one invocation. `request_id` is the id of the HTTP request (`req_...`), which becomes
/// the invocation's id and receipt key.
pub async fn invoke(
    store: &Store,
    key: &AgentKey,
    capability_id: &str,
    req: InvokeRequest,
    request_id: String,
) -> Result<InvokeResponse> {
    let checked = check_request(key, capability_id, req)?;
    let fingerprint = Fingerprint::of(checked.mode, &checked.input);
    // Held until the response is durable; a concurrent request with the same key gets 409
    // (or 422 for a different body) instead of waiting.
    let _guard = match &checked.idempotency_key {
        Some(k) => Some(InFlight::enter(
            key.workspace_id(),
            &key.id,
            checked.entry.descriptor.id,
            k,
            fingerprint,
        )?),
        None => None,
    };
    let graph = store.graph()?;
    let key = key.clone();
    let ws = key.workspace_id();
    // Awaited without a blocking-pool thread: the engine wakes this task once durable.
    let out = graph
        .write_async(move |txn: &mut WriteTxn<'_>| {
            run_in_txn(txn, &key, &checked, fingerprint, &request_id)
        })
        .await;
    // Executors (events.ingest, crm.mutate) may have changed graph nodes: drop derived caches.
    store.note_graph_write(ws);
    out
}

fn run_in_txn(
    txn: &mut WriteTxn<'_>,
    key: &AgentKey,
    c: &Checked,
    fingerprint: Fingerprint,
    request_id: &str,
) -> Result<InvokeResponse> {
    let ws = key.workspace_id();
    let d = &c.entry.descriptor;
    let entry = txn
        .workspace(WorkspaceId::GLOBAL)
        .get_record::<WorkspaceEntry>(&workspaces::render_id(ws))?
        .ok_or_else(|| Error::not_found("workspace"))?;
    let mut w = txn.workspace(ws);
    let settings = w
        .get_record::<WorkspaceSettings>("settings")?
        .ok_or_else(|| Error::internal(format!("workspace {ws} has no settings record")))?;
    let month = ledger::current_month();
    let budget = ledger::budget(&w, &settings, key, &month)?;
    let cost = if c.mode == Mode::DryRun {
        0
    } else {
        d.action_credit_cost
    };
    // Quota (SPEC order) applies to new executions; a replay below charges nothing.
    let replay = match &c.idempotency_key {
        Some(k) => idempotency::lookup(&w, &key.id, d.id, k, fingerprint)?,
        None => None,
    };
    if let Some(stored) = replay {
        return Ok(InvokeResponse {
            body: stored.body,
            replayed: true,
            stream: None,
        });
    }
    if c.mode != Mode::DryRun {
        if settings.policy.forbid.iter().any(|f| f == d.id) {
            return Err(Error::new(
                Code::PolicyForbid,
                format!("workspace policy forbids {}", d.id),
            ));
        }
        if !d.is_read_only() {
            settings.ensure_writable()?;
        }
    }
    let action = decide(c.mode, d, key, &settings)?;
    let now = clock::now();
    let row = LedgerRow {
        id: ledger::new_row_id(),
        request_id: request_id.to_owned(),
        key_id: key.id.clone(),
        agent: key.agent.clone(),
        capability: d.id.to_owned(),
        mode: c.mode.as_str().to_owned(),
        source: c.source.clone(),
        status: action.status().to_owned(),
        credits: i64::try_from(cost).unwrap_or(i64::MAX),
        month: month.clone(),
        customer_id: None,
        idempotency_key: c.idempotency_key.clone(),
        pending_action_id: None,
        created_at: clock::rfc3339(now),
    };
    if !budget.fits(cost) {
        return Err(ledger::quota_exceeded(&budget, cost));
    }
    let ctx = exec::Ctx {
        key,
        workspace: &entry,
        settings: &settings,
        budget: &budget,
        cost,
        now,
        request_id,
    };
    let (result, customer_id, stream, pending_action_id) = match action {
        Action::Preview => {
            let out = exec::preview(d.id, &mut w, &ctx, &c.input)?;
            (sanitize::sanitize(&out.result), out.customer_id, None, None)
        }
        Action::Commit => {
            let out = exec::execute(d.id, &mut w, &ctx, &c.input).map_err(executor_failed)?;
            c.entry.validate_output(&out.result).map_err(|e| {
                executor_failed(Error::internal(format!(
                    "{} produced an invalid result: {e}",
                    d.id
                )))
            })?;
            (out.result, out.customer_id, out.stream, None)
        }
        Action::Queue(note) => {
            // The preview runs the executor's checks now (e.g. the customer exists), so a
            // request that could never run is refused at once rather than queued.
            let preview = exec::preview(d.id, &mut w, &ctx, &c.input)?;
            let pending = approvals::create_in(
                &mut w,
                approvals::NewPending {
                    id: approvals::new_id(now),
                    request_id,
                    capability: d.id,
                    key,
                    source: &c.source,
                    input: &c.input,
                    credits: cost,
                    month: &month,
                    customer_id: preview.customer_id.clone(),
                    now,
                    note: note.to_owned(),
                },
            )?;
            let result = json!({
                "pending_action_id": pending.id,
                "status": pending.status,
                "expires_at": pending.expires_at,
                "preview": sanitize::sanitize(&preview.result),
            });
            (result, preview.customer_id, None, Some(pending.id))
        }
    };
    let row = LedgerRow {
        customer_id,
        pending_action_id: pending_action_id.clone(),
        ..row
    };
    let after = ledger::charge(&mut w, &budget, &row)?;
    let envelope = Envelope {
        status: action.status().to_owned(),
        result,
        pending_action_id: pending_action_id.clone(),
        action_credit_cost: cost,
        request_id: request_id.to_owned(),
        quota: after.quota(Some(true)),
        receipt_url: format!("/api/v1/capabilities/actions/{request_id}"),
        capability: d.id.to_owned(),
        mode: c.mode.as_str().to_owned(),
    };
    let body = serde_json::to_string(&envelope)
        .map_err(|e| Error::internal(format!("serializing an envelope: {e}")))?;
    let response_value = serde_json::to_value(&envelope)
        .map_err(|e| Error::internal(format!("serializing an envelope: {e}")))?;
    w.put_record(&ReceiptRecord {
        request_id: request_id.to_owned(),
        ledger_row_id: row.id.clone(),
        pending_action_id,
        key_id: key.id.clone(),
        response: sanitize::sanitize(&response_value),
    })?;
    if let Some(k) = &c.idempotency_key {
        idempotency::store(
            &mut w,
            &key.id,
            d.id,
            k,
            StoredResponse {
                fingerprint,
                request_id: request_id.to_owned(),
                body: body.clone(),
                created_at: clock::rfc3339(now),
            },
        )?;
    }
    Ok(InvokeResponse {
        body,
        replayed: false,
        stream,
    })
}

/// An executor's unexpected failure is `capability_failed` (502); the detail is already logged
/// and, the transaction being rolled back, nothing was committed or charged. Client errors
/// (unknown customer, bad input) and store unavailability keep their own codes. Approved
/// actions take the same mapping (`approvals::approve`), so they end `failed` and refunded.
pub(crate) fn executor_failed(e: Error) -> Error {
    if e.code == Code::Internal {
        Error::new(
            Code::CapabilityFailed,
            "the capability's executor failed; nothing was committed or charged",
        )
    } else {
        e
    }
}

/// What an invocation that passed every check does (SPEC.md's transition table).
#[derive(Clone, Copy, Debug)]
enum Action {
    Preview,
    Commit,
    /// Create an approval request; the note says why.
    Queue(&'static str),
}

impl Action {
    fn status(self) -> &'static str {
        match self {
            Action::Preview => "preview",
            Action::Commit => "committed",
            Action::Queue(_) => "queued",
        }
    }
}

fn decide(
    mode: Mode,
    d: &Descriptor,
    key: &AgentKey,
    settings: &WorkspaceSettings,
) -> Result<Action> {
    Ok(match (mode, d.approval_behavior.kind) {
        (Mode::DryRun, _) => Action::Preview,
        (Mode::Queue, _) => Action::Queue("queued by the agent"),
        (Mode::Execute, ApprovalKind::None | ApprovalKind::Direct) => Action::Commit,
        (Mode::Execute, ApprovalKind::QueueRequired | ApprovalKind::ApprovalGated) => {
            let auto_approved = settings.policy.auto_approve.iter().any(|a| a == d.id);
            if key.auto_run
                && auto_approved
                && d.approval_behavior.kind == ApprovalKind::ApprovalGated
            {
                Action::Commit
            } else if d.allows_mode(Mode::Queue) && key.allows_mode(Mode::Queue) {
                Action::Queue(if !key.auto_run {
                    "execute requested; the key has no auto_run, so it waits for approval"
                } else {
                    "execute requested; the approval system does not auto-approve this capability"
                })
            } else {
                return Err(Error::new(
                    Code::ApprovalRequired,
                    format!(
                        "{} needs operator approval (key auto_run and the workspace's \
                         auto_approve policy), and this key may not queue it",
                        d.id
                    ),
                ));
            }
        }
    })
}

/// The receipt of one invocation of the key's workspace.
pub async fn receipt(store: &Store, key: &AgentKey, request_id: &str) -> Result<Receipt> {
    let graph = store.graph()?;
    let ws = key.workspace_id();
    let request_id = request_id.to_owned();
    tokio::task::spawn_blocking(move || -> Result<Receipt> {
        let snap = graph.snapshot(ws);
        let rec = snap
            .get_record::<ReceiptRecord>(&request_id)?
            .ok_or_else(|| Error::not_found("receipt"))?;
        let row = ledger::row_by_request(&snap, &request_id)?
            .ok_or_else(|| Error::internal(format!("receipt {request_id} has no ledger row")))?;
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
    .map_err(|e| Error::internal(format!("receipt task failed: {e}")))?
}

/// Month usage of the key's budget and its most recent ledger rows.
pub async fn usage(store: &Store, key: &AgentKey, limit: Option<usize>) -> Result<Usage> {
    let limit = limit.unwrap_or(DEFAULT_USAGE_ROWS).clamp(1, MAX_USAGE_ROWS);
    let graph = store.graph()?;
    let key = key.clone();
    tokio::task::spawn_blocking(move || -> Result<Usage> {
        let ws = key.workspace_id();
        let snap = graph.snapshot(ws);
        let settings = snap
            .get_record::<WorkspaceSettings>("settings")?
            .ok_or_else(|| Error::internal(format!("workspace {ws} has no settings record")))?;
        let month = ledger::current_month();
        let (workspace_used, key_used) = ledger::month_usage(&snap, &key.id, &month)?;
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
            rows: ledger::recent_rows(&snap, &key.id, limit)?,
        })
    })
    .await
    .map_err(|e| Error::internal(format!("usage task failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unexpected_executor_errors_become_capability_failed() {
        assert_eq!(
            executor_failed(Error::internal("boom")).code,
            Code::CapabilityFailed
        );
        assert_eq!(
            executor_failed(Error::not_found("customer")).code,
            Code::NotFound
        );
        assert_eq!(
            executor_failed(Error::invalid_input("x")).code,
            Code::InvalidInput
        );
    }
}
