//! The plan tree: physical operators (`Plan`, `Op`, `ScanSource`, `AggSpec`), the write operations,
//! and the staged `Planned` statement.

use super::*;

/// One operator and its inputs.
#[derive(Debug)]
pub(crate) struct Plan {
    /// Index into per-operator profile counters.
    pub id: usize,
    pub details: String,
    pub op: Op,
}

impl Plan {
    /// The operator's inputs (an OPTIONAL MATCH's pattern and a model count's fallback among
    /// them).
    pub(crate) fn inputs(&self) -> Vec<&Plan> {
        match &self.op {
            Op::Once | Op::Argument { .. } | Op::StageInput | Op::CountLabel { .. } => Vec::new(),
            Op::Scan { input, .. }
            | Op::Expand { input, .. }
            | Op::Filter { input, .. }
            | Op::Project { input, .. }
            | Op::Aggregate { input, .. }
            | Op::Distinct { input, .. }
            | Op::Sort { input, .. }
            | Op::TopK { input, .. }
            | Op::Skip { input, .. }
            | Op::Limit { input, .. }
            | Op::Unwind { input, .. }
            | Op::ExpandCount { input, .. }
            | Op::ScanFilter { input, .. } => vec![input],
            Op::Optional { input, inner, .. } => vec![input, inner],
            Op::CountWhere { fallback, .. } | Op::ReachCount { fallback, .. } => vec![fallback],
            Op::Union { inputs, .. } => inputs.iter().map(|(p, _)| p).collect(),
        }
    }

    /// [`Plan::inputs`], mutably.
    pub(crate) fn inputs_mut(&mut self) -> Vec<&mut Plan> {
        match &mut self.op {
            Op::Once | Op::Argument { .. } | Op::StageInput | Op::CountLabel { .. } => Vec::new(),
            Op::Scan { input, .. }
            | Op::Expand { input, .. }
            | Op::Filter { input, .. }
            | Op::Project { input, .. }
            | Op::Aggregate { input, .. }
            | Op::Distinct { input, .. }
            | Op::Sort { input, .. }
            | Op::TopK { input, .. }
            | Op::Skip { input, .. }
            | Op::Limit { input, .. }
            | Op::Unwind { input, .. }
            | Op::ExpandCount { input, .. }
            | Op::ScanFilter { input, .. } => vec![input],
            Op::Optional { input, inner, .. } => vec![input, inner],
            Op::CountWhere { fallback, .. } | Op::ReachCount { fallback, .. } => vec![fallback],
            Op::Union { inputs, .. } => inputs.iter_mut().map(|(p, _)| p).collect(),
        }
    }
}

/// Where a node scan gets its candidate ids.
#[derive(Debug)]
pub(crate) enum ScanSource {
    AllNodes,
    Label(String),
    /// `id(n) = value`: the one node whose shown id (`Limits::ids`) the value is, decoded
    /// when the scan runs (so a cached plan serves every codec); computed per input row.
    ById {
        value: CExpr,
    },
    /// Property equality through an index; the value is computed per input row.
    Seek {
        label: String,
        key: String,
        value: CExpr,
        kind: IndexKind,
    },
    Range {
        label: String,
        key: String,
        lower: Bound<Val>,
        upper: Bound<Val>,
        order: Order,
        limit: Option<CExpr>,
    },
}

#[derive(Debug)]
pub(crate) struct AggSpec {
    pub slot: usize,
    pub kind: AggKind,
    pub distinct: bool,
    /// `None` for `count(*)`.
    pub arg: Option<CExpr>,
}

