//! Headless Chromium for the dashboard tests, driven through W3C WebDriver: `chromedriver`
//! (Debian's `chromium-driver`, installed by scripts/install-deps.sh) on a free loopback port,
//! started as a child process in its own process group and killed with it on drop.
//!
//! The WebDriver commands go over HTTP with the harness's reqwest (the protocol is JSON over
//! HTTP). `fantoccini` 0.21 without its default TLS features cannot be constructed without
//! naming a `hyper-util` connector, which this crate does not depend on; this client needs no
//! dependency beyond what the harness has. Every wait is bounded by an explicit timeout.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

/// The W3C element reference key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How long a wait polls before it fails.
pub const WAIT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(50);

/// A chromedriver process with one headless Chromium session.
#[derive(Debug)]
pub struct Browser {
    driver: Child,
    http: reqwest::Client,
    /// `http://127.0.0.1:<port>/session/<id>`.
    session: String,
}

/// An element of the current page.
#[derive(Clone, Debug)]
pub struct Element(String);

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

/// The chromium binary (Debian's package installs `/usr/bin/chromium`).
fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

impl Browser {
    /// Starts chromedriver and a headless Chromium (1280x900). Panics with a hint to
    /// scripts/install-deps.sh when either is missing.
    pub async fn start() -> Browser {
        let binary = chromium().expect("chromium is not installed: run scripts/install-deps.sh");
        let port = free_port();
        let mut cmd = Command::new("chromedriver");
        cmd.arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // Its own process group, so dropping the browser ends chromedriver and its Chromium.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let driver = cmd
            .spawn()
            .expect("chromedriver is not installed: run scripts/install-deps.sh");
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client");
        let base = format!("http://127.0.0.1:{port}");
        let mut browser = Browser {
            driver,
            http,
            session: String::new(),
        };
        let deadline = Instant::now() + WAIT;
        loop {
            let ready = browser
                .http
                .get(format!("{base}/status"))
                .send()
                .await
                .ok()
                .filter(|r| r.status().is_success());
            if ready.is_some() {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(POLL).await;
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            // The page's console and uncaught errors, read by `browser_log`.
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {
                "binary": binary,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--window-size=1280,900", "--disable-dev-shm-usage"],
            },
        }}});
        let created = browser
            .command("POST", &format!("{base}/session"), caps)
            .await;
        let id = created["sessionId"]
            .as_str()
            .expect("a WebDriver session id");
        browser.session = format!("{base}/session/{id}");
        browser
    }

    async fn command(&self, method: &str, url: &str, body: Value) -> Value {
        let req = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self.http.post(url).json(&body),
        };
        let resp = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = resp.status();
        let v: Value = resp.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{method} {url}: {status} {v}");
        v["value"].clone()
    }

    async fn try_command(&self, method: &str, path: &str, body: Value) -> Result<Value, Value> {
        let url = format!("{}{}", self.session, path);
        let req = match method {
            "GET" => self.http.get(&url),
            _ => self.http.post(&url).json(&body),
        };
        let resp = req.send().await.map_err(|e| json!(e.to_string()))?;
        let ok = resp.status().is_success();
        let v: Value = resp.json().await.unwrap_or(Value::Null);
        if ok {
            Ok(v["value"].clone())
        } else {
            Err(v)
        }
    }

    async fn session_command(&self, method: &str, path: &str, body: Value) -> Value {
        self.command(method, &format!("{}{}", self.session, path), body)
            .await
    }

    pub async fn goto(&self, url: &str) {
        self.session_command("POST", "/url", json!({ "url": url }))
            .await;
    }

    pub async fn current_url(&self) -> String {
        self.session_command("GET", "/url", Value::Null)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The first element matching `css` now, if any.
    pub async fn find(&self, css: &str) -> Option<Element> {
        let v = self
            .try_command(
                "POST",
                "/element",
                json!({"using": "css selector", "value": css}),
            )
            .await
            .ok()?;
        v[ELEMENT].as_str().map(|id| Element(id.to_owned()))
    }

    /// Every element matching `css` now.
    pub async fn find_all(&self, css: &str) -> Vec<Element> {
        let v = self
            .session_command(
                "POST",
                "/elements",
                json!({"using": "css selector", "value": css}),
            )
            .await;
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e[ELEMENT].as_str().map(|id| Element(id.to_owned())))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits (at most [`WAIT`]) for an element matching `css`.
    pub async fn wait_for(&self, css: &str) -> Element {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(e) = self.find(css).await {
                return e;
            }
            assert!(
                Instant::now() < deadline,
                "no element {css:?} within {WAIT:?} on {}; page text: {}",
                self.current_url().await,
                self.page_text().await
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits (at most [`WAIT`]) until the text of the element matching `css` contains `text`.
    pub async fn wait_for_text(&self, css: &str, text: &str) -> Element {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(e) = self.find(css).await {
                if let Ok(t) = self.try_text(&e).await {
                    if t.contains(text) {
                        return e;
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "{css:?} did not show {text:?} within {WAIT:?}; page text: {}",
                self.page_text().await
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits (at most [`WAIT`]) for the URL's path to start with `path`.
    pub async fn wait_for_path(&self, path: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            let url = self.current_url().await;
            let here = url.splitn(4, '/').nth(3).map(|p| format!("/{p}"));
            if here.as_deref().is_some_and(|p| p.starts_with(path)) {
                return;
            }
            assert!(Instant::now() < deadline, "still at {url}, expected {path}");
            tokio::time::sleep(POLL).await;
        }
    }

    async fn try_text(&self, e: &Element) -> Result<String, Value> {
        let v = self
            .try_command("GET", &format!("/element/{}/text", e.0), Value::Null)
            .await?;
        Ok(v.as_str().unwrap_or_default().to_owned())
    }

    pub async fn text(&self, e: &Element) -> String {
        self.try_text(e).await.expect("element text")
    }

    /// The visible text of the whole page.
    pub async fn page_text(&self) -> String {
        match self.find("body").await {
            Some(b) => self.try_text(&b).await.unwrap_or_default(),
            None => String::new(),
        }
    }

    pub async fn property(&self, e: &Element, name: &str) -> Value {
        self.session_command(
            "GET",
            &format!("/element/{}/property/{name}", e.0),
            Value::Null,
        )
        .await
    }

    pub async fn click(&self, e: &Element) {
        self.session_command("POST", &format!("/element/{}/click", e.0), json!({}))
            .await;
    }

    /// Clears a field and types `text` into it.
    pub async fn fill(&self, e: &Element, text: &str) {
        self.session_command("POST", &format!("/element/{}/clear", e.0), json!({}))
            .await;
        self.session_command(
            "POST",
            &format!("/element/{}/value", e.0),
            json!({ "text": text }),
        )
        .await;
    }

    /// Fills the field matching `css` (waiting for it).
    pub async fn fill_in(&self, css: &str, text: &str) {
        let e = self.wait_for(css).await;
        self.fill(&e, text).await;
    }

    /// Clicks the element matching `css` (waiting for it).
    pub async fn click_on(&self, css: &str) {
        let e = self.wait_for(css).await;
        self.click(&e).await;
    }

    /// Runs `script` in the page (`return ...` for a value).
    pub async fn execute(&self, script: &str, args: Value) -> Value {
        self.session_command(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": args}),
        )
        .await
    }

    /// Runs `script` asynchronously: it finishes by calling `arguments[arguments.length - 1]`
    /// with its value. Bounded by the session's script timeout (30 s by default).
    pub async fn execute_async(&self, script: &str, args: Value) -> Value {
        self.session_command(
            "POST",
            "/execute/async",
            json!({"script": script, "args": args}),
        )
        .await
    }

    /// The browser's console entries since the last call (`{level, message, source}`), uncaught
    /// errors and failed loads among them (chromedriver's log endpoint).
    pub async fn browser_log(&self) -> Vec<Value> {
        self.session_command("POST", "/se/log", json!({"type": "browser"}))
            .await
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Resizes the window (CSS pixels).
    pub async fn set_window_size(&self, width: u32, height: u32) {
        self.session_command(
            "POST",
            "/window/rect",
            json!({"width": width, "height": height}),
        )
        .await;
    }

    /// The browser's cookies for the current page (HttpOnly ones included).
    pub async fn cookies(&self) -> Vec<Value> {
        self.session_command("GET", "/cookie", Value::Null)
            .await
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Writes a PNG screenshot of the viewport to `path` (creating its directory).
    pub async fn screenshot(&self, path: &Path) {
        let v = self
            .session_command("GET", "/screenshot", Value::Null)
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().expect("screenshot data"))
            .expect("screenshot base64");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot dir");
        }
        std::fs::write(path, png).expect("write screenshot");
    }

    /// Ends the session (Chromium exits), then chromedriver.
    pub async fn close(self) {
        let _ = self
            .http
            .delete(&self.session)
            .timeout(Duration::from_secs(5))
            .send()
            .await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The whole group: chromedriver and any Chromium it started.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
