//! Expressions over chunks.
//!
//! Every expression is evaluated by the row evaluator (`eval::eval`), so its semantics
//! (three-valued logic, errors, every function) are the row path's by construction; what
//! changes is where property values come from. Before evaluation a property read of a node
//! slot, `n.key`, is rewritten to read a scratch slot, which the batch fills from the model's
//! column (a base node no commit touched) or from the snapshot (any other node).
//!
//! An expression that reads one node property and nothing else (`t.channel`,
//! `c.email ENDS WITH '.org'`, `toLower(c.city)`) is evaluated once per distinct string of the
//! column, not once per row, and yields a dictionary column.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use svc_engine::{ColumnView, LabelView, ModelView, NodeId, NO_CODE};

use crate::error::QueryError;
use crate::eval::{eval, CExpr, Cx};
use crate::value::Val;

use super::chunk::{Chunk, Col, Dict, NodeRef, NULL};

mod analysis;
mod arith;
mod case;
mod keep;
mod strings;
mod verdict;

use analysis::{collect_props, rewrite, single_prop};
pub(in crate::batch) use analysis::{pure, replace};
use strings::Short;

/// The batch executor's context: the row context, the model view, and the table of nodes
/// outside the base that this query met.
pub(super) struct Bx<'a, 'g> {
    pub(super) cx: &'a Cx<'g>,
    pub(super) m: &'a ModelView,
    n: u32,
    extras: &'a Extras,
    labels: Vec<LabelView<'a>>,
    names: Vec<&'a str>,
    /// Label names met in plans (by address) and their index in `labels` (None: no such
    /// label in the base), so a label test needs no string comparison.
    known: RefCell<Vec<(*const u8, Option<usize>)>>,
    /// Chunk width: the plan's slots and the executor's own columns.
    pub(super) width: usize,
}

/// Nodes outside the base met by one query, numbered after the base's.
#[derive(Default)]
pub(super) struct Extras {
    ids: RefCell<Vec<NodeId>>,
    index: RefCell<HashMap<u64, u32>>,
}

impl<'a, 'g> Bx<'a, 'g> {
    pub(super) fn new(cx: &'a Cx<'g>, m: &'a ModelView, extras: &'a Extras, width: usize) -> Self {
        let (names, labels) = m.labels().unzip();
        Bx {
            cx,
            m,
            n: u32::try_from(m.len()).unwrap_or(u32::MAX - 1),
            extras,
            labels,
            names,
            known: RefCell::new(Vec::new()),
            width,
        }
    }

    /// The reference of a node id.
    pub(super) fn node_ref(&self, id: NodeId) -> NodeRef {
        if let Some(d) = self.m.dense(id) {
            return d;
        }
        let mut index = self.extras.index.borrow_mut();
        if let Some(r) = index.get(&id.0) {
            return *r;
        }
        let mut extras = self.extras.ids.borrow_mut();
        let r = self.n + extras.len() as u32;
        extras.push(id);
        index.insert(id.0, r);
        r
    }

    pub(super) fn node_id(&self, r: NodeRef) -> NodeId {
        if r < self.n {
            self.m.id(r)
        } else {
            self.extras
                .ids
                .borrow()
                .get((r - self.n) as usize)
                .copied()
                .unwrap_or(NodeId(u64::MAX))
        }
    }

    pub(super) fn node_val(&self, r: NodeRef) -> Val {
        if r == NULL {
            Val::Null
        } else {
            Val::Node(self.node_id(r))
        }
    }

    /// Whether the base answers for node `r` (a base node no commit touched since).
    #[inline]
    pub(super) fn exact(&self, r: NodeRef) -> bool {
        r < self.n && !self.m.is_touched(r)
    }

    /// Whether node `r` carries every label.
    pub(super) fn has_labels(&self, r: NodeRef, labels: &[String]) -> Result<bool, QueryError> {
        if labels.is_empty() {
            return Ok(true);
        }
        if self.exact(r) {
            return Ok(labels.iter().all(|l| {
                self.label_index(l)
                    .is_some_and(|i| self.labels[i].contains(r))
            }));
        }
        self.cx.has_labels(self.node_id(r), labels)
    }

    /// The base's label indices of `labels` (None: one of them is no label of the base).
    pub(super) fn label_set(&self, labels: &[String]) -> Option<Vec<usize>> {
        labels.iter().map(|l| self.label_index(l)).collect()
    }

