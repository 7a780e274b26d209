//! The run executor: `POST /v1/playbooks/:id/run` starts a run that works its leads in the
//! background, one task per running run.
//!
//! - Start: the request is checked against the spec ([`lead_source::check`]), the source's
//!   leads are resolved on one snapshot (at most `sampleSize`) and stored as lead records with
//!   the run and its plan, in one write; then the run's task starts.
//! - A task loops: it reads the run (anything but `running` ends it), folds the outcomes
//!   attributed to the playbook's campaign into the run at most once a second (the judge may
//!   pivot, which changes the plan's variant, channel or cadence), works the lead at the
//!   cursor ([`lead_step::work`]), records it and advances the cursor in one write, then waits
//!   the plan's cadence. With no lead left it completes the run, or, following a segment, takes
//!   the segment's new members (polling every second) until `sampleSize`.
//! - Stops: `quota_exceeded` before or during a lead stops the run `blocked_credits` with
//!   that lead still to do; run-level refusals (integration, read-only, policy)
//!   stop it `failed`. Pause and cancel set the status; the task sees it before its next lead
//!   (a lead already under way finishes).
//! - Restarts: runs with status `running` are indexed (`active`) and [`resume_all`] starts
//!   their tasks when the service starts; `AppState::shutdown` stops the tasks between two
//!   steps before the store closes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::attribution::Attributed;
use super::lead_source::{self, RunRequest, Source};
use super::lead_step::{self, LeadOutcome};
use super::leads::{self, RunLead};
use super::model_judge::Judging;
use super::outcomes;
use super::run_plan::{status, LeadCounts, RunError, RunPlan, CHANNEL_EMAIL, VARIANTS};
use super::runs::{self, run_key, PlaybookRun, RunMetrics};
use super::{judge, principal};
use crate::agent_state::AgentState;
use svc_core::error::{Code, Error, Result};
use svc_core::plumbing::clock;
use svc_core::store::WorkspaceId;
use svc_core::workspaces::ensure_writable;
use svc_domains::playbooks::{time_ordered_id, Playbook};

/// How often an idle run (following a segment) looks for new members and outcomes.
pub const IDLE_POLL: Duration = Duration::from_secs(1);
/// Outcomes are folded in at most this often.
const SYNC_EVERY: Duration = Duration::from_secs(1);
/// Most segment members a following run looks at per poll.
const FOLLOW_SCAN: usize = 10_000;

/// Makes sure the run has a task driving it (see [`super::tasks::Tasks::ensure`]).
pub fn ensure_task(state: &AgentState, ws: WorkspaceId, playbook_id: &str, run_id: &str) {
    state.playbook_runs.ensure(ws, playbook_id, run_id, |wake| {
        tokio::spawn(drive(
            state.clone(),
            ws,
            playbook_id.to_owned(),
            run_id.to_owned(),
            wake,
        ))
    });
}

/// Starts the task of every `running` run of every workspace (at service start).
pub async fn resume_all(state: &AgentState) {
    let workspaces = match svc_core::workspaces::all_ids(&state.gateway.store).await {
        Ok(ws) => ws,
        Err(e) => {
            tracing::error!(error = %e, "listing workspaces to resume playbook runs failed");
            return;
        }
    };
    let mut resumed = 0usize;
    for ws in workspaces {
        match runs::active(&state.gateway.store, ws).await {
            Ok(active) => {
                for run in active {
                    ensure_task(state, ws, &run.playbook_id, &run.id);
                    resumed += 1;
                }
            }
            Err(e) => {
                tracing::warn!(workspace = %ws, error = %e, "listing running playbook runs failed")
            }
        }
    }
    if resumed > 0 {
        tracing::info!(runs = resumed, "playbook runs resumed");
    }
}

/// What a task does after a step.
enum Next {
    Wait(Duration),
    Stop,
}

async fn drive(
    state: AgentState,
    ws: WorkspaceId,
    playbook_id: String,
    run_id: String,
    wake: Arc<Notify>,
) {
    let key = (ws, run_key(&playbook_id, &run_id));
    let mut last_sync: Option<Instant> = None;
    loop {
        if state.playbook_runs.stopping() {
            break;
        }
        let next = match step(&state, ws, &playbook_id, &run_id, &mut last_sync).await {
            Ok(next) => next,
            // Shutting down: the run stays `running` and resumes at the next start.
            Err(e) if e.code == Code::Unavailable => break,
            Err(e) => {
                tracing::error!(run = %run_id, error = %e, "playbook run step failed");
                let error = RunError {
                    code: e.code.as_str().to_owned(),
                    message: e.message.clone(),
                };
                match stop_run(
                    &state,
                    ws,
                    &playbook_id,
                    &run_id,
                    status::FAILED,
                    Some(error),
                )
                .await
                {
                    Ok(()) => Next::Stop,
                    Err(_) => break,
                }
            }
        };
        match next {
            Next::Wait(d) if d.is_zero() => {}
            Next::Wait(d) => {
                tokio::select! {
                    _ = tokio::time::sleep(d) => {}
                    _ = wake.notified() => {}
                }
            }
            Next::Stop => {
                if state.playbook_runs.finish(&key) {
                    break;
                }
            }
        }
    }
}

