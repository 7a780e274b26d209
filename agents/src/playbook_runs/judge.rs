//! Adaptation decisions: when a run should pivot (SPEC.md "adaptation" fields).
//!
//! Two judges. With an `llm` integration connected, the model decides (`model_judge.rs`:
//! `adaptation.judgeModel`, or the integration's own model as the default); otherwise the
//! built-in statistical judge ([`BUILTIN_JUDGE`]) of this module. Either way rules 1-3 below
//! (the spec's bounds) are applied first and the model is only asked when they let a pivot
//! happen; the model replaces rule 4. A model answer that is invalid, late or missing falls
//! back to rule 4 with the reason recorded (`Decision::fallback_reason`).
//!
//! The statistical judge's rules, in order:
//!
//! 1. adaptation disabled, or no `successMetric` / `successTarget`: hold;
//! 2. `maxPivotsPerWeek` pivots already in the last 7 days: hold;
//! 3. the window is the last `pivotWindowDays` days, and only outcomes after the latest pivot
//!    (a pivot starts the measurement afresh); fewer than `minSampleSize` samples in it: hold;
//! 4. rate metrics (`reply_rate`, `meeting_booked`, `custom`: successes per sample, a fraction
//!    from 0 to 1): pivot when the one-sided 95% Wilson score upper bound of the window's rate
//!    is below `successTarget`, i.e. the data make it unlikely (p < 0.05) that the true rate
//!    reaches the target; `pipeline_arr` (the sum of reported values, base currency): pivot
//!    when the window's total is below the target;
//! 5. otherwise hold.

use serde::{Deserialize, Serialize};

use svc_domains::playbooks::{Adaptation, SuccessMetric};

/// Name recorded on pivots decided without a model.
pub const BUILTIN_JUDGE: &str = "builtin-statistical";
/// `judgedBy` of a decision of the built-in rules.
pub const JUDGED_BY_STATISTICAL: &str = "statistical";
/// `judgedBy` of a decision of the connected model.
pub const JUDGED_BY_MODEL: &str = "model";
/// z for a one-sided 95% bound.
const Z_95_ONE_SIDED: f64 = 1.644_853_626_951_472_2;
pub const WEEK_SECS: i64 = 7 * 24 * 60 * 60;
pub const DAY_SECS: i64 = 24 * 60 * 60;

/// The outcomes inside the judge's window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Window {
    pub samples: u64,
    pub successes: u64,
    pub value: f64,
}

/// What the judge decided and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// `pivot` or `hold`.
    pub action: String,
    pub reason: String,
    pub judge: String,
    /// `statistical` (the built-in rules) or `model` (the connected model).
    pub judged_by: String,
    /// The window's metric value (rate or total) when the judge computed one.
    pub metric_value: Option<f64>,
    /// Why the model was asked but the statistical judge decided (invalid answer, timeout,
    /// provider unreachable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
}

impl Decision {
    fn hold(reason: String) -> Decision {
        Decision {
            action: "hold".into(),
            reason,
            judge: BUILTIN_JUDGE.into(),
            judged_by: JUDGED_BY_STATISTICAL.into(),
            metric_value: None,
            fallback_reason: None,
        }
    }

    pub fn is_pivot(&self) -> bool {
        self.action == "pivot"
    }
}

/// The run's judge and, when a model was asked for but none is connected, why not.
///
/// `connected_model` is the `llm` integration's model when one is connected: the model judges,
/// as `adaptation.judgeModel` when the spec names one, else as the integration's model.
pub fn select(adaptation: &Adaptation, connected_model: Option<&str>) -> (String, Option<String>) {
    match (connected_model, adaptation.judge_model.as_deref()) {
        (Some(default), requested) => (requested.unwrap_or(default).to_owned(), None),
        (None, None) => (BUILTIN_JUDGE.to_owned(), None),
        (None, Some(model)) => (
            BUILTIN_JUDGE.to_owned(),
            Some(format!(
                "adaptation.judgeModel {model:?} was requested, but no llm integration is \
                 connected; the built-in statistical judge decides"
            )),
        ),
    }
}

