//! Agent keys: create (the plaintext is shown once, with a copy button), their grants and
//! modes, last use, revoke. Creating and revoking are for the workspace's owners, as in the API.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use maud::{html, Markup};

use super::layout::{alert, csrf_input, page as shell};
use super::respond::{failed, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_core::capabilities::{Capability, Mode};
use svc_core::keys::{self, CreateKey, CreatedKey, KeyView, RouteGrant};

/// The create form as submitted: repeated `grant` and `mode` fields.
pub fn create_request(fields: &[(String, String)]) -> CreateKey {
    let all = |name: &str| -> Vec<String> {
        fields
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    };
    let one = |name: &str| all(name).into_iter().next().unwrap_or_default();
    let agent = one("agent");
    CreateKey {
        name: one("name"),
        agent: (!agent.trim().is_empty()).then_some(agent),
        scopes: Vec::new(),
        grants: all("grant"),
        allowed_modes: Some(all("mode")).filter(|m| !m.is_empty()),
        auto_run: one("auto_run") == "on",
        rate_limit_per_min: None,
        quota_override_monthly: None,
    }
}

/// `GET /app/keys`.
pub async fn page(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
) -> Result<Markup, Failure> {
    render(&state, &s, None, None).await
}

/// `POST /app/keys`: mint a key and show its plaintext once.
pub async fn create(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Form(fields): Form<Vec<(String, String)>>,
) -> Result<Response, Failure> {
    s.require_owner("create or revoke keys")
        .map_err(|e| failed(&s, e))?;
    let req = create_request(&fields);
    match keys::create(
        &state.store,
        &state.usage,
        s.user.workspace,
        &s.user.user.id,
        req,
    )
    .await
    {
        Ok(created) => {
            tracing::info!(key_id = %created.meta.id, "agent key created (dashboard)");
            Ok((
                StatusCode::CREATED,
                render(&state, &s, Some(&created), None).await?,
            )
                .into_response())
        }
        Err(e) if e.code.status() < 500 => {
            let status = StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::BAD_REQUEST);
            Ok((status, render(&state, &s, None, Some(&e.message)).await?).into_response())
        }
        Err(e) => Err(failed(&s, e)),
    }
}

/// `POST /app/keys/{id}/revoke`.
pub async fn revoke(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Path(id): Path<String>,
) -> Result<Redirect, Failure> {
    s.require_owner("create or revoke keys")
        .map_err(|e| failed(&s, e))?;
    let revoked = keys::revoke(&state.store, &state.usage, s.user.workspace, &id)
        .await
        .map_err(|e| failed(&s, e))?;
    tracing::info!(key_id = %revoked.id, "key revoked (dashboard)");
    Ok(Redirect::to("/app/keys"))
}

async fn render(
    state: &AppState,
    s: &Session,
    created: Option<&CreatedKey>,
    error: Option<&str>,
) -> Result<Markup, Failure> {
    let list = keys::list(&state.store, &state.usage, s.user.workspace)
        .await
        .map_err(|e| failed(s, e))?;
    Ok(shell(
        Some(s),
        "Agent keys",
        "/app/keys",
        &[],
        html! {
            @if let Some(c) = created {
                section.card.created role="status" aria-labelledby="new-h" {
                    h2 id="new-h" { "Key “" (c.meta.name) "” created" }
                    p { "Copy it now: it is not stored and cannot be shown again." }
                    div.copy-row {
                        input id="new-key" type="text" readonly value=(c.key) aria-label="The new key";
                        button type="button" data-copy="new-key" { "Copy" }
                    }
                }
            }
            div.table-wrap {
                table id="keys" {
                    caption.visually-hidden { "Keys of the workspace" }
                    thead { tr {
                        th scope="col" { "Name" } th scope="col" { "Agent" } th scope="col" { "Key" }
                        th scope="col" { "Grants" } th scope="col" { "Modes" } th scope="col" { "Last used" }
                        th scope="col" { span.visually-hidden { "Actions" } }
                    } }
                    tbody {
                        @if list.keys.is_empty() { tr { td colspan="7" { "No keys yet." } } }
                        @for k in list.keys.iter().filter(|k| k.kind != keys::KeyKind::OAuth) { (row(s, k)) }
                    }
                }
            }
            (super::oauth_consent::approved_clients(s, &list.keys))
            @if s.is_owner() { (form(s, error)) }
        },
    ))
}

fn row(s: &Session, k: &KeyView) -> Markup {
    html! {
        tr data-key=(k.id) {
            td { (k.name) @if k.revoked { " " span.badge { "revoked" } } }
            td { (k.agent) }
            td { code { (k.prefix) "…" (k.last_four) } }
            td { @for g in &k.grants { code.grant { (g) } " " } }
            td { (k.allowed_modes.join(", ")) @if k.auto_run { " (auto-run)" } }
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

fn form(s: &Session, error: Option<&str>) -> Markup {
    html! {
        form.card method="post" action="/app/keys" aria-labelledby="create-h" {
            h2 id="create-h" { "Create a key" }
            (csrf_input(s))
            @if let Some(e) = error { (alert(e)) }
            label for="key-name" { "Name" }
            input id="key-name" name="name" type="text" required maxlength="200";
            label for="key-agent" { "Agent label " span.hint { "(defaults to the name)" } }
            input id="key-agent" name="agent" type="text" maxlength="200";
            fieldset {
                legend { "Capabilities" }
                div.grid-checks {
                    @for c in Capability::ALL {
                        @let id = format!("g-{}", c.id().replace('.', "-"));
                        div.check {
                            input id=(id) type="checkbox" name="grant" value=(format!("capability:{}", c.id()));
                            label for=(id) { (c.id()) }
                        }
                    }
                }
            }
            fieldset {
                legend { "Routes" }
                div.grid-checks {
                    @for g in RouteGrant::ALL {
                        @let id = format!("r-{}", g.as_str().replace(':', "-"));
                        div.check {
                            input id=(id) type="checkbox" name="grant" value=(g.as_str());
                            label for=(id) { (g.as_str()) }
                        }
                    }
                }
            }
            fieldset {
                legend { "Modes" }
                @for m in Mode::ALL {
                    @let id = format!("m-{}", m.as_str());
                    div.check {
                        input id=(id) type="checkbox" name="mode" value=(m.as_str()) checked[m == Mode::DryRun];
                        label for=(id) { (m.as_str()) }
                    }
                }
                div.check {
                    input id="auto_run" type="checkbox" name="auto_run";
                    label for="auto_run" { "Auto-run: execute without approval where the policy allows" }
                }
            }
            button.primary type="submit" { "Create key" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_fields_become_a_request() {
        let f = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let req = create_request(&[
            f("csrf", "x"),
            f("name", "bot"),
            f("agent", ""),
            f("grant", "capability:context.get"),
            f("grant", "customers:read"),
            f("mode", "dry_run"),
            f("mode", "queue"),
        ]);
        assert_eq!(req.name, "bot");
        assert_eq!(req.agent, None);
        assert_eq!(req.grants, ["capability:context.get", "customers:read"]);
        assert_eq!(
            req.allowed_modes.as_deref(),
            Some(&["dry_run".to_owned(), "queue".to_owned()][..])
        );
        assert!(!req.auto_run);
        assert_eq!(create_request(&[]).allowed_modes, None);
    }
}