async fn step(
    state: &AgentState,
    ws: WorkspaceId,
    playbook_id: &str,
    run_id: &str,
    last_sync: &mut Option<Instant>,
) -> Result<Next> {
    let store = &state.gateway.store;
    let Some(run) = store
        .get::<PlaybookRun>(ws, run_key(playbook_id, run_id))
        .await?
    else {
        return Ok(Next::Stop);
    };
    if run.status != status::RUNNING || run.plan.is_none() {
        return Ok(Next::Stop);
    }
    if store.get::<Playbook>(ws, playbook_id).await?.is_none() {
        let error = RunError {
            code: Code::NotFound.as_str().to_owned(),
            message: "the playbook was deleted".to_owned(),
        };
        stop_run(state, ws, playbook_id, run_id, status::FAILED, Some(error)).await?;
        return Ok(Next::Stop);
    }
    // Outcomes come back through ingestion (events attributed to the playbook's campaign);
    // the judge may pivot, which changes the plan the next lead is worked with. A run with
    // no lead to work leaves its outcomes to `.../sync`.
    let has_leads = run
        .plan
        .as_ref()
        .is_some_and(|p| p.counts.taken > 0 || p.follow);
    if has_leads && last_sync.is_none_or(|t| t.elapsed() >= SYNC_EVERY) {
        *last_sync = Some(Instant::now());
        // The model judge, when connected, is asked here, outside any write.
        let judging = Judging::load(&state.gateway, ws).await?;
        if let Err(e) =
            outcomes::sync_attributed(store, ws, playbook_id.into(), run_id.into(), &judging).await
        {
            if e.code == Code::Unavailable {
                return Err(e);
            }
            tracing::debug!(run = %run_id, error = %e, "folding attributed outcomes failed");
        }
    }
    let Some(run) = store
        .get::<PlaybookRun>(ws, run_key(playbook_id, run_id))
        .await?
    else {
        return Ok(Next::Stop);
    };
    let Some(plan) = run.plan.clone() else {
        return Ok(Next::Stop);
    };
    let Some(lead) = leads::get(store, ws, playbook_id, run_id, plan.next_lead).await? else {
        if plan.follow && plan.counts.taken < plan.sample_size {
            let added = take_new_members(state, ws, &run, &plan).await?;
            return Ok(Next::Wait(if added > 0 {
                Duration::ZERO
            } else {
                IDLE_POLL
            }));
        }
        stop_run(state, ws, playbook_id, run_id, status::COMPLETED, None).await?;
        return Ok(Next::Stop);
    };
    if lead.is_done() {
        record_lead(state, ws, lead, false).await?;
        return Ok(Next::Wait(Duration::ZERO));
    }
    let campaign = principal::campaign_principal(store, ws).await?;
    let key = principal::key_for_lead(store, ws, &campaign, &lead).await?;
    match lead_step::work(state, &key, &run, &plan, lead).await? {
        LeadOutcome::Done(lead) => {
            record_lead(state, ws, *lead, true).await?;
            Ok(Next::Wait(Duration::from_millis(plan.cadence_ms)))
        }
        LeadOutcome::BlockCredits(error) => {
            stop_run(
                state,
                ws,
                playbook_id,
                run_id,
                status::BLOCKED_CREDITS,
                Some(error),
            )
            .await?;
            Ok(Next::Stop)
        }
        LeadOutcome::Fail(error) => {
            stop_run(state, ws, playbook_id, run_id, status::FAILED, Some(error)).await?;
            Ok(Next::Stop)
        }
        LeadOutcome::Retry => Ok(Next::Wait(IDLE_POLL)),
        LeadOutcome::Stopped => Ok(Next::Stop),
    }
}

