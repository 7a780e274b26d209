//! `svcd admin`: the command line of operator control. Prints each result as JSON on stdout;
//! a refusal or failure goes to stderr with exit status 1 (`validate` also exits 1 when it
//! finds problems).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::Value;

use super::client::{self, Route};
use super::protocol::Request;
use super::{backup, ConfiguredKeys};
use svc_core::error::{Error, Result};

#[derive(Debug, Args)]
pub struct AdminArgs {
    /// Data directory of the service (the running service's, or a stopped one).
    #[arg(long, env = "SVC_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// The master key, when the service is given one rather than generating `master.key`
    /// (only used when no service runs; a running service uses its own).
    #[arg(long, env = "SVC_MASTER_KEY", hide_env_values = true)]
    pub master_key: Option<String>,
    /// Earlier master keys (comma-separated hex), as for `svcd serve`.
    #[arg(
        long,
        env = "SVC_MASTER_KEYS_RETIRED",
        hide_env_values = true,
        value_delimiter = ','
    )]
    pub retired_master_keys: Vec<String>,
    #[command(subcommand)]
    pub command: AdminCommand,
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Workspaces: list them, or set one's plan.
    #[command(subcommand)]
    Workspace(WorkspaceCommand),
    /// Write a backup (a store checkpoint plus the secrets files) into a new directory; works
    /// while the service runs.
    Backup { dest: PathBuf },
    /// Copy a backup into a new (or empty) data directory and validate it. `--data-dir` is
    /// not used.
    Restore { backup: PathBuf, target: PathBuf },
    /// Cross-check every index of the store against the primary data.
    Validate,
    /// Re-seal every sealed secret under a new master key.
    RotateMasterKey,
    /// Revoke every key (agent and legacy) of a workspace.
    RevokeKeys { workspace_id: String },
}

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Every workspace with its plan and monthly credit limit.
    List,
    /// Set a workspace's plan (free, starter, growth, pro, enterprise).
    SetPlan {
        workspace_id: String,
        plan: String,
        /// Monthly action credits; required with, and only allowed for, enterprise.
        #[arg(long)]
        monthly_credit_limit: Option<u64>,
    },
}

/// Runs the command and reports on stdout / stderr.
pub fn main(args: AdminArgs) -> ExitCode {
    match run(args) {
        Ok((value, route)) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&value).unwrap_or_default()
            );
            if let Some(route) = route {
                eprintln!(
                    "svcd admin: {}",
                    match route {
                        Route::Socket => "answered by the running service",
                        Route::Direct =>
                            "no service running; the data directory was opened directly",
                    }
                );
            }
            if value.get("valid") == Some(&Value::Bool(false))
                || (value.get("ok") == Some(&Value::Bool(false)))
            {
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("svcd admin: {}: {}", e.code.as_str(), e.message);
            ExitCode::FAILURE
        }
    }
}

fn run(args: AdminArgs) -> Result<(Value, Option<Route>)> {
    let request = match args.command {
        AdminCommand::Restore { backup, target } => {
            return backup::restore(&absolute(&backup)?, &absolute(&target)?).map(|v| (v, None));
        }
        AdminCommand::Workspace(WorkspaceCommand::List) => Request::WorkspaceList,
        AdminCommand::Workspace(WorkspaceCommand::SetPlan {
            workspace_id,
            plan,
            monthly_credit_limit,
        }) => Request::WorkspaceSetPlan {
            workspace_id,
            plan,
            monthly_credit_limit,
        },
        AdminCommand::Backup { dest } => Request::Backup {
            dest: absolute(&dest)?,
        },
        AdminCommand::Validate => Request::Validate,
        AdminCommand::RotateMasterKey => Request::RotateMasterKey,
        AdminCommand::RevokeKeys { workspace_id } => Request::RevokeKeys { workspace_id },
    };
    let keys = configured_keys(args.master_key.as_deref(), &args.retired_master_keys)?;
    let (value, route) = client::run(&args.data_dir, request, keys)?;
    Ok((value, Some(route)))
}

fn configured_keys(master: Option<&str>, retired: &[String]) -> Result<ConfiguredKeys> {
    let parse = |k: &str| {
        svc_core::plumbing::sealed::parse_key_hex(k)
            .map(Vec::from)
            .map_err(|e| Error::invalid_input(format!("master key: {e}")))
    };
    Ok(ConfiguredKeys {
        master_key: master.map(parse).transpose()?,
        retired: retired
            .iter()
            .filter(|k| !k.trim().is_empty())
            .map(|k| parse(k))
            .collect::<Result<_>>()?,
    })
}

/// `path` against the current directory (the service has its own).
fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).map_err(|e| Error::invalid_input(format!("{}: {e}", path.display())))
}
