//! Operator control (`svcd admin`): what only the person running the service may do — change
//! a workspace's plan and credit limit, back up and restore, validate the store, rotate the
//! master key, revoke a workspace's keys. None of it is reachable over the members' HTTP API.
//!
//! The commands are plain functions over an [`Operator`]: the store, the data directory and
//! the master keys. A running `svcd` answers them on a Unix socket in its data directory
//! (`admin.sock`, mode 0600: only the account running the service can connect; `socket`);
//! when no service runs, the `svcd admin` client opens the directory itself (`client`).
//! `protocol` is the line-delimited JSON between the two; `backup` holds backup and restore;
//! `cli` the command line.

pub mod backup;
pub mod cli;
pub mod client;
pub mod protocol;
pub mod socket;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::state::AppState;
pub use protocol::Request;
use svc_core::error::{Code, Error, Result};
use svc_core::keys::{self, AgentKey};
use svc_core::plumbing::sealed::{self, Sealer};
use svc_core::store::{RecordScan, Store, WorkspaceId};
use svc_core::workspaces::{self, Plan};

/// The socket's file name inside the data directory.
pub const SOCKET_FILE: &str = "admin.sock";

/// Master keys given on the command line or in the environment (`SVC_MASTER_KEY`,
/// `SVC_MASTER_KEYS_RETIRED`) rather than generated into the data directory.
#[derive(Clone, Default)]
pub struct ConfiguredKeys {
    pub master_key: Option<Vec<u8>>,
    pub retired: Vec<Vec<u8>>,
}

impl std::fmt::Debug for ConfiguredKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfiguredKeys")
            .field(
                "master_key",
                &self.master_key.as_ref().map(|_| "<redacted>"),
            )
            .field("retired", &self.retired.len())
            .finish()
    }
}

/// What the commands work on: a running service's store and sealer, or a directory opened
/// by the admin client while no service runs.
#[derive(Clone, Debug)]
pub struct Operator {
    pub store: Store,
    pub data_dir: PathBuf,
    pub keys: ConfiguredKeys,
    /// The running service's sealer; `None` offline, where it is loaded when needed (loading
    /// creates a master key when there is none, which only rotation may do).
    sealer: Option<Sealer>,
    /// Whether the service answers HTTP while the command runs.
    online: bool,
    /// Whether the JWT secret is configured rather than in `jwt.secret`.
    jwt_secret_configured: bool,
}

impl Operator {
    /// The running service's view.
    pub fn of_service(state: &AppState) -> Operator {
        Operator {
            store: state.store.clone(),
            data_dir: state.config.data_dir.clone(),
            keys: ConfiguredKeys {
                master_key: state.config.master_key.clone(),
                retired: state.config.retired_master_keys.clone(),
            },
            sealer: Some(state.sealer.clone()),
            online: true,
            jwt_secret_configured: state.config.jwt_secret.is_some(),
        }
    }

    /// Opens `data_dir` directly (no service running). A directory whose store is locked by a
    /// running service is refused with `unavailable`.
    pub fn open(data_dir: &Path, keys: ConfiguredKeys) -> Result<Operator> {
        let store_dir = data_dir.join("store");
        if !store_dir.join("CURRENT").is_file() {
            return Err(Error::invalid_input(format!(
                "{} is not a data directory of svcd (no store/CURRENT)",
                data_dir.display()
            )));
        }
        let store = Store::try_open(&store_dir, crate::record_kinds::all())
            .map_err(|e| not_opened(data_dir, &e))?;
        Ok(Operator {
            store,
            data_dir: data_dir.to_path_buf(),
            keys,
            sealer: None,
            online: false,
            jwt_secret_configured: false,
        })
    }

    /// Lets go of a directly opened store.
    pub fn close(&self) {
        if !self.online {
            self.store.close();
        }
    }

    /// Runs one command.
    pub async fn execute(&self, request: Request) -> Result<Value> {
        match request {
            Request::WorkspaceList => self.workspace_list().await,
            Request::WorkspaceSetPlan {
                workspace_id,
                plan,
                monthly_credit_limit,
            } => {
                self.set_plan(&workspace_id, &plan, monthly_credit_limit)
                    .await
            }
            Request::Backup { dest } => self.backup(&dest).await,
            Request::Validate => self.validate().await,
            Request::RotateMasterKey => self.rotate_master_key().await,
            Request::RevokeKeys { workspace_id } => self.revoke_keys(&workspace_id).await,
        }
    }

    /// Every workspace with its plan and limits.
    pub async fn workspace_list(&self) -> Result<Value> {
        let mut out = Vec::new();
        for ws in workspaces::all_ids(&self.store).await? {
            out.push(
                serde_json::to_value(workspaces::get(&self.store, ws).await?)
                    .map_err(|e| Error::new(Code::Internal, format!("workspace as JSON: {e}")))?,
            );
        }
        Ok(json!({ "workspaces": out }))
    }