#[derive(Debug)]
pub(crate) enum Op {
    /// One empty row.
    Once,
    /// The outer row of an OPTIONAL MATCH or MERGE, by argument id.
    Argument {
        arg: usize,
    },
    /// The rows produced by the previous stage.
    StageInput,
    Scan {
        input: Box<Plan>,
        slot: usize,
        source: ScanSource,
        check_labels: Vec<String>,
    },
    Expand {
        input: Box<Plan>,
        from: usize,
        rel: usize,
        to: usize,
        types: Vec<String>,
        direction: Option<Direction>,
        to_labels: Vec<String>,
        rel_props: Vec<(String, CExpr)>,
        /// `to` was bound before: check the far end instead of binding it.
        into: bool,
        /// Variable length: (min, max) hops; the relationship slot then holds a list.
        hops: Option<(u32, u32)>,
        /// Relationship slots bound earlier in the same MATCH (relationships may not repeat).
        distinct_from: Vec<usize>,
    },
    Filter {
        input: Box<Plan>,
        predicate: CExpr,
    },
    Project {
        input: Box<Plan>,
        items: Vec<(usize, CExpr)>,
    },
    Aggregate {
        input: Box<Plan>,
        keys: Vec<(usize, CExpr)>,
        aggs: Vec<AggSpec>,
    },
    Distinct {
        input: Box<Plan>,
        slots: Vec<usize>,
    },
    /// The rows of each input in turn, each input's `(plan, output slots)` copied into `out`.
    Union {
        inputs: Vec<(Plan, Vec<usize>)>,
        out: Vec<usize>,
    },
    Sort {
        input: Box<Plan>,
        keys: Vec<(CExpr, bool)>,
    },
    TopK {
        input: Box<Plan>,
        keys: Vec<(CExpr, bool)>,
        skip: Option<CExpr>,
        limit: CExpr,
    },
    Skip {
        input: Box<Plan>,
        count: CExpr,
    },
    Limit {
        input: Box<Plan>,
        count: CExpr,
    },
    Unwind {
        input: Box<Plan>,
        expr: CExpr,
        slot: usize,
    },
    /// Runs `inner` (whose leaf is `Argument { arg }`) per input row; passes the row through
    /// unchanged (its new slots null) when `inner` finds nothing.
    Optional {
        input: Box<Plan>,
        inner: Box<Plan>,
        arg: usize,
    },
    /// A chain of hops counted instead of walked: for each input row, the number of paths
    /// from the node in `from` through `hops` (each hop's relationships of its types, in its
    /// direction, to a far node carrying its labels and passing its filters) goes into
    /// `slot`. Rows with none are dropped, as an expansion would drop them, unless
    /// `keep_zero` (an OPTIONAL MATCH counted with `count(x)`: the row stays, with 0; a null
    /// `from` counts 0 too). Planned where only the number of rows each input row expands
    /// to is read (see `plan/pipeline.rs`); the hops' types are pairwise disjoint and disjoint
    /// from every relationship they must differ from, so every path keeps MATCH's uniqueness.
    ExpandCount {
        input: Box<Plan>,
        from: usize,
        hops: Vec<CountHop>,
        slot: usize,
        keep_zero: bool,
    },
    /// A label scan with the filters directly above it fused in: the engine reads the nodes
    /// sequentially and decodes only the properties the filters read (`keys`, into
    /// `key_slots`); a node passes when every predicate is true, checked in order.
    ScanFilter {
        input: Box<Plan>,
        slot: usize,
        label: String,
        check_labels: Vec<String>,
        keys: Vec<String>,
        key_slots: Vec<usize>,
        predicates: Vec<CExpr>,
    },
    /// `count` of a label's nodes passing property tests, from the engine's read model; when
    /// the engine has none, `fallback` (the ordinary aggregation) runs instead. Each of
    /// `slots` gets the count.
    CountWhere {
        label: String,
        tests: Vec<svc_engine::PropertyTest>,
        slots: Vec<usize>,
        fallback: Box<Plan>,
    },
    /// `count(DISTINCT end)` of a chain of `depth` expansions from the `from` nodes of the
    /// chain's input, from the engine's read model (else `fallback`, the aggregation).
    ReachCount {
        from: usize,
        hops: Vec<svc_engine::Hop>,
        depth: usize,
        slots: Vec<usize>,
        fallback: Box<Plan>,
    },
    /// `count` of a label (or of all nodes) from the bitmap's cardinality.
    CountLabel {
        slot: usize,
        label: Option<String>,
    },
}

/// One hop of an `Op::ExpandCount`.
#[derive(Debug)]
pub(crate) struct CountHop {
    /// Sorted and without repeats (`[:A|A]` walks each relationship once); empty: any type.
    pub types: Vec<String>,
    pub direction: Direction,
    pub to_labels: Vec<String>,
    /// The slot the far node is bound to while `filters` run (nothing else reads it).
    pub to: usize,
    /// Predicates every far node must pass (WHERE of the pattern; they read `to` and slots of
    /// the input row, never a relationship of the chain).
    pub filters: Vec<CExpr>,
}

/// A node of a CREATE (or of MERGE's create branch).
#[derive(Debug)]
pub(crate) struct CreateNode {
    pub slot: usize,
    pub bound: bool,
    pub labels: Vec<String>,
    pub props: Vec<(String, CExpr)>,
}

#[derive(Debug)]
pub(crate) struct CreateRel {
    pub slot: usize,
    pub start: usize,
    pub end: usize,
    pub rel_type: String,
    pub props: Vec<(String, CExpr)>,
}

#[derive(Debug, Default)]
pub(crate) struct CreatePattern {
    pub nodes: Vec<CreateNode>,
    pub rels: Vec<CreateRel>,
}

#[derive(Debug)]
pub(crate) enum SetOp {
    Prop {
        slot: usize,
        key: String,
        value: CExpr,
    },
    Replace {
        slot: usize,
        value: CExpr,
    },
    Merge {
        slot: usize,
        value: CExpr,
    },
    Labels {
        slot: usize,
        labels: Vec<String>,
    },
}

#[derive(Debug)]
pub(crate) enum RemoveOp {
    Prop { slot: usize, key: String },
    Labels { slot: usize, labels: Vec<String> },
}

#[derive(Debug)]
pub(crate) enum WriteOp {
    Create(CreatePattern),
    Merge {
        matcher: Box<Plan>,
        arg: usize,
        create: CreatePattern,
        on_create: Vec<SetOp>,
        on_match: Vec<SetOp>,
    },
    Set(Vec<SetOp>),
    Remove(Vec<RemoveOp>),
    Delete {
        detach: bool,
        exprs: Vec<CExpr>,
    },
}

#[derive(Debug)]
pub(crate) enum Stage {
    Read(Plan),
    Write {
        id: usize,
        details: String,
        op: WriteOp,
    },
}

/// A planned statement.
#[derive(Debug)]
pub(crate) struct Planned {
    pub stages: Vec<Stage>,
    pub columns: Vec<String>,
    pub out_slots: Vec<usize>,
    pub width: usize,
    pub operators: usize,
}
