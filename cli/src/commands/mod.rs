//! One module per command group. Each returns the exit code on success (0, or 5 for a
//! partly failed batch, 1 for a failed doctor check) and a [`crate::error::CliError`] otherwise.

pub mod auth;
pub mod capabilities;
pub mod chat;
pub mod doctor;
pub mod events;
pub mod invoke;

use serde_json::Value;

/// `v[name]` as text for people ("-" when absent).
pub(crate) fn text(v: &Value, name: &str) -> String {
    match v.get(name) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "-".to_owned(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| i.to_string())
            })
            .collect::<Vec<_>>()
            .join(", "),
        Some(other) => other.to_string(),
    }
}
