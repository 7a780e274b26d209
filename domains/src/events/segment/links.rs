//! Segment's identities beyond the identity keys, as a message carries them to the pipeline.

use svc_engine::Properties;

/// What a Segment message says beyond the identity keys (see `identity`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Links {
    pub anonymous_id: Option<String>,
    /// `identify` and `alias`: link the anonymous id (and `previous_id`) to the customer.
    pub link_anonymous: bool,
    /// `alias`: the earlier id.
    pub previous_id: Option<String>,
    /// `group`: the account/company.
    pub group: Option<Group>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub group_id: String,
    /// The group's traits, set on its Company node.
    pub traits: Properties,
}
