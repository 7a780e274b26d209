//! Run-time values and Cypher's value semantics: three-valued equality and comparison,
//! the total order used by ORDER BY, and grouping keys for DISTINCT and aggregation.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use svc_engine::{EdgeId, NodeId, Value};

use crate::error::QueryError;

/// A value flowing through the executor. Nodes and relationships are carried by id and loaded
/// on demand, so rows stay small and comparisons of graph entities are id comparisons.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Val {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    DateTime(i64),
    List(Vec<Val>),
    Map(BTreeMap<String, Val>),
    Node(NodeId),
    Rel(EdgeId),
    /// A path: its nodes in order, and the relationships between them (one fewer).
    Path(Vec<NodeId>, Vec<EdgeId>),
    Date(jiff::civil::Date),
    LocalTime(jiff::civil::Time),
    /// A time of day with its offset from UTC in seconds.
    Time(jiff::civil::Time, i32),
    LocalDateTime(jiff::civil::DateTime),
    /// A datetime that is not UTC at microsecond precision (those are `DateTime`).
    Zoned(Box<jiff::Zoned>),
    Duration(crate::temporal::Duration),
}

impl Val {
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Val::Null => "null",
            Val::Bool(_) => "boolean",
            Val::Int(_) => "integer",
            Val::Float(_) => "float",
            Val::Str(_) => "string",
            Val::DateTime(_) => "datetime",
            Val::List(_) => "list",
            Val::Map(_) => "map",
            Val::Node(_) => "node",
            Val::Rel(_) => "relationship",
            Val::Path(..) => "path",
            Val::Date(_) => "date",
            Val::LocalTime(_) => "localtime",
            Val::Time(..) => "time",
            Val::LocalDateTime(_) => "localdatetime",
            Val::Zoned(_) => "datetime",
            Val::Duration(_) => "duration",
        }
    }

    pub(crate) fn is_null(&self) -> bool {
        matches!(self, Val::Null)
    }

    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self {
            Val::Int(i) => Some(*i as f64),
            Val::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// Truth value for WHERE: only `true` passes; null and false do not.
    pub(crate) fn truthy(&self) -> Result<Option<bool>, QueryError> {
        match self {
            Val::Bool(b) => Ok(Some(*b)),
            Val::Null => Ok(None),
            other => Err(QueryError::type_err(format!(
                "expected a boolean, got {}",
                other.type_name()
            ))),
        }
    }
}

impl From<Value> for Val {
    fn from(v: Value) -> Self {
        match v {
            Value::Null => Val::Null,
            Value::Bool(b) => Val::Bool(b),
            Value::Int(i) => Val::Int(i),
            Value::Float(f) => Val::Float(f),
            Value::String(s) => Val::Str(s),
            Value::DateTime(t) => Val::DateTime(t),
            Value::List(l) => Val::List(l.into_iter().map(Val::from).collect()),
            Value::Map(m) => Val::Map(m.into_iter().map(|(k, v)| (k, Val::from(v))).collect()),
            // A stored temporal no query could have written (out of the calendar's range, an
            // unknown zone) reads as null rather than failing the whole read.
            other => crate::temporal::from_value(&other).unwrap_or(Val::Null),
        }
    }
}

impl From<&Value> for Val {
    fn from(v: &Value) -> Self {
        Val::from(v.clone())
    }
}

/// Converts to a storable property value; graph entities cannot be stored.
pub(crate) fn to_property(v: &Val) -> Result<Value, QueryError> {
    Ok(match v {
        Val::Null => Value::Null,
        Val::Bool(b) => Value::Bool(*b),
        Val::Int(i) => Value::Int(*i),
        Val::Float(f) => Value::Float(*f),
        Val::Str(s) => Value::String(s.clone()),
        Val::DateTime(t) => Value::DateTime(*t),
        Val::Date(_)
        | Val::LocalTime(_)
        | Val::Time(..)
        | Val::LocalDateTime(_)
        | Val::Zoned(_)
        | Val::Duration(_) => crate::temporal::to_value(v).ok_or_else(|| {
            QueryError::type_err(format!("this {} cannot be stored", v.type_name()))
        })?,
        Val::List(l) => Value::List(l.iter().map(to_property).collect::<Result<_, _>>()?),
        Val::Map(m) => Value::Map(
            m.iter()
                .map(|(k, v)| Ok((k.clone(), to_property(v)?)))
                .collect::<Result<_, QueryError>>()?,
        ),
        Val::Node(_) | Val::Rel(_) | Val::Path(..) => {
            return Err(QueryError::type_err(format!(
                "a {} cannot be stored as a property value",
                v.type_name()
            )))
        }
    })
}

