//! The Cypher console: a query box with a schema sidebar (labels with their counts,
//! relationship types, property keys per label; each inserts a query snippet); results in a
//! table / graph tab (the graph chosen when the result holds nodes), the graph coloured by
//! label and grown in place when a node is clicked; EXPLAIN / PROFILE plans as a tree.
//!
//! Post/redirect/get: a query that only reads is answered by `GET /app/graph?q=<query>`
//! (a reload or a shared link shows the result again); the form's POST redirects there. A
//! query that writes runs on the POST (a GET never writes) and the POST answers the page.
//! Queries run with the session's rights (a person may write, as with a JWT on
//! `/v1/graph/query`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form, Json as JsonBody};
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::{json, Value as Json};
use svc_query::{PlanTree, QueryResult, ResultValue};

use super::assets::CYTOSCAPE;
use super::format::{count, url_part};
use super::forms::see_other;
use super::layout::{alert, csrf_input, json_script, page as shell};
use super::respond::{is_htmx, Failure};
use super::session::Session;

use crate::state::AppState;
use svc_core::error::Error;
use svc_core::plumbing::ids::PublicIds;
use svc_core::store::WorkspaceId;
use svc_domains::graph_api::query::{self, Access, QueryRequest};

const EXAMPLE: &str =
    "MATCH (c:Customer)-[r:HAS_TOUCHPOINT]->(t:Touchpoint) RETURN c, r, t LIMIT 25";

/// Longest query carried in a URL (`?q=`); a longer one is answered on the POST itself.
const MAX_URL_QUERY: usize = 4000;

#[derive(Debug, Deserialize)]
pub struct QueryForm {
    #[serde(default)]
    pub query: String,
}

#[derive(Debug, Default, Deserialize)]
pub struct ConsoleQuery {
    /// A read-only query to run and show.
    #[serde(default)]
    pub q: String,
    /// A node's public id (`cus_…`, `tp_…`, `node_…`): show its neighbourhood.
    #[serde(default)]
    pub explore: String,
}

/// The query that shows a node's neighbourhood (relationships and their other ends).
pub const NEIGHBOURHOOD: &str = "MATCH (a)-[r]-(n) WHERE id(a) = $id RETURN a, r, n LIMIT 60";

/// The [`NEIGHBOURHOOD`] query of node `id` (its Cypher id, as results show it).
fn neighbourhood_request(id: u64) -> QueryRequest {
    let mut params = serde_json::Map::new();
    // As an integer Cypher reads: ids past i64 (none a store shows) read back as negatives.
    params.insert("id".into(), Json::from(id as i64));
    QueryRequest {
        query: NEIGHBOURHOOD.into(),
        params: Some(params),
    }
}

/// Whether `text` only reads (so a GET may run it). A statement that does not parse counts as
/// reading: running it only reports the parse error.
pub fn reads_only(text: &str) -> bool {
    match svc_query::parse_schema(text) {
        Ok(Some(cmd)) => !cmd.writes(),
        Ok(None) => svc_query::parse(text).map_or(true, |s| s.is_read_only()),
        Err(_) => true,
    }
}

/// `GET /app/graph`: the console; `?q=` runs a read-only query, `?explore=<id>` shows that
/// node's neighbourhood.
pub async fn page(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Query(q): Query<ConsoleQuery>,
) -> Result<Response, Failure> {
    let ws = s.user.workspace;
    let sidebar = schema_sidebar(ws);
    let starts = explore_starts(&state, &s).await?;
    if !q.q.trim().is_empty() {
        // A GET never writes: a writing statement is put back in the box to run with the button.
        let (status, block) = if reads_only(&q.q) {
            run_block(&state, &s, &q.q, Access::ReadOnly, None).await?
        } else {
            (
                StatusCode::OK,
                alert("This query changes the graph: press Run to run it."),
            )
        };
        return Ok((status, render(&s, &q.q, block, sidebar, starts)).into_response());
    }
    // The query names the node by its Cypher id (`id(a)`), not the engine's.
    let ids = state.store.ids();
    let Some(id) = ids.parse_any_node(&q.explore) else {
        return Ok(render(&s, EXAMPLE, html! {}, sidebar, starts).into_response());
    };
    let shown = query::id_codec(ids).node(id) as u64;
    let (status, block) = neighbourhood_block(&state, &s, shown).await?;
    Ok((status, render(&s, NEIGHBOURHOOD, block, sidebar, starts)).into_response())
}

