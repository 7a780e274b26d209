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
    }
}