/// Wilson score interval upper bound of a binomial proportion (one-sided, z = 1.645).
pub fn wilson_upper(successes: u64, samples: u64) -> f64 {
    if samples == 0 {
        return 1.0;
    }
    let n = samples as f64;
    // A window can hold successes of samples counted before it (synced events): cap at 1.
    let p = (successes as f64 / n).min(1.0);
    let z2 = Z_95_ONE_SIDED * Z_95_ONE_SIDED;
    let centre = p + z2 / (2.0 * n);
    let margin = Z_95_ONE_SIDED * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre + margin) / (1.0 + z2 / n)).min(1.0)
}

/// The metric value of totals: a rate for rate metrics, the value total for `pipeline_arr`.
pub fn metric_value(
    metric: Option<SuccessMetric>,
    samples: u64,
    successes: u64,
    value: f64,
) -> f64 {
    match metric {
        Some(SuccessMetric::PipelineArr) => value,
        _ if samples == 0 => 0.0,
        _ => successes as f64 / samples as f64,
    }
}

/// Decides on one run. `pivots_last_week` counts the run's pivots in the last 7 days.
pub fn decide(
    adaptation: &Adaptation,
    metric: Option<SuccessMetric>,
    target: Option<f64>,
    pivots_last_week: usize,
    window: Window,
) -> Decision {
    match gate(adaptation, metric, target, pivots_last_week, window) {
        Ok((metric, target)) => significance(adaptation, metric, target, window),
        Err(hold) => *hold,
    }
}

/// Rules 1-3: the spec's bounds. `Err` is the hold they impose; `Ok` lets a judge decide.
pub fn gate(
    adaptation: &Adaptation,
    metric: Option<SuccessMetric>,
    target: Option<f64>,
    pivots_last_week: usize,
    window: Window,
) -> Result<(SuccessMetric, f64), Box<Decision>> {
    if !adaptation.enabled {
        return Err(Box::new(Decision::hold(
            "adaptation is disabled for this playbook".into(),
        )));
    }
    let (Some(metric), Some(target)) = (metric, target) else {
        return Err(Box::new(Decision::hold(
            "no strategy.successMetric and successTarget to judge against".into(),
        )));
    };
    if pivots_last_week >= adaptation.max_pivots_per_week as usize {
        return Err(Box::new(Decision::hold(format!(
            "pivot limit reached: {pivots_last_week} pivot(s) in the last 7 days (maxPivotsPerWeek {})",
            adaptation.max_pivots_per_week
        ))));
    }
    if window.samples < u64::from(adaptation.min_sample_size) {
        return Err(Box::new(Decision::hold(format!(
            "not enough samples: {} of {} in the last {} day(s)",
            window.samples, adaptation.min_sample_size, adaptation.pivot_window_days
        ))));
    }
    Ok((metric, target))
}

