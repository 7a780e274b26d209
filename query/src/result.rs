//! What a query returns: columns, typed rows, the plan (EXPLAIN/PROFILE) and statistics.
//! Everything here serialises to JSON with serde.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use svc_engine::Value;

use crate::ids::IdCodec;

/// Query parameters (`$name`), by name.
pub type Params = BTreeMap<String, Value>;

/// Budgets every query runs under (exceeding one is an error, never a hang), and how it
/// shows node and relationship ids.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Wall-clock budget (default 2 s).
    pub time: Duration,
    /// Most result rows (default 10,000); one more is a `row_limit` error.
    pub max_rows: usize,
    /// Largest upper bound a variable-length relationship may have (default 10).
    pub max_hops: u32,
    /// Most rows an operator may hold at once (sort, aggregation, DISTINCT, write stages).
    pub max_buffered_rows: usize,
    /// How `id()` and result nodes and relationships show ids, and so what `id(n) = $x`
    /// compares with (default: the engine's ids, [`IdCodec::identity`]).
    pub ids: IdCodec,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            time: Duration::from_secs(2),
            max_rows: 10_000,
            max_hops: 10,
            max_buffered_rows: 1_000_000,
            ids: IdCodec::identity(),
        }
    }
}

/// A value in a result row.
///
/// JSON: scalars as JSON scalars, datetimes as RFC 3339 strings, nodes as
/// `{"id", "labels", "properties"}`, relationships as `{"id", "type", "start", "end", "properties"}`.
#[derive(Clone, Debug, PartialEq)]
pub enum ResultValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    /// Microseconds since the Unix epoch, UTC.
    DateTime(i64),
    List(Vec<ResultValue>),
    Map(BTreeMap<String, ResultValue>),
    Node(ResultNode),
    Relationship(ResultRelationship),
    Path(ResultPath),
    /// A date, time, local time, local datetime, datetime with an offset or zone, or duration:
    /// JSON its ISO 8601 text, as Cypher's `toString` writes it.
    Temporal(ResultTemporal),
}

#[derive(Clone, Debug, PartialEq)]
pub struct ResultTemporal {
    /// `date`, `localtime`, `time`, `localdatetime`, `datetime` or `duration`.
    pub type_name: &'static str,
    pub text: String,
}

/// A UTC datetime in Cypher's text form (`2015-07-21T21:40Z`: seconds only when not zero).
pub fn cypher_datetime_text(micros: i64) -> String {
    crate::temporal::to_text(&crate::value::Val::DateTime(micros))
        .unwrap_or_else(|| micros.to_string())
}

