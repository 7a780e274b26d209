//! The brand voice editor: the workspace's brand profile (`brand::put`, as
//! `PUT /v1/brand-context`: empty text clears a field) and a preview of an email drafted in
//! that voice. The preview is `draft.outreach` through the gateway as the prospect buddy (so it
//! is charged and receipted like any draft); its HTML is shown in a sandboxed frame.

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::{html, Markup};
use serde_json::{json, Map, Value as Json};

use super::format;
use super::forms::{refused_status, see_other};
use super::layout::{alert, csrf_input, page as shell};
use super::respond::{failed, is_htmx, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_agents::buddies::Buddy;
use svc_agents::chat::principal;
use svc_core::capabilities::Capability;
use svc_core::plumbing::ids;
use svc_domains::brand::{self, BrandContext};
use svc_domains::customers;
use svc_gateway::{self as gateway, InvokeRequest};

const TEXTS: &[(&str, &str)] = &[
    ("businessName", "Business name"),
    ("website", "Website"),
    ("description", "What you do"),
    ("audience", "Who you serve"),
];
const DIALS: &[(&str, &str)] = &[
    ("formality", "Formality"),
    ("humor", "Humor"),
    ("respect", "Respect"),
    ("energy", "Energy"),
];
const LINKS: &[(&str, &str)] = &[
    ("privacy", "Privacy policy"),
    ("terms", "Terms"),
    ("pricing", "Pricing"),
    ("download", "Download"),
];

/// The `PUT /v1/brand-context` body of the submitted form: texts (empty = `null`, cleared),
/// the four dials, and the links (empty ones left out, so the stored link stays).
pub fn update_body(form: &[(String, String)]) -> Json {
    let field = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_owned())
    };
    let mut body = Map::new();
    for (name, _) in TEXTS {
        if let Some(v) = field(name) {
            body.insert(
                (*name).into(),
                if v.is_empty() {
                    Json::Null
                } else {
                    Json::String(v)
                },
            );
        }
    }
    let mut voice = Map::new();
    for (name, _) in DIALS {
        if let Some(n) = field(name).and_then(|v| v.parse::<u8>().ok()) {
            voice.insert((*name).into(), json!(n));
        }
    }
    if !voice.is_empty() {
        body.insert("voice".into(), Json::Object(voice));
    }
    let mut links = Map::new();
    for (name, _) in LINKS {
        if let Some(v) = field(&format!("link_{name}")).filter(|v| !v.is_empty()) {
            links.insert((*name).into(), Json::String(v));
        }
    }
    if !links.is_empty() {
        body.insert("links".into(), Json::Object(links));
    }
    Json::Object(body)
}

/// `?saved=1` after a successful save (post/redirect/get); `?customer_q=` searches the
/// preview's customers.
#[derive(Debug, Default, serde::Deserialize)]
pub struct Saved {
    pub saved: Option<String>,
    #[serde(default)]
    pub customer_q: String,
}

/// Customers the preview's picker offers at once.
const PICKER: usize = 20;

/// The preview's customers: those matching `q` anywhere in the workspace (email, name, phone,
/// external id, any trait: `customers::search`), with an email to draft to; the most recently
/// seen first.
async fn picker(
    state: &AppState,
    s: &Session,
    q: &str,
) -> Result<customers::CustomerList, Failure> {
    let query = customers::CustomerQuery {
        q: q.trim()
            .chars()
            .take(customers::search::QUERY_MAX)
            .collect(),
        has: Some("email".to_owned()),
        limit: PICKER,
        ..Default::default()
    };
    customers::list(&state.store, s.user.workspace, query)
        .await
        .map_err(|e| failed(s, e))
}

/// The picker's list and count (also htmx's answer while typing in the search field).
fn picker_block(list: &customers::CustomerList, q: &str) -> Markup {
    html! {
        label for="preview-customer" { "Customer" }
        select id="preview-customer" name="customer" required aria-describedby="preview-count" {
            @for c in &list.customers {
                option value=(c.id) {
                    @match (c.name.as_deref(), c.email.as_deref()) {
                        (Some(n), Some(e)) => { (n) " <" (e) ">" },
                        (None, Some(e)) => { (e) },
                        (Some(n), None) => { (n) },
                        (None, None) => { (c.id) },
                    }
                }
            }
        }
        p.hint id="preview-count" role="status" {
            @if list.customers.is_empty() {
                "No customer with an email matches “" (q.trim()) "”."
            } @else if q.trim().is_empty() {
                "The " (list.customers.len()) " most recently seen of " (format::count(list.total as u64)) " customers with an email; search to find any other."
            } @else if list.total > list.customers.len() {
                (format::count(list.total as u64)) " customers match; the " (list.customers.len()) " most recently seen are listed."
            } @else {
                (format::count(list.total as u64)) @if list.total == 1 { " customer matches." } @else { " customers match." }
            }
        }
    }
}

