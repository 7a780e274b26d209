//! Reporting (SPEC.md "Reporting summary", "Reasoning entry", "Reporting"): the dashboard
//! summary computed from one graph snapshot and cached 30 s per workspace, and the recent
//! reasoning feed from the message store (with its synthetic fallback). No HTTP types.
//!
//! Definitions where SPEC.md leaves room (also in docs/playbooks-brand-reporting.md):
//! - a "signal" is a Touchpoint; windows are half-open `[start, now)`; `signalsHourly[i]` counts
//!   `[now-24h+i h, now-24h+(i+1) h)`, so the 24 buckets add up to `signalsLast24h`;
//! - `activeSignals`: Customers with a touchpoint in the last 7 days;
//! - `criticalCount`: of those, the ones whose node or one of whose 7-day touchpoints carries
//!   `hyper_signal: true` or `signal_strength >= 0.75`;
//! - `pipelineArr`: per open Opportunity the first numeric of `amount`, `arr`,
//!   `estimatedValue`, summed and truncated to whole units (amounts are currency units: the
//!   pipeline converts Stripe's cents); an Opportunity is open unless its `status` is `won` or
//!   `lost`, or, without a status, its AT_STAGE Stage name or `stage` property closes it
//!   (`pipeline::Status::of_stage`: `won`, `closedwon`, `closed_lost`, `Closed Won`, ...);
//! - `avgConfidence`: mean of each Customer's `confidence`, else `icp_match_score` (fractions
//!   are scaled to 0-100); with none, the mean `confidence` of relationships; else 0;
//! - `uptimePct`: 100 whenever the summary could be computed from the store (the workspace's
//!   data is being served); `confidencePptDelta`: `(avgConfidence - 50) / 10`, one decimal.

use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use svc_engine::schema::{CUSTOMER, HAS_TOUCHPOINT, TOUCHPOINT};
use svc_engine::{Direction, GraphRead, Node, NodeId, Order, Value};

use svc_core::error::{Error, Result};
use svc_core::plumbing::clock;
use svc_core::plumbing::ids::PublicIds;
use svc_core::store::{Record, RecordScan, Store, WorkspaceId};
use svc_core::vocabulary::{prop as vocab, OPPORTUNITY, RECOMMENDATION};
use svc_domains::graph_api::node_with_label;
use svc_domains::pipeline::Status;
use svc_domains::playbooks::Buddy;

pub const CACHE_TTL: Duration = Duration::from_secs(30);
pub const ARR_TARGET_CENTS: i64 = 5_000_000;
pub const CRITICAL_CAPACITY: u64 = 8;
pub const CRITICAL_STRENGTH: f64 = 0.75;
pub const REASONING_DEFAULT: usize = 25;
pub const REASONING_MAX: usize = 100;
pub const REASONING_TEXT_CHARS: usize = 240;
/// Workspaces whose summary is cached at once; past it, expired entries are dropped first.
const CACHE_MAX_WORKSPACES: usize = 10_000;

const HOUR_US: i64 = 3_600_000_000;
const DAY_US: i64 = 24 * HOUR_US;

#[derive(Clone, Debug, Default, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub active_signals: u64,
    pub pipeline_arr: i64,
    pub open_tasks: u64,
    pub avg_confidence: f64,
    pub signals_last24h: u64,
    pub signals_prev24h: u64,
    pub signals_hourly: Vec<u64>,
    pub arr_target_cents: i64,
    pub critical_count: u64,
    pub critical_capacity: u64,
    pub agents_total: u64,
    pub agents_healthy: u64,
    pub uptime_pct: f64,
    pub confidence_ppt_delta: f64,
}

impl Summary {
    /// The answer when the summary cannot be computed: every figure zero (SPEC.md: never 500).
    pub fn zero() -> Summary {
        Summary {
            signals_hourly: vec![0; 24],
            ..Summary::default()
        }
    }
}

/// Per-workspace cache: a summary is served while younger than 30 s and while the workspace's
/// graph generation has not moved (any Customer/Opportunity/Touchpoint write moves it).
#[derive(Debug, Default)]
pub struct SummaryCache {
    entries: Mutex<HashMap<WorkspaceId, (u64, Instant, Summary)>>,
}

impl SummaryCache {
    fn get(&self, ws: WorkspaceId, generation: u64) -> Option<Summary> {
        let entries = self.entries.lock();
        let (g, at, s) = entries.get(&ws)?;
        (*g == generation && at.elapsed() < CACHE_TTL).then(|| s.clone())
    }

