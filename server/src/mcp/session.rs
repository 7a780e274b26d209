//! MCP sessions (`Mcp-Session-Id`): created by `initialize`, bound to the agent key that
//! initialized them and to the negotiated protocol version. Kept in memory, bounded: a session
//! idle for a day is forgotten, and at capacity the least recently used one goes. A client whose
//! session is gone gets 404 and initializes again (the MCP transport's rule), so losing sessions
//! on a restart is harmless.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Most sessions remembered at once.
pub const MAX_SESSIONS: usize = 10_000;
/// A session unused for this long is forgotten.
pub const IDLE_TTL: Duration = Duration::from_secs(24 * 3600);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    pub key_id: String,
    pub protocol_version: String,
    last_used: Instant,
}

/// The session table.
#[derive(Debug)]
pub struct Sessions {
    inner: Mutex<HashMap<String, Session>>,
    capacity: usize,
    ttl: Duration,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions::new(MAX_SESSIONS, IDLE_TTL)
    }
}

impl Sessions {
    pub fn new(capacity: usize, ttl: Duration) -> Self {
        Sessions {
            inner: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
            ttl,
        }
    }

    /// A new session for `key_id`; returns its id (`mcps_` + 32 base62).
    pub fn create(&self, key_id: &str, protocol_version: &str) -> String {
        let id = format!("mcps_{}", crate::plumbing::ids::random_base62(32));
        let now = Instant::now();
        let mut map = self.inner.lock();
        map.retain(|_, s| now.duration_since(s.last_used) < self.ttl);
        if map.len() >= self.capacity {
            let oldest = map
                .iter()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                map.remove(&oldest);
            }
        }
        map.insert(
            id.clone(),
            Session {
                key_id: key_id.to_owned(),
                protocol_version: protocol_version.to_owned(),
                last_used: now,
            },
        );
        id
    }

    /// The live session `id` of `key_id`, touched; `None` when unknown, expired or another
    /// key's (indistinguishable to the caller on purpose).
    pub fn touch(&self, id: &str, key_id: &str) -> Option<Session> {
        let now = Instant::now();
        let mut map = self.inner.lock();
        let live = map
            .get(id)
            .is_some_and(|s| s.key_id == key_id && now.duration_since(s.last_used) < self.ttl);
        if !live {
            if map.get(id).is_some_and(|s| s.key_id == key_id) {
                map.remove(id);
            }
            return None;
        }
        let s = map.get_mut(id)?;
        s.last_used = now;
        Some(s.clone())
    }

    /// Ends session `id` of `key_id`; whether it existed.
    pub fn end(&self, id: &str, key_id: &str) -> bool {
        let mut map = self.inner.lock();
        if map.get(id).is_some_and(|s| s.key_id == key_id) {
            map.remove(id);
            true
        } else {
            false
        }
    }

    /// Forgets every session (what a restart does; clients initialize again).
    pub fn clear(&self) {
        self.inner.lock().clear();
    }

    pub fn len(&self) -> usize {
        self.inner.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_belongs_to_its_key() {
        let s = Sessions::new(10, IDLE_TTL);
        let id = s.create("key_a", "2025-06-18");
        assert!(id.starts_with("mcps_") && id.len() == 37, "{id}");
        assert_eq!(
            s.touch(&id, "key_a").map(|x| x.protocol_version),
            Some("2025-06-18".to_owned())
        );
        assert_eq!(s.touch(&id, "key_b"), None);
        assert!(!s.end(&id, "key_b"), "another key cannot end it");
        assert!(s.end(&id, "key_a"));
        assert_eq!(s.touch(&id, "key_a"), None);
        assert!(!s.end(&id, "key_a"));
    }

    #[test]
    fn capacity_evicts_the_least_recently_used() {
        let s = Sessions::new(2, IDLE_TTL);
        let a = s.create("k", "v");
        let b = s.create("k", "v");
        assert!(s.touch(&a, "k").is_some()); // b is now the least recently used
        let c = s.create("k", "v");
        assert_eq!(s.len(), 2);
        assert!(s.touch(&a, "k").is_some());
        assert!(s.touch(&b, "k").is_none());
        assert!(s.touch(&c, "k").is_some());
    }

    #[test]
    fn idle_sessions_expire() {
        let s = Sessions::new(10, Duration::from_millis(20));
        let id = s.create("k", "v");
        std::thread::sleep(Duration::from_millis(40));
        assert!(s.touch(&id, "k").is_none());
        assert!(s.is_empty());
    }
}
