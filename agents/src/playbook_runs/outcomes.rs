//! Outcomes of a run and adaptation: reported outcomes and the outcomes attributed to the
//! playbook's campaign are folded into the run per hour, and the judge (statistical, or the
//! model's: [`super::model_judge`]) decides whether the run pivots.

use time::OffsetDateTime;

use super::attribution;
use super::judge::{self, Decision, Window, DAY_SECS, WEEK_SECS};
use super::model_judge::{self, Judging, Verdict};
use super::run_plan;
use super::runs::{
    run_key, JudgeFallback, OutcomeBucket, OutcomeReport, OutcomeResult, Pivot, PlaybookRun,
};
use svc_core::error::{Error, Result};
use svc_core::plumbing::clock;
use svc_core::store::{Store, Tx, WorkspaceId};
use svc_core::workspaces::ensure_writable;
use svc_domains::playbooks::Playbook;

/// Outcome buckets older than this are dropped (the longest window is 90 days).
const KEEP_SECS: i64 = 91 * DAY_SECS;
const HOUR_SECS: i64 = 60 * 60;

/// Inside a write: refuses a read-only workspace, then loads the (existing) playbook and run.
fn load_for_outcome(
    tx: &mut Tx<'_, '_>,
    ws: WorkspaceId,
    playbook_id: &str,
    run_id: &str,
) -> Result<(Playbook, PlaybookRun)> {
    ensure_writable(tx, ws)?;
    let pb = tx
        .get::<Playbook>(ws, playbook_id)?
        .ok_or_else(|| Error::not_found("playbook"))?;
    let run = tx
        .get::<PlaybookRun>(ws, &run_key(playbook_id, run_id))?
        .ok_or_else(|| Error::not_found("playbook run"))?;
    Ok((pb, run))
}

/// Adds an outcome report to a running run of an existing playbook and lets the judge decide.
pub async fn record_outcome(
    store: &Store,
    ws: WorkspaceId,
    playbook_id: String,
    run_id: String,
    report: OutcomeReport,
    judging: &Judging,
) -> Result<OutcomeResult> {
    let value = report.validate()?;
    let (ids, with_model) = (
        (playbook_id.clone(), run_id.clone()),
        judging.model.is_some(),
    );
    let voice = judging.voice_connected;
    let first = store
        .write(move |tx| {
            let (pb, mut run) = load_for_outcome(tx, ws, &playbook_id, &run_id)?;
            let step = fold_and_judge(&pb, &mut run, &report, value, with_model, voice);
            tx.put(ws, &run)?;
            Ok(step)
        })
        .await?;
    finish(store, ws, ids, judging, first).await
}

/// Folds the events attributed to the playbook's campaign since the run started (and since the
/// last sync) into the run as one outcome report, then lets the judge decide.
pub async fn sync_attributed(
    store: &Store,
    ws: WorkspaceId,
    playbook_id: String,
    run_id: String,
    judging: &Judging,
) -> Result<OutcomeResult> {
    let (ids, with_model) = (
        (playbook_id.clone(), run_id.clone()),
        judging.model.is_some(),
    );
    let voice = judging.voice_connected;
    let first = store
        .write(move |tx| {
            let (pb, mut run) = load_for_outcome(tx, ws, &playbook_id, &run_id)?;
            let since = svc_domains::events::parse_timestamp(&run.started_at)
                .and_then(svc_domains::events::micros)
                .map_err(|e| Error::internal(format!("run {run_id} startedAt: {e}")))?;
            let now = attribution::attributed(
                &tx.workspace(ws),
                &pb.id,
                since,
                pb.strategy.success_metric,
            )?;
            let report = OutcomeReport {
                samples: now.samples.saturating_sub(run.synced.samples),
                successes: now.successes.saturating_sub(run.synced.successes),
                value: Some((now.value - run.synced.value).max(0.0)),
            };
            let value = report.value.unwrap_or(0.0);
            run.synced = now;
            let step = fold_and_judge(&pb, &mut run, &report, value, with_model, voice);
            tx.put(ws, &run)?;
            Ok(step)
        })
        .await?;
    finish(store, ws, ids, judging, first).await
}

/// After the outcomes were folded in: decided, or the model is to be asked.
enum Step {
    Decided(Box<OutcomeResult>),
    AskModel {
        situation: serde_json::Value,
        model: String,
        /// The run's pivot count when asked: a decision made meanwhile voids the answer.
        epoch: usize,
    },
}

