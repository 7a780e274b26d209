//! `/v1/playbooks` (bearer token: JWT or agent key): specs, runs (started, paused, resumed,
//! cancelled; executed by `playbooks::executor`), their leads and outcome reports.

use crate::http::error::ErrorResponse;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::http::error::ErrorBody;
use crate::http::extract::{AnyAuth, ApiJson, ApiPath};
use crate::state::AppState;
use svc_agents::playbook_runs::executor::{self, Control};
use svc_agents::playbook_runs::lead_source::RunRequest;
use svc_agents::playbook_runs::leads::{self, LeadList, LeadQuery, LeadSort};
use svc_agents::playbook_runs::model_judge::Judging;
use svc_agents::playbook_runs::outcomes;
use svc_agents::playbook_runs::run_plan;
use svc_agents::playbook_runs::runs::{
    self, OutcomeReport, OutcomeResult, RunEnvelope, RunList, RunQuery, RunSort,
};
use svc_core::auth::Principal;
use svc_core::error::Error;
use svc_domains::playbooks::{self, PlaybookEnvelope, PlaybookList};

/// Who did it: the user of a session or the agent key.
fn actor(p: &Principal) -> String {
    match p {
        Principal::User(s) => s.user.id.clone(),
        Principal::Key(k) => k.id.clone(),
    }
}

/// What judging a run can use: the voice integration (the call channel) and the model.
async fn judging(state: &AppState, p: &Principal) -> Result<Judging, Error> {
    Judging::load(&state.gateway, p.workspace()).await
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Deleted {
    pub ok: bool,
}

/// Every playbook spec of the workspace, oldest first.
#[utoipa::path(get, path = "/v1/playbooks", tag = "playbooks",
    responses(
    (status = 200, body = PlaybookList),
    (status = 401, body = ErrorBody),
))]
pub async fn list_playbooks(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
) -> Result<ApiJson<PlaybookList>, ErrorResponse> {
    Ok(ApiJson(playbooks::list(&state.store, p.workspace()).await?))
}

/// Create a spec. Required: `name`, `mode`, `buddyId`, `strategy.hypothesis`; defaults: status
/// `draft`, leadSource.kind `manual` (sampleSize 50), strategy.kind `gtm-execution`, adaptation
/// `{enabled: true, minSampleSize: 50, pivotWindowDays: 3, maxPivotsPerWeek: 2}`.
#[utoipa::path(post, path = "/v1/playbooks", tag = "playbooks",
    request_body(content = crate::http::request_docs::PlaybookCreate, description = "PlaybookSpec fields; server-assigned and unknown fields are ignored"),
    responses(
    (status = 201, body = PlaybookEnvelope),
    (status = 400, description = "a required field is missing, or a bound is exceeded (named in the message and `details.field`)", body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "read-only workspace", body = ErrorBody),
))]
pub async fn create_playbook(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiJson(body): ApiJson<Json>,
) -> Result<(StatusCode, ApiJson<PlaybookEnvelope>), ErrorResponse> {
    let playbook = playbooks::create(&state.store, p.workspace(), actor(&p), body).await?;
    Ok((StatusCode::CREATED, ApiJson(PlaybookEnvelope { playbook })))
}

