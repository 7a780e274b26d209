//! The error body of DESIGN.md §4, on every route. The error type and its code -> status table
//! are svc-core's; [`ErrorResponse`] is its HTTP rendering (the orphan rule keeps axum's
//! `IntoResponse` off a type of another crate, and the core knows no HTTP).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use super::context;
use svc_core::error::Error;

/// `{"error": {...}}`
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable snake_case code, e.g. `invalid_input`.
    pub code: String,
    pub message: String,
    /// Id of the request (`req_...`), also in the `X-Request-Id` header.
    pub request_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub details: Option<serde_json::Value>,
}

/// An [`Error`] as an HTTP response: what handlers return (`?` converts any [`Error`]).
#[derive(Debug)]
pub struct ErrorResponse(pub Error);

impl From<Error> for ErrorResponse {
    fn from(e: Error) -> ErrorResponse {
        ErrorResponse(e)
    }
}

impl IntoResponse for ErrorResponse {
    fn into_response(self) -> Response {
        let ErrorResponse(e) = self;
        let status =
            StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = ErrorBody {
            error: ErrorDetail {
                code: e.code.as_str().to_owned(),
                message: e.message,
                request_id: context::request_id().unwrap_or_default(),
                details: e.details,
            },
        };
        let mut response = (status, axum::Json(body)).into_response();
        if let Some(secs) = e.retry_after {
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        response
    }
}
