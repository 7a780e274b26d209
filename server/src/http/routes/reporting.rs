//! `/v1/reporting/*` and `/v1/messages` (bearer token: JWT or agent key).

use crate::http::error::ErrorResponse;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use serde::Deserialize;

use crate::http::error::ErrorBody;
use crate::http::extract::{AnyAuth, ApiJson};
use crate::state::AppState;
use svc_agents::reporting::{self, AssistantMessage, NewMessage, ReasoningList, Summary};
use svc_core::error::Error;

/// Dashboard figures of the workspace (cached 30 s; a Customer, Opportunity or Touchpoint
/// change shows at once). Never fails: an internal error answers every figure as zero.
#[utoipa::path(get, path = "/v1/reporting/summary", tag = "reporting",
    responses(
    (status = 200, body = Summary),
    (status = 401, body = ErrorBody),
))]
pub async fn summary(State(state): State<AppState>, AnyAuth(p): AnyAuth) -> ApiJson<Summary> {
    ApiJson(reporting::summary(&state.store, &state.summary_cache, p.workspace()).await)
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReasoningQuery {
    /// Entries to return: any integer, clamped to 1-100 as SPEC.md says (so the schema states no
    /// bounds); default 25.
    #[param(schema_with = any_integer)]
    pub limit: Option<String>,
}

/// An integer of any size (no `format`: a value past 64 bits is still an integer, and clamps).
fn any_integer() -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Integer)
        .build()
}

/// Reads an integer of any size, saturating at the bounds of i64.
fn saturating_integer(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.parse::<i64>().unwrap_or(if text.starts_with('-') {
        i64::MIN
    } else {
        i64::MAX
    }))
}

/// The most recent assistant turns across all buddies, oldest first (built from
/// Recommendation nodes and recent touchpoints while the workspace has no messages).
#[utoipa::path(get, path = "/v1/reporting/recent-reasoning", tag = "reporting",
    params(ReasoningQuery), responses(
    (status = 200, body = ReasoningList),
    (status = 400, description = "limit is not an integer", body = ErrorBody),
    (status = 401, body = ErrorBody),
))]
pub async fn recent_reasoning(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    query: Result<Query<ReasoningQuery>, QueryRejection>,
) -> Result<ApiJson<ReasoningList>, ErrorResponse> {
    let Query(q) = query.map_err(|e| {
        Error::invalid_input(format!("limit: must be an integer ({})", e.body_text()))
            .with_details(serde_json::json!({ "field": "limit" }))
    })?;
    let limit = match q.limit.as_deref() {
        None => None,
        Some(text) => Some(saturating_integer(text).ok_or_else(|| {
            Error::invalid_input(format!("limit: must be an integer: {text:?}"))
                .with_details(serde_json::json!({ "field": "limit" }))
        })?),
    };
    let limit = reporting::clamp_limit(limit);
    Ok(ApiJson(
        reporting::recent_reasoning(&state.store, p.workspace(), limit).await?,
    ))
}

/// Record one assistant turn of a buddy (the message store the reasoning feed reads).
#[utoipa::path(post, path = "/v1/messages", tag = "reporting",
    request_body = NewMessage, responses(
    (status = 201, body = AssistantMessage),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, description = "read-only workspace", body = ErrorBody),
))]
pub async fn append_message(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiJson(m): ApiJson<NewMessage>,
) -> Result<(StatusCode, ApiJson<AssistantMessage>), ErrorResponse> {
    let saved = reporting::append_message(&state.store, p.workspace(), m).await?;
    Ok((StatusCode::CREATED, ApiJson(saved)))
}

#[cfg(test)]
mod tests {
    use super::saturating_integer;

    #[test]
    fn integers_of_any_size_saturate() {
        assert_eq!(saturating_integer("25"), Some(25));
        assert_eq!(saturating_integer("-3"), Some(-3));
        assert_eq!(
            saturating_integer("99999999999999999999999"),
            Some(i64::MAX)
        );
        assert_eq!(
            saturating_integer("-99999999999999999999999"),
            Some(i64::MIN)
        );
        assert_eq!(saturating_integer(""), None);
        assert_eq!(saturating_integer("1.5"), None);
        assert_eq!(saturating_integer("ten"), None);
    }
}
