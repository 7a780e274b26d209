//! Thin HTTP adapters: extract, call the domain, wrap the result. One module per area.

pub mod approvals;
pub mod auth;
pub mod brand;
pub mod chat;
pub mod customers;
pub mod events;
pub mod gateway;
pub mod graph;
pub mod integrations;
pub mod keys;
pub mod mcp;
pub mod members;
pub mod models;
pub mod outbound;
pub mod playbooks;
pub mod reporting;
pub mod segment;
pub mod stream;
pub mod system;
pub mod webhooks;
pub mod workspace;
