//! Training a workspace's models from its own outcomes, publishing them, and writing every
//! customer's scores back. Runs off the request path: reads on one snapshot in the blocking
//! pool, one atomic write to publish, then chunked writes of the scores.
//!
//! Thresholds (docs/intelligence.md):
//! - a model is fitted only with [`MIN_LABELLED`] labelled customers and, per score, at least
//!   [`MIN_PER_CLASS`](super::trained::MIN_PER_CLASS) of each class; a score without enough
//!   labels stays on its prior;
//! - the background job looks at each workspace every [`CHECK_EVERY`] and retrains when new
//!   labels can exist: the workspace's touchpoints grew by [`GROWTH`] since the last model (or
//!   the last attempt), or there is no model yet and at least [`MIN_LABELLED`] customers; at
//!   most once per [`MIN_INTERVAL`] per workspace;
//! - `POST /v1/models/retrain` retrains at once (same label thresholds).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;
use svc_engine::schema::{CUSTOMER, TOUCHPOINT};
use svc_engine::{GraphRead, NodeId, RecordScan};
use time::OffsetDateTime;

use super::labels::example;
use super::trained::{version_of, CurrentModel, Fitted, ScoreModel};
use super::{assess_with, neighbourhood, vector, write_back, Models};
use svc_core::error::{Code, Error, Result};
use svc_core::plumbing::clock;
use svc_core::store::{Store, WorkspaceId};

/// The outcome window: conversion within it, churn as no activity within it.
pub const HORIZON_DAYS: u32 = 30;
/// Labelled customers needed before any model is fitted.
pub const MIN_LABELLED: usize = 200;
/// Touchpoint growth since the last model (or attempt) that makes a retrain due.
pub const GROWTH: f64 = 0.2;
/// Least time between two background retrains of one workspace.
pub const MIN_INTERVAL: Duration = Duration::from_secs(15 * 60);
/// How often the background job looks for due workspaces.
pub const CHECK_EVERY: Duration = Duration::from_secs(5 * 60);
/// Customers whose scores one write-back transaction sets (so ingestion is not starved).
pub const WRITE_BACK_CHUNK: usize = 200;
/// Model records listed by `GET /v1/models`.
pub const LISTED: usize = 20;

/// Time-split training data of one workspace.
#[derive(Clone, Debug, Default)]
pub struct TrainingSet {
    /// Customers with any label (active before the cut-off).
    pub labelled: usize,
    pub conversion_x: Vec<Vec<f64>>,
    pub conversion_y: Vec<bool>,
    pub churn_x: Vec<Vec<f64>>,
    pub churn_y: Vec<bool>,
}

/// Examples of `customers` with features as of `cutoff` and labels from the horizon after it.
pub fn training_set<R: GraphRead + ?Sized>(
    r: &R,
    customers: &[NodeId],
    cutoff: OffsetDateTime,
    horizon_days: u32,
) -> Result<TrainingSet> {
    let mut set = TrainingSet::default();
    for id in customers {
        let Some(c) = r.node(*id)? else { continue };
        let n = neighbourhood(r, &c)?;
        let Some(e) = example(&c, &n, cutoff, horizon_days) else {
            continue;
        };
        set.labelled += 1;
        let x = vector::vector(&e.features);
        if let Some(churned) = e.churned {
            set.churn_x.push(x.clone());
            set.churn_y.push(churned);
        }
        set.conversion_x.push(x);
        set.conversion_y.push(e.converted);
    }
    Ok(set)
}

/// Fits both models of `set` (a score with too few labels gets a note instead).
pub fn fit(
    set: &TrainingSet,
    trained_at: OffsetDateTime,
    cutoff: OffsetDateTime,
    horizon_days: u32,
) -> ScoreModel {
    let names = vector::names();
    let mut notes = Vec::new();
    let mut one = |what: &str, x: &[Vec<f64>], y: &[bool]| match Fitted::fit(&names, x, y) {
        Ok(f) => Some(f),
        Err(e) => {
            notes.push(format!("{what}: stays on the prior: {e}"));
            None
        }
    };
    let churn = one("churn", &set.churn_x, &set.churn_y);
    let conversion = one("conversion", &set.conversion_x, &set.conversion_y);
    ScoreModel {
        seq: 0,
        version: String::new(),
        trained_at: clock::rfc3339(trained_at),
        cutoff: clock::rfc3339(cutoff),
        horizon_days,
        labelled: set.labelled,
        touchpoints: 0,
        churn,
        conversion,
        notes,
    }
}

/// What a retrain did.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct RetrainReport {
    /// `trained` (a new model is current) or `skipped` (the current models stay).
    pub status: String,
    /// The new model's version.
    pub version: Option<String>,
    pub labelled: usize,
    /// Why nothing or only one score was trained.
    pub notes: Vec<String>,
    /// Customers whose `churnScore`, `conversionScore` and `score` were rewritten.
    pub written_back: usize,
}

