//! The built-in agent: what answers when no `llm` integration is connected, so chat works on a
//! fresh install and its behaviour is deterministic. An intent router (word rules) and one
//! planner per intent; every planner acts through [`Turn::call_tool`], so its calls are
//! charged, receipted and approval-gated like any agent's. Every answer says it comes from the
//! built-in agent.

use serde_json::{json, Value as Json};

use super::turn::{ToolOutcome, Turn};
use svc_core::capabilities::Capability;
use svc_core::vocabulary;
use svc_domains::customers::{self, CustomerView};
use svc_domains::playbooks::Buddy;
use svc_gateway::InvokeRequest;

/// The first line of every built-in answer.
pub const BANNER: &str = "Built-in agent (no language model is connected):";
/// Customers the score intents consider (the most recently seen).
const CANDIDATES: usize = 20;
/// Customers a score answer lists.
const LISTED: usize = 5;

/// What the user asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Intent {
    Churn,
    Convert,
    Draft { customer: String, topic: String },
    Queue { customer: String, topic: String },
    Context { customer: String },
    Plan { goal: String },
    Help,
}

/// Separators that end a customer reference and start the topic.
const TOPIC_WORDS: [&str; 4] = [" about ", " regarding ", " re ", " on "];

fn clean(s: &str) -> String {
    s.trim()
        .trim_matches(|c: char| matches!(c, '?' | '!' | '.' | ',' | ';' | ':' | '"' | '\''))
        .trim()
        .to_owned()
}

/// The first email address, phone number (`+` and 7-15 digits) or customer id (`cus_...`) in
/// `text`, wherever it stands, without the punctuation around it; and the byte offset where
/// the text after it starts. A sentence may carry the reference in its middle ("an email to
/// ann@x.example inviting them to upgrade"), so the words around it must not become part of it.
fn reference_in(text: &str) -> Option<(String, usize)> {
    let mut start = 0;
    for word in text.split_inclusive(char::is_whitespace) {
        let end = start + word.len();
        let token = word.trim().trim_matches(|c: char| {
            matches!(
                c,
                '?' | '!' | '.' | ',' | ';' | ':' | '"' | '\'' | '(' | ')' | '<' | '>'
            )
        });
        let email = token
            .split_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.'));
        let digits = token.chars().filter(char::is_ascii_digit).count();
        let phone = token.starts_with('+')
            && (7..=15).contains(&digits)
            && token[1..]
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '-' | ' ' | '(' | ')'));
        let id = token.starts_with("cus_") && token.len() > 4;
        if email || phone || id {
            return Some((token.to_owned(), end));
        }
        start = end;
    }
    None
}

/// The topic after a reference: the rest of the sentence without a leading "about"/"re".
fn topic_after(rest: &str) -> String {
    let t = rest.trim_start();
    let lower = t.to_ascii_lowercase();
    for w in TOPIC_WORDS {
        let w = w.trim_start();
        if lower.starts_with(w) {
            return clean(&t[w.len()..]);
        }
    }
    clean(t)
}

/// `(customer, topic)` from the text after "to": `ada@x.io about pricing`.
fn customer_and_topic(rest: &str) -> (String, String) {
    if let Some((customer, end)) = reference_in(rest) {
        return (customer, topic_after(&rest[end..]));
    }
    let lower = rest.to_ascii_lowercase();
    let cut = TOPIC_WORDS
        .iter()
        .filter_map(|w| lower.find(w).map(|i| (i, w.len())))
        .min();
    match cut {
        Some((i, n)) => (clean(&rest[..i]), clean(&rest[i + n..])),
        None => (clean(rest), String::new()),
    }
}

