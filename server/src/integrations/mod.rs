//! Integrations: per-workspace connections to outside providers (SMTP, a Twilio-compatible voice
//! API, Customer.io), their validated configs sealed at rest, and one adapter per provider.

mod kind;

pub use kind::Kind;
