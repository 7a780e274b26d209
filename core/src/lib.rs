//! svc-core: the ground floor of the service. It owns the one door to the engine (`store`),
//! the one error type (`error`), ids, clocks and secrets at rest (`plumbing`), JSON field
//! readers (`fields`), the capability table (`capabilities`, with `integration_kind`), the
//! graph's vocabulary (`vocabulary`), users, sessions and credentials (`accounts`, `auth`,
//! `members`, `keys`, `ratelimit`), workspaces and their settings (`workspaces`), the
//! action-credit ledger (`ledger`) and bucketed retention (`retention`).
//!
//! It may use svc-engine and outside libraries only: nothing here knows a domain, the gateway,
//! the agents or HTTP. Everything above builds on it.

pub mod accounts;
pub mod auth;
pub mod capabilities;
pub mod error;
pub mod fields;
pub mod integration_kind;
pub mod keys;
pub mod ledger;
pub mod members;
pub mod oauth;
pub mod plumbing;
pub mod ratelimit;
pub mod retention;
pub mod store;
pub mod vocabulary;
pub mod workspaces;

pub use error::{Code, Error};
