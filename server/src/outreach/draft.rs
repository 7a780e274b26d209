//! `draft.outreach`: a subject and body for one customer and an intent, in the brand voice.
