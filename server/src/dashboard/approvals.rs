//! The approvals inbox: pending actions with a preview of what they will do (the email as it
//! will be sent, to whom in full, the call script), counted, grouped by where they came from
//! (a playbook run, an action card, an agent), filtered by capability, approved or rejected one
//! by one or in bulk (one confirmation), and the decided ones kept in a history view.

use std::collections::{BTreeMap, HashMap};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use maud::{html, Markup};
use serde_json::Value;

use super::format::count;
use super::layout::{csrf_input, page};
use super::paging::{pager, PAGE};
use super::respond::{failed, is_htmx, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_core::error::Error;
use svc_gateway::approvals::{self, ApprovalQuery, Origin, PendingView, Recipient};

/// Most actions one bulk decision takes.
pub const BULK_MAX: usize = 200;

/// What the inbox shows: `status` = `pending` (default), `approved`, `rejected`, `expired` or
/// `decided` (every decided one; `view=history` too), `capability` filters, `offset` pages.
#[derive(Debug, Default, serde::Deserialize)]
pub struct InboxQuery {
    #[serde(default)]
    pub view: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub capability: String,
    #[serde(default)]
    pub offset: Option<String>,
    /// How many the last bulk decision took (after its redirect).
    #[serde(default)]
    pub decided: Option<usize>,
    #[serde(default)]
    pub failed: Option<usize>,
}

/// The inbox's status filter: (value, label, the API's `status`).
const FILTERS: [(&str, &str, &str); 5] = [
    ("pending", "Waiting", "pending"),
    ("approved", "Approved", "approved_any"),
    ("rejected", "Rejected", "rejected"),
    ("expired", "Expired", "expired"),
    ("decided", "History", "decided"),
];

/// The actions of one page, with their recipients and origins.
struct Inbox {
    list: approvals::PendingList,
    recipients: HashMap<String, Recipient>,
    origins: HashMap<String, Origin>,
    /// Playbook names of the runs the actions came from.
    playbooks: HashMap<String, String>,
}

async fn load(state: &AppState, s: &Session, q: ApprovalQuery) -> Result<Inbox, Failure> {
    let ws = s.user.workspace;
    let list = approvals::list(&state.store, ws, q)
        .await
        .map_err(|e| failed(s, e))?;
    let customers = list
        .actions
        .iter()
        .filter_map(|a| a.customer_id.clone())
        .collect();
    let requests = list
        .actions
        .iter()
        .map(|a| (a.request_id.clone(), a.agent.clone()))
        .collect();
    let (recipients, origins) = approvals::details(&state.store, ws, customers, requests)
        .await
        .map_err(|e| failed(s, e))?;
    let runs: Vec<String> = origins.values().filter_map(|o| o.run_id.clone()).collect();
    let playbooks = playbook_names(state, ws, runs)
        .await
        .map_err(|e| failed(s, e))?;
    Ok(Inbox {
        list,
        recipients,
        origins,
        playbooks,
    })
}

/// Run id -> the name of its playbook, for the runs named (runs of deleted playbooks are left
/// out). One read per playbook and run of the page, not a scan of every run.
async fn playbook_names(
    state: &AppState,
    ws: svc_core::store::WorkspaceId,
    mut runs: Vec<String>,
) -> Result<HashMap<String, String>, Error> {
    runs.sort();
    runs.dedup();
    let mut names = HashMap::new();
    if runs.is_empty() {
        return Ok(names);
    }
    let list = svc_domains::playbooks::list(&state.store, ws).await?;
    for run in runs {
        for p in &list.playbooks {
            if svc_agents::playbook_runs::runs::get(&state.store, ws, &p.id, &run)
                .await
                .is_ok()
            {
                names.insert(run.clone(), p.name.clone());
                break;
            }
        }
    }
    Ok(names)
}

fn origin_label(o: &Origin, playbooks: &HashMap<String, String>) -> String {
    match o.key.split_once(':') {
        Some(("run", run)) => match playbooks.get(run) {
            Some(name) => format!(
                "Playbook “{name}” · run {}",
                super::playbooks::short_id(run)
            ),
            None => format!("Playbook run {}", super::playbooks::short_id(run)),
        },
        Some(("card", card)) => format!("Action card: {card}"),
        Some(("agent", agent)) => format!("Agent: {agent}"),
        _ => o.key.clone(),
    }
}

/// The inbox's address with a status, capability and offset.
fn inbox_href(status: &str, capability: &str, offset: usize) -> String {
    let mut url = format!("/app/approvals?status={status}");
    if !capability.is_empty() {
        url.push_str(&format!(
            "&capability={}",
            super::format::url_part(capability)
        ));
    }
    if offset > 0 {
        url.push_str(&format!("&offset={offset}"));
    }
    url
}

/// `GET /app/approvals`.
pub async fn inbox(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Query(q): Query<InboxQuery>,
) -> Result<Markup, Failure> {
    let status = match (q.status.as_str(), q.view.as_str()) {
        ("", "history") => "decided",
        ("", _) => "pending",
        (other, _) => other,
    };
    let Some(&(status, _, api_status)) = FILTERS.iter().find(|f| f.0 == status) else {
        return Err(failed(
            &s,
            Error::invalid_field(
                "status",
                status,
                "pending, approved, rejected, expired or decided",
            ),
        ));
    };
    let offset = match q.offset.as_deref().map(str::trim).filter(|o| !o.is_empty()) {
        Some(o) => svc_core::plumbing::paging::offset("offset", o).map_err(|e| failed(&s, e))?,
        None => 0,
    };
    let history = status != "pending";
    let query = ApprovalQuery {
        statuses: ApprovalQuery::states_of(api_status).map_err(|e| failed(&s, e))?,
        capability: Some(q.capability.trim().to_owned()).filter(|c| !c.is_empty()),
        offset,
        limit: PAGE,
    };
    let inbox = load(&state, &s, query).await?;
    let list = &inbox.list;
    let capabilities = &list.capabilities;
    let mut groups: BTreeMap<String, (String, Vec<&PendingView>)> = BTreeMap::new();
    for a in &list.actions {
        let origin = inbox
            .origins
            .get(&a.request_id)
            .cloned()
            .unwrap_or_default();
        groups
            .entry(origin.key.clone())
            .or_insert_with(|| (origin_label(&origin, &inbox.playbooks), Vec::new()))
            .1
            .push(a);
    }
    let tab = |key: &str, label: &str| {
        let current = key == status;
        html! {
            a href=(inbox_href(key, &q.capability, 0)) aria-current=[current.then_some("page")] { (label) }
        }
    };
    let first = list.offset + 1;
    let last = list.offset + list.actions.len();
    Ok(page(
        Some(&s),
        "Approvals",
        "/app/approvals",
        &[],
        html! {
            nav.tabs aria-label="Approvals views" {
                @for (key, label, _) in FILTERS { (tab(key, label)) " " }
            }
            @if let Some(n) = q.decided {
                p.notice role="status" id="bulk-result" {
                    (n) " decided"
                    @if let Some(f) = q.failed.filter(|f| *f > 0) { ", " (f) " could not be (already decided or expired)" }
                    "."
                }
            }
            p.count id="approvals-count" {
                strong { (count(list.total as u64)) }
                @if history { " decided" } @else { " waiting for a decision" }
                @if !q.capability.is_empty() { " (" code { (q.capability) } ")" }
                @if list.total > list.actions.len() && !list.actions.is_empty() {
                    " · showing " (count(first as u64)) "–" (count(last as u64))
                }
            }
            @if capabilities.len() > 1 || !q.capability.is_empty() {
                form.filters method="get" action="/app/approvals" {
                    input type="hidden" name="status" value=(status);
                    label for="capability" { "Capability" }
                    select id="capability" name="capability" {
                        option value="" { "All" }
                        @for c in capabilities {
                            option value=(c) selected[*c == q.capability] { (c) }
                        }
                    }
                    button type="submit" { "Filter" }
                }
            }
            @if list.actions.is_empty() {
                p.card id="no-approvals" {
                    @if history { "Nothing decided yet." } @else { "Nothing waits for a decision." }
                }
            }
            @if !history && !list.actions.is_empty() {
                form id="bulk" method="post" action="/app/approvals/bulk" {
                    (csrf_input(&s))
                    div.actions {
                        button.primary type="submit" name="decision" value="approve" { "Approve selected" }
                        button.danger type="submit" name="decision" value="reject" { "Reject selected" }
                    }
                }
            }
            @for (key, (label, actions)) in &groups {
                section.approval-group aria-label=(label) data-origin=(key) {
                    h2 {
                        (label) " " span.badge { (actions.len()) }
                    }
                    @if !history {
                        label.select-all {
                            input type="checkbox" form="bulk" data-select-group=(key);
                            " Select all " (actions.len())
                        }
                    }
                    div.cards {
                        @for a in actions { (card(&s, a, inbox.recipients.get(a.customer_id.as_deref().unwrap_or("")), Some(key))) }
                    }
                }
            }
            (pager("actions", list.offset, list.actions.len(), list.total, |o| inbox_href(status, &q.capability, o)))
        },
    ))
}

/// `POST /app/approvals/bulk`: the selected actions (`ids`) and the `decision`; without
/// `confirmed` a confirmation page, with it every decision, then back to the inbox with the
/// counts (post/redirect/get).
pub async fn bulk(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Form(form): Form<Vec<(String, String)>>,
) -> Result<Response, Failure> {
    let ids: Vec<String> = form
        .iter()
        .filter(|(k, v)| k == "ids" && v.starts_with("pa_"))
        .map(|(_, v)| v.clone())
        .collect();
    let field = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    };
    let decision = field("decision");
    if decision != "approve" && decision != "reject" {
        return Err(failed(
            &s,
            Error::invalid_field("decision", decision, "approve or reject"),
        ));
    }
    if ids.is_empty() {
        return Ok(Redirect::to("/app/approvals").into_response());
    }
    if ids.len() > BULK_MAX {
        return Err(failed(
            &s,
            Error::invalid_input(format!("at most {BULK_MAX} actions at once")),
        ));
    }
    if field("confirmed") != "yes" {
        let verb = if decision == "approve" {
            "Approve"
        } else {
            "Reject"
        };
        return Ok(page(
            Some(&s),
            "Confirm",
            "/app/approvals",
            &[],
            html! {
                form.card id="bulk-confirm" method="post" action="/app/approvals/bulk" {
                    (csrf_input(&s))
                    h2 { (verb) " " (ids.len()) @if ids.len() == 1 { " action?" } @else { " actions?" } }
                    p {
                        @if decision == "approve" {
                            "Each runs at once, exactly once (emails are sent, calls placed)."
                        } @else {
                            "Their credits are refunded; nothing is sent."
                        }
                    }
                    input type="hidden" name="decision" value=(decision);
                    input type="hidden" name="confirmed" value="yes";
                    @for id in &ids { input type="hidden" name="ids" value=(id); }
                    div.actions {
                        button.primary type="submit" { "Yes, " (verb.to_lowercase()) " " (ids.len()) }
                        a href="/app/approvals" { "Cancel" }
                    }
                }
            },
        )
        .into_response());
    }
    let ws = s.user.workspace;
    let (mut decided, mut refused) = (0usize, 0usize);
    for id in &ids {
        let outcome = match decision {
            "approve" => approvals::approve(&state, ws, id, &s.user.user.id, None).await,
            _ => approvals::reject(&state.store, ws, id, &s.user.user.id, None).await,
        };
        match outcome {
            Ok(_) => decided += 1,
            // Already decided, expired or gone: counted, the rest go on.
            Err(e) if e.code.status() < 500 => refused += 1,
            Err(e) => return Err(failed(&s, e)),
        }
    }
    Ok(Redirect::to(&format!(
        "/app/approvals?decided={decided}&failed={refused}"
    ))
    .into_response())
}

