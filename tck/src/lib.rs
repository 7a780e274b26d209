//! The openCypher TCK, run in-process against the real store.
//!
//! `features/` and `graphs/` are an unmodified copy of the openCypher repository's
//! `tck/features` and `tck/graphs` (Apache-2.0, see `LICENSE` and `NOTICE` beside them). Every
//! scenario (outlines expanded) runs against one [`Graph`] opened for the whole run, each in a
//! workspace of its own, so each starts from an empty graph: setup and write queries go through
//! `svc_query::run_write` inside `Graph::write` (the store's write path), read queries through
//! `svc_query::run_read` over a snapshot.
//!
//! # How a scenario is judged
//!
//! - Results: the columns exactly as written (names and order); rows in order or as a
//!   multiset as the step says; values in the TCK's terms (see [`values`]).
//! - Errors: the TCK's phase and type. *Compile time* is an error from parsing or planning
//!   (`svc_query::parse`, then `svc_query::check`), *runtime* one while the query runs,
//!   *any time* either. The TCK's type is matched by our error codes ([`accepted_codes`]);
//!   the detail (`UndefinedVariable`, ...) is not checked.
//! - Side effects: the difference between the workspace's contents before and after the query,
//!   counted as the TCK counts them: nodes and relationships by id, labels as the set of label
//!   names in use, properties as (entity, key, value) triples (so a changed value is one
//!   `-properties` and one `+properties`).
//!
//! Scenarios that declare procedures (`there exists a procedure ...`) are skipped: the engine
//! has no procedures.

pub mod gherkin;
pub mod report;
pub mod values;

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use svc_engine::{Direction, EngineError, Graph, GraphOptions, GraphRead, WorkspaceId};
use svc_query::{Limits, Params, QueryError, QueryResult, ResultValue};

pub use gherkin::Scenario;

/// Failures of the runner itself (never of a scenario).
#[derive(Debug, thiserror::Error)]
pub enum TckError {
    #[error("{file}:{line}: {message}")]
    Feature {
        file: String,
        line: usize,
        message: String,
    },
    #[error("cannot read the TCK value {text:?}: {message}")]
    Value { text: String, message: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("engine: {0}")]
    Engine(#[from] EngineError),
}

/// The crate's directory (features, graphs, baseline).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Threads to run scenarios on: `TCK_THREADS`, else one per core.
pub fn threads() -> usize {
    std::env::var("TCK_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from))
}

/// Every scenario of every feature file under `features/`, in file order.
pub fn load(root: &Path) -> Result<Vec<Scenario>, TckError> {
    let base = root.join("features");
    let mut files = Vec::new();
    let mut dirs = vec![base.clone()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d)? {
            let p = entry?.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "feature") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(&base)
            .unwrap_or(&f)
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&f)?;
        out.extend(gherkin::parse_feature(&rel, &text)?);
    }
    Ok(out)
}

/// Why a scenario did not pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailKind {
    /// The query (or a setup query) was refused as outside the supported language.
    Unsupported,
    /// An error where the TCK expects a result (not an `unsupported` one).
    Error,
    /// A setup step (`having executed`, a named graph) failed.
    Setup,
    /// The TCK expects an error and we raised a different one, or at another time.
    ErrorMismatch,
    /// The TCK expects an error and the query succeeded.
    AcceptedInvalid,
    /// A result (rows, columns or side effects) that differs from the TCK's.
    WrongResult,
    /// A panic anywhere in parsing, planning or running.
    Crash,
    /// A step the runner does not know.
    Runner,
}

impl FailKind {
    pub fn label(self) -> &'static str {
        match self {
            FailKind::Unsupported => "unsupported",
            FailKind::Error => "error",
            FailKind::Setup => "setup failed",
            FailKind::ErrorMismatch => "wrong error",
            FailKind::AcceptedInvalid => "accepted invalid query",
            FailKind::WrongResult => "WRONG RESULT",
            FailKind::Crash => "CRASH",
            FailKind::Runner => "runner",
        }
    }
}

