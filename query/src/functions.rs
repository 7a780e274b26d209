//! Scalar functions and aggregate kinds of the subset.

use crate::error::QueryError;
use crate::temporal::{self, Kind};
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
    /// `percentileDisc(value, p)` / `percentileCont(value, p)`: the argument is compiled as
    /// the list `[value, p]`.
    PercentileDisc,
    PercentileCont,
}

pub(crate) fn aggregate_kind(name: &str) -> Option<AggKind> {
    Some(match name.to_ascii_lowercase().as_str() {
        "count" => AggKind::Count,
        "sum" => AggKind::Sum,
        "avg" => AggKind::Avg,
        "min" => AggKind::Min,
        "max" => AggKind::Max,
        "collect" => AggKind::Collect,
        "percentiledisc" => AggKind::PercentileDisc,
        "percentilecont" => AggKind::PercentileCont,
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
    /// `date()`, `time()`, ... (and their `.transaction`, `.statement`, `.realtime` forms).
    Temporal(Kind),
    Truncate(Kind),
    Duration,
    /// `duration.between` and `duration.inMonths/inDays/inSeconds` (the unit; "" for between).
    Between(&'static str),
    FromEpoch,
    FromEpochMillis,
    Range,
    Length,
    Nodes,
    Relationships,
    Reverse,
    Tail,
    ToBoolean,
    Rand,
    Split,
    Substring,
    Replace,
    Left,
    Right,
    LTrim,
    RTrim,
    Sign,
    Sqrt,
    Exp,
    Log,
    Log10,
    Pi,
    E,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Atan2,
    Degrees,
    Radians,
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
            "size" => (Func::Size, 1, 1),
            "length" => (Func::Length, 1, 1),
            "nodes" => (Func::Nodes, 1, 1),
            "relationships" => (Func::Relationships, 1, 1),
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
            "date" | "date.transaction" | "date.statement" | "date.realtime" => {
                (Func::Temporal(Kind::Date), 0, 1)
            }
            "localtime"
            | "localtime.transaction"
            | "localtime.statement"
            | "localtime.realtime" => (Func::Temporal(Kind::LocalTime), 0, 1),
            "time" | "time.transaction" | "time.statement" | "time.realtime" => {
                (Func::Temporal(Kind::Time), 0, 1)
            }
            "localdatetime"
            | "localdatetime.transaction"
            | "localdatetime.statement"
            | "localdatetime.realtime" => (Func::Temporal(Kind::LocalDateTime), 0, 1),
            "datetime" | "datetime.transaction" | "datetime.statement" | "datetime.realtime" => {
                (Func::Temporal(Kind::DateTime), 0, 1)
            }
            "date.truncate" => (Func::Truncate(Kind::Date), 2, 3),
            "localtime.truncate" => (Func::Truncate(Kind::LocalTime), 2, 3),
            "time.truncate" => (Func::Truncate(Kind::Time), 2, 3),
            "localdatetime.truncate" => (Func::Truncate(Kind::LocalDateTime), 2, 3),
            "datetime.truncate" => (Func::Truncate(Kind::DateTime), 2, 3),
            "datetime.fromepoch" => (Func::FromEpoch, 2, 2),
            "datetime.fromepochmillis" => (Func::FromEpochMillis, 1, 1),
            "duration" => (Func::Duration, 1, 1),
            "duration.between" => (Func::Between(""), 2, 2),
            "duration.inmonths" => (Func::Between("months"), 2, 2),
            "duration.indays" => (Func::Between("days"), 2, 2),
            "duration.inseconds" => (Func::Between("seconds"), 2, 2),
            "range" => (Func::Range, 2, 3),
            "reverse" => (Func::Reverse, 1, 1),
            "tail" => (Func::Tail, 1, 1),
            "toboolean" => (Func::ToBoolean, 1, 1),
            "rand" => (Func::Rand, 0, 0),
            "split" => (Func::Split, 2, 2),
            "substring" => (Func::Substring, 2, 3),
            "replace" => (Func::Replace, 3, 3),
            "left" => (Func::Left, 2, 2),
            "right" => (Func::Right, 2, 2),
            "ltrim" => (Func::LTrim, 1, 1),
            "rtrim" => (Func::RTrim, 1, 1),
            "sign" => (Func::Sign, 1, 1),
            "sqrt" => (Func::Sqrt, 1, 1),
            "exp" => (Func::Exp, 1, 1),
            "log" => (Func::Log, 1, 1),
            "log10" => (Func::Log10, 1, 1),
            "pi" => (Func::Pi, 0, 0),
            "e" => (Func::E, 0, 0),
            "sin" => (Func::Sin, 1, 1),
            "cos" => (Func::Cos, 1, 1),
            "tan" => (Func::Tan, 1, 1),
            "asin" => (Func::Asin, 1, 1),
            "acos" => (Func::Acos, 1, 1),
            "atan" => (Func::Atan, 1, 1),
            "atan2" => (Func::Atan2, 2, 2),
            "degrees" => (Func::Degrees, 1, 1),
            "radians" => (Func::Radians, 1, 1),
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
    match (f, args.as_slice()) {
        (Func::Coalesce, _) => {
            return Ok(args.into_iter().find(|v| !v.is_null()).unwrap_or(Val::Null))
        }
        (Func::Rand, _) => return Ok(Val::Float(random_unit())),
        (Func::Temporal(k), []) => return temporal::construct(k, None),
        (Func::Temporal(k), [a]) => return temporal::construct(k, Some(a)),
        (Func::Truncate(k), [unit, v, rest @ ..]) => {
            return temporal::truncate(k, unit, v, rest.first())
        }
        (Func::Duration, [a]) => return temporal::duration(a),
        (Func::Between(unit), [a, b]) => return temporal::between(a, b, unit),
        (Func::FromEpoch, [s, n]) => return temporal::from_epoch(s, Some(n)),
        (Func::FromEpochMillis, [ms]) => return temporal::from_epoch(ms, None),
        (Func::Pi, _) => return Ok(Val::Float(std::f64::consts::PI)),
        (Func::E, _) => return Ok(Val::Float(std::f64::consts::E)),
        (Func::Range, [start, end, rest @ ..]) => return range(start, end, rest.first()),
        (Func::Split, [Val::Str(s), Val::Str(sep)]) => {
            return Ok(Val::List(if sep.is_empty() {
                s.chars().map(|c| Val::Str(c.to_string())).collect()
            } else {
                s.split(sep.as_str())
                    .map(|p| Val::Str(p.to_owned()))
                    .collect()
            }))
        }
        (Func::Replace, [Val::Str(s), Val::Str(from), Val::Str(to)]) => {
            return Ok(Val::Str(if from.is_empty() {
                s.clone()
            } else {
                s.replace(from.as_str(), to)
            }))
        }
        (Func::Substring, [Val::Str(s), Val::Int(start), rest @ ..]) => {
            let len = match rest.first() {
                None => None,
                Some(Val::Int(l)) => Some(non_negative("substring()", *l)?),
                Some(other) => return Err(expect_type("substring", other)),
            };
            let start = non_negative("substring()", *start)?;
            let chars = s.chars().skip(start);
            return Ok(Val::Str(match len {
                Some(l) => chars.take(l).collect(),
                None => chars.collect(),
            }));
        }
        (Func::Left | Func::Right, [Val::Str(s), Val::Int(n)]) => {
            let n = non_negative("left()/right()", *n)?;
            let count = s.chars().count();
            return Ok(Val::Str(if f == Func::Left {
                s.chars().take(n).collect()
            } else {
                s.chars().skip(count.saturating_sub(n)).collect()
            }));
        }
        (Func::Atan2, [y, x]) => {
            return match (y.as_f64(), x.as_f64()) {
                (Some(y), Some(x)) => Ok(Val::Float(y.atan2(x))),
                _ => Err(expect_type(
                    "atan2",
                    if y.as_f64().is_none() { y } else { x },
                )),
            }
        }
        (
            Func::Range
            | Func::Split
            | Func::Replace
            | Func::Substring
            | Func::Left
            | Func::Right
            | Func::Atan2,
            _,
        ) => {
            let culprit = args
                .iter()
                .find(|a| !matches!(a, Val::Int(_)))
                .or(args.first());
            return Err(expect_type(
                &format!("{f:?}").to_ascii_lowercase(),
                culprit.unwrap_or(&Val::Null),
            ));
        }
        _ => {}
    }
    if args.is_empty() {
        return Err(QueryError::semantic(format!(
            "{}() needs an argument",
            format!("{f:?}").to_ascii_lowercase()
        )));
    }
    let a = args.swap_remove(0);
    if let Some(x) = a.as_f64() {
        let unary: Option<fn(f64) -> f64> = match f {
            Func::Sqrt => Some(f64::sqrt),
            Func::Exp => Some(f64::exp),
            Func::Log => Some(f64::ln),
            Func::Log10 => Some(f64::log10),
            Func::Sin => Some(f64::sin),
            Func::Cos => Some(f64::cos),
            Func::Tan => Some(f64::tan),
            Func::Asin => Some(f64::asin),
            Func::Acos => Some(f64::acos),
            Func::Atan => Some(f64::atan),
            Func::Degrees => Some(f64::to_degrees),
            Func::Radians => Some(f64::to_radians),
            _ => None,
        };
        if let Some(g) = unary {
            return Ok(Val::Float(g(x)));
        }
    }
    Ok(match (f, a) {
        (Func::Size | Func::Length, Val::List(l)) => Val::Int(l.len() as i64),
        (Func::Length, Val::Str(s)) => Val::Int(s.chars().count() as i64),
        (Func::Length, Val::Path(_, rels)) => Val::Int(rels.len() as i64),
        (Func::Nodes, Val::Path(nodes, _)) => Val::List(nodes.into_iter().map(Val::Node).collect()),
        (Func::Relationships, Val::Path(_, rels)) => {
            Val::List(rels.into_iter().map(Val::Rel).collect())
        }
        (Func::Size, Val::Str(s)) => Val::Int(s.chars().count() as i64),
        (Func::ToLower, Val::Str(s)) => Val::Str(s.to_lowercase()),
        (Func::ToUpper, Val::Str(s)) => Val::Str(s.to_uppercase()),
        (Func::Trim, Val::Str(s)) => Val::Str(s.trim().to_owned()),
        (Func::ToString, Val::Str(s)) => Val::Str(s),
        (Func::ToString, Val::Int(i)) => Val::Str(i.to_string()),
        (Func::ToString, Val::Float(x)) => Val::Str(format!("{x:?}")),
        (Func::ToString, Val::Bool(b)) => Val::Str(b.to_string()),
        (Func::ToString, v) if temporal::to_text(&v).is_some() => {
            Val::Str(temporal::to_text(&v).unwrap_or_default())
        }
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
        (Func::Reverse, Val::Str(s)) => Val::Str(s.chars().rev().collect()),
        (Func::Reverse, Val::List(mut l)) => {
            l.reverse();
            Val::List(l)
        }
        (Func::Tail, Val::List(l)) => Val::List(l.into_iter().skip(1).collect()),
        (Func::ToBoolean, Val::Bool(b)) => Val::Bool(b),
        (Func::ToBoolean, Val::Str(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" => Val::Bool(true),
            "false" => Val::Bool(false),
            _ => Val::Null,
        },
        (Func::ToBoolean, Val::Int(i)) => Val::Bool(i != 0),
        (Func::LTrim, Val::Str(s)) => Val::Str(s.trim_start().to_owned()),
        (Func::RTrim, Val::Str(s)) => Val::Str(s.trim_end().to_owned()),
        (Func::Sign, Val::Int(i)) => Val::Int(i.signum()),
        (Func::Sign, Val::Float(x)) => Val::Int(if x > 0.0 {
            1
        } else if x < 0.0 {
            -1
        } else {
            0
        }),

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

fn non_negative(f: &str, n: i64) -> Result<usize, QueryError> {
    usize::try_from(n)
        .map_err(|_| QueryError::Arithmetic(format!("{f} needs a non-negative length, got {n}")))
}

/// Most elements `range()` may produce (a budget like the row limits: a list is held whole).
const MAX_RANGE: i64 = 1_000_000;

fn range(start: &Val, end: &Val, step: Option<&Val>) -> Result<Val, QueryError> {
    let int = |v: &Val| match v {
        Val::Int(i) => Ok(*i),
        other => Err(expect_type("range", other)),
    };
    let (start, end) = (int(start)?, int(end)?);
    let step = step.map(int).transpose()?.unwrap_or(1);
    if step == 0 {
        return Err(QueryError::Arithmetic(
            "range() needs a step other than 0".into(),
        ));
    }
    let (start_, end_, step_) = (i128::from(start), i128::from(end), i128::from(step));
    if (step_ > 0 && end_ < start_) || (step_ < 0 && end_ > start_) {
        return Ok(Val::List(Vec::new()));
    }
    let span = (end_ - start_) / step_;
    if span >= i128::from(MAX_RANGE) {
        return Err(QueryError::BufferLimit(MAX_RANGE as usize));
    }
    Ok(Val::List(
        (0..=span as i64)
            .map(|k| Val::Int(start + k * step))
            .collect(),
    ))
}

/// A uniform float in [0, 1) from a per-thread xorshift generator seeded by the clock.
fn random_unit() -> f64 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = Cell::new(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0x9E37_79B9_7F4A_7C15, |d| d.as_nanos() as u64)
                | 1,
        );
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}
