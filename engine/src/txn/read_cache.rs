//! The writer's cache of committed values it reads on nearly every write: node records (the
//! customer an event resolves to, its campaign) and identity-index entries (present or absent).
//!
//! Without it each of those reads is a RocksDB point read, a search of a large memtable skip
//! list, and they were the largest part of the writer's time on the replay workload.
//!
//! Correct because the writer thread is the only writer: the cache holds what the store plus
//! the in-flight group say. A value read from the store is cached only when no pending layer
//! holds the key (so the store's value is the current one), and every group's writes update the
//! entries the cache holds when the writer hands the group on (before any later read can reach
//! the cache without first meeting that group as the in-flight layer). Groups that roll back a
//! closure hand on only what survived. After a failed commit the store is poisoned and nothing
//! later commits, so a stale entry can never become visible.

use std::collections::HashMap;

use crate::columns::Cf;

use super::{Overlay, Space};

/// Bound of the cache (keys and values); reaching it empties the cache.
pub(crate) const READ_CACHE_BYTES: usize = 64 << 20;
/// Bookkeeping per entry beyond its key and value.
const ENTRY_OVERHEAD: usize = 64;

#[derive(Debug, Default)]
pub(crate) struct ReadCache {
    nodes: HashMap<Vec<u8>, Option<Vec<u8>>>,
    identity: HashMap<Vec<u8>, Option<Vec<u8>>>,
    bytes: usize,
}

fn size(key: &[u8], value: &Option<Vec<u8>>) -> usize {
    key.len() + value.as_ref().map_or(0, Vec::len) + ENTRY_OVERHEAD
}

impl ReadCache {
    fn map(&self, cf: Cf) -> Option<&HashMap<Vec<u8>, Option<Vec<u8>>>> {
        match cf {
            Cf::Nodes => Some(&self.nodes),
            Cf::Identity => Some(&self.identity),
            _ => None,
        }
    }

    fn map_mut(&mut self, cf: Cf) -> Option<&mut HashMap<Vec<u8>, Option<Vec<u8>>>> {
        match cf {
            Cf::Nodes => Some(&mut self.nodes),
            Cf::Identity => Some(&mut self.identity),
            _ => None,
        }
    }

    pub fn caches(cf: Cf) -> bool {
        matches!(cf, Cf::Nodes | Cf::Identity)
    }

    /// The committed value of a key (inner None: absent), when cached.
    pub fn get(&self, cf: Cf, key: &[u8]) -> Option<Option<Vec<u8>>> {
        self.map(cf)?.get(key).cloned()
    }

    /// Remembers a value just read from the store (no pending layer holds the key).
    pub fn fill(&mut self, cf: Cf, key: &[u8], value: &Option<Vec<u8>>) {
        let add = size(key, value);
        if self.bytes + add > READ_CACHE_BYTES {
            self.clear();
        }
        if let Some(map) = self.map_mut(cf) {
            if map.insert(key.to_vec(), value.clone()).is_none() {
                self.bytes += add;
            }
        }
    }

    /// A group's writes, as the writer hands it on: entries the cache holds take their new
    /// values (keys it does not hold stay out, so write-only data never fills it).
    pub fn apply(&mut self, overlay: &Overlay) {
        for ((space, key), value) in overlay {
            let Space::Kv(cf) = space else { continue };
            let Some(map) = self.map_mut(*cf) else {
                continue;
            };
            if let Some(slot) = map.get_mut(key.as_slice()) {
                let (old, new) = (size(key, slot), size(key, value));
                *slot = value.clone();
                self.bytes = (self.bytes + new).saturating_sub(old);
            }
        }
    }

    pub fn clear(&mut self) {
        self.nodes.clear();
        self.identity.clear();
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handed_on_writes_update_only_cached_keys() {
        let mut c = ReadCache::default();
        c.fill(Cf::Identity, b"a", &None);
        c.fill(Cf::Nodes, b"n", &Some(b"v1".to_vec()));
        assert_eq!(c.get(Cf::Identity, b"a"), Some(None));
        assert_eq!(c.get(Cf::Edges, b"a"), None);
        let mut o = Overlay::new();
        o.insert(
            (Space::Kv(Cf::Identity), b"a".to_vec()),
            Some(b"7".to_vec()),
        );
        o.insert((Space::Kv(Cf::Nodes), b"n".to_vec()), None);
        o.insert(
            (Space::Kv(Cf::Nodes), b"other".to_vec()),
            Some(b"x".to_vec()),
        );
        c.apply(&o);
        assert_eq!(c.get(Cf::Identity, b"a"), Some(Some(b"7".to_vec())));
        assert_eq!(c.get(Cf::Nodes, b"n"), Some(None));
        assert_eq!(c.get(Cf::Nodes, b"other"), None);
    }
}
