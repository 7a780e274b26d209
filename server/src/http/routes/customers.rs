//! `/v1/customers`, `/v1/campaigns`, `/v1/opportunities` (bearer token: JWT or agent key).

use crate::http::error::ErrorResponse;
use std::collections::HashMap;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::Deserialize;

use crate::http::error::ErrorBody;
use crate::http::extract::{AnyAuth, ApiJson, ApiPath};
use crate::state::AppState;
use svc_core::auth::Principal;
use svc_core::error::Error;
use svc_domains::customers::insights::{self, CohortList, JourneyList, ProductList, SegmentList};
use svc_domains::customers::{
    self, CampaignList, CustomerList, CustomerProfile, CustomerQuery, CustomerSort, DedupeReport,
    OpportunityList, OpportunityQuery, OpportunitySort, Timeline,
};

/// The query of `GET /v1/customers`, for the document: the handler reads the parameters with
/// `CustomerQuery::from_params` (empty values count as absent).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct ListParams {
    /// Case-insensitive text in any string property (email, name, phone, external id, traits)
    /// or a `cus_...` id; a phone number matches by its digits.
    #[param(max_length = 200)]
    q: Option<String>,
    /// The column to sort by (default `last_seen`).
    #[param(inline)]
    sort: Option<CustomerSort>,
    /// `desc` (default) or `asc`; customers without the sort value come last.
    #[param(inline)]
    order: Option<SortOrder>,
    /// Lifecycle stage: the `lifecycle_stage` property, else the Stage the customer is AT_STAGE.
    stage: Option<String>,
    /// Lowest conversion score (`score`), inclusive.
    min_score: Option<f64>,
    /// Highest conversion score, inclusive.
    max_score: Option<f64>,
    /// Lowest churn score (`churnScore`), inclusive.
    min_churn: Option<f64>,
    /// Highest churn score, inclusive.
    max_churn: Option<f64>,
    /// Customers with a touchpoint attributed to this campaign (`campaignId` or name).
    campaign: Option<String>,
    /// Only customers with this property.
    has: Option<String>,
    /// Customers to skip (default 0).
    #[param(minimum = 0, maximum = 4294967295u64)]
    offset: Option<u64>,
    /// Page size (default 100).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u64>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SortOrder {
    Asc,
    Desc,
}

