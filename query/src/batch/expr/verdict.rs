//! Verdict kernels: a boolean expression built of null tests, `IN` and NOT / AND / OR / XOR
//! computed a chunk at a time as three-valued verdicts (`T_NULL`, `T_FALSE`, `T_TRUE`), out as
//! dictionary codes (so a grouping or DISTINCT on it goes by code) or straight to WHERE's rows.
//!
//! - `x IS [NOT] NULL` of a node property reads the column's presence (an absent code, the
//!   absent bitmap, NaN): no value is built. `coalesce(a, b, ...)` is null exactly when every
//!   argument is, so its null test is the AND of theirs (IS NOT NULL: the OR). Of anything
//!   else, the operand's column is tested (a dictionary column once per code).
//! - `x IN list` borrows the list column (a slot is not copied; the row evaluator clones each
//!   row's list twice) and applies the evaluator's rule: true when an element equals `x`,
//!   else null when a comparison was unknown (`null IN [1]`, `1 IN [null, 2]`), else false.
//! - Any other operand is an expression of its own with its kernels (typed comparisons,
//!   per-string memos), its value read as a verdict.
//!
//! AND / OR evaluate their right side only on the rows the left leaves open, when that side
//! is evaluated row by row (where the evaluator would have skipped it). Anything that fails
//! here (a non-boolean operand, an error of an operand the evaluator might not have reached)
//! sends the chunk back to the row evaluator, which decides the answer or the error.

#[allow(unused_imports)]
use super::*;

use std::borrow::Cow;

use svc_engine::Value;

use super::arith::{T_FALSE, T_NULL, T_TRUE};
use super::strings::Logic;
use crate::ast::BinaryOp;
use crate::functions::Func;
use crate::value::equals;

/// Deepest nesting compiled (deeper expressions keep the row evaluator; bounds the recursion).
const MAX_DEPTH: usize = 32;

/// A boolean expression as verdict kernels.
pub(super) enum V {
    /// `x IS NULL` (false) or `x IS NOT NULL` (true).
    Null(Src, bool),
    Not(Box<V>),
    /// The right side's slots (read when it runs on a subset of the rows).
    Logic(Logic, Box<V>, Box<V>, Vec<usize>),
    /// `x IN list`.
    In(Box<BExpr>, Box<BExpr>),
    /// Any other expression giving a boolean or null.
    Leaf(Box<BExpr>),
}

/// The operand of a null test.
pub(super) enum Src {
    /// `n.key` of a slot (`other` evaluates it when the slot holds no node references).
    Prop {
        slot: usize,
        key: String,
        other: Box<BExpr>,
    },
    /// Null when every argument is.
    Coalesce(Vec<Src>),
    Expr(Box<BExpr>),
}

impl V {
    /// `e` as verdict kernels when it is a null test, `IN` or logic at its top (None for
    /// anything else: the expression's other kernels serve it).
    pub(super) fn root(e: &CExpr, width: usize) -> Option<V> {
        match e {
            CExpr::IsNull(..)
            | CExpr::Not(_)
            | CExpr::And(..)
            | CExpr::Or(..)
            | CExpr::Xor(..)
            | CExpr::Bin(BinaryOp::In, ..) => V::of(e, width, 0),
            _ => None,
        }
    }

    fn of(e: &CExpr, width: usize, depth: usize) -> Option<V> {
        if depth > MAX_DEPTH {
            return None;
        }
        let v = |x: &CExpr| V::of(x, width, depth + 1).map(Box::new);
        let logic = |l, a: &CExpr, b: &CExpr| {
            let mut reads = b.slot_list();
            reads.sort_unstable();
            reads.dedup();
            Some(V::Logic(l, v(a)?, v(b)?, reads))
        };
        Some(match e {
            CExpr::IsNull(x, neg) => V::Null(Src::of(x, width, depth + 1)?, *neg),
            CExpr::Not(x) => V::Not(v(x)?),
            CExpr::And(a, b) => logic(Logic::And, a, b)?,
            CExpr::Or(a, b) => logic(Logic::Or, a, b)?,
            CExpr::Xor(a, b) => logic(Logic::Xor, a, b)?,
            CExpr::Bin(BinaryOp::In, a, b) => V::In(
                Box::new(BExpr::new(a, width)),
                Box::new(BExpr::new(b, width)),
            ),
            other => V::Leaf(Box::new(BExpr::new(other, width))),
        })
    }

