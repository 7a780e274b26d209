//! Scalar functions and aggregate kinds of the subset.

use crate::error::QueryError;
use crate::value::Val;

/// Aggregate functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AggKind {
    Count,
    Sum,
    Avg,
    Min,
    Max,
    Collect,
}

pub(crate) fn aggregate_kind(name: &str) -> Option<AggKind> {
    Some(match name.to_ascii_lowercase().as_str() {
        "count" => AggKind::Count,
        "sum" => AggKind::Sum,
        "avg" => AggKind::Avg,
        "min" => AggKind::Min,
        "max" => AggKind::Max,
        "collect" => AggKind::Collect,
        _ => return None,
    })
}

pub(crate) fn is_aggregate(name: &str) -> bool {
    aggregate_kind(name).is_some()
}

/// Scalar functions. Those that look at graph entities (`labels`, `type`, ...) are evaluated by
/// the executor, which has the graph; the rest are pure and live here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Func {
    Id,
    Labels,
    Type,
    Keys,
    Properties,
    StartNode,
    EndNode,
    Size,
    Coalesce,
    ToLower,
    ToUpper,
    Trim,
    ToString,
    ToInteger,
    ToFloat,
    Abs,
    Round,
    Floor,
    Ceil,
    Head,
    Last,
    DateTime,
}

impl Func {
    /// Looks a function up by name (case-insensitive) and checks its arity.
    pub(crate) fn lookup(name: &str, arity: usize) -> Result<Func, QueryError> {
        let (f, min, max) = match name.to_ascii_lowercase().as_str() {
            "id" => (Func::Id, 1, 1),
            "labels" => (Func::Labels, 1, 1),
            "type" => (Func::Type, 1, 1),
            "keys" => (Func::Keys, 1, 1),
            "properties" => (Func::Properties, 1, 1),
            "startnode" => (Func::StartNode, 1, 1),
            "endnode" => (Func::EndNode, 1, 1),
            "size" | "length" => (Func::Size, 1, 1),
            "coalesce" => (Func::Coalesce, 1, usize::MAX),
            "tolower" => (Func::ToLower, 1, 1),
            "toupper" => (Func::ToUpper, 1, 1),
            "trim" => (Func::Trim, 1, 1),
            "tostring" => (Func::ToString, 1, 1),
            "tointeger" => (Func::ToInteger, 1, 1),
            "tofloat" => (Func::ToFloat, 1, 1),
            "abs" => (Func::Abs, 1, 1),
            "round" => (Func::Round, 1, 1),
            "floor" => (Func::Floor, 1, 1),
            "ceil" => (Func::Ceil, 1, 1),
            "head" => (Func::Head, 1, 1),
            "last" => (Func::Last, 1, 1),
            "datetime" => (Func::DateTime, 1, 1),
            _ => return Err(QueryError::UnknownFunction(name.to_owned())),
        };
        if arity < min || arity > max {
            return Err(QueryError::semantic(format!(
                "{name}() does not take {arity} argument(s)"
            )));
        }
        Ok(f)
    }

    /// Whether null in (any) argument gives null without calling the function.
    pub(crate) fn null_in_null_out(self) -> bool {
        !matches!(self, Func::Coalesce)
    }
}

fn expect_type(f: &str, v: &Val) -> QueryError {
    QueryError::type_err(format!("{f}() cannot take a {}", v.type_name()))
}

/// Evaluates a pure function (everything except the graph-entity ones).
pub(crate) fn call_pure(f: Func, mut args: Vec<Val>) -> Result<Val, QueryError> {
    if f == Func::Coalesce {
        return Ok(args.into_iter().find(|v| !v.is_null()).unwrap_or(Val::Null));
    }
    let a = args.swap_remove(0);
    Ok(match (f, a) {
        (Func::Size, Val::List(l)) => Val::Int(l.len() as i64),
        (Func::Size, Val::Str(s)) => Val::Int(s.chars().count() as i64),
        (Func::ToLower, Val::Str(s)) => Val::Str(s.to_lowercase()),
        (Func::ToUpper, Val::Str(s)) => Val::Str(s.to_uppercase()),
        (Func::Trim, Val::Str(s)) => Val::Str(s.trim().to_owned()),
        (Func::ToString, Val::Str(s)) => Val::Str(s),
        (Func::ToString, Val::Int(i)) => Val::Str(i.to_string()),
        (Func::ToString, Val::Float(x)) => Val::Str(format!("{x:?}")),
        (Func::ToString, Val::Bool(b)) => Val::Str(b.to_string()),
        (Func::ToString, Val::DateTime(t)) => Val::Str(crate::result::format_datetime(t)),
        (Func::ToInteger, Val::Int(i)) => Val::Int(i),
        (Func::ToInteger, Val::Float(x)) => float_to_int(x.trunc()),
        (Func::ToInteger, Val::Str(s)) => match s.trim().parse::<i64>() {
            Ok(i) => Val::Int(i),
            Err(_) => s
                .trim()
                .parse::<f64>()
                .map_or(Val::Null, |x| float_to_int(x.trunc())),
        },
        (Func::ToInteger, Val::Bool(b)) => Val::Int(i64::from(b)),
        (Func::ToFloat, Val::Int(i)) => Val::Float(i as f64),
        (Func::ToFloat, Val::Float(x)) => Val::Float(x),
        (Func::ToFloat, Val::Str(s)) => s.trim().parse::<f64>().map_or(Val::Null, Val::Float),
        (Func::Abs, Val::Int(i)) => Val::Int(
            i.checked_abs()
                .ok_or_else(|| QueryError::Arithmetic("integer overflow in abs()".into()))?,
        ),
        (Func::Abs, Val::Float(x)) => Val::Float(x.abs()),
        (Func::Round, Val::Int(i)) => Val::Float(i as f64),
        (Func::Round, Val::Float(x)) => Val::Float(x.round()),
        (Func::Floor, Val::Int(i)) => Val::Float(i as f64),
        (Func::Floor, Val::Float(x)) => Val::Float(x.floor()),
        (Func::Ceil, Val::Int(i)) => Val::Float(i as f64),
        (Func::Ceil, Val::Float(x)) => Val::Float(x.ceil()),
        (Func::Head, Val::List(l)) => l.into_iter().next().unwrap_or(Val::Null),
        (Func::Last, Val::List(l)) => l.into_iter().next_back().unwrap_or(Val::Null),
        (Func::DateTime, Val::DateTime(t)) => Val::DateTime(t),
        (Func::DateTime, Val::Str(s)) => Val::DateTime(parse_datetime(&s)?),
        (f, a) => return Err(expect_type(&format!("{f:?}").to_ascii_lowercase(), &a)),
    })
}

/// Null when the float does not fit an integer (as Neo4j's toInteger does for bad input).
fn float_to_int(x: f64) -> Val {
    if x.is_finite() && x >= i64::MIN as f64 && x < i64::MAX as f64 {
        Val::Int(x as i64)
    } else {
        Val::Null
    }
}

/// Parses an RFC 3339 timestamp into microseconds since the epoch.
pub(crate) fn parse_datetime(s: &str) -> Result<i64, QueryError> {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .map_err(|e| {
            QueryError::type_err(format!(
                "datetime() needs an RFC 3339 timestamp such as 2024-05-01T12:00:00Z ({e})"
            ))
        })?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000)
        .map_err(|_| QueryError::type_err("datetime out of range"))
}
