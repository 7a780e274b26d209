//! Workspace settings: the plan (read-only here), the read-only switch and the action policy.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::{html, Markup};
use serde::Deserialize;

use super::layout::{alert, csrf_input, page as shell};
use super::respond::{failed, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_core::workspaces::{self, PolicyUpdate, WorkspaceUpdate, WorkspaceView};

#[derive(Debug, Deserialize)]
pub struct SettingsForm {
    /// Present (`on`) when the box is ticked.
    pub read_only: Option<String>,
    #[serde(default)]
    pub auto_approve: String,
    #[serde(default)]
    pub forbid: String,
    #[serde(default)]
    pub max_outreach_per_customer_per_week: String,
}

async fn page_get(state: &AppState, s: &Session) -> Result<Markup, Failure> {
    let ws = workspaces::get(&state.store, s.user.workspace)
        .await
        .map_err(|e| failed(s, e))?;
    Ok(render(s, &ws, None, None))
}

/// `GET /app/settings`.
pub async fn page(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
) -> Result<Markup, Failure> {
    page_get(&state, &s).await
}

/// `POST /app/settings`.
pub async fn save(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Form(f): Form<SettingsForm>,
) -> Result<Response, Failure> {
    let list = |text: &str| -> Vec<String> {
        text.split([',', '\n'])
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let cap = match f.max_outreach_per_customer_per_week.trim() {
        "" => None,
        text => match text.parse::<u32>() {
            Ok(n) => Some(n),
            Err(_) => {
                let ws = workspaces::get(&state.store, s.user.workspace)
                    .await
                    .map_err(|e| failed(&s, e))?;
                let msg = "The weekly outreach cap must be a whole number.";
                return Ok((
                    axum::http::StatusCode::BAD_REQUEST,
                    render(&s, &ws, Some(msg), None),
                )
                    .into_response());
            }
        },
    };
    let update = WorkspaceUpdate {
        plan: None,
        monthly_credit_limit: None,
        read_only: Some(f.read_only.is_some()),
        policy: Some(PolicyUpdate {
            forbid: Some(list(&f.forbid)),
            auto_approve: Some(list(&f.auto_approve)),
            max_outreach_per_customer_per_week: cap,
        }),
    };
    match workspaces::update(&state.store, s.user.workspace, update).await {
        Ok(ws) => Ok(render(&s, &ws, None, Some("Settings saved.")).into_response()),
        Err(e) if e.code.status() < 500 => {
            let ws = workspaces::get(&state.store, s.user.workspace)
                .await
                .map_err(|e| failed(&s, e))?;
            let status = axum::http::StatusCode::from_u16(e.code.status())
                .unwrap_or(axum::http::StatusCode::BAD_REQUEST);
            Ok((status, render(&s, &ws, Some(&e.message), None)).into_response())
        }
        Err(e) => Err(failed(&s, e)),
    }
}

fn render(s: &Session, ws: &WorkspaceView, error: Option<&str>, saved: Option<&str>) -> Markup {
    shell(
        Some(s),
        "Workspace settings",
        "/app/settings",
        &[],
        html! {
            section.card aria-labelledby="ws-h" {
                h2 id="ws-h" { (ws.name) }
                dl.facts {
                    dt { "Workspace id" } dd { code { (ws.id) } }
                    dt { "Plan" } dd { (ws.plan.as_str()) }
                    dt { "Monthly action credits" } dd { (ws.monthly_credit_limit) }
                    dt { "Your role" } dd { (format!("{:?}", s.user.user.role).to_lowercase()) }
                }
                p.hint { "Only the operator of the service changes the plan and credit limits (svcd admin)." }
            }
            form.card method="post" action="/app/settings" {
                (csrf_input(s))
                @if let Some(e) = error { (alert(e)) }
                @if let Some(m) = saved { p.ok role="status" { (m) } }
                div.check {
                    input id="read_only" name="read_only" type="checkbox" checked[ws.read_only];
                    label for="read_only" { "Read-only workspace (refuse every write)" }
                }
                label for="auto_approve" { "Auto-approved capabilities " span.hint { "(comma separated, e.g. crm.mutate)" } }
                input id="auto_approve" name="auto_approve" type="text" value=(ws.policy.auto_approve.join(", "));
                label for="forbid" { "Forbidden capabilities" }
                input id="forbid" name="forbid" type="text" value=(ws.policy.forbid.join(", "));
                label for="cap" { "Emails and calls per customer per week" }
                input id="cap" name="max_outreach_per_customer_per_week" type="number" min="0" max="1000" value=(ws.policy.max_outreach_per_customer_per_week);
                button type="submit" { "Save settings" }
            }
        },
    )
}
