//! The agents' share of the running service: what chat turns and playbook runs reach besides
//! their arguments. The service's composition root builds one; the agents never see the
//! service's whole state.

use std::sync::Arc;

use crate::playbook_runs::tasks::Tasks;
use svc_domains::events::Realtime;
use svc_gateway::Gateway;

/// Cheap to clone: every part is shared.
#[derive(Clone, Debug)]
pub struct AgentState {
    /// Tool calls of buddies and the steps of runs go through the gateway (its store, sealer
    /// and HTTP client serve the agents' own reads too).
    pub gateway: Gateway,
    /// Per-workspace real-time channels (a tool call's event broadcast).
    pub realtime: Arc<Realtime>,
    /// The background tasks of running playbook runs.
    pub playbook_runs: Arc<Tasks>,
}

impl AsRef<Gateway> for AgentState {
    fn as_ref(&self) -> &Gateway {
        &self.gateway
    }
}
