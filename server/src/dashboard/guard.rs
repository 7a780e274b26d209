//! The dashboard's access rule, in front of every page behind sign-in: the session cookie
//! ([`super::session`]) and, on requests that may change something, its CSRF token.

use std::collections::HashMap;

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};

use super::session::{
    csrf_valid, form_urlencoded_parse, resolve, Session, CSRF_FIELD, CSRF_HEADER,
};
use crate::state::AppState;

/// The dashboard's own access rule, for every route behind sign-in: a valid session cookie
/// (else a redirect to the login page, or 401 for htmx and non-GET requests) and, on every
/// request that may change something, the session's CSRF token (else 403).
pub async fn require_session(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(session) = resolve(&state, req.headers()).await else {
        return signed_out(&req);
    };
    let mut req = req;
    if !matches!(*req.method(), Method::GET | Method::HEAD) {
        let (ok, rebuilt) = check_csrf(&session, req).await;
        if !ok {
            return (
                StatusCode::FORBIDDEN,
                super::layout::error_page(
                    Some(&session),
                    "Forbidden",
                    "The form's security token is missing or does not match your session. Reload the page and try again.",
                ),
            )
                .into_response();
        }
        req = rebuilt;
    }
    req.extensions_mut().insert(session);
    next.run(req).await
}

fn signed_out(req: &Request) -> Response {
    let htmx = req.headers().contains_key("hx-request");
    if req.method() == Method::GET && !htmx {
        return Redirect::to("/app/login").into_response();
    }
    let mut response = (StatusCode::UNAUTHORIZED, "sign in again").into_response();
    if htmx {
        response
            .headers_mut()
            .insert("hx-redirect", HeaderValue::from_static("/app/login"));
    }
    response
}

/// Checks the header, else the urlencoded form body's `csrf` field (the body is read and put
/// back for the handler).
async fn check_csrf(session: &Session, req: Request) -> (bool, Request) {
    if let Some(value) = req.headers().get(CSRF_HEADER).and_then(|v| v.to_str().ok()) {
        return (csrf_valid(&session.token, value), req);
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = to_bytes(body, crate::http::limits::MAX_BODY_BYTES).await else {
        return (false, Request::from_parts(parts, Body::empty()));
    };
    let fields: HashMap<String, String> = form_urlencoded_parse(&bytes).into_iter().collect();
    let ok = fields
        .get(CSRF_FIELD)
        .is_some_and(|v| csrf_valid(&session.token, v));
    (ok, Request::from_parts(parts, Body::from(bytes)))
}