    /// Whether every part is a null test of node properties (nothing is evaluated: a
    /// single-property expression's per-string memo is no better).
    pub(super) fn presence_only(&self) -> bool {
        match self {
            V::Null(s, _) => s.presence_only(),
            V::Not(x) => x.presence_only(),
            V::Logic(_, a, b, _) => a.presence_only() && b.presence_only(),
            V::In(..) | V::Leaf(_) => false,
        }
    }

    /// Whether some part is evaluated row by row by the evaluator (worth skipping the rows
    /// already decided).
    fn row_by_row(&self) -> bool {
        match self {
            V::Null(s, _) => s.row_by_row(),
            V::Not(x) => x.row_by_row(),
            V::Logic(_, a, b, _) => a.row_by_row() || b.row_by_row(),
            V::In(x, y) => x.row_by_row() || y.row_by_row(),
            V::Leaf(x) => x.row_by_row(),
        }
    }

    /// Forgets what the last run learnt (see `BExpr::reset`).
    pub(super) fn reset(&mut self) {
        match self {
            V::Null(s, _) => s.reset(),
            V::Not(x) => x.reset(),
            V::Logic(_, a, b, _) => {
                a.reset();
                b.reset();
            }
            V::In(x, y) => {
                x.reset();
                y.reset();
            }
            V::Leaf(x) => x.reset(),
        }
    }

    /// The verdict per row of `ch` (a whole expression's: counted in tests).
    pub(super) fn eval_root(&mut self, bx: &Bx<'_, '_>, ch: &Chunk) -> Result<Vec<u8>, QueryError> {
        let t = self.eval(bx, ch)?;
        #[cfg(test)]
        ROOTS.with(|r| r.set(r.get() + 1));
        Ok(t)
    }