/// The background job's memory, one per service (held by `AppState`, so two services in one
/// process never share it): the workspaces with a retrain running (one at a time per
/// workspace), and when each was last (attempted to be) trained with its touchpoints then.
#[derive(Debug, Default)]
pub struct Retrains {
    running: Mutex<HashSet<WorkspaceId>>,
    attempts: Mutex<HashMap<WorkspaceId, (Instant, u64)>>,
}

struct Running<'a>(&'a Retrains, WorkspaceId);

impl Retrains {
    fn claim(&self, ws: WorkspaceId) -> Result<Running<'_>> {
        if self.running.lock().insert(ws) {
            Ok(Running(self, ws))
        } else {
            Err(Error::new(
                Code::Conflict,
                "a retrain of this workspace is already running; try again when it has finished",
            ))
        }
    }

    fn note_attempt(&self, ws: WorkspaceId, touchpoints: u64) {
        self.attempts
            .lock()
            .insert(ws, (Instant::now(), touchpoints));
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.running.lock().remove(&self.1);
    }
}

/// Trains the workspace's models as of `now` (cut-off `now - HORIZON_DAYS`), publishes them
/// when at least one score could be fitted, and writes every customer's scores back.
pub async fn retrain(
    store: &Store,
    retrains: &Retrains,
    ws: WorkspaceId,
    now: OffsetDateTime,
) -> Result<RetrainReport> {
    let _running = retrains.claim(ws)?;
    let cutoff = now - time::Duration::days(i64::from(HORIZON_DAYS));
    let (mut model, touchpoints) = store
        .read(ws, move |snap| {
            let customers = snap.label_scan(CUSTOMER)?;
            let touchpoints = snap.label_count(TOUCHPOINT)?;
            let set = training_set(snap, &customers, cutoff, HORIZON_DAYS)?;
            if set.labelled < MIN_LABELLED {
                let mut m = fit(&TrainingSet::default(), now, cutoff, HORIZON_DAYS);
                m.labelled = set.labelled;
                m.notes = vec![format!(
                "{} labelled customer(s); at least {MIN_LABELLED} are needed: both scores stay \
                 on their priors",
                set.labelled
            )];
                return Ok((m, touchpoints));
            }
            Ok((fit(&set, now, cutoff, HORIZON_DAYS), touchpoints))
        })
        .await?;
    retrains.note_attempt(ws, touchpoints);
    if model.churn.is_none() && model.conversion.is_none() {
        return Ok(RetrainReport {
            status: "skipped".to_owned(),
            version: None,
            labelled: model.labelled,
            notes: model.notes,
            written_back: 0,
        });
    }
    model.touchpoints = touchpoints;
    let published = store
        .write(move |tx| {
            let seq = tx
                .get::<CurrentModel>(ws, "current")?
                .map_or(1, |c| c.0.seq + 1);
            model.seq = seq;
            model.version = version_of(seq);
            tx.put(ws, &model)?;
            tx.put(ws, &CurrentModel(model.clone()))?;
            Ok(model)
        })
        .await?;
    let written_back = write_back_all(store, ws, now).await?;
    tracing::info!(workspace = %ws, version = %published.version, labelled = published.labelled,
        written_back, "score models retrained");
    Ok(RetrainReport {
        status: "trained".to_owned(),
        version: Some(published.version),
        labelled: published.labelled,
        notes: published.notes,
        written_back,
    })
}

/// Scores every customer with the current models (one snapshot) and writes the scores back in
/// chunks of [`WRITE_BACK_CHUNK`]. A read-only workspace is left as it is.
pub async fn write_back_all(store: &Store, ws: WorkspaceId, now: OffsetDateTime) -> Result<usize> {
    let scores = store
        .read(ws, move |snap| {
            let models = Models::current_at(snap)?;
            let mut out = Vec::new();
            for id in snap.label_scan(CUSTOMER)? {
                let Some(c) = snap.node(id)? else { continue };
                let a = assess_with(snap, &c, now, &models)?;
                out.push((id, a.churn.probability, a.conversion.probability));
            }
            Ok(out)
        })
        .await?;
    let mut written = 0;
    for chunk in scores.chunks(WRITE_BACK_CHUNK) {
        let chunk = chunk.to_vec();
        let n = store
            .write(move |tx| {
                let mut w = tx.workspace(ws);
                if crate::graph_api::ensure_writable(&w).is_err() {
                    return Ok(None);
                }
                let mut n = 0;
                for (id, churn, conversion) in chunk {
                    // A customer merged or deleted since the snapshot is skipped.
                    if w.node(id)?.is_some() {
                        write_back(&mut w, id, churn, conversion)?;
                        n += 1;
                    }
                }
                Ok(Some(n))
            })
            .await?;
        match n {
            Some(n) => written += n,
            None => break,
        }
        tokio::task::yield_now().await;
    }
    Ok(written)
}