    fn put(&self, ws: WorkspaceId, generation: u64, summary: Summary) {
        let mut entries = self.entries.lock();
        if entries.len() >= CACHE_MAX_WORKSPACES {
            entries.retain(|_, (_, at, _)| at.elapsed() < CACHE_TTL);
            if entries.len() >= CACHE_MAX_WORKSPACES {
                entries.clear();
            }
        }
        entries.insert(ws, (generation, Instant::now(), summary));
    }
}

/// The summary, from the cache when current; an internal failure answers [`Summary::zero`].
pub async fn summary(store: &Store, cache: &SummaryCache, ws: WorkspaceId) -> Summary {
    // Generation first, snapshot second: a write committed in between makes the cached value
    // newer than its generation, never older.
    let generation = store.graph_generation(ws);
    if let Some(s) = cache.get(ws, generation) {
        return s;
    }
    let now_us = (clock::now().unix_timestamp_nanos() / 1000) as i64;
    match store.read(ws, move |snap| compute(snap, now_us)).await {
        Ok(s) => {
            cache.put(ws, generation, s.clone());
            s
        }
        Err(e) => {
            tracing::warn!(error = %e, workspace = %ws, "reporting summary failed; answering zeros");
            Summary::zero()
        }
    }
}

fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) if f.is_finite() => Some(*f),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
}

fn prop<'a>(n: &'a Node, key: &str) -> Option<&'a Value> {
    n.properties.get(key)
}

/// `properties.<key>` of a touchpoint (its free-form event properties).
fn event_prop<'a>(n: &'a Node, key: &str) -> Option<&'a Value> {
    match n.properties.get("properties")? {
        Value::Map(m) => m.get(key),
        _ => None,
    }
}

fn is_critical(v: (Option<&Value>, Option<&Value>)) -> bool {
    matches!(v.0, Some(Value::Bool(true))) || num(v.1).is_some_and(|s| s >= CRITICAL_STRENGTH)
}

fn ts_of(n: &Node) -> Option<i64> {
    match prop(n, "ts") {
        Some(Value::DateTime(us)) => Some(*us),
        _ => None,
    }
}

/// Whether a stage name closes an opportunity (`pipeline::Status::of_stage`: won or lost).
pub fn stage_is_closed(stage: &str) -> bool {
    Status::of_stage(stage) != Status::Open
}

