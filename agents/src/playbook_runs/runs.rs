//! Playbook runs (SPEC.md "PlaybookRun"): the record, listing and reading. Outcomes and
//! adaptation are [`super::outcomes`].
//!
//! A run is a `playbook_run` record keyed `<playbook id>/<run id>` with time-ordered run ids, so
//! a prefix scan lists a playbook's runs in start order. Deleting a playbook leaves its runs in
//! place: they are kept as the record of what ran, readable by id, but no longer listed.
//!
//! Outcomes are kept per hour (and per pivot epoch) for the last 91 days, which bounds a run's
//! record while covering the longest `pivotWindowDays` (90).
//!
//! Runs started since the executor exists carry a `plan` (see [`super::run_plan`] and
//! [`super::executor`]); a pivot of such a run also changes its plan (variant, channel or
//! cadence), recorded on the pivot as `change`.

use serde::{Deserialize, Serialize};

use super::attribution::Attributed;
use super::judge::{self, Decision};
use super::run_plan::{self, PivotChange, RunPlan};
use svc_core::error::{Error, Result};
use svc_core::plumbing::paging;
use svc_core::store::{Record, RecordScan, Store, WorkspaceId};

/// Largest `samples` one outcome report may carry.
pub const MAX_SAMPLES_PER_REPORT: u64 = 1_000_000;
/// Largest `value` one outcome report may carry (base currency).
pub const MAX_VALUE_PER_REPORT: f64 = 1e12;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunMetrics {
    pub samples: u64,
    pub successes: u64,
    /// In the unit of the spec's `successMetric`: successes per sample for rates, the value
    /// total for `pipeline_arr`.
    pub metric_value: f64,
    /// Sum of the reported `value`s (base currency).
    pub value: f64,
}

/// One adaptation decision that changed course.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pivot {
    pub at: String,
    pub reason: String,
    /// Who decided: `builtin-statistical` or a model's name (see `playbooks::judge`).
    pub judge: String,
    /// `statistical` or `model`.
    #[serde(default = "statistical")]
    pub judged_by: String,
    /// Why a model that was asked did not decide (the statistical judge did).
    #[serde(
        default,
        skip_serializing_if = "svc_engine::record_encoding::skip_none_in_json"
    )]
    pub fallback_reason: Option<String>,
    /// The spec's `adaptation.judgeModel` when one was set.
    pub requested_judge_model: Option<String>,
    pub metric_value: f64,
    pub samples: u64,
    pub successes: u64,
    pub window_days: u32,
    /// What the pivot changed in an executing run (absent for runs without a plan).
    #[serde(
        default,
        skip_serializing_if = "svc_engine::record_encoding::skip_none_in_json"
    )]
    pub change: Option<PivotChange>,
}

fn statistical() -> String {
    judge::JUDGED_BY_STATISTICAL.to_owned()
}

/// The latest time the connected model was asked to judge the run and could not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct JudgeFallback {
    pub at: String,
    pub model: String,
    /// `provider_timeout: ...`, `provider_error: ...` or `invalid_answer: ...`.
    pub reason: String,
}

/// Outcomes reported within one hour since the run's latest pivot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeBucket {
    /// Start of the hour, RFC 3339 UTC.
    pub hour: String,
    pub hour_unix: i64,
    /// Number of pivots before these outcomes.
    pub epoch: usize,
    pub samples: u64,
    pub successes: u64,
    pub value: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlaybookRun {
    /// `run_...`, time-ordered.
    pub id: String,
    pub playbook_id: String,
    /// `running`, `paused`, `cancelled`, `completed`, `blocked_credits` or `failed` (see
    /// `playbooks::run_plan::status`).
    pub status: String,
    pub started_at: String,
    pub started_by: String,
    pub metrics: RunMetrics,
    pub pivots: Vec<Pivot>,
    /// Outcome reports per hour, last 91 days.
    pub outcomes: Vec<OutcomeBucket>,
    /// Totals of campaign-attributed events already folded into the run (see `attribution`).
    #[serde(default)]
    pub synced: Attributed,
    /// The executor's plan and progress; absent on runs recorded before the executor existed
    /// (those only record outcomes).
    #[serde(
        default,
        skip_serializing_if = "svc_engine::record_encoding::skip_none_in_json"
    )]
    pub plan: Option<RunPlan>,
    /// Set when the connected model could not judge (the statistical judge did instead).
    #[serde(
        default,
        skip_serializing_if = "svc_engine::record_encoding::skip_none_in_json"
    )]
    pub judge_fallback: Option<JudgeFallback>,
}

