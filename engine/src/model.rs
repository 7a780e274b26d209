//! The data model every layer shares: ids, typed property values, nodes and edges.

use std::collections::BTreeMap;
use std::fmt;

/// A workspace: the tenant boundary. Every stored key starts with it, so no read path can cross
/// workspaces. The server renders it as `ws_<16 hex digits>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkspaceId(pub u64);

impl WorkspaceId {
    /// Scope of records that belong to no workspace (users, the workspace directory itself).
    pub const GLOBAL: WorkspaceId = WorkspaceId(0);
}

impl fmt::Display for WorkspaceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ws_{:016x}", self.0)
    }
}

/// A node id, unique across the whole store (allocated from one sequence).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u64);

/// An edge (relationship) id, allocated from the same sequence as node ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EdgeId(pub u64);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for EdgeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Property map of a node or an edge. Keys are ordered so encodings are deterministic.
pub type Properties = BTreeMap<String, Value>;

/// A typed property value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    /// A UTC instant, microseconds since the Unix epoch.
    DateTime(i64),
    List(Vec<Value>),
    Map(BTreeMap<String, Value>),
    /// A calendar date: days since 1970-01-01.
    Date(i64),
    /// A time of day without an offset: nanoseconds since midnight.
    LocalTime(i64),
    /// A time of day with an offset: local nanoseconds since midnight, offset from UTC in
    /// seconds.
    Time(i64, i32),
    /// A datetime without a zone: seconds since 1970-01-01T00:00 on the wall clock, and
    /// nanoseconds (0..1e9).
    LocalDateTime(i64, u32),
    /// A datetime with an offset, a named zone or nanoseconds (a UTC instant at microsecond
    /// precision is `DateTime`).
    ZonedDateTime(Box<ZonedDateTime>),
    /// A duration (not orderable; equal when all four parts are).
    Duration(Box<DurationValue>),
}

/// A datetime with its offset and, when it has one, its IANA zone name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ZonedDateTime {
    /// The instant: seconds since the Unix epoch (UTC) ...
    pub seconds: i64,
    /// ... and nanoseconds (0..1e9).
    pub nanos: u32,
    /// Offset from UTC in seconds at that instant.
    pub offset: i32,
    /// The IANA zone (`Europe/Stockholm`), None for a fixed offset.
    pub zone: Option<String>,
}

impl ZonedDateTime {
    /// The instant in nanoseconds since the epoch.
    pub fn instant_nanos(&self) -> i128 {
        i128::from(self.seconds) * 1_000_000_000 + i128::from(self.nanos)
    }
}

/// A Cypher duration: months, days, seconds and nanoseconds, kept apart because a month and a
/// day have no fixed length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DurationValue {
    pub months: i64,
    pub days: i64,
    pub seconds: i64,
    pub nanos: i64,
}

impl Value {
    /// The name of the value's type, as used in error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "float",
            Value::String(_) => "string",
            Value::DateTime(_) => "datetime",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Date(_) => "date",
            Value::LocalTime(_) => "localtime",
            Value::Time(..) => "time",
            Value::LocalDateTime(..) => "localdatetime",
            Value::ZonedDateTime(_) => "datetime",
            Value::Duration(_) => "duration",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// Numeric view of ints and floats (what ordered indexes and comparisons use).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Float(f)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

/// A node as stored: its labels (at least one) and its properties.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub id: NodeId,
    pub labels: Vec<String>,
    pub properties: Properties,
}

impl Node {
    pub fn has_label(&self, label: &str) -> bool {
        self.labels.iter().any(|l| l == label)
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.properties.get(key)
    }
}

/// A directed, typed edge.
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    pub id: EdgeId,
    pub rel_type: String,
    pub start: NodeId,
    pub end: NodeId,
    pub properties: Properties,
}

/// Direction of an adjacency lookup, seen from the node asked about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    Outgoing,
    Incoming,
}

/// One entry of a node's adjacency list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdjacentEdge {
    pub edge: EdgeId,
    pub rel_type: String,
    /// The node at the other end.
    pub neighbour: NodeId,
    pub direction: Direction,
}