/// A path: `{"nodes": [...], "relationships": [...]}`, the relationships between consecutive
/// nodes (a relationship's `start` and `end` tell its direction along the path).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResultPath {
    pub nodes: Vec<ResultNode>,
    pub relationships: Vec<ResultRelationship>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResultNode {
    /// The id as [`Limits::ids`] shows it (what `id(n)` gives).
    pub id: u64,
    pub labels: Vec<String>,
    pub properties: BTreeMap<String, ResultValue>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResultRelationship {
    /// The id as [`Limits::ids`] shows it (what `id(r)` gives); `start` and `end` are the
    /// shown ids of its nodes.
    pub id: u64,
    #[serde(rename = "type")]
    pub rel_type: String,
    pub start: u64,
    pub end: u64,
    pub properties: BTreeMap<String, ResultValue>,
}

impl From<&Value> for ResultValue {
    fn from(v: &Value) -> Self {
        match v {
            Value::Null => ResultValue::Null,
            Value::Bool(b) => ResultValue::Bool(*b),
            Value::Int(i) => ResultValue::Int(*i),
            Value::Float(f) => ResultValue::Float(*f),
            Value::String(s) => ResultValue::String(s.clone()),
            Value::DateTime(t) => ResultValue::DateTime(*t),
            Value::List(l) => ResultValue::List(l.iter().map(ResultValue::from).collect()),
            Value::Map(m) => ResultValue::Map(
                m.iter()
                    .map(|(k, v)| (k.clone(), ResultValue::from(v)))
                    .collect(),
            ),
            Value::Date(_)
            | Value::LocalTime(_)
            | Value::Time(..)
            | Value::LocalDateTime(..)
            | Value::ZonedDateTime(_)
            | Value::Duration(_) => match crate::temporal::temporal_text(v) {
                Some(text) => ResultValue::Temporal(ResultTemporal {
                    type_name: v.type_name(),
                    text,
                }),
                None => ResultValue::Null,
            },
        }
    }
}

/// Formats microseconds since the epoch as RFC 3339 (UTC), e.g. `2024-05-01T12:00:00.000001Z`.
pub fn format_datetime(micros: i64) -> String {
    let nanos = i128::from(micros) * 1_000;
    match time::OffsetDateTime::from_unix_timestamp_nanos(nanos) {
        Ok(t) => t
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_else(|_| micros.to_string()),
        Err(_) => micros.to_string(),
    }
}

impl Serialize for ResultValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ResultValue::Null => s.serialize_none(),
            ResultValue::Bool(b) => s.serialize_bool(*b),
            ResultValue::Int(i) => s.serialize_i64(*i),
            ResultValue::Float(f) => s.serialize_f64(*f),
            ResultValue::String(v) => s.serialize_str(v),
            ResultValue::DateTime(t) => s.serialize_str(&format_datetime(*t)),
            ResultValue::List(l) => s.collect_seq(l),
            ResultValue::Map(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
            ResultValue::Node(n) => n.serialize(s),
            ResultValue::Relationship(r) => r.serialize(s),
            ResultValue::Path(p) => p.serialize(s),
            ResultValue::Temporal(t) => s.serialize_str(&t.text),
        }
    }
}

/// Counters of what a query did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QueryStats {
    pub rows: u64,
    pub elapsed_us: u64,
    pub nodes_created: u64,
    pub nodes_deleted: u64,
    pub relationships_created: u64,
    pub relationships_deleted: u64,
    pub properties_set: u64,
    pub labels_added: u64,
    pub labels_removed: u64,
}

impl QueryStats {
    /// Whether the query changed the graph.
    pub fn contains_updates(&self) -> bool {
        self.nodes_created
            + self.nodes_deleted
            + self.relationships_created
            + self.relationships_deleted
            + self.properties_set
            + self.labels_added
            + self.labels_removed
            > 0
    }
}

/// One operator of a plan, with its inputs as children. `rows` and `time_us` are filled by
/// PROFILE only.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanTree {
    pub operator: String,
    pub details: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_us: Option<u64>,
    pub children: Vec<PlanTree>,
}

impl PlanTree {
    /// Every operator name, depth first (handy in tests: "does the plan use an index seek?").
    pub fn operators(&self) -> Vec<&str> {
        let mut out = vec![self.operator.as_str()];
        for c in &self.children {
            out.extend(c.operators());
        }
        out
    }

    /// An indented text rendering, one operator per line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(0, &mut out);
        out
    }

    fn render_into(&self, depth: usize, out: &mut String) {
        out.push_str(&"  ".repeat(depth));
        out.push_str(&self.operator);
        if !self.details.is_empty() {
            out.push_str(&format!(" ({})", self.details));
        }
        if let Some(r) = self.rows {
            out.push_str(&format!(" rows={r}"));
        }
        if let Some(t) = self.time_us {
            out.push_str(&format!(" time={t}us"));
        }
        out.push('\n');
        for c in &self.children {
            c.render_into(depth + 1, out);
        }
    }
}

/// The outcome of a query.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueryResult {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<ResultValue>>,
    /// Present for EXPLAIN (plan only, nothing run) and PROFILE (with per-operator figures).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanTree>,
    pub stats: QueryStats,
}
