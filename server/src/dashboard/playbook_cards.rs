//! Action playbooks (SPEC.md "What the service does" 9): one-shot recommended-action cards
//! that live in the dashboard, have no API endpoints, and are offered only when the
//! integrations they need are connected. Running a card goes through the capability gateway
//! like everything else, as the buddy whose role covers the action (its internal principal,
//! docs/agents.md), in `queue` mode: the action waits in the approvals inbox for a person.

use axum::extract::{Path, State};
use axum::response::Redirect;
use axum::{Extension, Form};
use maud::{html, Markup};
use serde_json::{json, Value as Json};

use super::layout::csrf_input;
use super::respond::{failed, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_agents::buddies::Buddy;
use svc_agents::chat::principal;
use svc_core::capabilities::Capability;
use svc_core::error::Error;
use svc_core::integration_kind::Kind;
use svc_core::plumbing::ids;
use svc_domains::customers::{self, CustomerQuery, CustomerSort, CustomerView};
use svc_domains::integrations::IntegrationView;
use svc_gateway::{self as gateway, InvokeRequest};

/// The gateway `source` of a card's invocation.
pub const SOURCE: &str = "dashboard";

/// One card: what it recommends, what it needs, and who acts.
#[derive(Debug)]
pub struct Card {
    pub id: &'static str,
    pub title: &'static str,
    pub why: &'static str,
    pub needs: &'static [Kind],
    pub buddy: Buddy,
    pub capability: Capability,
    /// The customer property that ranks the recommended target (highest first).
    pub rank_by: &'static str,
    /// Only customers with this identity can be targeted.
    pub requires: &'static str,
}

pub const CARDS: &[Card] = &[
    Card {
        id: "win-back-email",
        title: "Win back a customer at risk",
        why: "Email the customer most likely to churn with a personal note.",
        needs: &[Kind::Smtp],
        buddy: Buddy::Campaign,
        capability: Capability::QueueOutreach,
        rank_by: "churnScore",
        requires: "email",
    },
    Card {
        id: "call-warm-lead",
        title: "Call your warmest lead",
        why: "A short call to the customer most likely to convert.",
        needs: &[Kind::Voice],
        buddy: Buddy::Pipeline,
        capability: Capability::QueueCall,
        rank_by: "conversionScore",
        requires: "phone",
    },
];

/// Customers a card offers in its picker.
const OFFERED: usize = 50;

impl Card {
    /// The card's candidates among every customer of the workspace: those with the needed
    /// identity, highest `rank_by` first.
    pub fn query(&self) -> CustomerQuery {
        CustomerQuery {
            sort: match self.rank_by {
                "churnScore" => CustomerSort::Churn,
                _ => CustomerSort::Score,
            },
            has: Some(self.requires.to_owned()),
            limit: OFFERED,
            ..CustomerQuery::default()
        }
    }
}

/// The cards whose integrations are all connected.
pub fn available(connected: &[Kind]) -> Vec<&'static Card> {
    CARDS
        .iter()
        .filter(|c| c.needs.iter().all(|k| connected.contains(k)))
        .collect()
}

fn score(c: &CustomerView, property: &str) -> f64 {
    c.properties
        .get(property)
        .and_then(Json::as_f64)
        .unwrap_or(0.0)
}

/// Targets of a card: customers with the needed identity, the recommended one first.
pub fn targets<'a>(card: &Card, list: &'a [CustomerView]) -> Vec<&'a CustomerView> {
    let mut out: Vec<&CustomerView> = list
        .iter()
        .filter(|c| match card.requires {
            "phone" => c.phone.is_some(),
            _ => c.email.is_some(),
        })
        .collect();
    out.sort_by(|a, b| score(b, card.rank_by).total_cmp(&score(a, card.rank_by)));
    out
}

/// The offered cards, rendered (for the integrations page).
pub async fn offered(
    state: &AppState,
    s: &Session,
    integrations: &[IntegrationView],
) -> Result<Markup, Failure> {
    let connected: Vec<Kind> = integrations
        .iter()
        .filter(|i| i.connected)
        .map(|i| i.kind)
        .collect();
    let cards = available(&connected);
    if cards.is_empty() {
        return Ok(html! {});
    }
    let mut rendered = Vec::with_capacity(cards.len());
    for card in cards {
        let list = customers::list(&state.store, s.user.workspace, card.query())
            .await
            .map_err(|e| failed(s, e))?;
        rendered.push(render(s, card, &targets(card, &list.customers)));
    }
    Ok(html! { @for r in rendered { (r) } })
}

