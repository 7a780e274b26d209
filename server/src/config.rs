//! Process configuration: where to listen, where the data lives, how to log, which secrets.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Log output format on stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

#[derive(Clone)]
pub struct Config {
    pub addr: SocketAddr,
    pub data_dir: PathBuf,
    pub log_format: LogFormat,
    /// JWT signing secret; when `None`, one is generated once into the data directory.
    pub jwt_secret: Option<Vec<u8>>,
    /// Master key sealing secrets at rest (32 bytes); when `None`, one is generated once into
    /// the data directory (see `sealed`).
    pub master_key: Option<Vec<u8>>,
    /// Earlier master keys: values sealed with them still open; nothing new is sealed with them.
    pub retired_master_keys: Vec<Vec<u8>>,
    /// How often coalesced `last_used_at` times are written to the store.
    pub usage_flush_interval: Duration,
    /// How often the sweeper expires overdue pending actions and purges old idempotency and
    /// `messageId` records (`crate::sweeper`).
    pub sweep_interval: Duration,
    /// Requests per minute a workspace's webhook token (`?token=` on `/api/webhooks/...`) may
    /// make, GCRA like agent keys (burst of the whole minute).
    pub webhook_token_rate_per_min: u32,
    /// Failed logins allowed per email within `login_window` before logins are refused.
    pub login_max_failures: u32,
    pub login_window: Duration,
    /// The address the outside world reaches this service at (callback URLs sent to
    /// providers, the Message-ID domain); `None`: `http://` + the bound listen address.
    pub public_url: Option<String>,
    /// PEM certificate chain and private key: svcd serves HTTPS when both are set.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Browser origins allowed by CORS (`https://app.example.com`); empty: no CORS headers.
    pub cors_origins: Vec<String>,
    /// Most bytes the engine's in-memory read models of all workspaces may hold together
    /// (about 84 MB per million nodes; 0 turns them off: scans read RocksDB).
    pub read_model_bytes: usize,
    /// Which addresses integrations may reach (public only unless ranges are allowed).
    pub outbound: svc_domains::integrations::Destinations,
    /// Start even when the data directory is open to other users (`plumbing::data_dir`).
    pub allow_open_data_dir: bool,
    /// Lifetime of the MCP OAuth access tokens (`oauth`); default one hour.
    pub oauth_access_ttl: Duration,
    /// Lifetime of the MCP OAuth refresh tokens (each refresh issues a new one); default 30 days.
    pub oauth_refresh_ttl: Duration,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret never goes into logs or panic messages.
        f.debug_struct("Config")
            .field("addr", &self.addr)
            .field("data_dir", &self.data_dir)
            .field("log_format", &self.log_format)
            .field(
                "jwt_secret",
                &self.jwt_secret.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "master_key",
                &self.master_key.as_ref().map(|_| "<redacted>"),
            )
            .field("retired_master_keys", &self.retired_master_keys.len())
            .field("usage_flush_interval", &self.usage_flush_interval)
            .field("sweep_interval", &self.sweep_interval)
            .field(
                "webhook_token_rate_per_min",
                &self.webhook_token_rate_per_min,
            )
            .field("login_max_failures", &self.login_max_failures)
            .field("login_window", &self.login_window)
            .field("public_url", &self.public_url)
            .field("tls_cert", &self.tls_cert)
            .field("tls_key", &self.tls_key)
            .field("cors_origins", &self.cors_origins)
            .field("read_model_bytes", &self.read_model_bytes)
            .field("outbound", &self.outbound)
            .field("allow_open_data_dir", &self.allow_open_data_dir)
            .field("oauth_access_ttl", &self.oauth_access_ttl)
            .field("oauth_refresh_ttl", &self.oauth_refresh_ttl)
            .finish()
    }
}

/// Minimum JWT secret length: 256 bits (DESIGN.md §4).
pub const MIN_JWT_SECRET_BYTES: usize = 32;

impl Config {
    /// Defaults of DESIGN.md §5 with the given data directory.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data_dir: data_dir.into(),
            log_format: LogFormat::Text,
            jwt_secret: None,
            master_key: None,
            retired_master_keys: Vec::new(),
            usage_flush_interval: Duration::from_secs(10),
            sweep_interval: Duration::from_secs(60),
            webhook_token_rate_per_min: svc_domains::events::webhooks::TOKEN_RATE_PER_MIN,
            login_max_failures: 5,
            login_window: Duration::from_secs(15 * 60),
            public_url: None,
            tls_cert: None,
            tls_key: None,
            cors_origins: Vec::new(),
            read_model_bytes: svc_core::store::Store::default_read_model_bytes(),
            outbound: svc_domains::integrations::Destinations::public_only(),
            allow_open_data_dir: false,
            oauth_access_ttl: Duration::from_secs(3600),
            oauth_refresh_ttl: Duration::from_secs(30 * 24 * 3600),
        }
    }

    /// The OAuth token lifetimes in the core's terms.
    pub fn oauth_lifetimes(&self) -> svc_core::oauth::Lifetimes {
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1);
        svc_core::oauth::Lifetimes {
            access_ms: ms(self.oauth_access_ttl),
            refresh_ms: ms(self.oauth_refresh_ttl),
        }
    }

    /// The store's directory inside the data directory.
    pub fn store_dir(&self) -> PathBuf {
        self.data_dir.join("store")
    }
}