/// What happened to one scenario.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Pass,
    Skip(String),
    Fail(FailKind, String),
}

/// One scenario's outcome, with what identifies it.
#[derive(Clone, Debug)]
pub struct Record {
    pub id: String,
    pub name: String,
    pub area: String,
    pub outcome: Outcome,
}

/// The TCK's error types (with the detail, where it matters) and the error codes of ours that
/// stand for each.
pub fn accepted_codes(tck_type: &str, detail: &str) -> &'static [&'static str] {
    match tck_type {
        // A static type error (`RETURN 123 AND true`) is a SyntaxError to the TCK.
        "SyntaxError" if detail == "InvalidArgumentType" => {
            &["syntax_error", "semantic_error", "type_error"]
        }
        // Neo4j raises its semantic checks (undefined variables, misplaced aggregates, ...)
        // as SyntaxError; ours are `semantic_error`, and unknown functions have a code of
        // their own.
        "SyntaxError" => &["syntax_error", "semantic_error", "unknown_function"],
        "SemanticError" => &["semantic_error"],
        "TypeError" => &["type_error"],
        "ArgumentError" => &["type_error", "arithmetic_error"],
        "ArithmeticError" => &["arithmetic_error"],
        "EntityNotFound" => &["semantic_error"],
        "ConstraintVerificationFailed" => &["node_has_relationships"],
        "ParameterMissing" => &["unknown_parameter"],
        _ => &[],
    }
}

/// How a query ended.
enum Exec {
    Ok(QueryResult),
    /// `compile`: raised by parsing or planning, before anything ran.
    Err {
        compile: bool,
        err: QueryError,
    },
    Panic(String),
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

/// The workspace's contents as the TCK counts side effects.
#[derive(Default, PartialEq)]
struct State {
    nodes: BTreeSet<u64>,
    rels: BTreeSet<u64>,
    labels: BTreeSet<String>,
    /// (is relationship, id, key, canonical value)
    props: BTreeSet<(bool, u64, String, String)>,
}

fn value_text(v: &svc_engine::Value) -> String {
    values::canonical(&values::from_result(&ResultValue::from(v)), false)
}

/// Runs scenarios against one store.
#[allow(missing_debug_implementations)]
pub struct Runner {
    graph: Graph,
    _dir: tempfile::TempDir,
    next_ws: AtomicU64,
    root: PathBuf,
    limits: Limits,
}

impl Runner {
    /// Opens a fresh store in a temporary directory (in memory-backed `/dev/shm` when there is
    /// one: every write is fsynced, and the TCK writes a few thousand times).
    pub fn new(root: &Path) -> Result<Runner, TckError> {
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            tempfile::Builder::new()
                .prefix("svc-tck")
                .tempdir_in(shm)
                .or_else(|_| tempfile::tempdir())?
        } else {
            tempfile::tempdir()?
        };
        let graph = Graph::open(dir.path(), GraphOptions::default())?;
        Ok(Runner {
            graph,
            _dir: dir,
            next_ws: AtomicU64::new(1),
            root: root.to_owned(),
            limits: Limits::default(),
        })
    }

