//! String kernels: a string property's expression evaluated once per distinct string of the
//! column (a dictionary column out), and the string predicates against a constant
//! (`STARTS WITH`, `ENDS WITH`, `CONTAINS`) applied without building values.

#[allow(unused_imports)]
use super::*;
use crate::functions::Func;

/// `n.key <op> constant` (or `constant <op> n.key`) and `n.key IS [NOT] NULL`: what they
/// compute from the property's value, as the evaluator does (`eval::binary`).
#[derive(Clone)]
pub(super) enum Short {
    Bin {
        op: crate::ast::BinaryOp,
        c: Val,
        flipped: bool,
    },
    IsNull(bool),
    /// `f(n.key) <op> constant` (or IS [NOT] NULL) for a string function `f` that maps a
    /// string to a string (`toLower`, `toUpper`, `trim`, `lTrim`, `rTrim`): `f`, then the test.
    Folded(Func, Box<Short>),
    /// NOT, AND, OR, XOR of tests that give a boolean or null (`n.name STARTS WITH 'A' OR
    /// n.name STARTS WITH 'B'`): on a string, plain boolean logic over the tests' answers.
    Not(Box<Short>),
    Logic(Logic, Box<Short>, Box<Short>),
}

#[derive(Clone, Copy)]
pub(super) enum Logic {
    And,
    Or,
    Xor,
}

/// Deepest NOT / AND / OR / XOR nesting compiled (deeper ones go to the evaluator).
const MAX_LOGIC_DEPTH: usize = 16;

/// The string function of `x` when `x` is one of `Short::Folded`'s over a node property.
fn folded(x: &CExpr) -> Option<Func> {
    match x {
        CExpr::Func(
            f @ (Func::ToLower | Func::ToUpper | Func::Trim | Func::LTrim | Func::RTrim),
            args,
        ) if matches!(args.as_slice(), [CExpr::Prop(b, _)] if matches!(**b, CExpr::Slot(_))) => {
            Some(*f)
        }
        _ => None,
    }
}

/// `f(s)` for a `folded` function, as `functions::call_pure` gives it (borrowed when the
/// string is its own result: an ASCII string already in the wanted case, nothing to trim).
fn fold_str(f: Func, s: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    match f {
        Func::ToLower if s.is_ascii() => match s.bytes().any(|b| b.is_ascii_uppercase()) {
            true => Cow::Owned(s.to_ascii_lowercase()),
            false => Cow::Borrowed(s),
        },
        Func::ToLower => Cow::Owned(s.to_lowercase()),
        Func::ToUpper if s.is_ascii() => match s.bytes().any(|b| b.is_ascii_lowercase()) {
            true => Cow::Owned(s.to_ascii_uppercase()),
            false => Cow::Borrowed(s),
        },
        Func::ToUpper => Cow::Owned(s.to_uppercase()),
        Func::Trim => Cow::Borrowed(s.trim()),
        Func::LTrim => Cow::Borrowed(s.trim_start()),
        _ => Cow::Borrowed(s.trim_end()),
    }
}

impl Short {
    pub(super) fn of(e: &CExpr) -> Option<Short> {
        Short::of_at(e, 0)
    }

    /// `of` for a test that gives a boolean or null (a null test, a string predicate or a
    /// comparison, and their logic), as an operand of NOT / AND / OR / XOR.
    fn boolean(e: &CExpr, depth: usize) -> Option<Short> {
        use crate::ast::BinaryOp::*;
        let sh = Short::of_at(e, depth)?;
        let ok = |s: &Short| match s {
            Short::Bin { op, .. } => matches!(
                op,
                StartsWith | EndsWith | Contains | Eq | Ne | Lt | Le | Gt | Ge
            ),
            _ => true,
        };
        let fine = match &sh {
            Short::Folded(_, inner) => ok(inner),
            other => ok(other),
        };
        fine.then_some(sh)
    }

