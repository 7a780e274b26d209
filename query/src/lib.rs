//! `svc-query`: the Cypher subset of the service — a nom parser, a planner that uses the
//! engine's indexes, and a streaming executor with time, row and hop budgets.
//!
//! The crate depends only on `svc_engine`'s narrow traits ([`GraphRead`], [`GraphWrite`]) and
//! data types, never on RocksDB, so it runs the same over an engine snapshot, an engine write
//! transaction, or the in-memory [`model::ModelGraph`].
//!
//! # Use
//!
//! ```
//! use svc_query::{parse, run_read, run_write, Limits, Params, model::ModelGraph};
//!
//! let mut graph = ModelGraph::new();
//! let create = parse("CREATE (:Customer {name: 'Ann', score: 90})").unwrap();
//! run_write(&mut graph, &create, &Params::new(), &Limits::default()).unwrap();
//!
//! let query = parse("MATCH (c:Customer) WHERE c.score > $min RETURN c.name AS name").unwrap();
//! assert!(query.is_read_only());
//! let params = Params::from([("min".to_string(), svc_engine::Value::Int(50))]);
//! let result = run_read(&graph, &query, &params, &Limits::default()).unwrap();
//! assert_eq!(result.columns, vec!["name"]);
//! assert_eq!(serde_json::to_string(&result.rows).unwrap(), r#"[["Ann"]]"#);
//! ```
//!
//! # The subset
//!
//! `MATCH` / `OPTIONAL MATCH` (node and relationship patterns with labels, types `:A|B`,
//! directions, undirected `--`, inline property maps, chains, comma-separated patterns,
//! variable length `*min..max` and unbounded `*`, named paths `p = ...`), `WHERE`
//! (comparisons, chained comparisons `1 < x < 3`, `AND OR XOR NOT`, `IN`, `STARTS WITH`,
//! `ENDS WITH`, `CONTAINS`, `IS [NOT] NULL`, arithmetic, label predicates `n:Label`, pattern
//! predicates `(a)-->(b)`, `exists(...)`, `EXISTS { ... }` subqueries), `WITH` (with `WHERE`),
//! `UNWIND`, `RETURN` (`DISTINCT`, aliases, `*`, `count sum avg min max collect
//! percentileDisc percentileCont`, `count(DISTINCT x)`, `count(*)`; an unaliased column is
//! named by its text as written), `ORDER BY`, `SKIP`, `LIMIT`, `UNION` / `UNION ALL` of
//! read-only queries, parameters `$name`, `EXPLAIN`, `PROFILE`; writes `CREATE`, `MERGE`
//! (with `ON CREATE SET` / `ON MATCH SET`), `SET`, `REMOVE`, `DELETE`, `DETACH DELETE`.
//! Expressions: `CASE` (simple and generic), list comprehensions `[x IN l WHERE p | e]`,
//! pattern comprehensions `[(a)-->(b) WHERE p | e]`, list predicates `all any none single`,
//! `reduce`, slices `l[a..b]`, hexadecimal and octal integers. Functions: `id labels type keys
//! properties startNode endNode nodes relationships size length coalesce toLower toUpper trim
//! ltrim rtrim toString toInteger toFloat toBoolean abs round floor ceil sign sqrt exp log log10
//! sin cos tan asin acos atan atan2 degrees radians pi e rand head last tail reverse range split
//! substring replace left right`, and the temporal ones (module `temporal`): `date localtime
//! time localdatetime datetime` (from nothing, a string, a map or another temporal; with
//! `.transaction`, `.statement`, `.realtime` and `.truncate`), `datetime.fromepoch[millis]`,
//! `duration` (from a map or a string), `duration.between`, `duration.inMonths`, `inDays`,
//! `inSeconds`; temporal values compare, order, add and subtract durations and have Cypher's
//! accessors (`d.year`, `dt.timezone`, `dur.days`, ...). Every temporal value can be stored as
//! a property (zone names and nanoseconds kept), compared and range-indexed; results carry
//! them as their ISO 8601 text, parameters as Neo4j's typed JSON (`temporal_param`).
//! Anything else (`CALL`, `LOAD CSV`, `FOREACH`, `COUNT { }` and `COLLECT { }` subqueries,
//! named paths in `CREATE` / `MERGE`, writes in a `UNION`, constraints, `=~`) is refused with
//! `unsupported` and its position. The openCypher TCK runs against this crate in `tck/`
//! (`docs/cypher.md` for what passes).
//!
//! Schema commands are parsed apart, by [`parse_schema`] (which answers `None` for any other
//! statement), and run by the caller against the store's index catalog:
//! `CREATE [RANGE] INDEX [name] [IF NOT EXISTS] FOR (n:Label) ON (n.property)` (plain: an
//! equality index; `RANGE`: an ordered one that also serves ranges and top-k),
//! `DROP INDEX name [IF EXISTS]`, `SHOW [ALL | RANGE] INDEX[ES]`. One label and one property
//! per index; relationship, composite, text and full-text indexes, `OPTIONS`, `YIELD` and
//! `WHERE` on them are refused with `unsupported`.
//!
//! Semantics follow Neo4j: three-valued logic, aggregates skip nulls, `ORDER BY` sorts nulls
//! last ascending and first descending, relationships are not repeated within one `MATCH`.
//!
//! # Plans
//!
//! [`explain`] (or an `EXPLAIN` prefix) returns a [`PlanTree`]; `PROFILE` adds rows and
//! inclusive time per operator. Operators: `NodeCountFromCountStore` (label bitmap
//! cardinality), `NodeByIdSeek` (`id(n) = value`), `NodeIndexSeek`, `NodeIndexRangeScan` (with a top-k limit for
//! `ORDER BY n.p LIMIT k` over a range predicate on `n.p`, or over a whole label whose every
//! node has a number, or every one a datetime, in the index), `NodeByLabelScan` (with the
//! filters on the scanned node's properties fused in: a sequential scan decoding only those
//! properties), `AllNodesScan`, `Expand`, `ExpandInto`, `VarLengthExpand`, `ExpandCount`
//! (an aggregation that only counts the rows of a final hop counts relationships instead:
//! degree counters), `Filter`, `Projection`, `Aggregation`,
//! `Distinct`, `Sort`, `Top`, `Skip`, `Limit`, `Unwind`, `OptionalMatch`, `Argument`, `Eager`
//! (a write stage boundary) and the write operators.
//!
//! # Safety of the read path
//!
//! [`run_read`] takes `&impl GraphRead`: it has no way to call a write method, whatever the
//! query text says. It also refuses any statement whose parsed tree contains a write clause
//! (`write_not_allowed`) before planning. Read-only-ness is decided from the tree
//! ([`Statement::is_read_only`]), never by searching the text for keywords, and keywords are
//! matched only against bare ASCII-insensitive words, so look-alike Unicode letters, comments
//! or keywords inside strings cannot smuggle a clause in or out.
//!
//! # Errors
//!
//! Every failure is a [`QueryError`] with a stable [`QueryError::code`]: `syntax_error` (with
//! line, column and "expected X, found Y"), `query_too_large` (more than [`MAX_PATTERN_ELEMENTS`]
//! node and relationship patterns or [`MAX_CLAUSES`] clauses), `unsupported`, `semantic_error`,
//! `unknown_function`, `write_not_allowed`, `timeout`, `row_limit`, `hop_limit`, `type_error`,
//! `arithmetic_error`, `unknown_parameter`, `node_has_relationships`, `engine_error`.
//!
//! # Budgets
//!
//! [`Limits`]: 2 s of wall-clock time, 10,000 result rows, variable-length relationships of at
//! most 10 hops (an unbounded `*` is accepted; a path longer than the budget, when one is
//! found, is a `hop_limit` error), and at most 1,000,000 rows held by any one operator.
//! Exceeding one is an error, never a silent truncation. Planning counts against the
//! time budget. A statement holds at most [`MAX_PATTERN_ELEMENTS`] node and relationship
//! patterns and [`MAX_CLAUSES`] clauses (`query_too_large`), so every pass over a plan (they
//! recurse over its nesting) stays well inside a 2 MiB thread stack.
//!
//! # Ids
//!
//! [`Limits::ids`], an [`IdCodec`], decides the integers a query shows for nodes and
//! relationships: what `id(n)` and `id(r)` give, and the `id` of result nodes and the `id`,
//! `start` and `end` of result relationships (paths included), and engine errors that name an
//! entity. The default is the identity (the engine's ids, as embedders and the TCK expect).
//! A service over a store shared by several tenants sets [`IdCodec::keyed`]: a keyed
//! permutation, so the integers neither follow the engine's counters (which every workspace
//! shares) nor can be decoded without the key, yet the same entity shows the same integer in
//! every query. Everything that compares ids inside a query compares shown ids with shown
//! ids, so `MATCH (n) WHERE id(n) = $id` finds the node whose `id` a previous result showed
//! (its `NodeByIdSeek` decodes the value by the run's codec, so a plan serves every codec);
//! a caller holding an engine id passes `limits.ids.node(id)`, and reads a result node's
//! engine id back with [`IdCodec::node_id`]. Under a keyed codec `ORDER BY id(n)` is an
//! arbitrary (but stable) order, as Neo4j promises no order of ids either.
//!
//! # Plan cache
//!
//! [`PlanCache::run_read`] runs a read statement from its text, reusing the parse and the plan
//! of an earlier run with the same text and parameter values over the same graph, workspace
//! and index catalog, while the statistics the plan assumed still hold (see `prepared`). Its
//! answers and errors are those of `parse` + [`run_read`]; it saves their fixed cost, which
//! dominates short reads. [`PlanCache::shared`] is a process-wide instance. The planner reads
//! nothing from [`Limits`] but the deadline; anything it comes to depend on must join the key.
//!
//! # Writes
//!
//! [`run_write`] is meant to run inside one engine write transaction: when it returns an error
//! the caller must abort that transaction, since earlier clauses may already have written.

