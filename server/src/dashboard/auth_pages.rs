//! Sign-up, sign-in and sign-out. Signing up or in calls the API's account functions and puts
//! the JWT they issue into the session cookie; signing out clears it.

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use maud::{html, Markup};
use serde::Deserialize;

use super::layout::{alert, page};
use super::session::{self, Session};
use crate::http::extract::{
    limit_address, PeerAddr, LOGIN_PER_MIN_PER_ADDRESS, REGISTER_PER_MIN_PER_ADDRESS,
};
use crate::state::AppState;
use svc_core::accounts::{self, LoginRequest, RegisterRequest, TokenResponse};
use svc_core::error::Error;

#[derive(Debug, Default, Deserialize)]
pub struct SignupForm {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub email: String,
    #[serde(default)]
    pub password: String,
}

#[derive(Debug, Default, Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    pub email: String,
    #[serde(default)]
    pub password: String,
}

/// `GET /app/login` (straight to Home when already signed in).
pub async fn login_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if session::resolve(&state, &headers).await.is_some() {
        return Redirect::to("/app/home").into_response();
    }
    login_form("", None).into_response()
}

/// `GET /app/signup`.
pub async fn signup_page() -> Markup {
    signup_form(&SignupForm::default(), None)
}

/// Whether a sign-in or sign-up POST comes from a page of another site (login CSRF: a
/// hostile page signing the visitor into the attacker's account). There is no session yet to
/// tie a token to, so the browser's own headers decide, as OWASP recommends: `Sec-Fetch-Site`
/// when sent, else an `Origin` that must name this host (or the configured public URL).
/// Clients that send neither (scripts, curl) are not browsers a third site can drive.
pub(crate) fn cross_site(state: &AppState, headers: &HeaderMap) -> bool {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = text("sec-fetch-site") {
        return !matches!(site, "same-origin" | "none");
    }
    let Some(origin) = text("origin") else {
        return false;
    };
    let authority = origin
        .split_once("://")
        .map_or(origin, |(_, rest)| rest)
        .trim_end_matches('/');
    let same_host = text("host").is_some_and(|h| h.eq_ignore_ascii_case(authority));
    let public = state
        .config
        .public_url
        .as_deref()
        .is_some_and(|u| u.trim_end_matches('/').eq_ignore_ascii_case(origin));
    !(same_host || public)
}

fn cross_site_refusal() -> Response {
    (
        StatusCode::FORBIDDEN,
        "sign-in and sign-up are only accepted from this site's own pages",
    )
        .into_response()
}

/// `POST /app/login`.
pub async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: PeerAddr,
    Form(f): Form<LoginForm>,
) -> Response {
    if cross_site(&state, &headers) {
        return cross_site_refusal();
    }
    if let Err(e) = limit_address(&state, peer, "login", LOGIN_PER_MIN_PER_ADDRESS) {
        let form = login_form(&f.email, Some(&message(&e)));
        return refused(e, form);
    }
    let req = LoginRequest {
        email: f.email.clone(),
        password: f.password,
    };
    match accounts::login(&state.store, &state.jwt, &state.login_limiter, req).await {
        Ok(t) => signed_in(&state, &t),
        Err(e) => {
            let form = login_form(&f.email, Some(&message(&e)));
            refused(e, form)
        }
    }
}

/// `POST /app/signup`: a new user and workspace.
pub async fn signup(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: PeerAddr,
    Form(f): Form<SignupForm>,
) -> Response {
    if cross_site(&state, &headers) {
        return cross_site_refusal();
    }
    if let Err(e) = limit_address(&state, peer, "register", REGISTER_PER_MIN_PER_ADDRESS) {
        let form = signup_form(&f, Some(&message(&e)));
        return refused(e, form);
    }
    let req = RegisterRequest {
        email: f.email.clone(),
        password: f.password.clone(),
        name: f.name.clone(),
    };
    match accounts::register(&state.store, &state.jwt, req).await {
        Ok(t) => signed_in(&state, &t),
        Err(e) => {
            let form = signup_form(&f, Some(&message(&e)));
            refused(e, form)
        }
    }
}

/// `POST /app/logout` (behind the session and CSRF check).
pub async fn logout(State(state): State<AppState>, Extension(_): Extension<Session>) -> Response {
    (
        [(
            header::SET_COOKIE,
            session::clear_cookie(session::secure(&state)),
        )],
        Redirect::to("/app/login"),
    )
        .into_response()
}

fn signed_in(state: &AppState, t: &TokenResponse) -> Response {
    (
        [(
            header::SET_COOKIE,
            session::set_cookie(&t.token, session::secure(state)),
        )],
        Redirect::to("/app/home"),
    )
        .into_response()
}

fn message(e: &Error) -> String {
    if e.code.status() >= 500 {
        tracing::error!(error = %e, "dashboard sign-in failed");
        "Something went wrong on our side; try again.".to_owned()
    } else {
        e.message.clone()
    }
}

fn refused(e: Error, form: Markup) -> Response {
    let status = StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = (status, form).into_response();
    if let Some(secs) = e.retry_after {
        if let Ok(v) = header::HeaderValue::from_str(&secs.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    response
}

fn login_form(email: &str, error: Option<&str>) -> Markup {
    page(
        None,
        "Sign in",
        "",
        &[],
        html! {
            form.card.narrow method="post" action="/app/login" {
                @if let Some(e) = error { (alert(e)) }
                label for="email" { "Email" }
                input id="email" name="email" type="email" autocomplete="username" required value=(email);
                label for="password" { "Password" }
                input id="password" name="password" type="password" autocomplete="current-password" required;
                button type="submit" { "Sign in" }
                p { "No account yet? " a href="/app/signup" { "Create one" } }
            }
        },
    )
}

fn signup_form(f: &SignupForm, error: Option<&str>) -> Markup {
    page(
        None,
        "Create your workspace",
        "",
        &[],
        html! {
            form.card.narrow method="post" action="/app/signup" {
                @if let Some(e) = error { (alert(e)) }
                label for="name" { "Your name" }
                input id="name" name="name" type="text" autocomplete="name" required value=(f.name);
                label for="email" { "Email" }
                input id="email" name="email" type="email" autocomplete="email" required value=(f.email);
                label for="password" { "Password " span.hint { "(at least 8 characters)" } }
                input id="password" name="password" type="password" autocomplete="new-password" minlength="8" required;
                button type="submit" { "Create account" }
                p { "Already have an account? " a href="/app/login" { "Sign in" } }
            }
        },
    )
}
