//! Integrations: per-workspace connections to outside providers (SMTP, a Twilio-compatible voice
//! API, Customer.io), their validated configs sealed at rest, and one adapter per provider.
//!
//! - `config`: the config of each kind, validated field by field from a PUT body, and its
//!   masked form (secrets never leave the service).
//! - `storage`: one record per (workspace, kind), the config sealed with the workspace and
//!   `integration:<kind>` bound as associated data; the async API of the routes and the sync
//!   [`load_in`] the gateway calls inside its engine write.
//! - `http`: the one outbound HTTP client (rustls, timeouts, retries only when nothing was sent).
//! - `destinations`: which addresses integrations may reach (public only unless the operator
//!   allows more), checked on the resolved address at connect time.
//! - `smtp`, `voice`, `customerio`: the adapters. They are called outside any store transaction
//!   and never touch the store; failures are [`ProviderError`]s whose messages never carry a
//!   secret.

mod config;
pub mod customerio;
pub mod destinations;
pub mod fields;
pub mod http;
mod llm;
pub mod provider_error;
pub mod smtp;
pub mod storage;
pub mod voice;

pub use config::{
    is_e164, Config, CustomerioConfig, Region, SmtpConfig, SmtpSecurity, VoiceConfig,
    DEFAULT_VOICE_BASE_URL,
};
pub use destinations::Destinations;
pub use fields::mask;
pub use http::HttpClient;
pub use llm::{LlmConfig, DEFAULT_LLM_TIMEOUT_S};
pub use provider_error::ProviderError;
/// Master-key rotation (`svcd admin`).
pub use storage::reseal;
pub use storage::{
    delete, list, load, load_customerio_in, load_in, load_smtp_in, load_voice_in, put, test,
    IntegrationList, IntegrationView, LastTest, TestResult,
};