    /// Runs every scenario on `threads` threads; records come back in the input's order.
    pub fn run_all(&self, scenarios: &[Scenario], threads: usize) -> Vec<Record> {
        let next = AtomicUsize::new(0);
        let trace = std::env::var_os("TCK_TRACE").is_some();
        let out: Mutex<Vec<Option<Record>>> = Mutex::new(vec![None; scenarios.len()]);
        std::thread::scope(|s| {
            for _ in 0..threads.max(1) {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(sc) = scenarios.get(i) else { break };
                    if trace {
                        eprintln!("tck: {}", sc.id);
                    }
                    let outcome = catch_unwind(AssertUnwindSafe(|| self.run(sc)))
                        .unwrap_or_else(|p| Outcome::Fail(FailKind::Crash, panic_text(&*p)));
                    let rec = Record {
                        id: sc.id.clone(),
                        name: sc.name.clone(),
                        area: sc.area.clone(),
                        outcome,
                    };
                    if let Ok(mut o) = out.lock() {
                        o[i] = Some(rec);
                    }
                });
            }
        });
        out.into_inner()
            .unwrap_or_default()
            .into_iter()
            .flatten()
            .collect()
    }

    fn execute(&self, ws: WorkspaceId, text: &str, params: &Params) -> Exec {
        let limits = self.limits.clone();
        let compiled = catch_unwind(AssertUnwindSafe(|| {
            let stmt = svc_query::parse(text)?;
            svc_query::check(&self.graph.snapshot(ws), &stmt, params, &limits)?;
            Ok::<_, QueryError>(stmt)
        }));
        let stmt = match compiled {
            Err(p) => return Exec::Panic(panic_text(&*p)),
            Ok(Err(err)) => return Exec::Err { compile: true, err },
            Ok(Ok(stmt)) => stmt,
        };
        let ran = if stmt.is_read_only() {
            // Reads run where the service runs them: over the workspace's in-memory read
            // model (the batch executor) once it is built, as it is here before each read.
            if let Err(e) = self.graph.prepare_read_model(ws) {
                return Exec::Err {
                    compile: false,
                    err: QueryError::Engine(e),
                };
            }
            match catch_unwind(AssertUnwindSafe(|| {
                svc_query::run_read(&self.graph.snapshot(ws), &stmt, params, &limits)
            })) {
                Ok(r) => r,
                Err(p) => return Exec::Panic(panic_text(&*p)),
            }
        } else {
            let params = params.clone();
            self.graph.write(move |tx| {
                let mut w = tx.workspace(ws);
                svc_query::run_write(&mut w, &stmt, &params, &limits)
            })
        };
        match ran {
            Ok(r) => Exec::Ok(r),
            Err(QueryError::Engine(EngineError::Panicked(p))) => Exec::Panic(p),
            Err(err) => Exec::Err {
                compile: false,
                err,
            },
        }
    }

    fn state(&self, ws: WorkspaceId) -> Result<State, EngineError> {
        let snap = self.graph.snapshot(ws);
        let mut st = State::default();
        for id in snap.all_nodes()? {
            let Some(n) = snap.node(id)? else { continue };
            st.nodes.insert(id.0);
            st.labels.extend(n.labels.iter().cloned());
            for (k, v) in n.properties.iter() {
                st.props.insert((false, id.0, k.clone(), value_text(v)));
            }
            for a in snap.adjacent(id, Direction::Outgoing, None)? {
                let Some(e) = snap.edge(a.edge)? else {
                    continue;
                };
                st.rels.insert(a.edge.0);
                for (k, v) in e.properties.iter() {
                    st.props.insert((true, a.edge.0, k.clone(), value_text(v)));
                }
            }
        }
        Ok(st)
    }

    /// Runs one scenario in a workspace of its own.
    pub fn run(&self, sc: &Scenario) -> Outcome {
        match self.run_steps(sc) {
            Ok(()) => Outcome::Pass,
            Err(o) => o,
        }
    }

    fn setup(&self, ws: WorkspaceId, text: &str, params: &Params) -> Result<(), Outcome> {
        match self.execute(ws, text, params) {
            Exec::Ok(_) => Ok(()),
            Exec::Panic(p) => Err(Outcome::Fail(FailKind::Crash, format!("setup: {p}"))),
            Exec::Err { err, .. } => Err(Outcome::Fail(
                if err.code() == "unsupported" {
                    FailKind::Unsupported
                } else {
                    FailKind::Setup
                },
                format!("setup: {}: {err}", err.code()),
            )),
        }
    }

    fn run_steps(&self, sc: &Scenario) -> Result<(), Outcome> {
        let ws = WorkspaceId(self.next_ws.fetch_add(1, Ordering::Relaxed));
        let mut params = Params::new();
        let mut before: Option<State> = None;
        let mut last: Option<Exec> = None;
        let runner = |m: String| Outcome::Fail(FailKind::Runner, m);
        let engine = |e: EngineError| Outcome::Fail(FailKind::Runner, format!("engine: {e}"));
        if let Some(step) = sc
            .steps
            .iter()
            .find(|s| s.text.starts_with("there exists a procedure"))
        {
            return Err(Outcome::Skip(step.text.clone()));
        }
        for step in &sc.steps {
            let t = step.text.as_str();
            let doc = step.doc.as_deref().unwrap_or("");
            match t {
                "an empty graph" | "any graph" => {}
                "having executed:" => self.setup(ws, doc, &Params::new())?,
                "parameters are:" => {
                    for row in &step.table {
                        let [name, value] = row.as_slice() else {
                            return Err(runner(format!("bad parameter row {row:?}")));
                        };
                        let v = values::parse(value)
                            .and_then(|v| values::to_param(&v))
                            .map_err(|e| runner(e.to_string()))?;
                        params.insert(name.clone(), v);
                    }
                }
                "executing query:" => {
                    before = Some(self.state(ws).map_err(engine)?);
                    last = Some(self.execute(ws, doc, &params));
                }
                "executing control query:" => last = Some(self.execute(ws, doc, &params)),
                "no side effects" | "the side effects should be:" => {
                    let Some(before) = &before else {
                        return Err(runner("side effects before any query".into()));
                    };
                    let after = self.state(ws).map_err(engine)?;
                    check_side_effects(before, &after, &step.table)?;
                }
                t if t.starts_with("the ") && t.ends_with(" graph") => {
                    let name = &t[4..t.len() - 6];
                    let path = self
                        .root
                        .join("graphs")
                        .join(name)
                        .join(format!("{name}.cypher"));
                    let text = std::fs::read_to_string(&path)
                        .map_err(|e| runner(format!("{}: {e}", path.display())))?;
                    self.setup(ws, &text, &Params::new())?;
                }
                t if t.starts_with("the result should be") => {
                    let exec = last.as_ref().ok_or_else(|| runner("no query".into()))?;
                    let result = expect_result(exec)?;
                    check_rows(result, t, &step.table)?;
                }
                t if t.starts_with("a ") && t.contains(" should be raised at ") => {
                    let exec = last.as_ref().ok_or_else(|| runner("no query".into()))?;
                    check_error(exec, t)?;
                }
                other => return Err(runner(format!("unknown step: {other}"))),
            }
        }
        Ok(())
    }
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() > 200 {
        format!("{}...", line.chars().take(200).collect::<String>())
    } else {
        line.to_owned()
    }
}

