//! Executors: what each capability does, over our own store, inside the invocation's write
//! transaction (so its reads see every earlier commit and its writes commit with the ledger
//! row). `preview` answers dry_run without writing anything.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use svc_engine::{
    normalize_email, normalize_phone, Direction, GraphRead, GraphWrite, Node, NodeId, Order,
    WorkspaceTxn,
};
use time::OffsetDateTime;

use crate::clock;
use crate::error::{Error, Result};
use crate::events::{self, MarketingEvent, StreamMessage, ValidEvent};
use crate::ids;
use crate::keys::AgentKey;
use crate::ledger::{self, Budget};
use crate::store::Record;
use crate::workspaces::{self, WorkspaceEntry, WorkspaceSettings};

use super::registry;

/// What an executor may know about the invocation.
pub(crate) struct Ctx<'a> {
    pub key: &'a AgentKey,
    pub workspace: &'a WorkspaceEntry,
    pub settings: &'a WorkspaceSettings,
    /// The budget before this invocation's charge.
    pub budget: &'a Budget,
    /// Credits this invocation is about to be charged.
    pub cost: u64,
    pub now: OffsetDateTime,
    pub request_id: &'a str,
}

pub(crate) struct Outcome {
    pub result: Value,
    /// The customer acted on, recorded on the ledger row.
    pub customer_id: Option<String>,
    /// Real-time message to publish once the invocation has committed.
    pub stream: Option<StreamMessage>,
}

/// Capabilities with a working executor in this build.
pub(super) fn implemented(id: &str) -> bool {
    matches!(
        id,
        "context.get"
            | "account.get"
            | "events.ingest"
            | "memory.write"
            | "report.generate"
            | "crm.mutate"
    )
}

/// Input checks beyond the JSON schema that belong to "input validity" (before the quota):
/// for events.ingest, the ingestion pipeline's own validation (timestamp, sizes, identity).
pub(super) fn prevalidate(id: &str, input: &Value, now: OffsetDateTime) -> Result<()> {
    match id {
        "events.ingest" => valid_event(input, now).map(|_| ()),
        _ => Ok(()),
    }
}

/// The gateway input as the ingestion pipeline's event (the schema already fixed its shape).
fn valid_event(input: &Value, now: OffsetDateTime) -> Result<ValidEvent> {
    let event: MarketingEvent = serde_json::from_value(input.clone())
        .map_err(|e| Error::invalid_input(format!("input: {e}")))?;
    event.validate(now)
}

/// events.ingest through the one ingestion pipeline, inside this invocation's transaction: the
/// event, its touchpoint and the ledger row commit in one batch.
fn events_ingest(
    w: &mut WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    input: &Value,
    commit: bool,
) -> Result<Outcome> {
    let ev = valid_event(input, ctx.now)?;
    if !commit {
        let keys = &ev.input.keys;
        return Ok(Outcome {
            result: json!({
                "would_ingest": ev.event_name(),
                "timestamp": micros_rfc3339(ev.input.ts),
                "channel": ev.input.channel,
                "identity": {
                    "customer_id": keys.customer_id.map(ids::customer_id),
                    "email": keys.email,
                    "phone": keys.phone,
                    "external_id": keys.external_id,
                },
            }),
            customer_id: None,
            stream: None,
        });
    }
    let r = events::apply(w, &ev, ctx.now)?;
    let stream = events::stream_message(&ev, &r);
    Ok(Outcome {
        result: json!({
            "customer_id": r.customer_id,
            "touchpoint_id": r.touchpoint_id,
            "is_new": r.is_new,
            "nodes_mutated": r.nodes_mutated,
            "received_at": r.received_at,
        }),
        customer_id: Some(r.customer_id),
        stream,
    })
}

