//! The kinds of integration a workspace can connect: vocabulary of the capability table (the
//! integration a capability requires) and of the integrations domain.

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
}