fn expect_result(exec: &Exec) -> Result<&QueryResult, Outcome> {
    match exec {
        Exec::Ok(r) => Ok(r),
        Exec::Panic(p) => Err(Outcome::Fail(FailKind::Crash, first_line(p))),
        Exec::Err { err, .. } => Err(Outcome::Fail(
            if err.code() == "unsupported" {
                FailKind::Unsupported
            } else {
                FailKind::Error
            },
            first_line(&format!("{}: {err}", err.code())),
        )),
    }
}

fn check_rows(result: &QueryResult, step: &str, table: &[Vec<String>]) -> Result<(), Outcome> {
    let wrong = |m: String| Outcome::Fail(FailKind::WrongResult, first_line(&m));
    if step == "the result should be empty" {
        if result.rows.is_empty() {
            return Ok(());
        }
        return Err(wrong(format!(
            "expected no rows, got {}",
            result.rows.len()
        )));
    }
    let ordered = step.contains("in order");
    let unordered_lists = step.contains("ignoring element order for lists");
    let Some((header, rows)) = table.split_first() else {
        return Err(Outcome::Fail(
            FailKind::Runner,
            "result table without header".into(),
        ));
    };
    if result.columns != *header {
        return Err(wrong(format!(
            "columns {:?}, expected {:?}",
            result.columns, header
        )));
    }
    let mut expected = Vec::new();
    for row in rows {
        let mut cells = Vec::new();
        for cell in row {
            let v =
                values::parse(cell).map_err(|e| Outcome::Fail(FailKind::Runner, e.to_string()))?;
            cells.push(values::canonical(&v, unordered_lists));
        }
        expected.push(cells.join(" | "));
    }
    let mut actual: Vec<String> = result
        .rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|v| values::canonical(&values::from_result(v), unordered_lists))
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .collect();
    if !ordered {
        expected.sort();
        actual.sort();
    }
    if expected != actual {
        let first = expected
            .iter()
            .zip(&actual)
            .find(|(e, a)| e != a)
            .map(|(e, a)| format!("; first difference: got `{a}`, expected `{e}`"))
            .unwrap_or_default();
        return Err(wrong(format!(
            "{} rows, expected {}{first}",
            actual.len(),
            expected.len()
        )));
    }
    Ok(())
}

