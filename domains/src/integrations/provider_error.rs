//! How a provider call fails, in words safe to show.

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
    pub fn scrubbed(mut self, secrets: &[&str]) -> ProviderError {
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
    fn scrubbing_removes_secrets_from_messages() {
        let e = ProviderError::with_status("bad token s3cr3t-token in request", 401)
            .scrubbed(&["s3cr3t-token", ""]);
        assert_eq!(e.message, "bad token •••• in request");
        assert_eq!(e.status, Some(401));
    }
}