/// `GET /app/brand/customers?customer_q=`: the picker's list for what was typed (htmx).
pub async fn customers_picker(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Query(q): Query<Saved>,
) -> Result<Markup, Failure> {
    let list = picker(&state, &s, &q.customer_q).await?;
    Ok(picker_block(&list, &q.customer_q))
}

/// A refused save: what was typed, and the message with the field it is about.
struct Typed<'a> {
    form: &'a [(String, String)],
    field: String,
    message: String,
}

/// `GET /app/brand`.
pub async fn page(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Query(q): Query<Saved>,
) -> Result<Markup, Failure> {
    let ctx = brand::get(&state.store, &state.sealer, s.user.workspace)
        .await
        .map_err(|e| failed(&s, e))?;
    let notice = q.saved.is_some().then_some(Ok("Brand voice saved."));
    render(&state, &s, &ctx, notice, None, &q.customer_q).await
}

/// `POST /app/brand`: save.
pub async fn save(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Form(form): Form<Vec<(String, String)>>,
) -> Result<Response, Failure> {
    let ws = s.user.workspace;
    match brand::put(&state.store, state.sealer.clone(), ws, update_body(&form)).await {
        Ok(_) => Ok(see_other("/app/brand?saved=1")),
        Err(e) if e.code.status() < 500 => {
            let ctx = brand::get(&state.store, &state.sealer, ws)
                .await
                .map_err(|e| failed(&s, e))?;
            let field = e
                .details
                .as_ref()
                .and_then(|d| d.get("field"))
                .and_then(Json::as_str)
                .map(str::to_owned)
                .or_else(|| e.message.split_once(':').map(|(f, _)| f.trim().to_owned()))
                .unwrap_or_default();
            let typed = Typed {
                form: &form,
                field,
                message: e.message.clone(),
            };
            Ok((
                refused_status(&e),
                render(&state, &s, &ctx, None, Some(&typed), "").await?,
            )
                .into_response())
        }
        Err(e) => Err(failed(&s, e)),
    }
}

/// `POST /app/brand/preview`: draft an email in the saved voice.
pub async fn preview(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    headers: HeaderMap,
    Form(form): Form<Vec<(String, String)>>,
) -> Result<Response, Failure> {
    let field = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let key = principal::ensure(&state.store, s.user.workspace, Buddy::Prospect)
        .await
        .map_err(|e| failed(&s, e))?;
    let req = InvokeRequest {
        mode: Some("execute".into()),
        source: Some(super::playbook_cards::SOURCE.into()),
        idempotency_key: None,
        input: Some(
            json!({"customer": field("customer"), "intent": field("intent"), "channel": "email"}),
        ),
    };
    let block = match gateway::invoke(
        &state,
        &key,
        Capability::DraftOutreach.id(),
        req,
        ids::request_id(),
    )
    .await
    {
        Ok(out) => {
            let body: Json = serde_json::from_str(&out.body).unwrap_or(Json::Null);
            drafted(&body["result"])
        }
        Err(e) if e.code.status() < 500 => alert(&e.message),
        Err(e) => return Err(failed(&s, e)),
    };
    if is_htmx(&headers) {
        return Ok(block.into_response());
    }
    Ok(shell(Some(&s), "Drafted email", "/app/brand", &[], block).into_response())
}

fn drafted(result: &Json) -> Markup {
    let text = |k: &str| result.get(k).and_then(Json::as_str).unwrap_or("");
    html! {
        div.email-preview id="draft" {
            p { span.label { "Subject: " } strong.subject { (text("subject")) } }
            @if result.get("body_html").and_then(Json::as_str).is_some() {
                // No scripts, no same origin: the frame can only show the email.
                iframe.email-frame sandbox="" title="The drafted email as it would be sent" srcdoc=(text("body_html")) {}
            }
            details { summary { "Plain text" } div.email-body { (text("body_text")) } }
        }
    }
}

