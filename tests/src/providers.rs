//! Outside providers on loopback, for the integrations and outbound tests:
//! - [`SmtpSink`]: a real SMTP server (aiosmtpd, see [`crate::smtp`]) that requires AUTH and
//!   keeps every message it accepts.
//! - [`HttpProvider`]: one HTTP server implementing the documented request shapes of a
//!   Twilio-compatible voice API (`GET /2010-04-01/Accounts/{sid}.json`,
//!   `POST /2010-04-01/Accounts/{sid}/Calls.json`, form-encoded, HTTP Basic
//!   `AccountSid:AuthToken`) and of Customer.io's Track API v1 (`GET /api/v1/accounts/region`,
//!   `PUT /api/v1/customers/{id}`, `POST /api/v1/customers/{id}/events`, JSON, HTTP Basic
//!   `site_id:api_key`), checking auth the way the providers do and recording every request.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use base64::Engine as _;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use crate::smtp::{Delivered, SmtpOptions, SmtpServer, TestPki};
use crate::unique;

/// An SMTP server requiring AUTH as `user` / `password`.
#[derive(Debug)]
pub struct SmtpSink {
    pub user: String,
    pub password: String,
    pub port: u16,
    /// The private CA of the server's STARTTLS certificate, when it offers STARTTLS.
    pub pki: Option<TestPki>,
    server: SmtpServer,
}

impl SmtpSink {
    /// Plain text with AUTH (a relay on a trusted network).
    pub fn start() -> SmtpSink {
        SmtpSink::start_with(None)
    }

    /// STARTTLS required (with a certificate of a fresh private CA), then AUTH.
    pub fn start_tls() -> SmtpSink {
        SmtpSink::start_with(Some(TestPki::new("svc test CA")))
    }

    fn start_with(pki: Option<TestPki>) -> SmtpSink {
        let user = "mailer".to_owned();
        let password = format!("smtp-pass-{}", unique());
        let server = SmtpServer::start_blocking(&SmtpOptions {
            auth: Some((user.clone(), password.clone())),
            tls: pki.clone(),
        });
        SmtpSink {
            user,
            password,
            port: server.port,
            pki,
            server,
        }
    }

    /// The `PUT /api/v1/integrations/smtp` body for this server with `password`.
    pub fn config(&self, password: &str) -> Value {
        let mut config = json!({
            "host": "127.0.0.1",
            "port": self.port,
            "security": if self.pki.is_some() { "starttls" } else { "none" },
            "username": self.user,
            "password": password,
            "from": "Acme Growth <growth@acme.test>",
        });
        if let Some(pki) = &self.pki {
            config["ca_cert_pem"] = json!(pki.ca_pem);
        }
        config
    }

    /// Every message accepted so far.
    pub fn messages(&self) -> Vec<Delivered> {
        self.server.messages()
    }

    /// Waits (up to 10 s) for at least `n` messages; returns them.
    pub async fn wait_for(&self, n: usize) -> Vec<Delivered> {
        self.server.wait_for(n).await
    }
}

/// One request the HTTP provider received.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    /// The path as sent (percent-encoded).
    pub path: String,
    /// The form parameters, in order (form-encoded bodies).
    pub form: Vec<(String, String)>,
    /// The JSON body (`null` otherwise).
    pub json: Value,
    /// The status the provider answered.
    pub status: u16,
}

#[derive(Debug)]
struct ProviderState {
    account_sid: String,
    auth_token: String,
    site_id: String,
    api_key: String,
    region: Mutex<&'static str>,
    base: Mutex<String>,
    received: Mutex<Vec<Received>>,
    calls: Mutex<u32>,
}

/// The voice and Customer.io APIs on one loopback server.
#[derive(Debug)]
pub struct HttpProvider {
    pub base: String,
    pub account_sid: String,
    pub auth_token: String,
    pub from_number: String,
    pub site_id: String,
    pub api_key: String,
    state: Arc<ProviderState>,
    task: JoinHandle<()>,
}

impl HttpProvider {
    pub async fn start() -> HttpProvider {
        let id = unique().replace('-', "");
        let state = Arc::new(ProviderState {
            account_sid: format!("AC{id}"),
            auth_token: format!("voice-token-{id}"),
            site_id: format!("site{id}"),
            api_key: format!("cio-key-{id}"),
            region: Mutex::new("us"),
            base: Mutex::new(String::new()),
            received: Mutex::new(Vec::new()),
            calls: Mutex::new(0),
        });
        let app = Router::new().fallback(handle).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        *lock(&state.base) = base.clone();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        HttpProvider {
            base,
            account_sid: state.account_sid.clone(),
            auth_token: state.auth_token.clone(),
            from_number: "+14155550100".to_owned(),
            site_id: state.site_id.clone(),
            api_key: state.api_key.clone(),
            state,
            task,
        }
    }

    /// The `PUT /api/v1/integrations/voice` body for this server.
    pub fn voice_config(&self) -> Value {
        json!({"base_url": self.base, "account_sid": self.account_sid,
               "auth_token": self.auth_token, "from_number": self.from_number})
    }

    /// The `PUT /api/v1/integrations/customerio` body for this server (region `us`).
    pub fn cio_config(&self) -> Value {
        json!({"site_id": self.site_id, "api_key": self.api_key, "region": "us",
               "base_url": self.base})
    }

