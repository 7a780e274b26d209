//! The OpenAPI 3.1 document: info, security schemes and shared schemas. Paths come from the
//! handlers' `#[utoipa::path]` attributes as they are routed (see `http::app`), so a route
//! cannot be served without being documented.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::error::{ErrorBody, ErrorDetail};

#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "Customer Intelligence and Agent Action Service",
        description = "Capability gateway, agent keys, customers, intelligence graph, events, playbooks, brand context and reporting. Errors use the body `{\"error\": {code, message, request_id, details?}}`. Every operation states its access rule in its description and in `x-access` (`credentials`: accepted kinds among none, jwt, agent_key, legacy_key, webhook_token, signature; `agent_key_grants`: route grants an agent key needs, each also satisfied by `agent_key_grants_also_satisfied_by`; `gateway`: capability grants are checked per capability; `effect`: read or write). No credential: 401 `unauthenticated`; the wrong kind: 403 `forbidden`; a key without the route grant: 403 `grant_denied`.",
    ),
    modifiers(&SecuritySchemes),
    components(schemas(ErrorBody, ErrorDetail)),
    tags(
        (name = "system", description = "Health, readiness and metrics"),
        (name = "auth", description = "Dashboard accounts and sessions (JWT)"),
        (name = "workspace", description = "Workspace settings (JWT)"),
        (name = "keys", description = "Agent keys: management (JWT) and whoami (agent key)"),
        (name = "models", description = "Score models: versions, training size and metrics; retrain (JWT)"),
        (name = "chat", description = "Chat with the orchestrator and its buddies (JWT; server-sent events)"),
    )
)]
pub struct ApiDoc;

/// Security scheme names. Each operation's requirements are written from its access rule
/// (`http::access::document`); a requirement's roles on an agent-key scheme are the route
/// grants the key needs.
pub const JWT: &str = "jwt";
pub const AGENT_KEY_BEARER: &str = "agent_key";
/// `X-API-Key`: an agent key, or a legacy `dsk_` key where the route accepts one.
pub const AGENT_KEY_HEADER: &str = "api_key";
/// The workspace's webhook token in the query (`?token=whk_...`).
pub const WEBHOOK_TOKEN: &str = "webhook_token";
/// A one-use WebSocket ticket in the query (`?ticket=stk_...`, `POST /v1/stream/ticket`).
pub const STREAM_TICKET: &str = "stream_ticket";
/// A Segment source write key as the HTTP Basic user name (`http::routes::segment`).
pub const SEGMENT_WRITE_KEY: &str = "segment_write_key";

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            JWT,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
        components.add_security_scheme(
            AGENT_KEY_BEARER,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("svc_live_ agent key")
                    .build(),
            ),
        );
        components.add_security_scheme(
            AGENT_KEY_HEADER,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-API-Key"))),
        );
        components.add_security_scheme(
            WEBHOOK_TOKEN,
            SecurityScheme::ApiKey(ApiKey::Query(ApiKeyValue::new("token"))),
        );
        components.add_security_scheme(
            STREAM_TICKET,
            SecurityScheme::ApiKey(ApiKey::Query(ApiKeyValue::new("ticket"))),
        );
        components.add_security_scheme(
            SEGMENT_WRITE_KEY,
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Basic).build()),
        );
    }
}

/// Answers every operation can give besides its own, added where the handler's attribute does
/// not list them, so a generated client knows every status a route can answer:
/// - a JSON body: 400 (`invalid_json` / `invalid_input`), 413 (`payload_too_large`, over
///   `MAX_BODY_BYTES`) and 415 (`unsupported_media_type`, not `application/json`);
/// - a credential: 401 (none or invalid) and 403 (the wrong kind, a missing grant);
/// - an agent key: 429 (`rate_limited`, with `Retry-After`).
///
/// Runs after `access::document`, which writes each operation's security from its rule.
pub fn complete_error_responses(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};

    let error = |description: &str| {
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .build()
    };
    for item in doc.paths.paths.values_mut() {
        for op in [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ]
        .into_iter()
        .flatten()
        {
            let mut add = |status: &str, description: &str| {
                op.responses
                    .responses
                    .entry(status.to_owned())
                    .or_insert_with(|| error(description).into());
            };
            let has_body = op.request_body.is_some();
            let schemes: Vec<String> = op
                .security
                .iter()
                .flatten()
                .filter_map(|req| serde_json::to_value(req).ok())
                .filter_map(|v| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()))
                .flatten()
                .collect();
            if has_body {
                add("400", "The body is not valid JSON or breaks a field's rule");
                add("413", "The body is larger than 1 MiB");
                add("415", "The body is not `application/json`");
            }
            if !schemes.is_empty() {
                add("401", "No valid credential");
                add(
                    "403",
                    "A credential of the wrong kind, or without the grant the route needs",
                );
            }
            if schemes
                .iter()
                .any(|s| s == AGENT_KEY_BEARER || s == AGENT_KEY_HEADER)
            {
                add(
                    "429",
                    "The key's request rate is exceeded (`Retry-After` says when to retry)",
                );
            }
        }
    }
}

