//! The streamable HTTP transport of `/mcp`: rmcp's `StreamableHttpService` over [`Server`],
//! one per process (`http::routes::mcp`). Stateless, with JSON answers: every request
//! carries the agent key, which is all a message needs, so there are no MCP sessions to keep;
//! a request/response tool call is answered with `application/json`, not an SSE stream.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, Response};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::Server;

/// rmcp's service for `/mcp`.
#[derive(Clone)]
pub struct Endpoint {
    service: StreamableHttpService<Server, NeverSessionManager>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("config", &self.service.config)
            .finish()
    }
}

impl Endpoint {
    /// `max_body_bytes`: the service's request body limit (rmcp reads the body itself).
    pub fn new(max_body_bytes: usize) -> Self {
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            // svcd answers whatever host name it is reached by (a deployment's own); the route
            // refuses browser pages of another origin, and the key authenticates either way.
            .disable_allowed_hosts()
            .with_max_request_body_bytes(max_body_bytes);
        Endpoint {
            service: StreamableHttpService::new(
                || Ok(Server),
                Arc::new(NeverSessionManager::default()),
                config,
            ),
        }
    }

    /// One HTTP request (its extensions carry the [`super::Caller`]).
    pub async fn handle(&self, request: Request<Body>) -> Response<Body> {
        self.service.handle(request).await.map(Body::new)
    }
}