impl Intent {
    pub fn parse(message: &str) -> Intent {
        let m = message.trim();
        // ASCII lower-casing keeps byte offsets, so positions found in `lower` cut `m`.
        let lower = m.to_ascii_lowercase();
        let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
        if let Some(goal) = lower
            .strip_prefix("plan:")
            .or_else(|| lower.strip_prefix("plan "))
        {
            let goal = clean(&m[m.len() - goal.len()..]);
            if !goal.is_empty() {
                return Intent::Plan { goal };
            }
        }
        let mailing = has(&["email", "e-mail", "message", "note", "outreach", "mail"]);
        if mailing {
            if let Some(i) = lower.find(" to ") {
                let (customer, topic) = customer_and_topic(&m[i + 4..]);
                if !customer.is_empty() {
                    if has(&["queue", "send"]) {
                        return Intent::Queue { customer, topic };
                    }
                    if has(&["draft", "write", "compose", "prepare"]) {
                        return Intent::Draft { customer, topic };
                    }
                }
            }
        }
        if has(&["churn", "at risk", "at-risk", "likely to leave", "cancel"]) {
            return Intent::Churn;
        }
        if has(&[
            "convert",
            "conversion",
            "likely to buy",
            "hot lead",
            "ready to buy",
        ]) {
            return Intent::Convert;
        }
        for lead in [
            "what do we know about ",
            "what do you know about ",
            "tell me about ",
            "context for ",
            "context on ",
            "who is ",
        ] {
            if let Some(i) = lower.find(lead) {
                let rest = &m[i + lead.len()..];
                // The reference wherever it stands, else the words up to the sentence's end.
                let customer = match reference_in(rest) {
                    Some((reference, _)) => reference,
                    None => clean(rest.split(['?', '!']).next().unwrap_or(rest)),
                };
                if !customer.is_empty() {
                    return Intent::Context { customer };
                }
            }
        }
        Intent::Help
    }

    /// The specialist of the intent; `None` when the orchestrator answers itself.
    pub fn buddy(&self) -> Option<Buddy> {
        match self {
            Intent::Churn | Intent::Context { .. } => Some(Buddy::Insights),
            Intent::Convert => Some(Buddy::Prospect),
            Intent::Draft { .. } | Intent::Queue { .. } => Some(Buddy::Campaign),
            Intent::Plan { .. } => Some(Buddy::Pipeline),
            Intent::Help => None,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Intent::Churn => "churn risk across recent customers".to_owned(),
            Intent::Convert => "conversion likelihood across recent customers".to_owned(),
            Intent::Draft { customer, .. } => format!("draft an email to {customer}"),
            Intent::Queue { customer, .. } => format!("queue an email to {customer}"),
            Intent::Context { customer } => format!("what is known about {customer}"),
            Intent::Plan { goal } => format!("plan toward \"{goal}\""),
            Intent::Help => "help".to_owned(),
        }
    }
}

fn req(mode: &str, input: Json) -> InvokeRequest {
    InvokeRequest {
        mode: Some(mode.to_owned()),
        source: None,
        idempotency_key: None,
        input: Some(input),
    }
}

/// The built-in answer to `intent` (the turn is already routed to the intent's buddy).
pub async fn answer(turn: &mut Turn, intent: &Intent) -> String {
    let body = match intent {
        Intent::Churn => scores(turn, "churn").await,
        Intent::Convert => scores(turn, "conversion").await,
        Intent::Draft { customer, topic } => draft(turn, customer, topic).await,
        Intent::Queue { customer, topic } => queue(turn, customer, topic).await,
        Intent::Context { customer } => context(turn, customer).await,
        Intent::Plan { goal } => plan(turn, goal).await,
        Intent::Help => help(),
    };
    format!("{BANNER} {body}")
}

fn help() -> String {
    "I can answer a few kinds of questions from the workspace's data:\n\
     - \"Who is likely to churn this week?\" or \"Who is likely to convert?\" (scores)\n\
     - \"What do we know about ada@example.com?\" (customer context)\n\
     - \"Draft an email to ada@example.com about pricing\" (a draft in the brand voice)\n\
     - \"Queue an email to ada@example.com about the renewal\" (waits for your approval)\n\
     - \"Plan: book 5 demos this month\" (next steps toward a goal)\n\
     Connect an `llm` integration (PUT /api/v1/integrations/llm) for free-form questions."
        .to_owned()
}

fn label(c: &CustomerView) -> String {
    match (&c.name, &c.email) {
        (Some(n), Some(e)) => format!("{n} <{e}>"),
        (Some(n), None) => n.clone(),
        (None, Some(e)) => e.clone(),
        (None, None) => c.external_id.clone().unwrap_or_else(|| c.id.clone()),
    }
}

fn error_text(o: &ToolOutcome) -> String {
    o.result
        .pointer("/error/message")
        .and_then(Json::as_str)
        .unwrap_or("the gateway refused the call")
        .to_owned()
}

const BUDGET_NOTE: &str = "(I stopped at the turn's budget of 8 tool calls.)";

