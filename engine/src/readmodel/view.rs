//! The read-only view of one model version that the query engine's batch executor reads:
//! the base's rows, columns and CSR lists, and which nodes commits touched since the base was
//! taken (those must be read from the snapshot itself, see `eval.rs` for why that is exact).

use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::error::EngineError;
use crate::model::{Direction, NodeId, Value};
use crate::read::GraphRead;

use super::base::{Base, Csr, LabelRows, NONE};
use super::column::Column;

pub use super::column::NO_CODE;

/// One model version as of one snapshot: the base, and the nodes touched after it (their
/// labels, properties and relationships must come from the snapshot). Cheap to clone.
#[derive(Clone, Debug)]
pub struct ModelView {
    base: Arc<Base>,
    /// Touched base nodes, a bitset over dense indexes.
    touched: Arc<Vec<u64>>,
    /// Every touched id (in the base or created after it), ascending.
    touched_ids: Arc<Vec<u64>>,
    /// Whether a node's relationships of all types, in the source's order, are its lists per
    /// type in type order (true of a store, whose adjacency keys sort by type first).
    type_major: bool,
}

impl ModelView {
    pub(crate) fn new(base: Arc<Base>, touched: impl Iterator<Item = u64>) -> ModelView {
        let mut bits = vec![0u64; base.ids.len().div_ceil(64)];
        let mut ids: Vec<u64> = Vec::new();
        for id in touched {
            ids.push(id);
            let d = base.dense(id);
            if d != NONE {
                bits[d as usize / 64] |= 1 << (d % 64);
            }
        }
        ids.sort_unstable();
        ids.dedup();
        ModelView {
            base,
            touched: Arc::new(bits),
            touched_ids: Arc::new(ids),
            type_major: true,
        }
    }

    /// A model of any graph source as it is now (nothing touched): what the query crate's
    /// in-memory graph and the fuzz targets run the batch executor over.
    pub fn from_graph(g: &dyn GraphRead) -> Result<ModelView, EngineError> {
        let mut v = ModelView::new(Arc::new(Base::from_graph(g)?), std::iter::empty());
        v.type_major = false;
        Ok(v)
    }

    /// The base's identity: equal for two views exactly when they share the base, so its
    /// columns' codes mean the same in both.
    pub fn base_generation(&self) -> u64 {
        self.base.generation
    }

    /// The same base with `ids` marked touched as well (nodes changed since it was built, or
    /// any others: a touched node is read from the source, which is always exact).
    pub fn with_touched(&self, ids: impl IntoIterator<Item = u64>) -> ModelView {
        let all = self.touched_ids.iter().copied().chain(ids);
        let mut v = ModelView::new(Arc::clone(&self.base), all.collect::<Vec<_>>().into_iter());
        v.type_major = self.type_major;
        v
    }

    /// Whether a node's relationships of several types come from the source in type order
    /// (so the CSR lists, concatenated by type, give the source's order). When not, a reader
    /// that must keep the source's order reads such relationships from the source.
    pub fn type_major(&self) -> bool {
        self.type_major
    }

    /// Nodes in the base (dense indexes are `0..len()`).
    pub fn len(&self) -> usize {
        self.base.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.base.ids.is_empty()
    }

    /// The id of a dense index (`d < len()`).
    #[inline]
    pub fn id(&self, d: u32) -> NodeId {
        NodeId(self.base.ids[d as usize])
    }

    /// The dense index of a node id, None when the base has no such node.
    #[inline]
    pub fn dense(&self, id: NodeId) -> Option<u32> {
        let d = self.base.dense(id.0);
        (d != NONE).then_some(d)
    }

    /// Whether a commit touched the base node `d` after the base was taken.
    #[inline]
    pub fn is_touched(&self, d: u32) -> bool {
        self.touched
            .get(d as usize / 64)
            .is_some_and(|w| w & (1 << (d % 64)) != 0)
    }

    /// Whether no node is touched at all.
    pub fn untouched(&self) -> bool {
        self.touched_ids.is_empty()
    }

    /// Every touched id, ascending (nodes created after the base among them).
    pub fn touched_ids(&self) -> &[u64] {
        &self.touched_ids
    }