    /// Sets the plan; `monthly_credit_limit` is required with, and only allowed for,
    /// `enterprise`.
    pub async fn set_plan(
        &self,
        workspace_id: &str,
        plan: &str,
        monthly_credit_limit: Option<u64>,
    ) -> Result<Value> {
        let ws = parse_workspace(workspace_id)?;
        let plan = Plan::parse(plan).ok_or_else(|| {
            let names: Vec<&str> = Plan::ALL.iter().map(|p| p.as_str()).collect();
            Error::invalid_input(format!(
                "unknown plan {plan:?}; one of {}",
                names.join(", ")
            ))
        })?;
        let view = workspaces::set_plan(&self.store, ws, plan, monthly_credit_limit).await?;
        tracing::info!(workspace = %workspace_id, plan = plan.as_str(), "operator set the plan");
        serde_json::to_value(view)
            .map_err(|e| Error::new(Code::Internal, format!("workspace as JSON: {e}")))
    }

    /// A backup into `dest` (see `backup`).
    pub async fn backup(&self, dest: &Path) -> Result<Value> {
        let store = self.store.clone();
        let data_dir = self.data_dir.clone();
        let dest = dest.to_path_buf();
        let configured = backup::Configured {
            jwt_secret: self.jwt_secret_configured,
            master_key: self.keys.master_key.is_some(),
        };
        tokio::task::spawn_blocking(move || backup::create(&store, &data_dir, &dest, configured))
            .await
            .map_err(|e| Error::new(Code::Internal, format!("backup task failed: {e}")))?
    }

    /// The engine's cross-check of every index against the primary data.
    pub async fn validate(&self) -> Result<Value> {
        let store = self.store.clone();
        let report = tokio::task::spawn_blocking(move || store.validate())
            .await
            .map_err(|e| Error::new(Code::Internal, format!("validate task failed: {e}")))?
            .map_err(|e| Error::new(Code::Internal, format!("validate: {}", e.message)))?;
        Ok(json!({
            "ok": report.is_ok(),
            "nodes": report.nodes,
            "edges": report.edges,
            "property_index_entries": report.property_index_entries,
            "identity_entries": report.identity_entries,
            "problems": report.problems,
        }))
    }

    /// Re-seals every sealed value under a new master key. A generated key (`master.key`) is
    /// replaced by a new one, the old one kept in `master.key.retired`; with a configured key
    /// (`SVC_MASTER_KEY`) nothing is generated: values sealed with retired keys are re-sealed
    /// under the configured one. Offline, after a complete pass, the retired file is removed
    /// (nothing needs it); online it stays, because a write that raced the pass may still
    /// hold a value sealed with the old key.
    pub async fn rotate_master_key(&self) -> Result<Value> {
        let generated = self.keys.master_key.is_none();
        if generated && !self.data_dir.join(sealed::KEY_FILE).exists() {
            return Err(Error::invalid_input(format!(
                "{} has no {} and no master key was given (SVC_MASTER_KEY)",
                self.data_dir.display(),
                sealed::KEY_FILE
            )));
        }
        let sealer = match &self.sealer {
            Some(s) => s.clone(),
            None => self.load_sealer()?,
        };
        let before = sealer.current_key_id();
        if generated {
            sealed::rotate_generated_key(&self.data_dir)?;
            sealer.replace_keys(&self.load_sealer()?);
        }
        let after = sealer.current_key_id();
        let mut resealed = 0usize;
        let mut failures = Vec::new();
        for ws in workspaces::all_ids(&self.store).await? {
            for (what, outcome) in [
                (
                    "brand_context",
                    svc_domains::brand::reseal(&self.store, &sealer, ws).await,
                ),
                (
                    "webhook_secret",
                    svc_domains::events::webhook_secrets::reseal(&self.store, &sealer, ws).await,
                ),
                (
                    "integration",
                    svc_domains::integrations::reseal(&self.store, &sealer, ws).await,
                ),
            ] {
                match outcome {
                    Ok(n) => resealed += n,
                    Err(e) => failures.push(json!({
                        "workspace_id": workspaces::render_id(ws),
                        "record": what,
                        "error": e.message,
                    })),
                }
            }
        }
        let retired_file_removed = generated && !self.online && failures.is_empty();
        if retired_file_removed {
            sealed::drop_retired_file(&self.data_dir)?;
        }
        tracing::info!(old = %before, new = %after, resealed, "operator rotated the master key");
        Ok(json!({
            "previous_key_id": before.to_string(),
            "key_id": after.to_string(),
            "generated": generated,
            "resealed": resealed,
            "failures": failures,
            "retired_file_removed": retired_file_removed,
        }))
    }

    fn load_sealer(&self) -> Result<Sealer> {
        Sealer::load(
            &self.data_dir,
            self.keys.master_key.as_deref(),
            &self.keys.retired,
        )
    }

