//! The model judge: the connected `llm` integration decides a run's pivots.
//!
//! The model is asked only after the spec's bounds (`judge::gate`: adaptation on, a metric and
//! target, the weekly pivot limit, the minimum sample size) let a pivot happen, and only when
//! the report brought new outcomes (the executor syncs every second; an empty sync asks no one).
//! It sees the playbook's strategy, the window's figures and the run's plan with the choices a
//! pivot may make, and answers with one `judge_run` tool call. The answer is checked against
//! what the run can apply ([`validate`]): a variant of `run_plan::VARIANTS`, the call channel
//! only with the voice integration, a cadence within the pivot bounds. The call is made through
//! the chat's adapter (`agents::llm::complete`, bounded by `timeout_s`) outside any store write;
//! an invalid answer, a timeout or an unreachable provider becomes the fallback reason, and the
//! statistical judge decides (`runs.rs`).

use serde_json::{json, Value as Json};

use super::judge::Window;
use super::run_plan::{
    self, PivotChange, RunPlan, CADENCE_MAX_MS, CADENCE_PIVOT_FLOOR_MS, CHANNEL_CALL,
    CHANNEL_EMAIL, VARIANTS,
};
use super::runs::PlaybookRun;
use crate::chat::llm;
use svc_core::error::Result;
use svc_core::integration_kind::Kind;
use svc_core::store::WorkspaceId;
use svc_domains::integrations::{self, Config, HttpClient, LlmConfig};
use svc_domains::playbooks::{Playbook, SuccessMetric};
use svc_gateway::Gateway;

/// The tool the model answers with.
pub const TOOL: &str = "judge_run";
/// Longest reason kept from a model answer.
const REASON_CHARS: usize = 1000;

const SYSTEM: &str = "You are the adaptation judge of a playbook run: an outreach campaign \
that works its leads one by one. From the outcomes in the measurement window, decide whether \
the run should pivot (change exactly one thing about what it does next) or hold. Call \
judge_run exactly once. A pivot names `field` (variant, channel or cadence) and `to`, which \
must be one of the choices listed for that field; the cadence is milliseconds between two \
leads. Give a short reason.";

/// What the judging of a workspace's runs can use: the voice integration (for the call
/// channel) and the connected model, if any.
#[derive(Clone, Debug)]
pub struct Judging {
    pub voice_connected: bool,
    pub model: Option<ModelJudge>,
}

/// The connected model and the client to reach it.
#[derive(Clone, Debug)]
pub struct ModelJudge {
    http: HttpClient,
    config: LlmConfig,
}

impl Judging {
    /// Reads the workspace's voice and llm integrations.
    pub async fn load(gateway: &Gateway, ws: WorkspaceId) -> Result<Judging> {
        let (store, sealer) = (&gateway.store, &gateway.sealer);
        let voice = integrations::load(store, sealer, ws, Kind::Voice).await?;
        let model = match integrations::load(store, sealer, ws, Kind::Llm).await? {
            Some(Config::Llm(config)) => Some(ModelJudge {
                http: gateway.http.clone(),
                config,
            }),
            _ => None,
        };
        Ok(Judging {
            voice_connected: voice.is_some(),
            model,
        })
    }

    /// The integration's model (the default judge model) when one is connected.
    pub fn connected_model(&self) -> Option<&str> {
        self.model.as_ref().map(|m| m.config.model.as_str())
    }
}

impl ModelJudge {
    /// Asks `model` (the spec's `judgeModel` or the integration's) about `situation`; returns
    /// the arguments of its `judge_run` call, or why there are none.
    pub async fn ask(&self, model: &str, situation: &Json) -> std::result::Result<Json, String> {
        let config = LlmConfig {
            model: model.to_owned(),
            ..self.config.clone()
        };
        let messages = [
            json!({"role": "system", "content": SYSTEM}),
            json!({"role": "user", "content": situation.to_string()}),
        ];
        let c = llm::complete(&self.http, &config, &messages, &[tool()])
            .await
            .map_err(|e| format!("{}: {}", e.code(), e.error.message))?;
        if let Some(call) = c.tool_calls.into_iter().find(|t| t.name == TOOL) {
            return Ok(call.arguments);
        }
        // A model without tool calling may write the same object as text.
        c.content
            .as_deref()
            .and_then(|t| serde_json::from_str::<Json>(t.trim()).ok())
            .filter(Json::is_object)
            .ok_or_else(|| "invalid_answer: the model did not call judge_run".to_owned())
    }
}

