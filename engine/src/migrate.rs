//! The on-disk format version and step-wise migrations.
//!
//! A new store is stamped with `FORMAT_VERSION`. Opening an older store runs each step from its
//! version up, stamping the version after every step, so an interrupted upgrade resumes where it
//! stopped. A store newer than this build is refused rather than misread.

mod records;

pub use records::{downgrade_to_format_three, record_census, RecordCensus};

use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys;
use crate::record_kinds::RecordKinds;
use crate::store::{Batch, KvRead, Store};

/// The format this build writes.
pub const FORMAT_VERSION: u32 = 4;

/// Whether a step finished. A step that cannot finish yet (format 4: records of kinds the
/// application did not register) leaves the version where it was, so a later open runs it
/// again; the store is readable meanwhile.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    Done,
    Pending,
}

/// One upgrade step: `steps[i]` turns format `i + 1` into format `i + 2`.
pub(crate) type Migration = fn(&Store, &RecordKinds) -> Result<Progress, EngineError>;

/// The steps of this build.
const MIGRATIONS: &[Migration] = &[
    |store, _| add_counts(store).map(|()| Progress::Done),
    |store, _| add_opportunity_id_index(store).map(|()| Progress::Done),
    records::reencode_records,
];

/// Indexes declared in format 3: built from the stored nodes when an older store opens.
const INDEXES_OF_FORMAT_3: &[(&str, &str)] = &[("Opportunity", "opportunityId")];

/// Format 2 -> 3: the equality index on `Opportunity.opportunityId` (the pipeline's key).
fn add_opportunity_id_index(store: &Store) -> Result<(), EngineError> {
    backfill_indexes(store, INDEXES_OF_FORMAT_3)
}

