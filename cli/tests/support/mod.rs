//! Shared by the process-level tests: a real svcd (the shared harness) and the real `svc`
//! binary run as a child process with a private config directory.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};
use svc_integration_tests::{grant, read, Account, Capability, Key, TestServer};
use tempfile::TempDir;

pub const SVC: &str = env!("CARGO_BIN_EXE_svc");

/// A server, an account, an agent key and a private config home for `svc`.
pub struct World {
    pub server: TestServer,
    pub account: Account,
    pub key: Key,
    pub home: TempDir,
}

impl World {
    pub async fn new() -> World {
        let server = TestServer::start().await;
        let account = server.account().await;
        // A key's credit override may not exceed the plan, which only the operator raises.
        server
            .operator_set_plan(&account.workspace_id, "enterprise", Some(100_000))
            .await;
        let key = server
            .mint_key(
                &account,
                json!({
                    "name": "cli test",
                    "agent": "cli-tester",
                    "grants": [grant(Capability::ContextGet), grant(Capability::EventsIngest)],
                    "allowed_modes": ["dry_run", "execute"],
                    // The tests poll usage between CLI runs; keep the rate limit out of the way.
                    "rate_limit_per_min": 100_000,
                    "quota_override_monthly": 100_000,
                }),
            )
            .await;
        World {
            server,
            account,
            key,
            home: tempfile::tempdir().expect("home"),
        }
    }

    pub fn config_dir(&self) -> PathBuf {
        self.home.path().join("config")
    }

    /// A `svc` command with a clean environment: this world's server and config home, no key.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(SVC);
        c.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.config_dir())
            .env("SVC_BASE_URL", &self.server.base)
            .stdin(Stdio::null());
        c
    }

    /// Runs `svc args` (blocking work off the runtime's threads).
    pub async fn svc(&self, args: &[&str]) -> Run {
        self.run(self.cmd(args)).await
    }

    /// Runs `svc args` with the key in SVC_API_KEY.
    pub async fn svc_keyed(&self, args: &[&str]) -> Run {
        let mut c = self.cmd(args);
        c.env("SVC_API_KEY", &self.key.plaintext);
        self.run(c).await
    }

    pub async fn run(&self, mut c: Command) -> Run {
        let out = tokio::task::spawn_blocking(move || c.output().expect("run svc"))
            .await
            .expect("join");
        Run::from(out)
    }

    /// `svc auth login` with this world's key.
    pub async fn login(&self) {
        let r = self
            .svc(&["auth", "login", "--key", &self.key.plaintext])
            .await;
        assert_eq!(r.code, 0, "{r:?}");
    }

    /// GET with the agent key; status and body.
    pub async fn get_keyed(&self, path: &str) -> (u16, Value) {
        let resp = self
            .server
            .get(path)
            .bearer_auth(&self.key.plaintext)
            .send()
            .await
            .expect("get");
        let (s, v) = read(resp).await;
        (s.as_u16(), v)
    }

    /// Credits the key used this month.
    pub async fn credits_used(&self) -> u64 {
        let (s, v) = self
            .get_keyed("/api/v1/capabilities/usage/actions?limit=1")
            .await;
        assert_eq!(s, 200, "{v}");
        v["used"].as_u64().expect("used")
    }

    /// Touchpoints in the workspace (graph query with the account's JWT, which outlives keys).
    pub async fn touchpoints(&self) -> u64 {
        let resp = self
            .server
            .post("/v1/graph/query")
            .bearer_auth(&self.account.token)
            .json(&json!({"query": "MATCH (t:Touchpoint) RETURN count(t)"}))
            .send()
            .await
            .expect("query");
        let (s, v) = read(resp).await;
        assert_eq!(s.as_u16(), 200, "{v}");
        v["rows"][0][0]
            .as_u64()
            .unwrap_or_else(|| panic!("no count in {v}"))
    }

    /// Revokes this world's key (JWT).
    pub async fn revoke(&self) {
        let resp = self
            .server
            .request(
                reqwest::Method::DELETE,
                &format!("/api/v1/keys/{}", self.key.id),
            )
            .bearer_auth(&self.account.token)
            .send()
            .await
            .expect("revoke");
        assert_eq!(resp.status().as_u16(), 200);
    }

    /// The receipt of an invocation.
    pub async fn receipt(&self, request_id: &str) -> Value {
        let (s, v) = self
            .get_keyed(&format!("/api/v1/capabilities/actions/{request_id}"))
            .await;
        assert_eq!(s, 200, "{v}");
        v
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.home.path().join(name);
        std::fs::write(&p, text).expect("write file");
        p
    }
}

/// A finished `svc` process.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    /// stdout as JSON (for `--json` runs).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }
}

/// The Python interpreter of the MCP client virtualenv (created once by scripts/mcp-venv.sh).
pub fn mcp_python() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/mcp-venv.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .expect("run scripts/mcp-venv.sh");
    assert!(
        out.status.success(),
        "scripts/mcp-venv.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(stdout.lines().last().expect("python path").trim())
}
