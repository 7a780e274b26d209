//! The page shell every dashboard page shares: head with the embedded assets, a skip link,
//! the navigation, the theme toggle and sign-out, and the CSRF token for htmx.

use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::assets::{self, APP_CSS, APP_JS, FAVICON, HTMX};
use super::session::{Session, CSRF_FIELD};

/// The navigation's entries: (path, label).
pub const NAV: &[(&str, &str)] = &[
    ("/app/home", "Home"),
    ("/app/customers", "Customers"),
    ("/app/opportunities", "Opportunities"),
    ("/app/approvals", "Approvals"),
    ("/app/keys", "Agent keys"),
    ("/app/graph", "Cypher console"),
    ("/app/integrations", "Integrations"),
    ("/app/playbooks", "Playbooks"),
    ("/app/capabilities", "Capabilities"),
    ("/app/brand", "Brand voice"),
    ("/app/chat", "Chat"),
    ("/app/settings", "Settings"),
];

/// A full page. `active` is the navigation path to mark current; `extra_scripts` are asset
/// indexes loaded (deferred) after htmx.
pub fn page(
    session: Option<&Session>,
    title: &str,
    active: &str,
    extra_scripts: &[usize],
    body: Markup,
) -> Markup {
    let hx_headers = session.map(|s| format!(r#"{{"X-CSRF-Token":"{}"}}"#, s.csrf));
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) " · svc" }
                link rel="icon" type="image/svg+xml" href=(assets::url(FAVICON));
                link rel="stylesheet" href=(assets::url(APP_CSS));
                // Not deferred: it applies the saved theme before the first paint.
                script src=(assets::url(APP_JS)) {}
                script defer src=(assets::url(HTMX)) {}
                @for i in extra_scripts {
                    script defer src=(assets::url(*i)) {}
                }
            }
            body hx-headers=[hx_headers] {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a.brand href="/app/home" { "svc" }
                    @if let Some(s) = session {
                        nav aria-label="Main" {
                            ul {
                                @for (path, label) in NAV {
                                    li {
                                        a href=(path) aria-current=[(*path == active).then_some("page")] { (label) }
                                    }
                                }
                            }
                        }
                        div.account {
                            span.who title=(s.user.user.email) { (s.user.user.name) }
                            form method="post" action="/app/logout" {
                                (csrf_input(s))
                                button.link type="submit" { "Sign out" }
                            }
                        }
                    }
                    button.theme type="button" id="theme-toggle" aria-label="Switch between light and dark theme" { "◐" }
                }
                // Errors of htmx requests (which swap nothing) are shown here by dashboard.js.
                div.toast id="toast" role="alert" hidden {}
                main id="main" tabindex="-1" {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// The hidden CSRF field of a form.
pub fn csrf_input(s: &Session) -> Markup {
    html! { input type="hidden" name=(CSRF_FIELD) value=(s.csrf); }
}

/// An error message block (`role=alert`, read out by screen readers).
pub fn alert(message: &str) -> Markup {
    html! { p.alert role="alert" { (message) } }
}

/// A page that only says what went wrong.
pub fn error_page(session: Option<&Session>, title: &str, message: &str) -> Markup {
    page(session, title, "", &[], alert(message))
}

/// `GET /app/<anything unknown>`: 404 as a page with the navigation and a way on.
pub async fn not_found(
    axum::Extension(s): axum::Extension<Session>,
    uri: axum::http::Uri,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let body = html! {
        p.alert role="alert" { "There is no page at " code { (uri.path()) } "." }
        p { "It may have moved, or the link was mistyped. " a href="/app/home" { "Go to Home" } " or pick a page from the navigation." }
    };
    (
        axum::http::StatusCode::NOT_FOUND,
        page(Some(&s), "Page not found", "", &[], body),
    )
        .into_response()
}

/// JSON for a `<script type="application/json">` block: `<` escaped so the text cannot close
/// the element.
pub fn json_script(id: &str, value: &serde_json::Value) -> Markup {
    let text = value.to_string().replace('<', "\\u003c");
    html! { script type="application/json" id=(id) { (PreEscaped(text)) } }
}
