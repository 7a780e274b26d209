//! The approval system (AOS): pending actions created by queued invocations, and their moves
//! (DESIGN.md §4): `pending -> approved -> executed | failed` (and `unknown` when a stop
//! interrupts an outbound action at its provider), `pending -> rejected`,
//! `pending -> expired` (after the TTL, 72 h). Credits are charged when the action is queued and
//! refunded by a reversing ledger row on reject, expiry or failed execution. Every move appends
//! `{ts, state, actor, note}` to the timeline, and every move happens inside one engine write
//! transaction, so concurrent approvals of one action execute it exactly once.
//!
//! Expiry has one code path, [`expire_if_due`], taken two ways: lazily, whenever an action is
//! read or moved after its deadline (the same transaction expires it and refunds its credits
//! first), and by the sweeper through [`expire_overdue`], so an action nobody looks at does not
//! keep its credits charged.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use svc_core::store::WorkspaceTxn;
use svc_engine::WorkspaceId;
use time::OffsetDateTime;

mod details;
mod listing;

pub use details::{details, Origin, Recipient};
pub use listing::{list, ApprovalQuery, GROUPS, PAGE_DEFAULT, PAGE_MAX, STATES};

use crate::executors::{self, Phase};
use crate::registry;
use svc_core::error::{Code, Error, Result};
use svc_core::keys::AgentKey;
use svc_core::ledger::{self, LedgerRow};
use svc_core::plumbing::clock;
use svc_core::plumbing::ids;
use svc_core::store::{Record, Store, Tx};
use svc_domains::outbound::{self, Delivered};

/// How long a pending action waits for a person (DESIGN.md §4).
pub const TTL: time::Duration = time::Duration::hours(72);
/// Actions one listing returns when no `limit` is asked for.
pub const MAX_LISTED: usize = 200;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct TimelineEntry {
    pub ts: String,
    pub state: String,
    /// `agent:<key id>`, `user:<user id>` or `system`.
    pub actor: String,
    pub note: String,
}

/// A queued invocation waiting for (or past) a decision.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PendingAction {
    /// `pa_` + time-ordered base62.
    pub id: String,
    pub request_id: String,
    pub capability: String,
    pub key_id: String,
    pub agent: String,
    pub source: String,
    /// The invocation input, kept for execution; shown sanitized.
    #[serde(with = "svc_engine::record_encoding::json_text")]
    pub input: Value,
    pub credits: u64,
    /// Month the credits were charged to (a refund reverses that month).
    pub month: String,
    pub customer_id: Option<String>,
    pub status: String,
    pub created_at: String,
    pub expires_at: String,
    pub timeline: Vec<TimelineEntry>,
    #[serde(default, with = "svc_engine::record_encoding::json_text")]
    pub result: Option<Value>,
    #[serde(default, with = "svc_engine::record_encoding::json_text")]
    pub error: Option<Value>,
}

impl Record for PendingAction {
    const KIND: &'static str = "pending_action";
    fn id(&self) -> String {
        self.id.clone()
    }
    fn indexes(&self) -> Vec<(&'static str, String)> {
        vec![("status", self.status.clone())]
    }
}

/// A pending action as the API shows it (input sanitized).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct PendingView {
    pub id: String,
    pub request_id: String,
    pub capability: String,
    pub key_id: String,
    pub agent: String,
    /// `pending`, `approved`, `executed`, `failed`, `unknown` (the service stopped while the
    /// approved action was with its provider), `rejected` or `expired`.
    pub status: String,
    #[schema(value_type = Object)]
    pub input: Value,
    pub action_credit_cost: u64,
    pub customer_id: Option<String>,
    pub created_at: String,
    pub expires_at: String,
    pub timeline: Vec<TimelineEntry>,
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub error: Option<Value>,
    pub receipt_url: String,
    /// Who the action is for, in full: only in `GET /api/v1/approvals`, for the signed-in
    /// people who decide (the input above stays masked; agent keys never see this).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipient: Option<Recipient>,
}

