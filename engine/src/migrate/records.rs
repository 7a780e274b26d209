//! Format 3 -> 4: every typed record re-encoded from JSON to postcard (`record_encoding`).
//!
//! The engine knows no application record type, so the application hands its kinds over at
//! open (`GraphOptions::records`). Records already in postcard are skipped, so a step that was
//! interrupted, or that met kinds nobody registered, resumes on the next open; it reports done
//! (and the store is stamped 4) only once no JSON record is left. Record indexes depend on the
//! values, not on their encoding, so they stay as they are.

use std::collections::BTreeSet;

use super::{ChunkedBatch, Progress};
use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys;
use crate::record_encoding::POSTCARD_TAG;
use crate::record_kinds::RecordKinds;
use crate::store::{KvRead, Store, StoreOptions};
use std::path::Path;

/// Rewrites per batch: bounded memory on large stores.
const BATCH: usize = 1_000;

pub(super) fn reencode_records(
    store: &Store,
    kinds: &RecordKinds,
) -> Result<Progress, EngineError> {
    let mut batch = ChunkedBatch::new(store, BATCH);
    let mut unregistered = BTreeSet::new();
    let mut failure = None;
    store.scan(Cf::Records, &[], None, false, &mut |k, v| {
        if v.first() == Some(&POSTCARD_TAG) {
            return true;
        }
        let Some(kind) = keys::decode_record_kind(k) else {
            failure = Some(EngineError::Corrupt {
                context: "record key",
                detail: format!("{k:?}"),
            });
            return false;
        };
        let bytes = match kinds.transcode(&kind, v) {
            None => {
                unregistered.insert(kind);
                return true;
            }
            Some(Ok(bytes)) => bytes,
            Some(Err(e)) => {
                failure = Some(e);
                return false;
            }
        };
        if let Err(e) = batch.put(Cf::Records, k, &bytes) {
            failure = Some(e);
            return false;
        }
        true
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    batch.finish()?;
    store.sync_wal()?;
    Ok(if unregistered.is_empty() {
        Progress::Done
    } else {
        Progress::Pending
    })
}

/// How the records of a store are encoded, and its format version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordCensus {
    pub version: Option<u32>,
    pub json: usize,
    pub postcard: usize,
}

fn census(store: &Store) -> Result<RecordCensus, EngineError> {
    let mut out = RecordCensus {
        version: super::stored_version(store)?,
        ..RecordCensus::default()
    };
    store.scan(Cf::Records, &[], None, false, &mut |_, v| {
        if v.first() == Some(&POSTCARD_TAG) {
            out.postcard += 1;
        } else {
            out.json += 1;
        }
        true
    })?;
    Ok(out)
}

/// The census of the (closed) store at `path`.
pub fn record_census(path: &Path) -> Result<RecordCensus, EngineError> {
    census(&Store::open(path, &StoreOptions::default())?)
}

/// Format 4 -> 3, for a rollback to a build before format 4 (and for tests that need a store
/// as such a build left it): every record rewritten as the JSON that build wrote, then the
/// version stamped 3. The store at `path` must be closed. Fails, before stamping, on a record
/// of a kind missing from `kinds`; the store then stays at format 4 with some records in JSON,
/// which this build still reads.
pub fn downgrade_to_format_three(
    path: &Path,
    kinds: &RecordKinds,
) -> Result<RecordCensus, EngineError> {
    let store = Store::open(path, &StoreOptions::default())?;
    match super::stored_version(&store)? {
        Some(3 | 4) => {}
        other => {
            return Err(EngineError::invalid(
                "format version",
                format!("only a format 4 store goes back to format 3, not {other:?}"),
            ))
        }
    }
    let mut batch = ChunkedBatch::new(&store, BATCH);
    let mut failure = None;
    store.scan(Cf::Records, &[], None, false, &mut |k, v| {
        if v.first() != Some(&POSTCARD_TAG) {
            return true;
        }
        let json = keys::decode_record_kind(k)
            .ok_or_else(|| EngineError::Corrupt {
                context: "record key",
                detail: format!("{k:?}"),
            })
            .and_then(|kind| {
                kinds.to_legacy(&kind, v).unwrap_or_else(|| {
                    Err(EngineError::invalid(
                        "record kind",
                        format!("{kind} is not registered"),
                    ))
                })
            })
            .and_then(|json| batch.put(Cf::Records, k, &json));
        if let Err(e) = json {
            failure = Some(e);
            return false;
        }
        true
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    batch.finish()?;
    super::stamp(&store, 3)?;
    census(&store)
}

#[cfg(test)]
mod tests {
    use super::super::{stamp, stored_version, FORMAT_VERSION};
    use super::*;
    use crate::model::WorkspaceId;
    use crate::record::Record;
    use crate::{Graph, GraphOptions};
    use serde::{Deserialize, Serialize};

    const WS: WorkspaceId = WorkspaceId(5);

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Account {
        id: String,
        email: String,
        #[serde(
            default,
            skip_serializing_if = "crate::record_encoding::skip_none_in_json"
        )]
        closed_at: Option<String>,
    }

    impl Record for Account {
        const KIND: &'static str = "account";
        fn id(&self) -> String {
            self.id.clone()
        }
        fn indexes(&self) -> Vec<(&'static str, String)> {
            vec![("email", self.email.clone())]
        }
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Tick {
        id: String,
        n: u64,
    }

    impl Record for Tick {
        const KIND: &'static str = "tick";
        fn id(&self) -> String {
            self.id.clone()
        }
    }

    fn accounts() -> Vec<Account> {
        (0..2_500)
            .map(|i| Account {
                id: format!("acc_{i:05}"),
                email: format!("a{}@example.com", i % 7),
                closed_at: (i % 2 == 0).then(|| "2026-01-01T00:00:00Z".to_owned()),
            })
            .collect()
    }

    fn ticks() -> Vec<Tick> {
        (0..3)
            .map(|n| Tick {
                id: format!("t{n}"),
                n,
            })
            .collect()
    }

    /// The records as a format-3 build left them: JSON values, version 3.
    fn write_format_three(dir: &std::path::Path) {
        let graph = Graph::open(dir, GraphOptions::default()).expect("open");
        graph
            .write(|txn| {
                let mut w = txn.workspace(WS);
                for a in accounts() {
                    w.put_record(&a)?;
                }
                for t in ticks() {
                    w.put_record(&t)?;
                }
                Ok::<_, EngineError>(())
            })
            .expect("write");
        drop(graph);
        let store = Store::open(dir, &StoreOptions::default()).expect("open");
        let mut b = store.batch();
        for a in accounts() {
            let json = serde_json::to_vec(&a).expect("json");
            b.put(
                Cf::Records,
                &keys::record_key(WS, Account::KIND, &a.id),
                &json,
            )
            .expect("put");
        }
        for t in ticks() {
            let json = serde_json::to_vec(&t).expect("json");
            b.put(Cf::Records, &keys::record_key(WS, Tick::KIND, &t.id), &json)
                .expect("put");
        }
        store.write(b).expect("write");
        stamp(&store, 3).expect("stamp");
    }

    /// (kind, first byte) of every stored record, and the stored version.
    fn encodings(dir: &std::path::Path) -> (Vec<(String, u8)>, Option<u32>) {
        let store = Store::open(dir, &StoreOptions::default()).expect("open");
        let mut found = Vec::new();
        store
            .scan(Cf::Records, &[], None, false, &mut |k, v| {
                found.push((keys::decode_record_kind(k).expect("kind"), v[0]));
                true
            })
            .expect("scan");
        (found, stored_version(&store).expect("version"))
    }

    fn assert_readable(graph: &Graph) {
        for a in accounts() {
            assert_eq!(
                graph.get_record::<Account>(WS, &a.id).expect("get"),
                Some(a)
            );
        }
        assert_eq!(
            graph
                .find_records::<Account>(WS, "email", "a3@example.com")
                .expect("find")
                .len(),
            accounts()
                .iter()
                .filter(|a| a.email == "a3@example.com")
                .count()
        );
        for t in ticks() {
            assert_eq!(graph.get_record::<Tick>(WS, &t.id).expect("get"), Some(t));
        }
    }

    #[test]
    fn format_three_records_are_reencoded_once_every_kind_is_registered() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_format_three(dir.path());
        let (before, version) = encodings(dir.path());
        assert_eq!(version, Some(3));
        assert!(before.iter().all(|(_, tag)| *tag == b'{'));

        // Only one kind registered: its records move to postcard, the others stay JSON and
        // readable, and the store stays at format 3.
        let options = GraphOptions {
            records: RecordKinds::new().with::<Account>(),
            ..GraphOptions::default()
        };
        let graph = Graph::open(dir.path(), options).expect("open");
        assert_readable(&graph);
        drop(graph);
        let (partial, version) = encodings(dir.path());
        assert_eq!(version, Some(3));
        for (kind, tag) in &partial {
            let want = if kind == Account::KIND {
                POSTCARD_TAG
            } else {
                b'{'
            };
            assert_eq!(*tag, want, "{kind}");
        }

        // Every kind registered: the step resumes, finishes and the store is stamped 4.
        let options = GraphOptions {
            records: RecordKinds::new().with::<Account>().with::<Tick>(),
            ..GraphOptions::default()
        };
        let graph = Graph::open(dir.path(), options.clone()).expect("open");
        assert_readable(&graph);
        assert!(graph.validate().expect("validate").is_ok());
        drop(graph);
        let (after, version) = encodings(dir.path());
        assert_eq!(version, Some(FORMAT_VERSION));
        assert_eq!(after.len(), before.len());
        assert!(after.iter().all(|(_, tag)| *tag == POSTCARD_TAG));
        // Opening again is a no-op.
        let graph = Graph::open(dir.path(), options).expect("open");
        assert_readable(&graph);
    }

    #[test]
    fn a_record_that_does_not_decode_stops_the_upgrade() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_format_three(dir.path());
        {
            let store = Store::open(dir.path(), &StoreOptions::default()).expect("open");
            let mut b = store.batch();
            b.put(
                Cf::Records,
                &keys::record_key(WS, Tick::KIND, "t0"),
                b"{\"id\":1}",
            )
            .expect("put");
            store.write(b).expect("write");
        }
        let options = GraphOptions {
            records: RecordKinds::new().with::<Account>().with::<Tick>(),
            ..GraphOptions::default()
        };
        let err = Graph::open(dir.path(), options).expect_err("refused");
        assert!(err.to_string().contains("tick"), "{err}");
        assert_eq!(encodings(dir.path()).1, Some(3));
    }

    #[test]
    fn format_four_goes_back_to_format_three_and_forward_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_format_three(dir.path());
        let kinds = RecordKinds::new().with::<Account>().with::<Tick>();
        let options = GraphOptions {
            records: kinds.clone(),
            ..GraphOptions::default()
        };
        drop(Graph::open(dir.path(), options.clone()).expect("migrates"));
        let n = accounts().len() + ticks().len();
        let forward = RecordCensus {
            version: Some(4),
            json: 0,
            postcard: n,
        };
        assert_eq!(record_census(dir.path()).expect("census"), forward);
        let back = downgrade_to_format_three(dir.path(), &kinds).expect("downgrade");
        assert_eq!(
            back,
            RecordCensus {
                version: Some(3),
                json: n,
                postcard: 0
            }
        );
        // The JSON is what a format-3 build wrote: the record's serde_json bytes.
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("open");
        let key = keys::record_key(WS, Account::KIND, "acc_00001");
        let want = serde_json::to_vec(&accounts()[1]).expect("json");
        assert_eq!(store.get(Cf::Records, &key).expect("get"), Some(want));
        drop(store);
        // An unregistered kind is refused.
        let graph = Graph::open(dir.path(), options).expect("migrates again");
        assert_readable(&graph);
        drop(graph);
        assert_eq!(record_census(dir.path()).expect("census"), forward);
        let only_accounts = RecordKinds::new().with::<Account>();
        assert!(downgrade_to_format_three(dir.path(), &only_accounts).is_err());
        assert_eq!(record_census(dir.path()).expect("census").version, Some(4));
    }
}
