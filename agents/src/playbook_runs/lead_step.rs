//! Working one lead of a run: fix its variant and channel, check consent, the weekly cap and
//! the credits before anything is charged, draft the message (`draft.outreach`) and queue or
//! send it (`queue.outreach` / `execute.outreach`, or `queue.call` / `execute.call` on the call
//! channel) through `gateway::invoke` as the campaign buddy, with source `internal`.
//!
//! Idempotency keys are `pbrun:<run id>:<customer id>:<step>` (`draft`, `email`, `call`): a
//! lead interrupted by a restart replays the same invocations with the same inputs (its
//! variant and channel were recorded before the first one) and gets the stored answers, so
//! nothing is queued or charged twice.

use serde_json::{json, Value};

use super::leads::{status as lead_status, RunLead};
use super::run_plan::{self, Delivery, RunError, RunPlan, CHANNEL_CALL};
use super::runs::{run_key, PlaybookRun};
use crate::agent_state::AgentState;
use svc_core::capabilities::Capability;
use svc_core::error::{Code, Error, Result};
use svc_core::keys::AgentKey;
use svc_core::ledger;
use svc_core::plumbing::clock;
use svc_core::plumbing::ids;
use svc_core::store::WorkspaceId;
use svc_core::workspaces::{WorkspaceSettings, SETTINGS_ID};
use svc_domains::crm;
use svc_domains::outbound::consent;
use svc_gateway::{self as gateway, Envelope, InvokeRequest};

/// The `source` of the runs' invocations (ledger rows and receipts show it).
pub const SOURCE: &str = "internal";

/// How working a lead ended.
#[derive(Debug)]
pub enum LeadOutcome {
    /// The lead is done (queued, sent, skipped or failed); record it and go on.
    Done(Box<RunLead>),
    /// The credits cannot pay for the lead: the run stops `blocked_credits`.
    BlockCredits(RunError),
    /// The run cannot go on (integration, read-only, policy, grants): it stops `failed`.
    Fail(RunError),
    /// Try the lead again a little later (its idempotency key is still in flight).
    Retry,
    /// The run stopped running before the lead was started.
    Stopped,
}

fn run_error(e: &Error) -> RunError {
    RunError {
        code: e.code.as_str().to_owned(),
        message: e.message.clone(),
    }
}

/// The lead ends with `status`, carrying the error's code and message as its reason.
fn finished(mut lead: RunLead, status: &str, e: Option<&Error>) -> LeadOutcome {
    lead.status = status.to_owned();
    if let Some(e) = e {
        lead.code = Some(e.code.as_str().to_owned());
        lead.reason = Some(e.message.clone());
    }
    lead.updated_at = clock::now_rfc3339();
    LeadOutcome::Done(Box::new(lead))
}

/// What an invocation's error means for the lead and the run.
fn classify(lead: RunLead, e: Error) -> Result<LeadOutcome> {
    Ok(match e.code {
        Code::CustomerSuppressed | Code::FrequencyCapped | Code::NotFound => {
            finished(lead, lead_status::SKIPPED, Some(&e))
        }
        Code::QuotaExceeded => LeadOutcome::BlockCredits(run_error(&e)),
        Code::IntegrationNotConnected
        | Code::ReadOnlyWorkspace
        | Code::PolicyForbid
        | Code::GrantDenied
        | Code::ModeDenied
        | Code::ApprovalRequired
        | Code::Forbidden => LeadOutcome::Fail(run_error(&e)),
        Code::IdempotencyInFlight => LeadOutcome::Retry,
        // The store is closing: leave the lead as it is; the next start resumes it.
        Code::Unavailable => return Err(e),
        _ => finished(lead, lead_status::FAILED, Some(&e)),
    })
}

/// The capability that carries a lead's outreach on `channel` with `delivery`, and its mode.
pub fn send_capability(channel: &str, delivery: Delivery) -> (Capability, &'static str) {
    match (channel == CHANNEL_CALL, delivery) {
        (false, Delivery::Queue) => (Capability::QueueOutreach, "queue"),
        (false, Delivery::Execute) => (Capability::ExecuteOutreach, "execute"),
        (true, Delivery::Queue) => (Capability::QueueCall, "queue"),
        (true, Delivery::Execute) => (Capability::ExecuteCall, "execute"),
    }
}