/// Cypher `=`: null when either side is (or contains, where it matters) null; values of
/// different types are unequal; integers and floats compare numerically.
pub(crate) fn equals(a: &Val, b: &Val) -> Option<bool> {
    match (a, b) {
        (Val::Null, _) | (_, Val::Null) => None,
        _ if is_temporal_or_duration(a) && is_temporal_or_duration(b) => {
            crate::temporal::equals(a, b).or(Some(false))
        }
        (Val::List(x), Val::List(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            let mut unknown = false;
            for (p, q) in x.iter().zip(y) {
                match equals(p, q) {
                    Some(false) => return Some(false),
                    None => unknown = true,
                    Some(true) => {}
                }
            }
            if unknown {
                None
            } else {
                Some(true)
            }
        }
        (Val::Map(x), Val::Map(y)) => {
            if x.len() != y.len() || x.keys().ne(y.keys()) {
                return Some(false);
            }
            let mut unknown = false;
            for (p, q) in x.values().zip(y.values()) {
                match equals(p, q) {
                    Some(false) => return Some(false),
                    None => unknown = true,
                    Some(true) => {}
                }
            }
            if unknown {
                None
            } else {
                Some(true)
            }
        }
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => match (a, b) {
                (Val::Int(i), Val::Int(j)) => Some(i == j),
                _ => Some(x == y),
            },
            _ => Some(a == b),
        },
    }
}

/// Cypher `<`, `>`, ...: defined within numbers, strings, booleans, datetimes and lists;
/// null (unknown) for anything else, including any null operand.
pub(crate) fn compare(a: &Val, b: &Val) -> Option<Ordering> {
    match (a, b) {
        _ if is_temporal_or_duration(a) && is_temporal_or_duration(b) => {
            crate::temporal::compare(a, b)
        }
        (Val::Int(x), Val::Int(y)) => Some(x.cmp(y)),
        (Val::Str(x), Val::Str(y)) => Some(x.cmp(y)),
        (Val::Bool(x), Val::Bool(y)) => Some(x.cmp(y)),
        (Val::DateTime(x), Val::DateTime(y)) => Some(x.cmp(y)),
        (Val::List(x), Val::List(y)) => {
            for (p, q) in x.iter().zip(y) {
                match compare(p, q)? {
                    Ordering::Equal => {}
                    other => return Some(other),
                }
            }
            Some(x.len().cmp(&y.len()))
        }
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x.partial_cmp(&y),
            _ => None,
        },
    }
}

fn is_temporal_or_duration(v: &Val) -> bool {
    crate::temporal::is_temporal(v) || matches!(v, Val::Duration(_))
}

/// Rank of each type in ORDER BY's total order (ascending; null sorts last).
fn order_rank(v: &Val) -> u8 {
    match v {
        Val::Map(_) => 0,
        Val::Node(_) => 1,
        Val::Rel(_) => 2,
        Val::List(_) => 3,
        Val::Path(..) => 3,
        Val::DateTime(_) | Val::Zoned(_) => 4,
        Val::LocalDateTime(_) => 9,
        Val::Date(_) => 10,
        Val::Time(..) => 11,
        Val::LocalTime(_) => 12,
        Val::Duration(_) => 13,
        Val::Str(_) => 5,
        Val::Bool(_) => 6,
        Val::Int(_) | Val::Float(_) => 7,
        Val::Null => 20,
    }
}

/// The total order of ORDER BY: types ranked as in Neo4j, numbers numerically (NaN last among
/// them), nulls after everything in ascending order.
pub(crate) fn order(a: &Val, b: &Val) -> Ordering {
    let (ra, rb) = (order_rank(a), order_rank(b));
    if ra != rb {
        return ra.cmp(&rb);
    }
    if is_temporal_or_duration(a)
        && is_temporal_or_duration(b)
        && !matches!((a, b), (Val::DateTime(_), Val::DateTime(_)))
    {
        return crate::temporal::compare(a, b)
            .unwrap_or_else(|| crate::temporal::to_text(a).cmp(&crate::temporal::to_text(b)));
    }
    match (a, b) {
        (Val::Int(x), Val::Int(y)) => x.cmp(y),
        (Val::Str(x), Val::Str(y)) => x.cmp(y),
        (Val::Bool(x), Val::Bool(y)) => x.cmp(y),
        (Val::DateTime(x), Val::DateTime(y)) => x.cmp(y),
        (Val::Node(x), Val::Node(y)) => x.cmp(y),
        (Val::Rel(x), Val::Rel(y)) => x.cmp(y),
        (Val::Path(a, r), Val::Path(b, s)) => a.cmp(b).then_with(|| r.cmp(s)),
        (Val::Path(..), _) => Ordering::Greater,
        (_, Val::Path(..)) => Ordering::Less,
        (Val::List(x), Val::List(y)) => {
            for (p, q) in x.iter().zip(y) {
                match order(p, q) {
                    Ordering::Equal => {}
                    other => return other,
                }
            }
            x.len().cmp(&y.len())
        }
        (Val::Map(x), Val::Map(y)) => {
            for ((kp, p), (kq, q)) in x.iter().zip(y) {
                match kp.cmp(kq).then_with(|| order(p, q)) {
                    Ordering::Equal => {}
                    other => return other,
                }
            }
            x.len().cmp(&y.len())
        }
        _ => {
            let (x, y) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            x.partial_cmp(&y)
                .unwrap_or_else(|| x.is_nan().cmp(&y.is_nan()))
        }
    }
}

