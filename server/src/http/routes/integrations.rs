//! `/api/v1/integrations`: connect, test and disconnect outside providers (JWT only).

use axum::extract::State;
use serde_json::Value as Json;

use crate::error::{Code, Error};
use crate::http::error::ErrorBody;
use crate::http::extract::{ApiJson, ApiPath, JwtUser};
use crate::http::routes::playbooks::Deleted;
use crate::integrations::{
    self, CustomerioConfig, IntegrationList, IntegrationView, Kind, SmtpConfig, TestResult,
    VoiceConfig,
};
use crate::state::AppState;

fn kind(name: &str) -> Result<Kind, Error> {
    Kind::parse(name).ok_or_else(|| {
        let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        Error::new(
            Code::NotFound,
            format!(
                "integration kind not found; the kinds are {}",
                kinds.join(", ")
            ),
        )
    })
}

/// Every integration kind, connected or not: masked config (secrets show as `••••` and at most
/// their last four characters), when it was connected and changed, the last live test, and the
/// capability ids it unlocks.
#[utoipa::path(get, path = "/api/v1/integrations", tag = "integrations", security(("jwt" = [])),
    responses(
    (status = 200, body = IntegrationList),
    (status = 401, body = ErrorBody),
    (status = 403, description = "an agent key", body = ErrorBody),
))]
pub async fn list_integrations(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
) -> Result<ApiJson<IntegrationList>, Error> {
    Ok(ApiJson(
        integrations::list(&state.store, &state.sealer, s.workspace).await?,
    ))
}

/// Connect `kind`, or replace its config. The body is the config itself: `smtp` {host, port,
/// security none|starttls|tls, username, password, from, reply_to, ca_cert_pem}, `voice`
/// {base_url, account_sid, auth_token, from_number}, `customerio` {site_id, api_key, region
/// us|eu, base_url}. On an update an omitted secret (or its masked form) keeps the stored
/// value. Stored sealed; the answer shows secrets masked.
#[utoipa::path(put, path = "/api/v1/integrations/{kind}", tag = "integrations",
    security(("jwt" = [])),
    params(("kind" = String, Path, description = "`smtp`, `voice` or `customerio`")),
    request_body = IntegrationConfig,
    responses(
    (status = 200, body = IntegrationView),
    (status = 400, description = "an invalid, missing or unknown field (named)", body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "an agent key, or a read-only workspace", body = ErrorBody),
    (status = 404, description = "not an integration kind", body = ErrorBody),
))]
pub async fn put_integration(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<Json>,
) -> Result<ApiJson<IntegrationView>, Error> {
    let kind = kind(&name)?;
    Ok(ApiJson(
        integrations::put(
            &state.store,
            &state.sealer,
            state.http.destinations(),
            s.workspace,
            kind,
            body,
        )
        .await?,
    ))
}

/// Disconnect `kind` (idempotent): the sealed config is deleted.
#[utoipa::path(delete, path = "/api/v1/integrations/{kind}", tag = "integrations",
    security(("jwt" = [])),
    params(("kind" = String, Path, description = "`smtp`, `voice` or `customerio`")),
    responses(
    (status = 200, body = Deleted),
    (status = 401, body = ErrorBody),
    (status = 403, description = "an agent key, or a read-only workspace", body = ErrorBody),
    (status = 404, description = "not an integration kind", body = ErrorBody),
))]
pub async fn delete_integration(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiPath(name): ApiPath<String>,
) -> Result<ApiJson<Deleted>, Error> {
    let kind = kind(&name)?;
    integrations::delete(&state.store, s.workspace, kind).await?;
    Ok(ApiJson(Deleted { ok: true }))
}

/// A live check with the stored config: SMTP connect, EHLO, TLS as configured, AUTH, QUIT; the
/// voice provider's account resource; Customer.io's region endpoint. A provider failure is a
/// 200 with `ok: false` and the reason; the outcome is kept as the integration's `last_test`.
#[utoipa::path(post, path = "/api/v1/integrations/{kind}/test", tag = "integrations",
    security(("jwt" = [])),
    params(("kind" = String, Path, description = "`smtp`, `voice` or `customerio`")),
    responses(
    (status = 200, body = TestResult),
    (status = 401, body = ErrorBody),
    (status = 403, description = "an agent key", body = ErrorBody),
    (status = 404, description = "not an integration kind", body = ErrorBody),
    (status = 409, description = "the integration is not connected", body = ErrorBody),
))]
pub async fn test_integration(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiPath(name): ApiPath<String>,
) -> Result<ApiJson<TestResult>, Error> {
    let kind = kind(&name)?;
    Ok(ApiJson(
        integrations::test(&state.store, &state.sealer, &state.http, s.workspace, kind).await?,
    ))
}

/// The PUT body, for the OpenAPI document only: the config of the path's kind.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum IntegrationConfig {
    Smtp(SmtpConfig),
    Voice(VoiceConfig),
    Customerio(CustomerioConfig),
}
