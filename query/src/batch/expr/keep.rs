//! WHERE straight to the rows kept, for predicates the model's columns answer without values:
//! a conjunction of disjunctions on one node slot of `n.key IS [NOT] NULL`, string predicates
//! against a string constant (`STARTS WITH`, `ENDS WITH`, `CONTAINS`) and comparisons with a
//! constant (`=`, `<>`, `<`, `<=`, `>`, `>=`), with at least one null test, string predicate or
//! disjunction among them (comparisons alone keep the typed kernels of `arith.rs`).
//!
//! WHERE keeps a row when its predicate is true: a conjunction when every conjunct is, a
//! disjunction when one disjunct is (null OR true is true; null OR false is not kept), so each
//! test only has to say whether it is true.
//!
//! - IS [NOT] NULL reads the column's presence (an absent code, the absent bitmap, NaN).
//! - On a string column, a test is decided once per distinct string (a table by code;
//!   `CONTAINS` by one vectorised search over the whole dictionary), then each row is a load.
//! - A comparison of an integer or float column with a constant of its kind compares in place.
//!
//! A string function of the property tested so (`toLower(n.email) ENDS WITH '.org'`) may
//! fail on a number: it qualifies alone only.
//!
//! None of the others can fail on any value (a non-string or an incomparable value is
//! null, never an error), so the conjunction's verdict is the row evaluator's whatever the
//! order of evaluation.

#[allow(unused_imports)]
use super::*;

use crate::ast::BinaryOp;

/// The conjuncts of a WHERE over one node slot, each read from one property.
pub(super) struct Conj {
    slot: usize,
    tests: Vec<(String, Short)>,
    /// The conjuncts, each a disjunction of tests (indices into `tests`).
    clauses: Vec<Vec<usize>>,
    /// Per test, per label index: the verdict per dictionary code of that label's column.
    pass: Vec<Vec<Option<Vec<bool>>>>,
    /// The model base whose column codes `pass` is by (`ModelView::base_generation`; 0: none).
    pass_of: u64,
}

/// Verdicts (cells of `Conj::pass`) kept into the next run of a kept batch tree.
const KEEP_VERDICTS: usize = 1 << 16;

impl Conj {
    /// Ready for another run: the verdicts are per model column, so `keep` drops them when the
    /// next run reads another base; until then a short query run again decides no string
    /// twice. Only a few are kept (`KEEP_VERDICTS`).
    pub(super) fn reset(&mut self) {
        let Conj {
            slot: _,
            tests: _,
            clauses: _,
            pass,
            pass_of,
        } = self;
        let cells: usize = pass.iter().flatten().flatten().map(Vec::len).sum();
        if cells > KEEP_VERDICTS {
            pass.iter_mut().for_each(Vec::clear);
            *pass_of = 0;
        }
    }

