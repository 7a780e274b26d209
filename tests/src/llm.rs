//! A local OpenAI-compatible chat completions server for the chat and playbook-judge tests:
//! it checks `Authorization: Bearer`, records every request and answers scripted completions
//! (tool calls included), optionally after a delay.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::task::JoinHandle;

#[derive(Debug, Default)]
struct Script {
    answers: VecDeque<Value>,
    /// Answer the last scripted completion forever (the budget test).
    repeat_last: Option<Value>,
    requests: Vec<Value>,
    delay: Option<Duration>,
}

#[derive(Clone, Debug)]
struct Llm {
    api_key: String,
    script: Arc<Mutex<Script>>,
}

#[derive(Debug)]
pub struct LlmServer {
    pub base_url: String,
    llm: Llm,
    task: JoinHandle<()>,
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn authorized(llm: &Llm, headers: &HeaderMap) -> bool {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {}", llm.api_key))
}

fn refused() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        Json(json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})),
    )
        .into_response()
}

async fn completions(
    State(llm): State<Llm>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if !authorized(&llm, &headers) {
        return refused();
    }
    let (answer, delay) = {
        let mut s = llm.script.lock().expect("script");
        s.requests.push(body);
        let next = s.answers.pop_front();
        let answer = match next {
            Some(a) => {
                if s.answers.is_empty() && s.repeat_last.is_some() {
                    s.repeat_last = Some(a.clone());
                }
                a
            }
            None => s
                .repeat_last
                .clone()
                .unwrap_or_else(|| text("(script exhausted)")),
        };
        (answer, s.delay)
    };
    if let Some(d) = delay {
        tokio::time::sleep(d).await;
    }
    Json(answer).into_response()
}

async fn models(State(llm): State<Llm>, headers: HeaderMap) -> Response {
    if !authorized(&llm, &headers) {
        return refused();
    }
    Json(json!({"object": "list", "data": [{"id": "test-model", "object": "model"}]}))
        .into_response()
}

impl LlmServer {
    pub async fn start() -> LlmServer {
        let llm = Llm {
            api_key: format!("sk-test-{}", crate::unique()),
            script: Arc::default(),
        };
        let app = Router::new()
            .route("/v1/chat/completions", post(completions))
            .route("/v1/models", get(models))
            .with_state(llm.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        LlmServer {
            base_url: format!("http://{addr}/v1"),
            llm,
            task,
        }
    }

    pub fn script(&self, answers: Vec<Value>) {
        let mut s = self.llm.script.lock().expect("script");
        s.answers = answers.into();
        s.repeat_last = None;
        s.delay = None;
    }

    pub fn script_forever(&self, answer: Value) {
        let mut s = self.llm.script.lock().expect("script");
        s.answers.clear();
        s.repeat_last = Some(answer);
        s.delay = None;
    }

    pub fn delay(&self, d: Duration) {
        self.llm.script.lock().expect("script").delay = Some(d);
    }

    pub fn take_requests(&self) -> Vec<Value> {
        std::mem::take(&mut self.llm.script.lock().expect("script").requests)
    }

    /// The key the server requires as `Authorization: Bearer`.
    pub fn api_key(&self) -> &str {
        &self.llm.api_key
    }

    /// The body of `PUT /api/v1/integrations/llm` for this server (model `test-model`).
    pub fn config(&self, timeout_s: u64) -> Value {
        json!({"base_url": self.base_url, "model": "test-model", "api_key": self.llm.api_key,
               "timeout_s": timeout_s})
    }
}

pub fn usage() -> Value {
    json!({"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110})
}

pub fn text(content: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
           "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": content}}],
           "usage": usage()})
}

pub fn tool_call(name: &str, arguments: Value) -> Value {
    json!({"id": "chatcmpl-2", "object": "chat.completion", "model": "test-model",
           "choices": [{"index": 0, "finish_reason": "tool_calls",
                        "message": {"role": "assistant", "content": null, "tool_calls": [
                            {"id": format!("call_{name}"), "type": "function",
                             "function": {"name": name, "arguments": arguments.to_string()}}]}}],
           "usage": usage()})
}