fn tool() -> Json {
    json!({"type": "function", "function": {
        "name": TOOL,
        "description": "Record the judgement of the run: pivot (one change) or hold.",
        "parameters": {"type": "object", "properties": {
            "action": {"type": "string", "enum": ["pivot", "hold"]},
            "reason": {"type": "string"},
            "field": {"type": "string", "enum": ["variant", "channel", "cadence"]},
            "to": {"description": "The new variant or channel, or the new cadence in milliseconds."}
        }, "required": ["action", "reason"]}
    }})
}

/// What the model is shown: the strategy, the window and the choices of a pivot.
pub fn situation(
    pb: &Playbook,
    run: &PlaybookRun,
    metric: SuccessMetric,
    target: f64,
    window: Window,
    voice_connected: bool,
) -> Json {
    let value =
        super::judge::metric_value(Some(metric), window.samples, window.successes, window.value);
    let plan = run
        .plan
        .as_ref()
        .filter(|_| !run_plan::status::is_final(&run.status));
    let choices = plan.map(|p| {
        json!({
            "variant": VARIANTS.iter().filter(|v| **v != p.variant).collect::<Vec<_>>(),
            "channel": channel_choices(p, voice_connected),
            "cadence": {"min_ms": CADENCE_PIVOT_FLOOR_MS, "max_ms": CADENCE_MAX_MS,
                        "current_ms": p.cadence_ms},
        })
    });
    json!({
        "playbook": {"name": pb.name, "hypothesis": pb.strategy.hypothesis,
                     "success_metric": metric.as_str(), "success_target": target},
        "window": {"days": pb.adaptation.pivot_window_days, "samples": window.samples,
                   "successes": window.successes, "value": window.value, "metric_value": value},
        "pivots_so_far": run.pivots.len(),
        "current": plan.map(|p| json!({"variant": p.variant, "channel": p.channel,
                                       "cadence_ms": p.cadence_ms})),
        "pivot_choices": choices,
    })
}

fn channel_choices(plan: &RunPlan, voice_connected: bool) -> Vec<&'static str> {
    [CHANNEL_EMAIL, CHANNEL_CALL]
        .into_iter()
        .filter(|c| *c != plan.channel && (*c != CHANNEL_CALL || voice_connected))
        .collect()
}

