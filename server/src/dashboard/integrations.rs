//! Integrations: connect (or update), test and disconnect each outside provider, through the
//! same `integrations` functions as `/api/v1/integrations`. Owners only for every change, as
//! in the API. The page also offers the action playbook cards (see `playbook_cards`) whose
//! integrations are connected.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::{html, Markup};
use serde_json::{Map, Value as Json};

use super::layout::{alert, csrf_input, page as shell};
use super::playbook_cards;
use super::respond::{failed, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_core::error::{Code, Error};
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

/// `GET /app/integrations`.
pub async fn page(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
) -> Result<Markup, Failure> {
    render(&state, &s, None).await
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
        outcome.map(|_| format!("{} connected.", kind.label())),
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
    let outcome = match outcome {
        Ok(r) if r.ok => Ok(format!("{} test passed: {}", kind.label(), r.message)),
        Ok(r) => Err(Error::new(
            Code::InvalidInput,
            format!("{} test failed: {}", kind.label(), r.message),
        )),
        Err(e) => Err(e),
    };
    respond(&state, &s, kind, outcome).await
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
        outcome.map(|_| format!("{} disconnected.", kind.label())),
    )
    .await
}

async fn respond(
    state: &AppState,
    s: &Session,
    kind: Kind,
    outcome: Result<String, Error>,
) -> Result<Response, Failure> {
    match outcome {
        Ok(message) => Ok(render(state, s, Some((kind, Ok(message))))
            .await?
            .into_response()),
        Err(e) if e.code.status() < 500 => {
            let status = StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::BAD_REQUEST);
            Ok((
                status,
                render(state, s, Some((kind, Err(e.message)))).await?,
            )
                .into_response())
        }
        Err(e) => Err(failed(s, e)),
    }
}

type Notice = (Kind, Result<String, String>);

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
                    (card(s, i, notice.as_ref().filter(|(k, _)| *k == i.kind).map(|(_, n)| n)))
                }
            }
        },
    ))
}

fn card(s: &Session, i: &IntegrationView, notice: Option<&Result<String, String>>) -> Markup {
    let kind = i.kind.as_str();
    let config = i.config.as_ref();
    html! {
        section.card.integration id=(format!("integration-{kind}")) aria-labelledby=(format!("int-{kind}-h")) data-connected=(i.connected) {
            h2 id=(format!("int-{kind}-h")) {
                (i.kind.label()) " "
                @if i.connected { span.ok.state { "connected" } } @else { span.hint.state { "not connected" } }
            }
            @match notice {
                Some(Ok(m)) => p.ok role="status" { (m) },
                Some(Err(m)) => (alert(m)),
                None => {},
            }
            @if !i.capabilities.is_empty() {
                p.hint { "Unlocks: " @for c in &i.capabilities { code { (c) } " " } }
            }
            @if let Some(t) = &i.last_test {
                p.hint { "Last test " (t.at) ": " @if t.ok { "passed" } @else { "failed" } " — " (t.message) }
            }
            @if s.is_owner() {
                details open[!i.connected] {
                    summary { @if i.connected { "Change settings" } @else { "Connect" } }
                    form.card method="post" action=(format!("/app/integrations/{kind}")) {
                        (csrf_input(s))
                        @for (name, label, input, required) in fields(i.kind) {
                            @let id = format!("{kind}-{name}");
                            @let current = config.and_then(|c| c.get(*name)).map(|v| match v { Json::String(t) => t.clone(), other => other.to_string() });
                            label for=(id) { (label) @if !required { " " span.hint { "(optional)" } } }
                            @match input {
                                Input::Choice(options) => select id=(id) name=(name) {
                                    @for o in *options { option value=(o) selected[current.as_deref() == Some(*o)] { (o) } }
                                },
                                Input::Multiline => textarea id=(id) name=(name) rows="3" {},
                                Input::Secret => input id=(id) name=(name) type="password" autocomplete="off"
                                    placeholder=(current.clone().unwrap_or_default()) required[*required && !i.connected];,
                                Input::Number => input id=(id) name=(name) type="number" value=(current.clone().unwrap_or_default()) required[*required];,
                                Input::Text => input id=(id) name=(name) type="text" value=(current.clone().unwrap_or_default()) required[*required];,
                            }
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
