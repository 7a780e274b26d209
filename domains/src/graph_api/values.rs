//! Engine property values and JSON, both ways: the one conversion ingestion, exports, query
//! parameters and answers share.

use serde_json::{Map, Value as Json};
use svc_engine::{Properties, Value};

use svc_core::plumbing::clock::micros_rfc3339;

/// JSON to an engine value: integers stay integers, other numbers become floats.
pub fn json_to_value(v: Json) -> Value {
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(f64::MAX)),
        },
        Json::String(s) => Value::String(s),
        Json::Array(items) => Value::List(items.into_iter().map(json_to_value).collect()),
        Json::Object(m) => Value::Map(json_object_to_properties(m)),
    }
}

pub fn json_object_to_properties(m: Map<String, Json>) -> Properties {
    m.into_iter().map(|(k, v)| (k, json_to_value(v))).collect()
}

/// A query parameter from JSON: as `json_to_value`, except that an object
/// `{"$type": T, "_value": "<ISO 8601 text>"}` (Neo4j's Query API typed JSON) is a temporal
/// value of type T, one of `svc_query::TEMPORAL_PARAM_TYPES` (docs/temporal.md).
/// Nesting is bounded by the JSON parser's depth limit.
pub fn json_to_param(v: Json) -> Result<Value, svc_query::QueryError> {
    Ok(match v {
        Json::Object(m) => match (m.get("$type"), m.get("_value"), m.len()) {
            (Some(Json::String(t)), Some(Json::String(text)), 2) => {
                svc_query::temporal_param(t, text)?
            }
            _ => Value::Map(
                m.into_iter()
                    .map(|(k, v)| Ok((k, json_to_param(v)?)))
                    .collect::<Result<_, svc_query::QueryError>>()?,
            ),
        },
        Json::Array(items) => Value::List(
            items
                .into_iter()
                .map(json_to_param)
                .collect::<Result<_, _>>()?,
        ),
        other => json_to_value(other),
    })
}

/// An engine value as JSON: datetimes as RFC 3339 strings, the other temporal values as their
/// ISO 8601 text (as Cypher's `toString` writes it), non-finite floats as null.
pub fn value_to_json(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::String(s) => Json::String(s.clone()),
        Value::DateTime(us) => Json::String(micros_rfc3339(*us)),
        Value::List(items) => Json::Array(items.iter().map(value_to_json).collect()),
        Value::Map(m) => Json::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), value_to_json(v)))
                .collect(),
        ),
        Value::Date(_)
        | Value::LocalTime(_)
        | Value::Time(..)
        | Value::LocalDateTime(..)
        | Value::ZonedDateTime(_)
        | Value::Duration(_) => svc_query::temporal_text(v).map_or(Json::Null, Json::String),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_temporal_parameters_become_temporal_values() {
        let p = json_to_param(json!({
            "day": {"$type": "Date", "_value": "2026-01-02"},
            "list": [{"$type": "Duration", "_value": "P1D"}],
            "plain": {"$type": 1, "_value": "x"},
            "s": "2026-01-02"
        }))
        .expect("parses");
        let Value::Map(m) = p else {
            panic!("a map: {p:?}")
        };
        assert_eq!(m["day"], Value::Date(20_455));
        assert_eq!(value_to_json(&m["day"]), json!("2026-01-02"));
        assert!(matches!(&m["list"], Value::List(l) if matches!(l[0], Value::Duration(_))));
        assert!(matches!(m["plain"], Value::Map(_)));
        assert_eq!(m["s"], Value::String("2026-01-02".into()));
        assert!(json_to_param(json!({"$type": "Date", "_value": "2026-02-30"})).is_err());
        assert!(json_to_param(json!({"$type": "Point", "_value": "x"})).is_err());
    }
}