/// The workspace's model records, newest first, and the current version.
pub async fn list(store: &Store, ws: WorkspaceId) -> Result<(Option<String>, Vec<ScoreModel>)> {
    let current = store
        .get::<CurrentModel>(ws, "current")
        .await?
        .map(|c| c.0.version);
    let models = store
        .scan::<ScoreModel>(
            ws,
            RecordScan {
                reverse: true,
                limit: Some(LISTED),
                ..RecordScan::default()
            },
        )
        .await?;
    Ok((current, models))
}

/// Whether the background job should retrain `ws` now (see the module's thresholds).
async fn due(store: &Store, retrains: &Retrains, ws: WorkspaceId) -> Result<bool> {
    let last = retrains.attempts.lock().get(&ws).copied();
    if last.is_some_and(|(at, _)| at.elapsed() < MIN_INTERVAL) {
        return Ok(false);
    }
    let (customers, touchpoints) = store
        .read(ws, move |snap| {
            Ok((snap.label_count(CUSTOMER)?, snap.label_count(TOUCHPOINT)?))
        })
        .await?;
    let current = store.get::<CurrentModel>(ws, "current").await?;
    let baseline = match (&current, last) {
        (_, Some((_, attempted))) => Some(attempted),
        (Some(c), None) => Some(c.0.touchpoints),
        (None, None) => None,
    };
    Ok(match baseline {
        None => customers as usize >= MIN_LABELLED,
        Some(b) => touchpoints as f64 >= (b as f64 * (1.0 + GROWTH)).max(1.0),
    })
}

/// One tick of the background job: retrains every workspace that is due.
pub async fn run_due(store: &Store, retrains: &Retrains) {
    let all = match svc_core::workspaces::all_ids(store).await {
        Ok(all) => all,
        Err(e) => {
            tracing::warn!(error = %e, "listing workspaces for retraining failed");
            return;
        }
    };
    for ws in all {
        match due(store, retrains, ws).await {
            Ok(true) => {
                if let Err(e) = retrain(store, retrains, ws, clock::now()).await {
                    tracing::warn!(workspace = %ws, error = %e, "retraining failed; will retry");
                }
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(workspace = %ws, error = %e, "retrain check failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::MarketingEvent;

    async fn ingest(
        store: &Store,
        ws: WorkspaceId,
        email: String,
        days_ago: i64,
        now: OffsetDateTime,
    ) {
        let at = clock::rfc3339(now - time::Duration::days(days_ago));
        let ev = MarketingEvent::from_json(
            serde_json::json!({"event": "page_viewed", "email": email, "timestamp": at}),
        )
        .and_then(|e| e.validate(store.ids(), now))
        .expect("event");
        let ids = store.ids().clone();
        store
            .write(move |tx| {
                crate::events::apply(&ids, &mut tx.workspace(ws), &ev, now).map(|_| ())
            })
            .await
            .expect("ingest");
    }

    #[tokio::test]
    async fn too_few_labels_publish_nothing_and_the_priors_stay() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let ws = WorkspaceId(9);
        let now = OffsetDateTime::from_unix_timestamp(1_767_225_600).expect("valid");
        for i in 0..12 {
            ingest(&store, ws, format!("c{i}@x.io"), 40 + i, now).await;
        }
        let retrains = Retrains::default();
        let report = retrain(&store, &retrains, ws, now).await.expect("retrain");
        assert_eq!(report.status, "skipped");
        assert_eq!((report.labelled, report.written_back), (12, 0));
        assert!(report.notes[0].contains("at least 200"), "{report:?}");
        let (current, models) = list(&store, ws).await.expect("list");
        assert_eq!((current, models.len()), (None, 0));
        // Not due again until the touchpoints grow by GROWTH (and the interval has passed).
        assert!(!due(&store, &retrains, ws).await.expect("due"));
        store.close();
    }

    #[test]
    fn one_retrain_at_a_time_per_workspace() {
        let ws = WorkspaceId(77);
        let retrains = Retrains::default();
        let first = retrains.claim(ws).expect("first");
        let second = retrains.claim(ws).map(|_| ()).expect_err("busy");
        assert_eq!(second.code, Code::Conflict);
        drop(first);
        assert!(retrains.claim(ws).is_ok());
        // Another service's job (another AppState) is not blocked by this one's.
        let other = Retrains::default();
        let _held = retrains.claim(ws).expect("again");
        assert!(other.claim(ws).is_ok());
    }
}