    /// The verdict per row of `ch`.
    fn eval(&mut self, bx: &Bx<'_, '_>, ch: &Chunk) -> Result<Vec<u8>, QueryError> {
        match self {
            V::Null(s, neg) => {
                let nulls = s.nulls(bx, ch)?;
                // IS NULL: true on a null; IS NOT NULL: true on a value.
                let neg = *neg;
                Ok(nulls
                    .iter()
                    .map(|n| T_FALSE + u8::from(*n != neg))
                    .collect())
            }
            V::Not(x) => {
                let mut t = x.eval(bx, ch)?;
                // T_FALSE <-> T_TRUE (1 <-> 2), T_NULL stays.
                t.iter_mut()
                    .for_each(|v| *v = if *v == T_NULL { T_NULL } else { 3 - *v });
                Ok(t)
            }
            V::Logic(l, a, b, reads) => {
                let left = a.eval(bx, ch)?;
                let decides = match l {
                    Logic::And => Some(T_FALSE),
                    Logic::Or => Some(T_TRUE),
                    Logic::Xor => None,
                };
                let right = match decides {
                    Some(d) if left.iter().all(|v| *v == d) => return Ok(left),
                    Some(d) if b.row_by_row() && left.contains(&d) => {
                        // Only the open rows, in a chunk of just the slots the side reads;
                        // a decided row's right verdict does not matter.
                        let open: Vec<u32> = (0..left.len() as u32)
                            .filter(|i| left[*i as usize] != d)
                            .collect();
                        let mut sub = Chunk::new(open.len(), ch.cols.len());
                        for s in reads.iter() {
                            if let (Some(to), Some(from)) = (sub.cols.get_mut(*s), ch.cols.get(*s))
                            {
                                *to = from.gather(&open);
                            }
                        }
                        let part = b.eval(bx, &sub)?;
                        let mut right = vec![T_NULL; left.len()];
                        for (i, v) in open.iter().zip(part) {
                            right[*i as usize] = v;
                        }
                        right
                    }
                    _ => b.eval(bx, ch)?,
                };
                let table = match l {
                    Logic::And => &AND,
                    Logic::Or => &OR,
                    Logic::Xor => &XOR,
                };
                Ok(left
                    .iter()
                    .zip(&right)
                    .map(|(x, y)| table[usize::from(*x)][usize::from(*y)])
                    .collect())
            }
            V::In(x, y) => {
                // A constant side is read as it is, a slot's column borrowed.
                let xs = match x.constant() {
                    Some(_) => None,
                    None => Some(x.col_ref(bx, ch)?),
                };
                let ys = match y.constant() {
                    Some(_) => None,
                    None => Some(y.col_ref(bx, ch)?),
                };
                in_verdicts(
                    bx,
                    Side::of(x.constant(), &xs),
                    Side::of(y.constant(), &ys),
                    ch.len,
                )
            }
            V::Leaf(x) => x.verdicts(bx, ch),
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Chunks whose verdicts the kernels gave (tests check that they run).
    static ROOTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Three-valued AND / OR / XOR by verdict (`T_NULL`, `T_FALSE`, `T_TRUE`).
const AND: [[u8; 3]; 3] = [
    [T_NULL, T_FALSE, T_NULL],
    [T_FALSE, T_FALSE, T_FALSE],
    [T_NULL, T_FALSE, T_TRUE],
];
const OR: [[u8; 3]; 3] = [
    [T_NULL, T_NULL, T_TRUE],
    [T_NULL, T_FALSE, T_TRUE],
    [T_TRUE, T_TRUE, T_TRUE],
];
const XOR: [[u8; 3]; 3] = [
    [T_NULL, T_NULL, T_NULL],
    [T_NULL, T_FALSE, T_TRUE],
    [T_NULL, T_TRUE, T_FALSE],
];

impl Src {
    fn of(x: &CExpr, width: usize, depth: usize) -> Option<Src> {
        if depth > MAX_DEPTH {
            return None;
        }
        Some(match x {
            CExpr::Prop(base, key) if matches!(**base, CExpr::Slot(_)) => {
                let CExpr::Slot(slot) = **base else {
                    return None;
                };
                Src::Prop {
                    slot,
                    key: key.clone(),
                    other: Box::new(BExpr::new(x, width)),
                }
            }
            CExpr::Func(Func::Coalesce, args) => Src::Coalesce(
                args.iter()
                    .map(|a| Src::of(a, width, depth + 1))
                    .collect::<Option<_>>()?,
            ),
            other => Src::Expr(Box::new(BExpr::new(other, width))),
        })
    }

    fn presence_only(&self) -> bool {
        match self {
            Src::Prop { .. } => true,
            Src::Coalesce(args) => args.iter().all(Src::presence_only),
            Src::Expr(_) => false,
        }
    }

    fn row_by_row(&self) -> bool {
        match self {
            Src::Prop { .. } => false,
            Src::Coalesce(args) => args.iter().any(Src::row_by_row),
            Src::Expr(x) => x.row_by_row(),
        }
    }

    fn reset(&mut self) {
        match self {
            Src::Prop { other, .. } => other.reset(),
            Src::Coalesce(args) => args.iter_mut().for_each(Src::reset),
            Src::Expr(x) => x.reset(),
        }
    }

    /// Per row, whether the operand is null.
    fn nulls(&mut self, bx: &Bx<'_, '_>, ch: &Chunk) -> Result<Vec<bool>, QueryError> {
        match self {
            Src::Prop { slot, key, other } => match ch.cols.get(*slot) {
                Some(Col::Nodes(refs)) => absent(bx, refs, key),
                Some(Col::Null) | None => Ok(vec![true; ch.len]),
                _ => Ok(col_nulls(&other.eval(bx, ch)?, ch.len)),
            },
            Src::Coalesce(args) => {
                let mut all = vec![true; ch.len];
                for a in args {
                    if !all.contains(&true) {
                        break;
                    }
                    let n = a.nulls(bx, ch)?;
                    all.iter_mut().zip(&n).for_each(|(x, y)| *x &= *y);
                }
                Ok(all)
            }
            Src::Expr(x) => Ok(col_nulls(&*x.col_ref(bx, ch)?, ch.len)),
        }
    }
}

/// Whether row `row` of a model column has no value.
#[inline]
fn column_null(col: &ColumnView<'_>, row: usize) -> bool {
    match col {
        ColumnView::Values(v) => v
            .get(row)
            .is_none_or(|x| x.as_ref().is_none_or(|x| matches!(x, Value::Null))),
        other => other.is_absent(row),
    }
}

/// Per node, whether it has no value for `key` (no value built for any).
fn absent(bx: &Bx<'_, '_>, refs: &[NodeRef], key: &str) -> Result<Vec<bool>, QueryError> {
    let n = refs.len();
    if let Some((_, col, row0)) = crate::batch::ops::column_in_place_at(bx, refs, key) {
        // A label scan's chunk: consecutive rows of one column.
        let end = row0 + n;
        match col {
            ColumnView::Strings { codes, .. } if codes.len() >= end => {
                return Ok(codes[row0..end].iter().map(|c| *c == NO_CODE).collect());
            }
            ColumnView::Floats(v) if v.len() >= end => {
                return Ok(v[row0..end].iter().map(|f| f.is_nan()).collect());
            }
            ColumnView::Integers { values, absent, .. } if values.len() >= end => {
                let mut out = vec![false; n];
                for r in absent.range(row0 as u32..end as u32) {
                    if let Some(o) = out.get_mut(r as usize - row0) {
                        *o = true;
                    }
                }
                return Ok(out);
            }
            col => return Ok((row0..end).map(|r| column_null(&col, r)).collect()),
        }
    }
    let mut reader = PropReader::new(key);
    refs.iter()
        .map(|r| {
            Ok(match reader.locate(bx, *r) {
                Found::Column(_, col, row) => column_null(&col, row),
                Found::Absent => true,
                Found::Slow if *r == NULL => true,
                Found::Slow => bx.slow_prop(*r, key)?.is_null(),
            })
        })
        .collect()
}

/// Per row, whether the column's value is null.
fn col_nulls(c: &Col, len: usize) -> Vec<bool> {
    match c {
        Col::Null => vec![true; len],
        Col::Nodes(v) => v.iter().map(|r| *r == NULL).collect(),
        Col::Dict { codes, dict } => {
            let table: Vec<bool> = dict.vals().iter().map(Val::is_null).collect();
            codes
                .iter()
                .map(|c| table.get(*c as usize).copied().unwrap_or(true))
                .collect()
        }
        Col::Vals(v) => v.iter().map(Val::is_null).collect(),
        Col::Rels(_) => vec![false; len],
    }
}

/// A value's verdict: a boolean or null (anything else is an error, as in the evaluator).
#[inline]
fn tri(v: &Val) -> Result<u8, QueryError> {
    Ok(match v.truthy()? {
        None => T_NULL,
        Some(false) => T_FALSE,
        Some(true) => T_TRUE,
    })
}

/// A column of booleans and nulls as verdicts (a dictionary column once per code met).
pub(super) fn col_verdicts(bx: &Bx<'_, '_>, c: &Col, len: usize) -> Result<Vec<u8>, QueryError> {
    match c {
        Col::Null => Ok(vec![T_NULL; len]),
        // Once per code met (an earlier chunk's non-boolean not met here is no error).
        Col::Dict { codes, dict } => per_code(codes, &dict.vals(), tri),
        Col::Vals(v) => v.iter().map(tri).collect(),
        Col::Nodes(_) | Col::Rels(_) => (0..len).map(|i| tri(&cell(bx, c, i))).collect(),
    }
}

/// `a IN b` as the evaluator decides it (`eval::binary`), on borrowed values.
pub(super) fn in_list(a: &Val, b: &Val) -> Result<u8, QueryError> {
    match b {
        Val::Null => Ok(T_NULL),
        // A string against strings: their text (`equals` of a string and a non-null
        // non-string is false).
        Val::List(items) if matches!(a, Val::Str(_)) => {
            let Val::Str(a) = a else {
                return Ok(T_NULL);
            };
            let mut unknown = false;
            for item in items {
                match item {
                    Val::Str(s) if s == a => return Ok(T_TRUE),
                    Val::Null => unknown = true,
                    _ => {}
                }
            }
            Ok(if unknown { T_NULL } else { T_FALSE })
        }
        Val::List(items) => {
            let mut unknown = false;
            for item in items {
                match equals(a, item) {
                    Some(true) => return Ok(T_TRUE),
                    None => unknown = true,
                    Some(false) => {}
                }
            }
            Ok(if unknown { T_NULL } else { T_FALSE })
        }
        other => Err(QueryError::type_err(format!(
            "IN needs a list on its right, got a {}",
            other.type_name()
        ))),
    }
}

/// One row's value of a column, borrowed where the column holds it.
fn val_at<'c>(bx: &Bx<'_, '_>, c: &'c Col, vals: Option<&'c [Val]>, i: usize) -> Cow<'c, Val> {
    match (c, vals) {
        (Col::Vals(v), _) => Cow::Borrowed(&v[i]),
        (Col::Dict { codes, .. }, Some(d)) => match d.get(codes[i] as usize) {
            Some(v) => Cow::Borrowed(v),
            None => Cow::Owned(Val::Null),
        },
        _ => Cow::Owned(cell(bx, c, i)),
    }
}

/// One side of `IN`: a constant (no column built for it) or a column.
enum Side<'c> {
    One(&'c Val),
    Col(&'c Col),
}

impl<'c> Side<'c> {
    fn of(c: Option<&'c Val>, col: &'c Option<Cow<'_, Col>>) -> Side<'c> {
        match (c, col) {
            (Some(v), _) => Side::One(v),
            (None, Some(col)) => Side::Col(col),
            (None, None) => Side::One(&Val::Null),
        }
    }

    /// The column's dictionary values, if it has them.
    fn dict(&self) -> Option<std::cell::Ref<'c, Vec<Val>>> {
        match self {
            Side::Col(Col::Dict { dict, .. }) => Some(dict.vals()),
            _ => None,
        }
    }

    /// Row `i`'s value (`d`: the column's dictionary values).
    fn at<'d>(&'d self, bx: &Bx<'_, '_>, d: Option<&'d [Val]>, i: usize) -> Cow<'d, Val> {
        match self {
            Side::One(v) => Cow::Borrowed(*v),
            Side::Col(c) => val_at(bx, c, d, i),
        }
    }
}

/// `x IN y` per row. A constant against a dictionary column is decided once per code.
fn in_verdicts<'c>(
    bx: &Bx<'_, '_>,
    x: Side<'c>,
    y: Side<'c>,
    len: usize,
) -> Result<Vec<u8>, QueryError> {
    match (x, y) {
        (Side::One(x), Side::One(y)) => Ok(vec![in_list(x, y)?; len]),
        (Side::One(x), Side::Col(Col::Dict { codes, dict })) => {
            per_code(codes, &dict.vals(), |y| in_list(x, y))
        }
        (Side::Col(Col::Dict { codes, dict }), Side::One(y)) => {
            per_code(codes, &dict.vals(), |x| in_list(x, y))
        }
        (Side::One(x), Side::Col(Col::Vals(v))) => v.iter().map(|y| in_list(x, y)).collect(),
        (Side::Col(Col::Vals(v)), Side::One(y)) => v.iter().map(|x| in_list(x, y)).collect(),
        (x, y) => {
            let (xd, yd) = (x.dict(), y.dict());
            let (xd, yd) = (
                xd.as_deref().map(Vec::as_slice),
                yd.as_deref().map(Vec::as_slice),
            );
            (0..len)
                .map(|i| in_list(&x.at(bx, xd, i), &y.at(bx, yd, i)))
                .collect()
        }
    }
}

/// `f` of each row's dictionary value, computed once per code met.
fn per_code(
    codes: &[u32],
    vals: &[Val],
    f: impl Fn(&Val) -> Result<u8, QueryError>,
) -> Result<Vec<u8>, QueryError> {
    // u8::MAX: not computed yet.
    let mut memo = vec![u8::MAX; vals.len()];
    let mut out = Vec::with_capacity(codes.len());
    for c in codes {
        let c = *c as usize;
        let t = match memo.get(c) {
            Some(&u8::MAX) => {
                let t = f(vals.get(c).unwrap_or(&Val::Null))?;
                memo[c] = t;
                t
            }
            Some(t) => *t,
            None => T_NULL,
        };
        out.push(t);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernels' tables and `IN` are the evaluator's, on every pair of edge values.
    #[test]
    fn logic_and_membership_are_the_evaluators() {
        use crate::{parse, run_read, Limits, ModelSwitch, Params};
        let g = crate::model::ModelGraph::new();
        let rows = ModelSwitch::rows(&g);
        let lits = ["null", "false", "true"];
        for (l, table) in [("AND", &AND), ("OR", &OR), ("XOR", &XOR)] {
            for (i, a) in lits.iter().enumerate() {
                for (j, b) in lits.iter().enumerate() {
                    let q = format!("RETURN {a} {l} {b} AS v");
                    let r = run_read(
                        &rows,
                        &parse(&q).expect("parses"),
                        &Params::new(),
                        &Limits::default(),
                    )
                    .expect("runs");
                    let want = ["Null", "Bool(false)", "Bool(true)"][usize::from(table[i][j])];
                    assert!(
                        format!("{:?}", r.rows[0][0]).contains(want),
                        "{q}: {:?}",
                        r.rows
                    );
                }
            }
        }
        let items = [
            Val::Null,
            Val::Int(1),
            Val::Float(1.0),
            Val::Str("a".into()),
            Val::List(vec![]),
            Val::List(vec![Val::Int(1)]),
            Val::List(vec![Val::Null, Val::Int(2)]),
            Val::List(vec![Val::Int(1), Val::Null]),
            Val::List(vec![Val::Str("a".into()), Val::Float(f64::NAN)]),
            Val::List(vec![Val::List(vec![Val::Null])]),
            Val::List(vec![Val::List(vec![Val::Int(1)])]),
            Val::Str("b".into()),
            Val::List(vec![Val::Str("b".into()), Val::Int(1)]),
            Val::List(vec![Val::Str("a".into()), Val::Null]),
            Val::List(vec![Val::Null, Val::Str("a".into())]),
            Val::List(vec![Val::Int(1), Val::List(vec![]), Val::Bool(true)]),
            Val::DateTime(0),
            Val::List(vec![Val::DateTime(0), Val::Str("b".into())]),
            Val::Float(f64::NAN),
        ];
        for a in &items {
            for b in &items {
                let want =
                    crate::eval::binary(BinaryOp::In, a.clone(), b.clone()).and_then(|v| tri(&v));
                let ours = in_list(a, b);
                assert_eq!(
                    format!("{:?}", ours.ok()),
                    format!("{:?}", want.ok()),
                    "{a:?} IN {b:?}"
                );
            }
        }
    }

    /// The kernels answer (no chunk back to the row evaluator) and as the row path does:
    /// as group keys, values and WHERE, on columns in place, node by node after an
    /// expansion, and with every other node read through the graph.
    #[test]
    fn verdict_kernels_run_and_answer_as_the_row_path() {
        use crate::fuzzing::fixture_models;
        use crate::{parse, run_read, Limits, ModelSwitch, Params};
        let (plain, _) = fixture_models();
        let model = svc_engine::ModelView::from_graph(&plain).expect("model");
        let odd = (0..model.len() as u32).filter(|d| d % 2 == 1);
        let half = model.with_touched(odd.map(|d| model.id(d).0).collect::<Vec<_>>());
        let rows = ModelSwitch::rows(&plain);
        let sources = [
            ModelSwitch::with_model(&plain, model),
            ModelSwitch::with_model(&plain, half),
        ];
        for q in [
            "MATCH (c:Customer) RETURN coalesce(c.email, c.phone) IS NULL AS k, count(*) ORDER BY k",
            "MATCH (c:Customer) RETURN coalesce(c.phone, c.score, c.city) IS NOT NULL AS k, count(*) ORDER BY k",
            "MATCH (c:Customer) RETURN c.score IS NULL AS k, count(*) ORDER BY k",
            "MATCH (c:Customer) RETURN c.name, c.score > 70 OR c.email IS NULL AS k ORDER BY c.name",
            "MATCH (c:Customer) RETURN c.name, NOT (c.tags IS NULL) XOR c.lastSeen IS NULL AS k ORDER BY c.name",
            "MATCH (c:Customer) WHERE coalesce(c.phone, c.externalId) IS NULL RETURN c.name ORDER BY c.name",
            "MATCH (c:Customer)-[:OWNS]->(o:Opportunity) RETURN c.city IS NULL OR o.score > 0.5 AS k, count(*) ORDER BY k",
            "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(t:Touchpoint) RETURN coalesce(t.channel, c.phone) IS NULL AS k, count(*) ORDER BY k",
            "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(t:Touchpoint) WITH c, collect(t.channel) AS l WHERE 'web' IN l RETURN c.name ORDER BY c.name",
            "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(t:Touchpoint) WITH c, collect(t.channel) + [null] AS l RETURN c.name, 'email' IN l AS k ORDER BY c.name",
            "MATCH (c:Customer) OPTIONAL MATCH (c)-[:OWNS]->(o:Opportunity) RETURN o.amount IS NULL AS k, count(*) ORDER BY k",
            "MATCH (c:Customer) RETURN c.city IN ['Paris', null] OR c.score IS NULL AS k, count(*) ORDER BY k",
            "MATCH (c:Customer) RETURN c.name, c.score IN [90, 60.5] AND c.email IS NOT NULL AS k ORDER BY c.name",
            "MATCH (c:Customer) RETURN c.name, 'vip' IN CASE WHEN c.score > 70 THEN ['vip'] ELSE null END OR c.phone IS NULL AS k ORDER BY c.name",
            "MATCH (c:Customer) RETURN c.name, 'beta' IN c.tags XOR c.city IN [c.name, 'Rome'] AS k ORDER BY c.name",
        ] {
            let stmt = parse(q).expect("parses");
            let want = run_read(&rows, &stmt, &Params::new(), &Limits::default())
                .map(|r| format!("{:?}", r.rows));
            for s in &sources {
                let before = ROOTS.with(|r| r.get());
                let got = run_read(s, &stmt, &Params::new(), &Limits::default())
                    .map(|r| format!("{:?}", r.rows));
                assert_eq!(format!("{got:?}"), format!("{want:?}"), "{q}");
                assert!(ROOTS.with(|r| r.get()) > before, "{q}: no verdict kernel ran");
            }
        }
    }
}
