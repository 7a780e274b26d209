//! The capability gateway: the one public contract for external agents (SPEC.md 2-5). The REST
//! adapter (`http::routes::gateway`), the CLI and the MCP server all end up in [`invoke`] and
//! [`list`], so grants, modes, credits, idempotency and receipts behave the same everywhere.
//!
//! Invocation order (SPEC.md): capability exists -> grant (or legacy scope) -> mode (capability
//! and key) -> input schema -> quota -> idempotency, then the transition table. Everything from
//! the quota check on runs in one engine write transaction: the idempotency lookup, the policy
//! check, the charge, the executor's reads and writes, the ledger row, the receipt and the
//! stored response commit together or not at all. Outbound actions take a second write after
//! the provider answered (`outbound_flow`, `docs/outbound.md`).
//!
//! Parts: `registry` (each capability's contract), `executors` (each capability's domain
//! function), `prepare` (the setup shared with approved actions), `idempotency`, `receipts`
//! (receipts and usage), `outbound_flow` (the write after a provider answered, recovery at
//! start-up), `approvals`, `tools` (the capabilities as MCP and model tools), `sanitize`, and
//! [`Gateway`], the handle callers pass.
//!
//! svc-gateway may use svc-domains and svc-core (and the engine through the store); the agents
//! and the server call it, never the other way round.

pub mod approvals;
pub(crate) mod executors;
pub mod idempotency;
mod outbound_flow;
mod prepare;
pub mod receipts;
pub mod registry;
mod sanitize;
mod service;
pub mod tools;

pub(crate) use outbound_flow::outbound_result;
pub use outbound_flow::recover_interrupted;
pub(crate) use prepare::{Deps, Prepared};
pub use receipts::{receipt, usage, Receipt, Usage, DEFAULT_USAGE_ROWS, MAX_USAGE_ROWS};
pub use sanitize::sanitize;
pub use service::Gateway;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use executors::Phase;
use idempotency::{Fingerprint, StoredResponse};
use outbound_flow::{finish_delivery, Delivery};
use receipts::ReceiptRecord;
use registry::{Descriptor, Entry, LEGACY_INVOKE_SCOPE};
use svc_core::capabilities::ApprovalKind;
use svc_core::capabilities::Mode;
use svc_core::error::{Code, Error, Result};
use svc_core::keys::AgentKey;
use svc_core::ledger::{self, LedgerRow, Quota};
use svc_core::plumbing::clock;
use svc_core::plumbing::ids::PublicIds;
use svc_core::store::Tx;
use svc_core::workspaces::WorkspaceSettings;
use svc_domains::outbound;

/// Longest idempotency key accepted (DESIGN.md §4).
pub const MAX_IDEMPOTENCY_KEY: usize = 255;
const MAX_SOURCE: usize = 64;
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
    pub stream: Option<svc_domains::events::StreamMessage>,
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

