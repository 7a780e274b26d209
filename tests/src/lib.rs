//! Shared harness of the behaviour tests: a real `svcd` service on 127.0.0.1:0 over a
//! temporary data directory, driven through HTTP only.

pub mod browser;
pub mod llm;
pub mod providers;
pub mod seed;
pub mod smtp;

use std::time::Duration;

use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde_json::{json, Value};
pub use svc_core::capabilities::Capability;
use svc_server::{AppState, Config};
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running service. Dropping it without [`TestServer::stop`] aborts it.
pub struct TestServer {
    pub base: String,
    pub client: reqwest::Client,
    dir: Option<TempDir>,
    config: Config,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), svc_core::Error>>>,
    /// The service's state, for what only the operator does (never for what HTTP can do).
    state: Option<AppState>,
    /// The PEM certificate a [`TestServer::start_tls`] server presents (its own CA).
    pub tls_cert: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

/// A registered user: their JWT and ids.
#[derive(Clone, Debug)]
pub struct Account {
    pub email: String,
    pub password: String,
    pub token: String,
    pub user_id: String,
    pub workspace_id: String,
}

/// A minted key: plaintext and metadata from the create response.
#[derive(Clone, Debug)]
pub struct Key {
    pub plaintext: String,
    pub id: String,
    pub meta: Value,
}

/// The grant a key needs to call `c`: `capability:<id>`.
pub fn grant(c: Capability) -> String {
    format!("capability:{}", c.id())
}

/// The gateway route that invokes `c`.
pub fn invoke_path(c: Capability) -> String {
    format!("/api/v1/capabilities/{}/invoke", c.id())
}

/// The capabilities of [`TestServer::agent_key`]: events and context.
pub const AGENT_CAPABILITIES: [Capability; 2] = [Capability::ContextGet, Capability::EventsIngest];

/// Grants of [`TestServer::reader_key`]: the harness key's capability grants plus every read
/// route grant.
pub fn reader_grants() -> Vec<String> {
    AGENT_CAPABILITIES
        .into_iter()
        .map(grant)
        .chain(
            [
                "customers:read",
                "graph:read",
                "playbooks:read",
                "brand:read",
                "outbox:read",
            ]
            .map(str::to_owned),
        )
        .collect()
}

/// The test config: defaults, but a short usage flush so persistence is observable quickly,
/// and loopback allowed as a destination, since the tests' providers listen there (as a
/// self-hoster with a local model would allow it).
pub fn test_config(dir: &std::path::Path) -> Config {
    let mut config = Config::new(dir);
    config.usage_flush_interval = Duration::from_millis(200);
    config.outbound = local_destinations();
    config
}

/// Makes `dir` (when it exists) the service's alone, as svcd requires of its data directory;
/// temporary directories are created 0755 here.
pub fn private_dir(dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    if dir.exists() {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).expect("chmod 700");
    }
}

/// Public addresses and loopback: where the tests' local providers listen.
pub fn local_destinations() -> svc_domains::integrations::Destinations {
    use svc_domains::integrations::Destinations;
    Destinations::allowing(Destinations::parse_allow_list("127.0.0.0/8,::1").expect("ranges"))
}

