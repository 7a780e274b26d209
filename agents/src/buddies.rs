//! The buddy registry (four specialists under one orchestrator) and the system prompt each
//! buddy gets, assembled in SPEC.md's order: brand block, persona intro, base system prompt,
//! playbook block. The prompt is assembled from the store on every call, so a brand-context or
//! playbook change applies from the next chat turn. No HTTP types.

use serde::Serialize;

use svc_core::error::Result;
use svc_core::plumbing::sealed::Sealer;
use svc_core::store::{Store, WorkspaceId};
use svc_domains::brand;
pub use svc_domains::playbooks::Buddy;
use svc_domains::playbooks::{self, Playbook};

/// What the orchestrator and every specialist share.
pub const BASE_PROMPT: &str = "You are part of a customer intelligence and action service. \
Ground every statement in the workspace's customer graph (customers, touchpoints, campaigns, \
opportunities) and say when data is missing. Side-effecting actions go through the capability \
gateway: propose, queue or execute them there, never claim an action happened unless the \
gateway committed it, and write outcomes back as events.";

/// Shown instead of the playbook list when the workspace has no active playbook.
pub const NO_PLAYBOOKS: &str = "## Playbooks\nNo playbook is active in this workspace. \
Playbooks are saved go-to-market plans (mode, lead source, hypothesis, channels, cadence, \
success metric) that a specialist runs and adapts; the user can create one and set it to \
active to have it listed here.";

/// The persona intro of the specialist.
pub fn persona(buddy: Buddy) -> &'static str {
    match buddy {
        Buddy::Insights => {
            "You are Insights, the analyst: you explain what the customer \
data says (segments, journeys, churn and conversion signals) and why it matters."
        }
        Buddy::Prospect => {
            "You are Prospect, the researcher: you find and qualify leads \
that match the ideal customer profile and prepare the first touch."
        }
        Buddy::Campaign => {
            "You are Campaign, the marketer: you plan, write and sequence \
outreach across channels in the brand's voice."
        }
        Buddy::Pipeline => {
            "You are Pipeline, the deal desk: you keep opportunities \
moving, flag stalled deals and propose the next step for each."
        }
    }
}

/// The playbook block: the active playbooks (those targeting `buddy` first), or the feature
/// description when there are none.
pub fn playbook_block(active: &[Playbook], buddy: Buddy) -> String {
    if active.is_empty() {
        return NO_PLAYBOOKS.to_owned();
    }
    let mut ordered: Vec<&Playbook> = active.iter().collect();
    ordered.sort_by_key(|p| p.buddy_id != buddy);
    let mut lines = vec!["## Active playbooks".to_owned()];
    for p in ordered {
        let metric = match (p.strategy.success_metric, p.strategy.success_target) {
            (Some(m), Some(t)) => format!("; success: {} >= {t}", m.as_str()),
            (Some(m), None) => format!("; success: {}", m.as_str()),
            _ => String::new(),
        };
        lines.push(format!(
            "- {} ({}, {} mode, for {}): {}{metric}",
            p.name,
            p.id,
            p.mode.as_str(),
            p.buddy_id.as_str(),
            p.strategy.hypothesis
        ));
    }
    lines.join("\n")
}

/// A buddy's system prompt as sent to the model.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct SystemPrompt {
    pub buddy_id: Buddy,
    pub prompt: String,
}

/// Assembles `buddy`'s system prompt from the workspace's current brand context and playbooks.
pub async fn system_prompt(
    store: &Store,
    sealer: &Sealer,
    ws: WorkspaceId,
    buddy: Buddy,
) -> Result<SystemPrompt> {
    let ctx = brand::get(store, sealer, ws).await?;
    let active = playbooks::active(store, ws).await?;
    let mut parts = Vec::with_capacity(4);
    if let Some(block) = brand::prompt_block(&ctx) {
        parts.push(block);
    }
    parts.push(persona(buddy).to_owned());
    parts.push(BASE_PROMPT.to_owned());
    parts.push(playbook_block(&active, buddy));
    Ok(SystemPrompt {
        buddy_id: buddy,
        prompt: parts.join("\n\n"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn playbook(name: &str, buddy: &str) -> Playbook {
        playbooks::build(
            &json!({"name": name, "mode": "outbound", "buddyId": buddy, "status": "active",
                    "strategy": {"hypothesis": "h", "successMetric": "reply_rate", "successTarget": 0.1}}),
            format!("pb_{name}"),
            "usr_1".into(),
            "2026-01-01T00:00:00.000Z",
        )
        .expect("valid")
    }

    #[test]
    fn playbook_block_lists_active_playbooks_own_buddy_first() {
        let list = [playbook("a", "insights"), playbook("b", "campaign")];
        let block = playbook_block(&list, Buddy::Campaign);
        let (a, b) = (
            block.find("- a ").expect("a"),
            block.find("- b ").expect("b"),
        );
        assert!(b < a, "{block}");
        assert!(block.contains("reply_rate >= 0.1"), "{block}");
        assert_eq!(playbook_block(&[], Buddy::Insights), NO_PLAYBOOKS);
    }

    #[test]
    fn every_specialist_has_a_persona() {
        assert_eq!(Buddy::ALL.len(), 4);
        for b in Buddy::ALL {
            assert!(persona(*b).starts_with("You are"), "{b:?}");
        }
        assert_eq!(Buddy::parse("orchestrator"), None);
    }
}