    fn of_at(e: &CExpr, depth: usize) -> Option<Short> {
        if depth > MAX_LOGIC_DEPTH {
            return None;
        }
        let logic = |l: Logic, a: &CExpr, b: &CExpr| {
            Some(Short::Logic(
                l,
                Box::new(Short::boolean(a, depth + 1)?),
                Box::new(Short::boolean(b, depth + 1)?),
            ))
        };
        match e {
            CExpr::Not(x) => return Some(Short::Not(Box::new(Short::boolean(x, depth + 1)?))),
            CExpr::And(a, b) => return logic(Logic::And, a, b),
            CExpr::Or(a, b) => return logic(Logic::Or, a, b),
            CExpr::Xor(a, b) => return logic(Logic::Xor, a, b),
            _ => {}
        }
        let is_prop = |x: &CExpr| matches!(x, CExpr::Prop(b, _) if matches!(**b, CExpr::Slot(_)));
        match e {
            CExpr::IsNull(x, neg) if is_prop(x) => Some(Short::IsNull(*neg)),
            CExpr::IsNull(x, neg) => {
                folded(x).map(|f| Short::Folded(f, Box::new(Short::IsNull(*neg))))
            }
            CExpr::Bin(op, a, b) => match (&**a, &**b) {
                (x, CExpr::Const(c)) if is_prop(x) => Some(Short::Bin {
                    op: *op,
                    c: c.clone(),
                    flipped: false,
                }),
                (CExpr::Const(c), x) if is_prop(x) => Some(Short::Bin {
                    op: *op,
                    c: c.clone(),
                    flipped: true,
                }),
                (x, CExpr::Const(c)) | (CExpr::Const(c), x) => folded(x).map(|f| {
                    let flipped = matches!(&**a, CExpr::Const(_));
                    Short::Folded(
                        f,
                        Box::new(Short::Bin {
                            op: *op,
                            c: c.clone(),
                            flipped,
                        }),
                    )
                }),
                _ => None,
            },
            _ => None,
        }
    }

    /// The result for a string property value without building values: the string
    /// predicates against a string constant (as `eval::binary` computes them), IS [NOT] NULL.
    #[inline]
    pub(super) fn apply_str(&self, s: &str) -> Option<bool> {
        use crate::ast::BinaryOp;
        // A string is not null, whatever it says.
        if let Short::IsNull(neg) = self {
            return Some(*neg);
        }
        match self {
            Short::Folded(f, inner) => return inner.apply_str(&fold_str(*f, s)),
            // Every operand answers true or false on a string (or the evaluator decides).
            Short::Not(x) => return x.apply_str(s).map(|b| !b),
            Short::Logic(l, a, b) => {
                let (a, b) = (a.apply_str(s)?, b.apply_str(s)?);
                return Some(match l {
                    Logic::And => a && b,
                    Logic::Or => a || b,
                    Logic::Xor => a != b,
                });
            }
            _ => {}
        }
        let Short::Bin {
            op,
            c: Val::Str(c),
            flipped,
        } = self
        else {
            return None;
        };
        let (x, y) = if *flipped {
            (c.as_str(), s)
        } else {
            (s, c.as_str())
        };
        Some(match op {
            BinaryOp::StartsWith => x.starts_with(y),
            BinaryOp::EndsWith => x.ends_with(y),
            BinaryOp::Contains => x.contains(y),
            // Two strings: equal by their text, ordered by their bytes (`value::compare`).
            BinaryOp::Eq => x == y,
            BinaryOp::Ne => x != y,
            BinaryOp::Lt => x < y,
            BinaryOp::Le => x <= y,
            BinaryOp::Gt => x > y,
            BinaryOp::Ge => x >= y,
            _ => return None,
        })
    }

