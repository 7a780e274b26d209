//! The real-time channel of each workspace: one tokio broadcast per workspace, created on the
//! first subscription and dropped when the last subscriber has gone.
//!
//! Publishing never waits: a subscriber that falls more than [`CHANNEL_CAPACITY`] messages
//! behind loses its place (`RecvError::Lagged`) and is disconnected by its reader, so a slow
//! client can never slow ingestion.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::broadcast;

use svc_core::store::WorkspaceId;

/// Messages a subscriber may fall behind before it is dropped.
pub const CHANNEL_CAPACITY: usize = 1024;

/// One real-time message (DESIGN.md §4): `{"type": "touchpoint.created", customer_id,
/// touchpoint_id, event, ts}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct StreamMessage {
    #[serde(rename = "type")]
    pub kind: String,
    pub customer_id: String,
    pub touchpoint_id: String,
    /// The event name.
    pub event: String,
    /// Event time, RFC 3339 UTC.
    pub ts: String,
}

/// The per-workspace channels.
#[derive(Debug, Default)]
pub struct Realtime {
    channels: Mutex<HashMap<WorkspaceId, broadcast::Sender<Arc<StreamMessage>>>>,
}

impl Realtime {
    pub fn new() -> Self {
        Realtime::default()
    }

    /// A receiver of every message published to `ws` from now on.
    pub fn subscribe(&self, ws: WorkspaceId) -> broadcast::Receiver<Arc<StreamMessage>> {
        let mut channels = self.channels.lock();
        match channels.get(&ws) {
            Some(tx) => tx.subscribe(),
            None => {
                let (tx, rx) = broadcast::channel(CHANNEL_CAPACITY);
                channels.insert(ws, tx);
                rx
            }
        }
    }

    /// Sends `msg` to the subscribers of `ws`, if any; forgets the channel once nobody listens.
    pub fn publish(&self, ws: WorkspaceId, msg: StreamMessage) {
        let mut channels = self.channels.lock();
        if let Some(tx) = channels.get(&ws) {
            if tx.send(Arc::new(msg)).is_err() {
                channels.remove(&ws);
            }
        }
    }

    /// Number of workspaces with a live channel (a gauge).
    pub fn channels(&self) -> usize {
        self.channels.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(n: u32) -> StreamMessage {
        StreamMessage {
            kind: "touchpoint.created".into(),
            customer_id: "cus_1".into(),
            touchpoint_id: format!("tp_{n}"),
            event: "page_viewed".into(),
            ts: "2026-01-01T00:00:00.000Z".into(),
        }
    }

    #[test]
    fn messages_reach_only_their_workspace() {
        let hub = Realtime::new();
        let mut a = hub.subscribe(WorkspaceId(1));
        let mut b = hub.subscribe(WorkspaceId(2));
        hub.publish(WorkspaceId(1), msg(1));
        assert_eq!(
            a.try_recv().map(|m| m.touchpoint_id.clone()).ok(),
            Some("tp_1".into())
        );
        assert!(b.try_recv().is_err());
    }

    #[test]
    fn channel_is_forgotten_when_nobody_listens() {
        let hub = Realtime::new();
        hub.publish(WorkspaceId(1), msg(1));
        assert_eq!(hub.channels(), 0);
        let rx = hub.subscribe(WorkspaceId(1));
        assert_eq!(hub.channels(), 1);
        drop(rx);
        hub.publish(WorkspaceId(1), msg(2));
        assert_eq!(hub.channels(), 0);
    }

    #[test]
    fn a_slow_subscriber_lags_instead_of_blocking() {
        let hub = Realtime::new();
        let mut slow = hub.subscribe(WorkspaceId(1));
        for n in 0..(CHANNEL_CAPACITY as u32 + 10) {
            hub.publish(WorkspaceId(1), msg(n));
        }
        assert!(matches!(
            slow.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(_))
        ));
    }
}
