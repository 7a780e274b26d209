//! A run's leads: one `playbook_run_lead` record per customer the run takes, keyed
//! `<playbook id>/<run id>/<sequence>` (zero-padded, so a prefix scan lists them in the order
//! they are worked) and indexed by `<playbook id>/<run id>/<customer id>` (a customer is taken
//! once per run). The executor advances the run's cursor (`plan.nextLead`) over them.

use serde::{Deserialize, Serialize};

use svc_core::error::{Error, Result};
use svc_core::plumbing::paging;
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
    /// One page, in the order asked for (by default the order they are worked).
    pub leads: Vec<RunLead>,
    /// Leads of the run matching the search and filter, in all.
    pub total: usize,
    pub offset: usize,
    pub limit: usize,
}

/// Largest page of leads.
pub const LEADS_PAGE_MAX: usize = 500;
/// The page size when none is asked for.
pub const LEADS_PAGE_DEFAULT: usize = 100;
/// Longest search text.
pub const LEADS_QUERY_MAX: usize = 200;

/// Every lead status, for the `status` filter.
pub const STATUSES: [&str; 6] = [
    status::PENDING,
    status::WORKING,
    status::QUEUED,
    status::SENT,
    status::SKIPPED,
    status::FAILED,
];

/// The column leads are sorted by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LeadSort {
    /// Position in the run (the default).
    #[default]
    Seq,
    Status,
    /// `updatedAt`.
    Updated,
    Reference,
    Credits,
}

impl LeadSort {
    pub fn parse(s: &str) -> Option<LeadSort> {
        Some(match s {
            "seq" => LeadSort::Seq,
            "status" => LeadSort::Status,
            "updated" | "updated_at" | "updatedAt" => LeadSort::Updated,
            "reference" => LeadSort::Reference,
            "credits" => LeadSort::Credits,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LeadSort::Seq => "seq",
            LeadSort::Status => "status",
            LeadSort::Updated => "updated",
            LeadSort::Reference => "reference",
            LeadSort::Credits => "credits",
        }
    }
}

/// Which leads of a run to list. `Default`: the first page in the order they are worked.
#[derive(Clone, Debug, PartialEq)]
pub struct LeadQuery {
    /// Case-insensitive text in the reference or the customer id.
    pub q: String,
    pub status: Option<String>,
    pub sort: LeadSort,
    pub ascending: bool,
    pub offset: usize,
    pub limit: usize,
}

impl Default for LeadQuery {
    fn default() -> Self {
        LeadQuery {
            q: String::new(),
            status: None,
            sort: LeadSort::Seq,
            ascending: true,
            offset: 0,
            limit: LEADS_PAGE_DEFAULT,
        }
    }
}

impl LeadQuery {
    /// `q`, `status`, `sort` (`seq`, `status`, `updated`, `reference`, `credits`), `order`
    /// (`asc` default, `desc`), `offset`, `limit`; unknown names are ignored.
    pub fn from_params<'p>(params: impl IntoIterator<Item = (&'p str, &'p str)>) -> Result<Self> {
        let mut q = LeadQuery::default();
        for (name, value) in params {
            let value = value.trim();
            match name {
                "q" => q.q = paging::text(name, value, LEADS_QUERY_MAX)?,
                "status" => {
                    if !STATUSES.contains(&value) {
                        return Err(Error::invalid_field(
                            name,
                            value,
                            &format!("one of {}", STATUSES.join(", ")),
                        ));
                    }
                    q.status = Some(value.to_owned());
                }
                "sort" => {
                    q.sort = LeadSort::parse(value).ok_or_else(|| {
                        Error::invalid_field(
                            name,
                            value,
                            "one of seq, status, updated, reference, credits",
                        )
                    })?
                }
                "order" | "dir" => q.ascending = paging::ascending(name, value)?,
                "offset" => q.offset = paging::offset(name, value)?,
                "limit" => q.limit = paging::limit(name, value, LEADS_PAGE_MAX)?,
                _ => {}
            }
        }
        Ok(q)
    }
}

