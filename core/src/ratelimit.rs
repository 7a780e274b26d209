//! Per-key request rate limiting: governor's GCRA (generic cell rate algorithm), keyed.
//!
//! A key with a limit of L per minute has an emission interval T = 60 s / L and may burst up to
//! L requests. governor's keyed limiter applies one quota to many keys, while our keys each
//! carry their own `rate_limit_per_min`, so there is one keyed limiter per limit in use (a key
//! whose limit changes starts afresh under the new one). A key's state whose theoretical
//! arrival time has passed is the same as no state, which keeps memory bounded: such entries
//! are dropped (`retain_recent`) whenever a limiter grows past its threshold.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, MonotonicClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::Quota;
use parking_lot::RwLock;

/// A limiter is swept of expired entries when it reaches this size (the threshold then
/// doubles past the live entries, so sweeps stay amortized O(1)).
const SWEEP_AT: usize = 1024;

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

type Keyed<C> =
    governor::RateLimiter<String, DashMapStateStore<String>, C, StateInformationMiddleware>;

/// One limit's keyed limiter and the size at which it is next swept.
struct PerLimit<C: Clock> {
    limiter: Keyed<C>,
    /// Read on every check, so an atomic rather than a lock; two checks that sweep at once
    /// only sweep twice.
    sweep_at: AtomicUsize,
}

/// The service's request limiter (held by `AppState`). `C` is the clock: the monotonic clock in
/// the service, a fake one in tests.
pub struct RateLimiter<C: Clock = MonotonicClock> {
    clock: C,
    by_limit: RwLock<HashMap<u32, Arc<PerLimit<C>>>>,
}

impl<C: Clock + Clone> std::fmt::Debug for RateLimiter<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("tracked", &self.tracked())
            .finish_non_exhaustive()
    }
}

impl Default for RateLimiter {
    fn default() -> Self {
        RateLimiter::new()
    }
}

impl RateLimiter {
    pub fn new() -> Self {
        RateLimiter::with_clock(MonotonicClock)
    }
}

impl<C: Clock + Clone> RateLimiter<C> {
    pub fn with_clock(clock: C) -> Self {
        RateLimiter {
            clock,
            by_limit: RwLock::new(HashMap::new()),
        }
    }

    /// Counts one request of `key` now against `limit_per_min` (at least 1).
    pub fn check(&self, key: &str, limit_per_min: u32) -> Decision {
        let limit = NonZeroU32::new(limit_per_min).unwrap_or(NonZeroU32::MIN);
        let per = self.per_limit(limit);
        let interval = Duration::from_secs(60) / limit.get();
        let decision = match per.limiter.check_key(&key.to_owned()) {
            Ok(snapshot) => {
                let remaining = snapshot.remaining_burst_capacity();
                Decision {
                    allowed: true,
                    limit: limit.get(),
                    remaining,
                    // The burst is whole again once the used cells have been replenished.
                    reset_secs: ceil_secs(interval * (limit.get() - remaining)),
                    retry_after_secs: 0,
                }
            }
            Err(not_until) => Decision {
                allowed: false,
                limit: limit.get(),
                remaining: 0,
                reset_secs: ceil_secs(interval * limit.get()),
                retry_after_secs: ceil_secs(not_until.wait_time_from(self.clock.now())).max(1),
            },
        };
        if per.limiter.len() >= per.sweep_at.load(Ordering::Relaxed) {
            per.limiter.retain_recent();
            per.limiter.shrink_to_fit();
            let next = (per.limiter.len() * 2).max(SWEEP_AT);
            per.sweep_at.store(next, Ordering::Relaxed);
        }
        decision
    }

    /// Entries held (for metrics and the boundedness test).
    pub fn tracked(&self) -> usize {
        self.by_limit.read().values().map(|p| p.limiter.len()).sum()
    }

    fn per_limit(&self, limit: NonZeroU32) -> Arc<PerLimit<C>> {
        if let Some(p) = self.by_limit.read().get(&limit.get()) {
            return p.clone();
        }
        self.by_limit
            .write()
            .entry(limit.get())
            .or_insert_with(|| {
                let limiter = governor::RateLimiter::dashmap_with_clock(
                    Quota::per_minute(limit),
                    self.clock.clone(),
                )
                .with_middleware::<StateInformationMiddleware>();
                Arc::new(PerLimit {
                    limiter,
                    sweep_at: AtomicUsize::new(SWEEP_AT),
                })
            })
            .clone()
    }
}

fn ceil_secs(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000_000)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;

    fn limiter() -> (RateLimiter<FakeRelativeClock>, FakeRelativeClock) {
        let clock = FakeRelativeClock::default();
        (RateLimiter::with_clock(clock.clone()), clock)
    }

    #[test]
    fn burst_of_limit_then_refusal_then_steady_rate() {
        let (l, clock) = limiter();
        for i in 0..5 {
            let d = l.check("k", 5);
            assert!(d.allowed, "request {i}");
            assert_eq!(d.remaining, 4 - i);
            assert_eq!(d.limit, 5);
        }
        let refused = l.check("k", 5);
        assert!(!refused.allowed);
        assert_eq!(refused.remaining, 0);
        assert_eq!(refused.retry_after_secs, 12, "one interval of 60/5 s");
        assert_eq!(refused.reset_secs, 60);
        // One interval later exactly one more request fits.
        clock.advance(Duration::from_secs(12));
        assert!(l.check("k", 5).allowed);
        assert!(!l.check("k", 5).allowed);
    }

    #[test]
    fn keys_and_limits_are_independent() {
        let (l, _) = limiter();
        assert!(l.check("a", 1).allowed);
        assert!(!l.check("a", 1).allowed);
        assert!(l.check("b", 1).allowed);
        // Its own limit for a key of another limit (a key whose limit was raised).
        assert!(l.check("a", 2).allowed);
        // A limit of 0 is read as 1.
        assert!(l.check("z", 0).allowed);
        assert!(!l.check("z", 0).allowed);
    }

    #[test]
    fn memory_stays_bounded_with_many_keys() {
        let (l, clock) = limiter();
        // 200k distinct keys, 1000 per simulated second: only about a minute's worth may live.
        for i in 0..200_000u64 {
            assert!(l.check(&format!("key{i}"), 600).allowed);
            clock.advance(Duration::from_millis(1));
        }
        // A key used once at 600/min holds its state for 0.1 s: ~100 live keys at any time, so
        // after sweeps the map stays near the sweep threshold, far below 200k.
        assert!(l.tracked() <= 2 * SWEEP_AT, "{}", l.tracked());
    }
}