    /// `has_labels` with the labels resolved by `label_set` (`set` None: no base node
    /// carries them all), no name looked up per node.
    #[inline]
    pub(super) fn has_label_set(
        &self,
        r: NodeRef,
        labels: &[String],
        set: Option<&[usize]>,
    ) -> Result<bool, QueryError> {
        if labels.is_empty() {
            return Ok(true);
        }
        if self.exact(r) {
            return Ok(set.is_some_and(|s| s.iter().all(|i| self.labels[*i].contains(r))));
        }
        self.cx.has_labels(self.node_id(r), labels)
    }

    /// The base's view of a label given by name.
    pub(super) fn label_view(&self, name: &str) -> Option<LabelView<'a>> {
        self.label_index(name).map(|i| self.labels[i])
    }

    /// The base rows of the label at index `li` of `labels`.
    pub(super) fn label_rows(&self, li: usize) -> &'a [u32] {
        self.labels.get(li).map_or(&[], |l| l.rows())
    }

    /// Index into `labels` of a label given by name (plans' names are looked up once).
    #[inline]
    fn label_index(&self, name: &str) -> Option<usize> {
        let ptr = name.as_ptr();
        if let Some((_, i)) = self.known.borrow().iter().find(|(p, _)| *p == ptr) {
            return *i;
        }
        let i = self.names.iter().position(|n| *n == name);
        let mut known = self.known.borrow_mut();
        if known.len() < 64 {
            known.push((ptr, i));
        }
        i
    }

    /// Index into `labels` of a label carrying base node `d`, trying `hint` first.
    #[inline]
    fn label_of(&self, d: NodeRef, hint: usize) -> Option<usize> {
        if self.labels.get(hint).is_some_and(|l| l.contains(d)) {
            return Some(hint);
        }
        self.labels.iter().position(|l| l.contains(d))
    }

    /// A column's value as a run-time value.
    pub(super) fn column_val(c: &ColumnView<'_>, row: usize) -> Val {
        match c {
            ColumnView::Strings { codes, dict } => match codes[row] {
                NO_CODE => Val::Null,
                code => Val::Str(dict[code as usize].clone()),
            },
            ColumnView::Integers {
                values,
                absent,
                datetime,
            } => {
                if !absent.is_empty() && absent.contains(row as u32) {
                    Val::Null
                } else if *datetime {
                    Val::DateTime(values[row])
                } else {
                    Val::Int(values[row])
                }
            }
            ColumnView::Floats(v) => {
                if v[row].is_nan() {
                    Val::Null
                } else {
                    Val::Float(v[row])
                }
            }
            ColumnView::Values(v) => v[row].as_ref().map_or(Val::Null, Val::from),
        }
    }

    /// A node's property read through the snapshot (row path semantics).
    fn slow_prop(&self, r: NodeRef, key: &str) -> Result<Val, QueryError> {
        match self.cx.node(self.node_id(r))? {
            Some(n) => Ok(n.get(key).map_or(Val::Null, Val::from)),
            None => Err(QueryError::semantic(
                "the node was deleted earlier in this query",
            )),
        }
    }
}

/// Reads one property of nodes for one chunk, remembering the label (and its column) last
/// used: most nodes of a slot carry the same label.
pub(super) struct PropReader<'a, 'k> {
    pub(super) key: &'k str,
    /// Per label index: its column of `key` (outer None: not looked up yet).
    columns: Vec<Option<Option<ColumnView<'a>>>>,
    hint: usize,
}

/// Where a node's property value is.
pub(super) enum Found<'a> {
    /// In the base: (label index, column, row).
    Column(usize, ColumnView<'a>, usize),
    /// The node carries a label whose nodes never have the key: no value.
    Absent,
    /// Read it through the snapshot.
    Slow,
}

impl<'a, 'k> PropReader<'a, 'k> {
    pub(super) fn new(key: &'k str) -> Self {
        PropReader {
            key,
            columns: Vec::new(),
            hint: 0,
        }
    }

    #[inline]
    pub(super) fn locate(&mut self, bx: &Bx<'a, '_>, r: NodeRef) -> Found<'a> {
        if r == NULL || !bx.exact(r) {
            return Found::Slow;
        }
        let Some(i) = bx.label_of(r, self.hint) else {
            return Found::Slow; // a node without labels is in no column
        };
        self.hint = i;
        if self.columns.len() <= i {
            self.columns.resize(bx.labels.len(), None);
        }
        let label = bx.labels[i];
        let key = self.key;
        let col = *self.columns[i].get_or_insert_with(|| label.column(key));
        match (col, label.row_of(r)) {
            (Some(c), Some(row)) => Found::Column(i, c, row),
            _ => Found::Absent,
        }
    }

    pub(super) fn get(&mut self, bx: &Bx<'a, '_>, r: NodeRef) -> Result<Val, QueryError> {
        if r == NULL {
            return Ok(Val::Null);
        }
        match self.locate(bx, r) {
            Found::Column(_, c, row) => Ok(Bx::column_val(&c, row)),
            Found::Absent => Ok(Val::Null),
            Found::Slow => bx.slow_prop(r, self.key),
        }
    }
}

