//! What a plan takes from the graph beyond its index catalog, so that a cached plan is reused
//! only while that still holds (see `crate::prepared`).
//!
//! - Label and node counts only choose between correct plans (which label to scan): a plan
//!   stays valid while each count it read is within a factor of [`DRIFT`] of today's; past
//!   that it is planned again, as a production engine re-plans on statistics drift.
//! - Whether an ordered index holds a whole label (every node a number, or every one a
//!   datetime) decides correctness of a top-k read of that index: it must be the same today.
//! - Folding `date()`, `datetime()`, ... at plan time reads the statement's clock: such a plan
//!   is never reused.

use std::cell::{Cell, RefCell};

use svc_engine::{EngineError, GraphRead, IndexKind};

/// A count may move by this factor (either way) before plans that read it are redone.
pub(crate) const DRIFT: u64 = 2;

/// How much of a label an ordered index holds in `ORDER BY` order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WholeLabel {
    /// Every node of the label has a number there.
    Numbers,
    /// Every node of the label has a datetime there.
    DateTimes,
    Neither,
}

#[derive(Clone, Debug, PartialEq)]
enum Assumption {
    LabelCount(String, u64),
    NodeCount(u64),
    WholeLabel(String, String, WholeLabel),
}

/// The assumptions noted while planning one statement.
#[derive(Debug, Default)]
pub(crate) struct Assumptions {
    noted: RefCell<Vec<Assumption>>,
    clock: Cell<bool>,
}

impl Assumptions {
    pub(crate) fn label_count(&self, g: &dyn GraphRead, label: &str) -> Result<u64, EngineError> {
        let n = g.label_count(label)?;
        self.note(Assumption::LabelCount(label.to_owned(), n));
        Ok(n)
    }

    pub(crate) fn node_count(&self, g: &dyn GraphRead) -> Result<u64, EngineError> {
        let n = g.node_count()?;
        self.note(Assumption::NodeCount(n));
        Ok(n)
    }

    pub(crate) fn whole_label(&self, g: &dyn GraphRead, label: &str, key: &str) -> WholeLabel {
        let w = whole_label(g, label, key);
        self.note(Assumption::WholeLabel(label.to_owned(), key.to_owned(), w));
        w
    }

    /// Notes that a constant was folded from the statement's clock.
    pub(crate) fn read_clock(&self) {
        self.clock.set(true);
    }

    /// Whether the plan may be reused at all (it read no clock).
    pub(crate) fn reusable(&self) -> bool {
        !self.clock.get()
    }

    /// The assumptions, to check before each reuse of the plan.
    pub(crate) fn into_checks(self) -> Checks {
        Checks(self.noted.into_inner())
    }

    fn note(&self, a: Assumption) {
        let mut noted = self.noted.borrow_mut();
        if !noted.contains(&a) {
            noted.push(a);
        }
    }
}

/// A plan's assumptions, frozen once it is planned.
#[derive(Debug)]
pub(crate) struct Checks(Vec<Assumption>);

impl Checks {
    /// Whether every assumption still holds over `g` (an engine error counts as no).
    pub(crate) fn hold(&self, g: &dyn GraphRead) -> bool {
        self.0.iter().all(|a| match a {
            Assumption::LabelCount(label, then) => {
                g.label_count(label).is_ok_and(|now| close(*then, now))
            }
            Assumption::NodeCount(then) => g.node_count().is_ok_and(|now| close(*then, now)),
            Assumption::WholeLabel(label, key, then) => whole_label(g, label, key) == *then,
        })
    }
}

/// Whether two counts are within `DRIFT` of each other (0 and 1 count as alike).
fn close(a: u64, b: u64) -> bool {
    let (a, b) = (a.max(1), b.max(1));
    a <= b.saturating_mul(DRIFT) && b <= a.saturating_mul(DRIFT)
}

fn whole_label(g: &dyn GraphRead, label: &str, key: &str) -> WholeLabel {
    if g.index_kind(label, key) != Some(IndexKind::Ordered) {
        return WholeLabel::Neither;
    }
    let (Ok(Some(stats)), Ok(nodes)) = (g.index_stats(label, key), g.label_count(label)) else {
        return WholeLabel::Neither;
    };
    if nodes == 0 {
        WholeLabel::Neither
    } else if stats.numbers == nodes {
        WholeLabel::Numbers
    } else if stats.datetimes == nodes {
        WholeLabel::DateTimes
    } else {
        WholeLabel::Neither
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_drift_by_at_most_the_factor() {
        assert!(close(100, 200) && close(200, 100) && close(0, 1) && close(1, 2));
        assert!(!close(100, 201) && !close(201, 100) && !close(0, 3));
        assert!(close(u64::MAX, u64::MAX));
    }
}