pub(crate) fn execute(
    id: &str,
    w: &mut WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    input: &Value,
) -> Result<Outcome> {
    match id {
        "context.get" => context_get(w, ctx, input),
        "account.get" => account_get(w, ctx),
        "events.ingest" => events_ingest(w, ctx, input, true),
        "memory.write" => memory_write(w, ctx, input, true),
        "report.generate" => report_generate(w, ctx, input, true),
        "crm.mutate" => crm_mutate(w, ctx, input, true),
        _ => Err(Error::internal(format!("no executor for {id}"))),
    }
}

/// dry_run: the same checks and reads, no writes. Read-only capabilities show their result.
pub(super) fn preview(
    id: &str,
    w: &mut WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    input: &Value,
) -> Result<Outcome> {
    match id {
        "events.ingest" => events_ingest(w, ctx, input, false),
        "memory.write" => memory_write(w, ctx, input, false),
        "report.generate" => report_generate(w, ctx, input, false),
        "crm.mutate" => crm_mutate(w, ctx, input, false),
        other => execute(other, w, ctx, input),
    }
}

fn str_field<'v>(input: &'v Value, name: &str) -> Option<&'v str> {
    input.get(name).and_then(Value::as_str)
}

// ---- customers ----

/// The customer a reference names: `cus_<n>`, else an email (contains `@`), else a phone (when
/// it normalizes as one), else an external id. Not found is a 404.
fn find_customer(w: &WorkspaceTxn<'_, '_>, reference: &str) -> Result<Node> {
    let r = reference.trim();
    let mut candidates: Vec<NodeId> = Vec::new();
    if let Some(id) = ids::parse_customer_id(r) {
        candidates.push(id);
    } else {
        let seek = |prop: &str, values: &[String]| -> Result<Vec<NodeId>> {
            let mut out = Vec::new();
            for v in values {
                let found = w
                    .index_seek(
                        svc_engine::schema::CUSTOMER,
                        prop,
                        &svc_engine::Value::String(v.clone()),
                    )?
                    .unwrap_or_default();
                out.extend(found);
            }
            Ok(out)
        };
        if r.contains('@') {
            let mut values = vec![r.to_owned()];
            values.extend(normalize_email(r));
            candidates = seek("email", &values)?;
        } else if let Some(phone) = normalize_phone(r) {
            candidates = seek("phone", &[r.to_owned(), phone])?;
        }
        if candidates.is_empty() {
            candidates = seek("externalId", &[r.to_owned()])?;
        }
    }
    candidates.sort();
    for id in candidates {
        if let Some(node) = w.node(id)? {
            if node.has_label(svc_engine::schema::CUSTOMER) {
                return Ok(node);
            }
        }
    }
    Err(Error::not_found("customer"))
}

