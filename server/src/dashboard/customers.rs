//! Customers: the searchable, sortable, paged list of every customer, and a
//! customer's profile: identities, churn and conversion scores with their factors, and one
//! timeline of the customer's events and the agent actions taken on it (ledger receipts).

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use maud::{html, Markup};
use serde_json::Value as Json;

use super::assets::CYTOSCAPE;
use super::layout::{json_script, page};
use super::paging::{
    count_line, list_href, next_order, pager, query_params, sort_header, typed, PAGE,
};
use super::respond::{failed, is_htmx, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_core::error::Error;
use svc_core::ledger::{self, LedgerRow};
use svc_core::plumbing::clock;
use svc_domains::customers::{self, CustomerList, CustomerQuery, CustomerSort, CustomerView};
use svc_domains::graph_api::node_with_label;
use svc_domains::graph_api::query::{self, Access, QueryRequest};
use svc_domains::scoring::{self, Models};

/// `GET /app/customers`: every customer of the workspace, searched, filtered, sorted and paged
/// on the server (`customers::list`, the API's list); htmx's live search gets the results
/// block alone.
pub async fn list(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    headers: HeaderMap,
    Query(params): Query<Vec<(String, String)>>,
) -> Result<Response, Failure> {
    let get = |k: &str| typed(&params, k);
    let mut q = CustomerQuery::from_params(query_params(&params)).map_err(|e| failed(&s, e))?;
    q.limit = PAGE;
    let found = customers::list(&state.store, s.user.workspace, q.clone())
        .await
        .map_err(|e| failed(&s, e))?;
    let view = ListView {
        q: &q,
        stage: get("stage"),
        campaign: get("campaign"),
        min_churn: get("min_churn"),
        max_churn: get("max_churn"),
    };
    let results = view.results(&found);
    if is_htmx(&headers) {
        return Ok(results.into_response());
    }
    Ok(page(
        Some(&s),
        "Customers",
        "/app/customers",
        &[],
        html! {
            form.search.filters role="search" method="get" action="/app/customers"
                hx-get="/app/customers" hx-target="#customer-results" hx-push-url="true"
                hx-trigger="input changed delay:250ms from:#q, search from:#q, change, submit" {
                div.field {
                    label for="q" { "Search customers" }
                    input id="q" name="q" type="search" value=(q.q)
                        placeholder="email, name, phone, external id, trait…";
                }
                div.field {
                    label for="stage" { "Lifecycle stage" }
                    input id="stage" name="stage" type="text" value=(view.stage) placeholder="any";
                }
                div.field {
                    label for="campaign" { "Campaign" }
                    input id="campaign" name="campaign" type="text" value=(view.campaign) placeholder="any";
                }
                div.field {
                    label for="min_churn" { "Churn from" }
                    input id="min_churn" name="min_churn" type="number" min="0" max="1" step="0.01" value=(view.min_churn);
                }
                div.field {
                    label for="max_churn" { "to" }
                    input id="max_churn" name="max_churn" type="number" min="0" max="1" step="0.01" value=(view.max_churn);
                }
                input type="hidden" name="sort" value=(q.sort.as_str());
                input type="hidden" name="order" value=(if q.ascending { "asc" } else { "desc" });
                button type="submit" { "Filter" }
            }
            div id="customer-results" aria-live="polite" { (results) }
            (super::dedupe::section(&s))
        },
    )
    .into_response())
}

/// The list's state, for links that keep the search and filters.
struct ListView<'a> {
    q: &'a CustomerQuery,
    stage: String,
    campaign: String,
    min_churn: String,
    max_churn: String,
}

impl ListView<'_> {
    /// The URL of this list with another sort, order or offset.
    fn href(&self, sort: CustomerSort, ascending: bool, offset: usize) -> String {
        let kept = [
            ("q", self.q.q.as_str()),
            ("stage", &self.stage),
            ("campaign", &self.campaign),
            ("min_churn", &self.min_churn),
            ("max_churn", &self.max_churn),
        ];
        list_href("/app/customers", sort.as_str(), ascending, &kept, offset)
    }

    /// The count, the table and the pager.
    fn results(&self, found: &CustomerList) -> Markup {
        let q = self.q;
        let header = |key: CustomerSort, label: &str| {
            let current = q.sort == key;
            // A new column starts in its natural order: text A-Z, times and scores highest.
            let text = matches!(
                key,
                CustomerSort::Email | CustomerSort::Name | CustomerSort::Phone
            );
            let next = next_order(current, q.ascending, text);
            sort_header(label, current, q.ascending, &self.href(key, next, 0))
        };
        let (offset, shown, total) = (found.offset, found.customers.len(), found.total);
        html! {
            (count_line("customer-count", ("customer", "customers"), offset, shown, total))
            div.table-wrap {
                table {
                    caption.visually-hidden { "Customers" }
                    thead { tr {
                        (header(CustomerSort::Email, "Email"))
                        (header(CustomerSort::Name, "Name"))
                        (header(CustomerSort::Phone, "Phone"))
                        (header(CustomerSort::LastSeen, "Last seen"))
                        (header(CustomerSort::Churn, "Churn"))
                        (header(CustomerSort::Score, "Conversion"))
                    } }
                    tbody id="customer-rows" { (rows(&found.customers)) }
                }
            }
            (pager("customers", offset, shown, total, |o| self.href(q.sort, q.ascending, o)))
        }
    }
}

fn percent(c: &CustomerView, key: &str) -> String {
    c.properties
        .get(key)
        .and_then(Json::as_f64)
        .map(|p| format!("{:.0}%", p * 100.0))
        .unwrap_or_default()
}

fn rows(list: &[CustomerView]) -> Markup {
    html! {
        @if list.is_empty() {
            tr { td colspan="6" { "No customers match." } }
        }
        @for c in list {
            tr {
                td { a href=(format!("/app/customers/{}", c.id)) { (c.email.as_deref().or(c.name.as_deref()).unwrap_or(&c.id)) } }
                td { (c.name.as_deref().unwrap_or("")) }
                td { (c.phone.as_deref().unwrap_or("")) }
                td { @if let Some(t) = &c.last_seen { (super::format::time(t)) } }
                td { (percent(c, "churnScore")) }
                td { (percent(c, "score")) }
            }
        }
    }
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
    let ids = state.store.ids().clone();
    let extras = state
        .store
        .read(ws, move |snap| {
            let node = ids
                .parse_customer(&customer_id)
                .map(|n| node_with_label(snap, n, svc_engine::schema::CUSTOMER))
                .transpose()?
                .flatten()
                .ok_or_else(|| Error::not_found("customer"))?;
            let models = Models::current_at(snap)?;
            let scores = scoring::assess_with(snap, &node, clock::now(), &models).ok();
            let actions = ledger::rows_for_customer(snap, &ids.customer_references(node.id))?;
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
    let ids = state.store.ids();
    let Some(node) = ids.parse_customer(customer_id) else {
        return Vec::new();
    };
    let mut params = serde_json::Map::new();
    // `id(c)` shows the Cypher id, not the engine's.
    params.insert("id".into(), Json::from(query::id_codec(ids).node(node)));
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