    /// `e` as a conjunction of such tests, None when it is anything else.
    pub(super) fn of(e: &CExpr) -> Option<Conj> {
        type Tests = Vec<(String, Short)>;
        /// Conjuncts into `clauses`, each a disjunction of tests.
        fn walk(
            e: &CExpr,
            slot: &mut Option<usize>,
            out: &mut Tests,
            clauses: &mut Vec<Vec<usize>>,
        ) -> bool {
            if let CExpr::And(a, b) = e {
                return walk(a, slot, out, clauses) && walk(b, slot, out, clauses);
            }
            let mut clause = Vec::new();
            if !disjuncts(e, slot, out, &mut clause) {
                return false;
            }
            clauses.push(clause);
            true
        }
        fn disjuncts(
            e: &CExpr,
            slot: &mut Option<usize>,
            out: &mut Tests,
            clause: &mut Vec<usize>,
        ) -> bool {
            if let CExpr::Or(a, b) = e {
                return disjuncts(a, slot, out, clause) && disjuncts(b, slot, out, clause);
            }
            clause.push(out.len());
            test(e, slot, out)
        }
        fn test(e: &CExpr, slot: &mut Option<usize>, out: &mut Tests) -> bool {
            let (x, short) = match e {
                CExpr::IsNull(x, _) => (&**x, Short::of(e)),
                CExpr::Bin(
                    BinaryOp::StartsWith | BinaryOp::EndsWith | BinaryOp::Contains,
                    a,
                    b,
                ) => match (&**a, &**b) {
                    (x, CExpr::Const(Val::Str(_))) | (CExpr::Const(Val::Str(_)), x) => {
                        (x, Short::of(e))
                    }
                    _ => return false,
                },
                // Comparisons give null for incomparable values, never an error.
                CExpr::Bin(
                    BinaryOp::Eq
                    | BinaryOp::Ne
                    | BinaryOp::Lt
                    | BinaryOp::Le
                    | BinaryOp::Gt
                    | BinaryOp::Ge,
                    a,
                    b,
                ) => match (&**a, &**b) {
                    (x, CExpr::Const(_)) | (CExpr::Const(_), x) => (x, Short::of(e)),
                    _ => return false,
                },
                _ => return false,
            };
            // `toLower(n.key) ENDS WITH 'x'` and the like: a test of the property too (not a
            // null test of it: an absent value passes that one, which the tables here do not
            // give).
            let x = match (x, &short) {
                (CExpr::Func(_, args), Some(Short::Folded(_, t)))
                    if matches!(**t, Short::Bin { .. }) =>
                {
                    args.first().unwrap_or(x)
                }
                _ => x,
            };
            let (CExpr::Prop(base, key), Some(short)) = (x, short) else {
                return false;
            };
            let CExpr::Slot(s) = &**base else {
                return false;
            };
            if slot.is_some_and(|t| t != *s) {
                return false;
            }
            *slot = Some(*s);
            out.push((key.clone(), short));
            true
        }
        let mut slot = None;
        let mut tests = Vec::new();
        let mut clauses = Vec::new();
        if !walk(e, &mut slot, &mut tests, &mut clauses) || tests.len() > 16 {
            return None;
        }
        // A string function fails on a number (the others never fail), and a conjunction
        // skips rows an earlier test failed: alone only, so that every row meets it.
        if tests.len() > 1 && tests.iter().any(|(_, t)| matches!(t, Short::Folded(..))) {
            return None;
        }
        let compares_only = tests.iter().all(|(_, t)| match t {
            Short::IsNull(_) | Short::Folded(..) | Short::Not(_) | Short::Logic(..) => false,
            Short::Bin { op, .. } => ordering_test(*op).is_some(),
        });
        if compares_only && clauses.iter().all(|c| c.len() == 1) {
            return None;
        }
        Some(Conj {
            slot: slot?,
            pass: vec![Vec::new(); tests.len()],
            pass_of: 0,
            tests,
            clauses,
        })
    }

    /// WHERE's verdict per row of `ch`; None when the slot holds no node references.
    pub(super) fn keep(
        &mut self,
        bx: &Bx<'_, '_>,
        ch: &Chunk,
    ) -> Result<Option<Vec<bool>>, QueryError> {
        let Some(Col::Nodes(refs)) = ch.cols.get(self.slot) else {
            return Ok(None);
        };
        let base = bx.m.base_generation();
        if self.pass_of != base {
            self.pass.iter_mut().for_each(Vec::clear);
            self.pass_of = base;
        }
        let mut keep = vec![true; refs.len()];
        for clause in &self.clauses {
            if let [t] = clause[..] {
                and_test(bx, refs, &self.tests[t], &mut self.pass[t], &mut keep)?;
                continue;
            }
            let mut any = vec![false; refs.len()];
            for &t in clause {
                // Rows already out, or already in through an earlier disjunct, are not tested.
                let mut holds: Vec<bool> = keep.iter().zip(&any).map(|(k, a)| *k && !*a).collect();
                and_test(bx, refs, &self.tests[t], &mut self.pass[t], &mut holds)?;
                any.iter_mut().zip(&holds).for_each(|(a, h)| *a |= *h);
            }
            keep.iter_mut().zip(&any).for_each(|(k, a)| *k &= *a);
        }
        Ok(Some(keep))
    }
}