/// How one expression site is evaluated (chosen once, when the operator is built).
enum Kind {
    Slot(usize),
    Const(Val),
    /// `n.key` itself.
    Prop {
        slot: usize,
        key: String,
    },
    /// Reads one property of one node slot and nothing else: evaluated per distinct string.
    Single {
        slot: usize,
        key: String,
        body: CExpr,
        tmp: usize,
        /// The expression is one operator on the property (then applied directly, without
        /// the evaluator's scratch row).
        short: Option<Short>,
    },
    /// `CASE`, branch by branch over the whole chunk (`case`).
    Case(Box<case::CaseK>),
    /// Anything else, row by row, with node properties read from the model.
    Generic {
        body: CExpr,
        reads: Vec<usize>,
        /// (scratch slot, node slot, key) per property read that was rewritten.
        props: Vec<(usize, usize, String)>,
    },
}

/// Distinct values a kept expression's dictionary may hold into the next run (`reset`).
const KEEP_DICT: usize = 256;
/// Per-string results (cells of `BExpr::memo`) kept into the next run.
const KEEP_MEMO: usize = 1 << 14;

/// One expression of one operator, with its dictionary and per-string results.
pub(super) struct BExpr {
    orig: CExpr,
    kind: Kind,
    dict: Rc<Dict>,
    /// `Single`: per label index, per code of that label's column, the result's code.
    memo: Vec<Vec<u32>>,
    /// The model base whose column codes `memo` is by (`ModelView::base_generation`; 0: none).
    memo_of: u64,
    /// `Single`: the result's code when the property is absent.
    null_code: Option<u32>,
    /// Arithmetic (or a comparison of it) over number properties: the typed kernels, tried
    /// before the row evaluator.
    typed: Option<arith::Typed>,
    /// As a WHERE: null tests and string predicates of one node, read off the columns.
    conj: Option<keep::Conj>,
    /// A null test, `IN` or logic at the top: the verdict kernels (`verdict`).
    verdict: Option<Box<verdict::V>>,
}

impl BExpr {
    /// Compiles `e` for chunks `width` slots wide (scratch slots come after them).
    pub(super) fn new(e: &CExpr, width: usize) -> BExpr {
        let prop = match e {
            CExpr::Prop(base, key) => match base.as_ref() {
                CExpr::Slot(slot) => Some((*slot, key.clone())),
                _ => None,
            },
            _ => None,
        };
        let kind = match e {
            CExpr::Slot(s) => Kind::Slot(*s),
            CExpr::Const(v) => Kind::Const(v.clone()),
            CExpr::Case {
                operand,
                whens,
                else_,
            } => Kind::Case(Box::new(case::CaseK::new(
                operand.as_deref(),
                whens,
                else_.as_deref(),
                width,
            ))),
            _ if prop.is_some() => {
                let (slot, key) = prop.unwrap_or_default();
                Kind::Prop { slot, key }
            }
            _ => match single_prop(e) {
                Some((slot, key)) if pure(e) => Kind::Single {
                    slot,
                    key: key.to_owned(),
                    body: rewrite(e, &mut |s, k| (s == slot && k == key).then_some(width)),
                    tmp: width,
                    short: Short::of(e),
                },
                _ => {
                    let mut found: Vec<(usize, usize, &str)> = Vec::new();
                    collect_props(e, &mut found, width);
                    let body = rewrite(e, &mut |s, k| {
                        found
                            .iter()
                            .find(|(_, ps, pk)| *ps == s && *pk == k)
                            .map(|(t, _, _)| *t)
                    });
                    let mut reads = e.slot_list();
                    reads.sort_unstable();
                    reads.dedup();
                    let props = found
                        .into_iter()
                        .map(|(t, s, k)| (t, s, k.to_owned()))
                        .collect();
                    Kind::Generic { body, reads, props }
                }
            },
        };
        let typed = match kind {
            Kind::Single { .. } | Kind::Generic { .. } => arith::Typed::of(e),
            _ => None,
        };
        // A single property's expression keeps its per-string memo unless the kernels read
        // presence alone.
        let verdict = match kind {
            Kind::Single { .. } | Kind::Generic { .. } => verdict::V::root(e, width)
                .filter(|v| matches!(kind, Kind::Generic { .. }) || v.presence_only())
                .map(Box::new),
            _ => None,
        };
        BExpr {
            verdict,
            orig: e.clone(),
            conj: keep::Conj::of(e),
            typed,
            kind,
            dict: Rc::new(Dict::default()),
            memo: Vec::new(),
            memo_of: 0,
            null_code: None,
        }
    }

