//! Every record type the server stores, handed to the engine when the store opens
//! ([`all`]): the engine re-encodes the records of an older data directory (JSON, format 3)
//! into postcard (format 4) through these types, and stamps format 4 only once every record is
//! done. A record type missing here would keep its old encoding, so a test checks that every
//! `impl Record for` in the server is listed (see `tests`).

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
    crate::agents::sessions::ChatSession,
    crate::agents::sessions::StoredMessage,
    crate::auth::user::User,
    crate::brand::BrandRecord,
    crate::crm::memory::MemoryNote,
    crate::customers::MergeRecord,
    crate::events::SeenMessage,
    crate::events::segment::identity::AnonymousIdentity,
    crate::events::segment::identity::GroupNode,
    crate::events::segment::write_keys::WriteKey,
    crate::events::segment::write_keys::WriteKeyDigest,
    crate::events::webhook_secrets::WebhookSecret,
    crate::events::webhooks::CurrentWebhookToken,
    crate::events::webhooks::WebhookToken,
    crate::gateway::approvals::PendingAction,
    crate::gateway::idempotency::IdempotencyRecord,
    crate::gateway::ledger::CreditCounter,
    crate::gateway::ledger::LedgerRow,
    crate::gateway::receipts::ReceiptRecord,
    crate::integrations::storage::IntegrationRecord,
    crate::keys::AgentKey,
    crate::keys::KeyDigest,
    crate::members::Invite,
    crate::outbound::OutboundRecord,
    crate::playbooks::leads::RunLead,
    crate::playbooks::runs::PlaybookRun,
    crate::playbooks::Playbook,
    crate::reporting::activity::Report,
    crate::reporting::AssistantMessage,
    crate::retention::RetentionCursor,
    crate::scoring::trained::CurrentModel,
    crate::scoring::trained::ScoreModel,
    crate::store::Probe,
    crate::workspaces::WorkspaceEntry,
    crate::workspaces::WorkspaceSettings,
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
