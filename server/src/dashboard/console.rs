//! The Cypher console: a query box; results as a table and, when they hold nodes or
//! relationships, as a Cytoscape.js graph; EXPLAIN / PROFILE plans as a tree. Queries run with
//! the session's rights (a person may write, as with a JWT on `/v1/graph/query`).

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::{json, Value as Json};
use svc_query::{PlanTree, QueryResult, ResultValue};

use super::assets::CYTOSCAPE;
use super::layout::{alert, csrf_input, json_script, page as shell};
use super::respond::{is_htmx, Failure};
use super::session::Session;

use crate::state::AppState;
use svc_domains::graph_api::query::{self, Access, QueryRequest};

const EXAMPLE: &str =
    "MATCH (c:Customer)-[r:HAS_TOUCHPOINT]->(t:Touchpoint) RETURN c, r, t LIMIT 25";

#[derive(Debug, Deserialize)]
pub struct QueryForm {
    #[serde(default)]
    pub query: String,
}

#[derive(Debug, Default, Deserialize)]
pub struct ExploreQuery {
    /// A node's public id (`cus_...`, `node_...`, `tp_...`): show its neighbourhood.
    #[serde(default)]
    pub explore: String,
}

/// The query that shows a node's neighbourhood (relationships and their other ends).
pub const NEIGHBOURHOOD: &str = "MATCH (a)-[r]-(n) WHERE id(a) = $id RETURN a, r, n LIMIT 60";

/// `GET /app/graph`: the console, with the explorer's starting points; `?explore=<id>` shows
/// that node's neighbourhood (a read-only query).
pub async fn page(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Query(q): Query<ExploreQuery>,
) -> Result<Markup, Failure> {
    let ws = s.user.workspace;
    let recent = svc_domains::customers::CustomerQuery {
        limit: 8,
        ..Default::default()
    };
    let customers = svc_domains::customers::list(&state.store, ws, recent)
        .await
        .map_err(|e| super::respond::failed(&s, e))?;
    let campaigns = svc_domains::customers::campaigns(&state.store, ws)
        .await
        .map_err(|e| super::respond::failed(&s, e))?;
    let starts = html! {
        section.card aria-labelledby="explore-h" {
            h2 id="explore-h" { "Explore a neighbourhood" }
            @if customers.customers.is_empty() && campaigns.campaigns.is_empty() {
                p.hint { "Nothing to explore yet." }
            }
            ul.explore {
                @for c in customers.customers.iter().take(8) {
                    li { a href=(format!("/app/graph?explore={}", c.id)) { "Customer " (c.email.as_deref().unwrap_or(&c.id)) } }
                }
                @for c in campaigns.campaigns.iter().take(8) {
                    li { a href=(format!("/app/graph?explore={}", c.id)) { "Campaign " (c.name.clone().or(c.campaign_id.clone()).unwrap_or(c.id.clone())) } }
                }
            }
        }
    };
    // The query names the node by its engine id (`id(a)`).
    let Some(id) = state.store.ids().parse_any_node(&q.explore).map(|n| n.0) else {
        return Ok(render(&s, EXAMPLE, html! {}, starts));
    };
    let mut params = serde_json::Map::new();
    params.insert("id".into(), Json::from(id));
    let req = QueryRequest {
        query: NEIGHBOURHOOD.into(),
        params: Some(params),
    };
    let block = match query::run(&state.store, ws, Access::ReadOnly, req).await {
        Ok(r) => result_block(&r, Some(id)),
        Err(e) if e.code.status() < 500 => alert(&e.message),
        Err(e) => return Err(super::respond::failed(&s, e)),
    };
    Ok(render(&s, NEIGHBOURHOOD, block, starts))
}

/// `POST /app/graph`: run the query; the result block alone for htmx.
pub async fn run(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    headers: HeaderMap,
    Form(f): Form<QueryForm>,
) -> Result<Response, Failure> {
    let req = QueryRequest {
        query: f.query.clone(),
        params: None,
    };
    let (status, block) =
        match query::run(&state.store, s.user.workspace, Access::ReadWrite, req).await {
            Ok(r) => (StatusCode::OK, result_block(&r, None)),
            Err(e) if e.code.status() < 500 => {
                let mut msg = e.message.clone();
                if let Some(d) = &e.details {
                    if let (Some(l), Some(c)) = (d.get("line"), d.get("column")) {
                        msg = format!("{msg} (line {l}, column {c})");
                    }
                }
                (StatusCode::BAD_REQUEST, alert(&msg))
            }
            Err(e) => return Err(super::respond::failed(&s, e)),
        };
    if is_htmx(&headers) {
        // htmx swaps 2xx only; errors are shown as 200 fragments with role=alert.
        return Ok(block.into_response());
    }
    Ok((status, render(&s, &f.query, block, html! {})).into_response())
}