fn cost_of(c: Capability) -> u64 {
    gateway::registry::get(c.id()).map_or(0, |e| e.descriptor.action_credit_cost)
}

/// Credits one lead costs: the draft and the outreach.
pub fn lead_cost(channel: &str, delivery: Delivery) -> u64 {
    cost_of(Capability::DraftOutreach) + cost_of(send_capability(channel, delivery).0)
}

/// Before anything is charged: the customer exists, may be contacted (consent, weekly cap) and
/// the credits pay for the whole lead. The gateway checks all of it again when it acts.
async fn precheck(
    state: &AgentState,
    key: &AgentKey,
    customer_id: &str,
    cost: u64,
) -> Result<std::result::Result<(), Error>> {
    let ws = key.workspace_id();
    let key = key.clone();
    let customer_id = customer_id.to_owned();
    let ids = state.gateway.store.ids().clone();
    state
        .gateway
        .store
        .write(move |tx| {
            let settings = tx
                .get::<WorkspaceSettings>(ws, SETTINGS_ID)?
                .ok_or_else(|| Error::internal(format!("workspace {ws} has no settings")))?;
            let w = tx.workspace(ws);
            let customer = match crm::find_customer(&ids, &w, &customer_id) {
                Ok(c) => c,
                Err(e) if e.code == Code::NotFound => return Ok(Err(e)),
                Err(e) => return Err(e),
            };
            if let Err(e) = consent::ensure_not_suppressed(&ids, &w, &customer).and_then(|_| {
                consent::ensure_under_cap(
                    &w,
                    &ids.customer_references(customer.id),
                    settings.policy.max_outreach_per_customer_per_week,
                    clock::now(),
                    None,
                )
            }) {
                return Ok(Err(e));
            }
            let budget = ledger::budget(&w, &settings, &key, &ledger::current_month())?;
            if !budget.fits(cost) {
                return Ok(Err(ledger::quota_exceeded(&budget, cost)));
            }
            Ok(Ok(()))
        })
        .await
}

/// One invocation as the campaign buddy: the envelope and whether it was a replay.
async fn invoke(
    state: &AgentState,
    key: &AgentKey,
    c: Capability,
    mode: &str,
    idempotency_key: String,
    input: Value,
) -> Result<(Envelope, bool)> {
    let req = InvokeRequest {
        mode: Some(mode.to_owned()),
        source: Some(SOURCE.to_owned()),
        idempotency_key: Some(idempotency_key),
        input: Some(input),
    };
    let out = gateway::invoke(state, key, c.id(), req, ids::request_id()).await?;
    let envelope: Envelope = serde_json::from_str(&out.body)
        .map_err(|e| Error::internal(format!("reading a {} envelope: {e}", c.id())))?;
    Ok((envelope, out.replayed))
}

fn idempotency_key(run: &PlaybookRun, customer_id: &str, step: &str) -> String {
    format!("pbrun:{}:{customer_id}:{step}", run.id)
}

/// Fixes a pending lead's variant and channel (so a replay after a restart sends the same
/// thing), unless the run stopped running meanwhile.
async fn start_lead(
    state: &AgentState,
    ws: WorkspaceId,
    plan: &RunPlan,
    key_id: &str,
    mut lead: RunLead,
) -> Result<Option<RunLead>> {
    lead.status = lead_status::WORKING.into();
    lead.key_id = Some(key_id.to_owned());
    lead.variant = Some(plan.variant.clone());
    lead.channel = Some(plan.channel.clone());
    lead.updated_at = clock::now_rfc3339();
    let key = run_key(&lead.playbook_id, &lead.run_id);
    state
        .gateway
        .store
        .write(move |tx| {
            let running = tx
                .get::<PlaybookRun>(ws, &key)?
                .is_some_and(|r| r.status == run_plan::status::RUNNING);
            if !running {
                return Ok(None);
            }
            tx.put(ws, &lead)?;
            Ok(Some(lead))
        })
        .await
}