/// ANDs one test's verdict per row into `keep` (rows already out may be skipped).
fn and_test(
    bx: &Bx<'_, '_>,
    refs: &[NodeRef],
    (key, short): &(String, Short),
    pass: &mut Vec<Option<Vec<bool>>>,
    keep: &mut [bool],
) -> Result<(), QueryError> {
    {
        {
            if let Some((li, col, row0)) = crate::batch::ops::column_in_place_at(bx, refs, key) {
                // A label scan's chunk: consecutive rows of one column.
                match (col, short) {
                    (ColumnView::Strings { codes, .. }, Short::IsNull(neg)) => {
                        let codes = &codes[row0..row0 + refs.len()];
                        for (k, c) in keep.iter_mut().zip(codes) {
                            *k &= (*c == NO_CODE) != *neg;
                        }
                    }
                    (ColumnView::Strings { codes, dict }, _) => {
                        let table = verdicts(bx, pass, li, key, short, dict);
                        let codes = &codes[row0..row0 + refs.len()];
                        for (k, c) in keep.iter_mut().zip(codes) {
                            *k &= table.get(*c as usize).copied().unwrap_or(false);
                        }
                    }
                    (
                        ColumnView::Integers {
                            values,
                            absent,
                            datetime: false,
                        },
                        Short::Bin {
                            op,
                            c: Val::Int(c),
                            flipped: false,
                        },
                    ) if ordering_test(*op).is_some() => {
                        let holds = ordering_test(*op).unwrap_or(|_| false);
                        let values = &values[row0..row0 + refs.len()];
                        for (i, (k, v)) in keep.iter_mut().zip(values).enumerate() {
                            *k &= holds(v.cmp(c))
                                && (absent.is_empty() || !absent.contains((row0 + i) as u32));
                        }
                    }
                    (
                        ColumnView::Floats(values),
                        Short::Bin {
                            op,
                            c: Val::Float(c),
                            flipped: false,
                        },
                    ) if ordering_test(*op).is_some() && !c.is_nan() => {
                        // NaN marks an absent value: no ordering, so it does not pass.
                        let holds = ordering_test(*op).unwrap_or(|_| false);
                        let values = &values[row0..row0 + refs.len()];
                        for (k, v) in keep.iter_mut().zip(values) {
                            *k &= v.partial_cmp(c).is_some_and(holds);
                        }
                    }
                    (col, _) => {
                        for (i, k) in keep.iter_mut().enumerate() {
                            if *k {
                                *k = value_passes(short, Bx::column_val(&col, row0 + i))?;
                            }
                        }
                    }
                }
                return Ok(());
            }
            let mut reader = PropReader::new(key);
            // Nothing touched and a string column for the first node's label: a node of that
            // label is one popcount from its row, and the label's verdicts are at hand (taken
            // out of the memo for the loop, put back after it).
            let fast = match bx.m.untouched() {
                true => refs.iter().find_map(|r| match reader.locate(bx, *r) {
                    Found::Column(li, ColumnView::Strings { codes, dict }, _) => {
                        Some((li, bx.labels[li], codes, dict))
                    }
                    _ => None,
                }),
                false => None,
            };
            let fast = fast.map(|(li, label, codes, dict)| {
                if !matches!(short, Short::IsNull(_)) {
                    verdicts(bx, pass, li, key, short, dict);
                }
                let table = pass.get_mut(li).and_then(Option::take).unwrap_or_default();
                (li, label, codes, table)
            });
            let mut string =
                |li: usize, codes: &[u32], dict: &[String], row: usize| match (codes[row], short) {
                    (c, Short::IsNull(neg)) => (c == NO_CODE) != *neg,
                    (NO_CODE, _) => false,
                    (c, _) => verdicts(bx, pass, li, key, short, dict)[c as usize],
                };
            for (k, r) in keep.iter_mut().zip(refs) {
                if !*k {
                    continue;
                }
                if let Some((_, label, codes, table)) = &fast {
                    if let Some(row) = (*r < bx.n).then(|| label.row_of(*r)).flatten() {
                        *k = match (codes[row], short) {
                            (c, Short::IsNull(neg)) => (c == NO_CODE) != *neg,
                            (c, _) => table.get(c as usize).copied().unwrap_or(false),
                        };
                        continue;
                    }
                }
                *k = match reader.locate(bx, *r) {
                    Found::Column(li, ColumnView::Strings { codes, dict }, row) => {
                        string(li, codes, dict, row)
                    }
                    Found::Column(_, col, row) => value_passes(short, Bx::column_val(&col, row))?,
                    Found::Absent => value_passes(short, Val::Null)?,
                    Found::Slow if *r == NULL => value_passes(short, Val::Null)?,
                    Found::Slow => value_passes(short, bx.slow_prop(*r, key)?)?,
                };
            }
            if let Some((li, _, _, table)) = fast {
                if !table.is_empty() {
                    pass[li] = Some(table);
                }
            }
        }
    }
    Ok(())
}