fn prop_str<'n>(node: &'n Node, key: &str) -> Option<&'n str> {
    match node.properties.get(key) {
        Some(svc_engine::Value::String(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

fn customer_label(node: &Node) -> String {
    prop_str(node, "name")
        .or_else(|| prop_str(node, "email"))
        .or_else(|| prop_str(node, "externalId"))
        .map(str::to_owned)
        .unwrap_or_else(|| ids::customer_id(node.id))
}

fn micros_of(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX)
}

fn micros_rfc3339(us: i64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(us) * 1000)
        .map(clock::rfc3339)
        .unwrap_or_else(|_| us.to_string())
}

const DAY_US: i64 = 86_400 * 1_000_000;

/// A touchpoint as context.get reads it.
struct Tp {
    action: String,
    ts: i64,
    sentiment: i8,
    intent: Option<String>,
}

fn touchpoints(w: &WorkspaceTxn<'_, '_>, customer: NodeId) -> Result<Vec<Tp>> {
    let mut out = Vec::new();
    for adj in w.adjacent(
        customer,
        Direction::Outgoing,
        Some(svc_engine::schema::HAS_TOUCHPOINT),
    )? {
        let Some(node) = w.node(adj.neighbour)? else {
            continue;
        };
        let action = prop_str(&node, "action").unwrap_or_default().to_owned();
        let ts = match node.properties.get("ts") {
            Some(svc_engine::Value::DateTime(us)) => *us,
            _ => 0,
        };
        let props = match node.properties.get("properties") {
            Some(svc_engine::Value::Map(m)) => Some(m),
            _ => None,
        };
        let explicit = props.and_then(|m| match m.get("sentiment") {
            Some(svc_engine::Value::Int(i)) => Some((*i).signum() as i8),
            Some(svc_engine::Value::Float(f)) if *f > 0.1 => Some(1),
            Some(svc_engine::Value::Float(f)) if *f < -0.1 => Some(-1),
            Some(svc_engine::Value::Float(_)) => Some(0),
            Some(svc_engine::Value::String(s)) => match s.as_str() {
                "positive" => Some(1),
                "negative" => Some(-1),
                _ => Some(0),
            },
            _ => None,
        });
        let intent = props.and_then(|m| match m.get("intent") {
            Some(svc_engine::Value::String(s)) if !s.is_empty() => Some(s.clone()),
            _ => None,
        });
        out.push(Tp {
            sentiment: explicit.unwrap_or_else(|| keyword_sentiment(&action)),
            action,
            ts,
            intent,
        });
    }
    out.sort_by_key(|t| t.ts);
    Ok(out)
}

const POSITIVE: &[&str] = &[
    "purchase",
    "paid",
    "upgrade",
    "renew",
    "reply_positive",
    "meeting_booked",
    "demo_completed",
    "promoter",
    "praise",
    "activated",
    "converted",
    "won",
];
const NEGATIVE: &[&str] = &[
    "complaint",
    "cancel",
    "churn",
    "unsubscribe",
    "bounce",
    "refund",
    "downgrade",
    "payment_failed",
    "detractor",
    "negative",
    "escalat",
    "lost",
];
const INTENT: &[&str] = &[
    "pricing",
    "demo",
    "trial",
    "quote",
    "checkout",
    "signup",
    "sign_up",
    "contact_sales",
    "upgrade",
    "proposal",
    "cart",
];
const PURCHASE: &[&str] = &[
    "purchase",
    "paid",
    "subscri",
    "order_completed",
    "converted",
    "won",
    "renew",
];
const CHURN: &[&str] = &["cancel", "churn"];
const OPPORTUNITY: &[&str] = &[
    "demo",
    "trial",
    "quote",
    "proposal",
    "meeting",
    "contact_sales",
];
const LOOP_OPEN: &[&str] = &["requested", "opened", "asked", "started"];
const LOOP_CLOSE: &[&str] = &[
    "completed",
    "closed",
    "resolved",
    "scheduled",
    "booked",
    "answered",
    "finished",
    "cancelled",
];

fn has_any(action: &str, words: &[&str]) -> bool {
    let a = action.to_ascii_lowercase();
    words.iter().any(|w| a.contains(w))
}

fn keyword_sentiment(action: &str) -> i8 {
    // Negative first: "cancelled_upgrade" is bad news.
    if has_any(action, NEGATIVE) {
        -1
    } else if has_any(action, POSITIVE) {
        1
    } else {
        0
    }
}

/// `demo_requested` -> ("demo", "requested").
fn stem_and_suffix(action: &str) -> Option<(&str, &str)> {
    action.rsplit_once('_')
}

fn average(scores: impl Iterator<Item = i8>) -> Option<f64> {
    let (mut sum, mut n) = (0i64, 0i64);
    for s in scores.filter(|s| *s != 0) {
        sum += i64::from(s);
        n += 1;
    }
    (n > 0).then(|| sum as f64 / n as f64)
}

/// A memory note on a customer (`memory.write`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MemoryNote {
    /// `mem_` + time-ordered base62.
    pub id: String,
    pub customer_id: String,
    pub kind: String,
    pub text: String,
    pub tags: Vec<String>,
    pub key_id: String,
    pub agent: String,
    pub request_id: String,
    pub created_at: String,
}

