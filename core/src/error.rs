//! The service's one error type and the one table from error code to HTTP status.
//!
//! Domain modules return [`Error`]; only `http::error` turns it into a response, so this module
//! knows statuses as plain numbers and nothing about axum.

use std::fmt;

use serde_json::Value;
use svc_engine::EngineError;

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident => ($name:literal, $status:literal) ),+ $(,)?) => {
        /// Every error code the service answers with. The table below is the single place that
        /// fixes each code's wire name and HTTP status (DESIGN.md §4).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Code {
            $( $(#[$doc])* $variant, )+
        }

        impl Code {
            /// Every code, in table order (used by the OpenAPI document and tests).
            pub const ALL: &'static [Code] = &[$(Code::$variant),+];

            /// The snake_case name clients match on.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $name,)+ }
            }

            /// The HTTP status the code is answered with.
            pub fn status(self) -> u16 {
                match self { $(Code::$variant => $status,)+ }
            }
        }
    };
}

codes! {
    // Request shape.
    /// The body or a parameter does not match the expected schema.
    InvalidInput => ("invalid_input", 400),
    /// The body is not well-formed JSON.
    InvalidJson => ("invalid_json", 400),
    /// A timestamp is not ISO-8601 with a timezone.
    InvalidTimestamp => ("invalid_timestamp", 400),
    /// Two headers carry different valid credentials.
    AmbiguousCredentials => ("ambiguous_credentials", 400),
    /// A graph query failed to parse, plan or run (`details.query_code`, line, column).
    InvalidQuery => ("invalid_query", 400),
    /// No valid credential.
    Unauthenticated => ("unauthenticated", 401),
    /// A webhook delivery's platform signature is missing, wrong or stale (the workspace has
    /// a signing secret for the platform).
    InvalidSignature => ("invalid_signature", 401),
    /// Monthly action credits exhausted.
    QuotaExceeded => ("quota_exceeded", 402),
    /// The credential is valid but may not do this (e.g. key management with an agent key).
    Forbidden => ("forbidden", 403),
    /// A workspace member asked for what only its owners do (keys, integrations, webhook
    /// secrets and tokens, invites).
    OwnerRequired => ("owner_required", 403),
    /// The workspace is read-only.
    ReadOnlyWorkspace => ("read_only_workspace", 403),
    /// The key lacks the capability grant or legacy scope.
    GrantDenied => ("grant_denied", 403),
    /// The mode is not allowed by the capability or the key.
    ModeDenied => ("mode_denied", 403),
    /// Workspace policy forbids the action.
    PolicyForbid => ("policy_forbid", 403),
    /// Execution needs operator approval.
    ApprovalRequired => ("approval_required", 403),
    /// A graph query that writes, sent with an API key.
    WriteNotAllowed => ("write_not_allowed", 403),
    /// Unknown route or object, including objects of other workspaces.
    NotFound => ("not_found", 404),
    /// Unknown capability id.
    CapabilityNotFound => ("capability_not_found", 404),
    /// The route exists but not with this method.
    MethodNotAllowed => ("method_not_allowed", 405),
    /// A unique value (e.g. an email) is already taken.
    Conflict => ("conflict", 409),
    /// An outbound capability's integration is not connected (`details.integration`, the route
    /// that connects it).
    IntegrationNotConnected => ("integration_not_connected", 409),
    /// The customer unsubscribed or bounced: never emailed or called.
    CustomerSuppressed => ("customer_suppressed", 409),
    /// The workspace's weekly outreach cap for this customer is reached.
    FrequencyCapped => ("frequency_capped", 409),
    /// The same idempotency key is still in flight.
    IdempotencyInFlight => ("idempotency_conflict", 409),
    /// The same idempotency key was used with a different request.
    IdempotencyMismatch => ("idempotency_conflict", 422),
    /// The body exceeds the size limit.
    PayloadTooLarge => ("payload_too_large", 413),
    /// The body is not JSON.
    UnsupportedMediaType => ("unsupported_media_type", 415),
    /// A request-rate limit was exceeded.
    RateLimited => ("rate_limited", 429),
    /// A bug or a storage failure; details are only logged.
    Internal => ("internal", 500),
    /// The capability executor failed.
    CapabilityFailed => ("capability_failed", 502),
    /// The store is closed or not writable (e.g. during shutdown).
    Unavailable => ("unavailable", 503),
    /// The approval system could not queue or inspect the action.
    AosUnavailable => ("aos_unavailable", 503),
}