/// One change a model's pivot makes to the plan.
#[derive(Clone, Debug, PartialEq)]
pub enum Steer {
    Variant(&'static str),
    Channel(&'static str),
    CadenceMs(u64),
}

/// A checked model answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Hold(String),
    /// `None`: the run has no plan to change (recorded before the executor, or over).
    Pivot(String, Option<Steer>),
}

/// Checks a model's `judge_run` arguments against what the run can apply now.
pub fn validate(
    args: &Json,
    run: &PlaybookRun,
    voice_connected: bool,
) -> std::result::Result<Verdict, String> {
    let reason = args
        .get("reason")
        .and_then(Json::as_str)
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .ok_or("invalid_answer: no reason")?;
    let reason: String = reason.chars().take(REASON_CHARS).collect();
    match args.get("action").and_then(Json::as_str) {
        Some("hold") => return Ok(Verdict::Hold(reason)),
        Some("pivot") => {}
        other => {
            return Err(format!(
                "invalid_answer: action {other:?} is not pivot or hold"
            ))
        }
    }
    let Some(plan) = run
        .plan
        .as_ref()
        .filter(|_| !run_plan::status::is_final(&run.status))
    else {
        return Ok(Verdict::Pivot(reason, None));
    };
    let field = args.get("field").and_then(Json::as_str);
    let to = args.get("to");
    let to_str = to.and_then(Json::as_str).map(str::trim);
    let steer = match field {
        Some("variant") => {
            let v = VARIANTS
                .iter()
                .find(|v| Some(**v) == to_str && **v != plan.variant)
                .ok_or_else(|| {
                    format!("invalid_answer: variant {to_str:?} is not another of {VARIANTS:?}")
                })?;
            Steer::Variant(v)
        }
        Some("channel") => {
            let c = channel_choices(plan, voice_connected)
                .into_iter()
                .find(|c| Some(*c) == to_str)
                .ok_or_else(|| {
                    format!(
                        "invalid_answer: channel {to_str:?} is not one the run can move to \
                         (call needs the voice integration)"
                    )
                })?;
            Steer::Channel(c)
        }
        Some("cadence") => {
            let ms = to
                .and_then(|t| t.as_u64().or_else(|| t.as_str()?.trim().parse().ok()))
                .filter(|ms| {
                    (CADENCE_PIVOT_FLOOR_MS..=CADENCE_MAX_MS).contains(ms) && *ms != plan.cadence_ms
                })
                .ok_or_else(|| {
                    format!(
                        "invalid_answer: cadence {to:?} is not a new value from \
                         {CADENCE_PIVOT_FLOOR_MS} to {CADENCE_MAX_MS} ms"
                    )
                })?;
            Steer::CadenceMs(ms)
        }
        other => {
            return Err(format!(
                "invalid_answer: a pivot must name field variant, channel or cadence, not {other:?}"
            ))
        }
    };
    Ok(Verdict::Pivot(reason, Some(steer)))
}

/// Applies a checked change to the plan.
pub fn apply(plan: &mut RunPlan, steer: &Steer) -> PivotChange {
    let (field, from, to) = match steer {
        Steer::Variant(v) => (
            "variant",
            std::mem::replace(&mut plan.variant, (*v).to_owned()),
            (*v).to_owned(),
        ),
        Steer::Channel(c) => (
            "channel",
            std::mem::replace(&mut plan.channel, (*c).to_owned()),
            (*c).to_owned(),
        ),
        Steer::CadenceMs(ms) => {
            let from = std::mem::replace(&mut plan.cadence_ms, *ms);
            ("cadence", format!("{from}ms"), format!("{ms}ms"))
        }
    };
    PivotChange {
        field: field.to_owned(),
        from,
        to,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playbook_runs::attribution::Attributed;
    use crate::playbook_runs::run_plan::sample_plan;
    use crate::playbook_runs::runs::RunMetrics;

    fn run(status: &str) -> PlaybookRun {
        PlaybookRun {
            id: "run_x".into(),
            playbook_id: "pb_x".into(),
            status: status.into(),
            started_at: String::new(),
            started_by: String::new(),
            metrics: RunMetrics::default(),
            pivots: Vec::new(),
            outcomes: Vec::new(),
            synced: Attributed::default(),
            plan: Some(sample_plan("m")),
            judge_fallback: None,
        }
    }

    fn check(args: Json, voice: bool) -> std::result::Result<Verdict, String> {
        validate(&args, &run("running"), voice)
    }

    #[test]
    fn answers_the_run_can_apply_are_accepted() {
        let r = "why".to_owned();
        assert_eq!(
            check(json!({"action": "hold", "reason": "why"}), false),
            Ok(Verdict::Hold(r.clone()))
        );
        let v = check(
            json!({"action": "pivot", "reason": "why", "field": "variant", "to": "warm"}),
            false,
        );
        assert_eq!(
            v,
            Ok(Verdict::Pivot(r.clone(), Some(Steer::Variant("warm"))))
        );
        let v = check(
            json!({"action": "pivot", "reason": "why", "field": "channel", "to": "call"}),
            true,
        );
        assert_eq!(
            v,
            Ok(Verdict::Pivot(r.clone(), Some(Steer::Channel("call"))))
        );
        for to in [json!(120_000), json!("120000")] {
            let v = check(
                json!({"action": "pivot", "reason": "why", "field": "cadence", "to": to}),
                false,
            );
            assert_eq!(
                v,
                Ok(Verdict::Pivot(r.clone(), Some(Steer::CadenceMs(120_000))))
            );
        }
        // A run that is over has nothing to change.
        let over = validate(
            &json!({"action": "pivot", "reason": "why"}),
            &run("completed"),
            false,
        );
        assert_eq!(over, Ok(Verdict::Pivot(r, None)));
    }

    #[test]
    fn answers_outside_the_bounds_are_refused() {
        for bad in [
            json!({"action": "pivot", "field": "variant", "to": "warm"}),
            json!({"action": "maybe", "reason": "x"}),
            json!({"action": "pivot", "reason": "x"}),
            json!({"action": "pivot", "reason": "x", "field": "variant", "to": "brand"}),
            json!({"action": "pivot", "reason": "x", "field": "variant", "to": "shouty"}),
            json!({"action": "pivot", "reason": "x", "field": "channel", "to": "call"}),
            json!({"action": "pivot", "reason": "x", "field": "channel", "to": "sms"}),
            json!({"action": "pivot", "reason": "x", "field": "cadence", "to": 10}),
            json!({"action": "pivot", "reason": "x", "field": "cadence", "to": CADENCE_MAX_MS + 1}),
            json!({"action": "pivot", "reason": "x", "field": "budget", "to": 1}),
        ] {
            let e = check(bad.clone(), false).expect_err("refused");
            assert!(e.starts_with("invalid_answer"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_checked_change_is_applied_and_described() {
        let mut r = run("running");
        let plan = r.plan.as_mut().expect("plan");
        let c = apply(plan, &Steer::CadenceMs(90_000));
        assert_eq!((c.from.as_str(), c.to.as_str()), ("0ms", "90000ms"));
        assert_eq!(plan.cadence_ms, 90_000);
        assert_eq!(apply(plan, &Steer::Variant("warm")).field, "variant");
        assert_eq!(plan.variant, "warm");
    }
}