pub mod ast;
mod batch;
pub mod error;
mod eval;
mod exec;
mod functions;
#[doc(hidden)]
pub mod fuzzing;
mod ids;
mod lexer;
pub mod model;
mod parser;
mod plan;
mod prepared;
pub mod result;
mod temporal;
mod value;
mod write;

use std::time::Instant;

pub use ast::Statement;
pub use batch::ModelSwitch;
pub use error::{Position, QueryError};
pub use ids::IdCodec;
pub use parser::ddl::{parse_schema, SchemaCommand};
pub use parser::{MAX_CHAIN, MAX_CLAUSES, MAX_DEPTH, MAX_PATTERN_ELEMENTS};
pub use prepared::{PlanCache, PlanCacheStats, MAX_TEXT, SHARED_CAPACITY};
pub use result::{
    Limits, Params, PlanTree, QueryResult, QueryStats, ResultNode, ResultPath, ResultRelationship,
    ResultTemporal, ResultValue,
};
pub use svc_engine::{GraphRead, GraphWrite};
pub use temporal::{temporal_param, temporal_text, TEMPORAL_PARAM_TYPES};

use ast::Mode;

/// Parses one statement of the subset.
pub fn parse(text: &str) -> Result<Statement, QueryError> {
    parser::parse(text)
}

