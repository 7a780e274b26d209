//! Workspace settings: the plan (read-only here), the read-only switch and the action policy.

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::{html, Markup};
use serde::Deserialize;

use super::format::count;
use super::forms::{refused_status, see_other};
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

/// `?saved=1` after a successful save (post/redirect/get).
#[derive(Debug, Default, Deserialize)]
pub struct Saved {
    pub saved: Option<String>,
}

/// `GET /app/settings`.
pub async fn page(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Query(q): Query<Saved>,
) -> Result<Markup, Failure> {
    let ws = workspaces::get(&state.store, s.user.workspace)
        .await
        .map_err(|e| failed(&s, e))?;
    let saved = q.saved.is_some().then_some("Settings saved.");
    Ok(render(&s, &ws, None, saved))
}

/// The page again after a refused save: the submitted values, the message at the field.
async fn refused(
    state: &AppState,
    s: &Session,
    f: &SettingsForm,
    status: axum::http::StatusCode,
    message: &str,
) -> Result<Response, Failure> {
    let mut ws = workspaces::get(&state.store, s.user.workspace)
        .await
        .map_err(|e| failed(s, e))?;
    let list = |text: &str| split(text);
    ws.read_only = f.read_only.is_some();
    ws.policy.auto_approve = list(&f.auto_approve);
    ws.policy.forbid = list(&f.forbid);
    let cap = f.max_outreach_per_customer_per_week.trim().to_owned();
    Ok((status, render_with(s, &ws, Some(message), None, Some(&cap))).into_response())
}

fn split(text: &str) -> Vec<String> {
    text.split([',', '\n'])
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `POST /app/settings`.
pub async fn save(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Form(f): Form<SettingsForm>,
) -> Result<Response, Failure> {
    let list = split;
    let cap = match f.max_outreach_per_customer_per_week.trim() {
        "" => None,
        text => match text.parse::<u32>() {
            Ok(n) => Some(n),
            Err(_) => {
                let msg = "The weekly outreach cap must be a whole number.";
                return refused(&state, &s, &f, axum::http::StatusCode::BAD_REQUEST, msg).await;
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
        Ok(_) => Ok(see_other("/app/settings?saved=1")),
        Err(e) if e.code.status() < 500 => {
            refused(&state, &s, &f, refused_status(&e), &e.message).await
        }
        Err(e) => Err(failed(&s, e)),
    }
}

fn render(s: &Session, ws: &WorkspaceView, error: Option<&str>, saved: Option<&str>) -> Markup {
    render_with(s, ws, error, saved, None)
}

/// `cap`: the cap field as typed (kept when it was refused).
fn render_with(
    s: &Session,
    ws: &WorkspaceView,
    error: Option<&str>,
    saved: Option<&str>,
    cap: Option<&str>,
) -> Markup {
    let cap = cap.map_or_else(
        || ws.policy.max_outreach_per_customer_per_week.to_string(),
        str::to_owned,
    );
    // The field the message is about: the one it names, else the cap (the form's only
    // free-typed number).
    let at = match error {
        Some(e) if e.contains("auto_approve") || e.contains("auto-approve") => "auto_approve",
        Some(e) if e.contains("forbid") => "forbid",
        _ => "cap",
    };
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
                    dt { "Monthly action credits" } dd data-api="/api/v1/workspace#/monthly_credit_limit" { (count(ws.monthly_credit_limit)) }
                    dt { "Your role" } dd { (format!("{:?}", s.user.user.role).to_lowercase()) }
                }
                p.hint { "Only the operator of the service changes the plan and credit limits (svcd admin)." }
            }
            form.card method="post" action="/app/settings" {
                (csrf_input(s))
                @if let Some(m) = saved { p.ok role="status" { (m) } }
                div.check {
                    input id="read_only" name="read_only" type="checkbox" checked[ws.read_only];
                    label for="read_only" { "Read-only workspace (refuse every write)" }
                }
                label for="auto_approve" { "Auto-approved capabilities " span.hint { "(comma separated, e.g. crm.mutate)" } }
                input id="auto_approve" name="auto_approve" type="text" value=(ws.policy.auto_approve.join(", "));
                @if at == "auto_approve" { @if let Some(e) = error { (alert(e)) } }
                label for="forbid" { "Forbidden capabilities" }
                input id="forbid" name="forbid" type="text" value=(ws.policy.forbid.join(", "));
                @if at == "forbid" { @if let Some(e) = error { (alert(e)) } }
                label for="cap" { "Emails and calls per customer per week" }
                input id="cap" name="max_outreach_per_customer_per_week" type="text" inputmode="numeric" value=(cap) aria-describedby=[(at == "cap" && error.is_some()).then_some("settings-error")];
                @if at == "cap" { @if let Some(e) = error { div id="settings-error" { (alert(e)) } } }
                button type="submit" { "Save settings" }
            }
        },
    )
}
