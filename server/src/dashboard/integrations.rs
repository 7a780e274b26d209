//! Integrations: connect (or update), test and disconnect each outside provider, through the
//! same `integrations` functions as `/api/v1/integrations`. Owners only for every change, as
//! in the API. The page also offers the action playbook cards (see `playbook_cards`) whose
//! integrations are connected.

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::{html, Markup};
use serde_json::{Map, Value as Json};

use super::format;
use super::forms::{refused_status, see_other, Refusal};
use super::layout::{alert, csrf_input, page as shell};
use super::playbook_cards;
use super::respond::{failed, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_core::error::Error;
use svc_core::integration_kind::Kind;
use svc_domains::integrations::{self, IntegrationView};

/// How a config field is edited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Text,
    Number,
    Secret,
    Choice(&'static [&'static str]),
    Multiline,
}

/// One field of a kind's connect form: (name, label, input, required).
pub type Field = (&'static str, &'static str, Input, bool);

/// The connect form of each kind (the API's config fields, docs/outbound.md).
pub fn fields(kind: Kind) -> &'static [Field] {
    use Input::*;
    match kind {
        Kind::Smtp => &[
            ("host", "Host", Text, true),
            ("port", "Port", Number, true),
            (
                "security",
                "Security",
                Choice(&["starttls", "tls", "none"]),
                true,
            ),
            ("username", "Username", Text, false),
            ("password", "Password", Secret, false),
            ("from", "From", Text, true),
            ("reply_to", "Reply-To", Text, false),
            ("ca_cert_pem", "CA certificate (PEM)", Multiline, false),
        ],
        Kind::Voice => &[
            ("base_url", "API base URL", Text, true),
            ("account_sid", "Account SID", Text, true),
            ("auth_token", "Auth token", Secret, true),
            ("from_number", "From number", Text, true),
        ],
        Kind::Customerio => &[
            ("site_id", "Site id", Text, true),
            ("api_key", "API key", Secret, true),
            ("region", "Region", Choice(&["us", "eu"]), true),
            ("base_url", "Base URL (optional)", Text, false),
        ],
        Kind::Llm => &[
            ("base_url", "API base URL", Text, true),
            ("model", "Model", Text, true),
            ("api_key", "API key", Secret, false),
            ("timeout_s", "Timeout (seconds)", Number, false),
        ],
    }
}

/// The PUT body of a submitted connect form: empty fields are left out (an omitted secret
/// keeps the stored one), numbers are sent as numbers.
pub fn config_body(kind: Kind, form: &[(String, String)]) -> Json {
    let mut body = Map::new();
    for (name, _, input, _) in fields(kind) {
        let Some((_, value)) = form.iter().find(|(k, _)| k == name) else {
            continue;
        };
        let value = if *input == Input::Multiline {
            value.clone()
        } else {
            value.trim().to_owned()
        };
        if value.is_empty() {
            continue;
        }
        let json = match (input, value.parse::<u64>()) {
            (Input::Number, Ok(n)) => Json::from(n),
            _ => Json::String(value),
        };
        body.insert((*name).to_owned(), json);
    }
    Json::Object(body)
}

fn kind_of(name: &str) -> Result<Kind, Error> {
    Kind::parse(name).ok_or_else(|| Error::not_found("integration kind"))
}

/// The outcome a redirect names: `?done=connected|tested|disconnected&kind=smtp`.
#[derive(Debug, Default, serde::Deserialize)]
pub struct Done {
    pub done: Option<String>,
    pub kind: Option<String>,
}

/// `GET /app/integrations`.
pub async fn page(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Query(done): Query<Done>,
) -> Result<Markup, Failure> {
    let notice = match (
        done.done.as_deref(),
        done.kind.as_deref().and_then(Kind::parse),
    ) {
        (Some(what @ ("connected" | "tested" | "disconnected")), Some(kind)) => {
            Some(Notice::Done(kind, what.to_owned()))
        }
        _ => None,
    };
    render(&state, &s, notice).await
}

fn done(kind: Kind, what: &str) -> String {
    format!(
        "/app/integrations?done={what}&kind={k}#integration-{k}",
        k = kind.as_str()
    )
}

