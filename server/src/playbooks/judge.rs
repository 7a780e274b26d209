//! Adaptation decisions: when a run should pivot (SPEC.md "adaptation" fields).
//!
//! Who judges is behind the [`Judge`] trait, chosen per run by [`select`]: a connected model
//! when `adaptation.judgeModel` is set and a model integration can serve it, else the built-in
//! statistical judge ([`BUILTIN_JUDGE`]). This build has no model integration, so the
//! statistical judge decides every run; the run records which judge it has and why, and a
//! spec's `judgeModel` is recorded on each pivot as the model that was asked for.
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

use super::{Adaptation, SuccessMetric};

/// Name recorded on pivots decided without a model.
pub const BUILTIN_JUDGE: &str = "builtin-statistical";
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
    /// The window's metric value (rate or total) when the judge computed one.
    pub metric_value: Option<f64>,
}

impl Decision {
    fn hold(reason: String) -> Decision {
        Decision {
            action: "hold".into(),
            reason,
            judge: BUILTIN_JUDGE.into(),
            metric_value: None,
        }
    }

    pub fn is_pivot(&self) -> bool {
        self.action == "pivot"
    }
}

/// What a judge decides on: the spec's adaptation and target, and the run's recent outcomes.
#[derive(Clone, Copy, Debug)]
pub struct JudgeInput<'a> {
    pub adaptation: &'a Adaptation,
    pub metric: Option<SuccessMetric>,
    pub target: Option<f64>,
    /// The run's pivots in the last 7 days.
    pub pivots_last_week: usize,
    pub window: Window,
}

/// A judge of a run's outcomes. Its [`Judge::name`] is recorded on every decision.
///
/// A model judge (an `llm` integration) implements this too; a model call is slow and
/// fallible, so its implementation should fall back to [`StatisticalJudge`] (recording that)
/// when the model does not answer in time.
pub trait Judge: Send + Sync {
    fn name(&self) -> String;
    fn decide(&self, input: &JudgeInput<'_>) -> Decision;
}

/// The built-in statistical judge (the rules of this module's documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct StatisticalJudge;

impl Judge for StatisticalJudge {
    fn name(&self) -> String {
        BUILTIN_JUDGE.to_owned()
    }
    fn decide(&self, i: &JudgeInput<'_>) -> Decision {
        decide(
            i.adaptation,
            i.metric,
            i.target,
            i.pivots_last_week,
            i.window,
        )
    }
}

/// The judge a run uses, and a note saying why when a model was asked for but does not judge.
///
/// `model_judge` builds the judge of a named model when a connected model integration can
/// serve it. This build has no model integration, so every caller passes [`no_model`] and the
/// statistical judge decides; wiring one means passing a constructor here (and, the call
/// being remote, deciding outside the write transaction: see `runs::apply_outcome`).
pub fn select(
    adaptation: &Adaptation,
    model_judge: impl Fn(&str) -> Option<Box<dyn Judge>>,
) -> (Box<dyn Judge>, Option<String>) {
    let Some(model) = adaptation.judge_model.as_deref() else {
        return (Box::new(StatisticalJudge), None);
    };
    match model_judge(model) {
        Some(judge) => (judge, None),
        None => (
            Box::new(StatisticalJudge),
            Some(format!(
                "adaptation.judgeModel {model:?} was requested, but no connected model \
                 integration serves it; the built-in statistical judge decides"
            )),
        ),
    }
}

/// No model integration: [`select`] falls back to the statistical judge.
pub fn no_model(_model: &str) -> Option<Box<dyn Judge>> {
    None
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
    if !adaptation.enabled {
        return Decision::hold("adaptation is disabled for this playbook".into());
    }
    let (Some(metric), Some(target)) = (metric, target) else {
        return Decision::hold(
            "no strategy.successMetric and successTarget to judge against".into(),
        );
    };
    if pivots_last_week >= adaptation.max_pivots_per_week as usize {
        return Decision::hold(format!(
            "pivot limit reached: {pivots_last_week} pivot(s) in the last 7 days (maxPivotsPerWeek {})",
            adaptation.max_pivots_per_week
        ));
    }
    if window.samples < u64::from(adaptation.min_sample_size) {
        return Decision::hold(format!(
            "not enough samples: {} of {} in the last {} day(s)",
            window.samples, adaptation.min_sample_size, adaptation.pivot_window_days
        ));
    }
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
        metric_value: Some(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requested_model_without_an_integration_falls_back_with_a_note() {
        let (j, note) = select(&Adaptation::default(), no_model);
        assert_eq!((j.name(), note), (BUILTIN_JUDGE.to_owned(), None));
        let a = Adaptation {
            judge_model: Some("judge-large".into()),
            ..Adaptation::default()
        };
        let (j, note) = select(&a, no_model);
        assert_eq!(j.name(), BUILTIN_JUDGE);
        assert!(note.expect("note").contains("judge-large"));
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
