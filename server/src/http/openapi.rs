//! The OpenAPI 3.1 document: info, security schemes and shared schemas. Paths come from the
//! handlers' `#[utoipa::path]` attributes as they are routed (see `http::app`), so a route
//! cannot be served without being documented.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::error::{ErrorBody, ErrorDetail};
use svc_core::error::Code;

#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "Customer Intelligence and Agent Action Service",
        description = "Capability gateway, agent keys, customers, intelligence graph, events, playbooks, brand context and reporting. Errors use the body `{\"error\": {code, message, request_id, details?}}`. Every operation states its access rule in its description and in `x-access` (`credentials`: accepted kinds among none, jwt, agent_key, legacy_key, webhook_token, signature; `agent_key_grants`: route grants an agent key needs, each also satisfied by `agent_key_grants_also_satisfied_by`; `gateway`: capability grants are checked per capability; `effect`: read or write). No credential: 401 `unauthenticated`; the wrong kind: 403 `forbidden`; a key without the route grant: 403 `grant_denied`.",
    ),
    modifiers(&SecuritySchemes),
    // StreamMessage: the text frames of the WebSocket route `GET /v1/stream`, whose 101 answer
    // has no body to reference it.
    components(schemas(ErrorBody, ErrorDetail, svc_domains::events::StreamMessage)),
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

/// The `code` values of each error answer, on every operation: each error response's schema
/// becomes the error body with `error.code` restricted to the codes of `svc_core`'s table
/// (`Code::ALL`, code -> status) that answer with that status and can arise on the operation,
/// decided from what the document already says of it (its access rule `x-access`, whether it
/// takes a body, whether it is a gateway or graph route). The contract test checks every
/// answer against these lists, so a handler that starts answering an unlisted code fails it.
/// Runs after `complete_error_responses`.
pub fn state_error_codes(doc: &mut utoipa::openapi::OpenApi) {
    for (path, op) in operations(doc) {
        let access = access_of(op);
        let gateway = access["gateway"] == true;
        let shape = OperationShape {
            graph: path.starts_with("/v1/graph"),
            body: op.request_body.is_some(),
            access,
        };
        add_server_errors(op, gateway);
        for (status, response) in op.responses.responses.iter_mut() {
            let Ok(status) = status.parse::<u16>() else {
                continue;
            };
            let mut codes: Vec<&str> = Code::ALL
                .iter()
                .filter(|c| c.status() == status && shape.can_answer(**c))
                .map(|c| c.as_str())
                .collect();
            codes.dedup();
            if codes.is_empty() {
                continue;
            }
            let Ok(mut value) = serde_json::to_value(&*response) else {
                continue;
            };
            let Some(media) = value
                .pointer_mut("/content/application~1json")
                .and_then(|m| m.as_object_mut())
            else {
                continue;
            };
            if media.get("schema") != Some(&serde_json::json!({"$ref": ERROR_BODY_REF})) {
                continue; // another body (e.g. JSON-RPC's refusal on /mcp)
            }
            media.insert(
                "schema".to_owned(),
                serde_json::json!({ "allOf": [
                    { "$ref": ERROR_BODY_REF },
                    { "type": "object", "properties": { "error": { "type": "object",
                        "properties": { "code": { "type": "string", "enum": codes } } } } },
                ]}),
            );
            let list = codes
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if let Some(d) = value.get_mut("description") {
                let text = d.as_str().unwrap_or_default();
                *d = format!("{text} (codes: {list})").trim_start().into();
            }
            if let Ok(patched) = serde_json::from_value(value) {
                *response = patched;
            }
        }
    }
}

