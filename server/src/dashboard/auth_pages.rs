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

/// `POST /app/login`.
pub async fn login(State(state): State<AppState>, Form(f): Form<LoginForm>) -> Response {
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
pub async fn signup(State(state): State<AppState>, Form(f): Form<SignupForm>) -> Response {
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