impl Record for MemoryNote {
    const KIND: &'static str = "memory_note";
    fn id(&self) -> String {
        self.id.clone()
    }
    fn indexes(&self) -> Vec<(&'static str, String)> {
        vec![("customer", self.customer_id.clone())]
    }
}

fn notes_of(w: &WorkspaceTxn<'_, '_>, customer_id: &str) -> Result<Vec<MemoryNote>> {
    let mut notes = w.find_records::<MemoryNote>("customer", customer_id)?;
    notes.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(notes)
}

fn time_ordered_id(prefix: &str, now: OffsetDateTime) -> String {
    let micros = u64::try_from(micros_of(now)).unwrap_or(0);
    format!(
        "{prefix}_{}{}",
        ids::base62_fixed(micros, 11),
        ids::random_base62(6)
    )
}

fn context_get(w: &mut WorkspaceTxn<'_, '_>, ctx: &Ctx<'_>, input: &Value) -> Result<Outcome> {
    let reference = str_field(input, "customer").unwrap_or_default();
    let customer = find_customer(w, reference)?;
    let customer_id = ids::customer_id(customer.id);
    let tps = touchpoints(w, customer.id)?;
    let notes = notes_of(w, &customer_id)?;
    let now_us = micros_of(ctx.now);
    let window_start = now_us - 30 * DAY_US;
    let half = now_us - 15 * DAY_US;
    let recent: Vec<&Tp> = tps.iter().filter(|t| t.ts >= window_start).collect();

    // Sentiment: the last 15 days against the 15 before, over events that carry a sentiment.
    let recent_score = average(recent.iter().filter(|t| t.ts >= half).map(|t| t.sentiment));
    let prior_score = average(recent.iter().filter(|t| t.ts < half).map(|t| t.sentiment));
    let delta = recent_score.unwrap_or(0.0) - prior_score.unwrap_or(0.0);
    let direction = if delta > 0.25 {
        "improving"
    } else if delta < -0.25 {
        "declining"
    } else {
        "stable"
    };
    let wanted: i8 = match direction {
        "improving" => 1,
        "declining" => -1,
        _ => 0,
    };
    let trigger = recent
        .iter()
        .rev()
        .find(|t| t.sentiment != 0 && (wanted == 0 || t.sentiment == wanted))
        .map(|t| t.action.clone());

    // Intent: distinct recent intent-bearing actions (and explicit `intent` properties), newest
    // first.
    let mut intent_signals: Vec<String> = Vec::new();
    for t in recent.iter().rev() {
        let signal = t
            .intent
            .clone()
            .or_else(|| has_any(&t.action, INTENT).then(|| t.action.clone()));
        if let Some(s) = signal {
            if !intent_signals.contains(&s) && intent_signals.len() < 20 {
                intent_signals.push(s);
            }
        }
    }

    // Open loops: an `<x>_requested` / `<x>_opened` not followed by a closing `<x>_...`.
    let mut open_loops: Vec<Value> = Vec::new();
    for (i, t) in tps.iter().enumerate() {
        let Some((stem, suffix)) = stem_and_suffix(&t.action) else {
            continue;
        };
        if !LOOP_OPEN.contains(&suffix) {
            continue;
        }
        let closed = tps[i + 1..].iter().any(|later| {
            stem_and_suffix(&later.action)
                .is_some_and(|(s, x)| s == stem && LOOP_CLOSE.contains(&x))
        });
        if !closed {
            open_loops.push(
                json!({"kind": "touchpoint", "text": t.action, "since": micros_rfc3339(t.ts)}),
            );
        }
    }
    let mut blockers: Vec<Value> = Vec::new();
    for n in &notes {
        let item = json!({"kind": "memory", "text": n.text, "since": n.created_at});
        match n.kind.as_str() {
            "open_loop" => open_loops.push(item),
            "blocker" => blockers.push(item),
            _ => {}
        }
    }
    // Negative events of the window after the last positive one are blockers too.
    let last_positive = recent
        .iter()
        .rposition(|t| t.sentiment > 0)
        .map_or(0, |p| p + 1);
    for t in &recent[last_positive..] {
        if t.sentiment < 0 {
            blockers.push(
                json!({"kind": "touchpoint", "text": t.action, "since": micros_rfc3339(t.ts)}),
            );
        }
    }

    // Decisions: side-effecting invocations on this customer (the ledger) and decision notes.
    let mut decisions: Vec<Value> = Vec::new();
    for row in ledger::rows_for_customer(w, &customer_id)? {
        // Recorded observations (events.ingest) are history, not decisions.
        if registry::is_decision(&row.capability) && row.status != "preview" {
            decisions.push(json!({"agent": row.agent, "action": row.capability,
                "outcome": row.status, "ts": row.created_at}));
        }
    }
    for n in notes.iter().filter(|n| n.kind == "decision") {
        decisions.push(
            json!({"agent": n.agent, "action": n.text, "outcome": "recorded",
            "ts": n.created_at}),
        );
    }
    decisions.sort_by(|a, b| b["ts"].as_str().cmp(&a["ts"].as_str()));
    decisions.truncate(10);

    let stage = lifecycle_stage(
        &customer,
        &tps,
        recent.len(),
        direction,
        !blockers.is_empty(),
    );
    let last_seen = match customer.properties.get("lastSeen") {
        Some(svc_engine::Value::DateTime(us)) => Some(micros_rfc3339(*us)),
        _ => None,
    };
    let result = json!({
        "customer": customer_label(&customer),
        "customer_id": customer_id,
        "lifecycle_stage": stage,
        "sentiment_trajectory": {
            "window_days": 30,
            "direction": direction,
            "trigger": trigger,
            "recent_score": recent_score.unwrap_or(0.0),
            "prior_score": prior_score.unwrap_or(0.0),
        },
        "intent_signals": intent_signals,
        "open_loops": open_loops,
        "blockers": blockers,
        "recent_decisions": decisions,
        "touchpoint_count": tps.len(),
        "last_seen": last_seen,
    });
    Ok(Outcome {
        result,
        customer_id: Some(customer_id),
        stream: None,
    })
}

