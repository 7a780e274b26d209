//! svc-server: the HTTP service (binary `svcd`) and the top of the service's crates.
//!
//! It owns the faces (`http`: router, access table, routes, OpenAPI, TLS; `dashboard`; `mcp`;
//! `admin`) and the composition root (`state::AppState`, `config`, the record registry
//! `record_kinds`, the `sweeper`, `metrics`, `telemetry`). It may use every crate below it
//! (svc-agents, svc-gateway, svc-domains, svc-core, svc-query, svc-engine); nothing below may
//! use it. `AppState` lives only here: the floors below take what they use (a store, a sealer,
//! a clock, the `Gateway` or `AgentState` handle). `docs/architecture.md` draws the floors.

pub mod admin;
pub mod config;
pub mod dashboard;
pub mod http;
pub mod mcp;
pub mod metrics;
pub mod oauth;
pub mod record_kinds;
pub mod state;
pub mod sweeper;
pub mod telemetry;

pub use config::{Config, LogFormat};
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