    /// The base's rows and columns of one label.
    pub fn label(&self, label: &str) -> Option<LabelView<'_>> {
        let rows = self.base.labels.get(label)?;
        Some(LabelView {
            rows,
            members: &rows.members,
        })
    }

    /// A label of base node `d`, None when it has none (any of its labels: each one's columns
    /// hold all its properties): the first in `labels`' order.
    pub fn label_of(&self, d: u32) -> Option<LabelView<'_>> {
        self.labels().map(|(_, v)| v).find(|v| v.contains(d))
    }

    /// Every label of the base, by name (byte order).
    pub fn labels(&self) -> impl Iterator<Item = (&str, LabelView<'_>)> {
        self.base.labels.iter().map(|(l, rows)| {
            let view = LabelView {
                rows,
                members: &rows.members,
            };
            (l.as_str(), view)
        })
    }

    /// The CSR list of one relationship type in one direction.
    pub fn adjacency(&self, rel_type: &str, direction: Direction) -> Option<CsrView<'_>> {
        self.base
            .adjacency
            .get(&(rel_type.to_owned(), direction))
            .map(|csr| CsrView { csr })
    }

    /// The relationship types with a list in `direction`, sorted as adjacency keys sort them
    /// (so their concatenation per node is the order of `GraphRead::adjacent` without a type).
    pub fn rel_types(&self, direction: Direction) -> Vec<&str> {
        let mut t: Vec<&str> = self
            .base
            .adjacency
            .keys()
            .filter(|(_, d)| *d == direction)
            .map(|(t, _)| t.as_str())
            .collect();
        t.sort_unstable();
        t
    }

    /// Heap bytes of the base.
    pub fn bytes(&self) -> usize {
        self.base.bytes()
    }
}

/// One label's nodes in the base.
#[derive(Clone, Copy, Debug)]
pub struct LabelView<'a> {
    rows: &'a LabelRows,
    members: &'a [u64],
}

impl<'a> LabelView<'a> {
    /// Dense indexes of the label's nodes, ascending.
    pub fn rows(&self) -> &'a [u32] {
        &self.rows.rows
    }

    /// Whether the base node `d` carries the label (in the base).
    #[inline]
    pub fn contains(&self, d: u32) -> bool {
        self.members
            .get(d as usize / 64)
            .is_some_and(|w| w & (1 << (d % 64)) != 0)
    }

    /// The row of base node `d` in the label's columns, None when it does not carry the label.
    #[inline]
    pub fn row_of(&self, d: u32) -> Option<usize> {
        let (w, b) = (d as usize / 64, d % 64);
        let word = *self.members.get(w)?;
        if word & (1 << b) == 0 {
            return None;
        }
        let below = (word & ((1u64 << b) - 1)).count_ones();
        Some((self.rows.rank[w] + below) as usize)
    }

    /// The column of property `key` (None: no node of the label has it).
    pub fn column(&self, key: &str) -> Option<ColumnView<'a>> {
        self.rows.columns.get(key).map(column_view)
    }

    /// The rows of a number or datetime column whose value is present, in ascending order of
    /// value (then row): a range of values is a slice of it, found by binary search.
    pub fn sorted(&self, key: &str) -> Option<&'a [u32]> {
        self.rows.columns.get(key)?.sorted()
    }

    /// The dense indexes of the label's nodes whose `key` equals `value` as a property index
    /// compares them (strings exactly, numbers as one number), ascending; None when the column
    /// cannot say (mixed types, datetimes): then read the index.
    pub fn seek(&self, key: &str, value: &Value) -> Option<Vec<u32>> {
        let mut rows = super::seek::rows_equal(self.rows, key, value)?;
        for r in &mut rows {
            *r = *self.rows.rows.get(*r as usize)?;
        }
        Some(rows)
    }

    /// Per code of a string column's dictionary, whether the string contains `needle` (one
    /// search over the whole dictionary). None: not a string column.
    pub fn dict_containing(&self, key: &str, needle: &str) -> Option<Vec<bool>> {
        Some(self.rows.columns.get(key)?.dict_text()?.containing(needle))
    }

    /// Per code of a string column's dictionary, whether the string starts with `needle`
    /// (`suffix`: ends with it). None: not a string column.
    pub fn dict_affixed(&self, key: &str, needle: &str, suffix: bool) -> Option<Vec<bool>> {
        Some(
            self.rows
                .columns
                .get(key)?
                .dict_text()?
                .affixed(needle, suffix),
        )
    }

    /// Every column of the label (one per property key some node of it has), in no order:
    /// what a search over any property (a customer's traits) reads.
    pub fn columns(&self) -> impl Iterator<Item = (&'a str, ColumnView<'a>)> + 'a {
        self.rows
            .columns
            .iter()
            .map(|(k, c)| (k.as_str(), column_view(c)))
    }
}