/// Runs a read-only statement. Any write clause is refused with `write_not_allowed` before
/// anything is planned; the graph handle is read-only in any case.
pub fn run_read<G: GraphRead>(
    g: &G,
    stmt: &Statement,
    params: &Params,
    limits: &Limits,
) -> Result<QueryResult, QueryError> {
    temporal::begin_statement();
    if let Some(clause) = stmt.first_write_clause() {
        return Err(QueryError::WriteNotAllowed { clause });
    }
    let start = Instant::now();
    let deadline = start + limits.time;
    let planned = plan::plan(g, stmt, params, limits, deadline)?;
    if stmt.mode == Mode::Explain {
        return Ok(explained(&planned));
    }
    execute_read(
        g,
        &planned,
        None,
        limits,
        start,
        stmt.mode == Mode::Profile,
        None,
    )
}

/// Runs a planned read statement whose time budget started at `start`; `analysis` is the
/// plan's (`exec::analyse`) and its batch memo, made now when None; `tree` the plan's batch
/// tree when the caller compiled it (`batch::compile_tree`).
fn execute_read<'p>(
    g: &dyn GraphRead,
    planned: &'p plan::Planned,
    analysis: Option<(&'p batch::Analysis, &'p exec::BatchMemo)>,
    limits: &Limits,
    start: Instant,
    profile: bool,
    tree: Option<&mut batch::Tree<'p>>,
) -> Result<QueryResult, QueryError> {
    let deadline = start + limits.time;
    let cx = eval::Cx::new(g, limits, deadline, planned.operators, profile);
    let rows = match planned.stages.as_slice() {
        [plan::Stage::Read(p)] => {
            let (w, out) = (planned.width, &planned.out_slots);
            match analysis {
                Some((a, memo)) => exec::produce(p, w, out, (a, Some(memo)), &cx, profile, tree),
                None => {
                    let own = exec::analyse(p, w, out);
                    exec::produce(p, w, out, (&own, None), &cx, profile, None)
                }
            }
            .map_err(|e| shown_ids(e, &limits.ids))?
        }
        _ => return Err(QueryError::WriteNotAllowed { clause: "write" }),
    };
    let figures = cx.profile.as_ref().map(|p| p.borrow().clone());
    Ok(finish(planned, rows, figures, QueryStats::default(), start))
}