const STAGES: &[&str] = &[
    "lead",
    "engaged",
    "opportunity",
    "customer",
    "at_risk",
    "churned",
];

fn lifecycle_stage(
    customer: &Node,
    tps: &[Tp],
    recent: usize,
    direction: &str,
    blocked: bool,
) -> &'static str {
    // An explicit stage on the customer (set by a CRM sync or crm.mutate) wins.
    if let Some(s) =
        prop_str(customer, "lifecycleStage").or_else(|| prop_str(customer, "lifecycle_stage"))
    {
        if let Some(known) = STAGES.iter().find(|k| **k == s) {
            return known;
        }
    }
    let last = |words: &[&str]| tps.iter().rposition(|t| has_any(&t.action, words));
    match (last(PURCHASE), last(CHURN)) {
        (_, Some(c)) if last(PURCHASE).is_none_or(|p| c > p) && last(PURCHASE).is_some() => {
            "churned"
        }
        (Some(_), _) if direction == "declining" || blocked => "at_risk",
        (Some(_), _) => "customer",
        (None, _) if last(OPPORTUNITY).is_some() => "opportunity",
        _ if recent >= 3 => "engaged",
        _ => "lead",
    }
}

fn account_get(w: &mut WorkspaceTxn<'_, '_>, ctx: &Ctx<'_>) -> Result<Outcome> {
    let key = ctx.key;
    // The account as it stands once this invocation's charge is counted.
    let used_after = |u: u64| u.saturating_add(ctx.cost);
    let quota_used = used_after(ctx.budget.used());
    let count = |label: &str| -> Result<u64> { Ok(w.label_count(label)?) };
    let result = json!({
        "workspace_id": workspaces::render_id(key.workspace_id()),
        "workspace_name": ctx.workspace.name,
        "plan": ctx.settings.plan.as_str(),
        "read_only": ctx.settings.read_only,
        "month": ctx.budget.month,
        "quota": {
            "plan": ctx.budget.plan,
            "limit": ctx.budget.limit,
            "used": quota_used,
            "remaining": ctx.budget.limit.saturating_sub(quota_used),
        },
        "workspace_credits_used": used_after(ctx.budget.workspace_used),
        "key": {
            "id": key.id,
            "agent": key.agent,
            "grants": key.grants,
            "allowed_modes": key.allowed_modes,
            "auto_run": key.auto_run,
            "quota_override_monthly": key.quota_override_monthly,
            "credits_used": used_after(ctx.budget.key_used),
        },
        "counts": {
            "customers": count("Customer")?,
            "touchpoints": count("Touchpoint")?,
            "campaigns": count("Campaign")?,
            "opportunities": count("Opportunity")?,
        },
    });
    Ok(Outcome {
        result,
        customer_id: None,
        stream: None,
    })
}

