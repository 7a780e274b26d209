//! The HTTP layer: routing, middleware and the thin adapters in `routes`. Nothing below this
//! module's line knows about axum.

pub mod access;
pub mod context;
pub mod cors;
pub mod drain;
pub mod error;
pub mod event_docs;
pub mod extract;
pub mod limits;
pub mod middleware;
pub mod openapi;
pub mod rate_limit;
pub mod request_docs;
pub mod routes;
pub mod tls;

use std::future::Future;

use axum::extract::DefaultBodyLimit;
use axum::Router;
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_swagger_ui::SwaggerUi;

use crate::state::AppState;
use limits::MAX_BODY_BYTES;
use routes::members;
use routes::{
    approvals, auth, brand, customers, events, gateway, graph, integrations, keys, mcp, outbound,
    playbooks, reporting, stream, system, webhooks, workspace,
};
use svc_core::error::{Error, Result};

/// The routes and their OpenAPI document, built together so every served route is documented.
/// Each route's access rule lives in `access::RULES`; [`app`] enforces it and writes it into the
/// document.
pub fn routes() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(system::healthz))
        .routes(routes!(system::readyz))
        .routes(routes!(system::metrics))
        .routes(routes!(auth::register))
        .routes(routes!(auth::login))
        .routes(routes!(auth::session))
        .routes(routes!(workspace::get_workspace, workspace::put_workspace))
        .routes(routes!(keys::create_key, keys::list_keys))
        .routes(routes!(keys::create_legacy_key))
        .routes(routes!(keys::whoami))
        .routes(routes!(keys::revoke_key))
        .routes(routes!(gateway::list_capabilities))
        .routes(routes!(gateway::invoke))
        .routes(routes!(gateway::usage))
        .routes(routes!(gateway::receipt))
        .routes(routes!(mcp::post))
        .routes(routes!(crate::oauth::metadata::protected_resource))
        .routes(routes!(crate::oauth::metadata::protected_resource_mcp))
        .routes(routes!(crate::oauth::metadata::authorization_server))
        .routes(routes!(crate::oauth::clients::register))
        .routes(routes!(crate::oauth::token::token))
        .routes(routes!(approvals::pending))
        .routes(routes!(approvals::list_approvals))
        .routes(routes!(approvals::approve))
        .routes(routes!(approvals::reject))
        .routes(routes!(events::track))
        .routes(routes!(events::identify))
        .routes(routes!(events::batch))
        .routes(routes!(customers::list_customers))
        .routes(routes!(customers::dedupe_customers))
        .routes(routes!(customers::get_customer))
        .routes(routes!(customers::customer_timeline))
        .routes(routes!(customers::list_campaigns))
        .routes(routes!(customers::list_opportunities))
        .routes(routes!(customers::list_segments))
        .routes(routes!(customers::list_journeys))
        .routes(routes!(customers::list_cohorts))
        .routes(routes!(customers::list_products))
        .routes(routes!(graph::get_graph))
        .routes(routes!(graph::query_graph))
        .routes(routes!(graph::graph_path))
        .routes(routes!(stream::stream))
        .routes(routes!(stream::ticket))
        .routes(routes!(webhooks::receive))
        .routes(routes!(outbound::outbox))
        .routes(routes!(outbound::voice_status))
        .routes(routes!(webhooks::mint_token))
        .routes(routes!(routes::segment::track))
        .routes(routes!(routes::segment::identify))
        .routes(routes!(routes::segment::page))
        .routes(routes!(routes::segment::screen))
        .routes(routes!(routes::segment::group))
        .routes(routes!(routes::segment::alias))
        .routes(routes!(routes::segment::batch))
        .routes(routes!(routes::segment::import))
        .routes(routes!(
            routes::segment::create_write_key,
            routes::segment::list_write_keys
        ))
        .routes(routes!(routes::segment::revoke_write_key))
        .routes(routes!(routes::segment::anonymous_id))
        .routes(routes!(
            playbooks::list_playbooks,
            playbooks::create_playbook
        ))
        .routes(routes!(
            playbooks::get_playbook,
            playbooks::update_playbook,
            playbooks::delete_playbook
        ))
        .routes(routes!(playbooks::start_run))
        .routes(routes!(playbooks::list_runs))
        .routes(routes!(playbooks::get_run))
        .routes(routes!(playbooks::report_outcomes))
        .routes(routes!(playbooks::sync_run))
        .routes(routes!(playbooks::pause_run))
        .routes(routes!(playbooks::resume_run))
        .routes(routes!(playbooks::cancel_run))
        .routes(routes!(playbooks::list_run_leads))
        .routes(routes!(
            brand::get_brand,
            brand::put_brand,
            brand::delete_brand
        ))
        .routes(routes!(brand::buddy_prompt))
        .routes(routes!(integrations::list_integrations))
        .routes(routes!(
            integrations::put_integration,
            integrations::delete_integration
        ))
        .routes(routes!(integrations::test_integration))
        .routes(routes!(
            webhooks::put_secret,
            webhooks::get_secret,
            webhooks::delete_secret
        ))
        .routes(routes!(reporting::summary))
        .routes(routes!(reporting::recent_reasoning))
        .routes(routes!(routes::models::list_models))
        .routes(routes!(routes::models::retrain_models))
        .routes(routes!(reporting::append_message))
        .routes(routes!(members::invite))
        .routes(routes!(members::accept_invite))
        .routes(routes!(members::list_members))
        .routes(routes!(routes::chat::chat))
        .routes(routes!(routes::chat::list_sessions))
        .routes(routes!(routes::chat::get_session))
        .split_for_parts()
}

