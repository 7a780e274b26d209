//! The adapter of the `llm` integration: OpenAI-compatible chat completions with tool calling
//! (`POST {base_url}/chat/completions`, `Authorization: Bearer <api_key>` when a key is set),
//! the dialect OpenAI, Ollama, vLLM and llama.cpp's server all speak. Tool definitions are the
//! MCP tools of the buddy's principal (`gateway::tools::tool`, the same schemas), as `function`
//! tools. Calls are bounded by the config's `timeout_s`; the service's one HTTP client is
//! used. Never touches the store.

use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value as Json};

use svc_core::keys::AgentKey;
use svc_domains::integrations::http::error_message;
use svc_domains::integrations::{HttpClient, LlmConfig, ProviderError};
use svc_gateway as gateway;

/// Tokens the model reported for the turn (every model call summed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// Model calls made (0 for the built-in agent).
    pub model_calls: u64,
}

impl TokenUsage {
    pub fn add(&mut self, other: TokenUsage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
        self.model_calls += other.model_calls;
    }
}

/// A tool call the model asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model sent them (a JSON object; `{}` when absent or unreadable).
    pub arguments: Json,
}

/// One model answer.
#[derive(Clone, Debug, Default)]
pub struct Completion {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: TokenUsage,
    /// The assistant message as received, to send back in the next request.
    pub message: Json,
}

/// A failed model call; `timeout` tells a provider that did not answer in time.
#[derive(Clone, Debug)]
pub struct ModelError {
    pub error: ProviderError,
    pub timeout: bool,
}

impl ModelError {
    pub fn code(&self) -> &'static str {
        if self.timeout {
            "provider_timeout"
        } else {
            "provider_error"
        }
    }
}

/// The OpenAI `function` tool of each capability the principal may call.
pub fn tool_definitions(key: &AgentKey) -> Vec<Json> {
    gateway::list(key)
        .capabilities
        .iter()
        .map(|d| {
            let mcp = svc_gateway::tools::tool(d);
            let mut parameters = mcp["inputSchema"].clone();
            if let Some(obj) = parameters.as_object_mut() {
                // Some servers reject the meta-schema keyword in function parameters.
                obj.remove("$schema");
            }
            json!({"type": "function", "function": {
                "name": mcp["name"],
                "description": mcp["description"],
                "parameters": parameters,
            }})
        })
        .collect()
}

/// One chat completion request with `messages` and `tools` (none: a plain answer).
pub async fn complete(
    http: &HttpClient,
    config: &LlmConfig,
    messages: &[Json],
    tools: &[Json],
) -> Result<Completion, ModelError> {
    let mut body = json!({"model": config.model, "messages": messages, "stream": false});
    if !tools.is_empty() {
        body["tools"] = Json::Array(tools.to_vec());
        body["tool_choice"] = json!("auto");
    }
    let limit = Duration::from_secs(config.timeout_s);
    let request = config.authorize(
        http.client()
            .post(config.endpoint("/chat/completions"))
            .timeout(limit + Duration::from_secs(1))
            .json(&body),
    );
    let exchange = async {
        let resp = http.send(request).await?;
        if !resp.status().is_success() {
            return Err(error_message(resp, "the model provider refused the request").await);
        }
        let text = resp
            .text()
            .await
            .map_err(svc_domains::integrations::http::describe)?;
        serde_json::from_str::<Json>(&text).map_err(|e| {
            ProviderError::new(format!(
                "the model provider answered with invalid JSON: {e}"
            ))
        })
    };
    let scrub = |e: ProviderError| {
        let secrets: Vec<&str> = config.api_key.as_deref().into_iter().collect();
        e.scrubbed(&secrets)
    };
    let value = match tokio::time::timeout(limit, exchange).await {
        Err(_) => {
            return Err(ModelError {
                error: ProviderError::ambiguous(format!(
                    "the model provider did not answer within {} s (timeout_s)",
                    config.timeout_s
                )),
                timeout: true,
            })
        }
        Ok(Err(e)) => {
            let timeout = e.message.contains("did not answer");
            return Err(ModelError {
                error: scrub(e),
                timeout,
            });
        }
        Ok(Ok(v)) => v,
    };
    parse(&value).map_err(|message| ModelError {
        error: ProviderError::new(message),
        timeout: false,
    })
}