    /// Back to the state `new` left it in, for another run of a kept batch tree
    /// (`crate::batch::reset`), except for what stays true: a small dictionary (an interning
    /// table: a value's code is the same in any run) and with it the per-string results,
    /// which `eval_single` drops when the next run reads another model base. A short query
    /// run again then builds no strings it met before. Every field is named, so a new one
    /// must say here whether a run changes it.
    pub(super) fn reset(&mut self) {
        let BExpr {
            orig: _,
            kind,
            dict,
            memo,
            memo_of,
            null_code,
            typed: _,
            conj,
            verdict,
        } = self;
        if let Some(v) = verdict {
            v.reset();
        }
        // Kept only while small, and only when no column of the last run still holds it.
        let memo_cells: usize = memo.iter().map(Vec::len).sum();
        if dict.len() > KEEP_DICT || memo_cells > KEEP_MEMO || Rc::strong_count(dict) > 1 {
            *dict = Rc::new(Dict::default());
            memo.clear();
            *memo_of = 0;
            *null_code = None;
        }
        if let Some(c) = conj {
            c.reset();
        }
        match kind {
            Kind::Case(c) => c.reset(),
            Kind::Slot(_)
            | Kind::Const(_)
            | Kind::Prop { .. }
            | Kind::Single { .. }
            | Kind::Generic { .. } => {}
        }
    }

    /// The expression compiled.
    pub(super) fn expr(&self) -> &CExpr {
        &self.orig
    }

    /// `(slot, key)` when the expression is exactly `n.key` of a slot.
    pub(super) fn plain_prop(&self) -> Option<(usize, &str)> {
        match &self.kind {
            Kind::Prop { slot, key } => Some((*slot, key.as_str())),
            _ => None,
        }
    }

    /// WHERE's verdict for every row of `ch` (`truth` of `eval`), straight from the columns
    /// when the predicate allows.
    pub(super) fn keep(&mut self, bx: &Bx<'_, '_>, ch: &Chunk) -> Result<Vec<bool>, QueryError> {
        if let Some(conj) = &mut self.conj {
            if let Some(keep) = conj.keep(bx, ch)? {
                return Ok(keep);
            }
        }
        if let Some(t) = self.kernel_verdicts(bx, ch)? {
            return Ok(t.iter().map(|v| *v == arith::T_TRUE).collect());
        }
        let c = self.eval(bx, ch)?;
        truth(bx, &c, ch.len)
    }

    /// Per row, whether the expression is exactly `true` (null, false and anything else are
    /// not: a CASE branch's condition). Never fails on a non-boolean.
    pub(super) fn holds(&mut self, bx: &Bx<'_, '_>, ch: &Chunk) -> Result<Vec<bool>, QueryError> {
        if let Some(t) = self.kernel_verdicts(bx, ch)? {
            return Ok(t.iter().map(|v| *v == arith::T_TRUE).collect());
        }
        let c = self.eval(bx, ch)?;
        Ok(case::exactly_true(&c, ch.len))
    }

    /// The verdict kernels' or a typed comparison's verdicts per row; None: neither applies
    /// (or the verdict kernels met something only the row evaluator decides).
    fn kernel_verdicts(
        &mut self,
        bx: &Bx<'_, '_>,
        ch: &Chunk,
    ) -> Result<Option<Vec<u8>>, QueryError> {
        if let Some(v) = &mut self.verdict {
            // A failure (a non-boolean, an operand the evaluator would not have reached) is
            // the row evaluator's to decide.
            if let Ok(t) = v.eval_root(bx, ch) {
                return Ok(Some(t));
            }
        }
        self.typed_verdicts(bx, ch)
    }

