//! Schema commands on `POST /v1/graph/query`: `CREATE [RANGE] INDEX`, `DROP INDEX` and
//! `SHOW INDEXES` (parsed by `svc_query::parse_schema`), run against the store's index
//! catalog. Changing indexes is a workspace owner's decision: a dashboard session (JWT) of an
//! owner only; agent keys and members get 403, and so does anyone while the workspace is
//! read-only. `SHOW INDEXES` is a read: anyone who may query.

use svc_engine::catalog::{Declared, IndexInfo, IndexSpec};
use svc_engine::{EngineError, ErrorKind, IndexKind};
use svc_query::{QueryError, QueryResult, QueryStats, ResultValue, SchemaCommand};

use super::access::{query_error, Access};
use svc_core::error::{Code, Error, Result};
use svc_core::store::{Store, WorkspaceId};

/// Runs one schema command for a caller with `access`.
pub async fn run(
    store: &Store,
    ws: WorkspaceId,
    access: Access,
    cmd: SchemaCommand,
) -> Result<QueryResult> {
    if cmd.writes() {
        match access {
            Access::Owner => {}
            Access::ReadWrite => {
                return Err(Error::new(
                    Code::OwnerRequired,
                    "only an owner of the workspace may create or drop indexes",
                ))
            }
            Access::ReadOnly => {
                return Err(Error::new(
                    Code::WriteNotAllowed,
                    "CREATE INDEX and DROP INDEX need a dashboard session (JWT) of a workspace \
                     owner; API keys may only read (SHOW INDEXES)",
                ))
            }
        }
        // A read-only workspace is frozen, its indexes included (403 read_only_workspace).
        svc_core::workspaces::settings(store, ws)
            .await?
            .ensure_writable()?;
    }
    match cmd {
        SchemaCommand::CreateIndex {
            name,
            label,
            property,
            kind,
            if_not_exists,
        } => {
            let spec = IndexSpec {
                name,
                label,
                property,
                kind,
                if_not_exists,
            };
            let (name, created) = match store.declare_index(ws, spec).await?.map_err(refusal)? {
                Declared::Created(n) => (n, true),
                Declared::Exists(n) => (n, false),
            };
            Ok(table(
                &["name", "created"],
                vec![vec![ResultValue::String(name), ResultValue::Bool(created)]],
            ))
        }
        SchemaCommand::DropIndex { name, if_exists } => {
            let dropped = store
                .drop_index(ws, name.clone(), if_exists)
                .await?
                .map_err(refusal)?;
            Ok(table(
                &["name", "dropped"],
                vec![vec![ResultValue::String(name), ResultValue::Bool(dropped)]],
            ))
        }
        SchemaCommand::ShowIndexes => {
            let rows = store.indexes(ws).await?.into_iter().map(row).collect();
            Ok(table(
                &["name", "label", "property", "kind", "state", "origin"],
                rows,
            ))
        }
    }
}

/// The engine's input refusals are the statement's fault: 400 `invalid_query`.
fn refusal(e: EngineError) -> Error {
    match (e.kind(), e) {
        (ErrorKind::Input, EngineError::Invalid { detail, .. }) => {
            query_error(QueryError::Semantic(detail))
        }
        (_, e) => Error::from(e),
    }
}

fn row(i: IndexInfo) -> Vec<ResultValue> {
    let kind = match i.kind {
        IndexKind::Equality => "EQUALITY",
        IndexKind::Ordered => "RANGE",
    };
    let origin = if i.built_in { "built-in" } else { "declared" };
    [
        i.name.as_str(),
        &i.label,
        &i.property,
        kind,
        i.state.name(),
        origin,
    ]
    .into_iter()
    .map(|s| ResultValue::String(s.to_owned()))
    .collect()
}

fn table(columns: &[&str], rows: Vec<Vec<ResultValue>>) -> QueryResult {
    QueryResult {
        columns: columns.iter().map(|c| (*c).to_owned()).collect(),
        stats: QueryStats {
            rows: rows.len() as u64,
            ..Default::default()
        },
        rows,
        plan: None,
    }
}
