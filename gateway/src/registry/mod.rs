//! The capability catalogue: one descriptor per capability id of `svc_core::capabilities` (the ids
//! live there and only there), with its contract: grant, legacy scope, modes, cost, side effect,
//! approval behaviour, MCP tool name, draft 2020-12 input and output schemas and examples.
//!
//! Schemas are compiled once, on first use, and kept for the life of the process. The
//! contracts themselves are in `contracts`.

mod contracts;

use contracts::describe;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::{json, Value};

use svc_core::capabilities::{ApprovalKind, Capability, Mode, SideEffect};
use svc_core::error::{Error, Result};
use svc_core::integration_kind::Kind as IntegrationKind;

/// Contract version shown on every descriptor (SPEC.md: a date).
pub const CONTRACT_VERSION: &str = "2026-11-15";

/// Legacy scope that satisfies the grant check of every read-only capability (side effect
/// `none`). It never opens a side-effecting capability.
pub const LEGACY_INVOKE_SCOPE: &str = "v1:capabilities:invoke";

#[derive(Clone, Debug, Serialize)]
pub struct ApprovalBehavior {
    pub kind: ApprovalKind,
    pub description: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct Example {
    pub title: &'static str,
    pub mode: &'static str,
    pub input: Value,
    /// The `result` object such an invocation returns (committed), when shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
}

/// A capability's full contract, as listed (before key filtering of `allowed_modes`).
#[derive(Clone, Debug, Serialize)]
pub struct Descriptor {
    pub id: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub version: &'static str,
    pub grant: String,
    pub legacy_scope: &'static str,
    pub allowed_modes: Vec<&'static str>,
    pub action_credit_cost: u64,
    pub side_effect: SideEffect,
    pub approval_behavior: ApprovalBehavior,
    pub mcp_tool_name: &'static str,
    /// The integration that must be connected before this capability can queue or execute
    /// (`dry_run` works without it and shows what would be sent).
    pub requires_integration: Option<IntegrationKind>,
    pub input_schema: Value,
    pub output_schema: Value,
    pub examples: Vec<Example>,
}

impl Descriptor {
    pub fn modes(&self) -> impl Iterator<Item = Mode> + '_ {
        self.allowed_modes.iter().filter_map(|m| Mode::parse(m))
    }

    pub fn allows_mode(&self, mode: Mode) -> bool {
        self.modes().any(|m| m == mode)
    }

    pub fn is_read_only(&self) -> bool {
        self.side_effect == SideEffect::None
    }

    /// The mode used when a request names none: the most direct mode the capability has
    /// (execute, else queue).
    pub fn default_mode(&self) -> Mode {
        if self.allows_mode(Mode::Execute) {
            Mode::Execute
        } else if self.allows_mode(Mode::Queue) {
            Mode::Queue
        } else {
            Mode::DryRun
        }
    }
}

/// A compiled descriptor: its validators are built once.
pub struct Entry {
    pub capability: Capability,
    pub descriptor: Descriptor,
    input: jsonschema::Validator,
    output: jsonschema::Validator,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("id", &self.descriptor.id)
            .finish_non_exhaustive()
    }
}

impl Entry {
    /// Checks an invocation's input; the error lists every violation with its JSON pointer.
    pub fn validate_input(&self, input: &Value) -> Result<()> {
        check(&self.input, input, "input")
    }

    /// Checks an executor's result against the declared output schema.
    pub fn validate_output(&self, output: &Value) -> Result<()> {
        check(&self.output, output, "output")
    }
}

fn check(validator: &jsonschema::Validator, instance: &Value, what: &str) -> Result<()> {
    let errors: Vec<Value> = validator
        .iter_errors(instance)
        .take(20)
        .map(|e| json!({ "path": e.instance_path().as_str(), "message": e.to_string() }))
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    let first = errors[0]["message"].as_str().unwrap_or_default().to_owned();
    let path = errors[0]["path"].as_str().unwrap_or_default().to_owned();
    let at = if path.is_empty() {
        "/".to_owned()
    } else {
        path
    };
    Err(Error::invalid_input(format!(
        "{what} does not match the capability schema at {at}: {first}"
    ))
    .with_details(json!({ "errors": errors })))
}

