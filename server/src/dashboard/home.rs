//! Home: the reporting summary as figures and Chart.js charts (activity over the last 24 hours,
//! pipeline by stage, credits used against the plan) and the live feed of new events over
//! `/v1/stream`, opened with a one-use ticket issued for the cookie session.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use maud::{html, Markup};
use serde_json::json;

use super::assets::CHART;
use super::layout::{json_script, page as shell};
use super::respond::{failed, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_agents::reporting;
use svc_core::auth::Principal;
use svc_core::error::Result;
use svc_core::ledger;
use svc_core::workspaces;
use svc_domains::customers;

/// Pipeline of one stage: open opportunities and their summed amount.
#[derive(Debug, Default, PartialEq)]
pub struct Stage {
    pub count: u64,
    pub amount: f64,
}

/// Open opportunities grouped by stage name (`(none)` without one).
pub fn pipeline_by_stage(list: &customers::OpportunityList) -> BTreeMap<String, Stage> {
    let mut stages: BTreeMap<String, Stage> = BTreeMap::new();
    for o in list.opportunities.iter().filter(|o| o.status == "open") {
        let stage = stages
            .entry(o.stage.clone().unwrap_or_else(|| "(none)".to_owned()))
            .or_default();
        stage.count += 1;
        stage.amount += o.amount.as_f64().unwrap_or(0.0);
    }
    stages
}

/// A ticket for the page's WebSocket, for this session.
fn ticket(state: &AppState, s: &Session) -> Result<String> {
    state.stream_tickets.issue(
        s.user.workspace,
        Principal::User(s.user.clone()),
        std::time::Instant::now(),
    )
}

/// `GET /app/home`.
pub async fn page(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
) -> Result<Markup, Failure> {
    let ws = s.user.workspace;
    let summary = reporting::summary(&state.store, &state.summary_cache, ws).await;
    let opportunities = customers::opportunities(&state.store, ws)
        .await
        .map_err(|e| failed(&s, e))?;
    let settings = workspaces::get(&state.store, ws)
        .await
        .map_err(|e| failed(&s, e))?;
    let month = ledger::current_month();
    let used = {
        let month = month.clone();
        state
            .store
            .read(ws, move |snap| ledger::workspace_month_used(snap, &month))
            .await
            .map_err(|e| failed(&s, e))?
    };
    let stages = pipeline_by_stage(&opportunities);
    let ticket = ticket(&state, &s).map_err(|e| failed(&s, e))?;
    let limit = settings.monthly_credit_limit;
    let charts = json!({
        "activity": summary.signals_hourly,
        "stages": stages.keys().collect::<Vec<_>>(),
        "stage_amounts": stages.values().map(|v| v.amount).collect::<Vec<_>>(),
        "stage_counts": stages.values().map(|v| v.count).collect::<Vec<_>>(),
        "credits_used": used,
        "credits_left": limit.saturating_sub(used),
    });
    Ok(shell(
        Some(&s),
        "Home",
        "/app/home",
        &[CHART],
        html! {
            section aria-labelledby="figures-h" {
                h2 id="figures-h" .visually-hidden { "Figures" }
                ul.figures {
                    li { span.figure id="fig-signals" { (summary.signals_last24h) } span.label { "signals in the last 24 h" } }
                    li { span.figure { (summary.active_signals) } span.label { "active signals" } }
                    li { span.figure { (summary.pipeline_arr) } span.label { "pipeline ARR" } }
                    li { span.figure { (summary.open_tasks) } span.label { "open tasks" } }
                    li { span.figure { (format!("{:.0}%", summary.avg_confidence * 100.0)) } span.label { "average confidence" } }
                    li { span.figure id="fig-credits" { (used) " / " (limit) } span.label { "credits used this month (" (settings.plan.as_str()) ")" } }
                }
            }
            div.charts {
                figure.card {
                    figcaption { "Activity, last 24 hours" }
                    canvas id="chart-activity" role="img" aria-label=(format!("Signals per hour over the last 24 hours: {} in total", summary.signals_last24h)) {}
                }
                figure.card {
                    figcaption { "Pipeline by stage" }
                    canvas id="chart-pipeline" role="img" aria-label=(format!("Open pipeline in {} stages", stages.len())) {}
                    @if stages.is_empty() { p.hint { "No open opportunities yet." } }
                }
                figure.card {
                    figcaption { "Credits used vs plan" }
                    canvas id="chart-credits" role="img" aria-label=(format!("{used} of {limit} action credits used in {month}")) {}
                }
            }
            (json_script("chart-data", &charts))
            section.card aria-labelledby="live-h" {
                h2 id="live-h" { "Live events " span.live-state id="live-state" role="status" { "connecting…" } }
                ul.feed id="live-feed" data-ticket=(ticket) aria-live="polite" {
                    li.empty { "New events appear here as they arrive." }
                }
            }
        },
    ))
}

/// `POST /app/stream-ticket`: a fresh ticket when the page's WebSocket reconnects.
pub async fn stream_ticket(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
) -> Response {
    match ticket(&state, &s) {
        Ok(t) => (StatusCode::CREATED, Json(json!({"ticket": t}))).into_response(),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"error": e.message})),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value};

    fn opp(stage: Option<&str>, status: &str, amount: f64) -> customers::OpportunityView {
        customers::OpportunityView {
            id: "node_1".into(),
            opportunity_id: None,
            name: None,
            score: Value::Null,
            amount: json!(amount),
            stage: stage.map(str::to_owned),
            status: status.into(),
            customer_id: None,
            properties: Map::new(),
        }
    }

    #[test]
    fn open_opportunities_are_summed_per_stage() {
        let list = customers::OpportunityList {
            opportunities: vec![
                opp(Some("demo"), "open", 10.0),
                opp(Some("demo"), "open", 5.5),
                opp(Some("demo"), "won", 100.0),
                opp(None, "open", 1.0),
            ],
        };
        let stages = pipeline_by_stage(&list);
        assert_eq!(
            stages["demo"],
            Stage {
                count: 2,
                amount: 15.5
            }
        );
        assert_eq!(stages["(none)"].count, 1);
        assert_eq!(stages.len(), 2);
    }
}
