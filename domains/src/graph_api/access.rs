//! Who may do what with a query, and how a query failure is reported: shared by statements
//! (`query`) and schema commands (`schema`).

use svc_engine::ErrorKind;
use svc_query::QueryError;

use svc_core::error::{Code, Error};

/// Whether the caller may change the graph (JWT users) or only read it (agent keys); owners
/// may also create and drop indexes (`graph_api::schema`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite,
    Owner,
}

/// A query failure as the API reports it: 400 `invalid_query` with the query's own code and,
/// for errors in the text, line and column; 403 `write_not_allowed` for writes on the read
/// path; storage failures stay internal.
pub fn query_error(e: QueryError) -> Error {
    let query_code = e.code();
    match e {
        QueryError::WriteNotAllowed { .. } => Error::new(
            Code::WriteNotAllowed,
            "queries that write (CREATE, MERGE, SET, REMOVE, DELETE) need a dashboard session \
             (JWT); API keys may only read",
        ),
        // Storage faults and an unavailable store are the service's, not the query's.
        QueryError::Engine(inner)
            if matches!(inner.kind(), ErrorKind::Fault | ErrorKind::Unavailable) =>
        {
            Error::from(inner)
        }
        other => {
            let mut details = serde_json::json!({ "query_code": query_code });
            if let Some(p) = other.position() {
                details["line"] = p.line.into();
                details["column"] = p.column.into();
            }
            Error::new(Code::InvalidQuery, other.to_string()).with_details(details)
        }
    }
}