/// A 0-100 confidence from a stored value: fractions (<= 1) are scaled, the rest clamped.
fn percent(v: f64) -> f64 {
    if v <= 1.0 {
        (v * 100.0).max(0.0)
    } else {
        v.min(100.0)
    }
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Every figure of the summary from one snapshot at `now_us` (engine microseconds).
pub fn compute<R: GraphRead + ?Sized>(r: &R, now_us: i64) -> Result<Summary> {
    let range = |from: i64| -> Result<Vec<NodeId>> {
        r.index_range(
            TOUCHPOINT,
            "ts",
            Bound::Included(&Value::DateTime(from)),
            Bound::Excluded(&Value::DateTime(now_us)),
            Order::Ascending,
            None,
        )?
        .ok_or_else(|| Error::internal("no ordered index on Touchpoint.ts"))
    };
    // Touchpoints of the last 7 days (which include the last 48 hours).
    let mut hourly = vec![0u64; 24];
    let (mut last24, mut prev24) = (0u64, 0u64);
    let mut active: HashSet<NodeId> = HashSet::new();
    let mut critical: HashSet<NodeId> = HashSet::new();
    for id in range(now_us - 7 * DAY_US)? {
        let Some(tp) = r.node(id)? else { continue };
        let Some(ts) = ts_of(&tp) else { continue };
        let age = now_us - ts;
        if age <= DAY_US {
            last24 += 1;
            let bucket = ((ts - (now_us - DAY_US)) / HOUR_US).clamp(0, 23) as usize;
            hourly[bucket] += 1;
        } else if age <= 2 * DAY_US {
            prev24 += 1;
        }
        let critical_event = is_critical((
            event_prop(&tp, "hyper_signal"),
            event_prop(&tp, "signal_strength"),
        ));
        for adj in r.adjacent(id, Direction::Incoming, Some(HAS_TOUCHPOINT))? {
            if active.insert(adj.neighbour) || critical_event {
                let node = node_with_label(r, adj.neighbour, CUSTOMER)?;
                if let Some(c) = node {
                    if critical_event
                        || is_critical((prop(&c, "hyper_signal"), prop(&c, "signal_strength")))
                    {
                        critical.insert(c.id);
                    }
                } else {
                    active.remove(&adj.neighbour);
                }
            }
        }
    }

    let stages = open_pipeline(r)?;
    let open: u64 = stages.iter().map(|s| s.count).sum();
    let pipeline: f64 = stages.iter().map(|s| s.amount).sum();

    let mut confidences = Vec::new();
    let customers = r.label_scan(CUSTOMER)?;
    for id in &customers {
        if let Some(c) = r.node(*id)? {
            if let Some(v) =
                num(prop(&c, "confidence")).or_else(|| num(prop(&c, "icp_match_score")))
            {
                confidences.push(percent(v));
            }
        }
    }
    let avg = match mean(&confidences) {
        Some(m) => m,
        None => relationship_confidence(r, &customers)?.unwrap_or(0.0),
    };
    let avg = (avg * 10.0).round() / 10.0;
    let agents = Buddy::ALL.len() as u64;
    Ok(Summary {
        active_signals: active.len() as u64,
        pipeline_arr: pipeline.trunc() as i64,
        open_tasks: open,
        avg_confidence: avg,
        signals_last24h: last24,
        signals_prev24h: prev24,
        signals_hourly: hourly,
        arr_target_cents: ARR_TARGET_CENTS,
        critical_count: critical.len() as u64,
        critical_capacity: CRITICAL_CAPACITY,
        agents_total: agents,
        agents_healthy: agents,
        uptime_pct: 100.0,
        confidence_ppt_delta: ((avg - 50.0) / 10.0 * 10.0).round() / 10.0,
    })
}

/// One stage of the open pipeline: its open opportunities and their summed amount.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StageTotal {
    /// The AT_STAGE Stage name, else the `stage` property; `(none)` without either.
    pub stage: String,
    pub count: u64,
    pub amount: f64,
    /// The opportunities' `currency` when they all name the same one.
    pub currency: Option<String>,
}

pub use svc_domains::pipeline::{funnel_rank, NO_STAGE};

/// Every open Opportunity, grouped by stage in funnel order ([`funnel_rank`]). The summary's
/// `pipelineArr` and `openTasks` are the sums of this list, so a chart drawn from it always
/// adds up to the figures.
pub fn open_pipeline<R: GraphRead + ?Sized>(r: &R) -> Result<Vec<StageTotal>> {
    let mut by_stage: HashMap<String, (StageTotal, bool)> = HashMap::new();
    for id in r.label_scan(OPPORTUNITY)? {
        let Some(o) = r.node(id)? else { continue };
        // Its `status` (kept by the pipeline), else what its `stage` / AT_STAGE name implies.
        if svc_domains::pipeline::status_of(r, &o)? != Status::Open {
            continue;
        }
        let stage = svc_domains::pipeline::stage_of(r, &o)?.unwrap_or_else(|| NO_STAGE.into());
        let amount = [vocab::AMOUNT, "arr", "estimatedValue"]
            .iter()
            .find_map(|k| num(prop(&o, k)))
            .unwrap_or(0.0);
        let currency = match prop(&o, vocab::CURRENCY) {
            Some(Value::String(c)) if !c.trim().is_empty() => Some(c.trim().to_ascii_uppercase()),
            _ => None,
        };
        let (total, mixed) = by_stage.entry(stage.clone()).or_insert_with(|| {
            (
                StageTotal {
                    stage,
                    currency: currency.clone(),
                    ..StageTotal::default()
                },
                false,
            )
        });
        if total.count > 0 && total.currency != currency {
            *mixed = true;
        }
        total.count += 1;
        total.amount += amount;
    }
    let mut stages: Vec<StageTotal> = by_stage
        .into_values()
        .map(|(mut t, mixed)| {
            if mixed {
                t.currency = None;
            }
            t
        })
        .collect();
    stages.sort_by_cached_key(|s| funnel_rank(&s.stage));
    Ok(stages)
}

/// [`open_pipeline`] of a workspace, read from one snapshot.
pub async fn pipeline(store: &Store, ws: WorkspaceId) -> Result<Vec<StageTotal>> {
    store.read(ws, |snap| open_pipeline(snap)).await
}

