//! `svc`: the command-line client of the capability gateway, and `svc mcp`, an MCP server over
//! stdio (rmcp) whose tools are svcd's `/mcp` tools. A pure HTTP client: it never opens the store and shares
//! no code with the server; everything it does, an agent can do with curl.
//!
//! Modules: `cli` (grammar), `config` (server, key, credentials file), `client` (HTTP),
//! `gateway` (invocations with `source: "cli"` and safe retries), `output` (human/JSON,
//! colour, progress), `error` (exit codes), `commands::*` (one module per command group),
//! `batch` (JSON-lines rows and their idempotency keys), `mcp_stdio` (`svc mcp`: rmcp over stdio, answered by svcd's /mcp).

pub mod batch;
pub mod cli;
pub mod client;
pub mod commands;
pub mod config;
pub mod error;
pub mod gateway;
pub mod mcp_stdio;
pub mod output;

use std::ffi::OsString;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};

use crate::cli::{Cli, Command};
use crate::client::Client;
use crate::config::{KeySource, Overrides, Resolved};
use crate::error::{exit, CliError, Result};
use crate::output::{Color, Output};

/// What every command gets: output settings and the server/key overrides.
#[derive(Debug)]
pub struct Ctx {
    pub out: Output,
    pub overrides: Overrides,
}

impl Ctx {
    pub fn resolve(&self) -> Result<Resolved> {
        config::resolve(&self.overrides)
    }

    /// A client with the active key; [`CliError::NotLoggedIn`] when there is none.
    pub fn keyed_client(&self) -> Result<(Client, KeySource)> {
        let r = self.resolve()?;
        let Some((key, source)) = r.key else {
            return Err(CliError::NotLoggedIn(
                "not logged in: no agent key (--api-key, SVC_API_KEY or `svc auth login`)".into(),
            ));
        };
        Ok((Client::new(&r.server, Some(&key))?, source))
    }
}

/// Parses `args`, runs the command, prints errors; returns the process exit code.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = match Cli::command().try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => return clap_exit(e),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => return clap_exit(e),
    };
    let from_env = |id: &str| matches.value_source(id) == Some(ValueSource::EnvVariable);
    let ctx = Ctx {
        out: Output::new(cli.json),
        overrides: Overrides {
            server: cli.server.clone().filter(|s| !s.is_empty()),
            api_key: cli.api_key.clone().filter(|s| !s.is_empty()),
            api_key_from_env: from_env("api_key"),
        },
    };
    match dispatch(&ctx, cli.command) {
        Ok(code) => code,
        Err(e) => {
            report(&ctx.out, &e);
            e.exit_code()
        }
    }
}

fn dispatch(ctx: &Ctx, command: Command) -> Result<u8> {
    use commands::*;
    match command {
        Command::Auth(c) => auth::run(ctx, c),
        Command::Capabilities(c) => capabilities::run(ctx, c),
        Command::Invoke(a) => invoke::run(ctx, a),
        Command::Doctor => doctor::run(ctx),
        Command::Events(cli::EventsCommand::Send(a)) => events::send(ctx, a),
        Command::Mcp => mcp_stdio::run(ctx),
        Command::Chat(a) => chat::run(ctx, a),
    }
}

fn clap_exit(e: clap::Error) -> u8 {
    use clap::error::ErrorKind;
    let _ = e.print();
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => exit::OK,
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => exit::USAGE,
        _ => exit::USAGE,
    }
}

/// Errors: a JSON document on stdout with `--json`, a line (and a hint) on stderr otherwise.
pub fn report(out: &Output, e: &CliError) {
    if out.json {
        out.json(&e.to_json());
        return;
    }
    let mut line = format!("{} {e}", out.paint_err("error:", Color::Red));
    if let CliError::Api {
        request_id: Some(id),
        ..
    } = e
    {
        line.push_str(&format!(" (request {id})"));
    }
    eprintln!("{line}");
    if let CliError::Api {
        details: Some(d), ..
    } = e
    {
        eprintln!("{}", output::pretty(d));
    }
    if let Some(h) = e.hint() {
        eprintln!("{} {h}", out.paint_err("hint:", Color::Yellow));
    }
}
