//! Per-key request rate limiting with GCRA (generic cell rate algorithm).
//!
//! A key with a limit of L per minute has an emission interval T = 60 s / L and may burst up to L
//! requests. The whole state of a key is one number, its theoretical arrival time (TAT). A TAT in
//! the past is the same as no entry at all, which is what keeps memory bounded: such entries are
//! swept whenever a shard grows, so only keys used within the last minute take space.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

const SHARDS: usize = 16;
/// A shard is swept of expired entries when it reaches this size (and the threshold then
/// doubles past the live entries, so sweeps stay amortized O(1)).
const SWEEP_AT: usize = 1024;
const WINDOW: Duration = Duration::from_secs(60);

/// The outcome of one check, with what the rate-limit headers report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// `X-RateLimit-Limit`: requests per minute.
    pub limit: u32,
    /// `X-RateLimit-Remaining`: requests that would be allowed right now.
    pub remaining: u32,
    /// `X-RateLimit-Reset`: seconds until the full burst is available again.
    pub reset_secs: u64,
    /// `Retry-After` when refused: seconds until one request is allowed.
    pub retry_after_secs: u64,
}

#[derive(Debug)]
pub struct RateLimiter {
    epoch: Instant,
    shards: Vec<Mutex<Shard>>,
    hasher: std::collections::hash_map::RandomState,
}

#[derive(Debug, Default)]
struct Shard {
    /// Key id -> TAT in nanoseconds since `epoch`.
    tat: HashMap<String, u128>,
    sweep_at: usize,
}

impl Default for RateLimiter {
    fn default() -> Self {
        RateLimiter::new()
    }
}

impl RateLimiter {
    pub fn new() -> Self {
        RateLimiter {
            epoch: Instant::now(),
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        tat: HashMap::new(),
                        sweep_at: SWEEP_AT,
                    })
                })
                .collect(),
            hasher: Default::default(),
        }
    }

    pub fn check(&self, key: &str, limit_per_min: u32) -> Decision {
        self.check_at(key, limit_per_min, Instant::now())
    }

    /// Counts one request of `key` at `now` against `limit_per_min`.
    pub fn check_at(&self, key: &str, limit_per_min: u32, now: Instant) -> Decision {
        let limit = limit_per_min.max(1);
        let interval = WINDOW.as_nanos() / u128::from(limit);
        let window = WINDOW.as_nanos();
        let now = now.saturating_duration_since(self.epoch).as_nanos();

        let mut shard = self.shard(key).lock();
        let tat = shard.tat.get(key).copied().unwrap_or(now).max(now);
        let next = tat + interval;
        let decision = if next - now <= window {
            shard.tat.insert(key.to_owned(), next);
            Decision {
                allowed: true,
                limit,
                remaining: remaining(window - (next - now), interval),
                reset_secs: ceil_secs(next - now),
                retry_after_secs: 0,
            }
        } else {
            Decision {
                allowed: false,
                limit,
                remaining: 0,
                reset_secs: ceil_secs(tat - now),
                retry_after_secs: ceil_secs(next - now - window).max(1),
            }
        };
        if shard.tat.len() >= shard.sweep_at {
            shard.tat.retain(|_, tat| *tat > now);
            shard.sweep_at = (shard.tat.len() * 2).max(SWEEP_AT);
        }
        decision
    }

    /// Entries held (for metrics and the boundedness test).
    pub fn tracked(&self) -> usize {
        self.shards.iter().map(|s| s.lock().tat.len()).sum()
    }

    fn shard(&self, key: &str) -> &Mutex<Shard> {
        &self.shards[(self.hasher.hash_one(key) as usize) % SHARDS]
    }
}

fn remaining(slack: u128, interval: u128) -> u32 {
    u32::try_from(slack / interval).unwrap_or(u32::MAX)
}

fn ceil_secs(nanos: u128) -> u64 {
    u64::try_from(nanos.div_ceil(1_000_000_000)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_of_limit_then_refusal_then_steady_rate() {
        let l = RateLimiter::new();
        let t0 = Instant::now();
        for i in 0..5 {
            let d = l.check_at("k", 5, t0);
            assert!(d.allowed, "request {i}");
            assert_eq!(d.remaining, 4 - i);
            assert_eq!(d.limit, 5);
        }
        let refused = l.check_at("k", 5, t0);
        assert!(!refused.allowed);
        assert_eq!(refused.remaining, 0);
        assert_eq!(refused.retry_after_secs, 12, "one interval of 60/5 s");
        assert_eq!(refused.reset_secs, 60);
        // One interval later exactly one more request fits.
        let t1 = t0 + Duration::from_secs(12);
        assert!(l.check_at("k", 5, t1).allowed);
        assert!(!l.check_at("k", 5, t1).allowed);
    }

    #[test]
    fn keys_are_independent() {
        let l = RateLimiter::new();
        let t0 = Instant::now();
        assert!(l.check_at("a", 1, t0).allowed);
        assert!(!l.check_at("a", 1, t0).allowed);
        assert!(l.check_at("b", 1, t0).allowed);
    }

    #[test]
    fn memory_stays_bounded_with_many_keys() {
        let l = RateLimiter::new();
        let t0 = Instant::now();
        // 200k distinct keys, 1000 per simulated second: only about a minute's worth may live.
        for i in 0..200_000u64 {
            let now = t0 + Duration::from_millis(i);
            assert!(l.check_at(&format!("key{i}"), 600, now).allowed);
        }
        // A key used once at 600/min holds its entry for 0.1 s: ~100 live keys at any time, so
        // after sweeps the maps stay near the sweep thresholds, far below 200k.
        assert!(l.tracked() <= SHARDS * SWEEP_AT, "{}", l.tracked());
    }
}
