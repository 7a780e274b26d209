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

use crate::auth::Principal;
use crate::error::{Code, Error, Result};
use crate::plumbing::ids;
use crate::store::WorkspaceId;

/// How long a ticket stays redeemable.
pub const TICKET_TTL: Duration = Duration::from_secs(60);
/// Unredeemed, unexpired tickets held at most (memory bound; per-key rate limits apply
/// before a ticket is issued).
const MAX_OUTSTANDING: usize = 100_000;
/// Unredeemed, unexpired tickets one workspace may hold, so that one tenant cannot use up
/// the service's bound for everybody (issue 29).
pub const MAX_PER_WORKSPACE: usize = 1_000;
const PREFIX: &str = "stk_";

/// The tickets of the WebSocket: each stands for the credential that asked for it.
pub type StreamTickets = Tickets<Principal>;

#[derive(Debug)]
struct Live<T> {
    by_ticket: HashMap<String, (T, WorkspaceId, Instant)>,
    per_workspace: HashMap<WorkspaceId, usize>,
}

impl<T> Live<T> {
    fn remove(&mut self, ticket: &str) -> Option<(T, WorkspaceId, Instant)> {
        let found = self.by_ticket.remove(ticket)?;
        self.forget(found.1);
        Some(found)
    }

    fn forget(&mut self, ws: WorkspaceId) {
        if let Some(n) = self.per_workspace.get_mut(&ws) {
            *n -= 1;
            if *n == 0 {
                self.per_workspace.remove(&ws);
            }
        }
    }

    fn expire(&mut self, now: Instant) {
        let expired: Vec<String> = self
            .by_ticket
            .iter()
            .filter(|(_, (_, _, expires))| *expires <= now)
            .map(|(t, _)| t.clone())
            .collect();
        for t in expired {
            self.remove(&t);
        }
    }
}

/// Outstanding tickets, each for a `T` of one workspace.
#[derive(Debug)]
pub struct Tickets<T> {
    live: Mutex<Live<T>>,
}

impl<T> Default for Tickets<T> {
    fn default() -> Self {
        Tickets {
            live: Mutex::new(Live {
                by_ticket: HashMap::new(),
                per_workspace: HashMap::new(),
            }),
        }
    }
}

impl<T> Tickets<T> {
    /// A new ticket for `principal` of workspace `ws`, valid for [`TICKET_TTL`] from `now`.
    pub fn issue(&self, ws: WorkspaceId, principal: T, now: Instant) -> Result<String> {
        let mut live = self.live.lock();
        let held = |live: &Live<T>| live.per_workspace.get(&ws).copied().unwrap_or(0);
        if live.by_ticket.len() >= MAX_OUTSTANDING / 2 || held(&live) >= MAX_PER_WORKSPACE {
            live.expire(now);
        }
        if held(&live) >= MAX_PER_WORKSPACE {
            return Err(Error {
                message: format!(
                    "this workspace holds {MAX_PER_WORKSPACE} unused stream tickets; use them \
                     or wait a minute"
                ),
                ..Error::rate_limited(TICKET_TTL.as_secs())
            });
        }
        if live.by_ticket.len() >= MAX_OUTSTANDING {
            return Err(Error::new(
                Code::Unavailable,
                "too many outstanding stream tickets; retry in a minute",
            ));
        }
        let ticket = format!("{PREFIX}{}", ids::random_base62(32));
        live.by_ticket
            .insert(ticket.clone(), (principal, ws, now + TICKET_TTL));
        *live.per_workspace.entry(ws).or_default() += 1;
        Ok(ticket)
    }

    /// The principal of `ticket` if it was issued, is unexpired at `now` and unused; it is
    /// used up either way.
    pub fn redeem(&self, ticket: &str, now: Instant) -> Option<T> {
        let (principal, _, expires) = self.live.lock().remove(ticket)?;
        (expires > now).then_some(principal)
    }

    pub fn outstanding(&self) -> usize {
        self.live.lock().by_ticket.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WS: WorkspaceId = WorkspaceId(3);

    #[test]
    fn one_workspace_cannot_hold_more_than_its_share() {
        let tickets = Tickets::default();
        let t0 = Instant::now();
        for _ in 0..MAX_PER_WORKSPACE {
            tickets.issue(WS, someone(), t0).expect("issue");
        }
        let e = tickets.issue(WS, someone(), t0).expect_err("capped");
        assert_eq!(e.code, Code::RateLimited);
        // Another workspace is unaffected, and expiry frees the first one's share.
        tickets
            .issue(WorkspaceId(4), someone(), t0)
            .expect("other workspace");
        tickets
            .issue(WS, someone(), t0 + TICKET_TTL)
            .expect("after expiry");
        // Every ticket of t0 has expired by then and was swept.
        assert_eq!(tickets.outstanding(), 1);
    }

    fn someone() -> &'static str {
        "a principal"
    }

    #[test]
    fn a_ticket_opens_once_and_only_within_its_minute() {
        let tickets = Tickets::default();
        let t0 = Instant::now();
        let once = tickets.issue(WS, someone(), t0).expect("issue");
        assert!(once.starts_with("stk_"));
        assert!(tickets
            .redeem(&once, t0 + Duration::from_secs(59))
            .is_some());
        assert!(tickets.redeem(&once, t0).is_none(), "used up");
        let late = tickets.issue(WS, someone(), t0).expect("issue");
        assert!(tickets.redeem(&late, t0 + TICKET_TTL).is_none(), "expired");
        assert!(tickets.redeem("stk_made_up", t0).is_none());
        assert_eq!(tickets.outstanding(), 0);
    }
}