/// Mean `confidence` of the relationships touching customers (the fallback of avgConfidence).
fn relationship_confidence<R: GraphRead + ?Sized>(
    r: &R,
    customers: &[NodeId],
) -> Result<Option<f64>> {
    let mut seen = HashSet::new();
    let mut values = Vec::new();
    for id in customers {
        for dir in [Direction::Outgoing, Direction::Incoming] {
            for adj in r.adjacent(*id, dir, None)? {
                if !seen.insert(adj.edge) {
                    continue;
                }
                if let Some(e) = r.edge(adj.edge)? {
                    if let Some(v) = num(e.properties.get("confidence")) {
                        values.push(percent(v));
                    }
                }
            }
        }
    }
    Ok(mean(&values))
}

// ---- recent reasoning ----

/// One assistant turn of a buddy, kept per workspace (the message store).
#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// `msg_...`, time-ordered.
    pub id: String,
    pub session_id: String,
    /// As the client sent it; unknown ids read as `insights` in the reasoning feed.
    pub buddy_id: String,
    pub text: String,
    /// Epoch milliseconds.
    pub ts: i64,
}

impl Record for AssistantMessage {
    const KIND: &'static str = "assistant_message";
    fn id(&self) -> String {
        self.id.clone()
    }
}

/// Body of `POST /v1/messages`.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewMessage {
    /// 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub session_id: String,
    /// 1 to 64 characters.
    #[schema(min_length = 1, max_length = 64)]
    pub buddy_id: String,
    /// 1 to 20,000 characters.
    #[schema(min_length = 1, max_length = 20000)]
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningEntry {
    pub id: String,
    pub session_id: String,
    /// Epoch milliseconds.
    pub ts: i64,
    pub buddy_id: String,
    /// At most 240 characters (cut with an ellipsis).
    pub text: String,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct ReasoningList {
    /// Oldest first.
    pub entries: Vec<ReasoningEntry>,
}

/// `limit` clamped to 1-100; absent means 25.
pub fn clamp_limit(limit: Option<i64>) -> usize {
    limit.map_or(REASONING_DEFAULT, |l| {
        l.clamp(1, REASONING_MAX as i64) as usize
    })
}

/// At most 240 characters: longer text keeps 239 and gains an ellipsis.
pub fn truncate(text: &str) -> String {
    if text.chars().count() <= REASONING_TEXT_CHARS {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(REASONING_TEXT_CHARS - 1).collect();
    out.push('…');
    out
}

/// A known specialist id as it is; anything else becomes `insights`.
pub fn buddy_or_insights(id: &str) -> String {
    Buddy::parse(id)
        .unwrap_or(Buddy::Insights)
        .as_str()
        .to_owned()
}

/// Stores one assistant turn.
pub async fn append_message(
    store: &Store,
    ws: WorkspaceId,
    m: NewMessage,
) -> Result<AssistantMessage> {
    for (field, value, max) in [
        ("sessionId", &m.session_id, 200),
        ("buddyId", &m.buddy_id, 64),
        ("text", &m.text, 20_000),
    ] {
        let n = value.chars().count();
        if n == 0 || n > max {
            return Err(
                Error::invalid_input(format!("{field}: 1 to {max} characters (got {n})"))
                    .with_details(serde_json::json!({ "field": field, "max_chars": max })),
            );
        }
    }
    let record = AssistantMessage {
        id: svc_domains::playbooks::time_ordered_id("msg"),
        session_id: m.session_id,
        buddy_id: m.buddy_id,
        text: m.text,
        ts: (clock::now().unix_timestamp_nanos() / 1_000_000) as i64,
    };
    store
        .write(move |tx| {
            svc_core::workspaces::ensure_writable(tx, ws)?;
            tx.put(ws, &record)?;
            Ok(record)
        })
        .await
}

/// The most recent assistant turns (oldest first), or the synthetic feed when there are none.
pub async fn recent_reasoning(
    store: &Store,
    ws: WorkspaceId,
    limit: usize,
) -> Result<ReasoningList> {
    let mut messages = store
        .scan::<AssistantMessage>(
            ws,
            RecordScan {
                reverse: true,
                limit: Some(limit),
                ..RecordScan::default()
            },
        )
        .await?;
    if messages.is_empty() {
        let now_ms = (clock::now().unix_timestamp_nanos() / 1_000_000) as i64;
        let ids = store.ids().clone();
        let entries = store
            .read(ws, move |snap| synthetic(&ids, snap, limit, now_ms))
            .await?;
        return Ok(ReasoningList { entries });
    }
    messages.reverse();
    Ok(ReasoningList {
        entries: messages
            .into_iter()
            .map(|m| ReasoningEntry {
                id: m.id,
                session_id: m.session_id,
                ts: m.ts,
                buddy_id: buddy_or_insights(&m.buddy_id),
                text: truncate(&m.text),
            })
            .collect(),
    })
}

fn text_prop(n: &Node, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match prop(n, k) {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        _ => None,
    })
}

/// The buddy a touchpoint's activity belongs to, by what the event is about.
fn buddy_for_touchpoint(tp: &Node) -> Buddy {
    let action = text_prop(tp, &["action"])
        .unwrap_or_default()
        .to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| action.contains(w));
    if has(&[
        "deal",
        "opportunit",
        "stage",
        "contract",
        "invoice",
        "purchase",
        "order",
    ]) {
        Buddy::Pipeline
    } else if text_prop(tp, &["campaignId"]).is_some()
        || has(&["email", "campaign", "click", "open"])
    {
        Buddy::Campaign
    } else if has(&["signup", "sign_up", "lead", "visit", "trial", "demo"]) {
        Buddy::Prospect
    } else {
        Buddy::Insights
    }
}

