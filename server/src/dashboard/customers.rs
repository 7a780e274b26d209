//! Customers: the searchable, sortable list of the most recently seen customers, and a
//! customer's profile: identities, churn and conversion scores with their factors, and one
//! timeline of the customer's events and the agent actions taken on it (ledger receipts).

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::Value as Json;

use super::assets::CYTOSCAPE;
use super::layout::{json_script, page};
use super::respond::{failed, is_htmx, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_core::error::Error;
use svc_core::ledger::{self, LedgerRow};
use svc_core::plumbing::{clock, ids};
use svc_domains::customers::{self, CustomerView};
use svc_domains::graph_api::node_with_label;
use svc_domains::graph_api::query::{self, Access, QueryRequest};
use svc_domains::scoring::{self, Models};

#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    pub q: String,
    /// `last_seen` (default), `email` or `name`.
    #[serde(default)]
    pub sort: String,
    /// `asc` or `desc` (default).
    #[serde(default)]
    pub dir: String,
}

/// Customers matching `q` (case-insensitive, in id, email, name, phone or external id),
/// sorted by `sort` in `dir`.
pub fn search(mut list: Vec<CustomerView>, q: &ListQuery) -> Vec<CustomerView> {
    let needle = q.q.trim().to_lowercase();
    if !needle.is_empty() {
        list.retain(|c| {
            [
                &Some(c.id.clone()),
                &c.email,
                &c.name,
                &c.phone,
                &c.external_id,
            ]
            .iter()
            .any(|f| {
                f.as_deref()
                    .is_some_and(|v| v.to_lowercase().contains(&needle))
            })
        });
    }
    let key = |c: &CustomerView| -> String {
        match q.sort.as_str() {
            "email" => c.email.clone().unwrap_or_default().to_lowercase(),
            "name" => c.name.clone().unwrap_or_default().to_lowercase(),
            _ => c.last_seen.clone().unwrap_or_default(),
        }
    };
    list.sort_by_key(key);
    if q.dir != "asc" {
        list.reverse();
    }
    list
}

