//! Per-workspace versions that query plan caches compare (`PlanScope::schema`,
//! `GraphRead::statistics_version`): one for the index catalog, one for the statistics a
//! planner reads (label and node counts, index entry counts). A commit bumps the versions of
//! the workspaces whose catalog or statistics it changes, under the visibility lock, so a
//! snapshot's versions are exactly those of the commits it sees; other workspaces keep theirs
//! (an index declared in one workspace re-plans nothing in another).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;

use crate::model::WorkspaceId;

/// One workspace's versions (0 until its first bump).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Versions {
    pub schema: u64,
    pub statistics: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Epochs {
    /// The last value handed out: every bump takes a new one, so a version is never reused
    /// within the open graph (whose plan scopes carry its instance).
    last: AtomicU64,
    by_ws: RwLock<HashMap<WorkspaceId, Versions>>,
}

impl Epochs {
    pub fn get(&self, ws: WorkspaceId) -> Versions {
        self.by_ws.read().get(&ws).copied().unwrap_or_default()
    }

    /// New versions for the catalogs of `schema` and the statistics of `statistics` (called
    /// under the visibility lock, with the commit that changes them).
    pub fn bump(&self, schema: &[WorkspaceId], statistics: &[WorkspaceId]) {
        if schema.is_empty() && statistics.is_empty() {
            return;
        }
        let mut by_ws = self.by_ws.write();
        for ws in schema {
            by_ws.entry(*ws).or_default().schema = self.last.fetch_add(1, Ordering::Relaxed) + 1;
        }
        for ws in statistics {
            by_ws.entry(*ws).or_default().statistics =
                self.last.fetch_add(1, Ordering::Relaxed) + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bump_changes_only_its_workspaces_and_never_repeats_a_value() {
        let e = Epochs::default();
        let (a, b) = (WorkspaceId(1), WorkspaceId(2));
        assert_eq!(e.get(a), Versions::default());
        e.bump(&[a], &[]);
        let a1 = e.get(a);
        assert!(a1.schema > 0 && a1.statistics == 0);
        assert_eq!(e.get(b), Versions::default());
        e.bump(&[], &[a, b]);
        let (a2, b2) = (e.get(a), e.get(b));
        assert_eq!(a2.schema, a1.schema);
        assert!(a2.statistics > 0 && b2.statistics > 0 && a2.statistics != b2.statistics);
        e.bump(&[], &[]);
        assert_eq!((e.get(a), e.get(b)), (a2, b2));
    }
}