    /// Revokes every key of the workspace (agent and legacy); they are refused from the next
    /// request on.
    pub async fn revoke_keys(&self, workspace_id: &str) -> Result<Value> {
        let ws = parse_workspace(workspace_id)?;
        workspaces::get(&self.store, ws).await?;
        let usage = keys::usage::UsageTracker::new();
        let mut revoked = Vec::new();
        let mut after = None;
        loop {
            let page: Vec<AgentKey> = self
                .store
                .scan(
                    ws,
                    RecordScan {
                        after: after.clone(),
                        limit: Some(PAGE),
                        ..RecordScan::default()
                    },
                )
                .await?;
            let Some(last) = page.last() else { break };
            after = Some(last.id.clone());
            let full = page.len() == PAGE;
            for key in page.iter().filter(|k| !k.is_revoked()) {
                keys::revoke(&self.store, &usage, ws, &key.id).await?;
                revoked.push(key.id.clone());
            }
            if !full {
                break;
            }
        }
        tracing::info!(workspace = %workspace_id, count = revoked.len(), "operator revoked keys");
        Ok(json!({ "workspace_id": workspace_id, "revoked": revoked }))
    }
}

const PAGE: usize = 500;

fn parse_workspace(id: &str) -> Result<WorkspaceId> {
    workspaces::parse_id(id).ok_or_else(|| {
        Error::invalid_input(format!(
            "{id:?} is not a workspace id (ws_ + 16 hex digits)"
        ))
    })
}

/// Why a data directory's store did not open: a running service holds its lock (the usual
/// case: its admin socket did not answer, or the client would not be here), or the store is
/// damaged.
fn not_opened(data_dir: &Path, e: &svc_core::store::EngineError) -> Error {
    let detail = e.to_string();
    if detail.to_ascii_lowercase().contains("lock") {
        return Error::new(
            Code::Unavailable,
            format!(
                "{} is in use: a running svcd holds its store, but its admin socket {} does not \
                 answer; check that service (or stop it) and try again ({detail})",
                data_dir.display(),
                data_dir.join(SOCKET_FILE).display()
            ),
        );
    }
    Error::new(
        Code::Internal,
        format!("cannot open the store of {}: {detail}", data_dir.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_core::workspaces::WorkspaceEntry;

    /// A data directory holding one workspace, as a stopped service leaves it.
    async fn data_dir_with_workspace(dir: &Path) -> WorkspaceId {
        let store = Store::open(&dir.join("store")).expect("open");
        let ws = WorkspaceId(0x0123_4567_89ab_cdef);
        let entry = WorkspaceEntry {
            id: workspaces::render_id(ws),
            number: ws.0,
            name: "Ops".into(),
            owner_user_id: "usr_1".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
        };
        store
            .write(move |tx| workspaces::create_in(tx, &entry, "2026-01-01T00:00:00Z"))
            .await
            .expect("workspace");
        store.close();
        ws
    }

    #[tokio::test]
    async fn commands_on_a_stopped_directory_and_its_backup() {
        let root = tempfile::tempdir().expect("tempdir");
        let live = root.path().join("live");
        let ws = data_dir_with_workspace(&live).await;
        let id = workspaces::render_id(ws);
        std::fs::write(live.join("jwt.secret"), "ab".repeat(32)).expect("secret");

        let op = Operator::open(&live, ConfiguredKeys::default()).expect("open");
        // A second opener while the store is held: refused as "in use", not opened twice.
        let e = Operator::open(&live, ConfiguredKeys::default()).expect_err("locked");
        assert_eq!(e.code, Code::Unavailable);
        assert!(e.message.contains("is in use"), "{}", e.message);

        let set = op.set_plan(&id, "growth", None).await.expect("set plan");
        assert_eq!(set["monthly_credit_limit"], 3000);
        assert!(op.set_plan(&id, "platinum", None).await.is_err());
        assert!(op.set_plan("ws_nope", "pro", None).await.is_err());
        let list = op.workspace_list().await.expect("list");
        assert_eq!(list["workspaces"][0]["plan"], "growth");
        assert_eq!(op.validate().await.expect("validate")["ok"], true);
        let none = op.revoke_keys(&id).await.expect("revoke");
        assert_eq!(none["revoked"], json!([]));

        let backup = root.path().join("backup");
        let b = op.backup(&backup).await.expect("backup");
        assert_eq!(b["secrets"], json!(["jwt.secret"]));
        assert!(op.backup(&backup).await.is_err(), "not over a backup");
        assert!(op.backup(Path::new("relative")).await.is_err());
        op.close();

        let restored = root.path().join("restored");
        let r = backup::restore(&backup, &restored).expect("restore");
        assert_eq!(r["valid"], true, "{r}");
        let copy = Operator::open(&restored, ConfiguredKeys::default()).expect("open copy");
        let list = copy.workspace_list().await.expect("list");
        assert_eq!(list["workspaces"][0]["id"], id.as_str());
        assert_eq!(list["workspaces"][0]["plan"], "growth");
        copy.close();
        assert_eq!(
            std::fs::read(restored.join("jwt.secret")).expect("secret"),
            std::fs::read(live.join("jwt.secret")).expect("secret")
        );
    }

    #[test]
    fn what_is_not_a_data_directory_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = Operator::open(dir.path(), ConfiguredKeys::default()).expect_err("empty");
        assert!(e.message.contains("not a data directory"), "{}", e.message);
    }
}