async fn render(
    state: &AppState,
    s: &Session,
    ctx: &BrandContext,
    notice: Option<Result<&str, &str>>,
    typed: Option<&Typed<'_>>,
    customer_q: &str,
) -> Result<Markup, Failure> {
    let list = picker(state, s, customer_q).await?;
    let value = serde_json::to_value(ctx).unwrap_or(Json::Null);
    // After a refused save the form shows what was typed, not what is stored.
    let typed_value = |name: &str| {
        typed.map(|t| {
            t.form
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        })
    };
    let text = |k: &str| {
        typed_value(k)
            .unwrap_or_else(|| value.get(k).and_then(Json::as_str).unwrap_or("").to_owned())
    };
    let voice = ctx.voice.clone().unwrap_or_default();
    let dial = |k: &str| {
        let stored = match k {
            "formality" => voice.formality,
            "humor" => voice.humor,
            "respect" => voice.respect,
            _ => voice.energy,
        };
        typed_value(k)
            .and_then(|v| v.parse::<u8>().ok())
            .unwrap_or(stored)
    };
    let link = |k: &str| {
        typed_value(&format!("link_{k}")).unwrap_or_else(|| {
            value["links"]
                .get(k)
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_owned()
        })
    };
    // The refusal's message beside the field it names (`website`, `links.pricing`, ...).
    let error_at = |names: &[String]| {
        typed
            .filter(|t| names.contains(&t.field))
            .map(|t| alert(&t.message))
    };
    let placed = typed.is_some_and(|t| {
        TEXTS.iter().any(|(n, _)| *n == t.field)
            || DIALS.iter().any(|(n, _)| t.field == format!("voice.{n}"))
            || LINKS.iter().any(|(n, _)| t.field == format!("links.{n}"))
    });
    Ok(shell(
        Some(s),
        "Brand voice",
        "/app/brand",
        &[],
        html! {
            div.columns {
                form.card method="post" action="/app/brand" aria-label="Brand profile" {
                    (csrf_input(s))
                    @match notice {
                        Some(Ok(m)) => p.ok role="status" { (m) },
                        Some(Err(m)) => (alert(m)),
                        None => {},
                    }
                    @if let Some(t) = typed.filter(|_| !placed) { (alert(&t.message)) }
                    @for (name, label) in TEXTS {
                        label for=(format!("brand-{name}")) { (label) }
                        @if *name == "description" || *name == "audience" {
                            textarea id=(format!("brand-{name}")) name=(name) rows="3" { (text(name)) }
                        } @else {
                            input id=(format!("brand-{name}")) name=(name) type="text" value=(text(name));
                        }
                        @if let Some(m) = error_at(&[(*name).to_owned()]) { (m) }
                    }
                    fieldset {
                        legend { "Voice (1 to 5)" }
                        @for (name, label) in DIALS {
                            label for=(format!("dial-{name}")) { (label) ": " output id=(format!("dial-{name}-value")) { (dial(name)) } }
                            input id=(format!("dial-{name}")) name=(name) type="range" min="1" max="5" step="1" value=(dial(name))
                                data-output=(format!("dial-{name}-value"));
                            @if let Some(m) = error_at(&[format!("voice.{name}")]) { (m) }
                        }
                    }
                    fieldset {
                        legend { "Links " span.hint { "(http or https)" } }
                        @for (name, label) in LINKS {
                            label for=(format!("link-{name}")) { (label) }
                            input id=(format!("link-{name}")) name=(format!("link_{name}")) type="url" value=(link(name));
                            @if let Some(m) = error_at(&[format!("links.{name}")]) { (m) }
                        }
                    }
                    button type="submit" { "Save brand voice" }
                }
                section.card aria-labelledby="preview-h" {
                    h2 id="preview-h" { "Preview a drafted email" }
                    p.hint { "Drafted in the saved voice by the prospect buddy (draft.outreach, 2 credits)." }
                    @if list.total == 0 && customer_q.trim().is_empty() {
                        p.hint { "Preview needs a customer with an email; ingest an event first." }
                    } @else {
                        // The search is a GET form of its own (it works without JavaScript);
                        // htmx refreshes the list while typing.
                        form id="customer-search" method="get" action="/app/brand" role="search" {
                            label for="preview-find" { "Find a customer " span.hint { "(name, email, phone, any trait)" } }
                            div.search-row {
                                input id="preview-find" name="customer_q" type="search" value=(customer_q)
                                    autocomplete="off" maxlength=(customers::search::QUERY_MAX)
                                    hx-get="/app/brand/customers" hx-trigger="input changed delay:250ms, search" hx-target="#preview-customers";
                                button type="submit" { "Find" }
                            }
                        }
                        form method="post" action="/app/brand/preview" hx-post="/app/brand/preview" hx-target="#draft-result" {
                            (csrf_input(s))
                            div id="preview-customers" { (picker_block(&list, customer_q)) }
                            label for="preview-intent" { "What the email is for" }
                            input id="preview-intent" name="intent" type="text" required value="follow up on the demo";
                            button.primary type="submit" { "Draft" }
                        }
                        div id="draft-result" aria-live="polite" {}
                    }
                }
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_becomes_the_update_body() {
        let f = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let body = update_body(&[
            f("csrf", "x"),
            f("businessName", " Acme "),
            f("website", ""),
            f("formality", "5"),
            f("energy", "2"),
            f("link_pricing", "https://acme.test/pricing"),
            f("link_terms", ""),
        ]);
        assert_eq!(
            body,
            json!({"businessName": "Acme", "website": null,
                   "voice": {"formality": 5, "energy": 2},
                   "links": {"pricing": "https://acme.test/pricing"}})
        );
    }
}
