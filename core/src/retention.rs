//! Purging records that are only kept for a fixed time after they were written (stored
//! idempotent responses, `messageId` dedupe records), without scanning everything each time.
//!
//! A record of an [`Expiring`] kind declares a secondary lookup [`BUCKET_INDEX`] whose value is
//! the 10-minute bucket it was written in (`2026-11-22T06:30`). [`purge`] deletes, per workspace
//! and kind, the buckets that lie entirely before `now - RETENTION`, and remembers the first
//! bucket it has not swept yet in a [`RetentionCursor`] record, so each bucket is looked up
//! about once. The first purge of a kind in a workspace (no cursor yet) walks every record of
//! the kind once instead, which also catches records written before they carried a bucket.
//!
//! Each record is checked again inside the deleting write, so a record rewritten since the
//! lookup (a `messageId` seen again after its window) is kept. No HTTP types here; the service's
//! sweeper calls [`purge`] for every workspace.

use serde::{Deserialize, Serialize};
use svc_engine::{RecordScan, WorkspaceId};
use time::OffsetDateTime;

use crate::error::Result;
use crate::plumbing::clock;
use crate::store::{Record, Store};

/// Width of a retention bucket.
pub const BUCKET_SECS: i64 = 600;
/// Name of the secondary lookup that holds a record's bucket.
pub const BUCKET_INDEX: &str = "retention_bucket";
/// Buckets before the cursor that are looked at again (a wall clock that stepped back may
/// have written into them after they were swept).
const LOOKBACK_BUCKETS: i64 = 6;
/// Records deleted per write transaction (keeps each batch small).
const DELETE_CHUNK: usize = 1000;
/// Records read per page when walking a whole kind.
const SCAN_PAGE: usize = 1000;

/// A record kind that is deleted once it is older than `RETENTION`.
pub trait Expiring: Record + Send + 'static {
    /// How long a record is kept after [`Expiring::stored_at`].
    const RETENTION: time::Duration;
    /// When the record was written, as [`clock::rfc3339`] renders it (fixed width, so string
    /// order is time order).
    fn stored_at(&self) -> &str;
}

/// The [`BUCKET_INDEX`] lookup of a record written at `stored_at` (for `Record::indexes`).
pub fn bucket_index(stored_at: &str) -> (&'static str, String) {
    (BUCKET_INDEX, bucket_label(stored_at))
}

/// `2026-11-22T06:37:12.345Z` -> `2026-11-22T06:30`. Anything shorter is its own bucket (only a
/// whole-kind walk finds it).
fn bucket_label(stored_at: &str) -> String {
    match stored_at.get(..15) {
        Some(head) => format!("{head}0"),
        None => stored_at.to_owned(),
    }
}

fn bucket_start_label(unix_secs: i64) -> String {
    bucket_label(&clock::unix_rfc3339(unix_secs))
}

/// Per (workspace, kind): the start (Unix seconds) of the first bucket not yet swept.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RetentionCursor {
    kind: String,
    next_bucket: i64,
}

impl Record for RetentionCursor {
    const KIND: &'static str = "retention_cursor";
    fn id(&self) -> String {
        self.kind.clone()
    }
}

/// Deletes the workspace's records of kind `T` that are older than `T::RETENTION` at `now`;
/// returns how many it deleted.
pub async fn purge<T: Expiring>(
    store: &Store,
    ws: WorkspaceId,
    now: OffsetDateTime,
) -> Result<usize> {
    let cutoff_time = now - T::RETENTION;
    let cutoff = clock::rfc3339(cutoff_time);
    // Buckets starting before `end` end at or before the cutoff: all their records expired.
    let end = cutoff_time.unix_timestamp().div_euclid(BUCKET_SECS) * BUCKET_SECS;
    let cursor = store.get::<RetentionCursor>(ws, T::KIND).await?;
    let mut deleted = 0;
    match &cursor {
        Some(c) => {
            let mut start = c.next_bucket - LOOKBACK_BUCKETS * BUCKET_SECS;
            while start < end {
                let bucket = store
                    .find::<T>(ws, BUCKET_INDEX, bucket_start_label(start))
                    .await?;
                let ids = expired_ids(bucket, &cutoff);
                deleted += delete_expired::<T>(store, ws, ids, &cutoff).await?;
                start += BUCKET_SECS;
            }
        }
        None => {
            let mut after = None;
            loop {
                let scan = RecordScan {
                    after: after.clone(),
                    limit: Some(SCAN_PAGE),
                    ..RecordScan::default()
                };
                let page = store.scan::<T>(ws, scan).await?;
                let Some(last) = page.last() else { break };
                after = Some(last.id());
                let full = page.len() == SCAN_PAGE;
                let ids = expired_ids(page, &cutoff);
                deleted += delete_expired::<T>(store, ws, ids, &cutoff).await?;
                if !full {
                    break;
                }
            }
        }
    }
    if cursor.as_ref().is_none_or(|c| c.next_bucket < end) {
        let c = RetentionCursor {
            kind: T::KIND.to_owned(),
            next_bucket: end,
        };
        store.write(move |tx| tx.put(ws, &c)).await?;
    }
    Ok(deleted)
}

