//! Limits every HTTP request shares.

/// Request body limit (DESIGN.md §4): 1 MiB.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