/// Constraints a derive cannot state, written into the component schemas so the document says
/// exactly what the server accepts: values that come from tables the code keeps at run time
/// (capability ids, grants, modes) and rules across fields (an event needs a name). Each entry
/// is a JSON merge patch (RFC 7396) of one component schema. A patch naming a component or
/// property that no longer exists is a bug (the unit test below fails).
pub fn state_runtime_constraints(doc: &mut utoipa::openapi::OpenApi) {
    let Some(components) = doc.components.as_mut() else {
        return;
    };
    for (name, patch) in runtime_constraints() {
        let Some(schema) = components.schemas.get_mut(name) else {
            continue;
        };
        let Ok(mut value) = serde_json::to_value(&*schema) else {
            continue;
        };
        merge(&mut value, &patch);
        if let Ok(patched) = serde_json::from_value(value) {
            *schema = patched;
        }
    }
}

/// (component, merge patch).
fn runtime_constraints() -> Vec<(&'static str, serde_json::Value)> {
    use serde_json::json;

    use svc_core::capabilities::{self, Mode};
    use svc_core::keys::grants::RouteGrant;

    let capability_ids: Vec<&str> = capabilities::ids().collect();
    let grants: Vec<String> = capabilities::ids()
        .map(|id| format!("capability:{id}"))
        .chain(RouteGrant::ALL.iter().map(|g| g.as_str().to_owned()))
        .collect();
    let modes: Vec<&str> = Mode::ALL.iter().map(|m| m.as_str()).collect();
    let text = json!({ "type": ["string", "null"], "pattern": "\\S" });
    vec![
        (
            "CreateKey",
            json!({ "properties": {
                "grants": { "items": { "type": "string", "enum": grants } },
                "allowed_modes": { "items": { "type": "string", "enum": modes } },
                "scopes": { "items": { "type": "string", "pattern": "^v1:[a-z_]+:[a-z_]+$" } },
                "quota_override_monthly": {
                    "format": null,
                    "maximum": svc_core::keys::MAX_QUOTA_OVERRIDE_MONTHLY,
                },
            }}),
        ),
        (
            "PolicyUpdate",
            json!({ "properties": {
                "forbid": { "items": { "type": "string", "enum": capability_ids } },
                "auto_approve": { "items": { "type": "string", "enum": capability_ids } },
            }}),
        ),
        (
            // Each item is checked on its own: a bad one is reported in `results` and never
            // hides the others, so any JSON value is a valid item of the request.
            "BatchBody",
            json!({ "properties": { "events": { "items": null, "maxItems": 500 } } }),
        ),
        (
            // An event name in `action` or `event`; blank strings count as absent.
            "TrackBody",
            json!({
                "properties": { "action": text, "event": text, "messageId": text },
                "anyOf": [
                    { "required": ["action"], "properties": { "action": { "type": "string" } } },
                    { "required": ["event"], "properties": { "event": { "type": "string" } } },
                ],
            }),
        ),
        (
            "IdentifyBody",
            json!({ "properties": { "messageId": text } }),
        ),
        (
            "StrategyInput",
            json!({ "properties": { "channels": { "items": { "maxLength": 60 } } } }),
        ),
    ]
}

/// RFC 7396: objects merge key by key, `null` removes, anything else replaces.
fn merge(target: &mut serde_json::Value, patch: &serde_json::Value) {
    use serde_json::Value;
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_patch_names_existing_properties() {
        let (_, doc) = super::super::routes();
        let components = doc.components.expect("components");
        for (name, patch) in runtime_constraints() {
            let schema = components
                .schemas
                .get(name)
                .unwrap_or_else(|| panic!("no component {name}"));
            let value = serde_json::to_value(schema).expect("schema as JSON");
            for property in patch["properties"].as_object().into_iter().flatten() {
                assert!(
                    value["properties"].get(property.0).is_some(),
                    "{name}.{} is not in the document",
                    property.0
                );
            }
        }
    }

    #[test]
    fn merge_follows_rfc_7396() {
        let mut v = serde_json::json!({"a": {"b": 1, "c": 2}, "d": 3});
        merge(
            &mut v,
            &serde_json::json!({"a": {"b": null, "e": 4}, "d": [1]}),
        );
        assert_eq!(v, serde_json::json!({"a": {"c": 2, "e": 4}, "d": [1]}));
    }
}
