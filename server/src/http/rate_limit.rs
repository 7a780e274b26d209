//! The per-minute request budget of a key, write key or address (`AppState::rate_limiter`),
//! with the answer's rate headers recorded for the response (`http::context`).

use crate::state::AppState;
use svc_core::error::Error;

use super::context;

/// Spends one request of `bucket`'s budget; `rate_limited` (429 with `Retry-After`) when it is
/// spent.
pub fn rate_limit(state: &AppState, bucket: &str, limit_per_min: u32) -> Result<(), Error> {
    let decision = state.rate_limiter.check(bucket, limit_per_min);
    context::set_rate(decision);
    if !decision.allowed {
        return Err(Error::rate_limited(decision.retry_after_secs));
    }
    Ok(())
}
