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

/// An engine value as JSON: datetimes as RFC 3339 strings, non-finite floats as null.
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
    }
}
