//! The kinds of integration a workspace can connect.

use serde::{Deserialize, Serialize};

/// One outside provider a workspace connects (`PUT /api/v1/integrations/:kind`).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// An SMTP relay: outreach emails.
    Smtp,
    /// A Twilio-compatible voice REST API: outbound calls.
    Voice,
    /// Customer.io's Track API: identify and track writes.
    Customerio,
    /// An OpenAI-compatible chat completions API: the model behind chat (`docs/agents.md`).
    Llm,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Smtp, Kind::Voice, Kind::Customerio, Kind::Llm];

    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::Smtp => "smtp",
            Kind::Voice => "voice",
            Kind::Customerio => "customerio",
            Kind::Llm => "llm",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The provider's name for people.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Smtp => "SMTP",
            Kind::Voice => "voice (Twilio-compatible)",
            Kind::Customerio => "Customer.io",
            Kind::Llm => "LLM (OpenAI-compatible)",
        }
    }

    /// The route that connects it, for `integration_not_connected` errors.
    pub fn connect_route(self) -> String {
        format!("PUT /api/v1/integrations/{}", self.as_str())
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
