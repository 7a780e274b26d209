//! Outbound actions: the record of every email, call and Customer.io write an agent makes, its
//! exactly-once state machine (`queued -> sending -> sent | failed | unknown`), consent and
//! frequency checks, and the outbox listing.
