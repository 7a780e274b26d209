//! The RocksDB wrapper: the only module that imports `rocksdb`.
//!
//! It knows column families, batches, snapshots and the label-bitmap merge operator, and
//! nothing about graphs.

use std::path::Path;

use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor, DBAccess, MergeOperands,
    Options, ReadOptions, SnapshotWithThreadMode, WriteBatch, WriteOptions, DB,
};

use crate::bitmap;
use crate::columns::Cf;
use crate::error::EngineError;

impl From<rocksdb::Error> for EngineError {
    fn from(e: rocksdb::Error) -> Self {
        EngineError::Storage(e.into_string())
    }
}

/// Tuning knobs of the store.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Shared block cache for all column families.
    pub block_cache_bytes: usize,
    /// Memtable size per column family.
    pub write_buffer_bytes: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            block_cache_bytes: 128 << 20,
            write_buffer_bytes: 32 << 20,
        }
    }
}

/// Key-value reads shared by the live store, snapshots and write transactions.
pub(crate) trait KvRead {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError>;
    /// Visits the entries with `lower <= key < upper` (no upper bound when None), ascending or
    /// descending; the visitor returns false to stop.
    fn scan(
        &self,
        cf: Cf,
        lower: &[u8],
        upper: Option<&[u8]>,
        reverse: bool,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), EngineError>;
}

pub(crate) struct Store {
    db: DB,
    /// Injected write and fsync failures (unit tests only).
    #[cfg(test)]
    pub faults: crate::faults::Faults,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.db.path())
            .finish()
    }
}

fn labels_full_merge(_key: &[u8], existing: Option<&[u8]>, ops: &MergeOperands) -> Option<Vec<u8>> {
    bitmap::full_merge(existing, ops.iter())
}

fn labels_partial_merge(
    _key: &[u8],
    _existing: Option<&[u8]>,
    ops: &MergeOperands,
) -> Option<Vec<u8>> {
    bitmap::partial_merge(ops.iter())
}

/// Sums i64 counters (`Cf::Counts`): the existing total plus every delta.
fn counts_full_merge(_key: &[u8], existing: Option<&[u8]>, ops: &MergeOperands) -> Option<Vec<u8>> {
    let mut total = match existing {
        Some(b) => crate::keys::read_count(b)?,
        None => 0,
    };
    for op in ops.iter() {
        total = total.wrapping_add(crate::keys::read_count(op)?);
    }
    Some(crate::keys::count_bytes(total).to_vec())
}

fn counts_partial_merge(
    key: &[u8],
    _existing: Option<&[u8]>,
    ops: &MergeOperands,
) -> Option<Vec<u8>> {
    counts_full_merge(key, None, ops)
}

impl Store {
    pub fn open(path: &Path, options: &StoreOptions) -> Result<Store, EngineError> {
        let cache = Cache::new_lru_cache(options.block_cache_bytes);
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        table.set_bloom_filter(10.0, false);
        table.set_cache_index_and_filter_blocks(true);

        let mut db_opts = Options::default();
        db_opts.create_if_missing(true);
        db_opts.create_missing_column_families(true);
        db_opts.set_max_background_jobs(2);
        db_opts.set_compression_type(rocksdb::DBCompressionType::Lz4);

        let descriptors = Cf::ALL.iter().map(|cf| {
            let mut o = Options::default();
            o.set_block_based_table_factory(&table);
            o.set_write_buffer_size(options.write_buffer_bytes);
            o.set_compression_type(rocksdb::DBCompressionType::Lz4);
            // Point lookups (identity misses for new customers, node reads) skip the memtable
            // skiplist when its bloom filter says the key is absent.
            o.set_memtable_whole_key_filtering(true);
            o.set_memtable_prefix_bloom_ratio(0.05);
            if *cf == Cf::Labels {
                o.set_merge_operator(
                    "svc_label_bitmap_v1",
                    labels_full_merge,
                    labels_partial_merge,
                );
            }
            if *cf == Cf::Counts {
                o.set_merge_operator("svc_count_v1", counts_full_merge, counts_partial_merge);
            }
            ColumnFamilyDescriptor::new(cf.name(), o)
        });
        let db = DB::open_cf_descriptors(&db_opts, path, descriptors)?;
        Ok(Store {
            db,
            #[cfg(test)]
            faults: Default::default(),
        })
    }

    fn handle(&self, cf: Cf) -> Result<&ColumnFamily, EngineError> {
        self.db
            .cf_handle(cf.name())
            .ok_or_else(|| EngineError::Storage(format!("column family {} is missing", cf.name())))
    }

