//! The write side of declared indexes (see `catalog`): catalog rows, maintenance of the entries
//! on node writes, backfill batches and drop batches.
//!
//! A declared index may lack entries of nodes the backfill has not reached yet, so its
//! maintenance checks an entry exists before deleting it and is absent before adding it:
//! the value-type counters stay exact whichever of a write and the backfill comes first.

use crate::catalog::{self, IndexInfo, IndexState};
use crate::codec::NodeRecord;
use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys;
use crate::model::NodeId;
use crate::store::KvRead;
use crate::view::{self, LabelSource};

use super::{WorkspaceTxn, WriteTxn};

impl WriteTxn<'_> {
    /// This transaction's reads (its own writes included).
    pub(crate) fn kv(&self) -> &dyn KvRead {
        self
    }
}

impl WorkspaceTxn<'_, '_> {
    pub(crate) fn kv(&self) -> &dyn KvRead {
        &*self.txn
    }

    pub(crate) fn put_catalog_row(&mut self, row: &IndexInfo) {
        self.txn.put(
            Cf::Meta,
            catalog::catalog_key(self.ws, &row.label, &row.property),
            catalog::encode_row(row),
        );
    }

    /// Keeps the entries of the workspace's declared indexes (POPULATING or ONLINE) in step
    /// with one node write.
    pub(super) fn sync_declared_indexes(
        &mut self,
        id: NodeId,
        old: Option<&NodeRecord>,
        new: Option<&NodeRecord>,
    ) -> Result<(), EngineError> {
        let declared = match self.txn.declared_cache.get(&self.ws) {
            Some(d) => d.clone(),
            None => {
                let d = catalog::declared(&*self.txn, self.ws)?;
                self.txn.declared_cache.insert(self.ws, d.clone());
                d
            }
        };
        if declared.is_empty() {
            return Ok(());
        }
        for d in declared {
            if d.state == IndexState::Dropping {
                continue;
            }
            let entry = |r: Option<&NodeRecord>| {
                let r = r.filter(|r| r.labels.contains(&d.label))?;
                let v = keys::index_value(r.properties.get(&d.property)?)?;
                Some((
                    keys::prop_index_key(self.ws, &d.label, &d.property, &v, id),
                    v[0],
                ))
            };
            let (before, after) = (entry(old), entry(new));
            if before == after {
                continue;
            }
            if let Some((k, tag)) = before {
                self.remove_entry(&d, k, tag)?;
            }
            if let Some((k, tag)) = after {
                self.add_entry(&d, k, tag)?;
            }
        }
        Ok(())
    }

    fn add_entry(&mut self, d: &IndexInfo, key: Vec<u8>, tag: u8) -> Result<(), EngineError> {
        if self.txn.get(Cf::PropIndex, &key)?.is_none() {
            self.txn.put(Cf::PropIndex, key, Vec::new());
            self.txn.count_add(
                keys::index_count_key(self.ws, &d.label, &d.property, tag),
                1,
            );
        }
        Ok(())
    }

    fn remove_entry(&mut self, d: &IndexInfo, key: Vec<u8>, tag: u8) -> Result<(), EngineError> {
        if self.txn.get(Cf::PropIndex, &key)?.is_some() {
            self.txn.delete(Cf::PropIndex, key);
            self.txn.count_add(
                keys::index_count_key(self.ws, &d.label, &d.property, tag),
                -1,
            );
        }
        Ok(())
    }

    /// Indexes up to `batch` nodes of `row.label` with ids from `next` on, and records where
    /// the next batch starts (or ONLINE when none were left).
    pub(crate) fn backfill_index(
        &mut self,
        row: &IndexInfo,
        next: u64,
        batch: usize,
    ) -> Result<(), EngineError> {
        let ids: Vec<u64> = {
            let bits = self.txn.label_bitmap(self.ws, &row.label)?;
            bits.iter().skip_while(|&i| i < next).take(batch).collect()
        };
        for &i in &ids {
            let id = NodeId(i);
            let Some(rec) = view::load_node(&*self.txn, self.ws, id)? else {
                continue;
            };
            let Some(v) = rec
                .properties
                .get(&row.property)
                .and_then(keys::index_value)
            else {
                continue;
            };
            let key = keys::prop_index_key(self.ws, &row.label, &row.property, &v, id);
            self.add_entry(row, key, v[0])?;
        }
        let mut updated = row.clone();
        updated.state = match ids.last() {
            Some(&last) if ids.len() == batch => IndexState::Populating { next: last + 1 },
            _ => IndexState::Online,
        };
        self.put_catalog_row(&updated);
        Ok(())
    }

    /// Deletes up to `batch` entries of a DROPPING index; once none are left, its counters and
    /// its catalog row.
    pub(crate) fn drop_index_entries(
        &mut self,
        row: &IndexInfo,
        batch: usize,
    ) -> Result<(), EngineError> {
        let prefix = keys::prop_index_prefix(self.ws, &row.label, &row.property);
        let end = keys::prefix_end(&prefix);
        let mut doomed = Vec::new();
        self.txn.scan(
            Cf::PropIndex,
            &prefix,
            end.as_deref(),
            false,
            &mut |k, _| {
                doomed.push(k.to_vec());
                doomed.len() < batch
            },
        )?;
        let done = doomed.len() < batch;
        for k in doomed {
            self.txn.delete(Cf::PropIndex, k);
        }
        if done {
            // A delete, not a read of the total: a counter delta of a group still in flight
            // would be missed by a read, while a delete lands after it in commit order.
            for tag in keys::INDEX_VALUE_TAGS {
                let count = keys::index_count_key(self.ws, &row.label, &row.property, tag);
                self.txn.delete(Cf::Counts, count);
            }
            self.txn.delete(
                Cf::Meta,
                catalog::catalog_key(self.ws, &row.label, &row.property),
            );
        }
        Ok(())
    }
}