/// `POST /app/approvals/{id}/{approve|reject}`: the decided card for htmx, else back to the
/// inbox.
pub async fn decide(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    headers: HeaderMap,
    Path((id, decision)): Path<(String, String)>,
) -> Result<Response, Failure> {
    let ws = s.user.workspace;
    let decided = match decision.as_str() {
        "approve" => approvals::approve(&state, ws, &id, &s.user.user.id, None).await,
        "reject" => approvals::reject(&state.store, ws, &id, &s.user.user.id, None).await,
        _ => return Ok((StatusCode::NOT_FOUND, "unknown decision").into_response()),
    };
    let view = decided.map_err(|e| failed(&s, e))?;
    if is_htmx(&headers) {
        let customers = view.customer_id.clone().into_iter().collect();
        let (recipients, _) = approvals::details(&state.store, ws, customers, Vec::new())
            .await
            .map_err(|e| failed(&s, e))?;
        let to = recipients.get(view.customer_id.as_deref().unwrap_or(""));
        return Ok(card(&s, &view, to, None).into_response());
    }
    Ok(Redirect::to("/app/approvals").into_response())
}

/// The recipient as a person reads it: `Name <email>`, else the email, phone or id.
fn recipient_text(r: &Recipient) -> String {
    match (&r.name, &r.email, &r.phone) {
        (Some(n), Some(e), _) => format!("{n} <{e}>"),
        (None, Some(e), _) => e.clone(),
        (Some(n), None, Some(p)) => format!("{n} ({p})"),
        (None, None, Some(p)) => p.clone(),
        (Some(n), None, None) => n.clone(),
        (None, None, None) => r.customer_id.clone(),
    }
}

