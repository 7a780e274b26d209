//! Playbooks and their runs: create a spec (the service's validation messages shown on the
//! form), start a run on chosen leads (each message queued for approval by default), and pause,
//! resume or cancel it; a run's pivots are listed with their reasons.

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::json;

use super::format::{self, count};
use super::forms::{self, see_other, Refusal};
use super::layout::{csrf_input, page as shell};
use super::respond::{failed, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_agents::playbook_runs::executor::{self, Control};
use svc_agents::playbook_runs::lead_source::RunRequest;
use svc_agents::playbook_runs::leads::RunLead;
use svc_agents::playbook_runs::runs::{self, PlaybookRun, RunQuery};
use svc_core::error::Error;
use svc_core::store::RecordScan;
use svc_domains::playbooks::{self, Playbook};

/// Leads listed under a run on the page (the run's page lists them all, paged).
const LEADS_SHOWN: usize = 25;
/// Runs listed per playbook, newest first (the playbook's runs page lists them all, paged).
pub const RUNS_SHOWN: usize = 10;

/// The outcome a redirect after a successful form names (`?done=created&id=pb_...`).
#[derive(Debug, Default, Deserialize)]
pub struct Done {
    pub done: Option<String>,
    pub id: Option<String>,
    pub run: Option<String>,
}

/// A refused form, to show again with what was typed.
#[derive(Debug, Default)]
pub struct Again {
    /// `new`, or the playbook id whose edit or run form was sent.
    pub form: String,
    pub kind: &'static str,
    pub values: Vec<(String, String)>,
    pub refusal: Refusal,
}

impl Again {
    fn value(&self, form: &str, kind: &str, name: &str) -> Option<&str> {
        (self.form == form && self.kind == kind).then(|| forms::value(&self.values, name))
    }
    fn error(&self, form: &str, kind: &str, aliases: &[&str]) -> Option<Markup> {
        (self.form == form && self.kind == kind)
            .then(|| self.refusal.at(aliases))
            .flatten()
    }
}

fn field(form: &[(String, String)], name: &str) -> String {
    forms::value(form, name).to_owned()
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
    Query(done): Query<Done>,
) -> Result<Markup, Failure> {
    render(&state, &s, Some(&done), None).await
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
        ("new", "create"),
        form,
        created.map(|p| redirect("created", &p.id, None)),
    )
    .await
}

fn redirect(done: &str, id: &str, run: Option<&str>) -> String {
    let mut to = format!("/app/playbooks?done={done}&id={}", urlencode(id));
    if let Some(r) = run {
        to.push_str(&format!("&run={}", urlencode(r)));
    }
    to.push_str(&format!("#{}", urlencode(id)));
    to
}

use format::url_part as urlencode;

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
    let updated = playbooks::update(&state.store, s.user.workspace, id.clone(), body).await;
    outcome(
        &state,
        &s,
        (&id, "edit"),
        form,
        updated.map(|p| redirect("saved", &p.id, None)),
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
        id.clone(),
        s.user.user.id.clone(),
        req,
    )
    .await;
    outcome(
        &state,
        &s,
        (&id, "run"),
        form,
        started.map(|r| redirect("started", &id, Some(&r.id))),
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
    let done = executor::control(
        &state.agents,
        s.user.workspace,
        id.clone(),
        run_id.clone(),
        action,
    )
    .await;
    let word = match action {
        Control::Pause => "paused",
        Control::Resume => "resumed",
        Control::Cancel => "cancelled",
    };
    let to = redirect(word, &id, Some(&run_id));
    outcome(&state, &s, (&id, "control"), Vec::new(), done.map(|_| to)).await
}

