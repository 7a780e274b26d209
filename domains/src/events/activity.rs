//! Whose activity an event is (issue 28): an email the service sent, a call it placed, a sync
//! to Customer.io, a provider's delivery report are done *to* the customer, not *by* them.
//! They are recorded as touchpoints like any event (the timeline shows them), but they are not
//! the customer's own activity: they do not move `lastSeen` (the engine's `EventInput::
//! outbound`, set from [`is_outbound`] when an event is validated, whatever its source), and
//! scoring leaves them out of every feature (`scoring::classify` answers `Outbound` for them).
//!
//! Stored data: a `lastSeen` an outbound event moved before this rule stays until the
//! customer's own next event moves it again (`docs/intelligence.md`).

/// Outbound actions by name: what `outbound` records once a provider took the action
/// (`email_sent`, `call_placed`, `cio_synced`) and the usual names of other senders. A
/// `call_completed` stays the customer's activity: they took the call.
pub const OUTBOUND_ACTIONS: &[&str] = &[
    "email_sent",
    "call_placed",
    "cio_synced",
    "sms_sent",
    "message_sent",
    "email_delivered",
    "sms_delivered",
];

/// Suffixes of outbound actions from other sources (`customerio.email.sent`,
/// `newsletter_sent`, `push.delivered`).
const OUTBOUND_SUFFIXES: &[&str] = &["_sent", ".sent", "_delivered", ".delivered"];

/// Whether an event with this action is done to the customer rather than by them
/// (case-insensitive).
pub fn is_outbound(action: &str) -> bool {
    let a = action.trim().to_ascii_lowercase();
    OUTBOUND_ACTIONS.contains(&a.as_str()) || OUTBOUND_SUFFIXES.iter().any(|s| a.ends_with(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outbound_actions_are_told_from_the_customers_own() {
        for a in [
            "email_sent",
            "call_placed",
            "cio_synced",
            "EMAIL_SENT",
            "customerio.email.sent",
            "customerio.email.delivered",
            "newsletter_sent",
        ] {
            assert!(is_outbound(a), "{a}");
        }
        for a in [
            "email_opened",
            "email_clicked",
            "email_replied",
            "page_viewed",
            "purchase",
            "customerio.email.opened",
            "unsubscribed",
            "sent_feedback_form",
            "opportunity_stage_changed",
            "call_completed",
        ] {
            assert!(!is_outbound(a), "{a}");
        }
    }
}