    /// Per row, the expression's value as a verdict (`arith::T_*`): booleans and nulls;
    /// anything else is an error.
    pub(super) fn verdicts(&mut self, bx: &Bx<'_, '_>, ch: &Chunk) -> Result<Vec<u8>, QueryError> {
        if let Some(t) = self.kernel_verdicts(bx, ch)? {
            return Ok(t);
        }
        let c = self.col_ref(bx, ch)?;
        verdict::col_verdicts(bx, &c, ch.len)
    }

    /// The expression's column for `ch`, borrowed when it is a slot's.
    pub(super) fn col_ref<'c>(
        &mut self,
        bx: &Bx<'_, '_>,
        ch: &'c Chunk,
    ) -> Result<std::borrow::Cow<'c, Col>, QueryError> {
        use std::borrow::Cow;
        match &self.kind {
            Kind::Slot(s) => Ok(ch.cols.get(*s).map_or(Cow::Owned(Col::Null), Cow::Borrowed)),
            _ => Ok(Cow::Owned(self.eval(bx, ch)?)),
        }
    }

    /// The expression's value when it is a constant.
    pub(super) fn constant(&self) -> Option<&Val> {
        match &self.kind {
            Kind::Const(v) => Some(v),
            _ => None,
        }
    }

    /// Whether the row evaluator computes it row by row (no kernel of its own).
    pub(super) fn row_by_row(&self) -> bool {
        match &self.kind {
            Kind::Slot(_) | Kind::Const(_) | Kind::Prop { .. } | Kind::Single { .. } => false,
            Kind::Case(_) => true,
            Kind::Generic { .. } => self.typed.is_none() && self.verdict.is_none(),
        }
    }

    /// A typed comparison's verdicts (`arith::T_*`) per row, when the expression is one and
    /// the chunk's values allow; no dictionary codes built.
    fn typed_verdicts(
        &mut self,
        bx: &Bx<'_, '_>,
        ch: &Chunk,
    ) -> Result<Option<Vec<u8>>, QueryError> {
        let Some(arith::Typed::Cmp(op, a, b)) = &self.typed else {
            return Ok(None);
        };
        if let Kind::Single { slot, .. } = &self.kind {
            // A string column: the per-string memo answers (the kernel would give up).
            if let Some(Col::Nodes(refs)) = ch.cols.get(*slot) {
                if self.strings_first(bx, refs) {
                    return Ok(None);
                }
            }
        }
        arith::eval_cmp(bx, ch, *op, a, b)
    }

    /// The expression's value for every row of `ch`.
    pub(super) fn eval(&mut self, bx: &Bx<'_, '_>, ch: &Chunk) -> Result<Col, QueryError> {
        if let Kind::Case(k) = &mut self.kind {
            return k.eval(bx, ch, &self.dict);
        }
        if let Some(v) = &mut self.verdict {
            // Dictionary codes of null, false and true (see `kernel_verdicts` on failure).
            if let Ok(t) = v.eval_root(bx, ch) {
                let codes = [
                    self.dict.code(Val::Null),
                    self.dict.code(Val::Bool(false)),
                    self.dict.code(Val::Bool(true)),
                ];
                return Ok(Col::Dict {
                    codes: t.iter().map(|v| codes[usize::from(*v)]).collect(),
                    dict: Rc::clone(&self.dict),
                });
            }
        }
        match &self.kind {
            Kind::Slot(s) => Ok(ch.cols.get(*s).cloned().unwrap_or(Col::Null)),
            Kind::Const(v) => Ok(Col::Vals(vec![v.clone(); ch.len])),
            Kind::Single {
                slot, key, short, ..
            } => match ch.cols.get(*slot) {
                Some(Col::Nodes(refs)) if self.strings_first(bx, refs) => {
                    self.eval_single(bx, refs)
                }
                _ if self.typed.is_some() => self.eval_typed(bx, ch),
                Some(Col::Nodes(refs)) if short.is_some() => {
                    // Numbers, datetimes: the operator on each row's value, no scratch row.
                    let mut reader = PropReader::new(key);
                    let mut out = Vec::with_capacity(refs.len());
                    for r in refs {
                        let v = reader.get(bx, *r)?;
                        out.push(match short {
                            Some(sh) => sh.apply(v)?,
                            None => v,
                        });
                    }
                    Ok(Col::Vals(out))
                }
                _ => self.eval_generic(bx, ch),
            },
            Kind::Prop { slot, key } => match ch.cols.get(*slot) {
                Some(Col::Nodes(refs)) => {
                    let mut reader = PropReader::new(key);
                    if self.strings_first(bx, refs) {
                        // Dictionary codes: the column's code mapped once to ours.
                        self.eval_single(bx, refs)
                    } else {
                        let mut out = Vec::with_capacity(refs.len());
                        for r in refs {
                            out.push(reader.get(bx, *r)?);
                        }
                        Ok(Col::Vals(out))
                    }
                }
                _ => self.eval_generic(bx, ch),
            },
            Kind::Case(_) => self.eval_generic(bx, ch), // answered above
            Kind::Generic { .. } if self.typed.is_some() => self.eval_typed(bx, ch),
            Kind::Generic { .. } => self.eval_generic(bx, ch),
        }
    }

    /// The typed kernels' column, or the row evaluator's for a chunk they leave.
    fn eval_typed(&mut self, bx: &Bx<'_, '_>, ch: &Chunk) -> Result<Col, QueryError> {
        if let Some(t) = &self.typed {
            if let Some(c) = arith::eval_typed(bx, ch, t, &self.dict)? {
                return Ok(c);
            }
        }
        self.eval_generic(bx, ch)
    }

    fn eval_generic(&mut self, bx: &Bx<'_, '_>, ch: &Chunk) -> Result<Col, QueryError> {
        type Parts<'x> = (&'x CExpr, Vec<usize>, Vec<(usize, usize, &'x str)>);
        let (body, reads, props): Parts<'_> = match &self.kind {
            Kind::Generic { body, reads, props } => (
                body,
                reads.clone(),
                props.iter().map(|(t, s, k)| (*t, *s, k.as_str())).collect(),
            ),
            Kind::Single {
                slot,
                key,
                body,
                tmp,
                ..
            } => (body, vec![*slot], vec![(*tmp, *slot, key.as_str())]),
            _ => (&self.orig, self.orig.slot_list(), Vec::new()),
        };
        let top = props.iter().map(|(t, _, _)| *t + 1).max().unwrap_or(0);
        let mut scratch = vec![Val::Null; bx.width.max(top)];
        let mut readers: Vec<PropReader<'_, '_>> =
            props.iter().map(|(_, _, k)| PropReader::new(k)).collect();
        let mut out = Vec::with_capacity(ch.len);
        for i in 0..ch.len {
            for s in &reads {
                if let Some(c) = ch.cols.get(*s) {
                    scratch[*s] = cell(bx, c, i);
                }
            }
            for ((tmp, slot, key), reader) in props.iter().zip(&mut readers) {
                scratch[*tmp] = match ch.cols.get(*slot) {
                    Some(Col::Nodes(refs)) => reader.get(bx, refs[i])?,
                    _ => {
                        let prop = CExpr::Prop(Box::new(CExpr::Slot(*slot)), (*key).to_owned());
                        eval(&prop, &scratch, bx.cx)?
                    }
                };
            }
            out.push(eval(body, &scratch, bx.cx)?);
        }
        Ok(Col::Vals(out))
    }
}