/// The whole service as a router: API routes, `/openapi.json`, Swagger UI at `/docs`, and the
/// layers every request passes through.
pub fn app(state: AppState) -> Router {
    let (api, mut doc) = routes();
    access::document(&mut doc);
    crate::oauth::docs::document(&mut doc);
    openapi::complete_error_responses(&mut doc);
    openapi::state_error_codes(&mut doc);
    openapi::allow_body_credentials(&mut doc);
    event_docs::describe_chat_events(&mut doc);
    let served = openapi::served(&doc);
    // A route layer runs after routing, so the access rule is looked up by the matched path
    // (and unknown paths and methods stay 404 / 405).
    let api = api.route_layer(axum::middleware::from_fn_with_state(
        state.clone(),
        access::enforce,
    ));
    // The dashboard is merged after the access layer: it is not an API route and carries its
    // own rule (cookie session + CSRF, see `crate::dashboard`).
    let app = api
        .merge(crate::dashboard::router(state.clone()))
        // MCP authorization's consent page: the dashboard's session, its own headers.
        .merge(crate::dashboard::oauth_consent::router())
        .merge(SwaggerUi::new("/docs").external_url_unchecked("/openapi.json", served))
        .fallback(middleware::not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(CatchPanicLayer::custom(middleware::panic_response))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::request_context,
        ));
    // Outermost, so preflight requests are answered before routing.
    let app = match cors::layer(&state.config.cors_origins) {
        Some(cors) => app.layer(cors),
        None => app,
    };
    app.with_state(state)
}

/// Serves until `shutdown` resolves, lets in-flight requests finish, then flushes pending key
/// usage and closes the store.
pub async fn serve<F>(listener: TcpListener, state: AppState, shutdown: F) -> Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    if let Ok(addr) = listener.local_addr() {
        state.bound_to(addr);
    }
    serve_on(listener, state, shutdown).await
}

/// [`serve`] over TLS: connections are served once their handshake is done (see `tls`).
pub async fn serve_tls<F>(
    listener: TcpListener,
    tls: std::sync::Arc<tokio_rustls::rustls::ServerConfig>,
    state: AppState,
    shutdown: F,
) -> Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    if let Ok(addr) = listener.local_addr() {
        state.bound_to_url(format!("https://{addr}"));
    }
    let listener = tls::TlsListener::new(listener, tls)
        .map_err(|e| Error::internal(format!("TLS listener: {e}")))?;
    serve_on(listener, state, shutdown).await
}

async fn serve_on<L, F>(listener: L, state: AppState, shutdown: F) -> Result<()>
where
    L: axum::serve::Listener<Addr = std::net::SocketAddr>,
    extract::Peer:
        for<'a> axum::extract::connect_info::Connected<axum::serve::IncomingStream<'a, L>>,
    F: Future<Output = ()> + Send + 'static,
{
    // Running playbook runs continue (after the public URL is known: outbound uses it).
    let resuming = state.clone();
    tokio::spawn(
        async move { svc_agents::playbook_runs::executor::resume_all(&resuming.agents).await },
    );
    let app = app(state.clone()).into_make_service_with_connect_info::<extract::Peer>();
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await;
    let closed = state.shutdown().await;
    served.map_err(|e| Error::internal(format!("HTTP server failed: {e}")))?;
    closed
}