fn render(s: &Session, text: &str, result: Markup, after: Markup) -> Markup {
    shell(
        Some(s),
        "Cypher console",
        "/app/graph",
        &[CYTOSCAPE],
        html! {
            form.card method="post" action="/app/graph" hx-post="/app/graph" hx-target="#result" hx-swap="innerHTML" {
                (csrf_input(s))
                label for="query" { "Query " span.hint { "(prefix with EXPLAIN or PROFILE to see the plan)" } }
                textarea id="query" name="query" rows="4" spellcheck="false" required aria-describedby="query-keys" { (text) }
                p.hint id="query-keys" { "Ctrl+Enter runs. Earlier queries: " select id="query-history" aria-label="Earlier queries" { option value="" { "—" } } }
                button.primary type="submit" { "Run" }
            }
            div id="result" aria-live="polite" { (result) }
            (after)
        },
    )
}

/// `centre`: the engine id of the node a neighbourhood is about (highlighted).
fn result_block(r: &QueryResult, centre: Option<u64>) -> Markup {
    let graph = graph_elements(r);
    html! {
        p.hint.stats {
            (r.stats.rows) " rows in " (r.stats.elapsed_us) " µs"
            @if r.stats.contains_updates() {
                " · " (r.stats.nodes_created) " nodes created, " (r.stats.relationships_created)
                " relationships created, " (r.stats.properties_set) " properties set"
            }
        }
        @if let Some(plan) = &r.plan {
            section.card aria-labelledby="plan-h" {
                h2 id="plan-h" { "Plan" }
                ul.plan { (plan_node(plan)) }
            }
        }
        // The graph first: a long table would push it out of view.
        @if !graph.is_empty() {
            figure.card {
                figcaption { "As a graph " span.hint { "(colour by label; click a node to open its neighbourhood)" } }
                div.graph id="graph" data-centre=[centre.map(|c| format!("n{c}"))] role="img" aria-label=(format!("Graph of {} elements from the result", graph.len())) {}
                ul.legend id="graph-legend" aria-label="Labels" {}
            }
            (json_script("graph-data", &Json::Array(graph)))
        }
        @if !r.columns.is_empty() {
            div.table-wrap.result {
                table id="result-table" {
                    thead { tr { @for c in &r.columns { th scope="col" { (c) } } } }
                    tbody {
                        @for row in &r.rows {
                            tr { @for v in row { td { (cell(v)) } } }
                        }
                    }
                }
            }
        }
    }
}

fn plan_node(p: &PlanTree) -> Markup {
    html! {
        li {
            strong { (p.operator) } " " (p.details)
            @if let Some(rows) = p.rows { " · " (rows) " rows" }
            @if let Some(t) = p.time_us { " · " (t) " µs" }
            @if !p.children.is_empty() { ul { @for c in &p.children { (plan_node(c)) } } }
        }
    }
}

fn cell(v: &ResultValue) -> String {
    match v {
        ResultValue::Null => "null".to_owned(),
        ResultValue::String(s) => s.clone(),
        ResultValue::Node(n) => {
            format!("({}:{} {})", n.id, n.labels.join(":"), short(&n.properties))
        }
        ResultValue::Relationship(r) => format!("[{}:{} {}→{}]", r.id, r.rel_type, r.start, r.end),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

fn short(props: &std::collections::BTreeMap<String, ResultValue>) -> String {
    let text = serde_json::to_string(props).unwrap_or_default();
    if text.chars().count() > 80 {
        format!("{}…", text.chars().take(80).collect::<String>())
    } else {
        text
    }
}

/// Cytoscape elements of the nodes and relationships anywhere in the result (deduplicated;
/// relationships only between nodes that are shown).
pub fn graph_elements(r: &QueryResult) -> Vec<Json> {
    let mut nodes = std::collections::BTreeMap::new();
    let mut rels = std::collections::BTreeMap::new();
    fn walk<'a>(
        v: &'a ResultValue,
        nodes: &mut std::collections::BTreeMap<u64, &'a svc_query::ResultNode>,
        rels: &mut std::collections::BTreeMap<u64, &'a svc_query::ResultRelationship>,
    ) {
        match v {
            ResultValue::Node(n) => {
                nodes.insert(n.id, n);
            }
            ResultValue::Relationship(r) => {
                rels.insert(r.id, r);
            }
            ResultValue::List(l) => l.iter().for_each(|v| walk(v, nodes, rels)),
            ResultValue::Map(m) => m.values().for_each(|v| walk(v, nodes, rels)),
            _ => {}
        }
    }
    r.rows
        .iter()
        .flatten()
        .for_each(|v| walk(v, &mut nodes, &mut rels));
    let label = |n: &svc_query::ResultNode| -> String {
        ["name", "email", "action", "campaignId"]
            .iter()
            .find_map(|k| match n.properties.get(*k) {
                Some(ResultValue::String(s)) => Some(s.clone()),
                _ => None,
            })
            .unwrap_or_else(|| n.labels.first().cloned().unwrap_or_default())
    };
    let mut out: Vec<Json> = nodes
        .values()
        .map(|n| json!({"data": {"id": format!("n{}", n.id), "label": label(n), "kind": n.labels.first()}}))
        .collect();
    out.extend(
        rels.values()
            .filter(|r| nodes.contains_key(&r.start) && nodes.contains_key(&r.end))
            .map(|r| json!({"data": {"id": format!("r{}", r.id), "source": format!("n{}", r.start), "target": format!("n{}", r.end), "label": r.rel_type}})),
    );
    out
}