fn check_error(exec: &Exec, step: &str) -> Result<(), Outcome> {
    // "a TypeError should be raised at runtime: InvalidArgumentType"
    let rest = &step[2..];
    let (tck_type, rest) = rest
        .split_once(" should be raised at ")
        .unwrap_or((rest, ""));
    let (phase, detail) = rest.split_once(':').unwrap_or((rest, ""));
    let (phase, detail) = (phase.trim(), detail.trim());
    let expected = format!("{tck_type} at {phase}");
    let (compile, err) = match exec {
        Exec::Ok(_) => {
            return Err(Outcome::Fail(
                FailKind::AcceptedInvalid,
                format!("expected {expected}, the query succeeded"),
            ))
        }
        Exec::Panic(p) => return Err(Outcome::Fail(FailKind::Crash, first_line(p))),
        Exec::Err { compile, err } => (*compile, err),
    };
    let code_ok = accepted_codes(tck_type, detail).contains(&err.code());
    let phase_ok = match phase {
        "compile time" => compile,
        "runtime" => !compile,
        _ => true,
    };
    if code_ok && phase_ok {
        return Ok(());
    }
    let kind = if err.code() == "unsupported" {
        FailKind::Unsupported
    } else {
        FailKind::ErrorMismatch
    };
    let when = if compile { "compile time" } else { "runtime" };
    Err(Outcome::Fail(
        kind,
        first_line(&format!(
            "expected {expected}, got {} at {when}: {err}",
            err.code()
        )),
    ))
}

fn check_side_effects(before: &State, after: &State, table: &[Vec<String>]) -> Result<(), Outcome> {
    let count = |x: &BTreeSet<u64>, y: &BTreeSet<u64>| x.difference(y).count();
    let actual = [
        ("+nodes", count(&after.nodes, &before.nodes)),
        ("-nodes", count(&before.nodes, &after.nodes)),
        ("+relationships", count(&after.rels, &before.rels)),
        ("-relationships", count(&before.rels, &after.rels)),
        ("+labels", after.labels.difference(&before.labels).count()),
        ("-labels", before.labels.difference(&after.labels).count()),
        ("+properties", after.props.difference(&before.props).count()),
        ("-properties", before.props.difference(&after.props).count()),
    ];
    let mut diffs = Vec::new();
    for (name, got) in actual {
        let want = table
            .iter()
            .find(|r| r.first().is_some_and(|c| c == name))
            .and_then(|r| r.get(1))
            .map_or(Ok(0), |v| v.parse::<usize>())
            .map_err(|e| Outcome::Fail(FailKind::Runner, format!("side effect count: {e}")))?;
        if want != got {
            diffs.push(format!("{name} {got} (expected {want})"));
        }
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(Outcome::Fail(
            FailKind::WrongResult,
            format!("side effects: {}", diffs.join(", ")),
        ))
    }
}
