//! `POST /v1/graph/query`: the Cypher subset of svc-query over the caller's workspace.
//!
//! Read-only-ness is decided from the parsed tree. Agent keys only ever get the read path
//! (`run_read` over a snapshot, a handle with no write methods); a writing statement from a key
//! is refused before anything runs. JWT users' writing statements run through `run_write`
//! inside one write transaction, which is aborted when the query fails part-way.
//!
//! Node and relationship ids (`id(n)`, result nodes' `id`, relationships' `id`, `start`,
//! `end`) are the store's Cypher ids ([`id_codec`]): opaque integers, not the engine's
//! counters, which every workspace shares.

use serde::Deserialize;
use serde_json::{Map, Value as Json};
use svc_query::{IdCodec, Limits, Params, QueryError, QueryResult};

pub use super::access::{query_error, Access};
use super::ensure_writable;
use super::values::json_to_param;
use svc_core::error::Result;
use svc_core::plumbing::ids::PublicIds;
use svc_core::store::{Store, WorkspaceId};

/// The request body.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryRequest {
    /// One statement of the subset (MATCH / WHERE / RETURN, aggregations, writes for JWT users).
    #[schema(min_length = 1)]
    pub query: String,
    /// Values of `$name` parameters. A temporal value is Neo4j's typed JSON,
    /// `{"$type": "Date", "_value": "2026-01-02"}` (docs/temporal.md).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub params: Option<Map<String, Json>>,
}

/// The codec of the integers Cypher shows for nodes and relationships in this deployment
/// (keyed by the id key, [`PublicIds::cypher_key`]). A caller holding an engine id passes
/// `id_codec(ids).node(id)` as a query's `$id`, and reads a result node's engine id back with
/// `id_codec(ids).node_id(..)`.
pub fn id_codec(ids: &PublicIds) -> IdCodec {
    IdCodec::keyed(ids.cypher_key())
}

/// Parses and runs `req` on workspace `ws`.
pub async fn run(
    store: &Store,
    ws: WorkspaceId,
    access: Access,
    req: QueryRequest,
) -> Result<QueryResult> {
    if let Some(cmd) = svc_query::parse_schema(&req.query).map_err(query_error)? {
        return super::schema::run(store, ws, access, cmd).await;
    }
    // Parsed once per text (the process-wide statement cache), to tell reads from writes.
    let stmt = svc_query::PlanCache::shared()
        .statement(&req.query)
        .map_err(query_error)?;
    let params: Params = req
        .params
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| Ok((k, json_to_param(v)?)))
        .collect::<std::result::Result<_, QueryError>>()
        .map_err(query_error)?;
    let limits = Limits {
        ids: id_codec(store.ids()),
        ..Limits::default()
    };
    if stmt.is_read_only() {
        // Short reads answer on the request's own task; a read that outgrows the inline slice
        // runs again on the blocking pool with the full budget (`Store::read_inline_first`).
        // Through the process-wide plan cache: a text already run over this workspace and
        // index catalog skips parsing and planning (answers are the same as `run_read`'s).
        let text = req.query;
        return store
            .read_inline_first(ws, move |snap, slice| {
                let limits = match slice {
                    Some(time) => Limits {
                        time,
                        ..limits.clone()
                    },
                    None => limits.clone(),
                };
                match svc_query::PlanCache::shared().run_read(snap, &text, &params, &limits) {
                    Err(QueryError::Timeout(_)) if slice.is_some() => Ok(None),
                    r => r.map(Some).map_err(query_error),
                }
            })
            .await;
    }
    if access == Access::ReadOnly {
        return Err(query_error(QueryError::WriteNotAllowed { clause: "write" }));
    }
    store
        .write(move |tx| {
            let mut w = tx.workspace(ws);
            ensure_writable(&w)?;
            svc_query::run_write(&mut w, &stmt, &params, &limits).map_err(query_error)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_core::error::Code;

    fn req(q: &str) -> QueryRequest {
        QueryRequest {
            query: q.to_owned(),
            params: None,
        }
    }

    #[tokio::test]
    async fn writes_need_read_write_access_and_failed_writes_leave_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let ws = WorkspaceId(5);
        let err = run(
            &store,
            ws,
            Access::ReadOnly,
            req("CREATE (:Customer {name: 'x'})"),
        )
        .await
        .expect_err("refused");
        assert_eq!(err.code, Code::WriteNotAllowed);
        run(
            &store,
            ws,
            Access::ReadWrite,
            req("CREATE (:Customer {name: 'x'})"),
        )
        .await
        .expect("created");
        // The second clause fails at run time: the first clause's CREATE must not persist.
        let err = run(
            &store,
            ws,
            Access::ReadWrite,
            req("CREATE (:Customer {name: 'y'}) WITH 1 AS one RETURN 1 / 0"),
        )
        .await
        .expect_err("fails");
        assert_eq!(err.code, Code::InvalidQuery);
        let mut count = req("MATCH (c:Customer) RETURN count(c) AS n");
        let r = run(&store, ws, Access::ReadOnly, count.clone())
            .await
            .expect("count");
        assert_eq!(
            serde_json::to_value(&r.rows).expect("json"),
            serde_json::json!([[1]])
        );
        count.params = Some(Map::from_iter([("n".to_owned(), Json::from("x"))]));
        count.query = "MATCH (c:Customer {name: $n}) RETURN c.name AS name".into();
        let r = run(&store, ws, Access::ReadOnly, count)
            .await
            .expect("params");
        assert_eq!(r.columns, vec!["name"]);
    }

    #[tokio::test]
    async fn a_read_longer_than_the_inline_slice_still_answers_in_full() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        // Far more than a millisecond of work: the inline attempt gives up, the blocking pool
        // answers with the whole budget (never the slice's timeout).
        let r = run(
            &store,
            WorkspaceId(5),
            Access::ReadOnly,
            req("UNWIND range(1, 300000) AS i WITH i WHERE i % 3 = 0 RETURN count(i) AS n"),
        )
        .await
        .expect("answers");
        assert_eq!(
            serde_json::to_value(&r.rows).expect("json"),
            serde_json::json!([[100000]])
        );
    }

    #[tokio::test]
    async fn syntax_errors_carry_line_and_column() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let err = run(
            &store,
            WorkspaceId(5),
            Access::ReadOnly,
            req("MATCH (n)\nRETURN n.name AS"),
        )
        .await
        .expect_err("syntax");
        assert_eq!(err.code, Code::InvalidQuery);
        let d = err.details.expect("details");
        assert_eq!(d["query_code"], "syntax_error");
        assert_eq!(d["line"], 2);
        assert!(d["column"].as_u64().is_some_and(|c| c > 1));
    }
}
