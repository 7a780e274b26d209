//! `plan.goal`: ordered next steps toward a goal for a customer or a segment.