    /// A new, empty batch for this store.
    pub fn batch(&self) -> Batch<'_> {
        Batch {
            store: self,
            inner: WriteBatch::default(),
        }
    }

    /// Applies a batch atomically. It is in the WAL (visible, and safe from a process crash)
    /// but not yet fsynced: `sync_wal` makes it durable; the writer acknowledges only after that.
    pub fn write(&self, batch: Batch<'_>) -> Result<(), EngineError> {
        let mut opts = WriteOptions::default();
        opts.set_sync(false);
        // A batch lists each family's keys in order (the overlay is sorted), so each insert
        // can start from the previous one instead of the skiplist's head.
        opts.set_memtable_insert_hint_per_batch(true);
        #[cfg(test)]
        self.faults.before_write()?;
        self.db.write_opt(batch.inner, &opts)?;
        Ok(())
    }

    /// Makes every write so far durable (one fsync shared by all of them: group commit).
    pub fn sync_wal(&self) -> Result<(), EngineError> {
        #[cfg(test)]
        self.faults.before_sync()?;
        self.db.flush_wal(true)?;
        Ok(())
    }

    /// Writes a consistent copy of the whole store into `dest`, which must not exist yet (a
    /// RocksDB checkpoint: SST files hard-linked when `dest` is on the same file system, the
    /// WAL copied). Everything written before the call is in it; the copy opens as a store.
    pub fn checkpoint(&self, dest: &Path) -> Result<(), EngineError> {
        rocksdb::checkpoint::Checkpoint::new(&self.db)?.create_checkpoint(dest)?;
        Ok(())
    }

    /// A consistent read view of the whole store.
    pub fn snapshot(&self) -> StoreSnapshot<'_> {
        StoreSnapshot {
            cursors: Default::default(),
            store: self,
            snap: self.db.snapshot(),
        }
    }

    fn read_options(lower: &[u8], upper: Option<&[u8]>) -> ReadOptions {
        let mut ro = ReadOptions::default();
        ro.set_iterate_lower_bound(lower.to_vec());
        if let Some(u) = upper {
            ro.set_iterate_upper_bound(u.to_vec());
        }
        ro
    }
}

fn run_scan<D: DBAccess>(
    mut it: rocksdb::DBRawIteratorWithThreadMode<'_, D>,
    reverse: bool,
    visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
) -> Result<(), EngineError> {
    if reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    while it.valid() {
        let (Some(k), Some(v)) = (it.key(), it.value()) else {
            break;
        };
        if !visit(k, v) {
            return Ok(());
        }
        if reverse {
            it.prev();
        } else {
            it.next();
        }
    }
    it.status()?;
    Ok(())
}

impl KvRead for Store {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
        Ok(self
            .db
            .get_pinned_cf(self.handle(cf)?, key)?
            .map(|v| v.to_vec()))
    }

    fn scan(
        &self,
        cf: Cf,
        lower: &[u8],
        upper: Option<&[u8]>,
        reverse: bool,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), EngineError> {
        let it = self
            .db
            .raw_iterator_cf_opt(self.handle(cf)?, Store::read_options(lower, upper));
        run_scan(it, reverse, visit)
    }
}

type Cursor<'a> = rocksdb::DBRawIteratorWithThreadMode<'a, DB>;

/// A point-in-time view of the store.
pub(crate) struct StoreSnapshot<'a> {
    /// One reusable iterator per column family. Creating a RocksDB iterator costs far more than
    /// seeking one, and queries scan thousands of short ranges (one adjacency list per node of
    /// an expansion). Declared before `snap`: an iterator must be dropped before its snapshot.
    cursors: [parking_lot::Mutex<Option<Cursor<'a>>>; Cf::ALL.len()],
    store: &'a Store,
    snap: SnapshotWithThreadMode<'a, DB>,
}

impl<'a> StoreSnapshot<'a> {
    /// Forward scan on the family's reusable iterator: seek, then stop at `upper` by hand (the
    /// iterator has no bounds, so it serves every range).
    fn scan_with_cursor(
        &self,
        cursor: &mut Option<Cursor<'a>>,
        cf: Cf,
        lower: &[u8],
        upper: Option<&[u8]>,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), EngineError> {
        let it = match cursor {
            Some(it) => it,
            None => {
                let mut ro = ReadOptions::default();
                ro.set_snapshot(&self.snap);
                cursor.insert(
                    self.store
                        .db
                        .raw_iterator_cf_opt(self.store.handle(cf)?, ro),
                )
            }
        };
        it.seek(lower);
        while it.valid() {
            let (Some(k), Some(v)) = (it.key(), it.value()) else {
                break;
            };
            if upper.is_some_and(|u| k >= u) || !visit(k, v) {
                return Ok(());
            }
            it.next();
        }
        it.status()?;
        Ok(())
    }
}

/// What the visitor of `StoreSnapshot::walk` wants next.
pub(crate) enum Step {
    /// The following key.
    Next,
    /// The first key at or after this one (far ahead: cheaper than many `Next`s).
    Seek(Vec<u8>),
    Stop,
}

