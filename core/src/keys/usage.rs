//! `last_used_at` without a store write per request: uses are noted in memory and written in one
//! batch every flush interval (and at shutdown). Readers merge the pending time over the stored
//! one, so the API always shows the latest use.

use std::collections::HashMap;

use parking_lot::Mutex;

use super::record::AgentKey;
use crate::error::Result;
use crate::store::{Store, WorkspaceId};

#[derive(Debug, Default)]
pub struct UsageTracker {
    /// (workspace, key id) -> latest use (RFC 3339), not yet written.
    pending: Mutex<HashMap<(u64, String), String>>,
}

impl UsageTracker {
    pub fn new() -> Self {
        UsageTracker::default()
    }

    pub fn note_use(&self, key: &AgentKey, at: String) {
        self.pending
            .lock()
            .insert((key.workspace, key.id.clone()), at);
    }

    /// The latest use of `key`, pending or stored.
    pub fn last_used(&self, key: &AgentKey) -> Option<String> {
        let pending = self
            .pending
            .lock()
            .get(&(key.workspace, key.id.clone()))
            .cloned();
        latest(pending, key.last_used_at.clone())
    }

    pub fn pending_count(&self) -> usize {
        self.pending.lock().len()
    }

    /// Writes every pending time in one transaction. On failure the times are put back, so
    /// the next flush retries them.
    pub async fn flush(&self, store: &Store) -> Result<usize> {
        let batch: Vec<((u64, String), String)> = self.pending.lock().drain().collect();
        if batch.is_empty() {
            return Ok(0);
        }
        let n = batch.len();
        let retry = batch.clone();
        let outcome = store
            .write(move |tx| {
                for ((ws, id), at) in batch {
                    let ws = WorkspaceId(ws);
                    // Re-read inside the writer: a concurrent revocation is kept.
                    if let Some(mut key) = tx.get::<AgentKey>(ws, &id)? {
                        if key.last_used_at.as_deref() < Some(at.as_str()) {
                            key.last_used_at = Some(at);
                            tx.put(ws, &key)?;
                        }
                    }
                }
                Ok(())
            })
            .await;
        if let Err(e) = outcome {
            let mut pending = self.pending.lock();
            for (k, at) in retry {
                let newer = latest(pending.remove(&k), Some(at));
                if let Some(newer) = newer {
                    pending.insert(k, newer);
                }
            }
            return Err(e);
        }
        Ok(n)
    }
}

/// The later of two RFC 3339 UTC times (same format, so string order is time order).
fn latest(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if a >= b { a } else { b }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_prefers_the_later_time() {
        let t1 = "2026-01-01T00:00:00Z".to_owned();
        let t2 = "2026-01-02T00:00:00Z".to_owned();
        assert_eq!(latest(Some(t1.clone()), Some(t2.clone())), Some(t2.clone()));
        assert_eq!(latest(Some(t2.clone()), Some(t1.clone())), Some(t2.clone()));
        assert_eq!(latest(None, Some(t1.clone())), Some(t1));
        assert_eq!(latest(None, None), None);
    }
}