/// The catalogue as the key sees it: capabilities it holds a grant for, with `allowed_modes`
/// narrowed to the key's modes; a capability left with no mode is not listed.
pub fn list(key: &AgentKey) -> CapabilityList {
    let capabilities = registry::all()
        .iter()
        .filter(|e| key_has_grant(key, &e.descriptor))
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

fn check_request(
    ids: &PublicIds,
    key: &AgentKey,
    capability_id: &str,
    req: InvokeRequest,
) -> Result<Checked> {
    let entry = registry::get(capability_id).ok_or_else(|| {
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
    executors::prevalidate(ids, entry.capability, &input, clock::now())?;
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
///
/// Most capabilities finish in one engine write. An outbound action (email, call, Customer.io)
/// takes two: the first records it as `sending` with the charge, the receipt and the stored
/// idempotent answer; the provider is called after that commit; the second records the
/// outcome (`sent`, or `failed` with the credits refunded). A stop between the two leaves
/// `sending`, which the next start marks `unknown`: never a silent second send.
pub async fn invoke(
    gateway: &impl AsRef<Gateway>,
    key: &AgentKey,
    capability_id: &str,
    req: InvokeRequest,
    request_id: String,
) -> Result<InvokeResponse> {
    let gw = gateway.as_ref();
    let checked = check_request(gw.store.ids(), key, capability_id, req)?;
    let fingerprint = Fingerprint::of(checked.mode, &checked.input);
    // Held until the response is durable; a concurrent request with the same key gets 409
    // (or 422 for a different body) instead of waiting.
    let _guard = match &checked.idempotency_key {
        Some(k) => Some(gw.idempotency_in_flight.enter(
            key.workspace_id(),
            &key.id,
            checked.entry.descriptor.id,
            k,
            fingerprint,
        )?),
        None => None,
    };
    let deps = Deps::of(gw);
    let key = key.clone();
    let ws = key.workspace_id();
    // The store's write keeps the graph-write generation (executors such as events.ingest,
    // crm.mutate and outbound touchpoints change graph nodes), so derived caches see it.
    let first = gw
        .store
        .write(move |tx| run_in_txn(tx, &deps, &key, &checked, fingerprint, &request_id))
        .await?;
    let delivery = match first {
        Step::Done(response) => return Ok(response),
        Step::Deliver(d) => d,
    };
    let delivered = outbound::delivery::perform(&gw.http, &delivery.dispatch.job).await;
    let ids = gw.store.ids().clone();
    gw.store
        .write(move |tx| finish_delivery(&ids, &mut tx.workspace(ws), *delivery, &delivered))
        .await?
}

/// How the first write of an invocation ended.
enum Step {
    Done(InvokeResponse),
    /// An outbound action is recorded as `sending`: call the provider, then finish.
    Deliver(Box<Delivery>),
}

fn run_in_txn(
    tx: &mut Tx<'_, '_>,
    deps: &Deps,
    key: &AgentKey,
    c: &Checked,
    fingerprint: Fingerprint,
    request_id: &str,
) -> Result<Step> {
    let ws = key.workspace_id();
    let d = &c.entry.descriptor;
    let capability = c.entry.capability;
    let prepared = Prepared::load(tx, key)?;
    let mut w = tx.workspace(ws);
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
        return Ok(Step::Done(InvokeResponse {
            body: stored.body,
            replayed: true,
            stream: None,
        }));
    }
    if c.mode != Mode::DryRun {
        prepared.ensure_allowed(d)?;
    }
    let action = decide(c.mode, d, key, &prepared.settings)?;
    let now = clock::now();
    let month = prepared.month.clone();
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
    if !prepared.budget.fits(cost) {
        return Err(ledger::quota_exceeded(&prepared.budget, cost));
    }
    let pending_id = matches!(action, Action::Queue(_)).then(|| approvals::new_id(now));
    let ctx = prepared.ctx(key, deps, cost, now, request_id, pending_id.as_deref());
    let (result, customer_id, stream, pending_action_id, dispatch) = match action {
        Action::Preview => {
            let out = executors::run(capability, Phase::Preview, &mut w, &ctx, &c.input)?;
            (
                sanitize::sanitize(&out.result),
                out.customer_id,
                None,
                None,
                None,
            )
        }
        Action::Commit => {
            let out = executors::run(capability, Phase::Commit, &mut w, &ctx, &c.input)
                .map_err(executor_failed)?;
            if out.dispatch.is_none() {
                c.entry.validate_output(&out.result).map_err(|e| {
                    executor_failed(Error::internal(format!(
                        "{} produced an invalid result: {e}",
                        d.id
                    )))
                })?;
            }
            (out.result, out.customer_id, out.stream, None, out.dispatch)
        }
        Action::Queue(note) => {
            // The queue phase runs the executor's checks now (e.g. the customer exists, the
            // integration is connected, consent), so a request that could never run is refused
            // at once rather than queued.
            let preview = executors::run(capability, Phase::Queue, &mut w, &ctx, &c.input)?;
            let pending = approvals::create_in(
                &mut w,
                approvals::NewPending {
                    id: pending_id.clone().unwrap_or_else(|| approvals::new_id(now)),
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
            (result, preview.customer_id, None, Some(pending.id), None)
        }
    };
    let row = LedgerRow {
        customer_id,
        pending_action_id: pending_action_id.clone(),
        ..row
    };
    let after = ledger::charge(&mut w, &prepared.budget, &row)?;
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
    let body = envelope_json(&envelope)?;
    w.put_record(&ReceiptRecord {
        request_id: request_id.to_owned(),
        ledger_row_id: row.id.clone(),
        pending_action_id,
        key_id: key.id.clone(),
        response: sanitize::sanitize(&serde_json::to_value(&envelope).map_err(encoding)?),
    })?;
    let idempotency_record = match &c.idempotency_key {
        Some(k) => {
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
            Some(idempotency::record_id(&key.id, d.id, k))
        }
        None => None,
    };
    if let Some(dispatch) = dispatch {
        // The stored answer says `sending` until the provider answers; recovery rewrites it
        // to `unknown` if the process stops first.
        let mut record = outbound::load(&w, &dispatch.outbound_id)?;
        record.idempotency_record = idempotency_record.clone();
        w.put_record(&record)?;
        return Ok(Step::Deliver(Box::new(Delivery {
            dispatch,
            envelope,
            charge: row,
            idempotency_record,
        })));
    }
    Ok(Step::Done(InvokeResponse {
        body,
        replayed: false,
        stream,
    }))
}

fn encoding(e: serde_json::Error) -> Error {
    Error::internal(format!("serializing an envelope: {e}"))
}

fn envelope_json(envelope: &Envelope) -> Result<String> {
    serde_json::to_string(envelope).map_err(encoding)
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