/// Customers of the whole workspace, searched, filtered, sorted and paged on the server, with
/// the number matching in all. Without parameters: the 100 most recently seen, most recent
/// first (customers never seen come last).
#[utoipa::path(get, path = "/v1/customers", tag = "customers",
    params(ListParams),
    responses(
    (status = 200, body = CustomerList),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
))]
pub async fn list_customers(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<ApiJson<CustomerList>, ErrorResponse> {
    let Query(query) = query.map_err(|e| Error::invalid_input(e.body_text()))?;
    let q = CustomerQuery::from_params(query.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    Ok(ApiJson(
        customers::list(&state.store, p.workspace(), q).await?,
    ))
}

/// A customer (by `cus_...` id or email) with its 100 most recent touchpoints.
#[utoipa::path(get, path = "/v1/customers/{id}", tag = "customers",
    params(("id" = String, Path, description = "Customer id (`cus_...`) or email")), responses(
    (status = 200, body = CustomerProfile),
    (status = 401, body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn get_customer(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<ApiJson<CustomerProfile>, ErrorResponse> {
    Ok(ApiJson(
        customers::profile(&state.store, p.workspace(), id).await?,
    ))
}

/// Every touchpoint of the customer, oldest first.
#[utoipa::path(get, path = "/v1/customers/{id}/timeline", tag = "customers",
    params(("id" = String, Path, description = "Customer id (`cus_...`) or email")), responses(
    (status = 200, body = Timeline),
    (status = 401, body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn customer_timeline(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<ApiJson<Timeline>, ErrorResponse> {
    Ok(ApiJson(
        customers::timeline(&state.store, p.workspace(), id).await?,
    ))
}

/// Merge Customer records sharing an email into one canonical record (cio_id, then edge count,
/// then smallest id). `?dry_run=true` returns the plan and changes nothing. Idempotent.
#[utoipa::path(post, path = "/v1/customers/dedupe", tag = "customers",
    params(("dry_run" = Option<bool>, Query, description = "Only report the plan")), responses(
    (status = 200, body = DedupeReport),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "read-only workspace", body = ErrorBody),
))]
pub async fn dedupe_customers(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<ApiJson<DedupeReport>, ErrorResponse> {
    let Query(query) = query.map_err(|e| Error::invalid_input(e.body_text()))?;
    let dry_run = match query.get("dry_run").map(String::as_str) {
        // Exactly the schema's boolean: `dry_run=` or `dry_run=1` is not one.
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(Error::invalid_field("dry_run", other, "must be true or false").into())
        }
    };
    let actor = match &p {
        Principal::User(s) => s.user.id.clone(),
        Principal::Key(k) => k.id.clone(),
    };
    Ok(ApiJson(
        customers::dedupe(&state.store, p.workspace(), actor, dry_run).await?,
    ))
}

/// Campaigns with their attributed touchpoint counts, most touchpoints first.
#[utoipa::path(get, path = "/v1/campaigns", tag = "customers",
    responses(
    (status = 200, body = CampaignList),
    (status = 401, body = ErrorBody),
))]
pub async fn list_campaigns(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
) -> Result<ApiJson<CampaignList>, ErrorResponse> {
    Ok(ApiJson(
        customers::campaigns(&state.store, p.workspace()).await?,
    ))
}

/// The query of `GET /v1/opportunities`, for the document: the handler reads the parameters
/// with `OpportunityQuery::from_params` (empty text filters count as absent).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct OpportunityParams {
    /// Case-insensitive text in the opportunity's name or id, or its customer's email or name.
    #[param(max_length = 200)]
    q: Option<String>,
    /// The column to sort by (default `score`, the models' confidence; ties by amount).
    #[param(inline)]
    sort: Option<OpportunitySort>,
    /// `desc` (default) or `asc`; opportunities without the sort value come last, ties by id.
    #[param(inline)]
    order: Option<SortOrder>,
    /// Stage name (case-insensitive).
    stage: Option<String>,
    /// `open`, `won` or `lost`.
    #[param(inline)]
    status: Option<OpportunityStatus>,
    /// Lowest amount, inclusive (opportunities without an amount are left out).
    min_amount: Option<f64>,
    /// Highest amount, inclusive.
    max_amount: Option<f64>,
    /// Opportunities to skip (default 0).
    #[param(minimum = 0, maximum = 4294967295u64)]
    offset: Option<u64>,
    /// Page size (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u64>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OpportunityStatus {
    Open,
    Won,
    Lost,
}

/// Opportunities of the whole workspace, searched, filtered, sorted and paged on the server,
/// with the number matching in all. Without parameters: the 50 with the highest score, then
/// the unscored ones by amount (largest first).
#[utoipa::path(get, path = "/v1/opportunities", tag = "customers",
    params(OpportunityParams),
    responses(
    (status = 200, body = OpportunityList),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
))]
pub async fn list_opportunities(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<ApiJson<OpportunityList>, ErrorResponse> {
    let Query(query) = query.map_err(|e| Error::invalid_input(e.body_text()))?;
    let q = OpportunityQuery::from_params(query.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    Ok(ApiJson(
        customers::opportunities(&state.store, p.workspace(), q).await?,
    ))
}

/// Rule-based segments: activity recency (from `lastSeen`) and lifecycle stage.
#[utoipa::path(get, path = "/v1/segments", tag = "customers",
    responses(
    (status = 200, body = SegmentList),
    (status = 401, body = ErrorBody),
))]
pub async fn list_segments(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
) -> Result<ApiJson<SegmentList>, ErrorResponse> {
    Ok(ApiJson(
        insights::segments(&state.store, p.workspace()).await?,
    ))
}

/// The most common ordered paths of touchpoint actions (first 5 steps, repeats collapsed).
#[utoipa::path(get, path = "/v1/journeys", tag = "customers",
    responses(
    (status = 200, body = JourneyList),
    (status = 401, body = ErrorBody),
))]
pub async fn list_journeys(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
) -> Result<ApiJson<JourneyList>, ErrorResponse> {
    Ok(ApiJson(
        insights::journeys(&state.store, p.workspace()).await?,
    ))
}

/// Cohorts discovered as connected components of the customer-campaign graph.
#[utoipa::path(get, path = "/v1/cohorts", tag = "customers",
    responses(
    (status = 200, body = CohortList),
    (status = 401, body = ErrorBody),
))]
pub async fn list_cohorts(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
) -> Result<ApiJson<CohortList>, ErrorResponse> {
    Ok(ApiJson(
        insights::cohorts(&state.store, p.workspace()).await?,
    ))
}

/// Products named in touchpoint properties, with touchpoint and customer counts.
#[utoipa::path(get, path = "/v1/products", tag = "customers",
    responses(
    (status = 200, body = ProductList),
    (status = 401, body = ErrorBody),
))]
pub async fn list_products(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
) -> Result<ApiJson<ProductList>, ErrorResponse> {
    Ok(ApiJson(
        insights::products(&state.store, p.workspace()).await?,
    ))
}
