//! Shared state of the running service and its lifecycle (open, background flushing, close).

use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::{Config, MIN_JWT_SECRET_BYTES};
use crate::metrics::{Gauges, Metrics};
use svc_agents::agent_state::AgentState;
use svc_core::auth::jwt::JwtKeys;
use svc_core::auth::login_limiter::LoginLimiter;
use svc_core::error::{Error, Result};
use svc_core::keys::usage::UsageTracker;
use svc_core::plumbing::sealed::Sealer;
use svc_core::plumbing::{ids, secrets};
use svc_core::ratelimit::RateLimiter;
use svc_core::store::Store;
use svc_domains::events::Realtime;
use svc_gateway::Gateway;

/// Cheap-to-clone handle to everything request handlers share.
#[derive(Clone, Debug)]
pub struct AppState {
    inner: Arc<Inner>,
}

#[derive(Debug)]
pub struct Inner {
    pub config: Config,
    pub store: Store,
    pub jwt: JwtKeys,
    pub rate_limiter: RateLimiter,
    pub login_limiter: LoginLimiter,
    pub usage: UsageTracker,
    pub metrics: Metrics,
    /// Per-workspace real-time channels (event broadcast, `/v1/stream`).
    pub realtime: Arc<Realtime>,
    /// One-use tickets that open `/v1/stream` from a browser.
    pub stream_tickets: svc_domains::events::stream_tickets::StreamTickets,
    /// Seals secrets at rest (brand context, integration and webhook secrets).
    pub sealer: Sealer,
    /// Per-workspace reporting summaries (30 s, dropped when the graph changes).
    pub summary_cache: svc_agents::reporting::SummaryCache,
    /// The one outbound HTTP client (integrations: voice, Customer.io).
    pub http: svc_domains::integrations::HttpClient,
    /// The capability gateway's handle (store, sealer, HTTP client, idempotency keys in
    /// flight, the public URL).
    pub gateway: Gateway,
    /// The agents' share of this state: chat turns and the background tasks of running
    /// playbook runs (`playbooks::executor`).
    pub agents: AgentState,
    /// The score models' background retraining (`scoring::retrain`).
    pub retrains: svc_domains::scoring::retrain::Retrains,
    flusher: Mutex<Option<(watch::Sender<bool>, JoinHandle<()>)>>,
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.inner
    }
}

impl AsRef<Gateway> for AppState {
    fn as_ref(&self) -> &Gateway {
        &self.gateway
    }
}

impl AppState {
    /// Opens the store and secrets of `config.data_dir` and starts the background flusher.
    /// Must run inside a tokio runtime.
    pub async fn open(config: Config) -> Result<AppState> {
        let cfg = config.clone();
        let (store, jwt_secret, sealer) = tokio::task::spawn_blocking(move || -> Result<_> {
            svc_core::plumbing::data_dir::prepare(&cfg.data_dir, cfg.allow_open_data_dir)?;
            let secret = match &cfg.jwt_secret {
                Some(s) if s.len() >= MIN_JWT_SECRET_BYTES => s.clone(),
                Some(_) => {
                    return Err(Error::invalid_input(format!(
                        "the JWT secret must be at least {MIN_JWT_SECRET_BYTES} bytes"
                    )))
                }
                None => secrets::load_or_create(&cfg.data_dir, "jwt.secret", MIN_JWT_SECRET_BYTES)?,
            };
            let sealer = Sealer::load(
                &cfg.data_dir,
                cfg.master_key.as_deref(),
                &cfg.retired_master_keys,
            )?;
            let id_key = secrets::load_or_create(&cfg.data_dir, ids::KEY_FILE, ids::KEY_BYTES)?;
            let id_key: [u8; ids::KEY_BYTES] = id_key
                .get(..ids::KEY_BYTES)
                .and_then(|k| k.try_into().ok())
                .ok_or_else(|| Error::internal(format!("{} is too short", ids::KEY_FILE)))?;
            let store = Store::open_with(
                &cfg.store_dir(),
                cfg.read_model_bytes,
                crate::record_kinds::all(),
                Some(&id_key),
            )?;
            Ok((store, secret, sealer))
        })
        .await
        .map_err(|e| Error::internal(format!("open task failed: {e}")))??;

        let http = svc_domains::integrations::HttpClient::new(config.outbound.clone())?;
        // Nothing is being sent yet: outbound actions a stop interrupted become `unknown`.
        svc_gateway::recover_interrupted(&store).await?;
        let public_url = config.public_url.clone().unwrap_or_else(|| {
            let scheme = if config.tls_cert.is_some() {
                "https"
            } else {
                "http"
            };
            format!("{scheme}://{}", config.addr)
        });
        let gateway = Gateway::new(store.clone(), sealer.clone(), http.clone(), public_url);
        let realtime = Arc::new(Realtime::new());
        let state = AppState {
            inner: Arc::new(Inner {
                jwt: JwtKeys::new(&jwt_secret),
                rate_limiter: RateLimiter::new(),
                login_limiter: LoginLimiter::new(config.login_max_failures, config.login_window),
                usage: UsageTracker::new(),
                metrics: Metrics::new(),
                realtime: realtime.clone(),
                stream_tickets: Default::default(),
                gateway: gateway.clone(),
                sealer,
                summary_cache: Default::default(),
                http,
                store,
                config,
                agents: AgentState {
                    gateway,
                    realtime,
                    playbook_runs: Default::default(),
                },
                retrains: Default::default(),
                flusher: Mutex::new(None),
            }),
        };
        state.start_flusher();
        Ok(state)
    }

