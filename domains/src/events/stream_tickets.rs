//! One-use tickets for the real-time WebSocket (`/v1/stream`) from browsers, which cannot set
//! headers on a WebSocket upgrade: the page asks for a ticket with its credential in a header
//! (`POST /v1/stream/ticket`), then opens `/v1/stream?ticket=...`. A ticket opens one stream
//! as the credential that asked for it, once, within [`TICKET_TTL`]; so a URL that reaches a
//! log or a browser history is worthless a minute later (and once used).
//!
//! Tickets live in memory only: a restart forgets them, which costs a browser one new ticket.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use svc_core::auth::Principal;
use svc_core::error::{Code, Error, Result};
use svc_core::plumbing::ids;

/// How long a ticket stays redeemable.
pub const TICKET_TTL: Duration = Duration::from_secs(60);
/// Unredeemed, unexpired tickets held at most (memory bound; per-key rate limits apply
/// before a ticket is issued).
const MAX_OUTSTANDING: usize = 100_000;
const PREFIX: &str = "stk_";

/// The tickets of the WebSocket: each stands for the credential that asked for it.
pub type StreamTickets = Tickets<Principal>;

/// Outstanding tickets, each for a `T`.
#[derive(Debug)]
pub struct Tickets<T> {
    live: Mutex<HashMap<String, (T, Instant)>>,
}

impl<T> Default for Tickets<T> {
    fn default() -> Self {
        Tickets {
            live: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> Tickets<T> {
    /// A new ticket for `principal`, valid for [`TICKET_TTL`] from `now`.
    pub fn issue(&self, principal: T, now: Instant) -> Result<String> {
        let mut live = self.live.lock();
        if live.len() >= MAX_OUTSTANDING / 2 {
            live.retain(|_, (_, expires)| *expires > now);
        }
        if live.len() >= MAX_OUTSTANDING {
            return Err(Error::new(
                Code::Unavailable,
                "too many outstanding stream tickets; retry in a minute",
            ));
        }
        let ticket = format!("{PREFIX}{}", ids::random_base62(32));
        live.insert(ticket.clone(), (principal, now + TICKET_TTL));
        Ok(ticket)
    }

    /// The principal of `ticket` if it was issued, is unexpired at `now` and unused; it is
    /// used up either way.
    pub fn redeem(&self, ticket: &str, now: Instant) -> Option<T> {
        let (principal, expires) = self.live.lock().remove(ticket)?;
        (expires > now).then_some(principal)
    }

    pub fn outstanding(&self) -> usize {
        self.live.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn someone() -> &'static str {
        "a principal"
    }

    #[test]
    fn a_ticket_opens_once_and_only_within_its_minute() {
        let tickets = Tickets::default();
        let t0 = Instant::now();
        let once = tickets.issue(someone(), t0).expect("issue");
        assert!(once.starts_with("stk_"));
        assert!(tickets
            .redeem(&once, t0 + Duration::from_secs(59))
            .is_some());
        assert!(tickets.redeem(&once, t0).is_none(), "used up");
        let late = tickets.issue(someone(), t0).expect("issue");
        assert!(tickets.redeem(&late, t0 + TICKET_TTL).is_none(), "expired");
        assert!(tickets.redeem("stk_made_up", t0).is_none());
        assert_eq!(tickets.outstanding(), 0);
    }
}
