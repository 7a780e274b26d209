//! The write pipeline: a group is prepared while the one before it is still being committed,
//! so every read inside a write closure must see all earlier writes, landed or not.

mod common;

use std::sync::Arc;

use common::*;
use serde::{Deserialize, Serialize};
use svc_engine::{
    EngineError, Graph, GraphOptions, GraphRead, GraphWrite, Properties, Record, Value,
};

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Counter {
    id: String,
    n: u64,
}

impl Record for Counter {
    const KIND: &'static str = "counter";
    fn id(&self) -> String {
        self.id.clone()
    }
    fn indexes(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

/// One increment: read the counter and the Tick label count, check they agree, then add one
/// to both. Any lost or reordered earlier write makes them disagree or the final total short.
fn increment(graph: &Graph) -> Result<u64, EngineError> {
    graph.write(|txn| {
        let mut w = txn.workspace(WS);
        let n = w
            .get_record::<Counter>("c")?
            .map(|c| c.n)
            .unwrap_or_default();
        let ticks = w.label_count("Tick")?;
        assert_eq!(ticks, n, "a write closure saw a stale label bitmap");
        let mut p = Properties::new();
        p.insert("n".into(), Value::Int(n as i64 + 1));
        w.create_node(&["Tick"], p)?;
        w.put_record(&Counter {
            id: "c".into(),
            n: n + 1,
        })?;
        Ok(n + 1)
    })
}

#[test]
fn every_write_sees_every_earlier_write_while_groups_overlap() {
    // Tiny groups, so groups close while other closures wait and the pipeline is always full.
    let dir = tempfile::tempdir().expect("tempdir");
    let options = GraphOptions {
        max_group_jobs: 2,
        max_group_writes: 8,
        ..GraphOptions::default()
    };
    let graph = Arc::new(Graph::open(dir.path(), options).expect("open"));
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let graph = Arc::clone(&graph);
            std::thread::spawn(move || {
                for i in 0..150 {
                    increment(&graph).expect("increment");
                    if (t + i) % 37 == 0 {
                        // A failing closure in the middle of a group leaves no trace.
                        let failed: Result<(), EngineError> = graph.write(|txn| {
                            let mut w = txn.workspace(WS);
                            w.create_node(&["Tick"], Properties::new())?;
                            w.put_record(&Counter {
                                id: "c".into(),
                                n: 1_000_000,
                            })?;
                            Err(EngineError::NoIdentity)
                        });
                        assert!(failed.is_err());
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("writer thread");
    }
    let total = 16 * 150;
    let snap = graph.snapshot(WS);
    assert_eq!(snap.label_count("Tick").expect("count"), total);
    drop(snap);
    let counter = graph.get_record::<Counter>(WS, "c").expect("get");
    assert_eq!(counter.map(|c| c.n), Some(total));
    assert_valid(&graph);

    // Everything acknowledged is on disk.
    let graph = Arc::into_inner(graph).expect("only handle");
    graph.close();
    let graph = reopen(dir.path());
    assert_eq!(
        graph.snapshot(WS).label_count("Tick").expect("count"),
        total
    );
    assert_valid(&graph);
}

/// Runs a future to completion on this thread (the engine has no async runtime).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

#[test]
fn write_async_resolves_once_durable_and_rolls_back_failures() {
    let (dir, graph) = temp_graph();
    let n = block_on(graph.write_async(|txn| {
        txn.workspace(WS).put_record(&Counter {
            id: "c".into(),
            n: 41,
        })?;
        Ok::<_, EngineError>(41)
    }))
    .expect("write");
    assert_eq!(n, 41);
    let failed: Result<(), EngineError> = block_on(graph.write_async(|txn| {
        txn.workspace(WS).put_record(&Counter {
            id: "c".into(),
            n: 0,
        })?;
        Err(EngineError::NoIdentity)
    }));
    assert!(matches!(failed, Err(EngineError::NoIdentity)));
    // A future dropped before it is polled does not cancel its write.
    drop(graph.write_async(|txn| {
        txn.workspace(WS).put_record(&Counter {
            id: "d".into(),
            n: 1,
        })
    }));
    graph.close();
    let graph = reopen(dir.path());
    let c = graph.get_record::<Counter>(WS, "c").expect("get");
    assert_eq!(c.map(|c| c.n), Some(41));
    assert!(graph.get_record::<Counter>(WS, "d").expect("get").is_some());
}