/// `POST /app/integrations/{kind}`: connect or update.
pub async fn connect(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Path(name): Path<String>,
    Form(form): Form<Vec<(String, String)>>,
) -> Result<Response, Failure> {
    let kind = kind_of(&name).map_err(|e| failed(&s, e))?;
    s.require_owner("change integrations")
        .map_err(|e| failed(&s, e))?;
    let body = config_body(kind, &form);
    let outcome = integrations::put(
        &state.store,
        &state.sealer,
        state.http.destinations(),
        s.user.workspace,
        kind,
        body,
    )
    .await;
    respond(
        &state,
        &s,
        kind,
        form,
        outcome.map(|_| done(kind, "connected")),
    )
    .await
}

/// `POST /app/integrations/{kind}/test`: a live check with the stored config.
pub async fn test(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Path(name): Path<String>,
) -> Result<Response, Failure> {
    let kind = kind_of(&name).map_err(|e| failed(&s, e))?;
    s.require_owner("change integrations")
        .map_err(|e| failed(&s, e))?;
    let outcome = integrations::test(
        &state.store,
        &state.sealer,
        &state.http,
        s.user.workspace,
        kind,
    )
    .await;
    // Passed or failed, the result is stored as the integration's last test: the page shows it.
    respond(
        &state,
        &s,
        kind,
        Vec::new(),
        outcome.map(|_| done(kind, "tested")),
    )
    .await
}

/// `POST /app/integrations/{kind}/disconnect`.
pub async fn disconnect(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Path(name): Path<String>,
) -> Result<Response, Failure> {
    let kind = kind_of(&name).map_err(|e| failed(&s, e))?;
    s.require_owner("change integrations")
        .map_err(|e| failed(&s, e))?;
    let outcome = integrations::delete(&state.store, s.user.workspace, kind).await;
    respond(
        &state,
        &s,
        kind,
        Vec::new(),
        outcome.map(|_| done(kind, "disconnected")),
    )
    .await
}

/// A redirect after success; the page again (4xx) with the typed values after a refusal.
async fn respond(
    state: &AppState,
    s: &Session,
    kind: Kind,
    form: Vec<(String, String)>,
    outcome: Result<String, Error>,
) -> Result<Response, Failure> {
    match outcome {
        Ok(location) => Ok(see_other(&location)),
        Err(e) if e.code.status() < 500 => Ok((
            refused_status(&e),
            render(state, s, Some(Notice::Refused(kind, form, Refusal::of(&e)))).await?,
        )
            .into_response()),
        Err(e) => Err(failed(s, e)),
    }
}

/// What the page says on one integration's card.
#[derive(Debug)]
pub enum Notice {
    /// A redirect's outcome code.
    Done(Kind, String),
    /// A refused connect form: the values typed and the message.
    Refused(Kind, Vec<(String, String)>, Refusal),
}

impl Notice {
    fn kind(&self) -> Kind {
        match self {
            Notice::Done(k, _) | Notice::Refused(k, _, _) => *k,
        }
    }
}

async fn render(state: &AppState, s: &Session, notice: Option<Notice>) -> Result<Markup, Failure> {
    let list = integrations::list(&state.store, &state.sealer, s.user.workspace)
        .await
        .map_err(|e| failed(s, e))?;
    let cards = playbook_cards::offered(state, s, &list.integrations).await?;
    Ok(shell(
        Some(s),
        "Integrations",
        "/app/integrations",
        &[],
        html! {
            section aria-labelledby="cards-h" {
                h2 id="cards-h" { "Action playbooks" }
                @if cards.0.is_empty() {
                    p.hint id="no-cards" { "Connect an integration to get recommended one-shot actions." }
                }
                div.cards id="playbook-cards" { (cards) }
            }
            div.cards {
                @for i in &list.integrations {
                    (card(s, i, notice.as_ref().filter(|n| n.kind() == i.kind)))
                }
            }
        },
    ))
}

