//! Executors: the one table from a [`Capability`] to the domain function that carries it out.
//! They run inside the invocation's engine write (so their reads see every earlier commit and
//! their writes commit with the ledger row) and hold no domain logic of their own: customers
//! and memory live in `crm`, reports in `reports`, drafting in `outreach`, scores in
//! `scoring`, plans in `planning`, outbound actions in `outbound` (see [`outbound`]).

mod outbound;

use serde_json::{json, Value};
use svc_core::store::WorkspaceTxn;
use svc_engine::GraphRead;
use time::OffsetDateTime;

use svc_core::capabilities::Capability;
use svc_core::error::{Error, Result};
use svc_core::keys::AgentKey;
use svc_core::ledger::Budget;
use svc_core::plumbing::ids::PublicIds;
use svc_core::plumbing::sealed::Sealer;
use svc_core::workspaces::{self, WorkspaceEntry, WorkspaceSettings};
use svc_domains::crm::{self, str_field};
use svc_domains::events::{self, MarketingEvent, StreamMessage, ValidEvent};
use svc_domains::outbound::delivery::Dispatch;
use svc_domains::outbound::OutboundRecord;
use svc_domains::{brand, planning, reports, scoring};

/// How far an invocation goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// dry_run: the same checks and reads, no writes; shows what would happen.
    Preview,
    /// An approval request is being created: the checks of a real run, nothing sent.
    Queue,
    /// Commit (directly, or an approved request).
    Commit,
}

/// What an executor may know about the invocation.
pub(crate) struct Ctx<'a> {
    pub key: &'a AgentKey,
    pub workspace: &'a WorkspaceEntry,
    pub settings: &'a WorkspaceSettings,
    /// The budget before this invocation's charge.
    pub budget: &'a Budget,
    /// Credits this invocation is about to be charged.
    pub cost: u64,
    pub now: OffsetDateTime,
    pub request_id: &'a str,
    pub sealer: &'a Sealer,
    /// The service's public base URL (callback URLs, the Message-ID domain).
    pub public_url: &'a str,
    /// The store's public ids (customer references in, customer ids out).
    pub ids: &'a PublicIds,
    /// The approval request being created (Queue) or executed (Commit after approval).
    pub pending_action_id: Option<&'a str>,
}

pub(crate) struct Outcome {
    pub result: Value,
    /// The customer acted on, recorded on the ledger row.
    pub customer_id: Option<String>,
    /// Real-time message to publish once the invocation has committed.
    pub stream: Option<StreamMessage>,
    /// A provider call to make once this transaction has committed (outbound actions).
    pub dispatch: Option<Dispatch>,
}

impl Outcome {
    fn of(result: Value, customer_id: Option<String>) -> Outcome {
        Outcome {
            result,
            customer_id,
            stream: None,
            dispatch: None,
        }
    }
}

/// Input checks beyond the JSON schema that belong to "input validity" (before the quota):
/// for events.ingest, the ingestion pipeline's own validation (timestamp, sizes, identity).
pub(super) fn prevalidate(
    ids: &PublicIds,
    c: Capability,
    input: &Value,
    now: OffsetDateTime,
) -> Result<()> {
    match c {
        Capability::EventsIngest => valid_event(ids, input, now).map(|_| ()),
        _ => Ok(()),
    }
}

/// Runs capability `c` as far as `phase` goes.
pub(crate) fn run(
    c: Capability,
    phase: Phase,
    w: &mut WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    input: &Value,
) -> Result<Outcome> {
    let commit = phase == Phase::Commit;
    match c {
        Capability::ContextGet => {
            let reference = str_field(input, "customer").unwrap_or_default();
            let (result, id) = crm::context::get(ctx.ids, w, reference, ctx.now)?;
            Ok(Outcome::of(result, Some(id)))
        }
        Capability::AccountGet => account_get(w, ctx),
        Capability::EventsIngest => events_ingest(w, ctx, input, commit),
        Capability::MemoryWrite => {
            let (result, id) =
                crm::memory::write(ctx.ids, w, ctx.key, ctx.request_id, input, commit, ctx.now)?;
            Ok(Outcome::of(result, Some(id)))
        }
        Capability::ScoreChurn | Capability::ScoreConversion => {
            let which = if c == Capability::ScoreChurn {
                scoring::Which::Churn
            } else {
                scoring::Which::Conversion
            };
            // A committed score refreshes the customers' score properties (derived data; a
            // read-only workspace keeps its graph as it is).
            let write_back = commit && !ctx.settings.read_only;
            let (result, id) = scoring::invoke::run(ctx.ids, w, which, input, write_back, ctx.now)?;
            Ok(Outcome::of(result, id))
        }
        Capability::PlanGoal => {
            let customer = match str_field(input, "customer") {
                Some(r) => Some(crm::find_customer(ctx.ids, w, r)?),
                None => None,
            };
            let brand = brand::load_in(w, ctx.sealer)?;
            let means = planning::Means {
                remaining_credits: ctx
                    .budget
                    .limit
                    .saturating_sub(ctx.budget.used().saturating_add(ctx.cost)),
                auto_run: ctx.key.auto_run,
                auto_approve: ctx.settings.policy.auto_approve.clone(),
            };
            let result = planning::plan(
                ctx.ids,
                w,
                &brand,
                customer.as_ref(),
                input,
                ctx.now,
                &means,
            )?;
            Ok(Outcome::of(
                result,
                customer.map(|n| ctx.ids.customer(n.id)),
            ))
        }
        Capability::DraftOutreach => {
            let customer = customer_of(ctx.ids, w, input)?;
            let brand = brand::load_in(w, ctx.sealer)?;
            let result =
                svc_domains::outreach::draft::draft(ctx.ids, w, &brand, &customer, input, ctx.now)?;
            Ok(Outcome::of(result, Some(ctx.ids.customer(customer.id))))
        }
        Capability::QueueOutreach | Capability::ExecuteOutreach => {
            outbound::email(phase, w, ctx, c, input)
        }
        Capability::QueueCall | Capability::ExecuteCall => outbound::call(phase, w, ctx, c, input),
        Capability::CioWrite => outbound::cio(phase, w, ctx, c, input),
        Capability::CrmMutate => {
            let (result, id) = crm::mutate::mutate(ctx.ids, w, input, commit)?;
            Ok(Outcome::of(result, Some(id)))
        }
        Capability::ReportGenerate => {
            let result = reports::generate(w, ctx.request_id, &ctx.key.id, input, commit, ctx.now)?;
            Ok(Outcome::of(result, None))
        }
    }
}

