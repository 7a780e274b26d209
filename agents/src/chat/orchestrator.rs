//! The orchestrator: which buddy takes a turn, or whether it answers itself. With a model, the
//! model decides through one `route_to_buddy` tool; without one, the built-in agent's intent
//! rules decide. A buddy the user names is taken as asked.

use serde_json::{json, Value as Json};

use super::llm::TokenUsage;
use super::llm::{self, ModelError};
use super::offline::Intent;
use svc_domains::integrations::{HttpClient, LlmConfig};
use svc_domains::playbooks::Buddy;

/// The routing tool offered to the model.
pub const ROUTE_TOOL: &str = "route_to_buddy";

/// A routing decision.
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    /// `None`: the orchestrator answers itself.
    pub buddy: Option<Buddy>,
    /// `request`, `model` or `rules`.
    pub by: &'static str,
    pub reason: String,
    /// The orchestrator's own answer when the model answered instead of routing.
    pub answer: Option<String>,
}

/// The built-in rules: the intent's buddy.
pub fn by_rules(intent: &Intent) -> Route {
    let buddy = intent.buddy();
    let reason = match buddy {
        Some(b) => format!("{} ({})", intent.describe(), b.as_str()),
        None => "no specialist intent recognised: the orchestrator answers".to_owned(),
    };
    Route {
        buddy,
        by: "rules",
        reason,
        answer: None,
    }
}

pub fn by_request(buddy: Buddy) -> Route {
    Route {
        buddy: Some(buddy),
        by: "request",
        reason: format!("the user asked for {}", buddy.as_str()),
        answer: None,
    }
}

fn orchestrator_prompt() -> String {
    let mut lines = vec![
        "You are the orchestrator of a customer intelligence service's chat. Route each user \
         message to the one specialist (buddy) best placed to answer it by calling \
         route_to_buddy. Answer yourself, without routing, only greetings and questions about \
         what the chat can do."
            .to_owned(),
        "Specialists:".to_owned(),
    ];
    for b in Buddy::ALL {
        lines.push(format!("- {}: {}", b.as_str(), crate::buddies::persona(*b)));
    }
    lines.join("\n")
}

fn route_tool() -> Json {
    json!({"type": "function", "function": {
        "name": ROUTE_TOOL,
        "description": "Hand the user's message to one specialist buddy.",
        "parameters": {
            "type": "object",
            "properties": {
                "buddy": {"enum": Buddy::ALL.iter().map(|b| b.as_str()).collect::<Vec<_>>()},
                "reason": {"type": "string", "description": "Why this buddy, in one sentence."}
            },
            "required": ["buddy"],
        }
    }})
}

/// Asks the model. A call of `route_to_buddy` with an unknown buddy, or none at all with no
/// text, falls back to the built-in rules.
pub async fn by_model(
    http: &HttpClient,
    config: &LlmConfig,
    history: &[Json],
    message: &str,
    fallback: &Intent,
    usage: &mut TokenUsage,
) -> Result<Route, ModelError> {
    let mut messages = vec![json!({"role": "system", "content": orchestrator_prompt()})];
    messages.extend_from_slice(history);
    messages.push(json!({"role": "user", "content": message}));
    let c = llm::complete(http, config, &messages, &[route_tool()]).await?;
    usage.add(c.usage);
    if let Some(call) = c.tool_calls.iter().find(|c| c.name == ROUTE_TOOL) {
        let buddy = call.arguments["buddy"].as_str().and_then(Buddy::parse);
        if let Some(b) = buddy {
            let reason = call.arguments["reason"]
                .as_str()
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .map_or_else(|| format!("the model chose {}", b.as_str()), str::to_owned);
            return Ok(Route {
                buddy: Some(b),
                by: "model",
                reason,
                answer: None,
            });
        }
    }
    match c.content {
        Some(text) if c.tool_calls.is_empty() => Ok(Route {
            buddy: None,
            by: "model",
            reason: "the orchestrator answered itself".to_owned(),
            answer: Some(text),
        }),
        _ => {
            let mut r = by_rules(fallback);
            r.reason = format!("the model named no buddy; by the rules: {}", r.reason);
            Ok(r)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_route_intents_to_their_buddies() {
        let r = by_rules(&Intent::parse("who is likely to churn this week?"));
        assert_eq!(r.buddy, Some(Buddy::Insights));
        assert_eq!(r.by, "rules");
        assert_eq!(by_rules(&Intent::parse("hello")).buddy, None);
        assert_eq!(by_request(Buddy::Pipeline).by, "request");
        let tool = route_tool();
        assert_eq!(
            tool["function"]["parameters"]["properties"]["buddy"]["enum"]
                .as_array()
                .map(Vec::len),
            Some(4)
        );
        assert!(orchestrator_prompt().contains("campaign"));
    }
}