fn column_view(c: &Column) -> ColumnView<'_> {
    match c {
        Column::Strings { codes, dict, .. } => ColumnView::Strings { codes, dict },
        Column::Integers {
            values,
            absent,
            datetime,
            ..
        } => ColumnView::Integers {
            values,
            absent,
            datetime: *datetime,
        },
        Column::Floats { values, .. } => ColumnView::Floats(values),
        Column::Values(v) => ColumnView::Values(v),
    }
}

/// One property of one label's nodes, by row.
#[derive(Clone, Copy, Debug)]
pub enum ColumnView<'a> {
    /// Every present value a string: codes into `dict` (`NO_CODE`: absent).
    Strings {
        codes: &'a [u32],
        dict: &'a [String],
    },
    /// Every present value an integer (or, with `datetime`, a datetime); `absent` rows have none.
    Integers {
        values: &'a [i64],
        absent: &'a RoaringBitmap,
        datetime: bool,
    },
    /// Every present value a float; NaN marks an absent one.
    Floats(&'a [f64]),
    /// Anything else.
    Values(&'a [Option<Value>]),
}

impl ColumnView<'_> {
    /// Whether row `row` has no value (or is past the column's end).
    #[inline]
    pub fn is_absent(&self, row: usize) -> bool {
        match self {
            ColumnView::Strings { codes, .. } => codes.get(row).is_none_or(|c| *c == NO_CODE),
            ColumnView::Integers { values, absent, .. } => {
                row >= values.len() || (!absent.is_empty() && absent.contains(row as u32))
            }
            ColumnView::Floats(v) => v.get(row).is_none_or(|f| f.is_nan()),
            ColumnView::Values(v) => v.get(row).is_none_or(Option::is_none),
        }
    }

    /// The value of one row (None: absent).
    pub fn get(&self, row: usize) -> Option<Value> {
        match self {
            ColumnView::Strings { codes, dict } => {
                let c = *codes.get(row)?;
                dict.get(c as usize).cloned().map(Value::String)
            }
            ColumnView::Integers {
                values,
                absent,
                datetime,
            } => {
                let v = *values.get(row)?;
                if absent.contains(row as u32) {
                    None
                } else if *datetime {
                    Some(Value::DateTime(v))
                } else {
                    Some(Value::Int(v))
                }
            }
            ColumnView::Floats(v) => v.get(row).filter(|f| !f.is_nan()).map(|f| Value::Float(*f)),
            ColumnView::Values(v) => v.get(row).cloned().flatten(),
        }
    }
}

/// One relationship type's adjacency in one direction.
#[derive(Clone, Copy, Debug)]
pub struct CsrView<'a> {
    csr: &'a Csr,
}

impl<'a> CsrView<'a> {
    /// The neighbours of base node `d` (dense indexes), in adjacency-key order.
    #[inline]
    pub fn neighbours(&self, d: u32) -> &'a [u32] {
        self.csr.neighbours(d)
    }

    /// The relationship ids of base node `d`'s entries, aligned with `neighbours`.
    #[inline]
    pub fn edges(&self, d: u32) -> &'a [u64] {
        self.csr.edges(d)
    }
}

/// Whether a workspace has a read model, and if not why: a query that cannot use one runs the
/// row path (reading RocksDB node by node), which logs and metrics should explain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadModelState {
    /// Models are off (`read_model_bytes` = 0).
    Off,
    /// None built yet (the first query asks for one).
    NotBuilt,
    /// The first build is running.
    Building,
    /// The last build outgrew the memory budget; not retried until the process restarts.
    OverBudget { budget: usize },
    /// A model of `bytes`, with `touched` nodes changed since it was built.
    Ready { bytes: usize, touched: u64 },
}