/// Rule 4: the statistical decision on a window that passed [`gate`].
pub fn significance(
    adaptation: &Adaptation,
    metric: SuccessMetric,
    target: f64,
    window: Window,
) -> Decision {
    let value = metric_value(Some(metric), window.samples, window.successes, window.value);
    let days = adaptation.pivot_window_days;
    let (pivot, reason) = if metric == SuccessMetric::PipelineArr {
        (
            value < target,
            format!(
                "pipeline_arr {value:.0} over {} samples in the last {days} day(s) is {} the target {target:.0}",
                window.samples,
                if value < target { "below" } else { "at or above" }
            ),
        )
    } else {
        let upper = wilson_upper(window.successes, window.samples);
        (
            upper < target,
            format!(
                "{} {value:.4} ({} of {}) in the last {days} day(s); the 95% one-sided Wilson upper bound {upper:.4} is {} the target {target}",
                metric.as_str(),
                window.successes,
                window.samples,
                if upper < target { "below" } else { "not below" }
            ),
        )
    };
    Decision {
        action: if pivot { "pivot" } else { "hold" }.into(),
        reason,
        judge: BUILTIN_JUDGE.into(),
        judged_by: JUDGED_BY_STATISTICAL.into(),
        metric_value: Some(value),
        fallback_reason: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connected_model_judges_as_the_requested_or_its_own_model() {
        let (j, note) = select(&Adaptation::default(), None);
        assert_eq!((j, note), (BUILTIN_JUDGE.to_owned(), None));
        let a = Adaptation {
            judge_model: Some("judge-large".into()),
            ..Adaptation::default()
        };
        let (j, note) = select(&a, None);
        assert_eq!(j, BUILTIN_JUDGE);
        assert!(note.expect("note").contains("judge-large"));
        assert_eq!(
            select(&a, Some("gpt-4o-mini")),
            ("judge-large".into(), None)
        );
        assert_eq!(
            select(&Adaptation::default(), Some("gpt-4o-mini")),
            ("gpt-4o-mini".into(), None)
        );
    }

    fn adaptation(min: u32, max_pivots: u32) -> Adaptation {
        Adaptation {
            min_sample_size: min,
            max_pivots_per_week: max_pivots,
            ..Adaptation::default()
        }
    }

    fn window(samples: u64, successes: u64) -> Window {
        Window {
            samples,
            successes,
            value: 0.0,
        }
    }

    #[test]
    fn wilson_bound_matches_reference_values() {
        // 10 of 100 at z = 1.645: upper bound 0.1604 (hand-computed from the Wilson formula).
        assert!(
            (wilson_upper(10, 100) - 0.1604).abs() < 1e-3,
            "{}",
            wilson_upper(10, 100)
        );
        assert!(
            (wilson_upper(0, 50) - 0.0513).abs() < 1e-3,
            "{}",
            wilson_upper(0, 50)
        );
        assert_eq!(wilson_upper(0, 0), 1.0);
        assert!(wilson_upper(100, 100) <= 1.0);
    }

    #[test]
    fn pivots_only_when_significantly_below_target() {
        let a = adaptation(50, 2);
        let m = Some(SuccessMetric::ReplyRate);
        // 2 of 100 replies against a 10% target: clearly below.
        let d = decide(&a, m, Some(0.10), 0, window(100, 2));
        assert!(d.is_pivot(), "{d:?}");
        assert_eq!(d.judge, BUILTIN_JUDGE);
        assert_eq!(d.metric_value, Some(0.02));
        // 8 of 100 against 10%: below on average but not significantly.
        assert!(!decide(&a, m, Some(0.10), 0, window(100, 8)).is_pivot());
        // On target.
        assert!(!decide(&a, m, Some(0.10), 0, window(100, 12)).is_pivot());
    }

    #[test]
    fn holds_below_min_samples_at_pivot_limit_or_when_disabled() {
        let m = Some(SuccessMetric::ReplyRate);
        let d = decide(&adaptation(50, 2), m, Some(0.5), 0, window(49, 0));
        assert!(!d.is_pivot() && d.reason.contains("49 of 50"), "{d:?}");
        let d = decide(&adaptation(10, 2), m, Some(0.5), 2, window(100, 0));
        assert!(!d.is_pivot() && d.reason.contains("pivot limit"), "{d:?}");
        assert!(!decide(&adaptation(10, 0), m, Some(0.5), 0, window(100, 0)).is_pivot());
        let off = Adaptation {
            enabled: false,
            ..adaptation(1, 2)
        };
        assert!(!decide(&off, m, Some(0.5), 0, window(100, 0)).is_pivot());
        assert!(!decide(&adaptation(1, 2), None, Some(0.5), 0, window(100, 0)).is_pivot());
    }

    #[test]
    fn pipeline_arr_compares_the_window_total() {
        let a = adaptation(5, 2);
        let m = Some(SuccessMetric::PipelineArr);
        let w = Window {
            samples: 10,
            successes: 1,
            value: 20_000.0,
        };
        assert!(decide(&a, m, Some(50_000.0), 0, w).is_pivot());
        assert!(!decide(&a, m, Some(20_000.0), 0, w).is_pivot());
    }
}