fn render(s: &Session, card: &Card, targets: &[&CustomerView]) -> Markup {
    let id = card.id;
    let name = |c: &CustomerView| {
        let who = c.name.clone().or(c.email.clone()).unwrap_or(c.id.clone());
        let rank = score(c, card.rank_by);
        if rank > 0.0 {
            format!("{who} ({}: {:.0}%)", card.rank_by, rank * 100.0)
        } else {
            who
        }
    };
    html! {
        article.card.playbook-card id=(format!("card-{id}")) aria-labelledby=(format!("card-{id}-h")) {
            h3 id=(format!("card-{id}-h")) { (card.title) }
            p { (card.why) }
            p.hint { "Runs as the " (card.buddy.as_str()) " buddy: " code { (card.capability.id()) } ", queued for your approval." }
            @if targets.is_empty() {
                p.hint { "No customer with a " (card.requires) " yet." }
            } @else {
                form method="post" action=(format!("/app/action-cards/{id}")) {
                    (csrf_input(s))
                    input type="hidden" name="nonce" value=(ids::random_base62(16));
                    label for=(format!("{id}-customer")) { "Customer" }
                    select id=(format!("{id}-customer")) name="customer" {
                        @for c in targets { option value=(c.id) { (name(c)) } }
                    }
                    @if card.capability == Capability::QueueOutreach {
                        label for=(format!("{id}-subject")) { "Subject" }
                        input id=(format!("{id}-subject")) name="subject" type="text" required value="We would love to have you back";
                        label for=(format!("{id}-body")) { "Message" }
                        textarea id=(format!("{id}-body")) name="body" rows="4" required {
                            "Hi,\n\nIt has been a while. Is there anything we could do better? Reply to this email and we will help.\n"
                        }
                    } @else {
                        label for=(format!("{id}-script")) { "Call script" }
                        textarea id=(format!("{id}-script")) name="script" rows="4" required {
                            "Introduce yourself, ask how the evaluation is going, and offer a short demo this week."
                        }
                    }
                    button.primary type="submit" { "Queue for approval" }
                }
            }
        }
    }
}

/// `POST /app/action-cards/{id}`: one invocation through the gateway, then the inbox.
pub async fn run(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<Vec<(String, String)>>,
) -> Result<Redirect, Failure> {
    let field = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let card = CARDS
        .iter()
        .find(|c| c.id == id)
        .ok_or_else(|| failed(&s, Error::not_found("action playbook")))?;
    let input = match card.capability {
        Capability::QueueOutreach => json!({
            "customer": field("customer"), "subject": field("subject"), "body": field("body"),
        }),
        _ => json!({"customer": field("customer"), "script": field("script")}),
    };
    let key = principal::ensure(&state.store, s.user.workspace, card.buddy)
        .await
        .map_err(|e| failed(&s, e))?;
    let nonce = field("nonce");
    let req = InvokeRequest {
        mode: Some("queue".into()),
        source: Some(SOURCE.into()),
        idempotency_key: (!nonce.is_empty()).then(|| format!("card:{}:{nonce}", card.id)),
        input: Some(input),
    };
    gateway::invoke(&state, &key, card.capability.id(), req, ids::request_id())
        .await
        .map_err(|e| failed(&s, e))?;
    Ok(Redirect::to("/app/approvals"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_are_offered_only_with_their_integrations() {
        assert!(available(&[]).is_empty());
        let ids = |v: Vec<&Card>| v.iter().map(|c| c.id).collect::<Vec<_>>();
        assert_eq!(ids(available(&[Kind::Smtp])), ["win-back-email"]);
        assert_eq!(
            ids(available(&[Kind::Voice, Kind::Smtp])),
            ["win-back-email", "call-warm-lead"]
        );
        for c in CARDS {
            assert!(
                principal::role(c.buddy).contains(&c.capability),
                "{} runs a capability outside its buddy's role",
                c.id
            );
        }
    }
}