fn memory_write(
    w: &mut WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    input: &Value,
    commit: bool,
) -> Result<Outcome> {
    let customer = find_customer(w, str_field(input, "customer").unwrap_or_default())?;
    let customer_id = ids::customer_id(customer.id);
    let kind = str_field(input, "kind").unwrap_or("note").to_owned();
    let text = str_field(input, "text").unwrap_or_default().to_owned();
    let tags: Vec<String> = input
        .get("tags")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect()
        })
        .unwrap_or_default();
    if !commit {
        return Ok(Outcome {
            result: json!({"would_write": "memory_note", "customer_id": customer_id,
                "kind": kind, "text": text, "tags": tags}),
            customer_id: Some(customer_id),
            stream: None,
        });
    }
    let note = MemoryNote {
        id: time_ordered_id("mem", ctx.now),
        customer_id: customer_id.clone(),
        kind,
        text,
        tags,
        key_id: ctx.key.id.clone(),
        agent: ctx.key.agent.clone(),
        request_id: ctx.request_id.to_owned(),
        created_at: clock::rfc3339(ctx.now),
    };
    w.put_record(&note)?;
    Ok(Outcome {
        result: json!({"memory_id": note.id, "customer_id": customer_id, "kind": note.kind,
            "created_at": note.created_at}),
        customer_id: Some(customer_id),
        stream: None,
    })
}

/// A stored report (`report.generate`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub id: String,
    pub request_id: String,
    pub key_id: String,
    pub created_at: String,
    pub body: Value,
}

impl Record for Report {
    const KIND: &'static str = "report";
    fn id(&self) -> String {
        self.id.clone()
    }
}

/// Touchpoints read for one report at most; past it the report says `truncated`.
const REPORT_MAX_TOUCHPOINTS: usize = 10_000;

