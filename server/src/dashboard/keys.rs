//! Agent keys: searched and paged with the total; create (post/redirect/get: the plaintext is
//! shown once on the page the create redirects to, with a copy button, and a reload neither
//! mints nor shows it again), their grants and modes, last use, revoke (after a confirmation).
//! Creating and revoking are for the workspace's owners, as in the API.

use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::{html, Markup};

use super::format;
use super::forms::{self, refused_status, see_other};
use super::layout::{alert, csrf_input, page as shell};
use super::paging::{count_line, list_href, next_order, pager, query_params, sort_header, PAGE};
use super::respond::{failed, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_core::capabilities::{Capability, Mode};
use svc_core::keys::{self, CreateKey, CreatedKey, KeyQuery, KeySort, KeyView, RouteGrant};

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

/// How long a new key's plaintext waits for the page after the redirect.
const FLASH_TTL: Duration = Duration::from_secs(300);
/// Most plaintexts waiting at once (the oldest give way).
const FLASH_MAX: usize = 1000;

/// A new key's plaintext, waiting to be shown once on the page the create redirects to.
struct Flash {
    /// `<workspace>/<user id>`: only the person who minted it sees it.
    owner: String,
    name: String,
    key: String,
    at: Instant,
}

/// The waiting plaintexts, in this process's memory only: never in a URL, a cookie or the
/// store (keys are stored as digests), gone once shown or after [`FLASH_TTL`].
static FLASHES: LazyLock<Mutex<Vec<Flash>>> = LazyLock::new(|| Mutex::new(Vec::new()));

fn flashes() -> std::sync::MutexGuard<'static, Vec<Flash>> {
    // A panic while holding the lock leaves the list usable.
    FLASHES.lock().unwrap_or_else(|e| e.into_inner())
}

fn flash_owner(s: &Session) -> String {
    format!("{}/{}", s.user.workspace.0, s.user.user.id)
}

fn put_flash(s: &Session, created: &CreatedKey) {
    let mut f = flashes();
    f.retain(|x| x.at.elapsed() < FLASH_TTL);
    if f.len() >= FLASH_MAX {
        f.remove(0);
    }
    f.push(Flash {
        owner: flash_owner(s),
        name: created.meta.name.clone(),
        key: created.key.clone(),
        at: Instant::now(),
    });
}

/// The plaintexts waiting for this person, taken: a reload shows none.
fn take_flashes(s: &Session) -> Vec<(String, String)> {
    let owner = flash_owner(s);
    let mut f = flashes();
    let mut mine = Vec::new();
    f.retain(|x| {
        if x.owner == owner && x.at.elapsed() < FLASH_TTL {
            mine.push((x.name.clone(), x.key.clone()));
            false
        } else {
            x.at.elapsed() < FLASH_TTL
        }
    });
    mine
}

/// `GET /app/keys`: the keys, searched by name and paged; a key minted just before shows its
/// plaintext this once.
pub async fn page(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Query(params): Query<Vec<(String, String)>>,
) -> Result<Markup, Failure> {
    let q = list_query(&params).map_err(|e| failed(&s, e))?;
    let created = take_flashes(&s);
    render(&state, &s, &q, &created, None).await
}

/// The page's query: `q`, `state`, `sort`, `order`, `offset` of the URL; agent and legacy keys.
fn list_query(params: &[(String, String)]) -> Result<KeyQuery, svc_core::error::Error> {
    let mut q = KeyQuery::from_params(query_params(params))?;
    q.kinds = vec![keys::KeyKind::Agent, keys::KeyKind::Legacy];
    q.limit = PAGE;
    Ok(q)
}

/// `POST /app/keys`: mint a key, then redirect (post/redirect/get) to the list, which shows
/// the plaintext once: a reload mints nothing and shows nothing again.
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
            put_flash(&s, &created);
            Ok(see_other("/app/keys#created"))
        }
        Err(e) if e.code.status() < 500 => {
            let q = list_query(&[]).map_err(|e| failed(&s, e))?;
            let again = Again {
                fields: &fields,
                message: &e.message,
            };
            Ok((
                refused_status(&e),
                render(&state, &s, &q, &[], Some(&again)).await?,
            )
                .into_response())
        }
        Err(e) => Err(failed(&s, e)),
    }
}

/// `POST /app/keys/{id}/revoke` (the form asks for a confirmation first), then back to the
/// list.
pub async fn revoke(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Path(id): Path<String>,
) -> Result<Response, Failure> {
    s.require_owner("create or revoke keys")
        .map_err(|e| failed(&s, e))?;
    let revoked = keys::revoke(&state.store, &state.usage, s.user.workspace, &id)
        .await
        .map_err(|e| failed(&s, e))?;
    tracing::info!(key_id = %revoked.id, "key revoked (dashboard)");
    Ok(see_other("/app/keys"))
}

/// A refused create form: what was typed and why.
struct Again<'a> {
    fields: &'a [(String, String)],
    message: &'a str,
}

/// The keys page's address with a search, state, sort and offset.
fn href(q: &KeyQuery, sort: KeySort, ascending: bool, offset: usize) -> String {
    let state = match q.revoked {
        Some(true) => "revoked",
        Some(false) => "active",
        None => "",
    };
    let kept = [("q", q.q.as_str()), ("state", state)];
    list_href("/app/keys", sort.as_str(), ascending, &kept, offset)
}

