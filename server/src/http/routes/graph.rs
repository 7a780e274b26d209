//! `/v1/graph` (export; optional auth, demo data without credentials) and `/v1/graph/query`
//! (JWT or agent key; writes for JWT users only).

use crate::http::error::ErrorResponse;
use std::collections::HashMap;

use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;

use crate::http::error::ErrorBody;
use crate::http::extract::{AnyAuth, ApiJson, OptionalAuth};
use crate::state::AppState;
use svc_core::auth::Principal;
use svc_core::error::Error;
use svc_core::store::WorkspaceId;
use svc_domains::graph_api::export::{self, ExportMode, GraphExport};
use svc_domains::graph_api::path::{self, GraphPath};
use svc_domains::graph_api::query::{self, Access, QueryRequest};

/// The workspace's entities and relationships (`mode=full`, the default) or all but the
/// Touchpoints (`mode=summary`). Without credentials: a fixed demo graph (`demo: true`); an
/// invalid credential is still 401.
#[utoipa::path(get, path = "/v1/graph", tag = "graph",
    params(("mode" = Option<ExportMode>, Query, description = "`full` (default) or `summary`")),
    responses(
    (status = 200, body = GraphExport),
    (status = 400, body = ErrorBody),
    (status = 401, description = "a credential was presented and is not valid", body = ErrorBody),
))]
pub async fn get_graph(
    State(state): State<AppState>,
    OptionalAuth(auth): OptionalAuth,
    params: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ErrorResponse> {
    let Query(params) = params.map_err(|e| Error::invalid_input(e.body_text()))?;
    let mode = ExportMode::parse(params.get("mode").map(String::as_str))?;
    match auth {
        Some(p) => stream_export(&state, p.workspace(), mode).await,
        None => Ok(ApiJson(export::demo(mode)?).into_response()),
    }
}

/// Chunks of the export travel from a blocking task (which holds the snapshot) through a small
/// channel, so memory stays bounded whatever the graph's size and a client that stops reading
/// stops the export. The first chunk is awaited before answering, so a store that cannot be
/// read is an error status, not an empty 200; a failure after it can only cut the response
/// short.
async fn stream_export(
    state: &AppState,
    ws: WorkspaceId,
    mode: ExportMode,
) -> Result<Response, ErrorResponse> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(8);
    let store = state.store.clone();
    let export = tokio::spawn(async move {
        let ids = store.ids().clone();
        store
            .read(ws, move |snap| {
                let mut sink = |chunk: Vec<u8>| tx.blocking_send(chunk).is_ok();
                export::export_chunks(&ids, snap, mode, 64 * 1024, &mut sink)
            })
            .await
    });
    let Some(first) = rx.recv().await else {
        export
            .await
            .map_err(|e| Error::internal(format!("graph export task failed: {e}")))??;
        return Err(Error::internal("the graph export produced nothing").into());
    };
    tokio::spawn(async move {
        if let Ok(Err(e)) = export.await {
            tracing::error!(error = %e, "graph export failed mid-stream");
        }
    });
    let rest = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    let body = futures_util::stream::once(async move { first })
        .chain(rest)
        .map(|chunk| Ok::<_, std::convert::Infallible>(Bytes::from(chunk)));
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(body),
    )
        .into_response())
}

/// Run a Cypher-style query. Result `{columns, rows, stats, plan?}`. Agent keys may only read
/// (a writing statement is 403 `write_not_allowed`, decided from the parse tree); JWT users
/// may write. Query errors are 400 `invalid_query` with `details.query_code` and, for errors
/// in the text, `details.line` / `details.column`. Schema commands: `CREATE [RANGE] INDEX`
/// and `DROP INDEX` only for a workspace owner's JWT (agent keys: 403 `write_not_allowed`,
/// members: 403 `owner_required`); `SHOW INDEXES` for anyone who may query. Node and
/// relationship ids (`id(n)`, a node's `id`, a relationship's `id`, `start`, `end`) are opaque
/// integers below 2^53, the same for an entity in every query: `WHERE id(n) = $id` takes one
/// back; they neither count nor order anything.
#[utoipa::path(post, path = "/v1/graph/query", tag = "graph",
    request_body = QueryRequest,
    responses(
    (status = 200, description = "`{columns, rows, stats, plan?}`; a temporal value in `rows` is its ISO 8601 text (docs/temporal.md)", body = Object),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "a write from an agent key, an index command from a key or a member, or a read-only workspace", body = ErrorBody),
))]
pub async fn query_graph(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiJson(req): ApiJson<QueryRequest>,
) -> Result<ApiJson<svc_query::QueryResult>, ErrorResponse> {
    let access = match &p {
        Principal::User(s) if s.user.role == svc_core::accounts::Role::Owner => Access::Owner,
        Principal::User(_) => Access::ReadWrite,
        Principal::Key(_) => Access::ReadOnly,
    };
    Ok(ApiJson(
        query::run(&state.store, p.workspace(), access, req).await?,
    ))
}

/// The shortest path between two nodes (`cus_...`, `tp_...` or `node_...`), relationships
/// taken in either direction, within `max_hops` (1 to 8, default 6) and a bounded subgraph
/// (`graph_api::path`). `found: false` when there is none within the limits.
#[utoipa::path(get, path = "/v1/graph/path", tag = "graph",
    params(
        ("from" = String, Query, pattern = r"^(cus|tp|node)_([0-9A-Za-z]{11}|0|[1-9][0-9]{0,9})$",
            description = "node id the path starts at"),
        ("to" = String, Query, pattern = r"^(cus|tp|node)_([0-9A-Za-z]{11}|0|[1-9][0-9]{0,9})$",
            description = "node id the path ends at"),
        ("max_hops" = Option<u32>, Query, minimum = 1, maximum = 8,
            description = "most relationships on the path (default 6)"),
    ),
    responses(
    (status = 200, body = GraphPath),
    (status = 400, description = "a malformed node id or max_hops", body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 404, description = "no such node in this workspace", body = ErrorBody),
))]
pub async fn graph_path(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    params: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<ApiJson<GraphPath>, ErrorResponse> {
    let Query(params) = params.map_err(|e| Error::invalid_input(e.body_text()))?;
    let required = |name: &str| {
        params
            .get(name)
            .cloned()
            .ok_or_else(|| Error::invalid_input(format!("{name}: a node id is required")))
    };
    let (from, to) = (required("from")?, required("to")?);
    let max_hops = match params.get("max_hops") {
        None => path::DEFAULT_HOPS,
        Some(v) => v.parse().map_err(|_| {
            Error::invalid_field("max_hops", v, &format!("must be 1 to {}", path::MAX_HOPS))
        })?,
    };
    let ids = state.store.ids().clone();
    let found = state
        .store
        .read(p.workspace(), move |snap| {
            path::shortest_path(&ids, snap, &from, &to, max_hops)
        })
        .await?;
    Ok(ApiJson(found))
}
