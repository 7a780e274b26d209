//! The customer graph's vocabulary: every label, relationship type and property name the
//! service writes or reads, in one place (issue 17), so ingestion, customers, scoring, reporting,
//! the gateway and the agents agree on the words. New code names graph things only through here.
//!
//! The shape:
//! ```text
//! (Customer)-[:HAS_TOUCHPOINT]->(Touchpoint)-[:INFLUENCED_BY]->(Campaign)
//! (Customer)-[:HAS_OPPORTUNITY]->(Opportunity)-[:AT_STAGE]->(Stage)
//! (Customer)-[:MEMBER_OF]->(Company)
//! ```

pub use svc_engine::schema::{CAMPAIGN, CUSTOMER, HAS_TOUCHPOINT, INFLUENCED_BY, TOUCHPOINT};

/// Labels besides the engine's own.
pub const OPPORTUNITY: &str = "Opportunity";
pub const STAGE: &str = "Stage";
pub const RECOMMENDATION: &str = "Recommendation";

/// Relationship types besides the engine's own.
pub const HAS_OPPORTUNITY: &str = "HAS_OPPORTUNITY";
/// One at a time per opportunity; its history is kept as `opportunity_stage_changed` touchpoints.
pub const AT_STAGE: &str = "AT_STAGE";

/// A Segment `group`'s account/company (`events::segment::identity`), and the edge to it.
pub const COMPANY: &str = "Company";
pub const MEMBER_OF: &str = "MEMBER_OF";

/// Property names.
pub mod prop {
    /// Customer: the first Segment `anonymousId` seen for it; Touchpoint: the message's.
    pub const ANONYMOUS_ID: &str = "anonymousId";
    /// Company: Segment's `groupId`.
    pub const GROUP_ID: &str = "groupId";
    // Customer
    pub const EMAIL: &str = "email";
    pub const PHONE: &str = "phone";
    pub const EXTERNAL_ID: &str = "externalId";
    pub const NAME: &str = "name";
    pub const CIO_ID: &str = "cio_id";
    /// Epoch milliseconds of the latest touchpoint (ordered index).
    pub const LAST_SEEN: &str = "lastSeen";
    /// Epoch milliseconds of the first touchpoint.
    pub const FIRST_SEEN: &str = "firstSeen";
    /// The conversion probability (ordered index; SPEC's `score` on customers).
    pub const SCORE: &str = "score";
    pub const CHURN_SCORE: &str = "churnScore";
    pub const CONVERSION_SCORE: &str = "conversionScore";
    pub const LIFECYCLE_STAGE: &str = "lifecycle_stage";

    // Touchpoint
    pub const ACTION: &str = "action";
    pub const CHANNEL: &str = "channel";
    /// Epoch milliseconds of the event (ordered index).
    pub const TS: &str = "ts";
    pub const CAMPAIGN_ID: &str = "campaignId";

    // Opportunity and Stage
    /// The client's (or the CRM's) opportunity id; namespaced like external customer ids.
    pub const OPPORTUNITY_ID: &str = "opportunityId";
    pub const AMOUNT: &str = "amount";
    pub const STAGE: &str = "stage";
    /// `open`, `won` or `lost`.
    pub const STATUS: &str = "status";
    /// Lower-case ISO 4217 code, when the source says.
    pub const CURRENCY: &str = "currency";
    /// Where an opportunity came from: `api`, `hubspot`, `stripe`, `crm.mutate`.
    pub const SOURCE: &str = "source";

    // Stage-change touchpoints (action `opportunity_stage_changed`, in `properties`)
    pub const FROM_STAGE: &str = "fromStage";
    pub const TO_STAGE: &str = "toStage";
}