/// Folds the report in and decides, unless the model is to judge: then the spec's bounds are
/// checked here and the model is asked after this write ([`finish`]).
fn fold_and_judge(
    pb: &Playbook,
    run: &mut PlaybookRun,
    report: &OutcomeReport,
    value: f64,
    with_model: bool,
    voice_connected: bool,
) -> Step {
    let now = clock::now();
    let (window, pivots_last_week) = fold(pb, run, report, value, now);
    let (metric, target) = (pb.strategy.success_metric, pb.strategy.success_target);
    let decision = match judge::gate(&pb.adaptation, metric, target, pivots_last_week, window) {
        Err(hold) => *hold,
        Ok((metric, target)) if with_model => {
            if report_is_empty(report, value) {
                return Step::Decided(Box::new(OutcomeResult {
                    run: run.clone(),
                    decision: hold_for_model(
                        "no new outcomes since the last report; the model judges new outcomes",
                    ),
                }));
            }
            return Step::AskModel {
                situation: model_judge::situation(pb, run, metric, target, window, voice_connected),
                model: pb.adaptation.judge_model.clone().unwrap_or_default(),
                epoch: run.pivots.len(),
            };
        }
        Ok((metric, target)) => judge::significance(&pb.adaptation, metric, target, window),
    };
    record_decision(pb, run, &decision, window, now, None, voice_connected);
    Step::Decided(Box::new(OutcomeResult {
        run: run.clone(),
        decision,
    }))
}

fn report_is_empty(report: &OutcomeReport, value: f64) -> bool {
    report.samples == 0 && report.successes == 0 && value == 0.0
}

fn hold_for_model(reason: &str) -> Decision {
    Decision {
        action: "hold".into(),
        reason: reason.into(),
        judge: judge::BUILTIN_JUDGE.into(),
        judged_by: judge::JUDGED_BY_STATISTICAL.into(),
        metric_value: None,
        fallback_reason: None,
    }
}

/// Asks the model (outside any write) and records its checked answer, or the statistical
/// judge's decision with the reason the model's answer was not used.
async fn finish(
    store: &Store,
    ws: WorkspaceId,
    (playbook_id, run_id): (String, String),
    judging: &Judging,
    step: Step,
) -> Result<OutcomeResult> {
    let (situation, requested, epoch) = match step {
        Step::Decided(r) => return Ok(*r),
        Step::AskModel {
            situation,
            model,
            epoch,
        } => (situation, model, epoch),
    };
    let Some(judge_model) = judging.model.clone() else {
        return Err(Error::internal("a model judge without a model"));
    };
    let model = if requested.is_empty() {
        judging.connected_model().unwrap_or_default().to_owned()
    } else {
        requested
    };
    let answer = judge_model.ask(&model, &situation).await;
    let voice = judging.voice_connected;
    store
        .write(move |tx| {
            let (pb, mut run) = load_for_outcome(tx, ws, &playbook_id, &run_id)?;
            let now = clock::now();
            if run.pivots.len() != epoch {
                let decision =
                    hold_for_model("another decision changed the run while the model judged");
                return Ok(OutcomeResult { run, decision });
            }
            let (window, pivots_last_week) = judge_window(&pb, &run, now);
            let (metric, target) = (pb.strategy.success_metric, pb.strategy.success_target);
            let gate = judge::gate(&pb.adaptation, metric, target, pivots_last_week, window);
            let verdict = answer.and_then(|args| model_judge::validate(&args, &run, voice));
            let value = metric.map(|m| {
                judge::metric_value(Some(m), window.samples, window.successes, window.value)
            });
            let (decision, steer) = match (gate, verdict) {
                (Err(hold), _) => (*hold, None),
                (Ok(_), Ok(Verdict::Hold(reason))) => {
                    (model_decision("hold", reason, &model, value), None)
                }
                (Ok(_), Ok(Verdict::Pivot(reason, steer))) => {
                    (model_decision("pivot", reason, &model, value), steer)
                }
                (Ok((metric, target)), Err(why)) => {
                    run.judge_fallback = Some(JudgeFallback {
                        at: clock::rfc3339(now),
                        model: model.clone(),
                        reason: why.clone(),
                    });
                    let d = judge::significance(&pb.adaptation, metric, target, window);
                    (
                        Decision {
                            fallback_reason: Some(why),
                            ..d
                        },
                        None,
                    )
                }
            };
            record_decision(&pb, &mut run, &decision, window, now, steer, voice);
            tx.put(ws, &run)?;
            Ok(OutcomeResult { run, decision })
        })
        .await
}