/// One action: what, for whom, the preview, and the decision buttons while pending.
fn card(s: &Session, a: &PendingView, to: Option<&Recipient>, group: Option<&str>) -> Markup {
    let title_id = format!("pa-{}", a.id);
    let to_text = to.map(recipient_text);
    html! {
        article.card.approval id=(a.id) aria-labelledby=(title_id) data-status=(a.status) {
            h2 id=(title_id) {
                @if a.status == "pending" {
                    input.select type="checkbox" form="bulk" name="ids" value=(a.id)
                        data-group=[group] aria-label=(format!("Select {}", a.id));
                    " "
                }
                code { (a.capability) } " by " (a.agent)
            }
            p.meta {
                "Status: " strong.status { (a.status) }
                " · " (a.action_credit_cost) " credits · queued " time { (a.created_at) }
                @if a.status == "pending" {
                    " · expires in " time.countdown datetime=(a.expires_at) data-expires=(a.expires_at) { (a.expires_at) }
                }
            }
            (preview_to(&a.input, to_text.as_deref()))
            @if a.status == "pending" {
                div.actions {
                    form method="post" action=(format!("/app/approvals/{}/approve", a.id))
                        hx-post=(format!("/app/approvals/{}/approve", a.id)) hx-target="closest article" hx-swap="outerHTML" {
                        (csrf_input(s))
                        button.primary type="submit" { "Approve" }
                    }
                    form method="post" action=(format!("/app/approvals/{}/reject", a.id))
                        hx-post=(format!("/app/approvals/{}/reject", a.id)) hx-target="closest article" hx-swap="outerHTML" {
                        (csrf_input(s))
                        button.danger type="submit" { "Reject" }
                    }
                }
            }
            @if let Some(e) = &a.error {
                p.alert role="alert" { (e.get("message").and_then(Value::as_str).unwrap_or("failed")) }
            }
            details {
                summary { "Timeline" }
                ol { @for t in &a.timeline { li { time { (t.ts) } " " (t.state) " by " (t.actor) @if !t.note.is_empty() { ": " (t.note) } } } }
            }
        }
    }
}

