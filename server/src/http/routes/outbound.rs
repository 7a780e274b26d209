//! `GET /api/v1/outbox` (outbound records) and `POST /api/webhooks/voice/{workspace_id}/status`
//! (the voice provider's signed status callback).

use crate::http::error::ErrorResponse;
use axum::body::Bytes;
use axum::extract::{OriginalUri, Query, State};
use axum::http::HeaderMap;
use serde::Deserialize;

use crate::http::error::ErrorBody;
use crate::http::extract::{AnyAuth, ApiJson, ApiPath};
use crate::state::AppState;
use svc_core::error::Error;
use svc_core::workspaces;
use svc_domains::outbound::{self, Outbox, State as OutboundState};

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OutboxQuery {
    /// Only records in this state.
    #[param(schema_with = status_values)]
    pub status: Option<String>,
    /// A customer id (`cus_...`) or an email.
    pub customer: Option<String>,
}

fn status_values() -> utoipa::openapi::schema::Object {
    crate::http::openapi::string_enum(OutboundState::ALL.iter().map(|s| s.as_str()))
}

/// Outbound records (emails, calls, Customer.io writes), newest first.
#[utoipa::path(get, path = "/api/v1/outbox", tag = "outbound",
    security(("jwt" = []), ("agent_key" = []), ("api_key" = [])),
    params(OutboxQuery),
    responses(
    (status = 200, body = Outbox),
    (status = 400, description = "unknown status", body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "an agent key without `outbox:read`", body = ErrorBody),
    (status = 404, description = "no customer with that email", body = ErrorBody),
))]
pub async fn outbox(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    query: Result<Query<OutboxQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<ApiJson<Outbox>, ErrorResponse> {
    let Query(q) = query.map_err(|e| Error::invalid_input(e.body_text()))?;
    let ws = p.workspace();
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(OutboundState::parse(s).ok_or_else(|| {
            Error::invalid_field(
                "status",
                s,
                "expected queued, sending, sent, failed, unknown or cancelled",
            )
        })?),
    };
    let customer = match q.customer.filter(|c| !c.is_empty()) {
        None => None,
        Some(c) if c.contains('@') => Some(svc_domains::crm::resolve(&state.store, ws, c).await?),
        Some(c) => Some(c),
    };
    Ok(ApiJson(
        outbound::list(&state.store, ws, status, customer).await?,
    ))
}

/// The fields of the provider's status callback svcd reads (Twilio's form; every other field is
/// kept in the signature check and ignored).
#[derive(Debug, utoipa::ToSchema)]
#[allow(non_snake_case, dead_code)]
pub struct VoiceStatusForm {
    CallSid: String,
    /// e.g. `completed`, `busy`, `no-answer`, `failed`.
    CallStatus: Option<String>,
    /// Seconds.
    CallDuration: Option<String>,
}

/// The voice provider's status callback for calls placed by `execute.call` (the StatusCallback
/// URL sent with each call). Verified with `X-Twilio-Signature` against the workspace's voice
/// auth token; a wrong signature is 401 and changes nothing.
#[utoipa::path(post, path = "/api/webhooks/voice/{workspace_id}/status", tag = "outbound",
    params(("workspace_id" = String, Path, description = "`ws_...`")),
    request_body(content = VoiceStatusForm, content_type = "application/x-www-form-urlencoded"),
    responses(
    (status = 204, description = "recorded"),
    (status = 400, body = ErrorBody),
    (status = 401, description = "invalid_signature (also for an unknown workspace: the answer says nothing about which workspaces exist)", body = ErrorBody),
    (status = 404, description = "a verified callback for a call this workspace did not place", body = ErrorBody),
))]
pub async fn voice_status(
    State(state): State<AppState>,
    ApiPath(workspace_id): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<axum::http::StatusCode, ErrorResponse> {
    let ws = workspaces::parse_id(&workspace_id).ok_or_else(outbound::call_status::unverified)?;
    let params: Vec<(String, String)> = serde_urlencoded::from_bytes(&body)
        .map_err(|e| Error::invalid_input(format!("the form body does not parse: {e}")))?;
    let path = uri
        .path_and_query()
        .map_or(uri.path(), |pq| pq.as_str())
        .to_owned();
    let full_url = format!("{}{path}", state.public_url().trim_end_matches('/'));
    let signature = headers
        .get("x-twilio-signature")
        .and_then(|v| v.to_str().ok());
    let stream = outbound::call_status::record(
        &state.store,
        &state.sealer,
        ws,
        &full_url,
        params,
        signature,
    )
    .await?;
    if let Some(msg) = stream {
        state.realtime.publish(ws, msg);
    }
    Ok(axum::http::StatusCode::NO_CONTENT)
}