async fn render(
    state: &AppState,
    s: &Session,
    q: &KeyQuery,
    created: &[(String, String)],
    again: Option<&Again<'_>>,
) -> Result<Markup, Failure> {
    let list = keys::list_page(&state.store, &state.usage, s.user.workspace, q)
        .await
        .map_err(|e| failed(s, e))?;
    let clients = keys::list_page(
        &state.store,
        &state.usage,
        s.user.workspace,
        &KeyQuery {
            kinds: vec![keys::KeyKind::OAuth],
            ..KeyQuery::default()
        },
    )
    .await
    .map_err(|e| failed(s, e))?;
    let header = |key: KeySort, label: &str| {
        let current = q.sort == key;
        let natural = matches!(key, KeySort::Name | KeySort::Agent);
        let next = next_order(current, q.ascending, natural);
        sort_header(label, current, q.ascending, &href(q, key, next, 0))
    };
    let (offset, shown, total) = (list.offset, list.keys.len(), list.total);
    let state_value = match q.revoked {
        Some(true) => "revoked",
        Some(false) => "active",
        None => "",
    };
    Ok(shell(
        Some(s),
        "Agent keys",
        "/app/keys",
        &[],
        html! {
            @for (i, (name, key)) in created.iter().enumerate() {
                section.card.created id=[(i == 0).then_some("created")] role="status" aria-labelledby=(format!("new-h-{i}")) {
                    h2 id=(format!("new-h-{i}")) { "Key “" (name) "” created" }
                    p { "Copy it now: it is not stored and will not be shown again (not even after a reload)." }
                    div.copy-row {
                        input id=(if i == 0 { "new-key".to_owned() } else { format!("new-key-{i}") }) type="text" readonly value=(key) aria-label="The new key";
                        button type="button" data-copy=(if i == 0 { "new-key".to_owned() } else { format!("new-key-{i}") }) { "Copy" }
                    }
                }
            }
            // No `action`: it submits to this page, and `form[action='/app/keys']` stays the
            // create form.
            form.search.filters role="search" method="get" {
                div.field {
                    label for="q" { "Search keys" }
                    input id="q" name="q" type="search" value=(q.q) placeholder="name, agent, id, last four…";
                }
                div.field {
                    label for="key-state" { "State" }
                    select id="key-state" name="state" {
                        option value="" { "any" }
                        option value="active" selected[state_value == "active"] { "active" }
                        option value="revoked" selected[state_value == "revoked"] { "revoked" }
                    }
                }
                input type="hidden" name="sort" value=(q.sort.as_str());
                input type="hidden" name="order" value=(if q.ascending { "asc" } else { "desc" });
                button type="submit" { "Filter" }
            }
            (count_line("key-count", ("key", "keys"), offset, shown, total))
            div.table-wrap {
                table id="keys" {
                    caption.visually-hidden { "Keys of the workspace" }
                    thead { tr {
                        (header(KeySort::Name, "Name")) (header(KeySort::Agent, "Agent")) th scope="col" { "Key" }
                        th scope="col" { "Grants" } th scope="col" { "Modes" } (header(KeySort::LastUsed, "Last used"))
                        th scope="col" { span.visually-hidden { "Actions" } }
                    } }
                    tbody id="key-rows" {
                        @if list.keys.is_empty() { tr { td colspan="7" { "No keys yet." } } }
                        @for k in &list.keys { (row(s, k)) }
                    }
                }
            }
            (pager("keys", offset, shown, total, |o| href(q, q.sort, q.ascending, o)))
            (super::oauth_consent::approved_clients(s, &clients.keys))
            @if s.is_owner() { (form(s, again)) }
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
            td { @match k.last_used_at.as_deref() { Some(t) => (format::time(t)), None => "never" } }
            td {
                @if !k.revoked && s.is_owner() {
                    form method="post" action=(format!("/app/keys/{}/revoke", k.id))
                        data-confirm=(format!("Revoke “{}”? Agents using it are refused from their next request.", k.name)) {
                        (csrf_input(s))
                        button.danger type="submit" aria-label=(format!("Revoke {}", k.name)) { "Revoke" }
                    }
                }
            }
        }
    }
}

fn form(s: &Session, again: Option<&Again<'_>>) -> Markup {
    let typed = |name: &str| again.map_or("", |a| forms::value(a.fields, name));
    let checked = |name: &str, value: &str| {
        again.is_some_and(|a| a.fields.iter().any(|(k, v)| k == name && v == value))
    };
    html! {
        form.card method="post" action="/app/keys" aria-labelledby="create-h" {
            h2 id="create-h" { "Create a key" }
            (csrf_input(s))
            @if let Some(a) = again { (alert(a.message)) }
            label for="key-name" { "Name" }
            input id="key-name" name="name" type="text" required maxlength="200" value=(typed("name"));
            label for="key-agent" { "Agent label " span.hint { "(defaults to the name)" } }
            input id="key-agent" name="agent" type="text" maxlength="200" value=(typed("agent"));
            fieldset {
                legend { "Capabilities" }
                div.grid-checks {
                    @for c in Capability::ALL {
                        @let id = format!("g-{}", c.id().replace('.', "-"));
                        div.check {
                            @let value = format!("capability:{}", c.id());
                            input id=(id) type="checkbox" name="grant" value=(value) checked[checked("grant", &value)];
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
                            input id=(id) type="checkbox" name="grant" value=(g.as_str()) checked[checked("grant", g.as_str())];
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
                        input id=(id) type="checkbox" name="mode" value=(m.as_str())
                            checked[if again.is_some() { checked("mode", m.as_str()) } else { m == Mode::DryRun }];
                        label for=(id) { (m.as_str()) }
                    }
                }
                div.check {
                    input id="auto_run" type="checkbox" name="auto_run" checked[checked("auto_run", "on")];
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