fn card(s: &Session, i: &IntegrationView, notice: Option<&Notice>) -> Markup {
    let kind = i.kind.as_str();
    let config = i.config.as_ref();
    let (typed, refusal) = match notice {
        Some(Notice::Refused(_, form, r)) => (Some(form.as_slice()), Some(r)),
        _ => (None, None),
    };
    let names: Vec<&str> = fields(i.kind).iter().map(|f| f.0).collect();
    let done = match notice {
        Some(Notice::Done(k, what)) => Some(match what.as_str() {
            "tested" => match &i.last_test {
                Some(t) if t.ok => format!("{} test passed: {}", k.label(), t.message),
                Some(t) => format!("{} test failed: {}", k.label(), t.message),
                None => format!("{} tested.", k.label()),
            },
            other => format!("{} {other}.", k.label()),
        }),
        _ => None,
    };
    let test_failed = matches!(notice, Some(Notice::Done(_, w)) if w == "tested")
        && i.last_test.as_ref().is_some_and(|t| !t.ok);
    html! {
        section.card.integration id=(format!("integration-{kind}")) aria-labelledby=(format!("int-{kind}-h")) data-connected=(i.connected) {
            h2 id=(format!("int-{kind}-h")) {
                (i.kind.label()) " "
                // `data-api` with `data-yes` / `data-no`: what the API's boolean is shown as
                // (checked by tests/tests/pages.rs).
                span.state.ok[i.connected].hint[!i.connected]
                    data-api=(format!("/api/v1/integrations#/integrations/[kind={kind}]/connected"))
                    data-yes="connected" data-no="not connected" {
                    @if i.connected { "connected" } @else { "not connected" }
                }
            }
            @if let Some(m) = &done {
                @if test_failed { (alert(m)) } @else { p.ok role="status" { (m) } }
            }
            @if let Some(r) = refusal { @if let Some(m) = r.general(&names) { (m) } }
            @if !i.capabilities.is_empty() {
                p.hint { "Unlocks: " @for c in &i.capabilities { code { (c) } " " } }
            }
            @if let Some(t) = &i.last_test {
                p.hint { "Last test " (format::time(&t.at)) ": "
                    span data-api=(format!("/api/v1/integrations#/integrations/[kind={kind}]/last_test/ok")) data-yes="passed" data-no="failed" { @if t.ok { "passed" } @else { "failed" } }
                    " — " (t.message) }
            }
            @if s.is_owner() {
                details open[!i.connected || refusal.is_some()] {
                    summary { @if i.connected { "Change settings" } @else { "Connect" } }
                    form.card method="post" action=(format!("/app/integrations/{kind}")) {
                        (csrf_input(s))
                        @for (name, label, input, required) in fields(i.kind) {
                            @let id = format!("{kind}-{name}");
                            @let stored = config.and_then(|c| c.get(*name)).map(|v| match v { Json::String(t) => t.clone(), other => other.to_string() });
                            // After a refusal: what was typed (never a secret, which is not echoed).
                            @let current = match typed { Some(f) if *input != Input::Secret => Some(super::forms::value(f, name).to_owned()), _ => stored };
                            label for=(id) { (label) @if !required { " " span.hint { "(optional)" } } }
                            @match input {
                                Input::Choice(options) => select id=(id) name=(name) {
                                    @for o in *options { option value=(o) selected[current.as_deref() == Some(*o)] { (o) } }
                                },
                                Input::Multiline => textarea id=(id) name=(name) rows="3" { (typed.map(|f| super::forms::value(f, name)).unwrap_or_default()) },
                                Input::Secret => input id=(id) name=(name) type="password" autocomplete="off"
                                    placeholder=(current.clone().unwrap_or_default()) required[*required && !i.connected];,
                                Input::Number => input id=(id) name=(name) type="number" value=(current.clone().unwrap_or_default()) required[*required];,
                                Input::Text => input id=(id) name=(name) type="text" value=(current.clone().unwrap_or_default()) required[*required];,
                            }
                            @if let Some(m) = refusal.and_then(|r| r.at(&[name])) { (m) }
                        }
                        button type="submit" { @if i.connected { "Save" } @else { "Connect" } }
                    }
                }
                @if i.connected {
                    div.actions {
                        form method="post" action=(format!("/app/integrations/{kind}/test")) {
                            (csrf_input(s))
                            button type="submit" { "Test" }
                        }
                        form method="post" action=(format!("/app/integrations/{kind}/disconnect")) {
                            (csrf_input(s))
                            button.danger type="submit" { "Disconnect" }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn form_becomes_the_config_body() {
        let f = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let body = config_body(
            Kind::Smtp,
            &[
                f("csrf", "x"),
                f("host", " 127.0.0.1 "),
                f("port", "2525"),
                f("security", "none"),
                f("password", ""),
                f("from", "a@b.io"),
            ],
        );
        assert_eq!(
            body,
            json!({"host": "127.0.0.1", "port": 2525, "security": "none", "from": "a@b.io"})
        );
    }
}