/// Writes the entries and value-type counters of newly declared (label, property) indexes
/// for every stored node that carries them. Before the declaration no write kept such entries,
/// so the counters are absolute totals and a step interrupted and run again gives the same
/// result. One pass over the nodes, batched.
fn backfill_indexes(store: &Store, indexes: &[(&str, &str)]) -> Result<(), EngineError> {
    let mut counts: std::collections::BTreeMap<Vec<u8>, i64> = Default::default();
    let mut batch = ChunkedBatch::new(store, 10_000);
    let mut failure = None;
    store.scan(Cf::Nodes, &[], None, false, &mut |k, v| {
        let (Some((ws, id)), Ok(node)) = (keys::decode_id_key(k), crate::codec::decode_node(v))
        else {
            failure = Some(EngineError::Corrupt {
                context: "node record",
                detail: format!("{k:?}"),
            });
            return false;
        };
        for (label, property) in indexes {
            if !node.labels.iter().any(|l| l == label) {
                continue;
            }
            let Some(value) = node.properties.get(*property).and_then(keys::index_value) else {
                continue;
            };
            let entry = keys::prop_index_key(ws, label, property, &value, crate::model::NodeId(id));
            if let Err(e) = batch.put(Cf::PropIndex, &entry, &[]) {
                failure = Some(e);
                return false;
            }
            *counts
                .entry(keys::index_count_key(ws, label, property, value[0]))
                .or_default() += 1;
        }
        true
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    for (k, n) in counts {
        batch.put(Cf::Counts, &k, &keys::count_bytes(n))?;
    }
    batch.finish()?;
    store.sync_wal()
}

/// A migration step's writes, in batches of at most `limit` puts (bounded memory on large
/// stores; each step is written so that running it again after an interruption is harmless).
pub(crate) struct ChunkedBatch<'s> {
    store: &'s Store,
    batch: Batch<'s>,
    pending: usize,
    limit: usize,
}

impl<'s> ChunkedBatch<'s> {
    pub fn new(store: &'s Store, limit: usize) -> ChunkedBatch<'s> {
        ChunkedBatch {
            store,
            batch: store.batch(),
            pending: 0,
            limit,
        }
    }

    pub fn put(&mut self, cf: Cf, key: &[u8], value: &[u8]) -> Result<(), EngineError> {
        self.batch.put(cf, key, value)?;
        self.pending += 1;
        if self.pending >= self.limit {
            let full = std::mem::replace(&mut self.batch, self.store.batch());
            self.store.write(full)?;
            self.pending = 0;
        }
        Ok(())
    }

    /// Writes what is left.
    pub fn finish(self) -> Result<(), EngineError> {
        if !self.batch.is_empty() {
            self.store.write(self.batch)?;
        }
        Ok(())
    }
}

/// Format 1 -> 2: the `counts` family (per-node, per-type degrees, per-index value-type
/// counts, per-type and per-endpoint-label relationship counts), computed from the adjacency
/// and property-index families, then from the edges and label bitmaps. Both are sorted so that
/// the keys one counter counts are adjacent, so this streams in constant memory. It writes
/// absolute totals, so a step interrupted and run again gives the same result.
fn add_counts(store: &Store) -> Result<(), EngineError> {
    let mut writer = CountWriter {
        store,
        pending: Vec::new(),
        current: None,
    };
    let mut failure = None;
    store.scan(Cf::Adjacency, &[], None, false, &mut |k, _| {
        match keys::decode_adjacency_key(k) {
            Some(a) => {
                if let Err(e) = writer.count(keys::degree_key_of_adjacency(&a)) {
                    failure = Some(e);
                }
            }
            None => {
                failure = Some(EngineError::Corrupt {
                    context: "adjacency key",
                    detail: format!("{k:?}"),
                })
            }
        }
        failure.is_none()
    })?;
    store.scan(Cf::PropIndex, &[], None, false, &mut |k, _| {
        match keys::index_count_key_of_entry(k) {
            Some(key) => {
                if let Err(e) = writer.count(key) {
                    failure = Some(e);
                }
            }
            None => {
                failure = Some(EngineError::Corrupt {
                    context: "property index key",
                    detail: format!("{k:?}"),
                })
            }
        }
        failure.is_none()
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    writer.finish()?;
    edge_counts(store)
}

/// The per-type and per-endpoint-label relationship counters, from the edges and the label
/// bitmaps (few keys: types x labels, summed in memory).
fn edge_counts(store: &Store) -> Result<(), EngineError> {
    let labels = crate::labels::LabelIndex::load(store)?.all();
    let mut counts: std::collections::BTreeMap<Vec<u8>, i64> = Default::default();
    let mut failure = None;
    store.scan(Cf::Edges, &[], None, false, &mut |k, v| {
        let (Some((ws, _)), Ok(e)) = (keys::decode_id_key(k), crate::codec::decode_edge(v)) else {
            failure = Some(EngineError::Corrupt {
                context: "edge record",
                detail: format!("{k:?}"),
            });
            return false;
        };
        *counts
            .entry(keys::type_count_key(ws, &e.rel_type))
            .or_default() += 1;
        for (label, bits) in labels.get(&ws).into_iter().flat_map(|m| m.iter()) {
            if label.is_empty() {
                continue; // the internal all-nodes bitmap
            }
            for (node, side) in [
                (e.start, crate::model::Direction::Outgoing),
                (e.end, crate::model::Direction::Incoming),
            ] {
                if bits.contains(node.0) {
                    *counts
                        .entry(keys::endpoint_label_key(ws, &e.rel_type, side, label))
                        .or_default() += 1;
                }
            }
        }
        true
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    let mut batch = store.batch();
    for (k, n) in counts {
        batch.put(Cf::Counts, &k, &keys::count_bytes(n))?;
    }
    if !batch.is_empty() {
        store.write(batch)?;
    }
    store.sync_wal()
}

/// Run-length counting of a sorted stream of counter keys into batched puts.
struct CountWriter<'s> {
    store: &'s Store,
    pending: Vec<(Vec<u8>, i64)>,
    current: Option<(Vec<u8>, i64)>,
}

impl CountWriter<'_> {
    fn count(&mut self, key: Vec<u8>) -> Result<(), EngineError> {
        match &mut self.current {
            Some((k, n)) if *k == key => *n += 1,
            _ => {
                if let Some(done) = self.current.replace((key, 1)) {
                    self.pending.push(done);
                    if self.pending.len() >= 10_000 {
                        self.flush()?;
                    }
                }
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), EngineError> {
        let mut batch = self.store.batch();
        for (k, n) in self.pending.drain(..) {
            batch.put(Cf::Counts, &k, &keys::count_bytes(n))?;
        }
        if !batch.is_empty() {
            self.store.write(batch)?;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(), EngineError> {
        if let Some(done) = self.current.take() {
            self.pending.push(done);
        }
        self.flush()?;
        self.store.sync_wal()
    }
}

pub(crate) fn stored_version(store: &Store) -> Result<Option<u32>, EngineError> {
    let Some(b) = store.get(Cf::Meta, keys::meta::FORMAT_VERSION)? else {
        return Ok(None);
    };
    let arr: [u8; 4] = b.as_slice().try_into().map_err(|_| EngineError::Corrupt {
        context: "format version",
        detail: format!("{b:?}"),
    })?;
    Ok(Some(u32::from_be_bytes(arr)))
}

fn stamp(store: &Store, version: u32) -> Result<(), EngineError> {
    let mut batch = store.batch();
    batch.put(Cf::Meta, keys::meta::FORMAT_VERSION, &version.to_be_bytes())?;
    store.write(batch)?;
    store.sync_wal()
}

fn is_empty(store: &Store) -> Result<bool, EngineError> {
    let mut empty = true;
    for cf in Cf::ALL {
        store.scan(cf, &[], None, false, &mut |_, _| {
            empty = false;
            false
        })?;
    }
    Ok(empty)
}

/// Brings the store to this build's format; returns the version found before.
pub(crate) fn run(store: &Store, kinds: &RecordKinds) -> Result<Option<u32>, EngineError> {
    upgrade(store, FORMAT_VERSION, MIGRATIONS, kinds)
}

pub(crate) fn upgrade(
    store: &Store,
    target: u32,
    steps: &[Migration],
    kinds: &RecordKinds,
) -> Result<Option<u32>, EngineError> {
    let found = stored_version(store)?;
    let mut version = match found {
        Some(v) => v,
        None if is_empty(store)? => {
            stamp(store, target)?;
            return Ok(None);
        }
        None => {
            return Err(EngineError::Corrupt {
                context: "format version",
                detail: "missing in a non-empty store".into(),
            })
        }
    };
    if version > target {
        return Err(EngineError::FormatTooNew {
            found: version,
            supported: target,
        });
    }
    while version < target {
        let step = steps
            .get(version as usize - 1)
            .ok_or_else(|| EngineError::Corrupt {
                context: "format version",
                detail: format!("no migration from format {version}"),
            })?;
        if step(store, kinds)? == Progress::Pending {
            break;
        }
        version += 1;
        stamp(store, version)?;
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreOptions;

    fn mark_two(store: &Store, _: &RecordKinds) -> Result<Progress, EngineError> {
        let mut b = store.batch();
        b.put(Cf::Meta, b"step2", b"done")?;
        store.write(b)?;
        Ok(Progress::Done)
    }

    fn mark_three(store: &Store, _: &RecordKinds) -> Result<Progress, EngineError> {
        // A step sees the previous step's result.
        assert_eq!(
            store.get(Cf::Meta, b"step2")?.as_deref(),
            Some(&b"done"[..])
        );
        let mut b = store.batch();
        b.put(Cf::Meta, b"step3", b"done")?;
        store.write(b)?;
        Ok(Progress::Done)
    }

    #[test]
    fn new_stores_are_stamped_and_old_ones_upgraded_step_by_step() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("open");
        assert_eq!(
            upgrade(&store, 1, &[], &RecordKinds::new()).expect("stamp"),
            None
        );
        assert_eq!(stored_version(&store).expect("read"), Some(1));
        let steps: &[Migration] = &[mark_two, mark_three];
        assert_eq!(
            upgrade(&store, 3, steps, &RecordKinds::new()).expect("upgrade"),
            Some(1)
        );
        assert_eq!(stored_version(&store).expect("read"), Some(3));
        assert_eq!(
            store.get(Cf::Meta, b"step3").expect("read").as_deref(),
            Some(&b"done"[..])
        );
        // Running again is a no-op.
        assert_eq!(
            upgrade(&store, 3, steps, &RecordKinds::new()).expect("again"),
            Some(3)
        );
    }

    #[test]
    fn format_one_stores_gain_exact_counters() {
        use crate::model::{Direction, Properties, Value, WorkspaceId};
        use crate::read::{GraphRead, GraphWrite};
        use crate::{Graph, GraphOptions};
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = WorkspaceId(3);
        let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open");
        let (hub, spokes) = graph
            .write(move |txn| {
                let mut w = txn.workspace(ws);
                let mut p = Properties::new();
                p.insert("score".into(), Value::Float(0.5));
                let hub = w.create_node(&["Campaign"], Properties::new())?;
                let mut spokes = Vec::new();
                for _ in 0..5 {
                    let s = w.create_node(&["Customer"], p.clone())?;
                    w.create_edge(s, hub, "INFLUENCED_BY", Properties::new())?;
                    spokes.push(s);
                }
                Ok::<_, EngineError>((hub, spokes))
            })
            .expect("write");
        drop(graph);
        // Make it a format-1 store: no counters, version 1.
        {
            let store = Store::open(dir.path(), &StoreOptions::default()).expect("open");
            let mut keys_found = Vec::new();
            store
                .scan(Cf::Counts, &[], None, false, &mut |k, _| {
                    keys_found.push(k.to_vec());
                    true
                })
                .expect("scan");
            assert!(!keys_found.is_empty());
            let mut b = store.batch();
            for k in &keys_found {
                b.delete(Cf::Counts, k).expect("delete");
            }
            store.write(b).expect("write");
            stamp(&store, 1).expect("stamp");
        }
        let graph = Graph::open(dir.path(), GraphOptions::default()).expect("migrates");
        assert!(graph.validate().expect("validate").is_ok());
        let snap = graph.snapshot(ws);
        assert_eq!(
            snap.degree(hub, Direction::Incoming, Some("INFLUENCED_BY"))
                .expect("degree"),
            5
        );
        assert_eq!(
            snap.degree(spokes[0], Direction::Outgoing, None)
                .expect("degree"),
            1
        );
        assert_eq!(
            snap.index_stats("Customer", "score")
                .expect("stats")
                .map(|s| s.numbers),
            Some(5)
        );
        drop(snap);
        drop(graph);
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("open");
        assert_eq!(stored_version(&store).expect("read"), Some(FORMAT_VERSION));
    }

    #[test]
    fn format_two_stores_gain_the_opportunity_id_index() {
        use crate::model::{Properties, Value, WorkspaceId};
        use crate::read::{GraphRead, GraphWrite};
        use crate::{Graph, GraphOptions};
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = WorkspaceId(4);
        let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open");
        let opp = graph
            .write(move |txn| {
                let mut w = txn.workspace(ws);
                let mut p = Properties::new();
                p.insert("opportunityId".into(), Value::String("hubspot:9".into()));
                let o = w.create_node(&["Opportunity"], p)?;
                // Not an opportunity: never indexed.
                let mut q = Properties::new();
                q.insert("opportunityId".into(), Value::String("hubspot:9".into()));
                w.create_node(&["Customer"], q)?;
                Ok::<_, EngineError>(o)
            })
            .expect("write");
        drop(graph);
        // Make it a format-2 store: the index and its counter gone, version 2.
        {
            let store = Store::open(dir.path(), &StoreOptions::default()).expect("open");
            let prefix = keys::prop_index_prefix(ws, "Opportunity", "opportunityId");
            let mut found = Vec::new();
            store
                .scan(Cf::PropIndex, &prefix, None, false, &mut |k, _| {
                    if k.starts_with(&prefix) {
                        found.push(k.to_vec());
                    }
                    true
                })
                .expect("scan");
            assert_eq!(found.len(), 1);
            let mut b = store.batch();
            b.delete(Cf::PropIndex, &found[0]).expect("delete");
            let tag = keys::index_value(&Value::String(String::new())).expect("tag")[0];
            b.delete(
                Cf::Counts,
                &keys::index_count_key(ws, "Opportunity", "opportunityId", tag),
            )
            .expect("delete");
            store.write(b).expect("write");
            stamp(&store, 2).expect("stamp");
        }
        let graph = Graph::open(dir.path(), GraphOptions::default()).expect("migrates");
        assert!(graph.validate().expect("validate").is_ok());
        let snap = graph.snapshot(ws);
        assert_eq!(
            snap.index_seek(
                "Opportunity",
                "opportunityId",
                &Value::String("hubspot:9".into())
            )
            .expect("seek"),
            Some(vec![opp])
        );
        assert_eq!(
            snap.index_stats("Opportunity", "opportunityId")
                .expect("stats")
                .map(|s| s.strings),
            Some(1)
        );
        drop(snap);
        drop(graph);
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("open");
        assert_eq!(stored_version(&store).expect("read"), Some(FORMAT_VERSION));
    }

    #[test]
    fn newer_formats_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("open");
        stamp(&store, 9).expect("stamp");
        assert!(matches!(
            upgrade(&store, 1, &[], &RecordKinds::new()),
            Err(EngineError::FormatTooNew {
                found: 9,
                supported: 1
            })
        ));
    }
}