/// Filters, sorts and pages a run's leads (given in run order).
pub fn page_of(mut leads: Vec<RunLead>, q: &LeadQuery) -> LeadList {
    let needle = q.q.to_lowercase();
    leads.retain(|l| {
        q.status.as_ref().is_none_or(|s| &l.status == s)
            && (needle.is_empty()
                || l.reference.to_lowercase().contains(&needle)
                || l.customer_id
                    .as_ref()
                    .is_some_and(|c| c.to_lowercase().contains(&needle)))
    });
    leads.sort_by(|a, b| {
        let by = match q.sort {
            LeadSort::Seq => a.seq.cmp(&b.seq),
            LeadSort::Status => a.status.cmp(&b.status),
            LeadSort::Updated => a.updated_at.cmp(&b.updated_at),
            LeadSort::Reference => a.reference.to_lowercase().cmp(&b.reference.to_lowercase()),
            LeadSort::Credits => a.credits.cmp(&b.credits),
        };
        let by = if q.ascending { by } else { by.reverse() };
        by.then(a.seq.cmp(&b.seq))
    });
    let limit = if q.limit == 0 {
        LEADS_PAGE_DEFAULT
    } else {
        q.limit.min(LEADS_PAGE_MAX)
    };
    let total = leads.len();
    LeadList {
        leads: paging::window(leads, q.offset, limit),
        total,
        offset: q.offset,
        limit,
    }
}

/// One page of a run's leads (a run has at most `sampleSize`, 5000, so they are read whole).
pub async fn list(
    store: &Store,
    ws: WorkspaceId,
    playbook_id: &str,
    run_id: &str,
    q: &LeadQuery,
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
    Ok(page_of(leads, q))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn leads() -> Vec<RunLead> {
        (0..30u32)
            .map(|i| {
                let mut l = RunLead::new(
                    "pb_1",
                    "run_1",
                    i,
                    format!("lead{i}@x.io"),
                    (i % 10 != 0).then(|| format!("cus_{i}")),
                    &format!("2026-01-01T00:00:{:02}Z", 59 - i),
                );
                if l.status == status::PENDING && i % 3 == 0 {
                    l.status = status::SENT.into();
                    l.credits = u64::from(i);
                }
                l
            })
            .collect()
    }

    #[test]
    fn leads_are_filtered_sorted_and_paged_with_the_total() {
        let all = page_of(leads(), &LeadQuery::default());
        assert_eq!((all.total, all.leads.len(), all.limit), (30, 30, 100));
        assert!(all.leads.windows(2).all(|w| w[0].seq < w[1].seq));
        // Skipped (no customer): 0, 10, 20; sent: multiples of 3 that are not of 10.
        let skipped = page_of(
            leads(),
            &LeadQuery::from_params([("status", "skipped")]).expect("q"),
        );
        assert_eq!(skipped.total, 3);
        let sent = page_of(
            leads(),
            &LeadQuery::from_params([("status", "sent"), ("sort", "credits"), ("order", "desc")])
                .expect("q"),
        );
        let credits: Vec<u64> = sent.leads.iter().map(|l| l.credits).collect();
        assert_eq!(credits, [27, 24, 21, 18, 15, 12, 9, 6, 3]);
        let page = page_of(
            leads(),
            &LeadQuery::from_params([("sort", "updated"), ("offset", "10"), ("limit", "5")])
                .expect("q"),
        );
        // Updated earliest first: lead 29 was updated first.
        let seqs: Vec<u32> = page.leads.iter().map(|l| l.seq).collect();
        assert_eq!((page.total, seqs), (30, vec![19, 18, 17, 16, 15]));
        let found = page_of(
            leads(),
            &LeadQuery::from_params([("q", "LEAD2")]).expect("q"),
        );
        assert_eq!(found.total, 11);
        for bad in [
            ("status", "lost"),
            ("status", ""),
            ("status", ""),
            ("sort", "x"),
            ("limit", "0"),
            ("limit", "501"),
            ("order", "sideways"),
        ] {
            assert!(LeadQuery::from_params([bad]).is_err(), "{bad:?}");
        }
    }
}
