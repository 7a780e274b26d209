//! The capabilities as tools, for MCP and for the connected model's tool calls: the key's
//! listing (`crate::list`, the function behind `GET /api/v1/capabilities`) becomes
//! `tools/list`, and a `tools/call` becomes a `crate::invoke` with source `mcp`. There is no
//! second catalogue.

use serde_json::{json, Map, Value};

use super::registry::{self, Descriptor};
use crate::{InvokeRequest, MAX_IDEMPOTENCY_KEY};
use svc_core::capabilities::{ApprovalKind, SideEffect};
use svc_core::error::{Error, Result};
use svc_core::keys::AgentKey;

/// Tool argument that overrides the invocation mode.
pub const MODE_ARG: &str = "_mode";
/// Tool argument carrying the idempotency key.
pub const IDEMPOTENCY_ARG: &str = "_idempotency_key";
/// The gateway `source` of every MCP invocation.
pub const SOURCE: &str = "mcp";

/// `tools/list` result for the key: one tool per capability it may call.
pub fn list(key: &AgentKey) -> Value {
    let tools: Vec<Value> = crate::list(key).capabilities.iter().map(tool).collect();
    json!({ "tools": tools })
}

/// One tool: name, title, description, input schema (the capability's plus `_mode` and
/// `_idempotency_key`) and behaviour hints.
pub fn tool(d: &Descriptor) -> Value {
    json!({
        "name": d.mcp_tool_name,
        "title": d.title,
        "description": format!(
            "{} Capability {} (cost {} action credit(s) when queued or committed; {}).",
            d.description, d.id, d.action_credit_cost, d.approval_behavior.description
        ),
        "inputSchema": input_schema(d),
        "annotations": annotations(d),
    })
}

fn input_schema(d: &Descriptor) -> Value {
    let mut schema = d.input_schema.clone();
    if let Some(obj) = schema.as_object_mut() {
        let props = obj
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(props) = props.as_object_mut() {
            props.insert(
                MODE_ARG.to_owned(),
                json!({
                    "type": "string",
                    "enum": d.allowed_modes,
                    "description": "Invocation mode, one of the modes this key may use: dry_run \
                        previews at no cost, queue creates an approval request, execute commits \
                        when allowed. Default: execute when the capability has it, else queue.",
                }),
            );
            props.insert(
                IDEMPOTENCY_ARG.to_owned(),
                json!({
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_IDEMPOTENCY_KEY,
                    "description": "Idempotency key: a retry with the same key and arguments \
                        returns the first response and is never executed or charged twice.",
                }),
            );
        }
    }
    schema
}

/// Hints for the client (MCP treats them as untrusted hints, never as security).
fn annotations(d: &Descriptor) -> Value {
    let read_only = d.side_effect == SideEffect::None;
    // Additive writes (an event, a note, a report) destroy nothing; mutating the CRM or
    // reaching people does, unless the capability can only ever queue for a person.
    let destructive = matches!(
        d.side_effect,
        SideEffect::CrmMutation
            | SideEffect::OutboundEmail
            | SideEffect::VoiceCall
            | SideEffect::CampaignWrite
    ) && d.approval_behavior.kind != ApprovalKind::QueueRequired;
    let open_world = matches!(
        d.side_effect,
        SideEffect::OutboundEmail | SideEffect::VoiceCall
    );
    json!({
        "title": d.title,
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        // A repeat of a read changes nothing; a repeated write records (and charges) again
        // unless it carries the same `_idempotency_key`.
        "idempotentHint": read_only,
        "openWorldHint": open_world,
    })
}

/// The capability behind a tool name, if the catalogue has one (listed or not: the gateway
/// decides whether this key may call it).
pub fn capability_of(tool_name: &str) -> Option<&'static str> {
    registry::all()
        .iter()
        .find(|e| e.descriptor.mcp_tool_name == tool_name)
        .map(|e| e.descriptor.id)
}

/// Splits tool arguments into the gateway request: `_mode` and `_idempotency_key` out, the
/// rest is the capability input.
pub fn request(arguments: Option<Value>) -> Result<InvokeRequest> {
    let mut input = match arguments {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(Error::invalid_input("tool arguments must be an object")),
    };
    let mut take_string = |name: &str| -> Result<Option<String>> {
        match input.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(Error::invalid_field(
                name,
                &other.to_string(),
                "must be a string",
            )),
        }
    };
    let mode = take_string(MODE_ARG)?;
    let idempotency_key = take_string(IDEMPOTENCY_ARG)?;
    Ok(InvokeRequest {
        mode,
        source: Some(SOURCE.to_owned()),
        idempotency_key,
        input: Some(Value::Object(input)),
    })
}

/// A successful call: the envelope as structured content, and as text for clients that only
/// read text.
pub fn success(body: &str, replayed: bool) -> Value {
    let envelope: Value = serde_json::from_str(body).unwrap_or_else(|_| json!({"raw": body}));
    let mut out = json!({
        "content": [{"type": "text", "text": body}],
        "structuredContent": envelope,
        "isError": false,
    });
    if replayed {
        out["_meta"] = json!({"svc/idempotent_replayed": true});
    }
    out
}