/// The answers any operation may give when the service, not the request, is at fault: 500
/// `internal`, 503 `unavailable` (shutting down, or the store refuses writes after a failed
/// sync), and on the gateway 502 `capability_failed` (a provider refused) and 503
/// `aos_unavailable`. Their codes are filled in by [`state_error_codes`].
fn add_server_errors(op: &mut utoipa::openapi::path::Operation, gateway: bool) {
    use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
    let mut statuses = vec![
        ("500", "The service failed; the request may be retried."),
        (
            "503",
            "The service is stopping or its store is not accepting writes; retry later.",
        ),
    ];
    if gateway {
        statuses.push(("502", "The capability's provider failed."));
    }
    for (status, description) in statuses {
        op.responses
            .responses
            .entry(status.to_owned())
            .or_insert_with(|| {
                RefOr::T(
                    ResponseBuilder::new()
                        .description(description)
                        .content(
                            "application/json",
                            ContentBuilder::new()
                                .schema(Some(Ref::new(ERROR_BODY_REF)))
                                .build(),
                        )
                        .build(),
                )
            });
    }
}

/// Every operation of the document with its path.
fn operations(
    doc: &mut utoipa::openapi::OpenApi,
) -> impl Iterator<Item = (&String, &mut utoipa::openapi::path::Operation)> {
    doc.paths.paths.iter_mut().flat_map(|(path, item)| {
        [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ]
        .into_iter()
        .flatten()
        .map(move |op| (&*path, op))
    })
}

/// The operation's access rule as `access::document` wrote it (`x-access`), or null.
fn access_of(op: &utoipa::openapi::path::Operation) -> serde_json::Value {
    op.extensions
        .as_ref()
        .and_then(|e| e.get("x-access"))
        .cloned()
        .unwrap_or_default()
}

const ERROR_BODY_REF: &str = "#/components/schemas/ErrorBody";

/// What the document says of one operation, as far as its possible error codes go.
struct OperationShape {
    graph: bool,
    body: bool,
    access: serde_json::Value,
}

impl OperationShape {
    fn credential(&self, kind: &str) -> bool {
        self.access["credentials"]
            .as_array()
            .is_some_and(|c| c.iter().any(|k| k == kind))
    }

    /// Whether `code` can answer this operation (the layer or subsystem that raises it).
    fn can_answer(&self, code: Code) -> bool {
        let gateway = self.access["gateway"] == true;
        match code {
            // Reading a JSON body (`http::extract::parse_body`); timestamps only come in bodies.
            Code::InvalidJson
            | Code::PayloadTooLarge
            | Code::UnsupportedMediaType
            | Code::InvalidTimestamp => self.body,
            // The capability gateway's decisions and the executors behind it.
            Code::QuotaExceeded
            | Code::ModeDenied
            | Code::PolicyForbid
            | Code::ApprovalRequired
            | Code::CapabilityNotFound
            | Code::IdempotencyInFlight
            | Code::IdempotencyMismatch
            | Code::IntegrationNotConnected
            | Code::CustomerSuppressed
            | Code::FrequencyCapped => gateway,
            // Cypher, on the graph routes and the gateway's graph capabilities.
            Code::InvalidQuery | Code::WriteNotAllowed => self.graph || gateway,
            Code::InvalidSignature => {
                self.credential("signature") || self.credential("webhook_token")
            }
            Code::OwnerRequired => self.access["owner_only"] == true,
            Code::ReadOnlyWorkspace => self.access["effect"] == "write",
            Code::GrantDenied => self.credential("agent_key") || self.credential("legacy_key"),
            // Routing answers it before any operation.
            Code::MethodNotAllowed => false,
            // A provider behind a capability.
            Code::CapabilityFailed | Code::AosUnavailable => gateway,
            _ => true,
        }
    }
}

/// Routes whose credential may travel in the body instead of a header (Segment's `writeKey`,
/// for clients that cannot send HTTP Basic): OpenAPI has no security scheme for a body field,
/// so their security gains the empty alternative `{}` (no header credential) and the
/// description says where the credential then goes. Such a request without a valid `writeKey`
/// is still 401.
pub fn allow_body_credentials(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::security::SecurityRequirement;
    for (_, op) in operations(doc) {
        let segment = access_of(op)["credentials"]
            .as_array()
            .is_some_and(|c| c.iter().any(|k| k == SEGMENT_WRITE_KEY));
        if !segment {
            continue;
        }
        op.security
            .get_or_insert_with(Vec::new)
            .push(SecurityRequirement::default());
        let note = "Without a header credential, the body's `writeKey` is the credential.";
        op.description = Some(match op.description.take() {
            Some(d) => format!("{d}\n\n{note}"),
            None => note.to_owned(),
        });
    }
}

