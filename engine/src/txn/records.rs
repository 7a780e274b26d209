//! Typed record store operations inside a write transaction: get, find, scan, put and delete,
//! keeping each record's secondary lookups exact.

use std::collections::BTreeSet;

use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys;
use crate::record::{Record, RecordScan};
use crate::record_io as record;

use super::WorkspaceTxn;

impl WorkspaceTxn<'_, '_> {
    pub fn get_record<T: Record>(&self, id: &str) -> Result<Option<T>, EngineError> {
        record::get_record(&*self.txn, self.ws, id)
    }

    pub fn find_records<T: Record>(&self, index: &str, value: &str) -> Result<Vec<T>, EngineError> {
        record::find_records(&*self.txn, self.ws, index, value)
    }

    pub fn scan_records<T: Record>(&self, scan: &RecordScan) -> Result<Vec<T>, EngineError> {
        record::scan_records(&*self.txn, self.ws, scan)
    }

    /// Inserts or replaces a record and keeps its secondary lookups exact.
    pub fn put_record<T: Record>(&mut self, rec: &T) -> Result<(), EngineError> {
        let id = rec.id();
        if id.is_empty() {
            return Err(EngineError::invalid(
                "record id",
                format!("{} record with an empty id", T::KIND),
            ));
        }
        let old_indexes: BTreeSet<(&'static str, String)> = match self.get_record::<T>(&id)? {
            Some(old) => old.indexes().into_iter().collect(),
            None => BTreeSet::new(),
        };
        let new_indexes: BTreeSet<(&'static str, String)> = rec.indexes().into_iter().collect();
        for (name, value) in old_indexes.difference(&new_indexes) {
            self.txn.delete(
                Cf::RecordIndex,
                keys::record_index_key(self.ws, T::KIND, name, value, &id),
            );
        }
        for (name, value) in new_indexes.difference(&old_indexes) {
            self.txn.put(
                Cf::RecordIndex,
                keys::record_index_key(self.ws, T::KIND, name, value, &id),
                Vec::new(),
            );
        }
        self.txn.put(
            Cf::Records,
            keys::record_key(self.ws, T::KIND, &id),
            record::encode_record(rec)?,
        );
        Ok(())
    }

    /// Deletes a record and its lookups; false when it did not exist.
    pub fn delete_record<T: Record>(&mut self, id: &str) -> Result<bool, EngineError> {
        let Some(old) = self.get_record::<T>(id)? else {
            return Ok(false);
        };
        for (name, value) in old.indexes() {
            self.txn.delete(
                Cf::RecordIndex,
                keys::record_index_key(self.ws, T::KIND, name, &value, id),
            );
        }
        self.txn
            .delete(Cf::Records, keys::record_key(self.ws, T::KIND, id));
        Ok(true)
    }
}
