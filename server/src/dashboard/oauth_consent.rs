//! `/oauth/authorize`: the consent step of MCP authorization (`crate::oauth`,
//! docs/mcp-oauth.md). A signed-in person sees which client asks and where it will send them,
//! picks which of the grants and modes they may give to hand over (`oauth::giving`), and
//! approves or denies; the client gets a short-lived, single-use code at its redirect URI.
//!
//! The request is checked before anything is shown: an unknown client or a redirect URI the
//! client did not register gets an error page here and never a redirect (no open redirect,
//! RFC 6749 §4.1.2.1); every other problem (no PKCE S256, a `resource` other than this
//! server's `/mcp`) goes back to the client as an OAuth error. The approval form is the
//! dashboard's: session cookie, its CSRF token, and no posts from other sites (the sign-in
//! page's `Sec-Fetch-Site`/`Origin` rule). The page may not be framed (clickjacking).

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use maud::{html, Markup};
use reqwest::Url;
use serde::Deserialize;

use super::auth_pages::cross_site;
use super::layout::{alert, csrf_input, error_page, page};
use super::session::{self, Session};
use crate::http::extract::{limit_address, PeerAddr, LOGIN_PER_MIN_PER_ADDRESS};
use crate::oauth::clients::{self, Client};
use crate::state::AppState;
use svc_core::accounts::{self, LoginRequest};
use svc_core::capabilities::Capability;
use svc_core::oauth::giving::Giveable;
use svc_core::oauth::{self, Consent};
use svc_core::workspaces;

/// The consent routes (merged beside the dashboard by `http::app`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/oauth/authorize", get(show).post(decide))
        .route("/oauth/authorize/login", post(sign_in))
        .layer(axum::middleware::map_response(headers))
}

