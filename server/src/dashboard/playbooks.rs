//! Playbooks and their runs: create a spec (the service's validation messages shown on the
//! form), start a run on chosen leads (each message queued for approval by default), and pause,
//! resume or cancel it; a run's pivots are listed with their reasons.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use maud::{html, Markup};
use serde_json::json;

use super::layout::{alert, csrf_input, page as shell};
use super::respond::{failed, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_agents::playbook_runs::executor::{self, Control};
use svc_agents::playbook_runs::lead_source::RunRequest;
use svc_agents::playbook_runs::runs::{self, PlaybookRun};
use svc_core::error::Error;
use svc_domains::playbooks::{self, Playbook};

fn field(form: &[(String, String)], name: &str) -> String {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_default()
}

/// The create body of the form (empty fields left out, so the service names what is missing).
pub fn create_body(form: &[(String, String)]) -> serde_json::Value {
    let mut body = json!({});
    for (name, key) in [("name", "name"), ("mode", "mode"), ("buddy", "buddyId")] {
        let v = field(form, name);
        if !v.is_empty() {
            body[key] = json!(v);
        }
    }
    let hypothesis = field(form, "hypothesis");
    if !hypothesis.is_empty() {
        body["strategy"] = json!({ "hypothesis": hypothesis });
    }
    body
}

/// The leads of the run form: one customer reference per line or comma.
pub fn leads(text: &str) -> Vec<String> {
    text.split(['\n', ','])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `GET /app/playbooks`.
pub async fn page(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
) -> Result<Markup, Failure> {
    render(&state, &s, None).await
}

/// `POST /app/playbooks`: create a spec.
pub async fn create(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Form(form): Form<Vec<(String, String)>>,
) -> Result<Response, Failure> {
    let body = create_body(&form);
    let created =
        playbooks::create(&state.store, s.user.workspace, s.user.user.id.clone(), body).await;
    outcome(
        &state,
        &s,
        created.map(|p| format!("Playbook “{}” created.", p.name)),
    )
    .await
}

/// `POST /app/playbooks/{id}`: edit name, status and hypothesis (the service validates).
pub async fn update(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<Vec<(String, String)>>,
) -> Result<Response, Failure> {
    let mut body = create_body(&form);
    let status = field(&form, "status");
    if !status.is_empty() {
        body["status"] = json!(status);
    }
    let updated = playbooks::update(&state.store, s.user.workspace, id, body).await;
    outcome(
        &state,
        &s,
        updated.map(|p| format!("Playbook “{}” saved.", p.name)),
    )
    .await
}

/// `POST /app/playbooks/{id}/run`.
pub async fn run(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<Vec<(String, String)>>,
) -> Result<Response, Failure> {
    let intent = field(&form, "intent");
    let req = RunRequest {
        leads: Some(leads(&field(&form, "leads"))),
        intent: (!intent.is_empty()).then_some(intent),
        ..RunRequest::default()
    };
    let started = executor::start(
        &state.agents,
        s.user.workspace,
        id,
        s.user.user.id.clone(),
        req,
    )
    .await;
    outcome(
        &state,
        &s,
        started.map(|r| format!("Run {} started.", r.id)),
    )
    .await
}

/// `POST /app/playbooks/{id}/runs/{run_id}/{pause|resume|cancel}`.
pub async fn control(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Path((id, run_id, verb)): Path<(String, String, String)>,
) -> Result<Response, Failure> {
    let action = match verb.as_str() {
        "pause" => Control::Pause,
        "resume" => Control::Resume,
        "cancel" => Control::Cancel,
        _ => return Err(failed(&s, Error::not_found("run control"))),
    };
    let done = executor::control(&state.agents, s.user.workspace, id, run_id, action).await;
    match done {
        Ok(_) => Ok(Redirect::to("/app/playbooks").into_response()),
        Err(e) => outcome(&state, &s, Err(e)).await,
    }
}

async fn outcome(
    state: &AppState,
    s: &Session,
    r: Result<String, Error>,
) -> Result<Response, Failure> {
    match r {
        Ok(m) => Ok(render(state, s, Some(Ok(m))).await?.into_response()),
        Err(e) if e.code.status() < 500 => {
            let status = StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::BAD_REQUEST);
            Ok((status, render(state, s, Some(Err(e.message))).await?).into_response())
        }
        Err(e) => Err(failed(s, e)),
    }
}

async fn render(
    state: &AppState,
    s: &Session,
    notice: Option<Result<String, String>>,
) -> Result<Markup, Failure> {
    let ws = s.user.workspace;
    let list = playbooks::list(&state.store, ws)
        .await
        .map_err(|e| failed(s, e))?;
    let mut with_runs = Vec::with_capacity(list.playbooks.len());
    for p in list.playbooks {
        let r = runs::list(&state.store, ws, &p.id)
            .await
            .map_err(|e| failed(s, e))?;
        with_runs.push((p, r.runs));
    }
    Ok(shell(
        Some(s),
        "Playbooks",
        "/app/playbooks",
        &[],
        html! {
            @match &notice {
                Some(Ok(m)) => p.ok.card role="status" id="playbook-notice" { (m) },
                Some(Err(m)) => div id="playbook-notice" { (alert(m)) },
                None => {},
            }
            @if with_runs.is_empty() { p.card { "No playbooks yet." } }
            div.cards {
                @for (p, runs) in &with_runs { (playbook(s, p, runs)) }
            }
            (create_form(s))
        },
    ))
}

fn playbook(s: &Session, p: &Playbook, runs: &[PlaybookRun]) -> Markup {
    html! {
        article.card.playbook id=(p.id) aria-labelledby=(format!("{}-h", p.id)) {
            h2 id=(format!("{}-h", p.id)) { (p.name) " " span.hint { (p.status.as_str()) } }
            p { (p.strategy.hypothesis) }
            p.hint { (p.mode.as_str()) " · " (p.buddy_id.as_str()) " buddy · created " (p.created_at) }
            @if !runs.is_empty() {
                table.runs {
                    caption { "Runs" }
                    thead { tr { th scope="col" { "Run" } th scope="col" { "Status" } th scope="col" { "Samples" } th scope="col" { "Pivots" } th scope="col" { span.visually-hidden { "Controls" } } } }
                    tbody {
                        @for r in runs {
                            tr data-run=(r.id) {
                                td { code { (r.id) } br; span.hint { (r.started_at) } }
                                td.run-status { (r.status) }
                                td { (r.metrics.samples) " (" (r.metrics.successes) " successes)" }
                                td { @for pv in &r.pivots { div { time { (pv.at) } ": " (pv.reason) } } }
                                td.actions {
                                    @for verb in controls(&r.status) {
                                        form method="post" action=(format!("/app/playbooks/{}/runs/{}/{verb}", p.id, r.id)) {
                                            (csrf_input(s))
                                            button type="submit" class=(if *verb == "cancel" { "danger" } else { "" }) { (verb) }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            details.edit {
                summary { "Edit" }
                form.card method="post" action=(format!("/app/playbooks/{}", p.id)) {
                    (csrf_input(s))
                    label for=(format!("{}-name", p.id)) { "Name" }
                    input id=(format!("{}-name", p.id)) name="name" type="text" value=(p.name);
                    label for=(format!("{}-status", p.id)) { "Status" }
                    select id=(format!("{}-status", p.id)) name="status" {
                        @for st in ["draft", "active", "paused", "archived"] {
                            option value=(st) selected[p.status.as_str() == st] { (st) }
                        }
                    }
                    label for=(format!("{}-hypothesis", p.id)) { "Hypothesis" }
                    textarea id=(format!("{}-hypothesis", p.id)) name="hypothesis" rows="2" { (p.strategy.hypothesis) }
                    button type="submit" { "Save" }
                }
            }
            details.start {
                summary { "Start a run" }
                form.card method="post" action=(format!("/app/playbooks/{}/run", p.id)) {
                    (csrf_input(s))
                    label for=(format!("{}-leads", p.id)) { "Leads " span.hint { "(customer ids or emails, one per line)" } }
                    textarea id=(format!("{}-leads", p.id)) name="leads" rows="3" required {}
                    label for=(format!("{}-intent", p.id)) { "What the messages are for" }
                    input id=(format!("{}-intent", p.id)) name="intent" type="text" value="follow-up";
                    p.hint { "Each message is queued for approval in the inbox." }
                    button type="submit" { "Start run" }
                }
            }
        }
    }
}

/// The controls a run in `status` offers.
pub fn controls(status: &str) -> &'static [&'static str] {
    match status {
        "running" => &["pause", "cancel"],
        "paused" | "blocked_credits" | "failed" => &["resume", "cancel"],
        _ => &[],
    }
}

fn create_form(s: &Session) -> Markup {
    html! {
        form.card method="post" action="/app/playbooks" aria-labelledby="new-pb-h" {
            h2 id="new-pb-h" { "New playbook" }
            (csrf_input(s))
            label for="pb-name" { "Name" }
            input id="pb-name" name="name" type="text";
            label for="pb-mode" { "Mode" }
            select id="pb-mode" name="mode" {
                @for m in ["outbound", "inbound", "hybrid"] { option value=(m) { (m) } }
            }
            label for="pb-buddy" { "Buddy" }
            select id="pb-buddy" name="buddy" {
                @for b in ["campaign", "prospect", "pipeline", "insights"] { option value=(b) { (b) } }
            }
            label for="pb-hypothesis" { "Hypothesis" }
            textarea id="pb-hypothesis" name="hypothesis" rows="2" {}
            button type="submit" { "Create playbook" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_become_requests() {
        let f = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        assert_eq!(
            create_body(&[
                f("name", "Q4"),
                f("mode", "outbound"),
                f("buddy", "campaign"),
                f("hypothesis", "")
            ]),
            json!({"name": "Q4", "mode": "outbound", "buddyId": "campaign"})
        );
        assert_eq!(leads("a@x.io\n cus_2 ,\n\n"), ["a@x.io", "cus_2"]);
        assert_eq!(controls("running"), ["pause", "cancel"]);
        assert!(controls("completed").is_empty());
    }
}