/// The preview with the recipient in full when known (else the input's, masked, reference).
fn preview_to(input: &Value, to: Option<&str>) -> Markup {
    match to {
        Some(to) => {
            let mut input = input.clone();
            if let Some(o) = input.as_object_mut() {
                o.insert("customer".into(), Value::String(to.to_owned()));
            }
            preview(&input)
        }
        None => preview(input),
    }
}

/// The email as it will be sent, the call script, or the input as JSON.
pub fn preview(input: &Value) -> Markup {
    let text = |k: &str| input.get(k).and_then(Value::as_str);
    let to = text("customer").unwrap_or("");
    html! {
        @if let (Some(subject), Some(body)) = (text("subject"), text("body")) {
            div.email-preview aria-label="Email preview" {
                p { span.label { "To: " } (to) }
                p { span.label { "Subject: " } strong.subject { (subject) } }
                div.email-body { (body) }
            }
        } @else if let Some(script) = text("script") {
            div.call-preview aria-label="Call script" {
                p { span.label { "Call: " } (to) }
                div.email-body { (script) }
            }
        } @else {
            pre.json { (serde_json::to_string_pretty(input).unwrap_or_default()) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn recipients_read_as_people() {
        let r = |name: Option<&str>, email: Option<&str>, phone: Option<&str>| Recipient {
            customer_id: "cus_1".into(),
            name: name.map(str::to_owned),
            email: email.map(str::to_owned),
            phone: phone.map(str::to_owned),
        };
        assert_eq!(
            recipient_text(&r(Some("Ada"), Some("ada@x.io"), None)),
            "Ada <ada@x.io>"
        );
        assert_eq!(recipient_text(&r(None, Some("ada@x.io"), None)), "ada@x.io");
        assert_eq!(
            recipient_text(&r(Some("Ada"), None, Some("+1 5"))),
            "Ada (+1 5)"
        );
        assert_eq!(recipient_text(&r(None, None, None)), "cus_1");
        let shown = preview_to(
            &json!({"customer": "a***@x.io", "subject": "Hi", "body": "b"}),
            Some("Ada <ada@x.io>"),
        )
        .into_string();
        assert!(
            shown.contains("Ada &lt;ada@x.io&gt;") && !shown.contains("a***"),
            "{shown}"
        );
    }

    #[test]
    fn previews_escape_the_email() {
        let m = preview(&json!({"customer": "a@b.io", "subject": "Hi", "body": "<b>x</b>"}));
        let s = m.into_string();
        assert!(
            s.contains("Subject: ") && s.contains("&lt;b&gt;x&lt;/b&gt;"),
            "{s}"
        );
        let call = preview(&json!({"customer": "cus_1", "script": "Say hello"})).into_string();
        assert!(call.contains("Call script") && call.contains("Say hello"));
        assert!(preview(&json!({"set": {"a": 1}}))
            .into_string()
            .contains("&quot;set&quot;"));
    }
}
