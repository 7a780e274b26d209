//! Event recording on top of the generic write transaction: identity resolution (`resolve`),
//! recording an event as customer, touchpoint, campaign and edges (`record`), and the merge of
//! a duplicate customer (`merge`). Everything a caller reports about a recorded event comes
//! back in [`EventOutcome`], so no caller re-reads the graph to learn what happened.

#[cfg(feature = "storage")]
mod merge;
#[cfg(feature = "storage")]
mod record;
#[cfg(feature = "storage")]
mod resolve;

use crate::identity::IdentityKeys;
use crate::model::{NodeId, Properties};

#[cfg(feature = "storage")]
pub use merge::MergeOutcome;

/// One event to record: who (identity keys), what (action, channel, time, properties) and
/// which campaign influenced it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventInput {
    pub keys: IdentityKeys,
    pub action: String,
    pub channel: Option<String>,
    /// Event time, microseconds since the Unix epoch (UTC).
    pub ts: i64,
    /// Free-form touchpoint properties.
    pub properties: Properties,
    pub campaign_id: Option<String>,
    /// Done to the customer by the service or its providers (an email sent, a call placed),
    /// not by the customer: recorded like any event, but it does not move `lastSeen`. The
    /// domain decides which actions these are (`svc_domains::events::activity`).
    pub outbound: bool,
}

/// What recording an event did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventOutcome {
    pub customer_id: NodeId,
    pub touchpoint_id: NodeId,
    /// The customer was created by this event.
    pub is_new: bool,
    /// The customer node was created or changed (new keys, `lastSeen` moved forward).
    pub customer_written: bool,
    /// The campaign the event names, when it names one.
    pub campaign_id: Option<NodeId>,
    /// That campaign was created by this event.
    pub campaign_created: bool,
    /// Nodes created or changed: the customer when written, the touchpoint, a new campaign.
    pub nodes_mutated: u32,
}