/// Records a finished lead and moves the run's cursor past it, in one write. `count` adds it
/// to the run's counters (false for a lead recorded before a restart).
async fn record_lead(
    state: &AgentState,
    ws: WorkspaceId,
    lead: RunLead,
    count: bool,
) -> Result<()> {
    let key = run_key(&lead.playbook_id, &lead.run_id);
    state
        .gateway
        .store
        .write(move |tx| {
            let mut run = tx
                .get::<PlaybookRun>(ws, &key)?
                .ok_or_else(|| Error::not_found("playbook run"))?;
            let Some(plan) = run.plan.as_mut() else {
                return Ok(());
            };
            if plan.next_lead != lead.seq {
                return Ok(());
            }
            plan.next_lead += 1;
            if count {
                let c = &mut plan.counts;
                match lead.status.as_str() {
                    leads::status::QUEUED => c.queued += 1,
                    leads::status::SENT => c.sent += 1,
                    leads::status::SKIPPED => c.skipped += 1,
                    _ => c.failed += 1,
                }
                plan.credits_charged += lead.credits;
            }
            plan.updated_at = clock::now_rfc3339();
            tx.put(ws, &run)?;
            tx.put(ws, &lead)?;
            Ok(())
        })
        .await
}

/// Moves a running run to `to` (a pause or cancel that came first wins).
async fn stop_run(
    state: &AgentState,
    ws: WorkspaceId,
    playbook_id: &str,
    run_id: &str,
    to: &'static str,
    error: Option<RunError>,
) -> Result<()> {
    let key = run_key(playbook_id, run_id);
    state
        .gateway
        .store
        .write(move |tx| {
            let Some(mut run) = tx.get::<PlaybookRun>(ws, &key)? else {
                return Ok(());
            };
            if run.status != status::RUNNING {
                return Ok(());
            }
            run.status = to.to_owned();
            if let Some(plan) = run.plan.as_mut() {
                let now = clock::now_rfc3339();
                plan.error = error;
                if status::is_final(to) {
                    plan.finished_at = Some(now.clone());
                }
                plan.updated_at = now;
            }
            tx.put(ws, &run)
        })
        .await
}

/// A following run takes the segment's members it has not taken yet, up to `sampleSize`.
async fn take_new_members(
    state: &AgentState,
    ws: WorkspaceId,
    run: &PlaybookRun,
    plan: &RunPlan,
) -> Result<u32> {
    let Some(query) = plan.query.clone() else {
        return Ok(0);
    };
    let now_us = micros_now();
    let ids = state.gateway.store.ids().clone();
    let members = {
        let ids = ids.clone();
        state
            .gateway
            .store
            .read(ws, move |snap| {
                lead_source::segment_members(&ids, snap, &query, now_us, FOLLOW_SCAN)
            })
            .await?
    };
    let key = run_key(&run.playbook_id, &run.id);
    let (playbook_id, run_id) = (run.playbook_id.clone(), run.id.clone());
    state
        .gateway
        .store
        .write(move |tx| {
            let Some(mut run) = tx.get::<PlaybookRun>(ws, &key)? else {
                return Ok(0);
            };
            if run.status != status::RUNNING {
                return Ok(0);
            }
            let Some(plan) = run.plan.as_mut() else {
                return Ok(0);
            };
            let now = clock::now_rfc3339();
            let mut added = 0;
            for id in members {
                if plan.counts.taken >= plan.sample_size {
                    break;
                }
                let customer = ids.customer(id);
                // A lead taken before opaque ids holds the customer's decimal id.
                let mut taken = false;
                for reference in ids.customer_references(id) {
                    let index = leads::customer_key(&playbook_id, &run_id, &reference);
                    taken |= !tx.find::<RunLead>(ws, "customer", &index)?.is_empty();
                }
                if taken {
                    continue;
                }
                let lead = RunLead::new(
                    &playbook_id,
                    &run_id,
                    plan.counts.taken,
                    customer.clone(),
                    Some(customer),
                    &now,
                );
                tx.put(ws, &lead)?;
                plan.counts.taken += 1;
                added += 1;
            }
            if added > 0 {
                plan.updated_at = now;
                tx.put(ws, &run)?;
            }
            Ok(added)
        })
        .await
}

fn micros_now() -> i64 {
    (clock::now().unix_timestamp_nanos() / 1000) as i64
}

