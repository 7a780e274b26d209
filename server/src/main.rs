//! `svcd`: the service's process.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use svc_server::{AppState, Config, LogFormat};

/// glibc malloc cost the engine's writer thread a fifth of its time under ingestion load.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "svcd",
    version,
    about = "Customer intelligence and agent action service"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP service.
    Serve(ServeArgs),
    /// Operator control: plans, backup and restore, validation, key rotation and revocation
    /// (through the running service's admin socket, or on a stopped data directory).
    Admin(svc_server::admin::cli::AdminArgs),
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "SVC_ADDR", default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Data directory (store and generated secrets).
    #[arg(long, env = "SVC_DATA_DIR", default_value = "./data")]
    data_dir: PathBuf,
    /// Log format on stderr.
    #[arg(long, env = "SVC_LOG_FORMAT", value_enum, default_value = "text")]
    log_format: Format,
    /// JWT signing secret (at least 32 bytes); generated once into the data directory when
    /// absent. Prefer the environment over the command line for secrets.
    #[arg(long, env = "SVC_JWT_SECRET", hide_env_values = true)]
    jwt_secret: Option<String>,
    /// Master key sealing secrets at rest: 64 hex digits (32 bytes); generated once into the
    /// data directory when absent.
    #[arg(long, env = "SVC_MASTER_KEY", hide_env_values = true)]
    master_key: Option<String>,
    /// Earlier master keys (comma-separated hex) whose sealed values must stay readable.
    #[arg(
        long,
        env = "SVC_MASTER_KEYS_RETIRED",
        hide_env_values = true,
        value_delimiter = ','
    )]
    retired_master_keys: Vec<String>,
    /// The URL providers reach this service at (voice status callbacks); default
    /// `http://<addr>`.
    #[arg(long, env = "SVC_PUBLIC_URL")]
    public_url: Option<String>,
    /// Lifetime of MCP OAuth access tokens, in seconds (bound to `<public URL>/mcp`).
    #[arg(long, env = "SVC_OAUTH_ACCESS_TTL_SECS", default_value_t = 3600,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    oauth_access_ttl_secs: u64,
    /// Lifetime of MCP OAuth refresh tokens, in seconds (rotated at every use).
    #[arg(long, env = "SVC_OAUTH_REFRESH_TTL_SECS", default_value_t = 30 * 24 * 3600,
          value_parser = clap::value_parser!(u64).range(60..=365 * 24 * 3600))]
    oauth_refresh_ttl_secs: u64,
    /// PEM certificate chain: serve HTTPS (with --tls-key).
    #[arg(long, env = "SVC_TLS_CERT", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "SVC_TLS_KEY", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Browser origins allowed by CORS, comma-separated (`https://app.example.com`); none by
    /// default (no CORS headers).
    #[arg(long, env = "SVC_CORS_ORIGINS", value_delimiter = ',')]
    cors_origins: Vec<String>,
    /// Memory for the in-memory read models of all workspaces together, in MiB (about 84 MB per
    /// million nodes); 0 turns them off (scans and counts then read RocksDB).
    #[arg(long, env = "SVC_READ_MODEL_MB", default_value_t = 512)]
    read_model_mb: usize,
    /// Non-public address ranges integrations may reach, comma-separated (`127.0.0.1/32`,
    /// `10.0.0.0/8`), or `private` for every loopback, private and link-local range. By default
    /// integrations reach public addresses only (a hosted, multi-tenant deployment).
    #[arg(long, env = "SVC_OUTBOUND_ALLOW", default_value = "")]
    outbound_allow: String,
    /// Start even when the data directory is open to other users (by default svcd refuses a
    /// data directory with any group or world permission, as PostgreSQL does).
    #[arg(long, env = "SVC_ALLOW_OPEN_DATA_DIR")]
    allow_open_data_dir: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Text,
    Json,
}

fn main() -> ExitCode {
    // Everything svcd creates (the store's files, backups, sockets) is the service's alone.
    rustix::process::umask(rustix::fs::Mode::from_bits_truncate(0o077));
    let args = match Cli::parse().command {
        Command::Serve(args) => args,
        Command::Admin(args) => return svc_server::admin::cli::main(args),
    };
    let mut config = Config::new(args.data_dir);
    config.addr = args.addr;
    config.public_url = args.public_url.map(|u| u.trim_end_matches('/').to_owned());
    config.log_format = match args.log_format {
        Format::Text => LogFormat::Text,
        Format::Json => LogFormat::Json,
    };
    config.jwt_secret = args.jwt_secret.map(String::into_bytes);
    config.tls_cert = args.tls_cert;
    config.tls_key = args.tls_key;
    config.cors_origins = args.cors_origins;
    config.read_model_bytes = args.read_model_mb << 20;
    config.allow_open_data_dir = args.allow_open_data_dir;
    config.oauth_access_ttl = std::time::Duration::from_secs(args.oauth_access_ttl_secs);
    config.oauth_refresh_ttl = std::time::Duration::from_secs(args.oauth_refresh_ttl_secs);
    svc_server::telemetry::init(config.log_format);
    match svc_domains::integrations::Destinations::parse_allow_list(&args.outbound_allow) {
        Ok(ranges) => {
            config.outbound = svc_domains::integrations::Destinations::allowing(ranges);
        }
        Err(e) => {
            tracing::error!(error = %e, "SVC_OUTBOUND_ALLOW");
            return ExitCode::FAILURE;
        }
    }
    if let Err(e) = svc_server::http::cors::parse_origins(&config.cors_origins) {
        tracing::error!(error = %e, "SVC_CORS_ORIGINS");
        return ExitCode::FAILURE;
    }
    let keys = args
        .master_key
        .iter()
        .chain(&args.retired_master_keys)
        .map(|k| svc_core::plumbing::sealed::parse_key_hex(k).map(Vec::from))
        .collect::<Result<Vec<_>, _>>();
    match keys {
        Ok(mut keys) => {
            if args.master_key.is_some() {
                config.master_key = Some(keys.remove(0));
            }
            config.retired_master_keys = keys;
        }
        Err(e) => {
            tracing::error!(error = %e, "SVC_MASTER_KEY / SVC_MASTER_KEYS_RETIRED");
            return ExitCode::FAILURE;
        }
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "svcd stopped with an error");
            ExitCode::FAILURE
        }
    }
}

async fn run(config: Config) -> Result<(), svc_core::Error> {
    // Read the certificate before anything else, so a bad one stops svcd at once.
    let tls = match (&config.tls_cert, &config.tls_key) {
        (Some(cert), Some(key)) => Some(svc_server::http::tls::server_config(cert, key)?),
        _ => None,
    };
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|e| svc_core::Error::internal(format!("binding {}: {e}", config.addr)))?;
    let addr = listener.local_addr().map_err(svc_core::Error::internal)?;
    tracing::info!(%addr, tls = tls.is_some(), data_dir = %config.data_dir.display(), "svcd listening");
    let state = AppState::open(config).await?;
    let admin = svc_server::admin::socket::AdminSocket::start(&state)?;
    let served = match tls {
        Some(tls) => {
            svc_server::serve_tls(listener, tls, state, svc_server::shutdown_signal()).await
        }
        None => svc_server::serve(listener, state, svc_server::shutdown_signal()).await,
    };
    admin.stop().await;
    served?;
    tracing::info!("svcd stopped cleanly");
    Ok(())
}