/// Entries built from Recommendation nodes and recent Touchpoints; never empty.
pub fn synthetic<R: GraphRead + ?Sized>(
    ids: &PublicIds,
    r: &R,
    limit: usize,
    now_ms: i64,
) -> Result<Vec<ReasoningEntry>> {
    let mut entries = Vec::new();
    for id in r.label_scan(RECOMMENDATION)? {
        let Some(n) = r.node(id)? else { continue };
        let text = text_prop(
            &n,
            &["text", "reasoning", "reason", "title", "action", "name"],
        )
        .unwrap_or_else(|| "Recommendation recorded".to_owned());
        let buddy = text_prop(&n, &["buddyId", "buddy_id", "agent"]).unwrap_or_default();
        let ts = match prop(&n, "ts").or_else(|| prop(&n, "createdAt")) {
            Some(Value::DateTime(us)) => us / 1000,
            Some(Value::Int(ms)) => *ms,
            _ => now_ms,
        };
        entries.push(ReasoningEntry {
            id: format!("syn_{}", ids.node(&n.labels, id)),
            session_id: "synthetic".into(),
            ts,
            buddy_id: buddy_or_insights(&buddy),
            text: truncate(&text),
        });
    }
    let recent = r
        .index_range(
            TOUCHPOINT,
            "ts",
            Bound::Unbounded,
            Bound::Unbounded,
            Order::Descending,
            Some(limit),
        )?
        .unwrap_or_default();
    for id in recent {
        let Some(tp) = r.node(id)? else { continue };
        let action = text_prop(&tp, &["action"]).unwrap_or_else(|| "event".into());
        let channel = text_prop(&tp, &["channel"])
            .map(|c| format!(" via {c}"))
            .unwrap_or_default();
        let who = r
            .adjacent(id, Direction::Incoming, Some(HAS_TOUCHPOINT))?
            .first()
            .map(|a| ids.customer(a.neighbour))
            .unwrap_or_else(|| "a customer".into());
        entries.push(ReasoningEntry {
            id: format!("syn_{}", ids.touchpoint(id)),
            session_id: "synthetic".into(),
            ts: ts_of(&tp).map_or(now_ms, |us| us / 1000),
            buddy_id: buddy_for_touchpoint(&tp).as_str().into(),
            text: truncate(&format!(
                "Noticed {action}{channel} from {who}; watching for follow-up signals."
            )),
        });
    }
    if entries.is_empty() {
        entries.push(ReasoningEntry {
            id: "syn_welcome".into(),
            session_id: "synthetic".into(),
            ts: now_ms,
            buddy_id: Buddy::Insights.as_str().into(),
            text: "No activity yet: send events or connect a source and the buddies will start reasoning about your customers.".into(),
        });
    }
    entries.sort_by(|a, b| (a.ts, &a.id).cmp(&(b.ts, &b.id)));
    let skip = entries.len().saturating_sub(limit);
    Ok(entries.split_off(skip))
}

#[cfg(test)]
mod tests;