fn model_decision(action: &str, reason: String, model: &str, value: Option<f64>) -> Decision {
    Decision {
        action: action.into(),
        reason,
        judge: model.to_owned(),
        judged_by: judge::JUDGED_BY_MODEL.into(),
        metric_value: value,
        fallback_reason: None,
    }
}

/// Appends a pivot for a pivot decision and changes the plan of an executing run: as the model
/// said (`steer`), else by the steering rotation (`run_plan::steer`). Runs that are over keep
/// their plan as it ended.
fn record_decision(
    pb: &Playbook,
    run: &mut PlaybookRun,
    decision: &Decision,
    window: Window,
    now: OffsetDateTime,
    steer: Option<model_judge::Steer>,
    voice_connected: bool,
) {
    if !decision.is_pivot() {
        return;
    }
    let a = &pb.adaptation;
    let n = run.pivots.iter().filter(|p| p.change.is_some()).count();
    let change = match run.plan.as_mut() {
        Some(plan) if !run_plan::status::is_final(&run.status) => {
            plan.updated_at = clock::rfc3339(now);
            Some(match &steer {
                Some(s) => model_judge::apply(plan, s),
                None => run_plan::steer(plan, n, voice_connected),
            })
        }
        _ => None,
    };
    run.pivots.push(Pivot {
        at: clock::rfc3339(now),
        reason: decision.reason.clone(),
        judge: decision.judge.clone(),
        judged_by: decision.judged_by.clone(),
        fallback_reason: decision.fallback_reason.clone(),
        requested_judge_model: a.judge_model.clone(),
        metric_value: decision.metric_value.unwrap_or(0.0),
        samples: window.samples,
        successes: window.successes,
        window_days: a.pivot_window_days,
        change,
    });
}

/// Adds the report to the run's totals and hourly buckets; returns the judge's window and the
/// run's pivots in the last week.
fn fold(
    pb: &Playbook,
    run: &mut PlaybookRun,
    report: &OutcomeReport,
    value: f64,
    now: OffsetDateTime,
) -> (Window, usize) {
    let now_unix = now.unix_timestamp();
    let hour_unix = now_unix - now_unix.rem_euclid(HOUR_SECS);
    let epoch = run.pivots.len();
    run.outcomes.retain(|b| b.hour_unix >= now_unix - KEEP_SECS);
    match run.outcomes.last_mut() {
        _ if report_is_empty(report, value) => {}
        Some(b) if b.hour_unix == hour_unix && b.epoch == epoch => {
            b.samples += report.samples;
            b.successes += report.successes;
            b.value += value;
        }
        _ => run.outcomes.push(OutcomeBucket {
            hour: clock::unix_rfc3339(hour_unix),
            hour_unix,
            epoch,
            samples: report.samples,
            successes: report.successes,
            value,
        }),
    }
    let metric = pb.strategy.success_metric;
    let m = &mut run.metrics;
    m.samples += report.samples;
    m.successes += report.successes;
    m.value += value;
    m.metric_value = judge::metric_value(metric, m.samples, m.successes, m.value);
    judge_window(pb, run, now)
}

/// The outcomes in the judge's window (since the latest pivot) and the pivots of the last week.
fn judge_window(pb: &Playbook, run: &PlaybookRun, now: OffsetDateTime) -> (Window, usize) {
    let now_unix = now.unix_timestamp();
    let epoch = run.pivots.len();
    let window_start = now_unix - i64::from(pb.adaptation.pivot_window_days) * DAY_SECS;
    let window = run
        .outcomes
        .iter()
        .filter(|b| b.epoch == epoch && b.hour_unix + HOUR_SECS > window_start)
        .fold(Window::default(), |w, b| Window {
            samples: w.samples + b.samples,
            successes: w.successes + b.successes,
            value: w.value + b.value,
        });
    let pivots_last_week = run
        .pivots
        .iter()
        .filter(|p| {
            svc_domains::events::parse_timestamp(&p.at)
                .map(|t| t.unix_timestamp() > now_unix - WEEK_SECS)
                .unwrap_or(true)
        })
        .count();
    (window, pivots_last_week)
}

