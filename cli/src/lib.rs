//! The svc client.
