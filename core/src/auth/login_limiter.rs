//! Throttles password guessing: after too many failed logins for one email within a window,
//! further attempts for that email are refused until the window has passed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Entries kept before expired ones are swept; bounds memory under a spray of emails.
const SWEEP_AT: usize = 10_000;

#[derive(Debug)]
pub struct LoginLimiter {
    max_failures: u32,
    window: Duration,
    failures: Mutex<HashMap<String, Window>>,
}

#[derive(Clone, Copy, Debug)]
struct Window {
    started: Instant,
    count: u32,
}

impl LoginLimiter {
    pub fn new(max_failures: u32, window: Duration) -> Self {
        LoginLimiter {
            max_failures,
            window,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// `Some(seconds to wait)` when logins for `email` are currently refused.
    pub fn check(&self, email: &str, now: Instant) -> Option<u64> {
        let map = self.failures.lock();
        let w = map.get(email)?;
        let elapsed = now.saturating_duration_since(w.started);
        (w.count >= self.max_failures && elapsed < self.window)
            .then(|| (self.window - elapsed).as_secs().max(1))
    }

    pub fn record_failure(&self, email: &str, now: Instant) {
        let mut map = self.failures.lock();
        if map.len() >= SWEEP_AT {
            let window = self.window;
            map.retain(|_, w| now.saturating_duration_since(w.started) < window);
        }
        let w = map.entry(email.to_owned()).or_insert(Window {
            started: now,
            count: 0,
        });
        if now.saturating_duration_since(w.started) >= self.window {
            *w = Window {
                started: now,
                count: 0,
            };
        }
        w.count += 1;
    }

    pub fn record_success(&self, email: &str) {
        self.failures.lock().remove(email);
    }

    pub fn tracked(&self) -> usize {
        self.failures.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_after_max_failures_until_window_ends() {
        let l = LoginLimiter::new(3, Duration::from_secs(60));
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(l.check("a@x", t0).is_none());
            l.record_failure("a@x", t0);
        }
        assert_eq!(l.check("a@x", t0), Some(60));
        assert!(l.check("b@x", t0).is_none(), "other emails unaffected");
        assert!(l.check("a@x", t0 + Duration::from_secs(61)).is_none());
    }

    #[test]
    fn success_resets_and_memory_is_bounded() {
        let l = LoginLimiter::new(3, Duration::from_secs(60));
        let t0 = Instant::now();
        l.record_failure("a@x", t0);
        l.record_success("a@x");
        assert_eq!(l.tracked(), 0);
        for i in 0..(SWEEP_AT * 3) {
            // Every 1000 emails the clock moves past the window, so old entries can go.
            let t = t0 + Duration::from_secs(61 * (i / 1000) as u64);
            l.record_failure(&format!("u{i}@x"), t);
        }
        assert!(l.tracked() <= SWEEP_AT + 1000, "{}", l.tracked());
    }
}
