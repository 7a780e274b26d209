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
pub mod http;
mod kind;
mod llm;
pub mod smtp;
pub(crate) mod storage;
pub mod voice;

pub use config::{
    is_e164, mask, Config, CustomerioConfig, Region, SmtpConfig, SmtpSecurity, VoiceConfig,
    DEFAULT_VOICE_BASE_URL,
};
pub use destinations::Destinations;
pub use http::HttpClient;
pub use kind::Kind;
pub use llm::{LlmConfig, DEFAULT_LLM_TIMEOUT_S};
/// Master-key rotation (`crate::admin`).
pub use storage::reseal;
pub use storage::{
    delete, list, load, load_customerio_in, load_in, load_smtp_in, load_voice_in, put, test,
    IntegrationList, IntegrationView, LastTest, TestResult,
};

/// A provider call that failed. `message` is for people and never contains a secret; `status`
/// is the provider's HTTP status or SMTP reply code when it answered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    pub message: String,
    pub status: Option<u16>,
    /// The request may have reached the provider and been acted on (a timeout or a dropped
    /// connection after it was sent): the outcome is unknown, not failed.
    pub maybe_delivered: bool,
}

impl ProviderError {
    pub fn new(message: impl Into<String>) -> ProviderError {
        ProviderError {
            message: message.into(),
            status: None,
            maybe_delivered: false,
        }
    }

    pub fn with_status(message: impl Into<String>, status: u16) -> ProviderError {
        ProviderError {
            message: message.into(),
            status: Some(status),
            maybe_delivered: false,
        }
    }

    /// A failure after the request may have been acted on (see [`ProviderError::maybe_delivered`]).
    pub fn ambiguous(message: impl Into<String>) -> ProviderError {
        ProviderError {
            maybe_delivered: true,
            ..ProviderError::new(message)
        }
    }

    /// Replaces every occurrence of each secret in the message (defence in depth: a provider
    /// that echoes a credential back must not get it into our responses or logs).
    pub(crate) fn scrubbed(mut self, secrets: &[&str]) -> ProviderError {
        for s in secrets.iter().filter(|s| s.len() >= 4) {
            if self.message.contains(*s) {
                self.message = self.message.replace(*s, "••••");
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_their_wire_names() {
        for kind in Kind::ALL {
            assert_eq!(Kind::parse(kind.as_str()), Some(kind));
            let json = serde_json::to_value(kind).expect("serialize");
            assert_eq!(json, kind.as_str());
        }
        assert_eq!(
            Kind::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
            ["smtp", "voice", "customerio", "llm"]
        );
        assert_eq!(Kind::parse("SMTP"), None);
        assert_eq!(
            Kind::Voice.connect_route(),
            "PUT /api/v1/integrations/voice"
        );
    }

    #[test]
    fn scrubbing_removes_secrets_from_messages() {
        let e = ProviderError::with_status("bad token s3cr3t-token in request", 401)
            .scrubbed(&["s3cr3t-token", ""]);
        assert_eq!(e.message, "bad token •••• in request");
        assert_eq!(e.status, Some(401));
    }
}