/// Runs an approved request's queued outbound record (what the approver saw is what is sent),
/// or `None` when the request queued no outbound record (crm.mutate, cio.write without one).
pub(crate) fn run_queued_record(
    w: &mut WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    record: OutboundRecord,
) -> Result<Outcome> {
    outbound::send_queued(w, ctx, record)
}

fn customer_of(
    ids: &PublicIds,
    w: &WorkspaceTxn<'_, '_>,
    input: &Value,
) -> Result<svc_engine::Node> {
    crm::find_customer(ids, w, str_field(input, "customer").unwrap_or_default())
}

/// The gateway input as the ingestion pipeline's event (the schema already fixed its shape).
fn valid_event(ids: &PublicIds, input: &Value, now: OffsetDateTime) -> Result<ValidEvent> {
    let event: MarketingEvent = serde_json::from_value(input.clone())
        .map_err(|e| Error::invalid_input(format!("input: {e}")))?;
    event.validate(ids, now)
}

/// events.ingest through the one ingestion pipeline, inside this invocation's transaction: the
/// event, its touchpoint and the ledger row commit in one batch.
fn events_ingest(
    w: &mut WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    input: &Value,
    commit: bool,
) -> Result<Outcome> {
    let ev = valid_event(ctx.ids, input, ctx.now)?;
    if !commit {
        let keys = &ev.input.keys;
        return Ok(Outcome::of(
            json!({
                "would_ingest": ev.event_name(),
                "timestamp": crm::micros_rfc3339(ev.input.ts),
                "channel": ev.input.channel,
                "identity": {
                    "customer_id": keys.customer_id.map(|c| ctx.ids.customer(c)),
                    "email": keys.email,
                    "phone": keys.phone,
                    "external_id": keys.external_id,
                },
            }),
            None,
        ));
    }
    let r = events::apply(ctx.ids, w, &ev, ctx.now)?;
    let stream = events::stream_message(&ev, &r);
    Ok(Outcome {
        result: json!({
            "customer_id": r.customer_id,
            "touchpoint_id": r.touchpoint_id,
            "is_new": r.is_new,
            "nodes_mutated": r.nodes_mutated,
            "received_at": r.received_at,
        }),
        customer_id: Some(r.customer_id),
        stream,
        dispatch: None,
    })
}

/// account.get: the account as the calling key sees it, once this invocation's charge counts.
fn account_get(w: &mut WorkspaceTxn<'_, '_>, ctx: &Ctx<'_>) -> Result<Outcome> {
    let key = ctx.key;
    let used_after = |u: u64| u.saturating_add(ctx.cost);
    let quota_used = used_after(ctx.budget.used());
    let count = |label: &str| -> Result<u64> { Ok(w.label_count(label)?) };
    let result = json!({
        "workspace_id": workspaces::render_id(key.workspace_id()),
        "workspace_name": ctx.workspace.name,
        "plan": ctx.settings.plan.as_str(),
        "read_only": ctx.settings.read_only,
        "month": ctx.budget.month,
        "quota": {
            "plan": ctx.budget.plan,
            "limit": ctx.budget.limit,
            "used": quota_used,
            "remaining": ctx.budget.limit.saturating_sub(quota_used),
        },
        "workspace_credits_used": used_after(ctx.budget.workspace_used),
        "key": {
            "id": key.id,
            "agent": key.agent,
            "grants": key.grants,
            "allowed_modes": key.allowed_modes,
            "auto_run": key.auto_run,
            "quota_override_monthly": key.quota_override_monthly,
            "credits_used": used_after(ctx.budget.key_used),
        },
        "counts": {
            "customers": count(svc_engine::schema::CUSTOMER)?,
            "touchpoints": count(svc_engine::schema::TOUCHPOINT)?,
            "campaigns": count("Campaign")?,
            "opportunities": count("Opportunity")?,
        },
    });
    Ok(Outcome::of(result, None))
}