/// The compiled catalogue, in the order of [`Capability::ALL`].
pub fn all() -> &'static [Entry] {
    static CATALOGUE: OnceLock<Vec<Entry>> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        Capability::ALL
            .into_iter()
            .map(describe)
            .filter_map(|d| {
                // Schemas are constants of this file, covered by unit tests; a schema that does
                // not compile would drop its capability rather than take the process down.
                let input = jsonschema::draft202012::new(&d.input_schema)
                    .map_err(|e| tracing::error!(id = d.id, error = %e, "bad input schema"))
                    .ok()?;
                let output = jsonschema::draft202012::new(&d.output_schema)
                    .map_err(|e| tracing::error!(id = d.id, error = %e, "bad output schema"))
                    .ok()?;
                Some(Entry {
                    capability: Capability::parse(d.id)?,
                    descriptor: d,
                    input,
                    output,
                })
            })
            .collect()
    })
}

pub fn get(id: &str) -> Option<&'static Entry> {
    all().iter().find(|e| e.descriptor.id == id)
}

/// The entry of a capability (every capability has one: the schemas are unit-tested).
pub fn entry(c: Capability) -> Option<&'static Entry> {
    all().iter().find(|e| e.capability == c)
}

/// Descriptor lookup by id, as a map (for listing in a stable order).
pub fn by_id() -> BTreeMap<&'static str, &'static Entry> {
    all().iter().map(|e| (e.descriptor.id, e)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use svc_core::capabilities;

    #[test]
    fn every_capability_id_has_a_compiled_descriptor() {
        let ids: Vec<_> = all().iter().map(|e| e.descriptor.id).collect();
        assert_eq!(ids, capabilities::ids().collect::<Vec<_>>());
        for c in Capability::ALL {
            let d = describe(c);
            jsonschema::draft202012::new(&d.input_schema).expect("input schema compiles");
            jsonschema::draft202012::new(&d.output_schema).expect("output schema compiles");
        }
    }

    #[test]
    fn every_example_validates_against_its_own_schemas() {
        for e in all() {
            assert!(!e.descriptor.examples.is_empty(), "{}", e.descriptor.id);
            for ex in &e.descriptor.examples {
                e.validate_input(&ex.input)
                    .unwrap_or_else(|err| panic!("{} input: {err}", e.descriptor.id));
                if let Some(out) = &ex.output {
                    e.validate_output(out)
                        .unwrap_or_else(|err| panic!("{} output: {err}", e.descriptor.id));
                }
                let mode = Mode::parse(ex.mode).expect("example mode");
                assert!(e.descriptor.allows_mode(mode), "{}", e.descriptor.id);
            }
        }
    }

    #[test]
    fn descriptors_follow_the_decision_table() {
        let row = |id: &str| get(id).expect("known").descriptor.clone();
        let d = row("events.ingest");
        assert_eq!(d.legacy_scope, "v1:events:write");
        assert_eq!(d.mcp_tool_name, "ingest_event");
        assert_eq!(d.side_effect, SideEffect::EventIngest);
        assert_eq!(d.allowed_modes, ["dry_run", "execute"]);
        assert_eq!(d.action_credit_cost, 1);
        assert_eq!(row("context.get").mcp_tool_name, "get_customer_context");
        assert_eq!(row("context.get").legacy_scope, "v1:context:read");
        assert_eq!(row("execute.call").action_credit_cost, 10);
        assert_eq!(
            row("queue.call").approval_behavior.kind,
            ApprovalKind::QueueRequired
        );
        assert_eq!(row("plan.goal").action_credit_cost, 2);
        assert_eq!(row("report.generate").action_credit_cost, 5);
        let mut names = HashSet::new();
        for e in all() {
            let d = &e.descriptor;
            assert_eq!(d.grant, format!("capability:{}", d.id));
            assert!(capabilities::is_legacy_scope(d.legacy_scope), "{}", d.id);
            assert!(d.mcp_tool_name.len() <= 64);
            assert!(names.insert(d.mcp_tool_name), "duplicate tool name");
            assert_eq!(d.version.len(), 10);
            assert_eq!(
                d.is_read_only(),
                d.approval_behavior.kind == ApprovalKind::None
            );
        }
    }

    #[test]
    fn input_errors_name_the_path() {
        let e = get("memory.write").expect("known");
        let err = e
            .validate_input(&json!({"customer": "cus_1", "text": "", "kind": "x"}))
            .expect_err("invalid");
        let details = err.details.expect("details");
        let paths: Vec<_> = details["errors"]
            .as_array()
            .expect("list")
            .iter()
            .map(|e| e["path"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert!(paths.contains(&"/text".to_owned()), "{paths:?}");
        assert!(paths.contains(&"/kind".to_owned()), "{paths:?}");
        let ingest = get("events.ingest").expect("known");
        assert!(ingest.validate_input(&json!({"event": "x"})).is_err());
        assert!(ingest
            .validate_input(&json!({"event": "x", "email": "a@b.c"}))
            .is_ok());
    }
}
