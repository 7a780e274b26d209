//! svc-agents: the agents of the service. It owns chat with the buddies (`chat`: the turn loop
//! and its events, routing, a buddy's tool loop with the connected model, the OpenAI-compatible
//! adapter, the built-in agent, each buddy's internal principal, the message store), the buddy
//! registry and system prompts (`buddies`), executed playbook runs (`playbook_runs`), the
//! dashboard's reporting summary and reasoning feed (`reporting`), and
//! [`agent_state::AgentState`], the agents' share of the running service.
//!
//! It may use svc-gateway (every action of an agent is an invocation there), svc-domains and
//! svc-core; only the server uses it.

pub mod agent_state;
pub mod buddies;
pub mod chat;
pub mod playbook_runs;
pub mod reporting;