/// An error as the client sees it: a code, a human message and optional details.
#[derive(Debug)]
pub struct Error {
    pub code: Code,
    pub message: String,
    /// Structured detail, e.g. `{"field": "grants[1]", "value": "capability:nope"}`.
    pub details: Option<Value>,
    /// Seconds the client should wait before retrying (sent as `Retry-After`).
    pub retry_after: Option<u64>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn invalid_input(message: impl Into<String>) -> Self {
        Error::new(Code::InvalidInput, message)
    }

    /// A bad value of one field, named in the message and in `details`.
    pub fn invalid_field(field: &str, value: &str, why: &str) -> Self {
        Error::new(Code::InvalidInput, format!("{field}: {why}: {value:?}"))
            .with_details(serde_json::json!({ "field": field, "value": value }))
    }

    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Error::new(Code::Unauthenticated, message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Error::new(Code::Forbidden, message)
    }

    /// Unknown object. The message names only the kind, never the id, so a probe with another
    /// workspace's id learns nothing.
    pub fn not_found(what: &str) -> Self {
        Error::new(Code::NotFound, format!("{what} not found"))
    }

    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Error {
            retry_after: Some(retry_after_secs.max(1)),
            ..Error::new(Code::RateLimited, "rate limit exceeded; retry later")
        }
    }

    /// An unexpected failure. The detail goes to the log (with the request id), never to the
    /// client.
    pub fn internal(detail: impl fmt::Display) -> Self {
        tracing::error!(error = %detail, "internal error");
        Error::new(Code::Internal, "internal error")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for Error {}

impl From<EngineError> for Error {
    fn from(e: EngineError) -> Self {
        match e.kind() {
            svc_engine::ErrorKind::Unavailable => {
                tracing::warn!(detail = %e, "store unavailable");
                Error::new(Code::Unavailable, "the store is not available")
            }
            // Input and graph-state refusals the caller should have mapped to its own words
            // reach here only through a bug: internal, like faults.
            _ => Error::internal(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_follow_design_table() {
        let expect = [
            (Code::CapabilityNotFound, "capability_not_found", 404),
            (Code::InvalidInput, "invalid_input", 400),
            (Code::InvalidTimestamp, "invalid_timestamp", 400),
            (Code::Unauthenticated, "unauthenticated", 401),
            (Code::GrantDenied, "grant_denied", 403),
            (Code::ModeDenied, "mode_denied", 403),
            (Code::PolicyForbid, "policy_forbid", 403),
            (Code::ApprovalRequired, "approval_required", 403),
            (Code::QuotaExceeded, "quota_exceeded", 402),
            (Code::RateLimited, "rate_limited", 429),
            (Code::IdempotencyInFlight, "idempotency_conflict", 409),
            (Code::IdempotencyMismatch, "idempotency_conflict", 422),
            (Code::AosUnavailable, "aos_unavailable", 503),
            (Code::CapabilityFailed, "capability_failed", 502),
            (
                Code::IntegrationNotConnected,
                "integration_not_connected",
                409,
            ),
            (Code::CustomerSuppressed, "customer_suppressed", 409),
            (Code::FrequencyCapped, "frequency_capped", 409),
        ];
        for (code, name, status) in expect {
            assert_eq!((code.as_str(), code.status()), (name, status), "{code:?}");
        }
    }

    #[test]
    fn every_code_is_snake_case_and_an_error_status() {
        let mut seen = HashSet::new();
        for code in Code::ALL {
            let name = code.as_str();
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{name}"
            );
            assert!((400..600).contains(&code.status()), "{name}");
            seen.insert((name, code.status()));
        }
        assert_eq!(
            seen.len(),
            Code::ALL.len(),
            "a (code, status) pair appears twice"
        );
    }
}
