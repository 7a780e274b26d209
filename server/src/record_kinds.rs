//! Every record type the service stores, in any of its crates, handed to the engine when the
//! store opens ([`all`]): the engine re-encodes the records of an older data directory (JSON,
//! format 3) into postcard (format 4) through these types, and stamps format 4 only once every
//! record is done. The registry lives in the top crate, the one that knows every floor. A record
//! type missing here would keep its old encoding, so a test checks that every `impl Record for`
//! of the service's crates is listed (see `tests`).

use std::path::Path;

pub use svc_engine::{record_census, RecordCensus, FORMAT_VERSION};
use svc_engine::{EngineError, RecordKinds};

macro_rules! record_types {
    ($($ty:ty),* $(,)?) => {
        /// The registry of every stored record type.
        pub fn all() -> RecordKinds {
            RecordKinds::new()$(.with::<$ty>())*
        }

        /// (type name, round trip of generated samples) per record type, for the tests.
        #[cfg(test)]
        fn round_trips() -> Vec<(&'static str, fn() -> Result<tests::Sizes, String>)> {
            vec![$((stringify!($ty), tests::round_trip::<$ty> as fn() -> _)),*]
        }
    };
}

record_types!(
    svc_agents::chat::sessions::ChatSession,
    svc_agents::chat::sessions::StoredMessage,
    svc_core::auth::user::User,
    svc_domains::brand::BrandRecord,
    svc_domains::crm::memory::MemoryNote,
    svc_domains::customers::MergeRecord,
    svc_domains::events::SeenMessage,
    svc_domains::events::segment::identity::AnonymousIdentity,
    svc_domains::events::segment::identity::GroupNode,
    svc_domains::events::segment::write_keys::WriteKey,
    svc_domains::events::segment::write_keys::WriteKeyDigest,
    svc_domains::events::webhook_secrets::WebhookSecret,
    svc_domains::events::webhooks::CurrentWebhookToken,
    svc_domains::events::webhooks::WebhookToken,
    svc_gateway::approvals::PendingAction,
    svc_gateway::idempotency::IdempotencyRecord,
    svc_core::ledger::CreditCounter,
    svc_core::ledger::LedgerRow,
    svc_gateway::receipts::ReceiptRecord,
    svc_domains::integrations::storage::IntegrationRecord,
    svc_core::keys::AgentKey,
    svc_core::keys::KeyDigest,
    svc_core::members::Invite,
    svc_core::oauth::AuthCode,
    svc_core::oauth::RegisteredClient,
    svc_core::oauth::TokenRecord,
    svc_domains::outbound::OutboundRecord,
    svc_agents::playbook_runs::leads::RunLead,
    svc_agents::playbook_runs::runs::PlaybookRun,
    svc_domains::playbooks::Playbook,
    svc_domains::reports::Report,
    svc_agents::reporting::AssistantMessage,
    svc_core::retention::RetentionCursor,
    svc_domains::scoring::trained::CurrentModel,
    svc_domains::scoring::trained::ScoreModel,
    svc_core::store::Probe,
    svc_core::workspaces::WorkspaceEntry,
    svc_core::workspaces::WorkspaceSettings,
);

/// Rewrites the (closed) store at `store_dir` in format 3 (JSON records), so a build from
/// before format 4 can open it again (a rollback), and so tests can make a format-3 data
/// directory. Opening it with this build migrates it forward again.
pub fn downgrade_to_format_three(store_dir: &Path) -> Result<RecordCensus, EngineError> {
    svc_engine::downgrade_to_format_three(store_dir, &all())
}

#[cfg(test)]
mod sample;
#[cfg(test)]
mod tests;