/// Starts a run of the playbook: leads resolved and stored, the run `running`, its task
/// started. Errors: 404 playbook, 400 request or unsupported lead source, 403 read-only.
pub async fn start(
    state: &AgentState,
    ws: WorkspaceId,
    playbook_id: String,
    actor: String,
    req: RunRequest,
) -> Result<PlaybookRun> {
    let pb = svc_domains::playbooks::get(&state.gateway.store, ws, &playbook_id).await?;
    let checked = lead_source::check(&pb, req)?;
    let limit = pb.lead_source.sample_size as usize;
    let source = checked.source.clone();
    let now_us = micros_now();
    let ids = state.gateway.store.ids().clone();
    let found = state
        .gateway
        .store
        .read(ws, move |snap| {
            lead_source::leads(&ids, snap, &source, now_us, limit)
        })
        .await?;
    let judging = Judging::load(&state.gateway, ws).await?;
    let (judge, judge_note) = judge::select(&pb.adaptation, judging.connected_model());
    let now = clock::now_rfc3339();
    let run_id = time_ordered_id("run");
    let skipped = found.iter().filter(|l| l.customer_id.is_none()).count() as u32;
    let plan = RunPlan {
        source: checked.source.kind().to_owned(),
        query: match &checked.source {
            Source::Segment(q) => Some(q.clone()),
            Source::References { .. } => None,
        },
        sample_size: pb.lead_source.sample_size,
        follow: checked.follow,
        delivery: checked.delivery,
        intent: checked.intent,
        variant: VARIANTS[0].to_owned(),
        channel: CHANNEL_EMAIL.to_owned(),
        cadence_ms: checked.cadence_ms,
        buddy: principal::CAMPAIGN_BUDDY.to_owned(),
        judge,
        judge_note,
        // Unknown references are recorded as skipped leads at the front: the cursor starts
        // at the first lead, which is simply passed over when it is already done.
        next_lead: 0,
        counts: LeadCounts {
            taken: found.len() as u32,
            skipped,
            ..LeadCounts::default()
        },
        credits_charged: 0,
        error: None,
        updated_at: now.clone(),
        finished_at: None,
    };
    let run = PlaybookRun {
        id: run_id.clone(),
        playbook_id: playbook_id.clone(),
        status: status::RUNNING.into(),
        started_at: now.clone(),
        started_by: actor,
        metrics: RunMetrics::default(),
        pivots: Vec::new(),
        outcomes: Vec::new(),
        synced: Attributed::default(),
        plan: Some(plan),
        judge_fallback: None,
    };
    let run = state
        .gateway
        .store
        .write(move |tx| {
            ensure_writable(tx, ws)?;
            if tx.get::<Playbook>(ws, &playbook_id)?.is_none() {
                return Err(Error::not_found("playbook"));
            }
            tx.put(ws, &run)?;
            for (seq, lead) in found.into_iter().enumerate() {
                let lead = RunLead::new(
                    &playbook_id,
                    &run_id,
                    seq as u32,
                    lead.reference,
                    lead.customer_id,
                    &now,
                );
                tx.put(ws, &lead)?;
            }
            Ok(run)
        })
        .await?;
    ensure_task(state, ws, &run.playbook_id, &run.id);
    Ok(run)
}

/// A person's control of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Pause,
    Resume,
    Cancel,
}

fn conflict(run: &PlaybookRun, what: &str) -> Error {
    Error::new(
        Code::Conflict,
        format!("a {} run cannot be {what}", run.status),
    )
    .with_details(serde_json::json!({"status": run.status}))
}

/// Pause (`running` -> `paused`), resume (`paused`, `blocked_credits`, `failed` ->
/// `running`) or cancel (anything not over -> `cancelled`). Repeating the move that was just
/// made is a no-op; other moves are 409 `conflict`.
pub async fn control(
    state: &AgentState,
    ws: WorkspaceId,
    playbook_id: String,
    run_id: String,
    action: Control,
) -> Result<PlaybookRun> {
    let key = run_key(&playbook_id, &run_id);
    let run = state
        .gateway
        .store
        .write(move |tx| {
            ensure_writable(tx, ws)?;
            let mut run = tx
                .get::<PlaybookRun>(ws, &key)?
                .ok_or_else(|| Error::not_found("playbook run"))?;
            if run.plan.is_none() {
                return Err(Error::new(
                    Code::Conflict,
                    "this run was recorded before runs were executed by the service; it has \
                     nothing to pause, resume or cancel",
                ));
            }
            let now = clock::now_rfc3339();
            let to = match (action, run.status.as_str()) {
                (Control::Pause, status::PAUSED)
                | (Control::Resume, status::RUNNING)
                | (Control::Cancel, status::CANCELLED) => return Ok(run),
                (Control::Pause, status::RUNNING) => status::PAUSED,
                (Control::Pause, _) => return Err(conflict(&run, "paused")),
                (Control::Resume, s) if status::resumable(s) => status::RUNNING,
                (Control::Resume, _) => return Err(conflict(&run, "resumed")),
                (Control::Cancel, s) if !status::is_final(s) => status::CANCELLED,
                (Control::Cancel, _) => return Err(conflict(&run, "cancelled")),
            };
            run.status = to.to_owned();
            if let Some(plan) = run.plan.as_mut() {
                if to == status::RUNNING {
                    plan.error = None;
                }
                if to == status::CANCELLED {
                    plan.finished_at = Some(now.clone());
                }
                plan.updated_at = now;
            }
            tx.put(ws, &run)?;
            Ok(run)
        })
        .await?;
    if run.status == status::RUNNING {
        ensure_task(state, ws, &run.playbook_id, &run.id);
    } else {
        state.playbook_runs.wake(ws, &run.playbook_id, &run.id);
    }
    Ok(run)
}