/// A string parameter whose values are a table of the code (`schema_with` of a query field).
pub fn string_enum<'a>(
    values: impl IntoIterator<Item = &'a str>,
) -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.into_iter().map(str::to_owned)))
        .build()
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
    for (_, op) in operations(doc) {
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

/// The document as served at `/openapi.json`: utoipa's document as JSON, with the runtime
/// constraints and the date-time patterns written in.
pub fn served(doc: &utoipa::openapi::OpenApi) -> serde_json::Value {
    // Serialising our own document cannot fail (string keys, no non-finite numbers).
    let mut json = serde_json::to_value(doc).unwrap_or_default();
    state_runtime_constraints(&mut json);
    assert_date_times(&mut json);
    json
}

/// Constraints a derive cannot state, written into the component schemas so the document says
/// exactly what the server accepts: values that come from tables the code keeps at run time
/// (capability ids, grants, modes) and rules across fields (an event needs a name). Each entry
/// is a JSON merge patch (RFC 7396) of one component schema. A patch naming a component or
/// property that no longer exists is a bug (the unit test below fails).
pub fn state_runtime_constraints(doc: &mut serde_json::Value) {
    // On the served JSON, not utoipa's types: a round trip through them drops what they cannot
    // hold (an `anyOf` beside `properties`, `maxItems` of an array property) or refuses the
    // whole schema (an item bound of a nullable array), and the patch was silently lost.
    let schemas = &mut doc["components"]["schemas"];
    for (name, patch) in runtime_constraints() {
        if let Some(schema) = schemas.get_mut(name) {
            merge(schema, &patch);
        }
    }
}

/// Every `format: date-time` of the component schemas also carries the RFC 3339 pattern
/// (`svc_core::fields::DATE_TIME_PATTERN`): JSON Schema 2020-12 makes `format` an annotation
/// that validators and generators may ignore, and the server refuses any other string with 400
/// `invalid_timestamp`. Walks the schemas as JSON (bounded: the document is our own, a few
/// levels deep).
pub fn assert_date_times(doc: &mut serde_json::Value) {
    fn walk(v: &mut serde_json::Value, depth: usize) {
        if depth > 32 {
            return;
        }
        match v {
            serde_json::Value::Object(map) => {
                if map.get("format").and_then(|f| f.as_str()) == Some("date-time") {
                    map.insert(
                        "pattern".to_owned(),
                        svc_core::fields::DATE_TIME_PATTERN.into(),
                    );
                }
                map.values_mut().for_each(|x| walk(x, depth + 1));
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|x| walk(x, depth + 1)),
            _ => {}
        }
    }
    walk(&mut doc["components"]["schemas"], 0);
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
            // Segment's batch: each message is checked on its own (a bad one is reported in
            // `rejected`, with its index), so any JSON value is a valid item of the request.
            "SegmentBatch",
            json!({ "properties": { "batch": { "items": null,
                "description": "Messages (`SegmentMessage`), each checked on its own: a bad one is reported in `rejected`." } } }),
        ),
        (
            // An event name in `action` or `event`; a blank one counts as absent, so the rule
            // sits in the alternatives, not on the properties.
            "TrackBody",
            json!({
                "anyOf": [
                    { "required": ["action"],
                      "properties": { "action": { "type": "string", "pattern": "\\S" } } },
                    { "required": ["event"],
                      "properties": { "event": { "type": "string", "pattern": "\\S" } } },
                ],
            }),
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
    fn every_patch_lands_in_the_served_document() {
        let (_, doc) = super::super::routes();
        let served = served(&doc);
        for (name, patch) in runtime_constraints() {
            let mut expected =
                serde_json::to_value(&doc.components.as_ref().expect("components").schemas[name])
                    .expect("schema as JSON");
            merge(&mut expected, &patch);
            let mut got = served["components"]["schemas"][name].clone();
            // Only the date-time patterns may differ: drop them from both sides.
            for v in [&mut expected, &mut got] {
                strip_patterns(v);
            }
            assert_eq!(got, expected, "{name}");
        }
        let channels = &served["components"]["schemas"]["StrategyInput"]["properties"]["channels"];
        assert_eq!(channels["items"]["maxLength"], 60, "{channels}");
    }

    fn strip_patterns(v: &mut serde_json::Value) {
        if let Some(map) = v.as_object_mut() {
            if map.get("format").and_then(|f| f.as_str()) == Some("date-time") {
                map.remove("pattern");
            }
            map.values_mut().for_each(strip_patterns);
        } else if let Some(items) = v.as_array_mut() {
            items.iter_mut().for_each(strip_patterns);
        }
    }

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
    fn every_path_parameter_is_in_its_template() {
        let (_, doc) = super::super::routes();
        let doc = serde_json::to_value(&doc).expect("document as JSON");
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for (method, op) in item.as_object().expect("path item") {
                for p in op["parameters"].as_array().into_iter().flatten() {
                    let name = p["name"].as_str().expect("name");
                    if p["in"] == "path" {
                        assert!(
                            path.contains(&format!("{{{name}}}")),
                            "{method} {path}: `{name}` is documented in the path but is not in it \
                             (a query field needs `#[into_params(parameter_in = Query)]`)"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn error_answers_list_the_codes_their_operation_can_give() {
        let (_, mut doc) = super::super::routes();
        super::super::access::document(&mut doc);
        complete_error_responses(&mut doc);
        state_error_codes(&mut doc);
        let doc = serde_json::to_value(&doc).expect("document as JSON");
        let codes = |path: &str, method: &str, status: &str| -> Vec<String> {
            let op = &doc["paths"][path][method];
            let schema = &op["responses"][status]["content"]["application/json"]["schema"];
            schema["allOf"][1]["properties"]["error"]["properties"]["code"]["enum"]
                .as_array()
                .unwrap_or_else(|| panic!("{method} {path} {status}: no code list in {schema}"))
                .iter()
                .map(|c| c.as_str().expect("code").to_owned())
                .collect()
        };
        let query = codes("/v1/graph/query", "post", "400");
        assert!(query.contains(&"invalid_query".to_owned()), "{query:?}");
        assert!(query.contains(&"invalid_json".to_owned()), "{query:?}");
        let track = codes("/api/v1/events/track", "post", "400");
        assert!(track.contains(&"invalid_timestamp".to_owned()), "{track:?}");
        assert!(!track.contains(&"invalid_query".to_owned()), "{track:?}");
        let invoke = codes("/api/v1/capabilities/{id}/invoke", "post", "403");
        for c in [
            "grant_denied",
            "mode_denied",
            "policy_forbid",
            "read_only_workspace",
        ] {
            assert!(
                invoke.contains(&c.to_owned()),
                "{c} missing from {invoke:?}"
            );
        }
        let session = codes("/api/auth/session", "get", "401");
        assert_eq!(session, ["unauthenticated"]);
        let keys = codes("/api/v1/keys", "get", "403");
        assert!(
            !keys.contains(&"grant_denied".to_owned()),
            "JWT only: {keys:?}"
        );
        assert!(
            !keys.contains(&"read_only_workspace".to_owned()),
            "a read: {keys:?}"
        );
        let customers = codes("/v1/reporting/recent-reasoning", "get", "400");
        assert!(
            !customers.contains(&"invalid_json".to_owned()),
            "no body: {customers:?}"
        );
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