    fn start_flusher(&self) {
        let (stop_tx, mut stop_rx) = watch::channel(false);
        let state = self.clone();
        let period = self.config.usage_flush_interval;
        let sweep_period = self.config.sweep_interval;
        // The one background task: key-usage flushes and the sweeper (`crate::sweeper`, first
        // sweep at start-up). The stop signal ends it between ticks or in the middle of a
        // sweep (never in the middle of one of its writes).
        let handle = tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut sweep_tick = tokio::time::interval(sweep_period);
            sweep_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // Score-model retraining (`scoring::retrain`): its heavy work runs in the
            // blocking pool, and a retrain never blocks invocations.
            let mut retrain_tick =
                tokio::time::interval(svc_domains::scoring::retrain::CHECK_EVERY);
            retrain_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // Workspaces already reported over the read-model budget (logged once each).
            let mut over_budget = std::collections::HashSet::new();
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        if let Err(e) = state.usage.flush(&state.store).await {
                            tracing::warn!(error = %e, "flushing key usage failed; will retry");
                        }
                        log_read_models_over_budget(&state.store, &mut over_budget);
                    }
                    _ = sweep_tick.tick() => tokio::select! {
                        // Each of a sweep's writes is atomic and a sweep can start over at
                        // any point, so shutdown may cut one short between writes.
                        _ = crate::sweeper::run(&state.store) => {}
                        _ = stop_rx.changed() => break,
                    },
                    _ = retrain_tick.tick() => tokio::select! {
                        _ = svc_domains::scoring::retrain::run_due(&state.store, &state.retrains) => {}
                        _ = stop_rx.changed() => break,
                    },
                    _ = stop_rx.changed() => break,
                }
            }
        });
        *self.flusher.lock() = Some((stop_tx, handle));
    }

    /// The base URL providers reach this service at: `--public-url`, else the address the
    /// listener is bound to (known once `serve` binds).
    pub fn public_url(&self) -> String {
        self.gateway.public_url()
    }

    /// Called by `serve` with the bound address, for the default public URL.
    pub fn bound_to(&self, addr: std::net::SocketAddr) {
        self.bound_to_url(format!("http://{addr}"));
    }

    /// [`AppState::bound_to`] with the scheme given (`https://` when serving TLS).
    pub fn bound_to_url(&self, url: String) {
        if self.config.public_url.is_none() {
            self.gateway.set_public_url(url);
        }
    }

    /// Values for the gauges of `/metrics`.
    pub fn gauges(&self) -> Gauges {
        Gauges {
            rate_limiter_keys: self.rate_limiter.tracked(),
            login_limiter_emails: self.login_limiter.tracked(),
            pending_key_usage: self.usage.pending_count(),
            read_models: crate::metrics::ReadModelGauges::from_states(
                &self
                    .store
                    .read_model_states()
                    .into_iter()
                    .map(|(_, s)| s)
                    .collect::<Vec<_>>(),
            ),
        }
    }

    /// Stops the flusher, writes pending key usage and closes the store. Call after the HTTP
    /// server has drained its in-flight requests.
    pub async fn shutdown(&self) -> Result<()> {
        // Playbook runs stop between two steps (they resume at the next start).
        self.agents.playbook_runs.shutdown().await;
        let flusher = self.flusher.lock().take();
        if let Some((stop, handle)) = flusher {
            let _ = stop.send(true);
            let _ = handle.await;
        }
        let flushed = self.usage.flush(&self.store).await;
        if !self.store.close_and_wait().await {
            tracing::warn!("the store was still in use when the stop's wait ended");
        }
        flushed.map(|_| ())
    }
}

/// Logs, once per workspace, that its read model outgrew `--read-model-mb`: its reads then
/// run row by row over RocksDB (correct, slower), which `/metrics` counts too.
fn log_read_models_over_budget(
    store: &svc_core::store::Store,
    logged: &mut std::collections::HashSet<u64>,
) {
    for (ws, s) in store.read_model_states() {
        if let svc_engine::ReadModelState::OverBudget { budget } = s {
            if logged.insert(ws.0) {
                tracing::warn!(
                    workspace = ws.0,
                    budget_mb = budget >> 20,
                    "the workspace's read model does not fit --read-model-mb: its queries run \
                     row by row over RocksDB (slower); raise --read-model-mb to model it"
                );
            }
        }
    }
}
