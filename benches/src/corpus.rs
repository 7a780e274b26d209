//! The read-query corpus of the peer benchmark (`benches/corpus/queries.txt`, issue 25) and the
//! timing method shared with `tools/bench/peers.py`, so that our figures and the peers' are
//! taken the same way.
//!
//! Corpus format: `[name]` starts a query; `param NAME TYPE VALUE` lines (TYPE `string`, `int`,
//! `float` or `datetime`, a datetime given in epoch milliseconds UTC) give its parameters; every
//! other line up to the next `[name]` is the query text; `#` lines are comments.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use svc_engine::Value;

/// One corpus query.
#[derive(Clone, Debug, PartialEq)]
pub struct CorpusQuery {
    pub name: String,
    pub text: String,
    pub params: BTreeMap<String, Value>,
}

/// What is wrong with a corpus file, with its 1-based line.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("line {line}: {message}")]
    Syntax { line: usize, message: String },
    #[error("reading the corpus: {0}")]
    Io(#[from] std::io::Error),
}

/// The corpus file: `benches/corpus/queries.txt`, or the file `SVC_BENCH_CORPUS` names
/// (relative to the repository's root, e.g. `benches/corpus/holdout.txt`).
pub fn corpus_path() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    match std::env::var_os("SVC_BENCH_CORPUS") {
        Some(path) => root.join(path),
        None => root.join("benches/corpus/queries.txt"),
    }
}

/// Reads and parses a corpus file.
pub fn load(path: &Path) -> Result<Vec<CorpusQuery>, CorpusError> {
    parse(&std::fs::read_to_string(path)?)
}

/// Parses corpus text.
pub fn parse(text: &str) -> Result<Vec<CorpusQuery>, CorpusError> {
    let mut out: Vec<CorpusQuery> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |message: String| CorpusError::Syntax { line, message };
        let trimmed = raw.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && out.is_empty()) {
            continue;
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            if out.iter().any(|q| q.name == name) {
                return Err(err(format!("query {name} named twice")));
            }
            out.push(CorpusQuery {
                name: name.to_owned(),
                text: String::new(),
                params: BTreeMap::new(),
            });
            continue;
        }
        let Some(current) = out.last_mut() else {
            return Err(err("text before the first [name]".into()));
        };
        if let Some(rest) = trimmed.strip_prefix("param ") {
            let mut parts = rest.splitn(3, ' ');
            let (Some(name), Some(kind), Some(value)) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(err("expected `param NAME TYPE VALUE`".into()));
            };
            let value = match kind {
                "string" => Value::String(value.to_owned()),
                "int" => Value::Int(value.parse().map_err(|_| err(format!("bad int {value}")))?),
                "float" => Value::Float(
                    value
                        .parse()
                        .map_err(|_| err(format!("bad float {value}")))?,
                ),
                "datetime" => {
                    let ms: i64 = value
                        .parse()
                        .map_err(|_| err(format!("bad epoch milliseconds {value}")))?;
                    Value::DateTime(ms * 1000)
                }
                other => return Err(err(format!("unknown parameter type {other}"))),
            };
            current.params.insert(name.to_owned(), value);
            continue;
        }
        if !trimmed.is_empty() {
            if !current.text.is_empty() {
                current.text.push('\n');
            }
            current.text.push_str(raw.trim_end());
        }
    }
    if let Some(q) = out.iter().find(|q| q.text.is_empty()) {
        return Err(CorpusError::Syntax {
            line: 0,
            message: format!("query {} has no text", q.name),
        });
    }
    Ok(out)
}

/// The timing method of both sides: `warmup` untimed runs, then timed runs until `max_runs` or
/// until `budget` is spent (at least `min_runs`).
#[derive(Clone, Copy, Debug)]
pub struct Method {
    pub warmup: usize,
    pub min_runs: usize,
    pub max_runs: usize,
    pub budget: Duration,
}

impl Default for Method {
    fn default() -> Self {
        Method {
            warmup: 3,
            min_runs: 5,
            max_runs: 30,
            budget: Duration::from_secs(3),
        }
    }
}

impl Method {
    /// Times `run` (one query execution, answer included) and returns the sorted samples.
    pub fn measure<E>(&self, mut run: impl FnMut() -> Result<(), E>) -> Result<Vec<Duration>, E> {
        for _ in 0..self.warmup {
            run()?;
        }
        let started = Instant::now();
        let mut samples = Vec::with_capacity(self.max_runs);
        while samples.len() < self.max_runs
            && (samples.len() < self.min_runs || started.elapsed() < self.budget)
        {
            let t = Instant::now();
            run()?;
            samples.push(t.elapsed());
        }
        samples.sort_unstable();
        Ok(samples)
    }
}

/// Nearest-rank percentile of sorted samples (`p` in 0..=100).
pub fn percentile(sorted: &[Duration], p: u32) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (sorted.len() * p as usize).div_ceil(100).max(1);
    sorted[rank.min(sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_params_and_multiline_text() {
        let q = parse(
            "# c\n\n[a]\nparam e string x y\nparam s datetime 5\nMATCH (n)\n  RETURN n\n\n[b]\nRETURN 1\n",
        )
        .expect("parses");
        assert_eq!(q.len(), 2);
        assert_eq!(q[0].text, "MATCH (n)\n  RETURN n");
        assert_eq!(q[0].params["e"], Value::String("x y".into()));
        assert_eq!(q[0].params["s"], Value::DateTime(5000));
        assert_eq!(q[1].name, "b");
    }

    #[test]
    fn refuses_bad_lines() {
        assert!(parse("MATCH (n) RETURN n").is_err());
        assert!(parse("[a]\nparam x int nope\nRETURN 1").is_err());
        assert!(parse("[a]\nRETURN 1\n[a]\nRETURN 2").is_err());
        assert!(parse("[a]\n[b]\nRETURN 2").is_err());
    }

    #[test]
    fn nearest_rank_percentiles() {
        let s: Vec<Duration> = (1..=10).map(Duration::from_millis).collect();
        assert_eq!(percentile(&s, 50), Duration::from_millis(5));
        assert_eq!(percentile(&s, 90), Duration::from_millis(9));
        assert_eq!(percentile(&s[..1], 90), Duration::from_millis(1));
    }
}