/// A refused or failed call: a tool error carrying the gateway's code and message (MCP's rule:
/// errors of the tool go in the result so the model can see and handle them).
pub fn failure(e: &Error, request_id: &str) -> Value {
    let mut error = json!({
        "code": e.code.as_str(),
        "message": e.message,
        "request_id": request_id,
    });
    if let Some(d) = &e.details {
        error["details"] = d.clone();
    }
    json!({
        "content": [{"type": "text", "text": format!("{}: {}", e.code.as_str(), e.message)}],
        "structuredContent": {"error": error},
        "isError": true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_core::capabilities::Capability;
    use svc_core::error::Code;
    use svc_core::keys::KeyKind;

    fn key(grants: &[&str], modes: &[&str]) -> AgentKey {
        AgentKey {
            id: "key_test".into(),
            workspace: 7,
            kind: KeyKind::Agent,
            name: "t".into(),
            agent: "t".into(),
            scopes: vec![],
            grants: grants.iter().map(|g| format!("capability:{g}")).collect(),
            allowed_modes: modes.iter().map(|m| (*m).to_owned()).collect(),
            auto_run: false,
            rate_limit_per_min: 600,
            quota_override_monthly: None,
            prefix: "svc_live_abcd".into(),
            last_four: "wxyz".into(),
            created_at: "2026-11-22T00:00:00.000Z".into(),
            created_by: "usr_x".into(),
            last_used_at: None,
            revoked_at: None,
        }
    }

    #[test]
    fn tools_follow_the_keys_listing() {
        let k = key(
            &[Capability::EventsIngest.id(), Capability::ContextGet.id()],
            &["dry_run"],
        );
        let tools = list(&k);
        let names: Vec<&str> = tools["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names.len(), 2, "{tools}");
        assert!(names.contains(&"ingest_event") && names.contains(&"get_customer_context"));
        for t in tools["tools"].as_array().into_iter().flatten() {
            assert_eq!(
                t["inputSchema"]["properties"][MODE_ARG]["enum"],
                json!(["dry_run"]),
                "{t}"
            );
            assert_eq!(
                t["inputSchema"]["properties"][IDEMPOTENCY_ARG]["type"],
                "string"
            );
        }
        assert_eq!(list(&key(&[], &["dry_run", "execute"]))["tools"], json!([]));
    }

    #[test]
    fn annotations_follow_side_effects() {
        let get = |id: &str| registry::get(id).map(|e| tool(&e.descriptor));
        let ctx = get(Capability::ContextGet.id()).expect("a capability of the table");
        assert_eq!(ctx["annotations"]["readOnlyHint"], true);
        assert_eq!(ctx["annotations"]["idempotentHint"], true);
        let ingest = get(Capability::EventsIngest.id()).expect("a capability of the table");
        assert_eq!(ingest["annotations"]["readOnlyHint"], false);
        assert_eq!(ingest["annotations"]["destructiveHint"], false);
        assert_eq!(ingest["annotations"]["idempotentHint"], false);
        let crm = get(Capability::CrmMutate.id()).expect("a capability of the table");
        assert_eq!(crm["annotations"]["destructiveHint"], true);
    }

    #[test]
    fn every_capability_has_a_distinct_tool_name() {
        for id in svc_core::capabilities::ids() {
            if let Some(e) = registry::get(id) {
                assert_eq!(capability_of(e.descriptor.mcp_tool_name), Some(id));
            }
        }
        assert_eq!(capability_of("no_such_tool"), None);
    }

    #[test]
    fn reserved_arguments_are_split_from_the_input() {
        let req = request(Some(json!({
            "event": "x", "email": "a@example.com", "_mode": "dry_run", "_idempotency_key": "k1"
        })))
        .expect("request");
        assert_eq!(req.mode.as_deref(), Some("dry_run"));
        assert_eq!(req.idempotency_key.as_deref(), Some("k1"));
        assert_eq!(req.source.as_deref(), Some("mcp"));
        assert_eq!(
            req.input,
            Some(json!({"event": "x", "email": "a@example.com"}))
        );
        let bad = request(Some(json!({"_mode": 3}))).expect_err("mode must be a string");
        assert_eq!(bad.code, Code::InvalidInput);
        assert!(request(Some(json!([1]))).is_err());
        assert_eq!(request(None).expect("empty").input, Some(json!({})));
    }

    #[test]
    fn failures_carry_code_and_message() {
        let e = Error::new(Code::GrantDenied, "no grant");
        let r = failure(&e, "req_1");
        assert_eq!(r["isError"], true);
        assert_eq!(r["structuredContent"]["error"]["code"], "grant_denied");
        assert_eq!(r["content"][0]["text"], "grant_denied: no grant");
    }
}