/// Adds the report and lets the statistical judge decide (a pivot is appended, the plan
/// steered): the whole path of a workspace without a model.
#[cfg(test)]
pub fn apply_outcome(
    pb: &Playbook,
    run: &mut PlaybookRun,
    report: &OutcomeReport,
    value: f64,
    now: OffsetDateTime,
) -> Decision {
    let (window, pivots_last_week) = fold(pb, run, report, value, now);
    let a = &pb.adaptation;
    let decision = judge::decide(
        a,
        pb.strategy.success_metric,
        pb.strategy.success_target,
        pivots_last_week,
        window,
    );
    record_decision(pb, run, &decision, window, now, None, false);
    decision
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playbook_runs::attribution::Attributed;
    use crate::playbook_runs::runs::{RunMetrics, MAX_SAMPLES_PER_REPORT};
    use serde_json::json;
    use svc_domains::playbooks::build;

    fn playbook(adaptation: serde_json::Value) -> Playbook {
        build(
            &json!({"name": "n", "mode": "outbound", "buddyId": "prospect",
                    "strategy": {"hypothesis": "h", "successMetric": "reply_rate", "successTarget": 0.2},
                    "adaptation": adaptation}),
            "pb_x".into(),
            "usr_x".into(),
            "2026-01-01T00:00:00.000Z",
        )
        .expect("valid")
    }

    fn run() -> PlaybookRun {
        PlaybookRun {
            id: "run_x".into(),
            playbook_id: "pb_x".into(),
            status: "running".into(),
            started_at: "2026-01-01T00:00:00.000Z".into(),
            started_by: "usr_x".into(),
            metrics: RunMetrics::default(),
            pivots: Vec::new(),
            outcomes: Vec::new(),
            synced: Attributed::default(),
            plan: None,
            judge_fallback: None,
        }
    }

    fn report(samples: u64, successes: u64) -> OutcomeReport {
        OutcomeReport {
            samples,
            successes,
            value: None,
        }
    }

    fn at(secs: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_767_225_600 + secs).expect("time")
    }

    #[test]
    fn pivots_after_min_samples_and_restarts_the_window() {
        let pb = playbook(json!({"minSampleSize": 40, "maxPivotsPerWeek": 5}));
        let mut r = run();
        let d = apply_outcome(&pb, &mut r, &report(30, 0), 0.0, at(0));
        assert!(!d.is_pivot(), "below min samples: {d:?}");
        let d = apply_outcome(&pb, &mut r, &report(30, 1), 0.0, at(60));
        assert!(d.is_pivot(), "{d:?}");
        assert_eq!(r.pivots.len(), 1);
        assert_eq!(r.pivots[0].samples, 60);
        assert_eq!(r.pivots[0].judge, judge::BUILTIN_JUDGE);
        assert_eq!(r.metrics.samples, 60);
        assert!((r.metrics.metric_value - 1.0 / 60.0).abs() < 1e-12);
        // After the pivot the window starts afresh: 30 new samples are below the minimum.
        let d = apply_outcome(&pb, &mut r, &report(30, 0), 0.0, at(120));
        assert!(!d.is_pivot() && d.reason.contains("30 of 40"), "{d:?}");
        assert_eq!(r.outcomes.len(), 2, "same hour, new epoch: a new bucket");
    }

    #[test]
    fn window_excludes_outcomes_older_than_pivot_window_days() {
        let pb = playbook(json!({"minSampleSize": 50, "pivotWindowDays": 1}));
        let mut r = run();
        apply_outcome(&pb, &mut r, &report(40, 0), 0.0, at(0));
        // Two days later the first 40 samples are out of the 1-day window.
        let d = apply_outcome(&pb, &mut r, &report(20, 0), 0.0, at(2 * DAY_SECS));
        assert!(!d.is_pivot() && d.reason.contains("20 of 50"), "{d:?}");
        assert_eq!(r.metrics.samples, 60, "totals keep everything");
    }

    #[test]
    fn respects_max_pivots_per_week() {
        let pb = playbook(json!({"minSampleSize": 10, "maxPivotsPerWeek": 1}));
        let mut r = run();
        assert!(apply_outcome(&pb, &mut r, &report(20, 0), 0.0, at(0)).is_pivot());
        let d = apply_outcome(&pb, &mut r, &report(20, 0), 0.0, at(3600));
        assert!(!d.is_pivot() && d.reason.contains("pivot limit"), "{d:?}");
        // A week later the limit no longer applies.
        let d = apply_outcome(&pb, &mut r, &report(20, 0), 0.0, at(WEEK_SECS + 7200));
        assert!(d.is_pivot(), "{d:?}");
        assert_eq!(r.pivots.len(), 2);
    }

    #[test]
    fn reports_are_validated() {
        assert!(report(5, 6).validate().is_err());
        assert!(report(MAX_SAMPLES_PER_REPORT + 1, 0).validate().is_err());
        let neg = OutcomeReport {
            value: Some(-1.0),
            ..report(1, 0)
        };
        assert!(neg.validate().is_err());
        assert_eq!(report(5, 5).validate().expect("valid"), 0.0);
    }
}