/// A comparison operator as a test on the ordering of two comparable values of one kind
/// (None: not a comparison).
fn ordering_test(op: BinaryOp) -> Option<fn(std::cmp::Ordering) -> bool> {
    use std::cmp::Ordering;
    Some(match op {
        BinaryOp::Eq => |o| o == Ordering::Equal,
        BinaryOp::Ne => |o| o != Ordering::Equal,
        BinaryOp::Lt => |o| o == Ordering::Less,
        BinaryOp::Le => |o| o != Ordering::Greater,
        BinaryOp::Gt => |o| o == Ordering::Greater,
        BinaryOp::Ge => |o| o != Ordering::Less,
        _ => return None,
    })
}

/// Whether one value passes the test (WHERE's verdict: null and false do not).
fn value_passes(short: &Short, v: Val) -> Result<bool, QueryError> {
    Ok(short.apply(v)?.truthy()? == Some(true))
}

/// The test's verdict per code of label `li`'s string column (computed at its first use).
fn verdicts<'p>(
    bx: &Bx<'_, '_>,
    pass: &'p mut Vec<Option<Vec<bool>>>,
    li: usize,
    key: &str,
    short: &Short,
    dict: &[String],
) -> &'p [bool] {
    if pass.len() <= li {
        pass.resize(li + 1, None);
    }
    pass[li].get_or_insert_with(|| {
        if let Short::Bin {
            op,
            c: Val::Str(needle),
            flipped: false,
        } = short
        {
            let label = &bx.labels[li];
            let table = match op {
                BinaryOp::Contains => label.dict_containing(key, needle),
                BinaryOp::StartsWith => label.dict_affixed(key, needle, false),
                BinaryOp::EndsWith => label.dict_affixed(key, needle, true),
                _ => None,
            };
            if let Some(t) = table {
                return t;
            }
        }
        // The string predicates without building values, anything else through the evaluator
        // (which cannot fail on these tests).
        dict.iter()
            .map(|s| {
                short
                    .apply_str(s)
                    .unwrap_or_else(|| value_passes(short, Val::Str(s.clone())).unwrap_or(false))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelGraph;
    use crate::{parse, run_read, run_write, Limits, ModelSwitch, Params};

    fn prop(slot: usize, key: &str) -> Box<CExpr> {
        Box::new(CExpr::Prop(Box::new(CExpr::Slot(slot)), key.into()))
    }

    fn text(s: &str) -> Box<CExpr> {
        Box::new(CExpr::Const(Val::Str(s.into())))
    }

    #[test]
    fn conjunctions_of_null_tests_and_string_predicates_on_one_node_qualify() {
        let is_null = |s, k| CExpr::IsNull(prop(s, k), false);
        let starts = |s, k, c| CExpr::Bin(BinaryOp::StartsWith, prop(s, k), text(c));
        let and = |a, b| CExpr::And(Box::new(a), Box::new(b));
        let c = Conj::of(&and(is_null(0, "email"), starts(0, "name", "A"))).expect("qualifies");
        assert_eq!(c.slot, 0);
        assert_eq!(c.tests.len(), 2);
        let flipped = CExpr::Bin(BinaryOp::Contains, text("Ada Lovelace"), prop(1, "name"));
        assert!(Conj::of(&flipped).is_some());
        // Two nodes, a non-string constant, another operator, a disjunction: not this kernel.
        assert!(Conj::of(&and(is_null(0, "email"), is_null(1, "email"))).is_none());
        let number = CExpr::Bin(
            BinaryOp::StartsWith,
            prop(0, "name"),
            Box::new(CExpr::Const(Val::Int(1))),
        );
        assert!(Conj::of(&number).is_none());
        // Disjunctions on the node (of comparisons too: the typed kernels have no OR).
        let or = CExpr::Or(Box::new(is_null(0, "a")), Box::new(is_null(0, "b")));
        let c = Conj::of(&or).expect("qualifies");
        assert_eq!(c.clauses, vec![vec![0, 1]]);
        let c = Conj::of(&and(or, starts(0, "name", "A"))).expect("qualifies");
        assert_eq!(c.clauses, vec![vec![0, 1], vec![2]]);
        let two = CExpr::Or(Box::new(is_null(0, "a")), Box::new(is_null(1, "b")));
        assert!(Conj::of(&two).is_none());
        // Comparisons join a null test or a string predicate; alone they keep the typed
        // kernels.
        let above = |k| {
            CExpr::Bin(
                BinaryOp::Ge,
                prop(0, k),
                Box::new(CExpr::Const(Val::Float(0.5))),
            )
        };
        assert!(Conj::of(&above("score")).is_none());
        assert!(Conj::of(&and(above("score"), above("amount"))).is_none());
        assert!(Conj::of(&and(above("score"), is_null(0, "email"))).is_some());
        let either = CExpr::Or(Box::new(above("score")), Box::new(above("amount")));
        assert!(Conj::of(&either).is_some());
    }

    /// The kernel's rows are the row path's, on columns of every kind (strings, numbers,
    /// mixed values, absent keys), with nothing touched and with every other node touched.
    #[test]
    fn where_from_the_columns_matches_the_row_path() {
        let setup = "CREATE (:P {name: 'Ada Lovelace', email: 'ada@acme.test', n: 1, m: 'x'}), \
             (:P {name: 'Alan', email: 'alan@mail.test', n: 2.5, m: 2}), \
             (:P {name: 'Ünï', n: 3}), (:P:Q {name: 'ab', email: ''}), (:P {email: 'b@acme.test'}), \
             (:Q {name: 'Ada', email: 'q@acme.test'}), (:P {name: 'xab', m: ['l']})";
        let mut g = ModelGraph::new();
        run_write(
            &mut g,
            &parse(setup).expect("parses"),
            &Params::new(),
            &Limits::default(),
        )
        .expect("loads");
        let model = svc_engine::ModelView::from_graph(&g).expect("model");
        // Every other node of the base read through the graph instead of the columns.
        let odd = (0..model.len() as u32).filter(|d| d % 2 == 1);
        let half = model.with_touched(odd.map(|d| model.id(d).0).collect::<Vec<_>>());
        let rows = ModelSwitch::rows(&g);
        let sources = [
            ModelSwitch::with_model(&g, model),
            ModelSwitch::with_model(&g, half),
        ];
        for w in [
            "p.email IS NULL",
            "p.email IS NOT NULL",
            "p.n IS NULL",
            "p.m IS NOT NULL",
            "p.nothing IS NULL",
            "p.email ENDS WITH '@acme.test'",
            "p.email CONTAINS 'a'",
            "p.email CONTAINS ''",
            "p.name STARTS WITH 'A'",
            "p.name STARTS WITH ''",
            "p.name CONTAINS 'ab'",
            "p.name CONTAINS 'ï'",
            "p.m STARTS WITH 'x'",
            "p.n ENDS WITH '1'",
            "'Ada Lovelace' STARTS WITH p.name",
            "'xab' ENDS WITH p.name",
            "p.email IS NOT NULL AND p.name IS NOT NULL AND p.name CONTAINS 'a'",
            "p.email ENDS WITH '.test' AND p.n IS NULL",
            "p.n > 1 AND p.name IS NOT NULL",
            "p.n = 3 AND p.email IS NULL",
            "p.n <> 1 AND p.name CONTAINS 'a'",
            "p.n <= 2.5 AND p.name STARTS WITH ''",
            "1 < p.n AND p.email IS NULL",
            "p.m = 'x' AND p.name CONTAINS 'a'",
            "p.m >= 2 AND p.m IS NOT NULL",
            "p.name > 'Ada' AND p.email IS NOT NULL",
            "p.n <> 0.0 / 0.0 AND p.name IS NOT NULL",
            "p.n = null AND p.name IS NOT NULL",
            "p.name STARTS WITH 'A' OR p.name STARTS WITH 'x'",
            "p.email IS NULL OR p.email ENDS WITH '@mail.test'",
            "p.n > 2 OR p.n < 2",
            "p.n = null OR p.name CONTAINS 'a'",
            "p.m = 'x' OR p.m = 2 OR p.m IS NULL",
            "(p.name CONTAINS 'a' OR p.email IS NULL) AND (p.n >= 1 OR p.name STARTS WITH 'x')",
            "p.email IS NOT NULL AND (p.name ENDS WITH 'n' OR p.name ENDS WITH 'b')",
        ] {
            for label in ["P", "Q"] {
                let q = format!("MATCH (p:{label}) WHERE {w} RETURN p.name, p.email");
                let stmt = parse(&q).expect("parses");
                let want = run_read(&rows, &stmt, &Params::new(), &Limits::default())
                    .map(|r| format!("{:?}", r.rows));
                for s in &sources {
                    let got = run_read(s, &stmt, &Params::new(), &Limits::default())
                        .map(|r| format!("{:?}", r.rows));
                    assert_eq!(format!("{got:?}"), format!("{want:?}"), "{q}");
                }
            }
        }
    }
}