/// `POST /app/graph`: a read-only query redirects to its GET (htmx: the result block, the
/// address pushed); a writing one runs here.
pub async fn run(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    headers: HeaderMap,
    Form(f): Form<QueryForm>,
) -> Result<Response, Failure> {
    let readable = reads_only(&f.query) && f.query.len() <= MAX_URL_QUERY;
    let location = format!("/app/graph?q={}", url_part(&f.query));
    if readable && !is_htmx(&headers) {
        return Ok(see_other(&location));
    }
    let access = if readable {
        Access::ReadOnly
    } else {
        Access::ReadWrite
    };
    let (status, block) = run_block(&state, &s, &f.query, access, None).await?;
    if !readable {
        forget_schema(s.user.workspace);
    }
    if is_htmx(&headers) {
        // htmx swaps 2xx only; errors are shown as 200 fragments with role=alert.
        let mut resp = block.into_response();
        if readable {
            if let Ok(v) = HeaderValue::from_str(&location) {
                resp.headers_mut().insert("hx-push-url", v);
            }
        }
        return Ok(resp);
    }
    let sidebar = schema_sidebar(s.user.workspace);
    let starts = explore_starts(&state, &s).await?;
    Ok((status, render(&s, &f.query, block, sidebar, starts)).into_response())
}

#[derive(Debug, Default, Deserialize)]
pub struct NodeParam {
    /// The Cypher id of a node drawn in the graph (its element id without the `n`), as
    /// query results show it (never the engine's id).
    #[serde(default)]
    pub node: Option<u64>,
}

/// `GET /app/graph/neighbourhood?node=<id>`: the node's neighbourhood as graph elements (what
/// a click on a node adds to the drawn graph), from the same query as `?explore=`.
pub async fn neighbourhood(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Query(p): Query<NodeParam>,
) -> Response {
    let Some(id) = p.node else {
        return (
            StatusCode::BAD_REQUEST,
            JsonBody(json!({"error": "node: a node id is required"})),
        )
            .into_response();
    };
    let req = neighbourhood_request(id);
    match query::run(&state.store, s.user.workspace, Access::ReadOnly, req).await {
        Ok(r) => JsonBody(json!({"elements": graph_elements(&r)})).into_response(),
        Err(e) => {
            let status =
                StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let message = if status.is_server_error() {
                tracing::error!(error = %e.message, "neighbourhood failed");
                "Something went wrong on our side; try again.".to_owned()
            } else {
                e.message
            };
            (status, JsonBody(json!({"error": message}))).into_response()
        }
    }
}

/// Runs `text` and renders its result (or its refusal as an alert).
async fn run_block(
    state: &AppState,
    s: &Session,
    text: &str,
    access: Access,
    centre: Option<u64>,
) -> Result<(StatusCode, Markup), Failure> {
    let req = QueryRequest {
        query: text.to_owned(),
        params: None,
    };
    let r = query::run(&state.store, s.user.workspace, access, req).await;
    outcome(state.store.ids(), r, centre).map_err(|e| super::respond::failed(s, e))
}

async fn neighbourhood_block(
    state: &AppState,
    s: &Session,
    id: u64,
) -> Result<(StatusCode, Markup), Failure> {
    let req = neighbourhood_request(id);
    let r = query::run(&state.store, s.user.workspace, Access::ReadOnly, req).await;
    outcome(state.store.ids(), r, Some(id)).map_err(|e| super::respond::failed(s, e))
}

/// The result block, or a refusal's alert with its status; a failure of the service is the
/// error page (`Err`).
fn outcome(
    ids: &PublicIds,
    r: Result<QueryResult, Error>,
    centre: Option<u64>,
) -> Result<(StatusCode, Markup), Error> {
    match r {
        Ok(r) => Ok((StatusCode::OK, result_block(ids, &r, centre))),
        Err(e) if e.code.status() < 500 => {
            let mut msg = e.message.clone();
            if let Some(d) = &e.details {
                if let (Some(l), Some(c)) = (d.get("line"), d.get("column")) {
                    msg = format!("{msg} (line {l}, column {c})");
                }
            }
            let status = StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::BAD_REQUEST);
            Ok((status, alert(&msg)))
        }
        Err(e) => Err(e),
    }
}

