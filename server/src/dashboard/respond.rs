//! How a page answers besides its own markup: a failure as an HTML error page, and whether the
//! request wants an htmx fragment rather than a whole page.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::layout;
use super::session::Session;
use svc_core::error::Error;

/// A failed page: the error's status and message as an HTML page.
#[derive(Debug)]
pub struct Failure(Response);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        self.0
    }
}

/// The page for a domain error, with its status (an internal error's detail stays in the log).
pub fn failed(session: &Session, e: Error) -> Failure {
    let status = StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let message = if status.is_server_error() {
        tracing::error!(error = %e.message, "dashboard page failed");
        "Something went wrong on our side; try again.".to_owned()
    } else {
        e.message
    };
    Failure(
        (
            status,
            layout::error_page(
                Some(session),
                status.canonical_reason().unwrap_or("Error"),
                &message,
            ),
        )
            .into_response(),
    )
}

/// Whether the request came from htmx (which then gets a fragment, not a page).
pub fn is_htmx(headers: &axum::http::HeaderMap) -> bool {
    headers.contains_key("hx-request")
}