fn report_generate(
    w: &mut WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    input: &Value,
    commit: bool,
) -> Result<Outcome> {
    let days = input
        .get("window_days")
        .and_then(Value::as_i64)
        .unwrap_or(7);
    let now_us = micros_of(ctx.now);
    let from_us = now_us - days * DAY_US;
    let lower = svc_engine::Value::DateTime(from_us);
    let upper = svc_engine::Value::DateTime(now_us);
    let ids_in_window = w
        .index_range(
            svc_engine::schema::TOUCHPOINT,
            "ts",
            Bound::Included(&lower),
            Bound::Included(&upper),
            Order::Ascending,
            Some(REPORT_MAX_TOUCHPOINTS + 1),
        )?
        .ok_or_else(|| Error::internal("no ordered index on Touchpoint.ts"))?;
    let truncated = ids_in_window.len() > REPORT_MAX_TOUCHPOINTS;
    let mut by_action: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_channel: BTreeMap<String, u64> = BTreeMap::new();
    let mut active: BTreeSet<NodeId> = BTreeSet::new();
    let mut touchpoints = 0u64;
    for id in ids_in_window.into_iter().take(REPORT_MAX_TOUCHPOINTS) {
        let Some(node) = w.node(id)? else { continue };
        touchpoints += 1;
        *by_action
            .entry(prop_str(&node, "action").unwrap_or("unknown").to_owned())
            .or_default() += 1;
        *by_channel
            .entry(prop_str(&node, "channel").unwrap_or("unknown").to_owned())
            .or_default() += 1;
        for adj in w.adjacent(
            id,
            Direction::Incoming,
            Some(svc_engine::schema::HAS_TOUCHPOINT),
        )? {
            active.insert(adj.neighbour);
        }
    }
    let report_id = commit.then(|| time_ordered_id("rpt", ctx.now));
    let body = json!({
        "report_id": report_id,
        "kind": "activity",
        "window_days": days,
        "from": micros_rfc3339(from_us),
        "to": micros_rfc3339(now_us),
        "touchpoints": touchpoints,
        "active_customers": active.len(),
        "customers_total": w.label_count(svc_engine::schema::CUSTOMER)?,
        "by_action": by_action,
        "by_channel": by_channel,
        "truncated": truncated,
    });
    if let Some(id) = &report_id {
        w.put_record(&Report {
            id: id.clone(),
            request_id: ctx.request_id.to_owned(),
            key_id: ctx.key.id.clone(),
            created_at: clock::rfc3339(ctx.now),
            body: body.clone(),
        })?;
    }
    Ok(Outcome {
        result: body,
        customer_id: None,
        stream: None,
    })
}

/// Properties crm.mutate may not touch: identity keys move only through ingestion and dedupe
/// (so the identity index stays exact), and `lastSeen` only forward through events.
const RESERVED_PROPERTIES: &[&str] = &[
    "email",
    "phone",
    "externalId",
    "external_id",
    "cio_id",
    "lastSeen",
];

fn crm_mutate(
    w: &mut WorkspaceTxn<'_, '_>,
    _ctx: &Ctx<'_>,
    input: &Value,
    commit: bool,
) -> Result<Outcome> {
    let customer = find_customer(w, str_field(input, "customer").unwrap_or_default())?;
    let customer_id = ids::customer_id(customer.id);
    let empty = serde_json::Map::new();
    let set = input
        .get("set")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let unset: Vec<&str> = input
        .get("unset")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for k in set.keys().map(String::as_str).chain(unset.iter().copied()) {
        if RESERVED_PROPERTIES.contains(&k) {
            return Err(Error::invalid_field(
                "input",
                k,
                "identity keys and lastSeen cannot be changed through crm.mutate",
            ));
        }
    }
    if set.is_empty() && unset.is_empty() {
        return Err(Error::invalid_input(
            "input: nothing to change (set or unset)",
        ));
    }
    let mut changed: BTreeSet<String> = set.keys().cloned().collect();
    changed.extend(
        unset
            .iter()
            .filter(|k| customer.properties.contains_key(**k))
            .map(|k| (*k).to_owned()),
    );
    if !commit {
        return Ok(Outcome {
            result: json!({"would_change": changed, "customer_id": customer_id,
                "set": set, "unset": unset}),
            customer_id: Some(customer_id),
            stream: None,
        });
    }
    let mut properties = customer.properties.clone();
    for (k, v) in set {
        properties.insert(k.clone(), events::json_to_value(v.clone()));
    }
    for k in &unset {
        properties.remove(*k);
    }
    w.replace_node_properties(customer.id, properties)?;
    Ok(Outcome {
        result: json!({"customer_id": customer_id, "changed": changed}),
        customer_id: Some(customer_id),
        stream: None,
    })
}