/// Runs any statement, reads and writes, against a writable graph (for JWT users). Call it
/// inside one write transaction and abort that transaction if it returns an error.
pub fn run_write<G: GraphWrite>(
    g: &mut G,
    stmt: &Statement,
    params: &Params,
    limits: &Limits,
) -> Result<QueryResult, QueryError> {
    temporal::begin_statement();
    let start = Instant::now();
    let deadline = start + limits.time;
    let planned = plan::plan(&*g, stmt, params, limits, deadline)?;
    if stmt.mode == Mode::Explain {
        return Ok(explained(&planned));
    }
    let profile = stmt.mode == Mode::Profile;
    let mut stats = QueryStats::default();
    let outcome = write::run_stages(&planned, g, limits, deadline, profile, &mut stats)
        .map_err(|e| shown_ids(e, &limits.ids))?;
    Ok(finish(
        &planned,
        outcome.rows,
        profile.then_some(outcome.profile),
        stats,
        start,
    ))
}

/// Plans a statement without running it: the errors it raises before running anything
/// (unknown variables, static type errors, ...), what the TCK calls compile time.
pub fn check<G: GraphRead>(
    g: &G,
    stmt: &Statement,
    params: &Params,
    limits: &Limits,
) -> Result<(), QueryError> {
    temporal::begin_statement();
    plan::plan(g, stmt, params, limits, Instant::now() + limits.time).map(|_| ())
}

/// The plan a statement would run with, without running it.
pub fn explain<G: GraphRead>(
    g: &G,
    stmt: &Statement,
    params: &Params,
    limits: &Limits,
) -> Result<PlanTree, QueryError> {
    temporal::begin_statement();
    let planned = plan::plan(g, stmt, params, limits, Instant::now() + limits.time)?;
    Ok(plan::render(&planned, None))
}

/// `e` naming nodes and relationships by their shown ids (an engine error names engine ids).
fn shown_ids(e: QueryError, ids: &IdCodec) -> QueryError {
    use svc_engine::{EdgeId, EngineError, NodeId};
    let node = |id: NodeId| NodeId(ids.node(id) as u64);
    match e {
        QueryError::Engine(EngineError::NodeHasEdges(id)) => {
            QueryError::Engine(EngineError::NodeHasEdges(node(id)))
        }
        QueryError::Engine(EngineError::NodeNotFound(id)) => {
            QueryError::Engine(EngineError::NodeNotFound(node(id)))
        }
        QueryError::Engine(EngineError::EdgeNotFound(id)) => QueryError::Engine(
            EngineError::EdgeNotFound(EdgeId(ids.relationship(id) as u64)),
        ),
        other => other,
    }
}

fn explained(planned: &plan::Planned) -> QueryResult {
    QueryResult {
        columns: planned.columns.clone(),
        rows: Vec::new(),
        plan: Some(plan::render(planned, None)),
        stats: QueryStats::default(),
    }
}

fn finish(
    planned: &plan::Planned,
    rows: Vec<Vec<ResultValue>>,
    figures: Option<Vec<(u64, u64)>>,
    mut stats: QueryStats,
    start: Instant,
) -> QueryResult {
    stats.rows = rows.len() as u64;
    stats.elapsed_us = start.elapsed().as_micros() as u64;
    let plan = figures.map(|f| {
        let mut tree = plan::render(planned, Some(&f));
        tree.rows = Some(stats.rows);
        tree.time_us = Some(stats.elapsed_us);
        tree
    });
    QueryResult {
        columns: planned.columns.clone(),
        rows,
        plan,
        stats,
    }
}