/// A redirect to `location` after success; the page again (4xx, input kept) after a refusal.
async fn outcome(
    state: &AppState,
    s: &Session,
    (form, kind): (&str, &'static str),
    values: Vec<(String, String)>,
    r: Result<String, Error>,
) -> Result<Response, Failure> {
    match r {
        Ok(location) => Ok(see_other(&location)),
        Err(e) if e.code.status() < 500 => {
            let again = Again {
                form: form.to_owned(),
                kind,
                values,
                refusal: Refusal::of(&e),
            };
            Ok((
                forms::refused_status(&e),
                render(state, s, None, Some(&again)).await?,
            )
                .into_response())
        }
        Err(e) => Err(failed(s, e)),
    }
}

/// What a redirect's outcome code says, in words (from the stored playbook and run).
fn notice(done: &Done, list: &[(Playbook, Vec<PlaybookRun>, usize)]) -> Option<String> {
    let id = done.id.as_deref()?;
    let (p, _, _) = list.iter().find(|(p, _, _)| p.id == id)?;
    Some(match done.done.as_deref()? {
        "created" => format!("Playbook “{}” created.", p.name),
        "saved" => format!("Playbook “{}” saved.", p.name),
        "started" => format!(
            "Run of “{}” started: its messages wait for approval in the inbox.",
            p.name
        ),
        "paused" => format!("Run of “{}” paused.", p.name),
        "resumed" => format!("Run of “{}” resumed.", p.name),
        "cancelled" => format!("Run of “{}” cancelled.", p.name),
        _ => return None,
    })
}

async fn render(
    state: &AppState,
    s: &Session,
    done: Option<&Done>,
    again: Option<&Again>,
) -> Result<Markup, Failure> {
    let ws = s.user.workspace;
    let list = playbooks::list(&state.store, ws)
        .await
        .map_err(|e| failed(s, e))?;
    let mut with_runs = Vec::with_capacity(list.playbooks.len());
    let mut run_leads = std::collections::HashMap::new();
    for p in list.playbooks {
        let newest = RunQuery {
            ascending: false,
            limit: RUNS_SHOWN,
            ..RunQuery::default()
        };
        let r = runs::list(&state.store, ws, &p.id, &newest)
            .await
            .map_err(|e| failed(s, e))?;
        for run in &r.runs {
            let leads = state
                .store
                .scan::<RunLead>(
                    ws,
                    RecordScan {
                        prefix: format!("{}/{}/", p.id, run.id),
                        limit: Some(LEADS_SHOWN),
                        ..RecordScan::default()
                    },
                )
                .await
                .map_err(|e| failed(s, e))?;
            run_leads.insert(run.id.clone(), leads);
        }
        with_runs.push((p, r.runs, r.total));
    }
    let notice = done.and_then(|d| notice(d, &with_runs));
    let no_again = Again::default();
    let again = again.unwrap_or(&no_again);
    Ok(shell(
        Some(s),
        "Playbooks",
        "/app/playbooks",
        &[],
        html! {
            @if let Some(m) = &notice { p.ok.card role="status" id="playbook-notice" { (m) } }
            @if !again.form.is_empty() {
                div id="playbook-notice" { p.alert role="alert" { "Not saved: " (again.refusal.message) } }
            }
            @if with_runs.is_empty() { p.card { "No playbooks yet: describe one below, then start a run on a few customers." } }
            div.cards {
                @for (p, runs, total) in &with_runs { (playbook(s, p, runs, *total, &run_leads, again)) }
            }
            (create_form(s, again))
        },
    ))
}

fn playbook(
    s: &Session,
    p: &Playbook,
    runs: &[PlaybookRun],
    total_runs: usize,
    leads: &std::collections::HashMap<String, Vec<RunLead>>,
    again: &Again,
) -> Markup {
    let name = again.value(&p.id, "edit", "name").unwrap_or(&p.name);
    let hypothesis = again
        .value(&p.id, "edit", "hypothesis")
        .unwrap_or(&p.strategy.hypothesis);
    let status = again
        .value(&p.id, "edit", "status")
        .unwrap_or(p.status.as_str());
    let editing = again.form == p.id && again.kind == "edit";
    let starting = again.form == p.id && again.kind == "run";
    html! {
        article.card.playbook id=(p.id) aria-labelledby=(format!("{}-h", p.id)) {
            h2 id=(format!("{}-h", p.id)) { (p.name) " " span.hint { (p.status.as_str()) } }
            p { (p.strategy.hypothesis) }
            p.hint { (p.mode.as_str()) " · " (p.buddy_id.as_str()) " buddy · created " (format::time(&p.created_at)) }
            @if !runs.is_empty() {
                div.table-wrap {
                    table.runs {
                        caption { "Runs" }
                        thead { tr { th scope="col" { "Started" } th scope="col" { "Status" } th scope="col" { "What it did" } th scope="col" { "Outcomes" } th scope="col" { span.visually-hidden { "Controls" } } } }
                        tbody {
                            @for r in runs {
                                tr data-run=(r.id) {
                                    td { a href=(run_href(&p.id, &r.id)) { (format::time(&r.started_at)) } br; span.hint title=(r.id) { "run " (short_id(&r.id)) } }
                                    td.run-status {
                                        (status_words(&r.status))
                                        @if let Some(e) = r.plan.as_ref().and_then(|pl| pl.error.as_ref()) {
                                            p.hint { (run_error(&r.status, &e.message)) }
                                        }
                                    }
                                    td.run-did { (did(r)) }
                                    td {
                                        @if r.metrics.samples == 0 { span.hint { "no outcomes reported yet" } }
                                        @else { (count(r.metrics.samples)) " contacted · " (count(r.metrics.successes)) " succeeded" }
                                        @for pv in &r.pivots { div.hint { "Changed course " (format::time(&pv.at)) ": " (pv.reason) } }
                                    }
                                    td.actions {
                                        @for verb in controls(&r.status) {
                                            form method="post" action=(format!("/app/playbooks/{}/runs/{}/{verb}", p.id, r.id)) {
                                                (csrf_input(s))
                                                button type="submit" class=(if *verb == "cancel" { "danger" } else { "" }) { (verb) }
                                            }
                                        }
                                    }
                                }
                                @if let Some(ls) = leads.get(&r.id).filter(|l| !l.is_empty()) {
                                    tr.leads {
                                        td colspan="5" {
                                            details {
                                                summary { "Leads of this run (" (lead_total(r, ls)) ")" }
                                                ul.leads {
                                                    @for l in ls { li { (lead(l)) } }
                                                }
                                                @if lead_total(r, ls) > ls.len() as u64 {
                                                    p.hint { "The first " (ls.len()) " are shown; " a href=(run_href(&p.id, &r.id)) { "the run's page" } " lists them all." }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                p.hint.run-count {
                    @if total_runs > runs.len() {
                        "The " (runs.len()) " most recent of " strong { (count(total_runs as u64)) } " runs · "
                    }
                    a href=(format!("/app/playbooks/{}/runs", urlencode(&p.id))) { "All runs" }
                }
            }
            details.edit open[editing] {
                summary { "Edit" }
                form.card method="post" action=(format!("/app/playbooks/{}", p.id)) {
                    (csrf_input(s))
                    @if editing { @if let Some(m) = again.refusal.general(&["name", "status", "strategy"]) { (m) } }
                    label for=(format!("{}-name", p.id)) { "Name" }
                    input id=(format!("{}-name", p.id)) name="name" type="text" value=(name);
                    @if let Some(m) = again.error(&p.id, "edit", &["name"]) { (m) }
                    label for=(format!("{}-status", p.id)) { "Status" }
                    select id=(format!("{}-status", p.id)) name="status" {
                        @for st in ["draft", "active", "paused", "archived"] {
                            option value=(st) selected[status == st] { (st) }
                        }
                    }
                    @if let Some(m) = again.error(&p.id, "edit", &["status"]) { (m) }
                    label for=(format!("{}-hypothesis", p.id)) { "Hypothesis" }
                    textarea id=(format!("{}-hypothesis", p.id)) name="hypothesis" rows="2" { (hypothesis) }
                    @if let Some(m) = again.error(&p.id, "edit", &["strategy"]) { (m) }
                    button type="submit" { "Save" }
                }
            }
            details.start open[starting] {
                summary { "Start a run" }
                form.card method="post" action=(format!("/app/playbooks/{}/run", p.id)) {
                    (csrf_input(s))
                    @if starting { (again.refusal.general(&[]).unwrap_or_default()) }
                    label for=(format!("{}-leads", p.id)) { "Leads " span.hint { "(customer emails or ids, one per line)" } }
                    textarea id=(format!("{}-leads", p.id)) name="leads" rows="3" required { (again.value(&p.id, "run", "leads").unwrap_or_default()) }
                    label for=(format!("{}-intent", p.id)) { "What the messages are for" }
                    input id=(format!("{}-intent", p.id)) name="intent" type="text" value=(again.value(&p.id, "run", "intent").unwrap_or("follow-up"));
                    p.hint { "Each message is queued for approval in the inbox." }
                    button type="submit" { "Start run" }
                }
            }
        }
    }
}

/// The page of one run (its leads, paged).
pub fn run_href(playbook_id: &str, run_id: &str) -> String {
    format!(
        "/app/playbooks/{}/runs/{}",
        urlencode(playbook_id),
        urlencode(run_id)
    )
}

/// The tail of a time-ordered id, enough to tell runs apart.
pub fn short_id(id: &str) -> &str {
    let start = id.len().saturating_sub(6);
    id.get(start..).unwrap_or(id)
}

fn lead_total(r: &PlaybookRun, shown: &[RunLead]) -> u64 {
    r.plan
        .as_ref()
        .map_or(shown.len() as u64, |p| u64::from(p.counts.taken))
        .max(shown.len() as u64)
}

/// A run's status in words.
pub fn status_words(status: &str) -> &str {
    match status {
        "running" => "running",
        "paused" => "paused",
        "cancelled" => "cancelled",
        "completed" => "completed: every lead worked",
        "blocked_credits" => "stopped: out of action credits",
        "failed" => "failed",
        other => other,
    }
}

pub fn run_error(status: &str, message: &str) -> String {
    if status == "blocked_credits" {
        format!(
            "The workspace used this month's action credits before every lead was worked ({message}). \
             Resume once the plan's limit is raised or next month starts: the run goes on with the lead it stopped at."
        )
    } else {
        message.to_owned()
    }
}

/// What a run did, in words: leads, queued, sent, skipped, failed, credits.
pub fn did(r: &PlaybookRun) -> Markup {
    let Some(plan) = &r.plan else {
        return html! { span.hint { "recorded outcomes only" } };
    };
    let c = &plan.counts;
    // `data-api`: the run's API answer each count is (checked by tests/tests/pages.rs).
    let api = |pointer: &str| {
        format!(
            "/v1/playbooks/{}/runs/{}#/run/plan/{pointer}",
            r.playbook_id, r.id
        )
    };
    let n = |v: u32| count(u64::from(v));
    html! {
        span data-api=(api("counts/taken")) { (n(c.taken)) } @if c.taken == 1 { " lead" } @else { " leads" }
        @if c.queued > 0 { " · " a href="/app/approvals" { span data-api=(api("counts/queued")) { (n(c.queued)) } " queued for approval" } }
        @if c.sent > 0 { " · " span data-api=(api("counts/sent")) { (n(c.sent)) } " sent" }
        @if c.skipped > 0 { " · " span data-api=(api("counts/skipped")) { (n(c.skipped)) } " skipped" }
        @if c.failed > 0 { " · " span data-api=(api("counts/failed")) { (n(c.failed)) } " failed" }
        " · " span data-api=(api("creditsCharged")) { (count(plan.credits_charged)) } @if plan.credits_charged == 1 { " credit" } @else { " credits" }
    }
}

pub fn lead(l: &RunLead) -> Markup {
    html! {
        @match &l.customer_id {
            Some(c) => a href=(format!("/app/customers/{c}")) { (l.reference) },
            None => span { (l.reference) },
        }
        " · "
        @match l.status.as_str() {
            "queued" | "pending" if l.pending_action_id.is_some() => {
                @let id = l.pending_action_id.as_deref().unwrap_or_default();
                a href=(format!("/app/approvals#{id}")) { "waiting for approval" }
            },
            "queued" => "queued",
            "sent" => "sent",
            "skipped" => { "skipped" @if let Some(r) = &l.reason { ": " (r) } },
            "failed" => { "failed" @if let Some(r) = &l.reason { ": " (r) } },
            other => (other),
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

fn create_form(s: &Session, again: &Again) -> Markup {
    let v = |name: &str| again.value("new", "create", name).unwrap_or_default();
    let err = |aliases: &[&str]| again.error("new", "create", aliases);
    let mode = v("mode");
    let buddy = v("buddy");
    html! {
        form.card method="post" action="/app/playbooks" aria-labelledby="new-pb-h" {
            h2 id="new-pb-h" { "New playbook" }
            (csrf_input(s))
            @if again.form == "new" { @if let Some(m) = again.refusal.general(&["name", "mode", "buddyId", "strategy"]) { (m) } }
            label for="pb-name" { "Name" }
            input id="pb-name" name="name" type="text" value=(v("name"));
            @if let Some(m) = err(&["name"]) { (m) }
            label for="pb-mode" { "Mode" }
            select id="pb-mode" name="mode" {
                @for m in ["outbound", "inbound", "hybrid"] { option value=(m) selected[mode == m] { (m) } }
            }
            @if let Some(m) = err(&["mode"]) { (m) }
            label for="pb-buddy" { "Buddy" }
            select id="pb-buddy" name="buddy" {
                @for b in ["campaign", "prospect", "pipeline", "insights"] { option value=(b) selected[buddy == b] { (b) } }
            }
            @if let Some(m) = err(&["buddyId"]) { (m) }
            label for="pb-hypothesis" { "Hypothesis" }
            textarea id="pb-hypothesis" name="hypothesis" rows="2" { (v("hypothesis")) }
            @if let Some(m) = err(&["strategy"]) { (m) }
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
