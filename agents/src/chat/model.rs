//! A buddy's turn with a model: its system prompt (assembled now, SPEC.md's order), the
//! conversation so far, and the capabilities of its principal as tools. Each tool call the
//! model asks for goes through [`Turn::call_tool`]; the loop ends with the model's text, or
//! when the turn's budget of tool calls is spent.

use serde_json::{json, Value as Json};

use super::llm::{self, ModelError};
use super::turn::{Turn, MAX_TOOL_CALLS};
use crate::buddies;
use svc_domains::integrations::LlmConfig;
use svc_gateway::tools as capability_tools;

/// What the buddy is told about acting in this chat, after its assembled prompt.
pub const CHAT_RULES: &str = "## This chat\nYou are answering a user of the dashboard. Use \
the tools to read data or act; each call runs through the capability gateway under your own \
grants and costs action credits. A tool answer with status `queued` is waiting for a person's \
approval: say so and give its pending_action_id. Never claim an action happened unless a tool \
answered `committed`. Keep answers short.";

/// The buddy's system prompt for this turn: assembled from the store now, so a brand or
/// playbook change applies from the next turn.
pub async fn system_prompt(turn: &Turn) -> svc_core::error::Result<String> {
    let Some((buddy, _)) = &turn.buddy else {
        return Ok(CHAT_RULES.to_owned());
    };
    let p = buddies::system_prompt(
        &turn.state.gateway.store,
        &turn.state.gateway.sealer,
        turn.ws,
        *buddy,
    )
    .await?;
    Ok(format!("{}\n\n{CHAT_RULES}", p.prompt))
}

/// Runs the buddy's loop; returns its answer.
pub async fn run(
    turn: &mut Turn,
    config: &LlmConfig,
    history: &[Json],
    message: &str,
) -> Result<String, ModelError> {
    let system = match system_prompt(turn).await {
        Ok(p) => p,
        Err(e) => {
            return Err(ModelError {
                error: svc_domains::integrations::ProviderError::new(format!(
                    "assembling the system prompt failed: {}",
                    e.message
                )),
                timeout: false,
            })
        }
    };
    let tools = match &turn.buddy {
        Some((_, key)) => llm::tool_definitions(key),
        None => Vec::new(),
    };
    let mut messages = vec![json!({"role": "system", "content": system})];
    messages.extend_from_slice(history);
    messages.push(json!({"role": "user", "content": message}));
    let http = turn.state.gateway.http.clone();
    // Text the model wrote alongside tool calls, kept for the answer.
    let mut said: Vec<String> = Vec::new();
    // Each model step either ends the loop or spends at least one tool call.
    for _ in 0..=MAX_TOOL_CALLS {
        let c = llm::complete(&http, config, &messages, &tools).await?;
        turn.usage.add(c.usage);
        if c.tool_calls.is_empty() {
            said.push(
                c.content
                    .unwrap_or_else(|| "(the model returned no text)".to_owned()),
            );
            return Ok(said.join("\n\n"));
        }
        if let Some(text) = &c.content {
            said.push(text.clone());
        }
        messages.push(c.message.clone());
        for call in &c.tool_calls {
            let content = match capability_tools::capability_of(&call.name) {
                None => json!({"error": {"code": "capability_not_found",
                    "message": format!("no tool named {}", call.name)}}),
                Some(capability) => match capability_tools::request(Some(call.arguments.clone())) {
                    Err(e) => json!({"error": {"code": e.code.as_str(), "message": e.message}}),
                    Ok(req) => match turn.call_tool(capability, req).await {
                        Ok(outcome) => outcome.for_model,
                        Err(_) => return Ok(budget_answer(&said)),
                    },
                },
            };
            messages.push(json!({
                "role": "tool", "tool_call_id": call.id, "content": content.to_string(),
            }));
        }
    }
    Ok(budget_answer(&said))
}

fn budget_answer(said: &[String]) -> String {
    let note = format!(
        "I stopped here: this turn used its budget of {MAX_TOOL_CALLS} tool calls. Ask me to \
         continue for more."
    );
    said.iter()
        .map(String::as_str)
        .chain([note.as_str()])
        .collect::<Vec<_>>()
        .join("\n\n")
}
