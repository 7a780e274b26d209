//! Home: the reporting summary as figures and Chart.js charts (activity over the last 24 hours,
//! pipeline by stage, credits used against the plan) and the live feed of new events over
//! `/v1/stream`, opened with a one-use ticket issued for the cookie session.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use maud::{html, Markup};
use serde_json::json;

use super::assets::CHART;
use super::format::{count, money, percent};
use super::layout::{json_script, page as shell};
use super::respond::{failed, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_agents::reporting;
use svc_core::auth::Principal;
use svc_core::error::Result;
use svc_core::ledger;
use svc_core::workspaces;
use svc_engine::schema::CUSTOMER;
use svc_engine::GraphRead;

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
    let stages = reporting::pipeline(&state.store, ws)
        .await
        .map_err(|e| failed(&s, e))?;
    let settings = workspaces::get(&state.store, ws)
        .await
        .map_err(|e| failed(&s, e))?;
    let customers = state
        .store
        .read(ws, |snap| Ok(snap.label_count(CUSTOMER)?))
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
    let ticket = ticket(&state, &s).map_err(|e| failed(&s, e))?;
    let limit = settings.monthly_credit_limit;
    let currency = one_currency(&stages);
    let charts = json!({
        "activity": summary.signals_hourly,
        "stages": stages.iter().map(|v| &v.stage).collect::<Vec<_>>(),
        "stage_amounts": stages.iter().map(|v| v.amount).collect::<Vec<_>>(),
        "stage_counts": stages.iter().map(|v| v.count).collect::<Vec<_>>(),
        "currency": currency,
        "credits_used": used,
        "credits_left": limit.saturating_sub(used),
    });
    Ok(shell(
        Some(&s),
        "Home",
        "/app/home",
        &[CHART],
        html! {
            @if customers == 0 { (first_steps()) }
            section aria-labelledby="figures-h" {
                h2 id="figures-h" .visually-hidden { "Figures" }
                // `data-api`: the API answer each figure shows (checked by tests/tests/pages.rs).
                ul.figures {
                    li { span.figure id="fig-signals" data-api="/v1/reporting/summary#/signalsLast24h" { (count(summary.signals_last24h)) } span.label { "signals in the last 24 h" } }
                    li { span.figure data-api="/v1/reporting/summary#/activeSignals" { (count(summary.active_signals)) } span.label { "customers active in the last 7 days" } }
                    li { span.figure data-api="/v1/reporting/summary#/pipelineArr" { (money(summary.pipeline_arr as f64, currency.as_deref())) } span.label { "open pipeline" } }
                    li { span.figure data-api="/v1/reporting/summary#/openTasks" { (count(summary.open_tasks)) } span.label { "open opportunities" } }
                    li { span.figure data-api="/v1/reporting/summary#/avgConfidence" { (percent(summary.avg_confidence)) } span.label { "average confidence" } }
                    li {
                        span.figure id="fig-credits" {
                            span data-api="/api/v1/capabilities/usage/actions#/workspace_used" { (count(used)) }
                            " / "
                            span data-api="/api/v1/workspace#/monthly_credit_limit" { (count(limit)) }
                        }
                        span.label { "action credits used this month (" (settings.plan.as_str()) " plan)" }
                    }
                }
            }
            div.charts {
                figure.card {
                    figcaption { "Activity, last 24 hours" }
                    canvas id="chart-activity" role="img" aria-label=(format!("Signals per hour over the last 24 hours: {} in total", summary.signals_last24h)) {}
                }
                figure.card {
                    figcaption { "Pipeline by stage" }
                    canvas id="chart-pipeline" role="img" aria-label=(format!("Open pipeline: {} in {} opportunities over {} stages", money(summary.pipeline_arr as f64, currency.as_deref()), count(summary.open_tasks), stages.len())) {}
                    @if stages.is_empty() { p.hint { "No open opportunities yet." } }
                }
                figure.card {
                    figcaption { "Credits used vs plan" }
                    canvas id="chart-credits" role="img" aria-label=(format!("{} of {} action credits used in {month}", count(used), count(limit))) {}
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

#[derive(Debug, Default, serde::Deserialize)]
pub struct Who {
    #[serde(default)]
    pub id: String,
}

/// `GET /app/home/who?id=cus_…`: the name and email the live feed shows for a customer id
/// (the stream's messages carry only the id). 404 when there is no such customer here.
pub async fn who(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Query(q): Query<Who>,
) -> Response {
    let Some(node) = state.store.ids().parse_customer(&q.id) else {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"error": "no such customer"})),
        )
            .into_response();
    };
    let found = state
        .store
        .read(s.user.workspace, move |snap| {
            svc_domains::graph_api::node_with_label(snap, node, CUSTOMER)
        })
        .await;
    match found {
        Ok(Some(n)) => {
            let v = svc_domains::customers::customer_view(state.store.ids(), &n);
            Json(json!({"id": v.id, "name": v.name, "email": v.email})).into_response()
        }
        Ok(None) => (
            StatusCode::NOT_FOUND,
            Json(json!({"error": "no such customer"})),
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e.message, "live feed name");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"error": "try again"})),
            )
                .into_response()
        }
    }
}

/// What a new, empty workspace does first.
fn first_steps() -> Markup {
    html! {
        section.card.first-steps id="first-steps" aria-labelledby="first-h" {
            h2 id="first-h" { "First steps" }
            p { "This workspace has no customers yet. To see them here:" }
            ol {
                li { a href="/app/keys" { "Create an agent key" } " with the " code { "events.ingest" } " capability." }
                li {
                    "Send your first event with it: "
                    code { "curl -X POST " (ORIGIN_HINT) "/api/v1/events/track -H 'X-API-Key: svc_live_…' -H 'content-type: application/json' -d '{\"event\":\"signed_up\",\"email\":\"ada@example.com\"}'" }
                    " (or connect Segment, HubSpot or Stripe webhooks: docs/segment.md)."
                }
                li { a href="/app/integrations" { "Connect email" } " (SMTP) so agents can reach customers, with your approval." }
                li { a href="/app/brand" { "Describe your brand voice" } " for the emails they draft." }
                li { a href="/app/playbooks" { "Write a playbook" } " and start a run on a few customers." }
            }
        }
    }
}

/// Where the example request goes: this service (the page cannot know its public address).
const ORIGIN_HINT: &str = "https://<this service>";

/// The currency every stage's opportunities share, if they share one.
fn one_currency(stages: &[reporting::StageTotal]) -> Option<String> {
    let first = stages.first()?.currency.clone()?;
    stages
        .iter()
        .all(|s| s.currency.as_deref() == Some(first.as_str()))
        .then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(currency: Option<&str>) -> reporting::StageTotal {
        reporting::StageTotal {
            stage: "demo".into(),
            count: 1,
            amount: 1.0,
            currency: currency.map(str::to_owned),
        }
    }

    #[test]
    fn one_currency_only_when_every_stage_agrees() {
        assert_eq!(one_currency(&[]), None);
        assert_eq!(
            one_currency(&[stage(Some("EUR")), stage(Some("EUR"))]).as_deref(),
            Some("EUR")
        );
        assert_eq!(one_currency(&[stage(Some("EUR")), stage(None)]), None);
    }
}
