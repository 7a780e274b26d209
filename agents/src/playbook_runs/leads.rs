//! A run's leads: one `playbook_run_lead` record per customer the run takes, keyed
//! `<playbook id>/<run id>/<sequence>` (zero-padded, so a prefix scan lists them in the order
//! they are worked) and indexed by `<playbook id>/<run id>/<customer id>` (a customer is taken
//! once per run). The executor advances the run's cursor (`plan.nextLead`) over them.

use serde::{Deserialize, Serialize};

use svc_core::error::Result;
use svc_core::store::{Record, RecordScan, Store, WorkspaceId};

/// Lead statuses.
pub mod status {
    /// Not worked yet.
    pub const PENDING: &str = "pending";
    /// Its variant and channel are fixed and its outreach is under way (a restart replays the
    /// same invocations with the same idempotency keys: nothing is queued twice).
    pub const WORKING: &str = "working";
    /// Outreach queued for approval (`pendingActionId`).
    pub const QUEUED: &str = "queued";
    /// Outreach taken by the provider.
    pub const SENT: &str = "sent";
    /// Not contacted: `code` and `reason` say why (suppressed, capped, unknown customer).
    pub const SKIPPED: &str = "skipped";
    /// The outreach failed (`code`, `reason`).
    pub const FAILED: &str = "failed";
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunLead {
    pub playbook_id: String,
    pub run_id: String,
    /// 0-based position in the run.
    pub seq: u32,
    /// The reference as the source gave it (a customer id, email, phone or external id).
    pub reference: String,
    /// The customer it resolved to; absent when none matched.
    pub customer_id: Option<String>,
    /// `pending`, `working`, `queued`, `sent`, `skipped` or `failed`.
    pub status: String,
    /// Error code of a skip or failure (`customer_suppressed`, `frequency_capped`,
    /// `not_found`, `capability_failed`, ...).
    pub code: Option<String>,
    pub reason: Option<String>,
    /// The tone variant and channel this lead was worked with.
    pub variant: Option<String>,
    pub channel: Option<String>,
    /// The capability that carried the outreach (`queue.outreach`, `execute.outreach`, ...).
    pub capability: Option<String>,
    /// Request id of the draft (`draft.outreach`) and of the outreach; receipts at
    /// `/api/v1/capabilities/actions/{request_id}`.
    pub draft_request_id: Option<String>,
    pub request_id: Option<String>,
    pub pending_action_id: Option<String>,
    /// Credits the lead's invocations charged.
    pub credits: u64,
    pub updated_at: String,
    /// The principal the lead is worked as, set when it starts (`int_campaign`). Absent on
    /// leads started before runs acted as the campaign buddy's internal principal: such a lead
    /// under way finishes as `key_buddy_campaign` (see `principal::key_for_lead`).
    #[serde(
        default,
        skip_serializing_if = "svc_engine::record_encoding::skip_none_in_json"
    )]
    pub key_id: Option<String>,
}

impl Record for RunLead {
    const KIND: &'static str = "playbook_run_lead";
    fn id(&self) -> String {
        lead_key(&self.playbook_id, &self.run_id, self.seq)
    }
    fn indexes(&self) -> Vec<(&'static str, String)> {
        match &self.customer_id {
            Some(c) => vec![("customer", customer_key(&self.playbook_id, &self.run_id, c))],
            None => Vec::new(),
        }
    }
}

pub fn lead_key(playbook_id: &str, run_id: &str, seq: u32) -> String {
    format!("{playbook_id}/{run_id}/{seq:06}")
}

pub fn customer_key(playbook_id: &str, run_id: &str, customer_id: &str) -> String {
    format!("{playbook_id}/{run_id}/{customer_id}")
}

impl RunLead {
    pub fn new(
        playbook_id: &str,
        run_id: &str,
        seq: u32,
        reference: String,
        customer_id: Option<String>,
        now: &str,
    ) -> RunLead {
        let unknown = customer_id.is_none();
        RunLead {
            playbook_id: playbook_id.to_owned(),
            run_id: run_id.to_owned(),
            seq,
            reference,
            customer_id,
            status: if unknown {
                status::SKIPPED
            } else {
                status::PENDING
            }
            .into(),
            code: unknown.then(|| "not_found".to_owned()),
            reason: unknown.then(|| "no customer matches the reference".to_owned()),
            key_id: None,
            variant: None,
            channel: None,
            capability: None,
            draft_request_id: None,
            request_id: None,
            pending_action_id: None,
            credits: 0,
            updated_at: now.to_owned(),
        }
    }

    pub fn is_done(&self) -> bool {
        ![status::PENDING, status::WORKING].contains(&self.status.as_str())
    }
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct LeadList {
    /// In the order they are worked.
    pub leads: Vec<RunLead>,
}

/// Every lead of a run, in order (at most `sampleSize`, 5000).
pub async fn list(
    store: &Store,
    ws: WorkspaceId,
    playbook_id: &str,
    run_id: &str,
) -> Result<LeadList> {
    let leads = store
        .scan::<RunLead>(
            ws,
            RecordScan {
                prefix: format!("{playbook_id}/{run_id}/"),
                ..RecordScan::default()
            },
        )
        .await?;
    Ok(LeadList { leads })
}

pub async fn get(
    store: &Store,
    ws: WorkspaceId,
    playbook_id: &str,
    run_id: &str,
    seq: u32,
) -> Result<Option<RunLead>> {
    store
        .get::<RunLead>(ws, lead_key(playbook_id, run_id, seq))
        .await
}
