//! Liveness, readiness and metrics.

use crate::http::error::ErrorResponse;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use serde::Serialize;
use utoipa::ToSchema;

use crate::http::error::ErrorBody;
use crate::http::extract::ApiJson;
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = HealthStatus)]
pub struct Status {
    /// `ok` or `ready`.
    pub status: String,
}

/// The process is up.
#[utoipa::path(get, path = "/healthz", tag = "system", responses((status = 200, body = Status)))]
pub async fn healthz() -> ApiJson<Status> {
    ApiJson(Status {
        status: "ok".to_owned(),
    })
}

/// The store accepts writes (503 `unavailable` otherwise, e.g. during shutdown).
#[utoipa::path(get, path = "/readyz", tag = "system", responses(
    (status = 200, body = Status),
    (status = 503, body = ErrorBody),
))]
pub async fn readyz(State(state): State<AppState>) -> Result<ApiJson<Status>, ErrorResponse> {
    state.store.probe_write().await?;
    Ok(ApiJson(Status {
        status: "ready".to_owned(),
    }))
}

/// Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", tag = "system", responses(
    (status = 200, content_type = "text/plain; version=0.0.4", body = String),
))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(&state.gauges()),
    )
}
