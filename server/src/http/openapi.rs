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
        description = "Capability gateway, agent keys, customers, intelligence graph, events, playbooks, brand context and reporting. Errors use the body `{\"error\": {code, message, request_id, details?}}`.",
    ),
    modifiers(&SecuritySchemes),
    components(schemas(ErrorBody, ErrorDetail)),
    tags(
        (name = "system", description = "Health, readiness and metrics"),
        (name = "auth", description = "Dashboard accounts and sessions (JWT)"),
        (name = "workspace", description = "Workspace settings (JWT)"),
        (name = "keys", description = "Agent keys: management (JWT) and whoami (agent key)"),
    )
)]
pub struct ApiDoc;

/// Security scheme names used by the handlers' `security(...)` attributes.
pub const JWT: &str = "jwt";
pub const AGENT_KEY_BEARER: &str = "agent_key";
pub const AGENT_KEY_HEADER: &str = "api_key";

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
    }
}
