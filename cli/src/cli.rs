//! Command-line grammar (clap).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// svc: the command-line client of the customer intelligence capability gateway.
#[derive(Debug, Parser)]
#[command(name = "svc", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Machine output: one JSON document on stdout.
    #[arg(long, global = true)]
    pub json: bool,
    /// svcd base address [default: the stored login's server, else http://127.0.0.1:8080].
    #[arg(long, global = true, env = "SVC_BASE_URL", value_name = "URL")]
    pub server: Option<String>,
    /// Agent key for this command (overrides the stored one).
    #[arg(
        long,
        global = true,
        env = "SVC_API_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub api_key: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Log in with an agent key, log out, show the active key.
    #[command(subcommand)]
    Auth(AuthCommand),
    /// What this key may call.
    #[command(subcommand)]
    Capabilities(CapabilitiesCommand),
    /// Invoke a capability through the gateway.
    Invoke(InvokeArgs),
    /// Check the set-up: server, version, key, grants, modes, quota, rate limit, clock.
    Doctor,
    /// Send events (capability events.ingest).
    #[command(subcommand)]
    Events(EventsCommand),
    /// MCP server over stdio for the active key (a bridge to svcd's /mcp).
    Mcp,
    /// Chat with the orchestrator and the buddies as a person (needs a session token).
    Chat(ChatArgs),
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// What to ask or tell the team.
    pub message: String,
    /// Continue this session (chs_...); without it a new session is opened.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Talk to this buddy directly (insights, prospect, campaign, pipeline) instead of letting
    /// the orchestrator route.
    #[arg(long, value_name = "NAME")]
    pub buddy: Option<String>,
    /// A person's session token (the `token` of POST /api/auth/login): chat is for people, so
    /// agent keys are not accepted.
    #[arg(long, env = "SVC_TOKEN", hide_env_values = true, value_name = "JWT")]
    pub token: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Verify an agent key with the server and store it (mode 0600).
    Login {
        /// The agent key (svc_live_...), or `-` to read it from stdin.
        #[arg(long, value_name = "AGENT_KEY")]
        key: String,
    },
    /// Forget the stored key.
    Logout,
    /// Show the active key as the server sees it.
    Status,
}

#[derive(Debug, Subcommand)]
pub enum CapabilitiesCommand {
    /// Capabilities this key may call, with their modes and cost.
    List,
    /// A capability's full contract: schemas, examples, modes, cost, approval behaviour.
    Explain {
        /// Capability id, e.g. context.get.
        capability_id: String,
    },
}

#[derive(Debug, Args)]
pub struct InvokeArgs {
    /// Capability id, e.g. events.ingest.
    pub capability_id: String,
    /// dry_run, queue or execute [default: the capability's own: execute, else queue].
    #[arg(long)]
    pub mode: Option<String>,
    /// Input: a JSON object, `@file` to read one from a file, or `@-` for stdin.
    #[arg(long, default_value = "{}")]
    pub input: String,
    /// Idempotency key: a retry with the same key never executes or charges twice.
    #[arg(long)]
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// Send one event, or every row of a JSON-lines file with --batch.
    Send(SendArgs),
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// Event name, e.g. page_viewed.
    #[arg(
        long = "type",
        value_name = "EVENT",
        required_unless_present = "batch",
        conflicts_with = "batch"
    )]
    pub event_type: Option<String>,
    /// Customer id, email, phone or external id.
    #[arg(long, required_unless_present = "batch", conflicts_with = "batch")]
    pub customer: Option<String>,
    /// Touchpoint properties as a JSON object.
    #[arg(long, conflicts_with = "batch")]
    pub props: Option<String>,
    /// Channel name, e.g. web.
    #[arg(long, conflicts_with = "batch")]
    pub channel: Option<String>,
    /// ISO-8601 time with timezone [default: now].
    #[arg(long, conflicts_with = "batch")]
    pub timestamp: Option<String>,
    /// Idempotency key of the single event.
    #[arg(long, conflicts_with = "batch")]
    pub idempotency_key: Option<String>,
    /// JSON-lines file: one events.ingest input object per line (`-` for stdin).
    #[arg(long, value_name = "JSONL_FILE")]
    pub batch: Option<PathBuf>,
    /// Prefix of the per-row idempotency keys; rerunning a file with the same prefix never
    /// sends a row twice [default: a new random prefix, printed in the summary].
    #[arg(long, requires = "batch", value_name = "PREFIX")]
    pub idempotency_prefix: Option<String>,
    /// dry_run or execute.
    #[arg(long, default_value = "execute")]
    pub mode: String,
}