#[utoipa::path(get, path = "/v1/playbooks/{id}", tag = "playbooks",
    params(("id" = String, Path, description = "Playbook id (`pb_...`)")), responses(
    (status = 200, body = PlaybookEnvelope),
    (status = 401, body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn get_playbook(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<ApiJson<PlaybookEnvelope>, ErrorResponse> {
    let playbook = playbooks::get(&state.store, p.workspace(), &id).await?;
    Ok(ApiJson(PlaybookEnvelope { playbook }))
}

/// Partial update: `leadSource`, `strategy` and `adaptation` merge field by field; unknown
/// fields are dropped; invalid enum values are ignored (the field keeps its value); out-of-bound
/// numbers and over-long strings are 400 and change nothing.
#[utoipa::path(put, path = "/v1/playbooks/{id}", tag = "playbooks",
    params(("id" = String, Path, description = "Playbook id (`pb_...`)")),
    request_body(content = Object, description = "Partial PlaybookSpec"),
    responses(
    (status = 200, body = PlaybookEnvelope),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "read-only workspace", body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn update_playbook(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<Json>,
) -> Result<ApiJson<PlaybookEnvelope>, ErrorResponse> {
    let playbook = playbooks::update(&state.store, p.workspace(), id, body).await?;
    Ok(ApiJson(PlaybookEnvelope { playbook }))
}

/// Delete a spec. Its runs stay readable by id but are no longer listed.
#[utoipa::path(delete, path = "/v1/playbooks/{id}", tag = "playbooks",
    params(("id" = String, Path, description = "Playbook id (`pb_...`)")), responses(
    (status = 200, body = Deleted),
    (status = 401, body = ErrorBody),
    (status = 403, description = "read-only workspace", body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn delete_playbook(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<ApiJson<Deleted>, ErrorResponse> {
    playbooks::delete(&state.store, p.workspace(), id).await?;
    Ok(ApiJson(Deleted { ok: true }))
}

/// Start a run: the executor works the lead source's customers in the background as the
/// campaign buddy (draft, then queue or send, within credits, consent and approvals); the
/// judge's pivots change the variant, channel or cadence. The body is optional (see
/// `RunRequest`: `leads`, `csv`, `delivery`, `intent`, `follow`, `cadenceMs`).
#[utoipa::path(post, path = "/v1/playbooks/{id}/run", tag = "playbooks",
    params(("id" = String, Path, description = "Playbook id (`pb_...`)")),
    request_body(content = Option<RunRequest>, description = "Optional; an empty body (or `null`) takes the spec's lead source"),
    responses(
    (status = 201, body = RunEnvelope),
    (status = 400, description = "invalid request, or a lead source this service cannot read (cio-segment, orange-slice without leads or csv)", body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "read-only workspace", body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn start_run(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath(id): ApiPath<String>,
    body: Bytes,
) -> Result<(StatusCode, ApiJson<RunEnvelope>), ErrorResponse> {
    let req = crate::http::extract::parse_optional_body::<RunRequest>(&body)?.unwrap_or_default();
    let run = executor::start(&state.agents, p.workspace(), id, actor(&p), req).await?;
    Ok((StatusCode::CREATED, ApiJson(RunEnvelope { run })))
}

async fn control(
    state: &AppState,
    p: &Principal,
    id: String,
    run_id: String,
    action: Control,
) -> Result<ApiJson<RunEnvelope>, ErrorResponse> {
    let run = executor::control(&state.agents, p.workspace(), id, run_id, action).await?;
    Ok(ApiJson(RunEnvelope { run }))
}

/// Pause a running run: it stops before its next lead (a lead under way finishes).
#[utoipa::path(post, path = "/v1/playbooks/{id}/runs/{run_id}/pause", tag = "playbooks",
    params(("id" = String, Path, description = "Playbook id (`pb_...`)"),
           ("run_id" = String, Path, description = "Run id (`run_...`)")), responses(
    (status = 200, body = RunEnvelope),
    (status = 401, body = ErrorBody),
    (status = 403, description = "read-only workspace", body = ErrorBody),
    (status = 404, body = ErrorBody),
    (status = 409, description = "the run is not running (or predates the executor)", body = ErrorBody),
))]
pub async fn pause_run(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath((id, run_id)): ApiPath<(String, String)>,
) -> Result<ApiJson<RunEnvelope>, ErrorResponse> {
    control(&state, &p, id, run_id, Control::Pause).await
}

/// Resume a `paused`, `blocked_credits` or `failed` run where it stopped.
#[utoipa::path(post, path = "/v1/playbooks/{id}/runs/{run_id}/resume", tag = "playbooks",
    params(("id" = String, Path, description = "Playbook id (`pb_...`)"),
           ("run_id" = String, Path, description = "Run id (`run_...`)")), responses(
    (status = 200, body = RunEnvelope),
    (status = 401, body = ErrorBody),
    (status = 403, description = "read-only workspace", body = ErrorBody),
    (status = 404, body = ErrorBody),
    (status = 409, description = "the run is cancelled or completed", body = ErrorBody),
))]
pub async fn resume_run(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath((id, run_id)): ApiPath<(String, String)>,
) -> Result<ApiJson<RunEnvelope>, ErrorResponse> {
    control(&state, &p, id, run_id, Control::Resume).await
}

/// Cancel a run for good (final; queued outreach stays in the approval queue).
#[utoipa::path(post, path = "/v1/playbooks/{id}/runs/{run_id}/cancel", tag = "playbooks",
    params(("id" = String, Path, description = "Playbook id (`pb_...`)"),
           ("run_id" = String, Path, description = "Run id (`run_...`)")), responses(
    (status = 200, body = RunEnvelope),
    (status = 401, body = ErrorBody),
    (status = 403, description = "read-only workspace", body = ErrorBody),
    (status = 404, body = ErrorBody),
    (status = 409, description = "the run is completed", body = ErrorBody),
))]
pub async fn cancel_run(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath((id, run_id)): ApiPath<(String, String)>,
) -> Result<ApiJson<RunEnvelope>, ErrorResponse> {
    control(&state, &p, id, run_id, Control::Cancel).await
}

/// The query of a run's leads, for the document (read with `LeadQuery::from_params`).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct LeadParams {
    /// Case-insensitive text in the lead's reference or customer id.
    #[param(max_length = 200)]
    q: Option<String>,
    /// Only leads with this status.
    #[param(schema_with = lead_statuses)]
    status: Option<String>,
    /// The column to sort by (default `seq`, the order they are worked).
    #[param(inline)]
    sort: Option<LeadSort>,
    /// `asc` (default) or `desc`; ties by position in the run.
    #[param(schema_with = orders)]
    order: Option<String>,
    /// Leads to skip (default 0).
    #[param(minimum = 0, maximum = 4294967295u64)]
    offset: Option<u64>,
    /// Page size (default 100).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u64>,
}

/// The query of a playbook's runs, for the document (read with `RunQuery::from_params`).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct RunParams {
    /// Only runs with this status.
    #[param(schema_with = run_statuses)]
    status: Option<String>,
    /// The column to sort by (default `started`).
    #[param(inline)]
    sort: Option<RunSort>,
    /// `asc` (default: oldest first) or `desc`; ties by start, then id.
    #[param(schema_with = orders)]
    order: Option<String>,
    /// Runs to skip (default 0).
    #[param(minimum = 0, maximum = 4294967295u64)]
    offset: Option<u64>,
    /// Page size (default 100).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u64>,
}

fn lead_statuses() -> utoipa::openapi::schema::Object {
    crate::http::openapi::string_enum(leads::STATUSES)
}

fn run_statuses() -> utoipa::openapi::schema::Object {
    crate::http::openapi::string_enum(run_plan::status::ALL)
}

fn orders() -> utoipa::openapi::schema::Object {
    crate::http::openapi::string_enum(["asc", "desc"])
}

/// The query parameters as name/value pairs, a malformed query string being the client's fault.
fn pairs(
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Vec<(String, String)>, ErrorResponse> {
    let Query(query) = query.map_err(|e| Error::invalid_input(e.body_text()))?;
    Ok(query)
}

/// The run's leads, paged with the total: by default in the order they are worked, each with
/// its status (`pending`, `working`, `queued`, `sent`, `skipped`, `failed`), reason, variant,
/// channel and request ids.
#[utoipa::path(get, path = "/v1/playbooks/{id}/runs/{run_id}/leads", tag = "playbooks",
    params(("id" = String, Path, description = "Playbook id (`pb_...`)"),
           ("run_id" = String, Path, description = "Run id (`run_...`)"), LeadParams), responses(
    (status = 200, body = LeadList),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn list_run_leads(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath((id, run_id)): ApiPath<(String, String)>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<ApiJson<LeadList>, ErrorResponse> {
    let query = pairs(query)?;
    let q = LeadQuery::from_params(query.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    runs::get(&state.store, p.workspace(), &id, &run_id).await?;
    Ok(ApiJson(
        leads::list(&state.store, p.workspace(), &id, &run_id, &q).await?,
    ))
}

/// The playbook's runs, paged with the total, by default ordered by `startedAt`, oldest first
/// (404 once the playbook is deleted).
#[utoipa::path(get, path = "/v1/playbooks/{id}/runs", tag = "playbooks",
    params(("id" = String, Path, description = "Playbook id (`pb_...`)"), RunParams), responses(
    (status = 200, body = RunList),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn list_runs(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath(id): ApiPath<String>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<ApiJson<RunList>, ErrorResponse> {
    let query = pairs(query)?;
    let q = RunQuery::from_params(query.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    Ok(ApiJson(
        runs::list(&state.store, p.workspace(), &id, &q).await?,
    ))
}

/// One run, also after its playbook was deleted.
#[utoipa::path(get, path = "/v1/playbooks/{id}/runs/{run_id}", tag = "playbooks",
    params(("id" = String, Path, description = "Playbook id (`pb_...`)"),
           ("run_id" = String, Path, description = "Run id (`run_...`)")), responses(
    (status = 200, body = RunEnvelope),
    (status = 401, body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn get_run(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath((id, run_id)): ApiPath<(String, String)>,
) -> Result<ApiJson<RunEnvelope>, ErrorResponse> {
    let run = runs::get(&state.store, p.workspace(), &id, &run_id).await?;
    Ok(ApiJson(RunEnvelope { run }))
}

/// Report outcomes (`{samples, successes, value?}`) of a run; the adaptation judge decides on
/// a pivot by the spec's rules (see docs/playbooks-brand-reporting.md).
#[utoipa::path(post, path = "/v1/playbooks/{id}/runs/{run_id}/outcomes", tag = "playbooks",
    params(("id" = String, Path, description = "Playbook id (`pb_...`)"),
           ("run_id" = String, Path, description = "Run id (`run_...`)")),
    request_body = OutcomeReport, responses(
    (status = 200, body = OutcomeResult),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "read-only workspace", body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn report_outcomes(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath((id, run_id)): ApiPath<(String, String)>,
    ApiJson(report): ApiJson<OutcomeReport>,
) -> Result<ApiJson<OutcomeResult>, ErrorResponse> {
    let judging = judging(&state, &p).await?;
    Ok(ApiJson(
        outcomes::record_outcome(&state.store, p.workspace(), id, run_id, report, &judging).await?,
    ))
}

/// Fold the events attributed to the playbook's campaign (events with `campaignId` equal to the
/// playbook id, since the run started) into the run as outcomes, then let the judge decide.
/// Repeating it adds only what is new.
#[utoipa::path(post, path = "/v1/playbooks/{id}/runs/{run_id}/sync", tag = "playbooks",
    params(("id" = String, Path, description = "Playbook id (`pb_...`)"),
           ("run_id" = String, Path, description = "Run id (`run_...`)")), responses(
    (status = 200, body = OutcomeResult),
    (status = 401, body = ErrorBody),
    (status = 403, description = "read-only workspace", body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn sync_run(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath((id, run_id)): ApiPath<(String, String)>,
) -> Result<ApiJson<OutcomeResult>, ErrorResponse> {
    let judging = judging(&state, &p).await?;
    Ok(ApiJson(
        outcomes::sync_attributed(&state.store, p.workspace(), id, run_id, &judging).await?,
    ))
}