/// `GET /app/customers` (the table body alone for htmx's live search).
pub async fn list(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> Result<Response, Failure> {
    let all = customers::list(&state.store, s.user.workspace)
        .await
        .map_err(|e| failed(&s, e))?;
    let rows = rows(&search(all.customers, &q));
    if is_htmx(&headers) {
        return Ok(rows.into_response());
    }
    let header = |key: &str, label: &str| {
        let current = q.sort == key || (key == "last_seen" && q.sort.is_empty());
        let next_dir = if current && q.dir != "asc" {
            "asc"
        } else {
            "desc"
        };
        let aria = current.then_some(if q.dir == "asc" {
            "ascending"
        } else {
            "descending"
        });
        html! {
            th scope="col" aria-sort=[aria] {
                a href=(format!("/app/customers?sort={key}&dir={next_dir}&q={}", urlencode(&q.q))) { (label) }
            }
        }
    };
    Ok(page(
        Some(&s),
        "Customers",
        "/app/customers",
        &[],
        html! {
            form.search role="search" method="get" action="/app/customers" {
                label for="q" { "Search customers" }
                input id="q" name="q" type="search" value=(q.q) placeholder="email, name, id…"
                    hx-get="/app/customers" hx-trigger="input changed delay:250ms, search"
                    hx-target="#customer-rows" hx-include="closest form";
                input type="hidden" name="sort" value=(q.sort);
                input type="hidden" name="dir" value=(q.dir);
            }
            div.table-wrap {
                table {
                    caption.visually-hidden { "Customers, most recently seen first" }
                    thead { tr {
                        (header("email", "Email"))
                        (header("name", "Name"))
                        th scope="col" { "Phone" }
                        (header("last_seen", "Last seen"))
                    } }
                    tbody id="customer-rows" { (rows) }
                }
            }
            (super::dedupe::section(&s))
        },
    )
    .into_response())
}

fn rows(list: &[CustomerView]) -> Markup {
    html! {
        @if list.is_empty() {
            tr { td colspan="4" { "No customers match." } }
        }
        @for c in list {
            tr {
                td { a href=(format!("/app/customers/{}", c.id)) { (c.email.as_deref().unwrap_or(&c.id)) } }
                td { (c.name.as_deref().unwrap_or("")) }
                td { (c.phone.as_deref().unwrap_or("")) }
                td { (c.last_seen.as_deref().unwrap_or("")) }
            }
        }
    }
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// What the profile shows beyond the API's profile: scores and agent actions.
struct Extras {
    scores: Option<scoring::Assessment>,
    actions: Vec<LedgerRow>,
}

/// One entry of the unified timeline.
enum Entry<'a> {
    Event(&'a customers::TouchpointView),
    Action(&'a LedgerRow),
}

impl Entry<'_> {
    fn at(&self) -> &str {
        match self {
            Entry::Event(t) => t.timestamp.as_deref().unwrap_or(""),
            Entry::Action(r) => &r.created_at,
        }
    }
}

/// `GET /app/customers/{id}`.
pub async fn profile(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Path(id): Path<String>,
) -> Result<Markup, Failure> {
    let ws = s.user.workspace;
    let profile = customers::profile(&state.store, ws, id.clone())
        .await
        .map_err(|e| failed(&s, e))?;
    let timeline = customers::timeline(&state.store, ws, id)
        .await
        .map_err(|e| failed(&s, e))?;
    let customer_id = profile.customer.id.clone();
    let extras = state
        .store
        .read(ws, move |snap| {
            let node = ids::parse_customer_id(&customer_id)
                .map(|n| node_with_label(snap, n, svc_engine::schema::CUSTOMER))
                .transpose()?
                .flatten()
                .ok_or_else(|| Error::not_found("customer"))?;
            let models = Models::current_at(snap)?;
            let scores = scoring::assess_with(snap, &node, clock::now(), &models).ok();
            let actions = ledger::rows_for_customer(snap, &customer_id)?;
            Ok(Extras { scores, actions })
        })
        .await
        .map_err(|e| failed(&s, e))?;
    let graph = neighbourhood(&state, &s, &profile.customer.id).await;
    let mut entries: Vec<Entry> = timeline
        .touchpoints
        .iter()
        .map(Entry::Event)
        .chain(extras.actions.iter().map(Entry::Action))
        .collect();
    entries.sort_by(|a, b| b.at().cmp(a.at()));
    let c = &profile.customer;
    let title = c.name.clone().or(c.email.clone()).unwrap_or(c.id.clone());
    Ok(page(
        Some(&s),
        &title,
        "/app/customers",
        &[CYTOSCAPE],
        html! {
            div.columns {
                section.card aria-labelledby="id-h" {
                    h2 id="id-h" { "Identities" }
                    dl.facts {
                        dt { "Id" } dd { code { (c.id) } }
                        @if let Some(v) = &c.email { dt { "Email" } dd { (v) } }
                        @if let Some(v) = &c.phone { dt { "Phone" } dd { (v) } }
                        @if let Some(v) = &c.external_id { dt { "External id" } dd { (v) } }
                        @if let Some(v) = &c.cio_id { dt { "Customer.io id" } dd { (v) } }
                        @if let Some(v) = &c.last_seen { dt { "Last seen" } dd { (v) } }
                        dt { "Touchpoints" } dd { (profile.touchpoint_count) }
                    }
                    @if let Some(a) = &extras.scores {
                        h3 { "Open loops" }
                        @let loops = scoring::open_loops(&a.neighbourhood.touchpoints);
                        @if loops.is_empty() { p.hint { "None open." } }
                        ul { @for t in loops { li { (t.action) } } }
                    }
                }
                @if let Some(a) = &extras.scores {
                    (score_card("Churn risk", &a.churn, a.churn_model.kind, true))
                    (score_card("Conversion", &a.conversion, a.conversion_model.kind, false))
                }
            }
            @if !graph.is_empty() {
                figure.card {
                    figcaption { "Neighbourhood" }
                    div.graph id="graph" role="img" aria-label=(format!("The customer and its {} nearest relationships", graph.len())) {}
                }
                (json_script("graph-data", &Json::Array(graph)))
            }
            section.card aria-labelledby="tl-h" {
                h2 id="tl-h" { "Timeline" }
                ol.timeline id="timeline" {
                    @if entries.is_empty() { li { "Nothing yet." } }
                    @for e in &entries {
                        @match e {
                            Entry::Event(t) => li.event {
                                time { (t.timestamp.as_deref().unwrap_or("")) }
                                " " strong { (t.action.as_deref().unwrap_or("event")) }
                                @if let Some(ch) = &t.channel { " via " (ch) }
                                @if let Some(cmp) = &t.campaign_id { " · campaign " (cmp) }
                            },
                            Entry::Action(r) => li.action {
                                time { (r.created_at) }
                                " agent " strong { (r.agent) } " " code { (r.capability) }
                                " (" (r.mode) ", " (r.status) ", " (r.credits) " credits)"
                                details {
                                    summary { "Receipt " code { (r.request_id) } }
                                    dl.facts {
                                        dt { "Key" } dd { code { (r.key_id) } }
                                        dt { "Source" } dd { (r.source) }
                                        @if let Some(p) = &r.pending_action_id { dt { "Approval" } dd { code { (p) } } }
                                        @if let Some(k) = &r.idempotency_key { dt { "Idempotency key" } dd { (k) } }
                                        dt { "Ledger row" } dd { code { (r.id) } }
                                    }
                                }
                            },
                        }
                    }
                }
            }
        },
    ))
}

/// A score with its top factors; `higher_is_worse` colours factors that raise it as bad.
/// The customer's neighbourhood (its relationships and their other ends, at most 60) as
/// Cytoscape elements, by a read-only Cypher query; empty when the query fails.
async fn neighbourhood(state: &AppState, s: &Session, customer_id: &str) -> Vec<Json> {
    let Some(node) = ids::parse_customer_id(customer_id) else {
        return Vec::new();
    };
    let mut params = serde_json::Map::new();
    params.insert("id".into(), Json::from(node.0));
    let req = QueryRequest {
        query: "MATCH (c:Customer)-[r]-(n) WHERE id(c) = $id RETURN c, r, n LIMIT 60".into(),
        params: Some(params),
    };
    match query::run(&state.store, s.user.workspace, Access::ReadOnly, req).await {
        Ok(r) => super::console::graph_elements(&r),
        Err(e) => {
            tracing::warn!(error = %e.message, "customer neighbourhood query failed");
            Vec::new()
        }
    }
}

fn score_card(title: &str, score: &scoring::Score, kind: &str, higher_is_worse: bool) -> Markup {
    html! {
        section.card.score aria-label=(title) {
            h2 { (title) }
            p.figure { (format!("{:.0}%", score.probability * 100.0)) " " span.band { (scoring::band(score.probability)) } }
            p.hint { "model: " (kind) }
            table {
                caption { "Top factors" }
                thead { tr { th scope="col" { "Factor" } th scope="col" { "Value" } th scope="col" { "Effect" } } }
                tbody {
                    @for (name, value, c) in score.factors.iter().take(5) {
                        tr {
                            td { (name) }
                            td { (shown(value)) }
                            td class=(if (*c >= 0.0) == higher_is_worse { "worse" } else { "better" }) { (format!("{c:+.2}")) }
                        }
                    }
                }
            }
        }
    }
}

fn shown(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    fn c(id: &str, email: &str, seen: &str) -> CustomerView {
        CustomerView {
            id: id.into(),
            email: Some(email.into()),
            phone: None,
            external_id: None,
            name: None,
            cio_id: None,
            last_seen: Some(seen.into()),
            properties: Map::new(),
        }
    }

    #[test]
    fn search_filters_and_sorts() {
        let all = vec![
            c("cus_1", "b@x.io", "2026-01-02"),
            c("cus_2", "a@x.io", "2026-01-03"),
            c("cus_3", "c@y.io", "2026-01-01"),
        ];
        let q = |q: &str, sort: &str, dir: &str| ListQuery {
            q: q.into(),
            sort: sort.into(),
            dir: dir.into(),
        };
        let ids = |v: Vec<CustomerView>| v.into_iter().map(|c| c.id).collect::<Vec<_>>();
        assert_eq!(
            ids(search(all.clone(), &q("", "", ""))),
            ["cus_2", "cus_1", "cus_3"]
        );
        assert_eq!(
            ids(search(all.clone(), &q("X.IO", "email", "asc"))),
            ["cus_2", "cus_1"]
        );
        assert_eq!(ids(search(all, &q("cus_3", "", ""))), ["cus_3"]);
    }

    #[test]
    fn query_text_is_encoded() {
        assert_eq!(urlencode("a b&c"), "a%20b%26c");
    }
}
