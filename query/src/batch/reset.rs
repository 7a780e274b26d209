//! Resetting a batch tree after a run, so that a cached plan compiles its tree once and runs
//! it many times (`crate::prepared` keeps one per thread) instead of compiling and dropping it
//! on every run (about a fifth of a short query).
//!
//! A reset puts every operator back in the state its compiler left it in: what a run learns
//! (dictionary codes, per-column verdicts, label indices, candidates, buffered output) belongs
//! to that run's model version and goes. Each `Reset` names every field of its operator, so a
//! field added later does not compile until it says whether a run changes it. An operator that
//! cannot be put back says so (`false`), and the tree is dropped instead of kept.

use super::ops::*;

/// An operator that can be put back in its compiled state.
pub(super) trait Reset {
    /// Back to the compiled state; false when that is not possible (drop the tree then).
    fn reset(&mut self) -> bool;
}

impl Reset for Once {
    fn reset(&mut self) -> bool {
        // A tree's leaf starts not done (the inert inputs of `CountStep`s, compiled done, are
        // never reset: see `ExpandCount`).
        let Once { done } = self;
        *done = false;
        true
    }
}

impl Reset for Argument {
    fn reset(&mut self) -> bool {
        // Inside an OPTIONAL MATCH's inner pipeline (compiled per chunk, never reset) and under
        // `ScanEq`'s scan and filter: its state is the chunk handed in.
        let Argument { chunk } = self;
        *chunk.borrow_mut() = None;
        true
    }
}

impl Reset for ScanEq<'_> {
    fn reset(&mut self) -> bool {
        let ScanEq {
            input,
            slot: _,
            label: _,
            key: _,
            check_labels: _,
            value,
            generic,
            arg,
            generic_on,
            strings,
            at,
        } = self;
        value.reset();
        *arg.borrow_mut() = None;
        *generic_on = false;
        // Built from the model's column at the first lookup: that run's model version.
        *strings = None;
        *at = None;
        generic.reset() && input.reset()
    }
}

impl Reset for FromRows<'_> {
    fn reset(&mut self) -> bool {
        // A row operator below cannot be reset.
        false
    }
}

impl Reset for Filter<'_> {
    fn reset(&mut self) -> bool {
        let Filter { input, predicate } = self;
        predicate.reset();
        input.reset()
    }
}

impl Reset for Project<'_> {
    fn reset(&mut self) -> bool {
        let Project { input, items } = self;
        items.iter_mut().for_each(|(_, e)| e.reset());
        input.reset()
    }
}

impl Reset for Optional<'_> {
    fn reset(&mut self) -> bool {
        // The inner pipeline is compiled afresh for each chunk.
        let Optional {
            input,
            inner: _,
            origin: _,
        } = self;
        input.reset()
    }
}

impl Reset for Unwind<'_> {
    fn reset(&mut self) -> bool {
        let Unwind {
            input,
            expr,
            slot: _,
            dead: _,
            list_slot: _,
            dict,
        } = self;
        expr.reset();
        *dict = Default::default();
        input.reset()
    }
}

impl Reset for Scan<'_> {
    fn reset(&mut self) -> bool {
        let Scan {
            input,
            slot: _,
            source: _,
            label: _,
            check_labels: _,
            candidates,
            at,
        } = self;
        *candidates = None;
        *at = None;
        input.reset()
    }
}

/// An expansion's run state (its input is reset by the caller, when it has a real one).
fn reset_expand(e: &mut Expand<'_>) {
    let Expand {
        input: _,
        from: _,
        rel: _,
        to: _,
        types: _,
        direction: _,
        to_labels: _,
        into: _,
        bind: _,
        distinct_from: _,
        end_labels,
        at,
    } = e;
    *end_labels = Default::default();
    *at = None;
}

impl Reset for Expand<'_> {
    fn reset(&mut self) -> bool {
        reset_expand(self);
        self.input.reset()
    }
}

impl Reset for VarExpand<'_> {
    fn reset(&mut self) -> bool {
        let VarExpand {
            hop,
            min: _,
            max: _,
            at,
        } = self;
        *at = None;
        hop.reset()
    }
}

impl Reset for ExpandCount<'_> {
    fn reset(&mut self) -> bool {
        let ExpandCount {
            input,
            from: _,
            hops,
            slot: _,
            keep_zero: _,
            bound: _,
        } = self;
        for h in hops {
            let CountStep {
                step,
                hop: _,
                filters,
                reads: _,
                passing,
                eager: _,
                tested,
                reverse,
                walked,
                retry_at,
            } = h;
            // The step's input is an inert `Once`, compiled done: left as it is.
            reset_expand(step);
            filters.iter_mut().for_each(|f| f.reset());
            *passing = None;
            *tested = 0;
            *reverse = None;
            *walked = 0;
            *retry_at = 0;
        }
        input.reset()
    }
}

impl Reset for Aggregate<'_> {
    fn reset(&mut self) -> bool {
        let Aggregate {
            input,
            keys,
            aggs,
            output,
        } = self;
        keys.iter_mut().for_each(|(_, e)| e.reset());
        aggs.iter_mut().flat_map(|(_, e)| e).for_each(|e| e.reset());
        *output = None;
        input.reset()
    }
}

impl Reset for Distinct<'_> {
    fn reset(&mut self) -> bool {
        let Distinct {
            input,
            slots: _,
            seen,
            fast,
        } = self;
        *seen = Default::default();
        *fast = Default::default();
        input.reset()
    }
}

impl Reset for Sort<'_> {
    fn reset(&mut self) -> bool {
        let Sort {
            input,
            keys,
            skip: _,
            limit: _,
            output,
            readable: _,
        } = self;
        keys.iter_mut().for_each(|(e, _)| e.reset());
        *output = None;
        input.reset()
    }
}

impl Reset for Skip<'_> {
    fn reset(&mut self) -> bool {
        let Skip {
            input,
            count: _,
            remaining,
        } = self;
        *remaining = None;
        input.reset()
    }
}

impl Reset for Limit<'_> {
    fn reset(&mut self) -> bool {
        let Limit {
            input,
            count: _,
            remaining,
        } = self;
        *remaining = None;
        input.reset()
    }
}
