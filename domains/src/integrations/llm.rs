//! The config of the `llm` integration: an OpenAI-compatible chat completions API (OpenAI,
//! Ollama, vLLM, llama.cpp's server), how a request to it is addressed and authorized, and its
//! live test. The chat adapter that calls it lives with the agents (`agents::llm`).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::fields::{field_error, http_url, Body};
use super::http::error_message;
use super::http::HttpClient;
use super::provider_error::ProviderError;
use svc_core::error::{Error, Result};

/// Seconds a model call may take when `timeout_s` is not set.
pub const DEFAULT_LLM_TIMEOUT_S: u64 = 60;
const MAX_TIMEOUT_S: u64 = 600;
const URL_CHARS: usize = 2048;
const MODEL_CHARS: usize = 200;

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LlmConfig {
    /// The API root that `/chat/completions` is appended to, e.g. `https://api.openai.com/v1`,
    /// `http://localhost:11434/v1` (Ollama) or `http://localhost:8080/v1` (llama.cpp).
    pub base_url: String,
    /// The model name the server knows, e.g. `gpt-4o-mini` or `llama3.1`.
    pub model: String,
    /// Secret: never returned (masked). Optional: local servers often need none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Seconds one model call may take, 1-600 (default 60).
    pub timeout_s: u64,
}

impl std::fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout_s", &self.timeout_s)
            .finish()
    }
}

impl LlmConfig {
    pub(super) fn from_body(body: &Json, prev: Option<&LlmConfig>) -> Result<LlmConfig> {
        let b = Body::new(body, &["base_url", "model", "api_key", "timeout_s"])?;
        let base_url = http_url("base_url", &b.required("base_url", URL_CHARS)?)?;
        let model = b.required("model", MODEL_CHARS)?;
        let api_key = b.optional_secret("api_key", prev.and_then(|p| p.api_key.as_deref()))?;
        let timeout_s = match body.get("timeout_s") {
            None | Some(Json::Null) => DEFAULT_LLM_TIMEOUT_S,
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=MAX_TIMEOUT_S).contains(n))
                .ok_or_else(|| {
                    Error::invalid_field(
                        "timeout_s",
                        &v.to_string(),
                        "must be an integer from 1 to 600 (seconds)",
                    )
                })?,
        };
        if model.chars().any(char::is_whitespace) {
            return Err(field_error("model", "must not contain spaces"));
        }
        Ok(LlmConfig {
            base_url,
            model,
            api_key,
            timeout_s,
        })
    }
}

impl LlmConfig {
    /// `path` under the configured API root.
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// The request with the API key as bearer token, when one is set.
    pub fn authorize(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.api_key {
            Some(k) => req.bearer_auth(k),
            None => req,
        }
    }
}

/// The live test of `POST /api/v1/integrations/llm/test`: `GET {base_url}/models` with the
/// credentials (OpenAI, Ollama, vLLM and llama.cpp all serve it).
pub async fn check(
    http: &HttpClient,
    config: &LlmConfig,
) -> std::result::Result<(), ProviderError> {
    let limit = Duration::from_secs(config.timeout_s);
    let request = config.authorize(http.client().get(config.endpoint("/models")).timeout(limit));
    let resp = http.send(request).await?;
    if resp.status().is_success() {
        Ok(())
    } else {
        Err(error_message(resp, "listing the provider's models").await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::config::Config;
    use serde_json::json;
    use svc_core::integration_kind::Kind;

    fn llm(body: Json, prev: Option<&Config>) -> Result<LlmConfig> {
        match Config::from_body(Kind::Llm, &body, prev)? {
            Config::Llm(c) => Ok(c),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn defaults_validation_and_masking() {
        let c = llm(
            json!({"base_url": "http://127.0.0.1:11434/v1/", "model": "llama3.1"}),
            None,
        )
        .expect("valid");
        assert_eq!(c.base_url, "http://127.0.0.1:11434/v1");
        assert_eq!(c.timeout_s, DEFAULT_LLM_TIMEOUT_S);
        assert_eq!(c.api_key, None);
        for bad in [
            json!({"model": "m"}),
            json!({"base_url": "ftp://x/v1", "model": "m"}),
            json!({"base_url": "http://x/v1"}),
            json!({"base_url": "http://x/v1", "model": "m", "timeout_s": 0}),
            json!({"base_url": "http://x/v1", "model": "m", "timeout_s": 601}),
            json!({"base_url": "http://x/v1", "model": "m", "timeout_s": "5"}),
            json!({"base_url": "http://x/v1", "model": "m", "temperature": 1}),
        ] {
            assert!(llm(bad.clone(), None).is_err(), "{bad}");
        }
        let body = json!({"base_url": "https://api.openai.com/v1", "model": "gpt-4o-mini",
                          "api_key": "sk-test-0123456789abcdef", "timeout_s": 30});
        let stored = Config::from_body(Kind::Llm, &body, None).expect("valid");
        let masked = stored.masked();
        assert_eq!(masked["api_key"], "••••cdef");
        assert_eq!(masked["timeout_s"], 30);
        assert_eq!(stored.secrets(), vec!["sk-test-0123456789abcdef"]);
        // The masked key sent back keeps the stored one.
        let again = llm(
            json!({"base_url": "https://api.openai.com/v1", "model": "gpt-4o",
                   "api_key": "••••cdef"}),
            Some(&stored),
        )
        .expect("keeps");
        assert_eq!(again.api_key.as_deref(), Some("sk-test-0123456789abcdef"));
        assert!(!format!("{again:?}").contains("sk-test"));
    }
}
