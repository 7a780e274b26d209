//! The approvals inbox: pending actions with a preview of what they will do (the email as it
//! will be sent, the call script), approve / reject, and a live expiry countdown.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use maud::{html, Markup};
use serde_json::Value;

use super::layout::{csrf_input, page};
use super::respond::{failed, is_htmx, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_gateway::approvals::{self, PendingView};

/// `GET /app/approvals`.
pub async fn inbox(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
) -> Result<Markup, Failure> {
    let pending = approvals::list(&state.store, s.user.workspace, Some("pending".into()))
        .await
        .map_err(|e| failed(&s, e))?;
    Ok(page(
        Some(&s),
        "Approvals",
        "/app/approvals",
        &[],
        html! {
            @if pending.actions.is_empty() {
                p.card id="no-approvals" { "Nothing waits for a decision." }
            }
            div.cards {
                @for a in &pending.actions { (card(&s, a)) }
            }
        },
    ))
}

/// `POST /app/approvals/{id}/{approve|reject}`: the decided card for htmx, else back to the
/// inbox.
pub async fn decide(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    headers: HeaderMap,
    Path((id, decision)): Path<(String, String)>,
) -> Result<Response, Failure> {
    let ws = s.user.workspace;
    let decided = match decision.as_str() {
        "approve" => approvals::approve(&state, ws, &id, &s.user.user.id, None).await,
        "reject" => approvals::reject(&state.store, ws, &id, &s.user.user.id, None).await,
        _ => return Ok((StatusCode::NOT_FOUND, "unknown decision").into_response()),
    };
    let view = decided.map_err(|e| failed(&s, e))?;
    if is_htmx(&headers) {
        return Ok(card(&s, &view).into_response());
    }
    Ok(Redirect::to("/app/approvals").into_response())
}

/// One action: what, for whom, the preview, and the decision buttons while pending.
fn card(s: &Session, a: &PendingView) -> Markup {
    let title_id = format!("pa-{}", a.id);
    html! {
        article.card.approval id=(a.id) aria-labelledby=(title_id) data-status=(a.status) {
            h2 id=(title_id) { code { (a.capability) } " by " (a.agent) }
            p.meta {
                "Status: " strong.status { (a.status) }
                " · " (a.action_credit_cost) " credits · queued " time { (a.created_at) }
                @if a.status == "pending" {
                    " · expires in " time.countdown datetime=(a.expires_at) data-expires=(a.expires_at) { (a.expires_at) }
                }
            }
            (preview(&a.input))
            @if a.status == "pending" {
                div.actions {
                    form method="post" action=(format!("/app/approvals/{}/approve", a.id))
                        hx-post=(format!("/app/approvals/{}/approve", a.id)) hx-target="closest article" hx-swap="outerHTML" {
                        (csrf_input(s))
                        button.primary type="submit" { "Approve" }
                    }
                    form method="post" action=(format!("/app/approvals/{}/reject", a.id))
                        hx-post=(format!("/app/approvals/{}/reject", a.id)) hx-target="closest article" hx-swap="outerHTML" {
                        (csrf_input(s))
                        button.danger type="submit" { "Reject" }
                    }
                }
            }
            @if let Some(e) = &a.error {
                p.alert role="alert" { (e.get("message").and_then(Value::as_str).unwrap_or("failed")) }
            }
            details {
                summary { "Timeline" }
                ol { @for t in &a.timeline { li { time { (t.ts) } " " (t.state) " by " (t.actor) @if !t.note.is_empty() { ": " (t.note) } } } }
            }
        }
    }
}

/// The email as it will be sent, the call script, or the input as JSON.
pub fn preview(input: &Value) -> Markup {
    let text = |k: &str| input.get(k).and_then(Value::as_str);
    let to = text("customer").unwrap_or("");
    html! {
        @if let (Some(subject), Some(body)) = (text("subject"), text("body")) {
            div.email-preview aria-label="Email preview" {
                p { span.label { "To: " } (to) }
                p { span.label { "Subject: " } strong.subject { (subject) } }
                div.email-body { (body) }
            }
        } @else if let Some(script) = text("script") {
            div.call-preview aria-label="Call script" {
                p { span.label { "Call: " } (to) }
                div.email-body { (script) }
            }
        } @else {
            pre.json { (serde_json::to_string_pretty(input).unwrap_or_default()) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn previews_escape_the_email() {
        let m = preview(&json!({"customer": "a@b.io", "subject": "Hi", "body": "<b>x</b>"}));
        let s = m.into_string();
        assert!(
            s.contains("Subject: ") && s.contains("&lt;b&gt;x&lt;/b&gt;"),
            "{s}"
        );
        let call = preview(&json!({"customer": "cus_1", "script": "Say hello"})).into_string();
        assert!(call.contains("Call script") && call.contains("Say hello"));
        assert!(preview(&json!({"set": {"a": 1}}))
            .into_string()
            .contains("&quot;set&quot;"));
    }
}