/// Reads a chat completion response.
pub fn parse(v: &Json) -> Result<Completion, String> {
    let message = v
        .pointer("/choices/0/message")
        .filter(|m| m.is_object())
        .ok_or("the model provider's answer has no choices[0].message")?;
    let content = message
        .get("content")
        .and_then(Json::as_str)
        .map(str::to_owned)
        .filter(|c| !c.trim().is_empty());
    let mut tool_calls = Vec::new();
    for (i, call) in message
        .get("tool_calls")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(name) = call.pointer("/function/name").and_then(Json::as_str) else {
            continue;
        };
        // OpenAI sends the arguments as a JSON string; Ollama as an object.
        let arguments = match call.pointer("/function/arguments") {
            Some(Json::String(s)) if s.trim().is_empty() => json!({}),
            Some(Json::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| json!({})),
            Some(obj @ Json::Object(_)) => obj.clone(),
            _ => json!({}),
        };
        let id = call
            .get("id")
            .and_then(Json::as_str)
            .map_or_else(|| format!("call_{i}"), str::to_owned);
        tool_calls.push(ToolCall {
            id,
            name: name.to_owned(),
            arguments,
        });
    }
    let n = |p: &str| v.pointer(p).and_then(Json::as_u64).unwrap_or(0);
    let usage = TokenUsage {
        prompt_tokens: n("/usage/prompt_tokens"),
        completion_tokens: n("/usage/completion_tokens"),
        total_tokens: n("/usage/total_tokens"),
        model_calls: 1,
    };
    // Sent back as the assistant turn; tool calls normalised so every one carries its id.
    let mut echoed = json!({"role": "assistant", "content": content});
    if !tool_calls.is_empty() {
        echoed["tool_calls"] = tool_calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function", "function": {
                    "name": c.name, "arguments": c.arguments.to_string()}})
            })
            .collect();
    }
    Ok(Completion {
        content,
        tool_calls,
        usage,
        message: echoed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tool_calls_in_both_dialects_and_usage() {
        let openai = json!({"choices": [{"message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_a", "type": "function", "function":
                {"name": "get_customer_context", "arguments": "{\"customer\":\"ada@x.io\"}"}}]}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}});
        let c = parse(&openai).expect("parse");
        assert_eq!(c.content, None);
        assert_eq!(c.tool_calls[0].name, "get_customer_context");
        assert_eq!(c.tool_calls[0].arguments, json!({"customer": "ada@x.io"}));
        assert_eq!(c.usage.total_tokens, 17);
        assert_eq!(c.message["tool_calls"][0]["id"], "call_a");
        let ollama = json!({"choices": [{"message": {"role": "assistant", "content": "",
            "tool_calls": [{"function": {"name": "plan_goal", "arguments": {"goal": "g"}}}]}}]});
        let c = parse(&ollama).expect("parse");
        assert_eq!(c.tool_calls[0].id, "call_0");
        assert_eq!(c.tool_calls[0].arguments, json!({"goal": "g"}));
        assert_eq!(c.usage.model_calls, 1);
        assert!(parse(&json!({"choices": []})).is_err());
        let text = parse(&json!({"choices": [{"message": {"content": "hi"}}]})).expect("text");
        assert_eq!(text.content.as_deref(), Some("hi"));
        assert!(text.tool_calls.is_empty());
    }

    #[test]
    fn tool_definitions_are_the_principals_mcp_tools() {
        let key = super::super::principal::principal(
            svc_core::store::WorkspaceId(1),
            svc_domains::playbooks::Buddy::Insights,
        );
        let tools = tool_definitions(&key);
        assert_eq!(tools.len(), gateway::list(&key).capabilities.len());
        let ctx = tools
            .iter()
            .find(|t| t["function"]["name"] == "get_customer_context")
            .expect("context tool");
        assert_eq!(ctx["type"], "function");
        assert!(ctx["function"]["parameters"]["properties"]["customer"].is_object());
        assert!(ctx["function"]["parameters"].get("$schema").is_none());
    }
}