/// The explorer's starting points: recent customers and the campaigns.
async fn explore_starts(state: &AppState, s: &Session) -> Result<Markup, Failure> {
    let ws = s.user.workspace;
    let recent = svc_domains::customers::CustomerQuery {
        limit: 8,
        ..Default::default()
    };
    let customers = svc_domains::customers::list(&state.store, ws, recent)
        .await
        .map_err(|e| super::respond::failed(s, e))?;
    let campaigns = svc_domains::customers::campaigns(&state.store, ws)
        .await
        .map_err(|e| super::respond::failed(s, e))?;
    Ok(html! {
        section.card aria-labelledby="explore-h" {
            h2 id="explore-h" { "Explore a neighbourhood" }
            @if customers.customers.is_empty() && campaigns.campaigns.is_empty() {
                p.hint { "Nothing to explore yet." }
            }
            ul.explore {
                @for c in customers.customers.iter().take(8) {
                    li { a href=(format!("/app/graph?explore={}", url_part(&c.id))) { "Customer " (c.name.as_deref().or(c.email.as_deref()).unwrap_or(&c.id)) } }
                }
                @for c in campaigns.campaigns.iter().take(8) {
                    li { a href=(format!("/app/graph?explore={}", url_part(&c.id))) { "Campaign " (c.name.clone().or(c.campaign_id.clone()).unwrap_or(c.id.clone())) } }
                }
            }
        }
    })
}

/// Labels sampled for their property keys, and nodes sampled per label.
const SCHEMA_LABELS: usize = 20;
const KEY_SAMPLE: usize = 200;

/// What the sidebar shows: labels with counts, relationship types with counts, property keys
/// per label (from a sample of each label's nodes).
#[derive(Debug, Default)]
pub struct Schema {
    pub labels: Vec<(String, u64)>,
    pub types: Vec<(String, u64)>,
    pub keys: Vec<(String, Vec<String>)>,
}

/// The schema through the graph query API (read-only, one snapshot per query). A failure
/// leaves the sidebar empty with a note: the console itself still works.
pub async fn schema(state: &AppState, ws: WorkspaceId) -> Result<Schema, Error> {
    let ask = |text: String| {
        let store = state.store.clone();
        async move {
            let req = QueryRequest {
                query: text,
                params: None,
            };
            query::run(&store, ws, Access::ReadOnly, req).await
        }
    };
    let pairs = |r: QueryResult| -> Vec<(String, u64)> {
        r.rows
            .into_iter()
            .filter_map(|row| match (row.first(), row.get(1)) {
                (Some(ResultValue::String(s)), Some(ResultValue::Int(n))) => {
                    Some((s.clone(), u64::try_from(*n).unwrap_or(0)))
                }
                _ => None,
            })
            .collect()
    };
    let labels = pairs(
        ask("MATCH (n) UNWIND labels(n) AS label RETURN label, count(*) AS nodes ORDER BY nodes DESC, label LIMIT 50".into())
            .await?,
    );
    let types = pairs(
        ask("MATCH ()-[r]->() RETURN type(r) AS type, count(*) AS relationships ORDER BY relationships DESC, type LIMIT 50".into())
            .await?,
    );
    let mut keys = Vec::new();
    for (label, _) in labels.iter().take(SCHEMA_LABELS) {
        let r = ask(format!(
            "MATCH (n:{}) WITH n LIMIT {KEY_SAMPLE} UNWIND keys(n) AS key RETURN DISTINCT key ORDER BY key LIMIT 60",
            ident(label)
        ))
        .await?;
        let found: Vec<String> = r
            .rows
            .into_iter()
            .filter_map(|row| match row.into_iter().next() {
                Some(ResultValue::String(s)) => Some(s),
                _ => None,
            })
            .collect();
        keys.push((label.clone(), found));
    }
    Ok(Schema {
        labels,
        types,
        keys,
    })
}

/// A label, type or key as Cypher reads it: bare when it is a plain identifier, else quoted
/// in backticks (a backtick inside doubled).
pub fn ident(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        name.to_owned()
    } else {
        format!("`{}`", name.replace('`', "``"))
    }
}

/// How long a counted schema is shown before it is counted again. Counting reads every node
/// and relationship of the workspace (hundreds of milliseconds on a large one), so the console
/// page shows a recent count at once and counts in a request of its own when there is none.
const SCHEMA_TTL: Duration = Duration::from_secs(30);
/// Most workspaces whose schema is kept (each is a few kilobytes).
const SCHEMA_CACHE_MAX: usize = 1024;

type SchemaCache = Mutex<HashMap<WorkspaceId, (Instant, Arc<Schema>)>>;