impl PendingView {
    pub fn new(p: &PendingAction) -> Self {
        PendingView {
            id: p.id.clone(),
            request_id: p.request_id.clone(),
            capability: p.capability.clone(),
            key_id: p.key_id.clone(),
            agent: p.agent.clone(),
            status: p.status.clone(),
            input: crate::sanitize(&p.input),
            action_credit_cost: p.credits,
            customer_id: p.customer_id.clone(),
            created_at: p.created_at.clone(),
            expires_at: p.expires_at.clone(),
            timeline: p.timeline.clone(),
            result: p.result.as_ref().map(crate::sanitize),
            error: p.error.clone(),
            receipt_url: format!("/api/v1/capabilities/actions/{}", p.request_id),
            recipient: None,
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PendingList {
    /// One page, newest first.
    pub actions: Vec<PendingView>,
    /// Actions matching the status and capability filters, in all.
    pub total: usize,
    pub offset: usize,
    pub limit: usize,
    /// The capabilities of the actions in the status filter (for a capability filter).
    pub capabilities: Vec<String>,
}

fn entry(ts: OffsetDateTime, state: &str, actor: &str, note: &str) -> TimelineEntry {
    TimelineEntry {
        ts: clock::rfc3339(ts),
        state: state.to_owned(),
        actor: actor.to_owned(),
        note: note.to_owned(),
    }
}

pub fn new_id(now: OffsetDateTime) -> String {
    let micros = u64::try_from(now.unix_timestamp_nanos() / 1000).unwrap_or(0);
    format!(
        "pa_{}{}",
        ids::base62_fixed(micros, 11),
        ids::random_base62(6)
    )
}

/// What the gateway knows when it queues an invocation.
#[derive(Debug)]
pub struct NewPending<'a> {
    pub id: String,
    pub request_id: &'a str,
    pub capability: &'a str,
    pub key: &'a AgentKey,
    pub source: &'a str,
    pub input: &'a Value,
    pub credits: u64,
    pub month: &'a str,
    pub customer_id: Option<String>,
    pub now: OffsetDateTime,
    pub note: String,
}

/// Creates a pending action in the caller's (invocation's) transaction.
pub fn create_in(w: &mut WorkspaceTxn<'_, '_>, n: NewPending<'_>) -> Result<PendingAction> {
    let p = PendingAction {
        id: n.id,
        request_id: n.request_id.to_owned(),
        capability: n.capability.to_owned(),
        key_id: n.key.id.clone(),
        agent: n.key.agent.clone(),
        source: n.source.to_owned(),
        input: n.input.clone(),
        credits: n.credits,
        month: n.month.to_owned(),
        customer_id: n.customer_id,
        status: "pending".into(),
        created_at: clock::rfc3339(n.now),
        expires_at: clock::rfc3339(n.now + TTL),
        timeline: vec![entry(
            n.now,
            "pending",
            &format!("agent:{}", n.key.id),
            &n.note,
        )],
        result: None,
        error: None,
    };
    w.put_record(&p)?;
    Ok(p)
}

/// Writes the reversing ledger row of a pending action's charge.
fn refund(w: &mut WorkspaceTxn<'_, '_>, p: &PendingAction, now: OffsetDateTime) -> Result<()> {
    if p.credits == 0 {
        return Ok(());
    }
    ledger::reverse(
        w,
        &LedgerRow {
            id: ledger::new_row_id(),
            request_id: p.request_id.clone(),
            key_id: p.key_id.clone(),
            agent: p.agent.clone(),
            capability: p.capability.clone(),
            mode: "queue".into(),
            source: p.source.clone(),
            status: "refunded".into(),
            credits: -i64::try_from(p.credits).unwrap_or(i64::MAX),
            month: p.month.clone(),
            customer_id: p.customer_id.clone(),
            idempotency_key: None,
            pending_action_id: Some(p.id.clone()),
            created_at: clock::rfc3339(now),
        },
    )
}

/// Expires `p` when its deadline has passed (refunding it); true when it did.
fn expire_if_due(
    w: &mut WorkspaceTxn<'_, '_>,
    p: &mut PendingAction,
    now: OffsetDateTime,
) -> Result<bool> {
    if !is_overdue(p, now) {
        return Ok(false);
    }
    p.status = "expired".into();
    outbound::cancel_for_pending(w, &p.id, now)?;
    p.timeline.push(entry(
        now,
        "expired",
        "system",
        "not decided within 72 hours; credits refunded",
    ));
    refund(w, p, now)?;
    w.put_record(p)?;
    Ok(true)
}

/// Expires every overdue pending action of the workspace (in the caller's transaction);
/// returns how many.
fn expire_due(w: &mut WorkspaceTxn<'_, '_>, now: OffsetDateTime) -> Result<usize> {
    let mut expired = 0;
    for mut p in w.find_records::<PendingAction>("status", "pending")? {
        if expire_if_due(w, &mut p, now)? {
            expired += 1;
        }
    }
    Ok(expired)
}

fn is_overdue(p: &PendingAction, now: OffsetDateTime) -> bool {
    p.status == "pending" && clock::rfc3339(now) >= p.expires_at
}

/// Expires (and refunds) the workspace's pending actions whose deadline has passed at `now`;
/// returns how many. The sweeper's entry point: it looks first outside the writer and takes
/// a write only when something is due.
pub async fn expire_overdue(store: &Store, ws: WorkspaceId, now: OffsetDateTime) -> Result<usize> {
    let pending = store.find::<PendingAction>(ws, "status", "pending").await?;
    if !pending.iter().any(|p| is_overdue(p, now)) {
        return Ok(0);
    }
    store
        .write(move |txn| expire_due(&mut txn.workspace(ws), now))
        .await
}

fn load(w: &WorkspaceTxn<'_, '_>, id: &str) -> Result<PendingAction> {
    w.get_record::<PendingAction>(id)?
        .ok_or_else(|| Error::not_found("pending action"))
}

/// One pending action of the workspace (expired first when overdue).
pub async fn get(store: &Store, ws: WorkspaceId, id: &str) -> Result<PendingView> {
    let id = id.to_owned();
    store
        .write(move |txn| {
            let mut w = txn.workspace(ws);
            let mut p = load(&w, &id)?;
            expire_if_due(&mut w, &mut p, clock::now())?;
            Ok(PendingView::new(&p))
        })
        .await
}

fn not_pending(p: &PendingAction) -> Error {
    Error::new(
        Code::Conflict,
        format!("the action is {}, not pending", p.status),
    )
    .with_details(json!({ "status": p.status }))
}

/// Rejects a pending action and refunds its credits.
pub async fn reject(
    store: &Store,
    ws: WorkspaceId,
    id: &str,
    user_id: &str,
    note: Option<String>,
) -> Result<PendingView> {
    let (id, actor) = (id.to_owned(), format!("user:{user_id}"));
    store
        .write(move |txn| {
            let now = clock::now();
            let mut w = txn.workspace(ws);
            let mut p = load(&w, &id)?;
            if expire_if_due(&mut w, &mut p, now)? || p.status != "pending" {
                return Err(not_pending(&p));
            }
            p.status = "rejected".into();
            outbound::cancel_for_pending(&mut w, &p.id, now)?;
            p.timeline.push(entry(
                now,
                "rejected",
                &actor,
                note.as_deref().unwrap_or("rejected; credits refunded"),
            ));
            refund(&mut w, &p, now)?;
            w.put_record(&p)?;
            Ok(PendingView::new(&p))
        })
        .await
}

/// Approves a pending action and executes it, exactly once: the approval, the execution's
/// writes and the outcome commit together. A failed execution is recorded as `failed` (its
/// writes undone) and its credits refunded. An outbound action (email, call, Customer.io)
/// commits `approved` with its record `sending`, is handed to the provider, and a second write
/// records `executed` or `failed` (refunded); only the approval that moved the action out of
/// `pending` ever sends it.
pub async fn approve(
    gateway: &impl AsRef<crate::Gateway>,
    ws: WorkspaceId,
    id: &str,
    user_id: &str,
    note: Option<String>,
) -> Result<PendingView> {
    let gw = gateway.as_ref();
    let (id, actor) = (id.to_owned(), format!("user:{user_id}"));
    let deps = crate::Deps::of(gw);
    let step = gw
        .store
        .write(move |txn| {
            let now = clock::now();
            let mut p = {
                let mut w = txn.workspace(ws);
                let mut p = load(&w, &id)?;
                if expire_if_due(&mut w, &mut p, now)? || p.status != "pending" {
                    return Err(not_pending(&p));
                }
                p
            };
            p.status = "approved".into();
            p.timeline.push(entry(
                now,
                "approved",
                &actor,
                note.as_deref().unwrap_or("approved"),
            ));
            let outcome = txn.attempt(|t| run_approved(t, &deps, ws, &p, now));
            let mut w = txn.workspace(ws);
            let dispatch = match outcome {
                Ok(out) if out.dispatch.is_some() => {
                    p.timeline
                        .push(entry(now, "approved", "system", "handed to the provider"));
                    out.dispatch
                }
                Ok(out) => {
                    p.status = "executed".into();
                    p.result = Some(out.result);
                    p.timeline
                        .push(entry(now, "executed", "system", "executed"));
                    None
                }
                Err(e) if e.code == Code::Internal || e.code == Code::Unavailable => return Err(e),
                Err(e) => {
                    fail(&mut w, &mut p, e.code.as_str(), &e.message, now)?;
                    None
                }
            };
            w.put_record(&p)?;
            Ok((PendingView::new(&p), dispatch))
        })
        .await?;
    let (view, dispatch) = step;
    let Some(dispatch) = dispatch else {
        return Ok(view);
    };
    let delivered = outbound::delivery::perform(&gw.http, &dispatch.job).await;
    let id = view.id.clone();
    let ids = gw.store.ids().clone();
    let view = gw
        .store
        .write(move |txn| {
            let now = clock::now();
            let mut w = txn.workspace(ws);
            let mut p = load(&w, &id)?;
            let (record, _stream) =
                outbound::finish(&ids, &mut w, &dispatch.outbound_id, &delivered, now)?;
            match &delivered {
                Delivered::Ok { .. } => {
                    p.status = "executed".into();
                    p.result = Some(crate::outbound_result(&record));
                    p.timeline.push(entry(
                        now,
                        "executed",
                        "system",
                        "the provider took the action",
                    ));
                }
                Delivered::Failed { message } => {
                    fail(
                        &mut w,
                        &mut p,
                        Code::CapabilityFailed.as_str(),
                        message,
                        now,
                    )?;
                }
                Delivered::Unknown { message } => {
                    // It may have been done: credits stay charged, nothing is retried.
                    p.status = "unknown".into();
                    p.result = Some(crate::outbound_result(&record));
                    p.timeline.push(entry(now, "unknown", "system", message));
                }
            }
            w.put_record(&p)?;
            Ok(PendingView::new(&p))
        })
        .await?;
    Ok(view)
}

/// An approved outbound action whose delivery a stop interrupted (`outbound_flow::recover_interrupted`): its
/// outcome is unknown, its credits stay charged, and it is never sent again by itself.
pub(crate) fn mark_unknown(
    w: &mut WorkspaceTxn<'_, '_>,
    id: &str,
    now: OffsetDateTime,
) -> Result<()> {
    let Some(mut p) = w.get_record::<PendingAction>(id)? else {
        return Ok(());
    };
    if p.status != "approved" {
        return Ok(());
    }
    p.status = "unknown".into();
    p.timeline.push(entry(
        now,
        "unknown",
        "system",
        "the service stopped while the provider had the action; it may or may not have been \
         done and is not retried",
    ));
    w.put_record(&p)?;
    Ok(())
}

/// Records a failed execution and refunds its credits.
fn fail(
    w: &mut WorkspaceTxn<'_, '_>,
    p: &mut PendingAction,
    code: &str,
    message: &str,
    now: OffsetDateTime,
) -> Result<()> {
    p.status = "failed".into();
    p.error = Some(json!({"code": code, "message": message}));
    p.timeline.push(entry(
        now,
        "failed",
        "system",
        &format!("{code}: {message}; credits refunded"),
    ));
    refund(w, p, now)
}

/// Runs an approved action's executor with the key that queued it, after the same setup as an
/// invocation (`crate::Prepared`): an outbound action sends the record it queued, exactly as
/// the approver saw it.
fn run_approved(
    txn: &mut Tx<'_, '_>,
    deps: &crate::Deps,
    ws: WorkspaceId,
    p: &PendingAction,
    now: OffsetDateTime,
) -> Result<executors::Outcome> {
    let key = txn
        .workspace(ws)
        .get_record::<AgentKey>(&p.key_id)?
        .ok_or_else(|| Error::internal(format!("pending action {} has no key", p.id)))?;
    let entry = registry::get(&p.capability)
        .ok_or_else(|| Error::internal(format!("unknown capability {}", p.capability)))?;
    let prepared = crate::Prepared::load(txn, &key)?;
    prepared.ensure_allowed(&entry.descriptor).map_err(|e| {
        if e.code == Code::PolicyForbid {
            Error::new(
                Code::PolicyForbid,
                format!("workspace policy now forbids {}", p.capability),
            )
        } else {
            e
        }
    })?;
    let ctx = prepared.ctx(&key, deps, 0, now, &p.request_id, Some(&p.id));
    let mut w = txn.workspace(ws);
    let out = match outbound::for_pending(&w, &p.id)? {
        Some(record) => executors::run_queued_record(&mut w, &ctx, record),
        None => executors::run(entry.capability, Phase::Commit, &mut w, &ctx, &p.input),
    };
    out.map_err(crate::executor_failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_core::capabilities::Capability;
    use svc_core::keys::KeyKind;

    fn key(ws: WorkspaceId) -> AgentKey {
        AgentKey {
            id: "key_test".into(),
            workspace: ws.0,
            kind: KeyKind::Agent,
            name: "t".into(),
            agent: "t".into(),
            scopes: vec![],
            grants: vec![],
            allowed_modes: vec!["queue".into()],
            auto_run: false,
            rate_limit_per_min: 600,
            quota_override_monthly: None,
            prefix: "svc_live_xxxx".into(),
            last_four: "xxxx".into(),
            created_at: "t".into(),
            created_by: "usr_t".into(),
            last_used_at: None,
            revoked_at: None,
        }
    }

    /// Queues a crm.mutate at `then` with its 3-credit charge, as the gateway does.
    async fn queue_charged(store: &Store, ws: WorkspaceId, then: OffsetDateTime) -> String {
        let m = ledger::current_month();
        store
            .write(move |txn| {
                let mut w = txn.workspace(ws);
                let k = key(ws);
                let p = create_in(
                    &mut w,
                    NewPending {
                        id: new_id(then),
                        request_id: "req_t",
                        capability: Capability::CrmMutate.id(),
                        key: &k,
                        source: "api",
                        input: &json!({"customer": "cus_1"}),
                        credits: 3,
                        month: &m,
                        customer_id: None,
                        now: then,
                        note: "queued".into(),
                    },
                )?;
                let charge = LedgerRow {
                    id: ledger::new_row_id(),
                    request_id: "req_t".into(),
                    key_id: k.id.clone(),
                    agent: "t".into(),
                    capability: Capability::CrmMutate.id().into(),
                    mode: "queue".into(),
                    source: "api".into(),
                    status: "queued".into(),
                    credits: 3,
                    month: m.clone(),
                    customer_id: None,
                    idempotency_key: None,
                    pending_action_id: Some(p.id.clone()),
                    created_at: p.created_at.clone(),
                };
                ledger::reverse(&mut w, &charge)?;
                Ok(p.id)
            })
            .await
            .expect("queued")
    }

    #[tokio::test]
    async fn overdue_actions_expire_on_access_and_refund() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let ws = WorkspaceId(9);
        let month = ledger::current_month();
        // Queued 73 hours ago, with its 3-credit charge.
        let id = queue_charged(&store, ws, clock::now() - time::Duration::hours(73)).await;
        let graph = store.graph().expect("graph");
        assert_eq!(
            ledger::month_usage(&graph.snapshot(ws), "key_test", &month).expect("usage"),
            (3, 3)
        );
        let view = get(&store, ws, &id).await.expect("get");
        assert_eq!(view.status, "expired");
        assert_eq!(
            view.timeline.last().map(|t| t.actor.as_str()),
            Some("system")
        );
        assert_eq!(
            ledger::month_usage(&graph.snapshot(ws), "key_test", &month).expect("usage"),
            (0, 0)
        );
        // Expired is final: deciding it is a conflict, and nothing is refunded twice.
        let err = reject(&store, ws, &id, "usr_t", None)
            .await
            .expect_err("expired");
        assert_eq!(err.code, Code::Conflict);
        let rows = ledger::recent_rows(&graph.snapshot(ws), "key_test", 10).expect("rows");
        assert_eq!(rows.iter().map(|r| r.credits).sum::<i64>(), 0);
        assert_eq!(rows.len(), 2);
        drop(graph);
        store.close();
    }

    #[tokio::test]
    async fn the_sweeper_expires_at_the_deadline_once_with_one_refund() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let ws = WorkspaceId(10);
        let month = ledger::current_month();
        let t0 = clock::now();
        let id = queue_charged(&store, ws, t0).await;
        let graph = store.graph().expect("graph");
        let usage = || ledger::month_usage(&graph.snapshot(ws), "key_test", &month).expect("usage");
        let status = || {
            graph
                .get_record::<PendingAction>(ws, &id)
                .expect("read")
                .expect("exists")
        };
        let h = time::Duration::hours;
        assert_eq!(
            expire_overdue(&store, ws, t0 + h(71)).await.expect("sweep"),
            0
        );
        assert_eq!((status().status.as_str(), usage()), ("pending", (3, 3)));
        let deadline = t0 + TTL;
        assert_eq!(
            expire_overdue(&store, ws, deadline).await.expect("sweep"),
            1
        );
        let p = status();
        assert_eq!(p.status, "expired");
        let last = p.timeline.last().expect("timeline");
        assert_eq!(
            (last.state.as_str(), last.actor.as_str()),
            ("expired", "system")
        );
        assert_eq!(
            last.ts,
            clock::rfc3339(deadline),
            "stamped with the sweep's clock"
        );
        assert_eq!(usage(), (0, 0));
        // A second sweep, and then a read, find nothing left to expire or refund.
        assert_eq!(
            expire_overdue(&store, ws, t0 + h(80)).await.expect("sweep"),
            0
        );
        assert_eq!(get(&store, ws, &id).await.expect("get").status, "expired");
        let rows = ledger::recent_rows(&graph.snapshot(ws), "key_test", 10).expect("rows");
        assert_eq!(rows.len(), 2, "one charge, one refund");
        assert_eq!(rows.iter().map(|r| r.credits).sum::<i64>(), 0);
        drop(graph);
        store.close();
    }
}
