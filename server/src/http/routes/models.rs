//! `/v1/models`: the workspace's score models (list; retrain now, JWT only).

use crate::http::error::ErrorResponse;
use axum::extract::State;
use serde::Serialize;
use serde_json::{json, Value as Json};

use crate::http::error::ErrorBody;
use crate::http::extract::{AnyAuth, ApiJson, JwtUser};
use crate::state::AppState;
use svc_domains::scoring::retrain::{self, RetrainReport};
use svc_domains::scoring::{self, trained};

/// The workspace's score models.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ModelList {
    /// The version invocations use (`lr-v<n>`); null while every score is on its prior.
    pub current: Option<String>,
    /// Training runs, newest first: version, cut-off, horizon, labelled customers, and per
    /// score the weights (by feature, on standardised inputs), training size, positives and
    /// in-sample AUC / Brier; `null` for a score that stayed on its prior (see `notes`).
    #[schema(value_type = Vec<Object>)]
    pub models: Vec<trained::ScoreModel>,
    /// The prior's version and the retraining thresholds.
    #[schema(value_type = Object)]
    pub policy: Json,
}

/// The workspace's score models and the retraining policy.
#[utoipa::path(get, path = "/v1/models", tag = "models",
    responses(
    (status = 200, body = ModelList),
    (status = 401, body = ErrorBody),
))]
pub async fn list_models(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
) -> Result<ApiJson<ModelList>, ErrorResponse> {
    let (current, models) = retrain::list(&state.store, p.workspace()).await?;
    Ok(ApiJson(ModelList {
        current,
        models,
        policy: json!({
            "prior_version": scoring::PRIOR_VERSION,
            "horizon_days": retrain::HORIZON_DAYS,
            "min_labelled_customers": retrain::MIN_LABELLED,
            "min_examples_per_class": trained::MIN_PER_CLASS,
            "retrain_on_touchpoint_growth": retrain::GROWTH,
            "min_interval_seconds": retrain::MIN_INTERVAL.as_secs(),
            "check_every_seconds": retrain::CHECK_EVERY.as_secs(),
            "l2_alpha": trained::L2_ALPHA,
        }),
    }))
}

/// Retrain now: fits both scores on the workspace's own outcomes (time split: features as of
/// 30 days ago, outcomes since), publishes the new version when at least one score could be
/// fitted, and rewrites every customer's `churnScore`, `conversionScore` and `score`. Answers
/// once done; invocations keep scoring with the previous version meanwhile.
#[utoipa::path(post, path = "/v1/models/retrain", tag = "models",
    responses(
    (status = 200, description = "`trained`, or `skipped` with the reason in `notes`", body = RetrainReport),
    (status = 401, body = ErrorBody),
    (status = 403, description = "not a dashboard session", body = ErrorBody),
    (status = 409, description = "a retrain of this workspace is already running", body = ErrorBody),
))]
pub async fn retrain_models(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
) -> Result<ApiJson<RetrainReport>, ErrorResponse> {
    Ok(ApiJson(
        retrain::retrain(
            &state.store,
            &state.retrains,
            s.workspace,
            svc_core::plumbing::clock::now(),
        )
        .await?,
    ))
}