/// Counted schemas per workspace (keyed by the workspace: one never sees another's).
fn schema_cache() -> &'static SchemaCache {
    static CACHE: OnceLock<SchemaCache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn cached_schema(ws: WorkspaceId) -> Option<(Instant, Arc<Schema>)> {
    let cache = schema_cache().lock().unwrap_or_else(|e| e.into_inner());
    cache
        .get(&ws)
        .filter(|(at, _)| at.elapsed() < SCHEMA_TTL)
        .cloned()
}

fn remember_schema(ws: WorkspaceId, schema: Arc<Schema>) {
    let mut cache = schema_cache().lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= SCHEMA_CACHE_MAX {
        cache.retain(|_, (at, _)| at.elapsed() < SCHEMA_TTL);
        if cache.len() >= SCHEMA_CACHE_MAX {
            cache.clear();
        }
    }
    cache.insert(ws, (Instant::now(), schema));
}

/// After a write from the console: the next page counts again.
fn forget_schema(ws: WorkspaceId) {
    schema_cache()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&ws);
}

/// The sidebar: the workspace's recent count when there is one, else a placeholder that htmx
/// fills from `GET /app/graph/schema` (without JavaScript: a link that counts and comes back).
fn schema_sidebar(ws: WorkspaceId) -> Markup {
    match cached_schema(ws) {
        Some((at, sc)) => sidebar(&sc, at.elapsed()),
        None => html! {
            aside.card.schema id="schema" aria-labelledby="schema-h" hx-get="/app/graph/schema" hx-trigger="load" hx-swap="outerHTML" {
                h2 id="schema-h" { "Schema" }
                p.hint { a href="/app/graph/schema" { "Count labels and relationship types" } }
            }
        },
    }
}

/// `GET /app/graph/schema`: counts the schema; the sidebar for htmx, else back to the console
/// (which now shows it).
pub async fn schema_page(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    headers: HeaderMap,
) -> Response {
    let ws = s.user.workspace;
    let block = match schema(&state, ws).await {
        Ok(sc) => {
            let sc = Arc::new(sc);
            remember_schema(ws, sc.clone());
            sidebar(&sc, Duration::ZERO)
        }
        Err(e) => {
            tracing::warn!(error = %e.message, "console schema");
            html! { aside.card.schema id="schema" aria-labelledby="schema-h" { h2 id="schema-h" { "Schema" } p.hint { "The schema could not be read just now." } } }
        }
    };
    if is_htmx(&headers) {
        return block.into_response();
    }
    see_other("/app/graph")
}

/// One snippet: a link that runs it (no JavaScript), which dashboard.js turns into
/// "insert into the query box".
fn snippet(text: &str, body: Markup) -> Markup {
    html! {
        a.snippet href=(format!("/app/graph?q={}", url_part(text))) data-snippet=(text) title=(text) { (body) }
    }
}

