//! The HTTP client of svcd: one blocking reqwest client, the agent key in
//! `Authorization: Bearer`, the service's error body turned into [`CliError::Api`].

use std::time::Duration;

use reqwest::blocking::{Client as Http, RequestBuilder};
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::error::{CliError, Result};

/// One answer: status, headers and the body (parsed when JSON).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
    pub body: Value,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The answer if 2xx, else its error body as [`CliError::Api`].
    pub fn ok(self) -> Result<Answer> {
        if (200..300).contains(&self.status) {
            return Ok(self);
        }
        Err(self.into_error())
    }

    pub fn into_error(self) -> CliError {
        let e = self.body.get("error");
        let field = |name: &str| e.and_then(|e| e.get(name)).and_then(Value::as_str);
        match field("code") {
            Some(code) => CliError::Api {
                status: self.status,
                code: code.to_owned(),
                message: field("message").unwrap_or("").to_owned(),
                request_id: field("request_id").map(str::to_owned),
                details: e.and_then(|e| e.get("details")).cloned(),
            },
            None => CliError::Transport(format!(
                "unexpected answer from the server: HTTP {} {}",
                self.status,
                self.text.chars().take(200).collect::<String>()
            )),
        }
    }
}

/// A PEM file of the CA that signed a private svcd's certificate.
pub const CA_CERT_ENV: &str = "SVC_CA_CERT";

fn private_ca(path: &std::path::Path) -> Result<reqwest::Certificate> {
    let pem = std::fs::read(path)
        .map_err(|e| CliError::Local(format!("{CA_CERT_ENV} {}: {e}", path.display())))?;
    reqwest::Certificate::from_pem(&pem)
        .map_err(|e| CliError::Local(format!("{CA_CERT_ENV} {}: {e}", path.display())))
}

#[derive(Clone, Debug)]
pub struct Client {
    pub base: String,
    key: Option<String>,
    http: Http,
}

impl Client {
    pub fn new(base: &str, key: Option<&str>) -> Result<Client> {
        let mut builder = Http::builder()
            .timeout(Duration::from_secs(60))
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("svc/", env!("CARGO_PKG_VERSION")));
        // https:// servers are checked against the public roots, plus a private CA if given.
        if let Some(path) = std::env::var_os(CA_CERT_ENV).filter(|p| !p.is_empty()) {
            builder = builder.add_root_certificate(private_ca(std::path::Path::new(&path))?);
        }
        let http = builder
            .build()
            .map_err(|e| CliError::Local(format!("cannot build the HTTP client: {e}")))?;
        Ok(Client {
            base: base.to_owned(),
            key: key.map(str::to_owned),
            http,
        })
    }

    pub fn has_key(&self) -> bool {
        self.key.is_some()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    fn authed(&self, rb: RequestBuilder) -> RequestBuilder {
        match &self.key {
            Some(k) => rb.bearer_auth(k),
            None => rb,
        }
    }

    pub fn get(&self, path: &str) -> Result<Answer> {
        self.send(self.authed(self.http.get(self.url(path))))
    }

    pub fn post_json(&self, path: &str, body: &Value) -> Result<Answer> {
        self.send(self.authed(self.http.post(self.url(path)).json(body)))
    }

    /// A request with caller-set headers and a raw JSON body (the MCP bridge).
    pub fn raw(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Result<Answer> {
        let mut rb = self.authed(self.http.request(method, self.url(path)));
        if let Some(body) = body {
            rb = rb.header("content-type", "application/json").body(body);
        }
        for (name, value) in headers {
            rb = rb.header(*name, *value);
        }
        self.send(rb)
    }

    /// POSTs `body` and returns the open response of a 2xx answer, to be read as it arrives
    /// (server-sent events). `limit` bounds the whole exchange instead of the client's 60 s.
    pub fn post_stream(
        &self,
        path: &str,
        body: &Value,
        limit: Duration,
    ) -> Result<reqwest::blocking::Response> {
        let rb = self
            .authed(self.http.post(self.url(path)).json(body))
            .timeout(limit);
        let resp = rb.send().map_err(|e| transport(&self.base, &e))?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().map_err(|e| transport(&self.base, &e))?;
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Err(Answer {
            status,
            headers,
            text,
            body,
        }
        .into_error())
    }

    fn send(&self, rb: RequestBuilder) -> Result<Answer> {
        let resp = rb.send().map_err(|e| transport(&self.base, &e))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().map_err(|e| transport(&self.base, &e))?;
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Answer {
            status,
            headers,
            text,
            body,
        })
    }
}

fn transport(base: &str, e: &reqwest::Error) -> CliError {
    let what = if e.is_connect() {
        "cannot connect to"
    } else if e.is_timeout() {
        "timed out talking to"
    } else {
        "request failed to"
    };
    // reqwest's Display omits the cause ("error sending request"); the source says why.
    let mut cause = String::new();
    let mut src: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(s) = src {
        cause = s.to_string();
        src = s.source();
    }
    if cause.is_empty() {
        CliError::Transport(format!("{what} {base}: {e}"))
    } else {
        CliError::Transport(format!("{what} {base}: {cause}"))
    }
}