/// Appends a byte encoding under which two values are equal exactly when DISTINCT and
/// grouping consider them the same (so `1` and `1.0` share a key; nulls group together).
pub(crate) fn write_key(v: &Val, out: &mut Vec<u8>) {
    match v {
        Val::Null => out.push(0),
        Val::Bool(b) => out.extend_from_slice(&[1, u8::from(*b)]),
        Val::Int(i) => {
            out.push(2);
            out.extend_from_slice(&i.to_be_bytes());
        }
        Val::Float(f) => {
            if f.fract() == 0.0 && *f >= -9.2e18 && *f <= 9.2e18 {
                out.push(2);
                out.extend_from_slice(&(*f as i64).to_be_bytes());
            } else {
                out.push(3);
                let bits = if f.is_nan() {
                    f64::NAN.to_bits()
                } else {
                    f.to_bits()
                };
                out.extend_from_slice(&bits.to_be_bytes());
            }
        }
        Val::Str(s) => {
            out.push(4);
            out.extend_from_slice(&(s.len() as u64).to_be_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        Val::DateTime(t) => {
            out.push(5);
            out.extend_from_slice(&t.to_be_bytes());
        }
        Val::List(l) => {
            out.push(6);
            out.extend_from_slice(&(l.len() as u64).to_be_bytes());
            l.iter().for_each(|x| write_key(x, out));
        }
        Val::Map(m) => {
            out.push(7);
            out.extend_from_slice(&(m.len() as u64).to_be_bytes());
            for (k, x) in m {
                write_key(&Val::Str(k.clone()), out);
                write_key(x, out);
            }
        }
        Val::Node(n) => {
            out.push(8);
            out.extend_from_slice(&n.0.to_be_bytes());
        }
        Val::Rel(r) => {
            out.push(9);
            out.extend_from_slice(&r.0.to_be_bytes());
        }
        Val::Date(_)
        | Val::LocalTime(_)
        | Val::Time(..)
        | Val::LocalDateTime(_)
        | Val::Zoned(_)
        | Val::Duration(_) => {
            out.push(11);
            write_key(
                &Val::Str(crate::temporal::to_text(v).unwrap_or_default()),
                out,
            );
        }
        Val::Path(nodes, rels) => {
            out.push(10);
            out.extend_from_slice(&(nodes.len() as u64).to_be_bytes());
            nodes
                .iter()
                .for_each(|n| out.extend_from_slice(&n.0.to_be_bytes()));
            rels.iter()
                .for_each(|r| out.extend_from_slice(&r.0.to_be_bytes()));
        }
    }
}

pub(crate) fn key_of(vals: &[Val]) -> Vec<u8> {
    let mut out = Vec::new();
    vals.iter().for_each(|v| write_key(v, &mut out));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_valued_equality() {
        assert_eq!(equals(&Val::Int(1), &Val::Float(1.0)), Some(true));
        assert_eq!(equals(&Val::Int(1), &Val::Str("1".into())), Some(false));
        assert_eq!(equals(&Val::Null, &Val::Null), None);
        assert_eq!(
            equals(
                &Val::List(vec![Val::Int(1), Val::Null]),
                &Val::List(vec![Val::Int(2), Val::Null])
            ),
            Some(false)
        );
        assert_eq!(
            equals(
                &Val::List(vec![Val::Int(1), Val::Null]),
                &Val::List(vec![Val::Int(1), Val::Null])
            ),
            None
        );
    }

    #[test]
    fn ordering_puts_null_last_and_ranks_types() {
        let mut v = vec![
            Val::Null,
            Val::Int(2),
            Val::Str("a".into()),
            Val::Float(1.5),
            Val::Bool(true),
        ];
        v.sort_by(order);
        assert_eq!(
            v,
            vec![
                Val::Str("a".into()),
                Val::Bool(true),
                Val::Float(1.5),
                Val::Int(2),
                Val::Null
            ]
        );
        assert_eq!(compare(&Val::Int(1), &Val::Str("a".into())), None);
    }

    #[test]
    fn grouping_keys_unify_numbers() {
        assert_eq!(key_of(&[Val::Int(1)]), key_of(&[Val::Float(1.0)]));
        assert_ne!(key_of(&[Val::Int(1)]), key_of(&[Val::Float(1.5)]));
        assert_ne!(
            key_of(&[Val::Str("ab".into()), Val::Str("c".into())]),
            key_of(&[Val::Str("a".into()), Val::Str("bc".into())])
        );
    }
}
