//! The capabilities catalogue (every contract of the gateway with its schemas and examples)
//! and the month's usage: the workspace's action credits against the plan, per key.

use axum::extract::State;
use axum::Extension;
use maud::{html, Markup};
use serde_json::Value;

use super::format::count;
use super::layout::page as shell;
use super::respond::{failed, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_core::ledger;
use svc_core::{keys, workspaces};
use svc_gateway::registry::{self, Descriptor};

/// `GET /app/capabilities`.
pub async fn page(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
) -> Result<Markup, Failure> {
    let ws = s.user.workspace;
    let settings = workspaces::get(&state.store, ws)
        .await
        .map_err(|e| failed(&s, e))?;
    let list = keys::list(&state.store, &state.usage, ws)
        .await
        .map_err(|e| failed(&s, e))?;
    let month = ledger::current_month();
    let key_ids: Vec<String> = list.keys.iter().map(|k| k.id.clone()).collect();
    let (used, per_key) = {
        let month = month.clone();
        state
            .store
            .read(ws, move |snap| {
                let used = ledger::workspace_month_used(snap, &month)?;
                let per_key = key_ids
                    .iter()
                    .map(|id| Ok(ledger::month_usage(snap, id, &month)?.1))
                    .collect::<svc_core::error::Result<Vec<u64>>>()?;
                Ok((used, per_key))
            })
            .await
            .map_err(|e| failed(&s, e))?
    };
    Ok(shell(
        Some(&s),
        "Capabilities and usage",
        "/app/capabilities",
        &[],
        html! {
            section.card aria-labelledby="usage-h" {
                h2 id="usage-h" { "Usage in " (month) }
                // `data-api`: the API answer each figure shows (checked by tests/tests/pages.rs;
                // `data-api-as` names the key whose credential reads it).
                p id="usage-total" {
                    strong data-api="/api/v1/capabilities/usage/actions#/workspace_used" { (count(used)) } " of "
                    span data-api="/api/v1/workspace#/monthly_credit_limit" { (count(settings.monthly_credit_limit)) } " action credits used ("
                    (settings.plan.as_str()) " plan)"
                }
                meter min="0" max=(settings.monthly_credit_limit) value=(used) aria-label="Credits used" {}
                // Focusable: on a phone the table scrolls sideways, by keyboard too.
                div.table-wrap tabindex="0" role="region" aria-label="Credits per key" {
                    table {
                        thead { tr { th scope="col" { "Key" } th scope="col" { "Agent" } th scope="col" { "Credits this month" } th scope="col" { "Own limit" } } }
                        tbody {
                            @for (k, n) in list.keys.iter().zip(&per_key) {
                                tr {
                                    td { (k.name) } td { (k.agent) }
                                    td data-api="/api/v1/capabilities/usage/actions#/key_used" data-api-as=(k.id) { (count(*n)) }
                                    td {
                                        @match k.quota_override_monthly {
                                            Some(q) => span data-api=(format!("/api/v1/keys#/keys/[id={}]/quota_override_monthly", k.id)) { (count(q)) },
                                            None => "plan",
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            section aria-labelledby="cat-h" {
                h2 id="cat-h" { "Catalogue" }
                div.cards id="catalogue" {
                    @for e in registry::all() { (capability(&e.descriptor)) }
                }
            }
        },
    ))
}

fn capability(d: &Descriptor) -> Markup {
    html! {
        article.card id=(format!("cap-{}", d.id)) aria-labelledby=(format!("cap-{}-h", d.id)) {
            h3 id=(format!("cap-{}-h", d.id)) { code { (d.id) } " " (d.title) }
            p { (d.description) }
            dl.facts {
                dt { "Cost" } dd { span data-api=(format!("/api/v1/capabilities#/capabilities/[id={}]/action_credit_cost", d.id)) { (count(d.action_credit_cost)) } " credits" }
                dt { "Modes" } dd { (d.allowed_modes.join(", ")) }
                dt { "Approval" } dd { (d.approval_behavior.description) }
                dt { "Grant" } dd { code { (d.grant) } }
                @if let Some(k) = d.requires_integration { dt { "Needs" } dd { (k.label()) } }
            }
            details { summary { "Input schema" } pre.json { (pretty(&d.input_schema)) } }
            details { summary { "Output schema" } pre.json { (pretty(&d.output_schema)) } }
            @for ex in &d.examples {
                details {
                    summary { "Example: " (ex.title) " (" (ex.mode) ")" }
                    pre.json { (pretty(&ex.input)) }
                    @if let Some(out) = &ex.output { p.hint { "Result:" } pre.json { (pretty(out)) } }
                }
            }
        }
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}