    #[inline]
    pub(super) fn apply(&self, v: Val) -> Result<Val, QueryError> {
        match self {
            Short::IsNull(neg) => Ok(Val::Bool(v.is_null() != *neg)),
            // Null in, null out (as the evaluator calls these functions).
            Short::Folded(_, inner) if v.is_null() => inner.apply(v),
            Short::Folded(f, inner) => inner.apply(crate::functions::call_pure(*f, vec![v])?),
            // The evaluator's three-valued logic, in its order (a left operand that decides
            // leaves the right one unevaluated).
            Short::Not(x) => Ok(match x.apply(v)?.truthy()? {
                Some(b) => Val::Bool(!b),
                None => Val::Null,
            }),
            Short::Logic(l, a, b) => {
                let x = a.apply(v.clone())?.truthy()?;
                Ok(match (l, x) {
                    (Logic::And, Some(false)) => Val::Bool(false),
                    (Logic::Or, Some(true)) => Val::Bool(true),
                    _ => match (l, x, b.apply(v)?.truthy()?) {
                        (Logic::And, _, Some(false)) => Val::Bool(false),
                        (Logic::And, Some(true), Some(true)) => Val::Bool(true),
                        (Logic::Or, _, Some(true)) => Val::Bool(true),
                        (Logic::Or, Some(false), Some(false)) => Val::Bool(false),
                        (Logic::Xor, Some(x), Some(y)) => Val::Bool(x != y),
                        _ => Val::Null,
                    },
                })
            }
            Short::Bin { op, c, flipped } => {
                if *flipped {
                    crate::eval::binary(*op, c.clone(), v)
                } else {
                    crate::eval::binary(*op, v, c.clone())
                }
            }
        }
    }
}

impl BExpr {
    /// Whether the first base row of `refs` has a string column for the key (then the
    /// dictionary path pays off).
    pub(super) fn strings_first(&self, bx: &Bx<'_, '_>, refs: &[NodeRef]) -> bool {
        let key = match &self.kind {
            Kind::Single { key, .. } | Kind::Prop { key, .. } => key,
            _ => return false,
        };
        let mut reader = PropReader::new(key);
        refs.iter()
            .take(64)
            .find_map(|r| match reader.locate(bx, *r) {
                Found::Column(_, c, _) => Some(matches!(c, ColumnView::Strings { .. })),
                _ => None,
            })
            .unwrap_or(false)
    }