/// Like the dashboard's, but the form may post to wherever the approval then redirects (the
/// decision answers 303 to the client's redirect URI, which `form-action` also governs), and
/// nothing of the URL leaks in a `Referer`.
async fn headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(header::CONTENT_SECURITY_POLICY, csp(None));
    }
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn csp(redirect: Option<&str>) -> HeaderValue {
    let target = redirect.and_then(form_action_source).unwrap_or_default();
    HeaderValue::from_str(&format!(
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self' {target}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("default-src 'self'; frame-ancestors 'none'"))
}

/// The CSP source of a redirect URI: its origin, or `scheme:` for a native app's scheme.
fn form_action_source(uri: &str) -> Option<String> {
    let url = Url::parse(uri).ok()?;
    let source = match (url.scheme(), url.host_str()) {
        ("http" | "https", Some(_)) => url.origin().ascii_serialization(),
        (scheme, _) => format!("{scheme}:"),
    };
    // Only characters a CSP source may hold (a host with `;` would end the directive).
    source
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._:/[]".contains(&b))
        .then_some(source)
}

/// The authorization request's parameters (RFC 6749 §4.1.1, RFC 7636, RFC 8707).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct AuthorizeParams {
    #[serde(default)]
    pub response_type: String,
    #[serde(default)]
    pub client_id: String,
    #[serde(default)]
    pub redirect_uri: String,
    #[serde(default)]
    pub code_challenge: String,
    #[serde(default)]
    pub code_challenge_method: String,
    pub state: Option<String>,
    #[serde(default)]
    pub resource: String,
    pub scope: Option<String>,
}

/// What is wrong with a request.
enum Problem {
    /// The client or its redirect URI is not established: shown here, never redirected.
    Here(String),
    /// An OAuth error sent back to the (established) redirect URI.
    Back(&'static str, String),
}

/// Checks the request in RFC 6749's order; the client it names when it is sound.
async fn check(state: &AppState, p: &AuthorizeParams) -> Result<Client, (Option<Client>, Problem)> {
    if p.client_id.is_empty() {
        return Err((None, Problem::Here("client_id is missing".into())));
    }
    let client = clients::resolve(state, &p.client_id)
        .await
        .map_err(|m| (None, Problem::Here(m)))?;
    if p.redirect_uri.is_empty() {
        return Err((None, Problem::Here("redirect_uri is missing".into())));
    }
    if !client.allows_redirect(&p.redirect_uri) {
        return Err((
            None,
            Problem::Here(format!(
                "redirect_uri {:?} is not one this client registered",
                p.redirect_uri
            )),
        ));
    }
    let back = |error, m: &str| Err((Some(client.clone()), Problem::Back(error, m.to_owned())));
    if p.response_type != "code" {
        return back("unsupported_response_type", "response_type must be code");
    }
    if p.code_challenge_method != "S256" || !oauth::challenge_well_formed(&p.code_challenge) {
        return back(
            "invalid_request",
            "PKCE is required: code_challenge (43 base64url characters) with code_challenge_method S256",
        );
    }
    let resource = crate::oauth::resource(state);
    if p.resource != resource {
        return back(
            "invalid_target",
            &format!("resource must be this server's MCP endpoint, {resource}"),
        );
    }
    Ok(client)
}

/// The redirect back to the client with `pairs` added to its redirect URI.
fn back_to(
    state: &AppState,
    redirect_uri: &str,
    pairs: &[(&str, &str)],
    st: Option<&str>,
) -> Response {
    let Ok(mut url) = Url::parse(redirect_uri) else {
        return (
            StatusCode::BAD_REQUEST,
            error_page(None, "Bad request", "invalid redirect_uri"),
        )
            .into_response();
    };
    {
        let mut q = url.query_pairs_mut();
        for (k, v) in pairs {
            q.append_pair(k, v);
        }
        if let Some(s) = st {
            q.append_pair("state", s);
        }
        q.append_pair("iss", &crate::oauth::issuer(state));
    }
    match HeaderValue::from_str(url.as_str()) {
        Ok(location) => (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response(),
        Err(_) => (
            StatusCode::BAD_REQUEST,
            error_page(None, "Bad request", "invalid redirect_uri"),
        )
            .into_response(),
    }
}

fn problem_response(state: &AppState, p: &AuthorizeParams, problem: Problem) -> Response {
    match problem {
        Problem::Here(message) => (
            StatusCode::BAD_REQUEST,
            error_page(None, "This authorization request is invalid", &message),
        )
            .into_response(),
        Problem::Back(error, description) => back_to(
            state,
            &p.redirect_uri,
            &[("error", error), ("error_description", &description)],
            p.state.as_deref(),
        ),
    }
}

/// `GET /oauth/authorize`: the consent page (or the sign-in form when signed out).
pub async fn show(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(p): Query<AuthorizeParams>,
) -> Response {
    let client = match check(&state, &p).await {
        Ok(c) => c,
        Err((_, problem)) => return problem_response(&state, &p, problem),
    };
    let Some(s) = session::resolve(&state, &headers).await else {
        return sign_in_page(&p, None).into_response();
    };
    match giveable(&state, &s).await {
        Ok(g) => {
            let mut response = consent_page(&s, &p, &client, &g, None).into_response();
            response
                .headers_mut()
                .insert(header::CONTENT_SECURITY_POLICY, csp(Some(&p.redirect_uri)));
            response
        }
        Err(e) => internal(&s, e),
    }
}

async fn giveable(state: &AppState, s: &Session) -> Result<Giveable, svc_core::Error> {
    let settings = workspaces::settings(&state.store, s.user.workspace).await?;
    Ok(Giveable::of(s.user.user.role, &settings.policy))
}

fn internal(s: &Session, e: svc_core::Error) -> Response {
    tracing::error!(error = %e, "OAuth consent page failed");
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        error_page(
            Some(s),
            "Error",
            "Something went wrong on our side; try again.",
        ),
    )
        .into_response()
}

/// `POST /oauth/authorize`: approve or deny.
pub async fn decide(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(fields): Form<Vec<(String, String)>>,
) -> Response {
    if cross_site(&state, &headers) {
        return (
            StatusCode::FORBIDDEN,
            "approvals are only accepted from this site's own pages",
        )
            .into_response();
    }
    let Some(s) = session::resolve(&state, &headers).await else {
        return (
            StatusCode::UNAUTHORIZED,
            error_page(
                None,
                "Signed out",
                "Sign in again, then retry from your client.",
            ),
        )
            .into_response();
    };
    let one = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let all = |name: &str| -> Vec<String> {
        fields
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    };
    if !one(session::CSRF_FIELD).is_some_and(|t| session::csrf_valid(&s.token, &t)) {
        return (
            StatusCode::FORBIDDEN,
            error_page(
                Some(&s),
                "Forbidden",
                "The form's security token is missing or does not match your session. Start again from your client.",
            ),
        )
            .into_response();
    }
    let p = AuthorizeParams {
        response_type: one("response_type").unwrap_or_default(),
        client_id: one("client_id").unwrap_or_default(),
        redirect_uri: one("redirect_uri").unwrap_or_default(),
        code_challenge: one("code_challenge").unwrap_or_default(),
        code_challenge_method: one("code_challenge_method").unwrap_or_default(),
        state: one("state"),
        resource: one("resource").unwrap_or_default(),
        scope: None,
    };
    let client = match check(&state, &p).await {
        Ok(c) => c,
        Err((_, problem)) => return problem_response(&state, &p, problem),
    };
    if one("decision").as_deref() != Some("approve") {
        tracing::info!(client_id = %client.client_id, "OAuth authorization denied");
        return back_to(
            &state,
            &p.redirect_uri,
            &[
                ("error", "access_denied"),
                ("error_description", "the person declined"),
            ],
            p.state.as_deref(),
        );
    }
    let giveable = match giveable(&state, &s).await {
        Ok(g) => g,
        Err(e) => return internal(&s, e),
    };
    let mut grants = all("grant");
    grants.sort();
    grants.dedup();
    let modes: Vec<String> = svc_core::capabilities::Mode::ALL
        .iter()
        .map(|m| m.as_str().to_owned())
        .filter(|m| all("mode").contains(m))
        .collect();
    let unknown_mode = all("mode")
        .into_iter()
        .find(|m| svc_core::capabilities::Mode::parse(m).is_none());
    let refusal = match giveable.first_not_giveable(&grants) {
        Some(g) => Some(format!(
            "You cannot hand over {g}: it is not a grant you may give in this workspace."
        )),
        None => unknown_mode
            .as_deref()
            .or_else(|| giveable.first_mode_not_giveable(&modes))
            .map(|m| format!("You cannot hand over the mode {m}.")),
    };
    if let Some(message) = refusal {
        return (
            StatusCode::FORBIDDEN,
            consent_page(&s, &p, &client, &giveable, Some(&message)),
        )
            .into_response();
    }
    if grants.is_empty() || modes.is_empty() {
        return (
            StatusCode::BAD_REQUEST,
            consent_page(
                &s,
                &p,
                &client,
                &giveable,
                Some("Choose at least one grant and one mode, or deny."),
            ),
        )
            .into_response();
    }
    let consent = Consent {
        workspace: s.user.workspace,
        user_id: s.user.user.id.clone(),
        client_id: client.client_id.clone(),
        client_name: client.client_name.clone(),
        redirect_uri: p.redirect_uri.clone(),
        code_challenge: p.code_challenge.clone(),
        resource: p.resource.clone(),
        grants,
        allowed_modes: modes,
    };
    match oauth::issue_code(&state.store, consent).await {
        Ok(code) => {
            tracing::info!(client_id = %client.client_id, "OAuth authorization approved");
            back_to(
                &state,
                &p.redirect_uri,
                &[("code", &code)],
                p.state.as_deref(),
            )
        }
        Err(e) => internal(&s, e),
    }
}

/// The request's parameters as hidden fields (they travel with the decision).
fn hidden(p: &AuthorizeParams) -> Markup {
    html! {
        input type="hidden" name="response_type" value=(p.response_type);
        input type="hidden" name="client_id" value=(p.client_id);
        input type="hidden" name="redirect_uri" value=(p.redirect_uri);
        input type="hidden" name="code_challenge" value=(p.code_challenge);
        input type="hidden" name="code_challenge_method" value=(p.code_challenge_method);
        input type="hidden" name="resource" value=(p.resource);
        @if let Some(st) = &p.state { input type="hidden" name="state" value=(st); }
    }
}

fn consent_page(
    s: &Session,
    p: &AuthorizeParams,
    client: &Client,
    giveable: &Giveable,
    error: Option<&str>,
) -> Markup {
    let host = clients::redirect_host(&p.redirect_uri).unwrap_or_default();
    page(
        Some(s),
        "Connect an MCP client",
        "",
        &[],
        html! {
            form.card method="post" action="/oauth/authorize" aria-labelledby="consent-h" {
                h2 id="consent-h" { "“" (client.client_name) "” asks to act in your workspace" }
                @if let Some(e) = error { (alert(e)) }
                p { "After you approve, you are sent to " strong { (host) } "." }
                p.hint { "Client id: " code { (client.client_id) } }
                p { "It will act as an agent key with only what you choose here. You can revoke it at any time on the keys page." }
                (csrf_input(s))
                (hidden(p))
                fieldset {
                    legend { "Capabilities" }
                    div.grid-checks {
                        @for g in giveable.grants.iter().filter(|g| g.starts_with("capability:")) {
                            @let id = format!("og-{}", g.replace([':', '.'], "-"));
                            @let read_only = g.strip_prefix("capability:")
                                .and_then(Capability::parse)
                                .is_some_and(|c| !c.is_decision() && c.side_effect() == svc_core::capabilities::SideEffect::None);
                            div.check {
                                input id=(id) type="checkbox" name="grant" value=(g) checked[read_only];
                                label for=(id) { (g.trim_start_matches("capability:")) }
                            }
                        }
                    }
                }
                fieldset {
                    legend { "Routes" }
                    div.grid-checks {
                        @for g in giveable.grants.iter().filter(|g| !g.starts_with("capability:")) {
                            @let id = format!("or-{}", g.replace(':', "-"));
                            div.check {
                                input id=(id) type="checkbox" name="grant" value=(g);
                                label for=(id) { (g) }
                            }
                        }
                    }
                }
                fieldset {
                    legend { "Modes" }
                    @for m in &giveable.modes {
                        @let id = format!("om-{}", m.as_str());
                        div.check {
                            input id=(id) type="checkbox" name="mode" value=(m.as_str()) checked[*m == svc_core::capabilities::Mode::DryRun];
                            label for=(id) { (m.as_str()) }
                        }
                    }
                }
                div.actions {
                    button.primary type="submit" name="decision" value="approve" { "Approve" }
                    " "
                    button type="submit" name="decision" value="deny" { "Deny" }
                }
            }
        },
    )
}

/// The keys page's list of approved MCP clients (approval keys, `KeyKind::OAuth`), each with
/// its grants and a revoke button (the keys page's own revoke: it ends every token at once).
pub fn approved_clients(s: &Session, keys: &[svc_core::keys::KeyView]) -> Markup {
    let approved: Vec<_> = keys
        .iter()
        .filter(|k| k.kind == svc_core::keys::KeyKind::OAuth)
        .collect();
    html! {
        section.card aria-labelledby="mcp-clients-h" {
            h2 id="mcp-clients-h" { "Approved MCP clients" }
            @if approved.is_empty() {
                p { "No MCP client has been approved. Clients connect to " code { "/mcp" } " and are sent here to ask." }
            } @else {
                div.table-wrap {
                    table id="mcp-clients" {
                        caption.visually-hidden { "MCP clients approved in this workspace" }
                        thead { tr {
                            th scope="col" { "Client" } th scope="col" { "Client id" } th scope="col" { "Grants" }
                            th scope="col" { "Modes" } th scope="col" { "Approved" } th scope="col" { "Last used" }
                            th scope="col" { span.visually-hidden { "Actions" } }
                        } }
                        tbody {
                            @for k in &approved {
                                tr data-client-key=(k.id) {
                                    td { (k.name) @if k.revoked { " " span.badge { "revoked" } } }
                                    td { code { (k.agent) } }
                                    td { @for g in &k.grants { code.grant { (g) } " " } }
                                    td { (k.allowed_modes.join(", ")) }
                                    td { (k.created_at) }
                                    td { (k.last_used_at.as_deref().unwrap_or("never")) }
                                    td {
                                        @if !k.revoked && s.is_owner() {
                                            form method="post" action=(format!("/app/keys/{}/revoke", k.id)) {
                                                (csrf_input(s))
                                                button.danger type="submit" aria-label=(format!("Revoke {}", k.name)) { "Revoke" }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The sign-in form of a signed-out visitor; they come back here after signing in. A person
/// who is signed in but arrived from another site (whose navigation does not carry the
/// `SameSite=Strict` cookie) continues with the link.
fn sign_in_page(p: &AuthorizeParams, error: Option<&str>) -> Markup {
    let next = authorize_path(p);
    page(
        None,
        "Sign in to connect an MCP client",
        "",
        &[],
        html! {
            form.card.narrow method="post" action="/oauth/authorize/login" {
                @if let Some(e) = error { (alert(e)) }
                input type="hidden" name="next" value=(next);
                label for="email" { "Email" }
                input id="email" name="email" type="email" autocomplete="username" required;
                label for="password" { "Password" }
                input id="password" name="password" type="password" autocomplete="current-password" required;
                button type="submit" { "Sign in" }
                p { "Already signed in? " a href=(next) { "Continue" } }
            }
        },
    )
}

/// `/oauth/authorize?...` with the request's parameters (built, never copied from input).
fn authorize_path(p: &AuthorizeParams) -> String {
    let mut url = Url::parse("http://x/oauth/authorize").expect("static URL");
    {
        let mut q = url.query_pairs_mut();
        for (k, v) in [
            ("response_type", p.response_type.as_str()),
            ("client_id", &p.client_id),
            ("redirect_uri", &p.redirect_uri),
            ("code_challenge", &p.code_challenge),
            ("code_challenge_method", &p.code_challenge_method),
            ("resource", &p.resource),
        ] {
            q.append_pair(k, v);
        }
        if let Some(st) = &p.state {
            q.append_pair("state", st);
        }
    }
    format!("/oauth/authorize?{}", url.query().unwrap_or_default())
}

#[derive(Debug, Default, Deserialize)]
pub struct SignInForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    next: String,
}

/// `POST /oauth/authorize/login`: signs in, then back to the consent page.
pub async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: PeerAddr,
    Form(f): Form<SignInForm>,
) -> Response {
    if cross_site(&state, &headers) {
        return (
            StatusCode::FORBIDDEN,
            "sign-in is only accepted from this site's own pages",
        )
            .into_response();
    }
    // Only back to the consent page, whose request is re-checked there (no open redirect).
    let next = Url::parse("http://x")
        .ok()
        .and_then(|base| base.join(&f.next).ok())
        .filter(|u| u.host_str() == Some("x") && u.path() == "/oauth/authorize")
        .map(|u| format!("/oauth/authorize?{}", u.query().unwrap_or_default()))
        .unwrap_or_else(|| "/app/home".to_owned());
    let params: AuthorizeParams = Url::parse("http://x")
        .ok()
        .and_then(|b| b.join(&next).ok())
        .and_then(|u| serde_urlencoded_params(u.query().unwrap_or_default()))
        .unwrap_or_default();
    if let Err(e) = limit_address(&state, peer, "login", LOGIN_PER_MIN_PER_ADDRESS) {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            sign_in_page(&params, Some(&e.message)),
        )
            .into_response();
    }
    let req = LoginRequest {
        email: f.email,
        password: f.password,
    };
    match accounts::login(&state.store, &state.jwt, &state.login_limiter, req).await {
        Ok(t) => {
            let cookie = session::set_cookie(&t.token, session::secure(&state));
            let location = HeaderValue::from_str(&next)
                .unwrap_or_else(|_| HeaderValue::from_static("/app/home"));
            (
                StatusCode::SEE_OTHER,
                [(header::SET_COOKIE, cookie), (header::LOCATION, location)],
            )
                .into_response()
        }
        Err(e) => {
            let status = StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::BAD_REQUEST);
            let message = if status.is_server_error() {
                "Something went wrong on our side; try again.".to_owned()
            } else {
                e.message
            };
            (status, sign_in_page(&params, Some(&message))).into_response()
        }
    }
}

fn serde_urlencoded_params(query: &str) -> Option<AuthorizeParams> {
    serde_urlencoded::from_str(query).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_action_sources_are_origins_or_schemes() {
        assert_eq!(
            form_action_source("http://127.0.0.1:5000/cb?x=1").as_deref(),
            Some("http://127.0.0.1:5000")
        );
        assert_eq!(
            form_action_source("com.example.app:/cb").as_deref(),
            Some("com.example.app:")
        );
    }

    #[test]
    fn the_return_path_is_built_from_the_parameters() {
        let p = AuthorizeParams {
            client_id: "mcpc_a&b".into(),
            state: Some("s t".into()),
            ..AuthorizeParams::default()
        };
        let path = authorize_path(&p);
        assert!(path.starts_with("/oauth/authorize?"), "{path}");
        assert!(
            path.contains("client_id=mcpc_a%26b") && path.contains("state=s+t"),
            "{path}"
        );
    }
}