/// Works one lead (pending, or working after a restart) of a running run.
pub async fn work(
    state: &AgentState,
    key: &AgentKey,
    run: &PlaybookRun,
    plan: &RunPlan,
    lead: RunLead,
) -> Result<LeadOutcome> {
    let ws = key.workspace_id();
    let Some(customer_id) = lead.customer_id.clone() else {
        let e = Error::not_found("customer");
        return Ok(finished(lead, lead_status::SKIPPED, Some(&e)));
    };
    let mut lead = if lead.status == lead_status::PENDING {
        let cost = lead_cost(&plan.channel, plan.delivery);
        if let Err(e) = precheck(state, key, &customer_id, cost).await? {
            return classify(lead, e);
        }
        match start_lead(state, ws, plan, &key.id, lead).await? {
            Some(l) => l,
            None => return Ok(LeadOutcome::Stopped),
        }
    } else {
        lead
    };
    let variant = lead.variant.clone().unwrap_or_else(|| plan.variant.clone());
    let channel = lead.channel.clone().unwrap_or_else(|| plan.channel.clone());

    let mut draft_input =
        json!({"customer": customer_id, "intent": plan.intent, "channel": "email"});
    if let Some(tone) = run_plan::tone(&variant) {
        draft_input["tone"] = json!(tone);
    }
    let (draft, replayed) = match invoke(
        state,
        key,
        Capability::DraftOutreach,
        "execute",
        idempotency_key(run, &customer_id, "draft"),
        draft_input,
    )
    .await
    {
        Ok(d) => d,
        Err(e) => return classify(lead, e),
    };
    lead.draft_request_id = Some(draft.request_id.clone());
    if !replayed {
        lead.credits += draft.action_credit_cost;
    }
    let subject = draft.result["subject"]
        .as_str()
        .unwrap_or(plan.intent.as_str())
        .to_owned();
    let body = draft.result["body_text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    let (capability, mode) = send_capability(&channel, plan.delivery);
    let input = if channel == CHANNEL_CALL {
        json!({"customer": customer_id, "script": body, "objective": plan.intent})
    } else {
        json!({"customer": customer_id, "subject": subject, "body": body})
    };
    lead.capability = Some(capability.id().to_owned());
    let (sent, replayed) = match invoke(
        state,
        key,
        capability,
        mode,
        idempotency_key(run, &customer_id, &channel),
        input,
    )
    .await
    {
        Ok(s) => s,
        Err(e) => return classify(lead, e),
    };
    lead.request_id = Some(sent.request_id.clone());
    lead.pending_action_id = sent.pending_action_id.clone();
    if !replayed {
        lead.credits += sent.action_credit_cost;
    }
    let delivered = sent.result["state"].as_str().unwrap_or_default();
    Ok(match sent.status.as_str() {
        "queued" => finished(lead, lead_status::QUEUED, None),
        _ if delivered == "failed" => {
            lead.code = Some(Code::CapabilityFailed.as_str().to_owned());
            lead.reason = Some(format!(
                "the provider did not take the message: {}",
                sent.result["error"]
            ));
            finished(lead, lead_status::FAILED, None)
        }
        _ if delivered == "unknown" => {
            // The service stopped while the provider had the message (outbound recovery):
            // it may have been sent, and it is never sent again by itself.
            lead.code = Some("outcome_unknown".to_owned());
            lead.reason = Some(
                "the service stopped while the provider had the message; it may or may not \
                 have been sent and is not retried"
                    .to_owned(),
            );
            finished(lead, lead_status::FAILED, None)
        }
        _ => finished(lead, lead_status::SENT, None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_and_costs_follow_channel_and_delivery() {
        assert_eq!(
            send_capability("email", Delivery::Queue).0,
            Capability::QueueOutreach
        );
        assert_eq!(
            send_capability("call", Delivery::Execute),
            (Capability::ExecuteCall, "execute")
        );
        // draft.outreach 2 + queue.outreach 3.
        assert_eq!(lead_cost("email", Delivery::Queue), 5);
    }
}
