//! svc-server: the HTTP service (binary `svcd`) over the svc-engine store.
//!
//! Layout: domain modules hold the rules and know nothing of HTTP (`accounts`, `workspaces`,
//! `keys`, `auth`, `capabilities`, `ratelimit`); `store` is the one door to the engine; `error`
//! is the one error type with its code -> status table; `http` holds routing, middleware and
//! thin adapters (`http::routes::*`). Later domains (gateway, ledger, events, crm, playbooks,
//! brand, reporting) follow the same split: a domain module plus an adapter under
//! `http::routes`, registered in `http::routes()`.

pub mod accounts;
pub mod admin;
pub mod agent_state;
pub mod agents;
pub mod auth;
pub mod brand;
pub mod buddies;
pub mod capabilities;
pub mod config;
pub mod crm;
pub mod customers;
pub mod dashboard;
pub mod error;
pub mod events;
pub mod fields;
pub mod gateway;
pub mod graph_api;
pub mod http;
pub mod integration_kind;
pub mod integrations;
pub mod keys;
pub mod ledger;
pub mod mcp;
pub mod members;
pub mod metrics;
pub mod outbound;
pub mod outreach;
pub mod pipeline;
pub mod planning;
pub mod playbooks;
pub mod plumbing;
pub mod ratelimit;
pub mod record_kinds;
pub mod reporting;
pub mod reports;
pub mod retention;
pub mod scoring;
pub mod state;
pub mod store;
pub mod sweeper;
pub mod telemetry;
pub mod vocabulary;
pub mod workspaces;

pub use config::{Config, LogFormat};
pub use error::{Code, Error};
pub use http::{app, serve, serve_tls};
pub use state::AppState;

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutdown requested; finishing in-flight requests");
}