impl TestServer {
    pub async fn start() -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = test_config(dir.path());
        TestServer::start_with(dir, config).await
    }

    /// Starts on `dir` with `config` (whose data_dir should be inside `dir`).
    pub async fn start_with(dir: TempDir, config: Config) -> TestServer {
        private_dir(&config.data_dir);
        let state = AppState::open(config.clone()).await.expect("open state");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = oneshot::channel::<()>();
        let operator = state.clone();
        let task = tokio::spawn(svc_server::serve(listener, state, async {
            let _ = rx.await;
        }));
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client");
        TestServer {
            base: format!("http://{addr}"),
            client,
            dir: Some(dir),
            config,
            shutdown: Some(tx),
            task: Some(task),
            state: Some(operator),
            tls_cert: None,
        }
    }

    /// Like [`TestServer::start`], over HTTPS with a self-signed certificate for 127.0.0.1
    /// (`tls_cert`), which `client` trusts. `stop` works; `restart` comes back over HTTP.
    pub async fn start_tls() -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let (cert, key, pem) = self_signed_certificate(dir.path());
        let mut config = test_config(&dir.path().join("data"));
        config.tls_cert = Some(cert.clone());
        config.tls_key = Some(key.clone());
        let tls = svc_server::http::tls::server_config(&cert, &key).expect("TLS config");
        let state = AppState::open(config.clone()).await.expect("open state");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = oneshot::channel::<()>();
        let operator = state.clone();
        let task = tokio::spawn(svc_server::serve_tls(listener, tls, state, async {
            let _ = rx.await;
        }));
        let client = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(pem.as_bytes()).expect("pem"))
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client");
        TestServer {
            base: format!("https://{addr}"),
            client,
            dir: Some(dir),
            config,
            shutdown: Some(tx),
            task: Some(task),
            state: Some(operator),
            tls_cert: Some(cert),
        }
    }

    /// The running service's state (what an operator or a restart would touch directly).
    pub fn state(&self) -> &AppState {
        self.state.as_ref().expect("server running")
    }

    pub fn data_dir(&self) -> &std::path::Path {
        &self.config.data_dir
    }

    /// Graceful stop: in-flight requests finish, pending usage is flushed, the store closes.
    /// Returns the data directory for a restart.
    pub async fn stop(mut self) -> (TempDir, Config) {
        self.state = None;
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("server task").expect("clean shutdown");
        }
        (self.dir.take().expect("dir"), self.config.clone())
    }

    /// Stops and starts a new process-equivalent over the same data directory.
    pub async fn restart(self) -> TestServer {
        let (dir, config) = self.stop().await;
        TestServer::start_with(dir, config).await
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, self.url(path))
    }

    pub fn get(&self, path: &str) -> RequestBuilder {
        self.request(Method::GET, path)
    }

    pub fn post(&self, path: &str) -> RequestBuilder {
        self.request(Method::POST, path)
    }

    /// Registers `email`; panics unless 201.
    pub async fn register(&self, email: &str, password: &str, name: &str) -> Account {
        let resp = self
            .post("/api/auth/register")
            .json(&json!({"email": email, "password": password, "name": name}))
            .send()
            .await
            .expect("register");
        let (status, body) = read(resp).await;
        assert_eq!(status, StatusCode::CREATED, "register {email}: {body}");
        Account {
            email: email.to_owned(),
            password: password.to_owned(),
            token: str_at(&body, "/token"),
            user_id: str_at(&body, "/user/id"),
            workspace_id: str_at(&body, "/workspace/id"),
        }
    }

    /// A new account with a unique email.
    pub async fn account(&self) -> Account {
        let email = format!("user-{}@example.com", unique());
        self.register(&email, "correct horse battery", "Test User")
            .await
    }

    /// A member of `owner`'s workspace: invited by the owner, joined with the one-time token.
    pub async fn member(&self, owner: &Account) -> Account {
        let email = format!("member-{}@example.com", unique());
        let resp = self
            .post("/api/v1/workspace/invites")
            .bearer_auth(&owner.token)
            .json(&json!({ "email": email }))
            .send()
            .await
            .expect("invite");
        let (status, invite) = read(resp).await;
        assert_eq!(status, StatusCode::CREATED, "invite: {invite}");
        let password = "member password 1";
        let resp = self
            .post("/api/auth/accept-invite")
            .json(&json!({"token": str_at(&invite, "/token"), "password": password, "name": "Mia Member"}))
            .send()
            .await
            .expect("accept invite");
        let (status, body) = read(resp).await;
        assert_eq!(status, StatusCode::CREATED, "accept invite: {body}");
        Account {
            email,
            password: password.to_owned(),
            token: str_at(&body, "/token"),
            user_id: str_at(&body, "/user/id"),
            workspace_id: str_at(&body, "/workspace/id"),
        }
    }

    /// Mints an agent key with `body`; panics unless 201.
    pub async fn mint_key(&self, account: &Account, body: Value) -> Key {
        let resp = self
            .post("/api/v1/keys")
            .bearer_auth(&account.token)
            .json(&body)
            .send()
            .await
            .expect("create key");
        let (status, meta) = read(resp).await;
        assert_eq!(status, StatusCode::CREATED, "create key: {meta}");
        Key {
            plaintext: str_at(&meta, "/key"),
            id: str_at(&meta, "/id"),
            meta,
        }
    }

    /// A key holding every grant needed for events and context, all modes.
    pub async fn agent_key(&self, account: &Account) -> Key {
        self.mint_key(
            account,
            json!({
                "name": "test agent",
                "agent": "tester",
                "grants": AGENT_CAPABILITIES.map(grant),
                "allowed_modes": ["dry_run", "queue", "execute"],
            }),
        )
        .await
    }

    /// A key holding exactly `grants` (capability and route grants), all modes.
    pub async fn key_with_grants<G: AsRef<str>>(&self, account: &Account, grants: &[G]) -> Key {
        let grants: Vec<&str> = grants.iter().map(AsRef::as_ref).collect();
        self.mint_key(
            account,
            json!({
                "name": format!("key with {}", grants.join(" ")),
                "agent": "tester",
                "grants": grants,
                "allowed_modes": ["dry_run", "queue", "execute"],
            }),
        )
        .await
    }

    /// Like [`TestServer::agent_key`], plus the route grants that open the read routes outside
    /// the gateway (customers, graph, playbooks, brand, outbox).
    pub async fn reader_key(&self, account: &Account) -> Key {
        self.key_with_grants(account, &reader_grants()).await
    }

    /// What the operator does with `svcd admin workspace set-plan`: members cannot change the
    /// plan over HTTP. Returns the workspace as `GET /api/v1/workspace` shows it.
    pub async fn operator_set_plan(
        &self,
        workspace_id: &str,
        plan: &str,
        monthly_credit_limit: Option<u64>,
    ) -> Value {
        let state = self.state.as_ref().expect("server running");
        let ws = svc_core::workspaces::parse_id(workspace_id).expect("workspace id");
        let plan = svc_core::workspaces::Plan::parse(plan).expect("plan name");
        let view = svc_core::workspaces::set_plan(&state.store, ws, plan, monthly_credit_limit)
            .await
            .expect("set plan");
        serde_json::to_value(view).expect("workspace json")
    }

    pub async fn legacy_key(&self, account: &Account) -> Key {
        let resp = self
            .post("/api/v1/keys/legacy")
            .bearer_auth(&account.token)
            .json(&json!({"name": "old dashboard"}))
            .send()
            .await
            .expect("create legacy key");
        let (status, meta) = read(resp).await;
        assert_eq!(status, StatusCode::CREATED, "create legacy key: {meta}");
        Key {
            plaintext: str_at(&meta, "/key"),
            id: str_at(&meta, "/id"),
            meta,
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Status and JSON body (Null when the body is not JSON).
/// Records one event through `/api/v1/events/track` with `key` in X-API-Key; expects 200.
pub async fn track(s: &TestServer, key: &str, body: Value) -> Value {
    let resp = s
        .post("/api/v1/events/track")
        .header("x-api-key", key)
        .json(&body)
        .send()
        .await
        .expect("track");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v
}

pub async fn read(resp: Response) -> (StatusCode, Value) {
    let status = resp.status();
    let text = resp.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Asserts the error body of DESIGN.md §4 with `code`, and that its request id matches the
/// `X-Request-Id` header. Returns the body.
pub async fn expect_error(resp: Response, status: StatusCode, code: &str) -> Value {
    let header_id = resp
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .expect("x-request-id header");
    let (got, body) = read(resp).await;
    assert_eq!(got, status, "body: {body}");
    assert_eq!(
        body.pointer("/error/code").and_then(Value::as_str),
        Some(code),
        "body: {body}"
    );
    assert!(
        body.pointer("/error/message")
            .and_then(Value::as_str)
            .is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert_eq!(
        body.pointer("/error/request_id").and_then(Value::as_str),
        Some(header_id.as_str()),
        "{body}"
    );
    assert!(header_id.starts_with("req_"), "{header_id}");
    body
}

/// GETs `path` with `bearer` (a JWT or an agent key); asserts 200 and returns the JSON body.
pub async fn get_ok(s: &TestServer, path: &str, bearer: &str) -> Value {
    let resp = s.get(path).bearer_auth(bearer).send().await.expect("send");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "GET {path}: {v}");
    v
}

pub fn str_at(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {pointer} in {v}"))
        .to_owned()
}

/// A process-unique suffix for emails and names.
pub fn unique() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{nanos:x}-{}", N.fetch_add(1, Ordering::Relaxed))
}

/// Every file under `dir`, read as bytes (for "secret never on disk" checks).
pub fn all_files(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                out.push((p, bytes));
            }
        }
    }
    out
}

pub fn contains_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// A self-signed certificate for 127.0.0.1 and localhost written to `dir`: the certificate and
/// key PEM files and the certificate PEM.
pub fn self_signed_certificate(
    dir: &std::path::Path,
) -> (std::path::PathBuf, std::path::PathBuf, String) {
    let rcgen::CertifiedKey { cert, key_pair } =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .expect("certificate");
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, cert.pem()).expect("write cert");
    std::fs::write(&key_path, key_pair.serialize_pem()).expect("write key");
    (cert_path, key_path, cert.pem())
}
