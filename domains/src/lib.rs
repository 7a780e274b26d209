//! svc-domains: the rules of the service, one module per domain, none of them knowing HTTP,
//! the gateway or the agents. It owns ingestion (`events`), the customer graph (`customers`,
//! `crm`, `pipeline`, `graph_api`), intelligence (`scoring`, `planning`), outreach content and
//! outbound actions (`outreach`, `outbound`), providers (`integrations`), the brand profile
//! (`brand`), playbook specs (`playbooks`) and activity reports (`reports`).
//!
//! It may use svc-core, svc-query and svc-engine. Domain functions take what they use (a
//! store, a transaction, a clock, a sealer, an HTTP client); the gateway, the agents and the
//! server call them.

pub mod brand;
pub mod crm;
pub mod customers;
pub mod events;
pub mod graph_api;
pub mod integrations;
pub mod outbound;
pub mod outreach;
pub mod pipeline;
pub mod planning;
pub mod playbooks;
pub mod reports;
pub mod scoring;
