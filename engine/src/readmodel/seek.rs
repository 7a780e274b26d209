//! Equality seeks answered from the base: the nodes of a label whose property equals a value,
//! as a property index compares them (strings exactly; integers and floats as one number, as
//! `f64`, so `1` finds `1.0`), without reading RocksDB.
//!
//! - Number columns keep their rows sorted by value already: an equal range is two binary
//!   searches.
//! - A string column gets a `StrIndex` on its first seek (a column nobody seeks costs nothing):
//!   its dictionary codes in string order (a binary search finds the code of a string) and its
//!   rows grouped by code. 4 bytes per present row and 8 per distinct string.
//! - Datetimes (whose index keys are coarser than values) and mixed-type columns are not
//!   answered here: the caller reads the index.

use std::cmp::Ordering;
use std::sync::OnceLock;

use crate::model::Value;

use super::base::LabelRows;
use super::column::{Column, NO_CODE};

/// One string column's equality index.
#[derive(Debug)]
pub(crate) struct StrIndex {
    /// Dictionary codes in ascending order of their string.
    by_text: Vec<u32>,
    /// `rows[starts[c]..starts[c + 1]]` are the rows of code `c`, ascending.
    starts: Vec<u32>,
    rows: Vec<u32>,
}

impl StrIndex {
    fn build(codes: &[u32], dict: &[String]) -> StrIndex {
        let mut by_text: Vec<u32> = (0..dict.len() as u32).collect();
        by_text.sort_unstable_by(|a, b| dict[*a as usize].cmp(&dict[*b as usize]));
        // A counting sort by code: rows stay ascending within a code.
        let mut starts = vec![0u32; dict.len() + 1];
        for c in codes.iter().filter(|c| **c != NO_CODE) {
            starts[*c as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut rows = vec![0u32; starts.last().copied().unwrap_or(0) as usize];
        for (row, c) in codes.iter().enumerate() {
            if *c != NO_CODE {
                rows[next[*c as usize] as usize] = row as u32;
                next[*c as usize] += 1;
            }
        }
        StrIndex {
            by_text,
            starts,
            rows,
        }
    }

    /// The rows whose string is `s`, ascending.
    fn rows(&self, dict: &[String], s: &str) -> &[u32] {
        match self
            .by_text
            .binary_search_by(|c| dict[*c as usize].as_str().cmp(s))
        {
            Ok(i) => {
                let c = self.by_text[i] as usize;
                &self.rows[self.starts[c] as usize..self.starts[c + 1] as usize]
            }
            Err(_) => &[],
        }
    }

    pub(crate) fn bytes(&self) -> usize {
        (self.by_text.capacity() + self.starts.capacity() + self.rows.capacity()) * 4
    }
}

/// The lazily built index of each string column of a label (an empty cell per column).
pub(crate) fn cells(columns: &std::collections::BTreeMap<String, Column>) -> StrIndexes {
    columns
        .iter()
        .filter(|(_, c)| matches!(c, Column::Strings { .. }))
        .map(|(k, _)| (k.clone(), OnceLock::new()))
        .collect()
}

/// Per string column of a label, its index once a seek built it.
pub(crate) type StrIndexes = std::collections::HashMap<String, OnceLock<StrIndex>>;

/// The rows of `label` whose `key` equals `value` under index equality, ascending; None when
/// this column cannot say (mixed types, datetimes, temporal values: read the index).
pub(super) fn rows_equal(label: &LabelRows, key: &str, value: &Value) -> Option<Vec<u32>> {
    let Some(column) = label.columns.get(key) else {
        // No node of the label has the key; a value of a type the index keys on finds none.
        return matches!(value, Value::String(_) | Value::Int(_) | Value::Float(_)).then(Vec::new);
    };
    match (column, value) {
        (Column::Strings { codes, dict, .. }, Value::String(s)) => {
            let index = label
                .seeks
                .get(key)?
                .get_or_init(|| StrIndex::build(codes, dict));
            Some(index.rows(dict, s).to_vec())
        }
        (Column::Strings { .. }, Value::Int(_) | Value::Float(_)) => Some(Vec::new()),
        (
            Column::Integers {
                values,
                datetime: false,
                sorted,
                ..
            },
            Value::Int(_) | Value::Float(_),
        ) => {
            let f = value.as_f64().filter(|f| !f.is_nan())?;
            Some(equal_range(sorted, |r| (values[r] as f64).partial_cmp(&f)))
        }
        (Column::Floats { values, sorted }, Value::Int(_) | Value::Float(_)) => {
            let f = value.as_f64().filter(|f| !f.is_nan())?;
            Some(equal_range(sorted, |r| values[r].partial_cmp(&f)))
        }
        (
            Column::Integers {
                datetime: false, ..
            }
            | Column::Floats { .. },
            Value::String(_),
        ) => Some(Vec::new()),
        _ => None,
    }
}

/// The rows of `sorted` (rows in ascending order of value) whose value compares Equal,
/// ascending by row.
fn equal_range(sorted: &[u32], cmp: impl Fn(usize) -> Option<Ordering>) -> Vec<u32> {
    let lo = sorted.partition_point(|r| cmp(*r as usize) == Some(Ordering::Less));
    let hi = lo + sorted[lo..].partition_point(|r| cmp(*r as usize) == Some(Ordering::Equal));
    let mut rows = sorted[lo..hi].to_vec();
    // Equal numbers keep row order, but integers that meet at one f64 need not.
    rows.sort_unstable();
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[Option<&str>]) -> Column {
        let present = values
            .iter()
            .enumerate()
            .filter_map(|(r, v)| v.map(|s| (r as u32, Value::String(s.to_owned()))))
            .collect();
        Column::build(values.len(), present)
    }

    #[test]
    fn a_string_seek_finds_every_row_of_its_string_and_no_other() {
        let c = strings(&[
            Some("b"),
            None,
            Some("a"),
            Some("b"),
            Some("ab"),
            None,
            Some("b"),
        ]);
        let Column::Strings { codes, dict, .. } = &c else {
            panic!("not a string column");
        };
        let index = StrIndex::build(codes, dict);
        assert_eq!(index.rows(dict, "b"), &[0, 3, 6]);
        assert_eq!(index.rows(dict, "a"), &[2]);
        assert_eq!(index.rows(dict, "ab"), &[4]);
        assert!(index.rows(dict, "").is_empty());
        assert!(index.rows(dict, "c").is_empty());
        assert!(index.rows(dict, "B").is_empty());
    }

    #[test]
    fn number_seeks_compare_as_the_index_does() {
        let ints = Column::build(
            5,
            vec![
                (0, Value::Int(3)),
                (1, Value::Int(1)),
                (3, Value::Int(3)),
                (4, Value::Int(-2)),
            ],
        );
        let Column::Integers { values, sorted, .. } = &ints else {
            panic!("not an integer column");
        };
        let at = |f: f64| equal_range(sorted, |r| (values[r] as f64).partial_cmp(&f));
        assert_eq!(at(3.0), vec![0, 3]);
        assert_eq!(at(1.0), vec![1]);
        assert_eq!(at(2.0), Vec::<u32>::new());
        assert_eq!(at(-2.0), vec![4]);
        let floats = Column::build(
            3,
            vec![
                (0, Value::Float(0.5)),
                (1, Value::Float(-0.0)),
                (2, Value::Float(0.5)),
            ],
        );
        let Column::Floats { values, sorted } = &floats else {
            panic!("not a float column");
        };
        let at = |f: f64| equal_range(sorted, |r| values[r].partial_cmp(&f));
        assert_eq!(at(0.5), vec![0, 2]);
        assert_eq!(at(0.0), vec![1], "-0.0 and 0.0 share a key");
    }
}
