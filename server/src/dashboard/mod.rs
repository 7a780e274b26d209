//! The dashboard: a web client served by svcd itself under `/app` (see docs/dashboard.md).
//! Server-rendered HTML (maud templates) with htmx for partial updates, Chart.js and
//! Cytoscape.js for charts and graphs, all embedded in the binary.
//!
//! Access: these routes are not part of the API, its OpenAPI document or `http::access::RULES`.
//! They are merged outside the API's access layer and carry their own rule: the sign-in pages
//! and the assets are public; everything else passes [`guard::require_session`] (a valid
//! `svc_session` cookie, plus the CSRF token on every non-GET request). Handlers are thin: they
//! call the same domain functions as the JSON API's handlers, never the API over the network.

pub mod approvals;
pub mod assets;
pub mod auth_pages;
pub mod brand;
pub mod catalogue;
pub mod chat;
pub mod console;
pub mod customers;
pub mod dedupe;
pub mod format;
pub mod forms;
pub mod guard;
pub mod home;
pub mod integrations;
pub mod keys;
pub mod layout;
pub mod oauth_consent;
pub mod opportunities;
pub mod paging;
pub mod playbook_cards;
pub mod playbook_runs;
pub mod playbooks;
pub mod respond;
pub mod session;
pub mod settings;

use axum::response::{Redirect, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::state::AppState;

/// The dashboard's routes (merged into the service's router by `http::app`).
pub fn router(state: AppState) -> Router<AppState> {
    let signed_in = Router::new()
        .route("/app/home", get(home::page))
        .route("/app/stream-ticket", post(home::stream_ticket))
        .route("/app/home/who", get(home::who))
        .route("/app/customers", get(customers::list))
        .route("/app/customers/dedupe", post(dedupe::run))
        .route("/app/customers/{id}", get(customers::profile))
        .route("/app/opportunities", get(opportunities::list))
        .route("/app/approvals", get(approvals::inbox))
        .route("/app/approvals/bulk", post(approvals::bulk))
        .route("/app/approvals/{id}/{decision}", post(approvals::decide))
        .route("/app/keys", get(keys::page).post(keys::create))
        .route("/app/keys/{id}/revoke", post(keys::revoke))
        .route("/app/graph", get(console::page).post(console::run))
        .route("/app/graph/neighbourhood", get(console::neighbourhood))
        .route("/app/graph/schema", get(console::schema_page))
        .route("/app/settings", get(settings::page).post(settings::save))
        .route("/app/capabilities", get(catalogue::page))
        .route("/app/chat", get(chat::page).post(chat::send))
        .route(
            "/app/playbooks",
            get(playbooks::page).post(playbooks::create),
        )
        .route("/app/playbooks/{id}", post(playbooks::update))
        .route("/app/playbooks/{id}/run", post(playbooks::run))
        .route("/app/playbooks/{id}/runs", get(playbook_runs::runs))
        .route("/app/playbooks/{id}/runs/{run_id}", get(playbook_runs::run))
        .route(
            "/app/playbooks/{id}/runs/{run_id}/{verb}",
            post(playbooks::control),
        )
        .route("/app/brand", get(brand::page).post(brand::save))
        .route("/app/brand/preview", post(brand::preview))
        .route("/app/brand/customers", get(brand::customers_picker))
        .route("/app/integrations", get(integrations::page))
        .route("/app/integrations/{kind}", post(integrations::connect))
        .route("/app/integrations/{kind}/test", post(integrations::test))
        .route(
            "/app/integrations/{kind}/disconnect",
            post(integrations::disconnect),
        )
        .route("/app/action-cards/{id}", post(playbook_cards::run))
        .route("/app/logout", post(auth_pages::logout))
        // Any other /app address: an HTML page that says so, with the navigation.
        .route("/app/{*rest}", get(layout::not_found))
        .route_layer(axum::middleware::from_fn_with_state(
            state,
            guard::require_session,
        ));
    Router::new()
        .route("/app", get(|| async { Redirect::to("/app/home") }))
        .route("/app/", get(|| async { Redirect::to("/app/home") }))
        .route(
            "/app/login",
            get(auth_pages::login_page).post(auth_pages::login),
        )
        .route(
            "/app/signup",
            get(auth_pages::signup_page).post(auth_pages::signup),
        )
        .route("/app/assets/{name}", get(assets::serve))
        .route(
            "/favicon.ico",
            get(|| async { Redirect::permanent(&assets::url(assets::FAVICON)) }),
        )
        .merge(signed_in)
        .layer(axum::middleware::map_response(security_headers))
}

/// Scripts only from our own files (no inline script runs), nothing from other origins, and
/// no framing of the pages by other sites. Inline styles are allowed: Chart.js, Cytoscape.js
/// and htmx set them.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data:; connect-src 'self'; frame-src 'self'; \
                   frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        axum::http::header::CONTENT_SECURITY_POLICY,
        axum::http::HeaderValue::from_static(CSP),
    );
    headers.insert(
        axum::http::header::X_FRAME_OPTIONS,
        axum::http::HeaderValue::from_static("DENY"),
    );
    headers.insert(
        axum::http::header::REFERRER_POLICY,
        axum::http::HeaderValue::from_static("same-origin"),
    );
    response
}
