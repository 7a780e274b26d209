//! The crate's one error type, with stable machine-readable codes.

use svc_engine::EngineError;

/// Where in the query text something went wrong (1-based line and column, in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Position {
    pub line: u32,
    pub column: u32,
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// Every way parsing, planning or running a query can fail.
///
/// `code()` is stable and meant for API error bodies; the `Display` text is for people.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The text is not in the grammar: "expected X, found Y".
    #[error("syntax error at {position}: expected {expected}, found {found}")]
    Syntax {
        position: Position,
        expected: String,
        found: String,
    },
    /// A malformed token or literal (bad escape, unterminated string, integer overflow, ...).
    #[error("syntax error at {position}: {message}")]
    InvalidToken { position: Position, message: String },
    /// A construct outside the supported subset (CALL, LOAD CSV, FOREACH, subqueries, ...).
    #[error("{what} is not supported (at {position})")]
    Unsupported { position: Position, what: String },
    /// Nesting deeper than the parser's recursion guard allows.
    #[error("query nested too deeply at {position} (the limit is {limit} levels)")]
    TooDeep { position: Position, limit: u32 },
    /// A statement with more pattern elements or clauses than one statement may hold.
    #[error("query too large at {position}: a statement may hold at most {limit} {what}")]
    TooLarge {
        position: Position,
        what: &'static str,
        limit: u32,
    },
    /// Well-formed but meaningless: unknown variable, misplaced aggregate, duplicate alias, ...
    #[error("{0}")]
    Semantic(String),
    /// A function name that is not part of the subset.
    #[error("unknown function {0}()")]
    UnknownFunction(String),
    /// A write clause reached the read-only path.
    #[error(
        "this query writes to the graph ({clause}); writes are not allowed on the read-only path"
    )]
    WriteNotAllowed { clause: &'static str },
    #[error("the query exceeded its time budget of {0:?}")]
    Timeout(std::time::Duration),
    #[error("the query produced more than {0} rows")]
    RowLimit(usize),
    #[error("the query needs intermediate results larger than {0} rows")]
    BufferLimit(usize),
    #[error("variable-length relationship {0}")]
    HopLimit(String),
    /// A value of the wrong type for an operator or function.
    #[error("type error: {0}")]
    Type(String),
    #[error("arithmetic error: {0}")]
    Arithmetic(String),
    #[error("parameter ${0} was not supplied")]
    UnknownParameter(String),
    #[error("engine error: {0}")]
    Engine(#[from] EngineError),
}

impl QueryError {
    /// Stable snake_case code for API error bodies.
    pub fn code(&self) -> &'static str {
        match self {
            QueryError::Syntax { .. }
            | QueryError::InvalidToken { .. }
            | QueryError::TooDeep { .. } => "syntax_error",
            QueryError::TooLarge { .. } => "query_too_large",
            QueryError::Unsupported { .. } => "unsupported",
            QueryError::Semantic(_) => "semantic_error",
            QueryError::UnknownFunction(_) => "unknown_function",
            QueryError::WriteNotAllowed { .. } => "write_not_allowed",
            QueryError::Timeout(_) => "timeout",
            QueryError::RowLimit(_) | QueryError::BufferLimit(_) => "row_limit",
            QueryError::HopLimit(_) => "hop_limit",
            QueryError::Type(_) => "type_error",
            QueryError::Arithmetic(_) => "arithmetic_error",
            QueryError::UnknownParameter(_) => "unknown_parameter",
            QueryError::Engine(EngineError::NodeHasEdges(_)) => "node_has_relationships",
            QueryError::Engine(_) => "engine_error",
        }
    }

    /// Line and column of the problem, for errors found in the text.
    pub fn position(&self) -> Option<Position> {
        match self {
            QueryError::Syntax { position, .. }
            | QueryError::InvalidToken { position, .. }
            | QueryError::Unsupported { position, .. }
            | QueryError::TooDeep { position, .. }
            | QueryError::TooLarge { position, .. } => Some(*position),
            _ => None,
        }
    }

    pub(crate) fn semantic(msg: impl Into<String>) -> Self {
        QueryError::Semantic(msg.into())
    }

    pub(crate) fn type_err(msg: impl Into<String>) -> Self {
        QueryError::Type(msg.into())
    }
}

/// Converts a byte offset into a 1-based line/column position (columns count characters).
pub(crate) fn position_of(text: &str, offset: usize) -> Position {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() as u32 + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) as u32 + 1;
    Position { line, column }
}