impl Record for PlaybookRun {
    const KIND: &'static str = "playbook_run";
    fn id(&self) -> String {
        format!("{}/{}", self.playbook_id, self.id)
    }
    /// `active` lists the runs the executor must drive (resumed at start-up).
    fn indexes(&self) -> Vec<(&'static str, String)> {
        if self.plan.is_some() && self.status == run_plan::status::RUNNING {
            vec![("active", "running".to_owned())]
        } else {
            Vec::new()
        }
    }
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct RunList {
    /// One page, in the order asked for (by default by `startedAt`, oldest first).
    pub runs: Vec<PlaybookRun>,
    /// Runs of the playbook matching the filter, in all.
    pub total: usize,
    pub offset: usize,
    pub limit: usize,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct RunEnvelope {
    pub run: PlaybookRun,
}

/// Body of `POST /v1/playbooks/:id/runs/:run_id/outcomes`.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
pub struct OutcomeReport {
    /// Leads worked since the last report (0 to 1,000,000).
    pub samples: u64,
    /// How many of them succeeded by the spec's metric (at most `samples`).
    pub successes: u64,
    /// Pipeline value sourced (base currency, for `pipeline_arr`), at least 0.
    #[serde(default)]
    pub value: Option<f64>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct OutcomeResult {
    pub run: PlaybookRun,
    /// The judge's decision on this report (a pivot is also appended to `run.pivots`).
    pub decision: Decision,
}

impl OutcomeReport {
    pub(super) fn validate(&self) -> Result<f64> {
        if self.samples > MAX_SAMPLES_PER_REPORT {
            return Err(Error::invalid_field(
                "samples",
                &self.samples.to_string(),
                &format!("at most {MAX_SAMPLES_PER_REPORT} per report"),
            ));
        }
        if self.successes > self.samples {
            return Err(Error::invalid_field(
                "successes",
                &self.successes.to_string(),
                "must not exceed samples",
            ));
        }
        let value = self.value.unwrap_or(0.0);
        if !(value.is_finite() && (0.0..=MAX_VALUE_PER_REPORT).contains(&value)) {
            return Err(Error::invalid_field(
                "value",
                &value.to_string(),
                "must be a number from 0 to 1e12",
            ));
        }
        Ok(value)
    }
}

pub fn run_key(playbook_id: &str, run_id: &str) -> String {
    format!("{playbook_id}/{run_id}")
}

/// Every run the executor must drive (status `running`, with a plan), across the workspace.
pub async fn active(store: &Store, ws: WorkspaceId) -> Result<Vec<PlaybookRun>> {
    store.find::<PlaybookRun>(ws, "active", "running").await
}

/// One page of the runs of an existing playbook (see [`RunQuery`]).
pub async fn list(
    store: &Store,
    ws: WorkspaceId,
    playbook_id: &str,
    q: &RunQuery,
) -> Result<RunList> {
    svc_domains::playbooks::get(store, ws, playbook_id).await?;
    let runs = store
        .scan::<PlaybookRun>(
            ws,
            RecordScan {
                prefix: format!("{playbook_id}/"),
                ..RecordScan::default()
            },
        )
        .await?;
    Ok(page_of(runs, q))
}

/// One run by id, also after its playbook was deleted.
pub async fn get(
    store: &Store,
    ws: WorkspaceId,
    playbook_id: &str,
    run_id: &str,
) -> Result<PlaybookRun> {
    store
        .get::<PlaybookRun>(ws, run_key(playbook_id, run_id))
        .await?
        .ok_or_else(|| Error::not_found("playbook run"))
}

/// Largest page of runs.
pub const RUNS_PAGE_MAX: usize = 500;
/// The page size when none is asked for.
pub const RUNS_PAGE_DEFAULT: usize = 100;

/// The column runs are sorted by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunSort {
    /// `startedAt` (the default), ties by id.
    #[default]
    Started,
    Status,
    /// Outcomes reported: samples, then successes.
    Samples,
    Successes,
}

impl RunSort {
    pub fn parse(s: &str) -> Option<RunSort> {
        Some(match s {
            "started" | "started_at" | "startedAt" => RunSort::Started,
            "status" => RunSort::Status,
            "samples" => RunSort::Samples,
            "successes" => RunSort::Successes,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RunSort::Started => "started",
            RunSort::Status => "status",
            RunSort::Samples => "samples",
            RunSort::Successes => "successes",
        }
    }
}

/// Which runs of a playbook to list. `Default` is the historical order: oldest first.
#[derive(Clone, Debug, PartialEq)]
pub struct RunQuery {
    pub sort: RunSort,
    pub ascending: bool,
    /// Only runs with this status.
    pub status: Option<String>,
    pub offset: usize,
    /// 1..=[`RUNS_PAGE_MAX`] (0 means [`RUNS_PAGE_DEFAULT`]).
    pub limit: usize,
}

impl Default for RunQuery {
    fn default() -> Self {
        RunQuery {
            sort: RunSort::Started,
            ascending: true,
            status: None,
            offset: 0,
            limit: RUNS_PAGE_DEFAULT,
        }
    }
}

impl RunQuery {
    /// `sort` (`started`, `status`, `samples`, `successes`), `order` (`asc` default, `desc`),
    /// `status` (a run status), `offset`, `limit`; unknown names are ignored.
    pub fn from_params<'p>(params: impl IntoIterator<Item = (&'p str, &'p str)>) -> Result<Self> {
        let mut q = RunQuery::default();
        for (name, value) in params {
            let value = value.trim();
            match name {
                "sort" => {
                    q.sort = RunSort::parse(value).ok_or_else(|| {
                        Error::invalid_field(
                            name,
                            value,
                            "one of started, status, samples, successes",
                        )
                    })?
                }
                "order" | "dir" => q.ascending = paging::ascending(name, value)?,
                "status" => {
                    if !run_plan::status::ALL.contains(&value) {
                        return Err(Error::invalid_field(
                            name,
                            value,
                            &format!("one of {}", run_plan::status::ALL.join(", ")),
                        ));
                    }
                    q.status = Some(value.to_owned());
                }
                "offset" => q.offset = paging::offset(name, value)?,
                "limit" => q.limit = paging::limit(name, value, RUNS_PAGE_MAX)?,
                _ => {}
            }
        }
        Ok(q)
    }
}

/// Sorts, filters and pages a playbook's runs.
pub fn page_of(mut runs: Vec<PlaybookRun>, q: &RunQuery) -> RunList {
    if let Some(s) = &q.status {
        runs.retain(|r| &r.status == s);
    }
    runs.sort_by(|a, b| {
        let by = match q.sort {
            RunSort::Started => a.started_at.cmp(&b.started_at),
            RunSort::Status => a.status.cmp(&b.status),
            RunSort::Samples => (a.metrics.samples, a.metrics.successes)
                .cmp(&(b.metrics.samples, b.metrics.successes)),
            RunSort::Successes => a.metrics.successes.cmp(&b.metrics.successes),
        };
        let by = if q.ascending { by } else { by.reverse() };
        by.then_with(|| a.started_at.cmp(&b.started_at))
            .then_with(|| a.id.cmp(&b.id))
    });
    let limit = if q.limit == 0 {
        RUNS_PAGE_DEFAULT
    } else {
        q.limit.min(RUNS_PAGE_MAX)
    };
    let total = runs.len();
    RunList {
        runs: paging::window(runs, q.offset, limit),
        total,
        offset: q.offset,
        limit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(i: u64, status: &str) -> PlaybookRun {
        PlaybookRun {
            id: format!("run_{i:03}"),
            playbook_id: "pb_1".into(),
            status: status.into(),
            started_at: format!("2026-01-01T00:{:02}:00Z", i),
            started_by: "usr_1".into(),
            metrics: RunMetrics {
                samples: i % 7,
                successes: i % 3,
                ..RunMetrics::default()
            },
            pivots: Vec::new(),
            outcomes: Vec::new(),
            synced: Attributed::default(),
            plan: None,
            judge_fallback: None,
        }
    }

    #[test]
    fn runs_are_filtered_sorted_and_paged_with_the_total() {
        let runs: Vec<PlaybookRun> = (0..45)
            .map(|i| run(i, if i % 5 == 0 { "cancelled" } else { "completed" }))
            .collect();
        let oldest = page_of(runs.clone(), &RunQuery::default());
        assert_eq!((oldest.total, oldest.runs.len()), (45, 45));
        assert_eq!(oldest.runs[0].id, "run_000");
        let newest = page_of(
            runs.clone(),
            &RunQuery::from_params([("order", "desc"), ("limit", "10"), ("offset", "10")])
                .expect("q"),
        );
        assert_eq!((newest.total, newest.runs.len()), (45, 10));
        assert_eq!(newest.runs[0].id, "run_034");
        let cancelled = page_of(
            runs.clone(),
            &RunQuery::from_params([("status", "cancelled")]).expect("q"),
        );
        assert_eq!(cancelled.total, 9);
        let by_samples = page_of(
            runs,
            &RunQuery::from_params([("sort", "samples"), ("order", "desc")]).expect("q"),
        );
        let samples: Vec<u64> = by_samples.runs.iter().map(|r| r.metrics.samples).collect();
        assert!(samples.windows(2).all(|w| w[0] >= w[1]));
        for bad in [
            ("status", ""),
            ("status", "done"),
            ("sort", "x"),
            ("limit", "501"),
            ("offset", "x"),
        ] {
            assert!(RunQuery::from_params([bad]).is_err(), "{bad:?}");
        }
    }
}