impl StoreSnapshot<'_> {
    /// A forward walk over `[lower, upper)` on an iterator of its own, where the visitor may
    /// jump ahead: a sequential read of many keys that skips the gaps between them.
    pub fn walk(
        &self,
        cf: Cf,
        lower: &[u8],
        upper: Option<&[u8]>,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> Step,
    ) -> Result<(), EngineError> {
        let mut ro = Store::read_options(lower, upper);
        ro.set_snapshot(&self.snap);
        let mut it = self
            .store
            .db
            .raw_iterator_cf_opt(self.store.handle(cf)?, ro);
        it.seek(lower);
        while it.valid() {
            let (Some(k), Some(v)) = (it.key(), it.value()) else {
                break;
            };
            match visit(k, v) {
                Step::Next => it.next(),
                Step::Seek(to) => it.seek(&to),
                Step::Stop => return Ok(()),
            }
        }
        it.status()?;
        Ok(())
    }
}

impl KvRead for StoreSnapshot<'_> {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
        Ok(self
            .snap
            .get_pinned_cf(self.store.handle(cf)?, key)?
            .map(|v| v.to_vec()))
    }

    fn scan(
        &self,
        cf: Cf,
        lower: &[u8],
        upper: Option<&[u8]>,
        reverse: bool,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), EngineError> {
        if !reverse {
            // A visitor that scans the same family again finds the cursor busy and gets an
            // iterator of its own.
            let slot = Cf::ALL.iter().position(|c| *c == cf).unwrap_or(0);
            if let Some(mut cursor) = self.cursors[slot].try_lock() {
                return self.scan_with_cursor(&mut cursor, cf, lower, upper, visit);
            }
        }
        let mut ro = Store::read_options(lower, upper);
        ro.set_snapshot(&self.snap);
        let it = self
            .store
            .db
            .raw_iterator_cf_opt(self.store.handle(cf)?, ro);
        run_scan(it, reverse, visit)
    }
}

/// An atomic set of writes across column families.
pub(crate) struct Batch<'a> {
    store: &'a Store,
    inner: WriteBatch,
}

impl Batch<'_> {
    pub fn put(&mut self, cf: Cf, key: &[u8], value: &[u8]) -> Result<(), EngineError> {
        self.inner.put_cf(self.store.handle(cf)?, key, value);
        Ok(())
    }

    pub fn delete(&mut self, cf: Cf, key: &[u8]) -> Result<(), EngineError> {
        self.inner.delete_cf(self.store.handle(cf)?, key);
        Ok(())
    }

    /// Queues a merge operand (only the label and count families have merge operators).
    pub fn merge(&mut self, cf: Cf, key: &[u8], operand: &[u8]) -> Result<(), EngineError> {
        self.inner.merge_cf(self.store.handle(cf)?, key, operand);
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(kv: &dyn KvRead, lower: &[u8], upper: Option<&[u8]>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        kv.scan(Cf::Adjacency, lower, upper, false, &mut |k, _| {
            out.push(k.to_vec());
            true
        })
        .expect("scan");
        out
    }

    #[test]
    fn snapshot_scans_on_the_reused_cursor_keep_their_bounds_and_nest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("open");
        let mut batch = store.batch();
        for k in [&b"a1"[..], b"a2", b"b1", b"b2", b"b3", b"c1"] {
            batch.put(Cf::Adjacency, k, b"").expect("put");
        }
        store.write(batch).expect("write");
        let snap = store.snapshot();
        // Written after the snapshot: invisible to it.
        let mut later = store.batch();
        later.put(Cf::Adjacency, b"b4", b"").expect("put");
        store.write(later).expect("write");

        assert_eq!(collect(&snap, b"b", Some(b"c")), [b"b1", b"b2", b"b3"]);
        assert_eq!(collect(&snap, b"a", Some(b"b")), [b"a1", b"a2"]);
        assert_eq!(collect(&snap, b"c", None), [b"c1"]);
        assert!(collect(&snap, b"d", None).is_empty());
        // A visitor that scans the same family again while the cursor is busy.
        let mut nested = Vec::new();
        snap.scan(Cf::Adjacency, b"a", Some(b"b"), false, &mut |k, _| {
            nested.push((k.to_vec(), collect(&snap, b"b", Some(b"c")).len()));
            true
        })
        .expect("scan");
        assert_eq!(nested, [(b"a1".to_vec(), 3), (b"a2".to_vec(), 3)]);
        // The live store sees the later write.
        assert_eq!(collect(&store, b"b", Some(b"c")).len(), 4);
    }

    #[test]
    fn checkpoint_holds_every_write_and_opens_as_a_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("live"), &StoreOptions::default()).expect("open");
        let mut batch = store.batch();
        for k in [&b"k1"[..], b"k2", b"k3"] {
            batch.put(Cf::Adjacency, k, b"v").expect("put");
        }
        store.write(batch).expect("write");
        let dest = dir.path().join("copy");
        store.checkpoint(&dest).expect("checkpoint");
        assert!(
            store.checkpoint(&dest).is_err(),
            "an existing destination is refused"
        );
        let mut later = store.batch();
        later.put(Cf::Adjacency, b"k4", b"v").expect("put");
        store.write(later).expect("write");
        let copy = Store::open(&dest, &StoreOptions::default()).expect("open the copy");
        assert_eq!(collect(&copy, b"k", None), [b"k1", b"k2", b"k3"]);
    }
}
