//! Format 3 -> 4: every typed record re-encoded from JSON to postcard (`record_encoding`).
//!
//! The engine knows no application record type, so the application hands its kinds over at
//! open (`GraphOptions::records`). Records already in postcard are skipped, so a step that was
//! interrupted, or that met kinds nobody registered, resumes on the next open; it reports done
//! (and the store is stamped 4) only once no JSON record is left. Record indexes depend on the
//! values, not on their encoding, so they stay as they are.

use std::collections::BTreeSet;

use super::Progress;
use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys;
use crate::record_encoding::POSTCARD_TAG;
use crate::record_kinds::RecordKinds;
use crate::store::{KvRead, Store};

/// Rewrites per batch: bounded memory on large stores.
const BATCH: usize = 1_000;

pub(super) fn reencode_records(
    store: &Store,
    kinds: &RecordKinds,
) -> Result<Progress, EngineError> {
    let mut batch = store.batch();
    let mut pending = 0usize;
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
        pending += 1;
        if pending >= BATCH {
            let full = std::mem::replace(&mut batch, store.batch());
            if let Err(e) = store.write(full) {
                failure = Some(e);
                return false;
            }
            pending = 0;
        }
        true
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    if !batch.is_empty() {
        store.write(batch)?;
    }
    store.sync_wal()?;
    Ok(if unregistered.is_empty() {
        Progress::Done
    } else {
        Progress::Pending
    })
}

#[cfg(test)]
mod tests {
    use super::super::{stamp, stored_version, FORMAT_VERSION};
    use super::*;
    use crate::model::WorkspaceId;
    use crate::record::Record;
    use crate::store::StoreOptions;
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
}