fn expired_ids<T: Expiring>(records: Vec<T>, cutoff: &str) -> Vec<String> {
    records
        .into_iter()
        .filter(|r| r.stored_at() < cutoff)
        .map(|r| r.id())
        .collect()
}

/// Deletes the records among `ids` that are still expired when the write runs.
async fn delete_expired<T: Expiring>(
    store: &Store,
    ws: WorkspaceId,
    ids: Vec<String>,
    cutoff: &str,
) -> Result<usize> {
    let mut deleted = 0;
    for chunk in ids.chunks(DELETE_CHUNK) {
        let (chunk, cutoff) = (chunk.to_vec(), cutoff.to_owned());
        deleted += store
            .write(move |tx| -> Result<usize> {
                let mut n = 0;
                for id in &chunk {
                    let still_expired = tx
                        .get::<T>(ws, id)?
                        .is_some_and(|r| r.stored_at() < cutoff.as_str());
                    if still_expired && tx.remove::<T>(ws, id)? {
                        n += 1;
                    }
                }
                Ok(n)
            })
            .await?;
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, Serialize, Deserialize)]
    struct Note {
        id: String,
        at: String,
    }

    impl Record for Note {
        const KIND: &'static str = "retention_test_note";
        fn id(&self) -> String {
            self.id.clone()
        }
        fn indexes(&self) -> Vec<(&'static str, String)> {
            vec![bucket_index(&self.at)]
        }
    }

    impl Expiring for Note {
        const RETENTION: time::Duration = time::Duration::hours(24);
        fn stored_at(&self) -> &str {
            &self.at
        }
    }

    fn t0() -> OffsetDateTime {
        // 2026-01-01T00:00:00Z
        OffsetDateTime::from_unix_timestamp(1_767_225_600).expect("valid")
    }

    async fn put(store: &Store, ws: WorkspaceId, id: &str, at: OffsetDateTime) {
        let note = Note {
            id: id.to_owned(),
            at: clock::rfc3339(at),
        };
        store.write(move |tx| tx.put(ws, &note)).await.expect("put");
    }

    async fn ids(store: &Store, ws: WorkspaceId) -> Vec<String> {
        let notes: Vec<Note> = store.scan(ws, RecordScan::default()).await.expect("scan");
        notes.into_iter().map(|n| n.id).collect()
    }

    #[test]
    fn buckets_are_ten_minutes_wide() {
        assert_eq!(bucket_label("2026-11-22T06:37:12.345Z"), "2026-11-22T06:30");
        assert_eq!(bucket_label("2026-11-22T06:40:00.000Z"), "2026-11-22T06:40");
        assert_eq!(
            bucket_start_label(1_767_225_600 + 1_800),
            "2026-01-01T00:30"
        );
        assert_eq!(bucket_label("junk"), "junk");
    }

    #[tokio::test]
    async fn purges_exactly_what_is_older_than_the_retention() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let (ws, other) = (WorkspaceId(3), WorkspaceId(4));
        let h = time::Duration::hours;
        put(&store, ws, "old", t0()).await;
        put(&store, ws, "edge", t0() + h(1)).await;
        put(&store, ws, "young", t0() + h(20)).await;
        put(&store, other, "theirs", t0()).await;

        // First purge walks the kind: only "old" is past 24 h at t0 + 24h30m.
        let now = t0() + h(24) + time::Duration::minutes(30);
        assert_eq!(purge::<Note>(&store, ws, now).await.expect("purge"), 1);
        assert_eq!(ids(&store, ws).await, ["edge", "young"]);
        assert_eq!(
            ids(&store, other).await,
            ["theirs"],
            "other workspace untouched"
        );

        // Written after the cursor was set, so found through its bucket. "edge" is past 24 h
        // at 25h+1s but its bucket is still open: it is kept (at most 10 minutes longer).
        put(&store, ws, "late", t0() + h(2)).await;
        let now = t0() + h(25) + time::Duration::seconds(1);
        assert_eq!(purge::<Note>(&store, ws, now).await.expect("purge"), 0);
        assert_eq!(ids(&store, ws).await, ["edge", "late", "young"]);
        let now = t0() + h(25) + time::Duration::minutes(10);
        assert_eq!(purge::<Note>(&store, ws, now).await.expect("purge"), 1);
        assert_eq!(ids(&store, ws).await, ["late", "young"]);
        let now = t0() + h(26) + time::Duration::minutes(10);
        assert_eq!(purge::<Note>(&store, ws, now).await.expect("purge"), 1);
        assert_eq!(ids(&store, ws).await, ["young"]);

        // A record rewritten with a new time keeps living even if its old bucket is swept.
        put(&store, ws, "young", t0() + h(40)).await;
        let now = t0() + h(45);
        assert_eq!(purge::<Note>(&store, ws, now).await.expect("purge"), 0);
        assert_eq!(ids(&store, ws).await, ["young"]);
        assert_eq!(purge::<Note>(&store, ws, now).await.expect("again"), 0);
        let now = t0() + h(65);
        assert_eq!(purge::<Note>(&store, ws, now).await.expect("purge"), 1);
        assert!(ids(&store, ws).await.is_empty());
        store.close();
    }
}
