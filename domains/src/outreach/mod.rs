//! Outreach content: drafting a message for a customer in the workspace's brand voice, and
//! rendering the email that is sent.

pub mod draft;
