//! De-duplication of customers sharing an email: the dry-run plan first, then applying it
//! (`customers::dedupe`, as `POST /v1/customers/dedupe` does).

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::{html, Markup};
use serde::Deserialize;

use super::layout::{csrf_input, page};
use super::respond::{failed, is_htmx, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_domains::customers::{self, DedupeReport};

#[derive(Debug, Deserialize)]
pub struct DedupeForm {
    /// `plan` (dry run) or `apply`.
    #[serde(default)]
    pub step: String,
}

/// The section on the customers page.
pub fn section(s: &Session) -> Markup {
    html! {
        section.card aria-labelledby="dedupe-h" {
            h2 id="dedupe-h" { "Duplicates" }
            p.hint { "Customer records sharing an email can be merged into one. You see the plan before anything changes." }
            (button(s, "plan", "Check for duplicates"))
            div id="dedupe-result" aria-live="polite" {}
        }
    }
}

fn button(s: &Session, step: &str, label: &str) -> Markup {
    html! {
        form method="post" action="/app/customers/dedupe" hx-post="/app/customers/dedupe" hx-target="#dedupe-result" {
            (csrf_input(s))
            input type="hidden" name="step" value=(step);
            button class=(if step == "apply" { "danger" } else { "primary" }) type="submit" { (label) }
        }
    }
}

/// `POST /app/customers/dedupe`.
pub async fn run(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    headers: HeaderMap,
    Form(f): Form<DedupeForm>,
) -> Result<Response, Failure> {
    let dry_run = f.step != "apply";
    let report = customers::dedupe(
        &state.store,
        s.user.workspace,
        s.user.user.id.clone(),
        dry_run,
    )
    .await
    .map_err(|e| failed(&s, e))?;
    let block = result(&s, &report);
    if is_htmx(&headers) {
        return Ok(block.into_response());
    }
    Ok(page(Some(&s), "Duplicates", "/app/customers", &[], block).into_response())
}

fn result(s: &Session, r: &DedupeReport) -> Markup {
    html! {
        @if r.groups.is_empty() {
            p.ok id="dedupe-none" { "No duplicates: every email belongs to one customer." }
        } @else {
            p id="dedupe-summary" {
                @if r.dry_run { "Plan: " (r.merged) " records would be merged into " (r.groups.len()) " customers." }
                @else { "Merged " (r.merged) " records into " (r.groups.len()) " customers." }
            }
            div.table-wrap {
                table {
                    thead { tr { th scope="col" { "Email" } th scope="col" { "Kept" } th scope="col" { "Merged into it" } th scope="col" { "Relationships moved" } } }
                    tbody {
                        @for g in &r.groups {
                            tr {
                                td { (g.email) }
                                td { a href=(format!("/app/customers/{}", g.canonical)) { (g.canonical) } }
                                td { (g.duplicates.join(", ")) }
                                td { (g.edges_moved) }
                            }
                        }
                    }
                }
            }
            @if r.dry_run { (button(s, "apply", "Merge them")) }
        }
    }
}