/// The top customers by churn or conversion score: the highest stored scores (`churnScore`,
/// `score`) of the whole workspace, then, while there is room, the most recently seen customers
/// without one, scored by `score.<kind>` through the gateway.
async fn scores(turn: &mut Turn, kind: &str) -> String {
    let store = &turn.state.gateway.store;
    let churn = kind == "churn";
    let stored = customers::CustomerQuery {
        sort: if churn {
            customers::CustomerSort::Churn
        } else {
            customers::CustomerSort::Score
        },
        // Any stored value at all: the customers with a score.
        min_churn: churn.then_some(f64::MIN),
        min_score: (!churn).then_some(f64::MIN),
        limit: CANDIDATES,
        ..customers::CustomerQuery::default()
    };
    let recent = customers::CustomerQuery {
        limit: CANDIDATES,
        ..customers::CustomerQuery::default()
    };
    let (stored, recent) = match (
        customers::list(store, turn.ws, stored).await,
        customers::list(store, turn.ws, recent).await,
    ) {
        (Ok(s), Ok(r)) => (s, r),
        (Err(e), _) | (_, Err(e)) => {
            return format!("I could not read the customers: {}.", e.message)
        }
    };
    let stored_total = stored.total;
    // With room left every scored customer is in `stored`: the others have no score yet.
    let room = CANDIDATES.saturating_sub(stored.customers.len());
    let unscored: Vec<_> = recent
        .customers
        .into_iter()
        .filter(|c| !stored.customers.iter().any(|s| s.id == c.id))
        .take(room)
        .collect();
    let mut recent = stored.customers;
    recent.extend(unscored);
    let (capability, property) = if kind == "churn" {
        (Capability::ScoreChurn, vocabulary::prop::CHURN_SCORE)
    } else {
        (
            Capability::ScoreConversion,
            vocabulary::prop::CONVERSION_SCORE,
        )
    };
    let mut scored: Vec<(f64, String, Option<String>)> = Vec::new();
    let mut failures = Vec::new();
    for c in recent.iter().take(CANDIDATES) {
        if let Some(s) = c.properties.get(property).and_then(Json::as_f64) {
            scored.push((s, label(c), None));
            continue;
        }
        let Ok(out) = turn
            .call_tool(capability.id(), req("execute", json!({"customer": c.id})))
            .await
        else {
            break;
        };
        match out.result.get("score").and_then(Json::as_f64) {
            Some(s) if out.ok() => {
                let factors: Vec<String> = out.result["factors"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .take(2)
                    .filter_map(|f| f["name"].as_str().map(str::to_owned))
                    .collect();
                let why = (!factors.is_empty()).then(|| factors.join(", "));
                scored.push((s, label(c), why));
            }
            _ => failures.push(format!("{}: {}", label(c), error_text(&out))),
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let verb = if churn { "churn" } else { "convert" };
    let mut lines = vec![if stored_total > 0 {
        format!(
            "the customers most likely to {verb} (the highest stored scores of all \
             {stored_total} scored customers, then the most recently seen without one, by \
             {capability}):"
        )
    } else {
        format!(
            "the customers most likely to {verb} (of the {} most recently seen, by {capability}):",
            scored.len() + failures.len()
        )
    }];
    for (i, (s, who, why)) in scored.iter().take(LISTED).enumerate() {
        let band = if *s >= 0.6 {
            "high"
        } else if *s >= 0.3 {
            "medium"
        } else {
            "low"
        };
        let why = why
            .as_ref()
            .map(|w| format!("; factors: {w}"))
            .unwrap_or_default();
        lines.push(format!("{}. {who}: {s:.2} ({band}){why}", i + 1));
    }
    if scored.is_empty() {
        lines.push("no customer could be scored.".to_owned());
    }
    for f in failures.iter().take(3) {
        lines.push(format!("Not scored: {f}"));
    }
    if turn.budget_spent {
        lines.push(BUDGET_NOTE.to_owned());
    }
    lines.join("\n")
}

/// A customer reference for the capabilities: ids, emails and phones as given; a name is
/// looked up among recently seen customers.
async fn resolve(turn: &Turn, reference: &str) -> String {
    let r = reference.trim();
    if r.starts_with("cus_") || r.contains('@') || r.starts_with('+') {
        return r.to_owned();
    }
    // Every customer whose text matches, not only the recently seen.
    let named = customers::CustomerQuery {
        q: r.chars().take(customers::search::QUERY_MAX).collect(),
        limit: 50,
        ..customers::CustomerQuery::default()
    };
    let Ok(list) = customers::list(&turn.state.gateway.store, turn.ws, named).await else {
        return r.to_owned();
    };
    let wanted = r.to_lowercase();
    let by = |exact: bool| {
        list.customers.iter().find(|c| {
            [&c.name, &c.external_id].into_iter().flatten().any(|v| {
                let v = v.to_lowercase();
                if exact {
                    v == wanted
                } else {
                    v.contains(&wanted)
                }
            })
        })
    };
    by(true)
        .or_else(|| by(false))
        .map_or_else(|| r.to_owned(), |c| c.id.clone())
}

async fn draft_outcome(turn: &mut Turn, customer: &str, topic: &str) -> Result<Json, String> {
    let who = resolve(turn, customer).await;
    let intent = if topic.is_empty() { "follow-up" } else { topic };
    let input = json!({"customer": who, "intent": intent, "channel": "email"});
    match turn
        .call_tool(Capability::DraftOutreach.id(), req("execute", input))
        .await
    {
        Err(_) => Err(BUDGET_NOTE.to_owned()),
        Ok(o) if o.ok() => Ok(o.result),
        Ok(o) => Err(format!(
            "I could not draft for {customer}: {}.",
            error_text(&o)
        )),
    }
}

/// The customer as the user named them, with the id the draft resolved.
fn named(customer: &str, draft: &Json) -> String {
    match draft["customer_id"].as_str() {
        Some(id) if id != customer => format!("{customer} ({id})"),
        _ => customer.to_owned(),
    }
}

async fn draft(turn: &mut Turn, customer: &str, topic: &str) -> String {
    let d = match draft_outcome(turn, customer, topic).await {
        Ok(d) => d,
        Err(e) => return e,
    };
    let v = &d["voice"];
    format!(
        "a draft for {} ({}, in the brand voice: formality {}, humor {}, respect {}, energy \
         {} of 5). Nothing was sent.\n\nSubject: {}\n\n{}",
        named(customer, &d),
        d["intent"].as_str().unwrap_or("follow-up"),
        v["formality"],
        v["humor"],
        v["respect"],
        v["energy"],
        d["subject"].as_str().unwrap_or("(none)"),
        d["body_text"].as_str().unwrap_or_default(),
    )
}

/// Drafts, then queues the draft with `queue.outreach`: a pending approval, never a send.
async fn queue(turn: &mut Turn, customer: &str, topic: &str) -> String {
    let d = match draft_outcome(turn, customer, topic).await {
        Ok(d) => d,
        Err(e) => return e,
    };
    let input = json!({
        "customer": d["customer_id"],
        "subject": d["subject"].as_str().unwrap_or("Hello"),
        "body": d["body_text"],
    });
    let o = match turn
        .call_tool(Capability::QueueOutreach.id(), req("queue", input))
        .await
    {
        Ok(o) => o,
        Err(_) => return BUDGET_NOTE.to_owned(),
    };
    match (&o.summary.pending_action_id, o.summary.error.as_deref()) {
        (Some(id), _) => format!(
            "I drafted an email to {} (subject \"{}\") and queued it. It needs approval: \
             pending action {id} waits in Approvals (GET /api/v1/approvals) and nothing is \
             sent until a person approves it.",
            named(customer, &d),
            d["subject"].as_str().unwrap_or_default()
        ),
        (None, Some("integration_not_connected")) => format!(
            "I drafted the email but could not queue it: {}",
            error_text(&o)
        ),
        _ => format!("I could not queue the email: {}.", error_text(&o)),
    }
}

async fn context(turn: &mut Turn, customer: &str) -> String {
    let who = resolve(turn, customer).await;
    let o = match turn
        .call_tool(
            Capability::ContextGet.id(),
            req("execute", json!({"customer": who})),
        )
        .await
    {
        Ok(o) => o,
        Err(_) => return BUDGET_NOTE.to_owned(),
    };
    if !o.ok() {
        return format!("I found nothing on {customer}: {}.", error_text(&o));
    }
    let r = &o.result;
    let list = |key: &str, field: Option<&str>| -> String {
        let items: Vec<String> = r[key]
            .as_array()
            .into_iter()
            .flatten()
            .take(5)
            .filter_map(|i| match field {
                Some(f) => i[f].as_str().map(str::to_owned),
                None => i.as_str().map(str::to_owned),
            })
            .collect();
        if items.is_empty() {
            "none".to_owned()
        } else {
            items.join(", ")
        }
    };
    format!(
        "{} ({}): lifecycle stage {}; sentiment over 30 days {}{}; {} touchpoints, last seen \
         {}.\nIntent signals: {}.\nOpen loops: {}.\nBlockers: {}.",
        r["customer"].as_str().unwrap_or(customer),
        r["customer_id"].as_str().unwrap_or_default(),
        r["lifecycle_stage"].as_str().unwrap_or("unknown"),
        r.pointer("/sentiment_trajectory/direction")
            .and_then(Json::as_str)
            .unwrap_or("stable"),
        r.pointer("/sentiment_trajectory/trigger")
            .and_then(Json::as_str)
            .map(|t| format!(" (after {t})"))
            .unwrap_or_default(),
        r["touchpoint_count"].as_u64().unwrap_or(0),
        r["last_seen"].as_str().unwrap_or("never"),
        list("intent_signals", None),
        list("open_loops", Some("text")),
        list("blockers", Some("text")),
    )
}

async fn plan(turn: &mut Turn, goal: &str) -> String {
    let o = match turn
        .call_tool(
            Capability::PlanGoal.id(),
            req("execute", json!({"goal": goal})),
        )
        .await
    {
        Ok(o) => o,
        Err(_) => return BUDGET_NOTE.to_owned(),
    };
    if !o.ok() {
        return format!("I could not plan toward \"{goal}\": {}.", error_text(&o));
    }
    let mut lines = vec![format!("a plan toward \"{goal}\":")];
    for s in o.result["steps"].as_array().into_iter().flatten() {
        lines.push(format!(
            "{}. {} ({}): {}",
            s["order"],
            s["capability"].as_str().unwrap_or_default(),
            s["mode"].as_str().unwrap_or_default(),
            s["rationale"].as_str().unwrap_or_default()
        ));
    }
    if lines.len() == 1 {
        lines.push("no step applies yet (the workspace has too little data).".to_owned());
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_from_plain_questions() {
        assert_eq!(
            Intent::parse("Who is likely to churn this week?"),
            Intent::Churn
        );
        assert_eq!(Intent::parse("who will convert?"), Intent::Convert);
        assert_eq!(
            Intent::parse("Draft an email to Ada Lovelace about pricing."),
            Intent::Draft {
                customer: "Ada Lovelace".into(),
                topic: "pricing".into()
            }
        );
        assert_eq!(
            Intent::parse("queue an email to ada@example.com"),
            Intent::Queue {
                customer: "ada@example.com".into(),
                topic: String::new()
            }
        );
        assert_eq!(
            Intent::parse("What do we know about cus_12?"),
            Intent::Context {
                customer: "cus_12".into()
            }
        );
        assert_eq!(
            Intent::parse("Plan: Book 5 demos this month"),
            Intent::Plan {
                goal: "Book 5 demos this month".into()
            }
        );
        // Issue 29: the reference is taken out of the sentence wherever it stands.
        assert_eq!(
            Intent::parse(
                "Draft an email to ann@x.example inviting them to upgrade to the annual plan"
            ),
            Intent::Draft {
                customer: "ann@x.example".into(),
                topic: "inviting them to upgrade to the annual plan".into()
            }
        );
        assert_eq!(
            Intent::parse("What do we know about ann@x.example? Give me their context."),
            Intent::Context {
                customer: "ann@x.example".into()
            }
        );
        assert_eq!(
            Intent::parse("Send a message to +14155550100, about the renewal."),
            Intent::Queue {
                customer: "+14155550100".into(),
                topic: "the renewal".into()
            }
        );
        assert_eq!(
            Intent::parse("Tell me about cus_547."),
            Intent::Context {
                customer: "cus_547".into()
            }
        );
        assert_eq!(Intent::parse("hello there"), Intent::Help);
        assert_eq!(Intent::parse("plan:"), Intent::Help);
        assert_eq!(Intent::Help.buddy(), None);
        assert_eq!(Intent::Churn.buddy(), Some(Buddy::Insights));
    }
}
