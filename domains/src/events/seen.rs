//! `messageId` dedupe records: written with the event they carried, dropped by the sweeper
//! after the 24-hour window.

use serde::{Deserialize, Serialize};
use svc_engine::Record;
use time::OffsetDateTime;

use svc_core::error::Result;
use svc_core::retention;
use svc_core::store::{Store, WorkspaceId};

use super::input::DEDUPE_WINDOW_SECS;

/// The dedupe record of a `messageId`, written with the event it carried.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SeenMessage {
    pub(super) message_id: String,
    pub(super) received_at: String,
    pub(super) received_at_us: i64,
    pub(super) customer_id: String,
    pub(super) touchpoint_id: String,
}

impl Record for SeenMessage {
    const KIND: &'static str = "event_message";
    fn id(&self) -> String {
        self.message_id.clone()
    }
    fn indexes(&self) -> Vec<(&'static str, String)> {
        vec![retention::bucket_index(&self.received_at)]
    }
}

/// Past the dedupe window a record only takes space: the sweeper deletes it.
impl retention::Expiring for SeenMessage {
    const RETENTION: time::Duration = time::Duration::seconds(DEDUPE_WINDOW_SECS);
    fn stored_at(&self) -> &str {
        &self.received_at
    }
}

/// Deletes the workspace's `messageId` records older than the 24-hour dedupe window at `now`
/// (the sweeper's job); returns how many.
pub async fn purge_seen_messages(
    store: &Store,
    ws: WorkspaceId,
    now: OffsetDateTime,
) -> Result<usize> {
    retention::purge::<SeenMessage>(store, ws, now).await
}