fn sidebar(sc: &Schema, age: Duration) -> Markup {
    html! {
        aside.card.schema id="schema" aria-labelledby="schema-h" data-counted="true" {
            h2 id="schema-h" { "Schema" }
            p.hint {
                "Click to put a query in the box. Counted "
                @if age.as_secs() < 2 { "just now" } @else { (age.as_secs()) " s ago" }
                "."
            }
            @if sc.labels.is_empty() { p.hint { "The graph is empty." } }
            @if !sc.labels.is_empty() {
                h3 { "Labels" }
                ul id="schema-labels" {
                    @for (l, n) in &sc.labels {
                        li data-label=(l) { (snippet(&format!("MATCH (n:{}) RETURN n LIMIT 25", ident(l)), html! { (l) })) " " span.count { (count(*n)) } }
                    }
                }
            }
            @if !sc.types.is_empty() {
                h3 { "Relationship types" }
                ul id="schema-types" {
                    @for (t, n) in &sc.types {
                        li data-type=(t) { (snippet(&format!("MATCH (a)-[r:{}]->(b) RETURN a, r, b LIMIT 25", ident(t)), html! { (t) })) " " span.count { (count(*n)) } }
                    }
                }
            }
            @if sc.keys.iter().any(|(_, k)| !k.is_empty()) {
                h3 { "Property keys" }
                @for (l, keys) in &sc.keys {
                    @if !keys.is_empty() {
                        details data-label=(l) {
                            summary { (l) }
                            ul.keys {
                                @for k in keys {
                                    li { (snippet(&format!("MATCH (n:{}) WHERE n.{} IS NOT NULL RETURN n.{} LIMIT 25", ident(l), ident(k), ident(k)), html! { (k) })) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn render(s: &Session, text: &str, result: Markup, sidebar: Markup, after: Markup) -> Markup {
    shell(
        Some(s),
        "Cypher console",
        "/app/graph",
        &[CYTOSCAPE],
        html! {
            div.console-layout {
                div.console-main {
                    form.card method="post" action="/app/graph" hx-post="/app/graph" hx-target="#result" hx-swap="innerHTML" {
                        (csrf_input(s))
                        label for="query" { "Query " span.hint { "(prefix with EXPLAIN or PROFILE to see the plan)" } }
                        textarea id="query" name="query" rows="4" spellcheck="false" required aria-describedby="query-keys" { (text) }
                        p.hint id="query-keys" { "Ctrl+Enter runs. " label for="query-history" { "Earlier queries:" } " " select id="query-history" { option value="" { "—" } } }
                        button.primary type="submit" { "Run" }
                    }
                    div id="result" aria-live="polite" { (result) }
                    (after)
                }
                (sidebar)
            }
        },
    )
}

/// `centre`: the Cypher id of the node a neighbourhood is about (highlighted). Results with
/// nodes open on the graph tab, others on the table; without JavaScript both panels show.
fn result_block(ids: &PublicIds, r: &QueryResult, centre: Option<u64>) -> Markup {
    let graph = graph_elements(r);
    let has_graph = !graph.is_empty();
    let has_table = !r.columns.is_empty();
    let first = if has_graph { "graph" } else { "table" };
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
        @if has_graph && has_table {
            // Shown by dashboard.js, which then hides the panel not chosen.
            div.tabs role="tablist" aria-label="Result view" id="result-tabs" data-selected=(first) hidden {
                button type="button" role="tab" id="tab-table" aria-controls="panel-table" aria-selected=(if first == "table" { "true" } else { "false" }) { "Table" }
                button type="button" role="tab" id="tab-graph" aria-controls="panel-graph" aria-selected=(if first == "graph" { "true" } else { "false" }) { "Graph" }
            }
        }
        @if has_graph {
            div.panel id="panel-graph" role=[has_table.then_some("tabpanel")] aria-labelledby=[has_table.then_some("tab-graph")] {
                figure.card {
                    figcaption { "As a graph " span.hint { "(colour by label; click a node to add its neighbours)" } }
                    div.graph id="graph" data-centre=[centre.map(|c| format!("n{c}"))] role="img" aria-label=(format!("Graph of {} elements from the result", graph.len())) {}
                    ul.legend id="graph-legend" aria-label="Labels" {}
                }
                (json_script("graph-data", &Json::Array(graph)))
            }
        }
        @if has_table {
            div.panel id="panel-table" role=[has_graph.then_some("tabpanel")] aria-labelledby=[has_graph.then_some("tab-table")] {
                div.table-wrap.result tabindex="0" role="region" aria-label="Result rows" {
                    table id="result-table" {
                        thead { tr { @for c in &r.columns { th scope="col" { (c) } } } }
                        tbody {
                            @for row in &r.rows {
                                tr { @for v in row { td { (cell_markup(ids, v)) } } }
                            }
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

/// A cell; a node links to its neighbourhood (the keyboard's way to explore from a result).
fn cell_markup(ids: &PublicIds, v: &ResultValue) -> Markup {
    match v {
        ResultValue::Node(n) => {
            // Results show Cypher ids; the explorer takes the node's public id.
            let engine = query::id_codec(ids).node_id(n.id as i64);
            let id = ids.node(&n.labels, engine);
            html! { a href=(format!("/app/graph?explore={}", url_part(&id))) title="Show its neighbourhood" { (cell(v)) } }
        }
        other => html! { (cell(other)) },
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reading_statements_run_on_a_get() {
        assert!(reads_only("MATCH (n) RETURN n"));
        assert!(reads_only("SHOW INDEXES"));
        assert!(reads_only("MATCH (n"));
        assert!(!reads_only("CREATE (n:X)"));
        assert!(!reads_only("MATCH (n) SET n.a = 1"));
        assert!(!reads_only("CREATE INDEX FOR (n:Customer) ON (n.plan)"));
    }

    #[test]
    fn names_are_quoted_unless_plain() {
        assert_eq!(ident("Customer"), "Customer");
        assert_eq!(ident("_a1"), "_a1");
        assert_eq!(ident("has space"), "`has space`");
        assert_eq!(ident("1st"), "`1st`");
        assert_eq!(ident("a`b"), "`a``b`");
        assert_eq!(ident(""), "``");
    }
}