    /// The region `GET /api/v1/accounts/region` reports for the credentials (default `us`).
    pub fn set_cio_region(&self, region: &'static str) {
        *lock(&self.state.region) = region;
    }

    /// Every request so far, in order of arrival.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.state.received).clone()
    }
}

impl Drop for HttpProvider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn basic_auth_is(headers: &HeaderMap, user: &str, password: &str) -> bool {
    let expected = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Basic {expected}"))
}

fn reply(status: StatusCode, body: Value) -> (StatusCode, Value) {
    (status, body)
}

fn twilio_error(status: StatusCode, code: u32, message: &str) -> (StatusCode, Value) {
    reply(
        status,
        json!({"code": code, "message": message, "status": status.as_u16(),
               "more_info": format!("https://www.twilio.com/docs/errors/{code}")}),
    )
}

fn cio_error(status: StatusCode, message: &str) -> (StatusCode, Value) {
    reply(status, json!({"meta": {"error": message}}))
}

async fn handle(
    State(state): State<Arc<ProviderState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let form: Vec<(String, String)> =
        if content_type.starts_with("application/x-www-form-urlencoded") {
            serde_urlencoded::from_bytes(&body).unwrap_or_default()
        } else {
            Vec::new()
        };
    let json_body: Value = if content_type.starts_with("application/json") {
        serde_json::from_slice(&body).unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    let path = uri.path().to_owned();
    let (status, answer) = route(&state, &method, &path, &headers, &form, &json_body);
    lock(&state.received).push(Received {
        method: method.to_string(),
        path,
        form,
        json: json_body,
        status: status.as_u16(),
    });
    (status, Json(answer)).into_response()
}

fn route(
    state: &ProviderState,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    form: &[(String, String)],
    body: &Value,
) -> (StatusCode, Value) {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method.as_str(), segments.as_slice()) {
        ("GET", ["2010-04-01", "Accounts", account]) => {
            let Some(sid) = account.strip_suffix(".json") else {
                return twilio_error(StatusCode::NOT_FOUND, 20404, "not found");
            };
            if let Err(e) = voice_auth(state, headers, sid) {
                return e;
            }
            reply(
                StatusCode::OK,
                json!({"sid": sid, "friendly_name": "test account", "status": "active"}),
            )
        }
        ("POST", ["2010-04-01", "Accounts", sid, "Calls.json"]) => {
            if let Err(e) = voice_auth(state, headers, sid) {
                return e;
            }
            place_call(state, sid, form)
        }
        ("GET", ["api", "v1", "accounts", "region"]) => {
            if !basic_auth_is(headers, &state.site_id, &state.api_key) {
                return cio_error(StatusCode::UNAUTHORIZED, "Unauthorized request");
            }
            let url = lock(&state.base).clone();
            let region = *lock(&state.region);
            reply(
                StatusCode::OK,
                json!({"url": url, "region": region, "environment_id": 1}),
            )
        }
        ("PUT", ["api", "v1", "customers", _id]) => {
            if !basic_auth_is(headers, &state.site_id, &state.api_key) {
                return cio_error(StatusCode::UNAUTHORIZED, "Unauthorized request");
            }
            if !body.is_object() {
                return cio_error(StatusCode::BAD_REQUEST, "the body must be a JSON object");
            }
            reply(StatusCode::OK, json!({}))
        }
        ("POST", ["api", "v1", "customers", _id, "events"]) => {
            if !basic_auth_is(headers, &state.site_id, &state.api_key) {
                return cio_error(StatusCode::UNAUTHORIZED, "Unauthorized request");
            }
            let named = body
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            if !named {
                return cio_error(StatusCode::BAD_REQUEST, "event name is required");
            }
            reply(StatusCode::OK, json!({}))
        }
        _ => reply(StatusCode::NOT_FOUND, json!({"message": "not found"})),
    }
}

fn voice_auth(
    state: &ProviderState,
    headers: &HeaderMap,
    sid: &str,
) -> Result<(), (StatusCode, Value)> {
    if !basic_auth_is(headers, &state.account_sid, &state.auth_token) {
        return Err(twilio_error(
            StatusCode::UNAUTHORIZED,
            20003,
            "Authenticate",
        ));
    }
    if sid != state.account_sid {
        return Err(twilio_error(
            StatusCode::NOT_FOUND,
            20404,
            "The requested resource was not found",
        ));
    }
    Ok(())
}

fn place_call(state: &ProviderState, sid: &str, form: &[(String, String)]) -> (StatusCode, Value) {
    let param = |name: &str| {
        form.iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.clone())
    };
    let (Some(to), Some(from)) = (param("To"), param("From")) else {
        return twilio_error(StatusCode::BAD_REQUEST, 21201, "To and From are required");
    };
    if param("Twiml").is_none() && param("Url").is_none() {
        return twilio_error(
            StatusCode::BAD_REQUEST,
            21205,
            "Either Url or Twiml is required",
        );
    }
    let mut calls = lock(&state.calls);
    *calls += 1;
    let call_sid = format!("CA{:032x}", *calls);
    reply(
        StatusCode::CREATED,
        json!({"sid": call_sid, "account_sid": sid, "status": "queued", "to": to, "from": from,
               "direction": "outbound-api", "api_version": "2010-04-01"}),
    )
}