/// One row's value of a column.
pub(super) fn cell(bx: &Bx<'_, '_>, c: &Col, i: usize) -> Val {
    match c {
        Col::Null => Val::Null,
        Col::Nodes(v) => bx.node_val(v[i]),
        Col::Dict { codes, dict } => dict.get(codes[i]),
        Col::Vals(v) => v[i].clone(),
        Col::Rels(v) => Val::Rel(svc_engine::EdgeId(v[i])),
    }
}

/// WHERE's verdict per row: true passes; null and false do not; anything else is an error.
pub(super) fn truth(bx: &Bx<'_, '_>, c: &Col, len: usize) -> Result<Vec<bool>, QueryError> {
    match c {
        Col::Null => Ok(vec![false; len]),
        Col::Dict { codes, dict } => {
            let vals = dict.vals();
            let mut verdict: Vec<Option<bool>> = vec![None; vals.len()];
            let mut out = Vec::with_capacity(len);
            for c in codes {
                let v = match verdict[*c as usize] {
                    Some(v) => v,
                    None => {
                        let v = vals[*c as usize].truthy()? == Some(true);
                        verdict[*c as usize] = Some(v);
                        v
                    }
                };
                out.push(v);
            }
            Ok(out)
        }
        Col::Vals(v) => v.iter().map(|x| Ok(x.truthy()? == Some(true))).collect(),
        Col::Rels(_) => (0..len)
            .map(|i| Ok(cell(bx, c, i).truthy()? == Some(true)))
            .collect(),
        Col::Nodes(refs) => refs
            .iter()
            .map(|r| Ok(bx.node_val(*r).truthy()? == Some(true)))
            .collect(),
    }
}