    pub(super) fn eval_single(
        &mut self,
        bx: &Bx<'_, '_>,
        refs: &[NodeRef],
    ) -> Result<Col, QueryError> {
        let BExpr {
            kind,
            dict,
            memo,
            memo_of,
            null_code,
            ..
        } = self;
        // The memo is by the model column's codes: another base's codes mean other strings.
        let base = bx.m.base_generation();
        if *memo_of != base {
            memo.iter_mut().for_each(Vec::clear);
            *memo_of = base;
        }
        // `n.key` itself is the identity on the property's value.
        let identity = CExpr::Slot(0);
        let (key, body, tmp, short) = match &*kind {
            Kind::Single {
                key,
                body,
                tmp,
                short,
                ..
            } => (key, body, *tmp, short.as_ref()),
            Kind::Prop { key, .. } => (key, &identity, 0, None),
            _ => return Ok(Col::Null),
        };
        let mut scratch = vec![Val::Null; tmp + 1];
        let mut reader = PropReader::new(key);
        let mut codes = Vec::with_capacity(refs.len());
        let identity_kind = matches!(&*kind, Kind::Prop { .. });
        if identity_kind && dict.vals().is_empty() {
            // The values themselves: as many as the rows, at most.
            dict.reserve(refs.len());
        }
        // A string predicate's two answers, coded once (no entries for anything else).
        let bools = match short {
            Some(_) => [dict.code(Val::Bool(false)), dict.code(Val::Bool(true))],
            None => [0, 0],
        };
        let mut run = |v: Val| -> Result<u32, QueryError> {
            if identity_kind {
                return Ok(dict.code(v));
            }
            if let Some(sh) = short {
                return Ok(dict.code(sh.apply(v)?));
            }
            scratch[tmp] = v;
            Ok(dict.code(eval(body, &scratch, bx.cx)?))
        };
        // A label scan's chunk: consecutive rows of one string column, no lookup per row.
        let in_place = match crate::batch::ops::column_in_place_at(bx, refs, key) {
            Some((li, ColumnView::Strings { codes, dict }, row0)) => {
                codes.get(row0..row0 + refs.len()).map(|sc| (li, sc, dict))
            }
            _ => None,
        };
        if let Some((li, sc, sd)) = in_place.filter(|(_, _, sd)| memo_pays(sd.len(), refs.len())) {
            if memo.len() <= li {
                memo.resize(li + 1, Vec::new());
            }
            if memo[li].len() < sd.len() {
                memo[li].resize(sd.len(), NO_CODE);
            }
            let memo = &mut memo[li];
            for &c in sc {
                let code = if c == NO_CODE {
                    match *null_code {
                        Some(n) => n,
                        None => {
                            let n = run(Val::Null)?;
                            *null_code = Some(n);
                            n
                        }
                    }
                } else {
                    match memo[c as usize] {
                        NO_CODE => {
                            let s = &sd[c as usize];
                            let n = match short.and_then(|sh| sh.apply_str(s)) {
                                Some(b) => bools[usize::from(b)],
                                None => run(Val::Str(s.clone()))?,
                            };
                            memo[c as usize] = n;
                            n
                        }
                        n => n,
                    }
                };
                codes.push(code);
            }
            return Ok(Col::Dict {
                codes,
                dict: Rc::clone(dict),
            });
        }
        // The common case first: base nodes of the label (and string column) of the first one,
        // whose code was met before: a popcount and two loads.
        let fast = refs.iter().find_map(|r| match reader.locate(bx, *r) {
            Found::Column(li, ColumnView::Strings { codes, .. }, _) => {
                Some((li, bx.labels[li], codes))
            }
            _ => None,
        });
        for &r in refs {
            if let Some((li, label, sc)) = fast {
                if bx.exact(r) {
                    if let Some(row) = label.row_of(r) {
                        let c = sc[row];
                        if let Some(&m) = memo.get(li).and_then(|m| m.get(c as usize)) {
                            if m != NO_CODE {
                                codes.push(m);
                                continue;
                            }
                        }
                    }
                }
            }
            let code = match reader.locate(bx, r) {
                Found::Column(
                    _,
                    ColumnView::Strings {
                        codes: sc,
                        dict: sd,
                    },
                    row,
                ) if sc[row] != NO_CODE && !memo_pays(sd.len(), refs.len()) => {
                    let s = &sd[sc[row] as usize];
                    match short.and_then(|sh| sh.apply_str(s)) {
                        Some(b) => bools[usize::from(b)],
                        // The value itself: copied only the first time it is met.
                        None if identity_kind => dict.code_of_str(s),
                        None => run(Val::Str(s.clone()))?,
                    }
                }
                Found::Column(
                    li,
                    ColumnView::Strings {
                        codes: sc,
                        dict: sd,
                    },
                    row,
                ) if sc[row] != NO_CODE => {
                    let c = sc[row] as usize;
                    if memo.len() <= li {
                        memo.resize(li + 1, Vec::new());
                    }
                    if memo[li].len() < sd.len() {
                        memo[li].resize(sd.len(), NO_CODE);
                    }
                    match memo[li][c] {
                        NO_CODE => {
                            let n = match short.and_then(|sh| sh.apply_str(&sd[c])) {
                                Some(b) => bools[usize::from(b)],
                                None => run(Val::Str(sd[c].clone()))?,
                            };
                            memo[li][c] = n;
                            n
                        }
                        n => n,
                    }
                }
                Found::Column(_, ColumnView::Strings { .. }, _) | Found::Absent => match *null_code
                {
                    Some(n) => n,
                    None => {
                        let n = run(Val::Null)?;
                        *null_code = Some(n);
                        n
                    }
                },
                Found::Column(_, c, row) => run(Bx::column_val(&c, row))?,
                Found::Slow => {
                    let v = if r == NULL {
                        Val::Null
                    } else {
                        bx.slow_prop(r, key)?
                    };
                    run(v)?
                }
            };
            codes.push(code);
        }
        Ok(Col::Dict {
            codes,
            dict: Rc::clone(dict),
        })
    }
}

/// Whether a memo of a string column's whole dictionary (one entry per distinct value) pays
/// for a chunk of `rows` rows: not for a few rows of a column of many distinct values (an
/// index seek's customer among tens of thousands of emails), where zeroing the memo costs
/// more than evaluating each row.
fn memo_pays(dict: usize, rows: usize) -> bool {
    dict <= rows.saturating_mul(64).max(1024)
}
