//! Crash durability: a child process records events and prints each acknowledgement; the
//! test kills it with SIGKILL at random moments, reopens the store and checks that every
//! acknowledged event is there, nothing is half-written, and every index is exact.
//!
//! The child is this same test binary, re-run with `CHILD_DIR` set (see `child_writer`).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use rand::Rng;
use serde::{Deserialize, Serialize};
use svc_engine::{
    Direction, EngineError, Graph, GraphOptions, GraphRead, IdentityKeys, Record, RecordScan,
};

const CHILD_DIR: &str = "SVC_ENGINE_CRASH_CHILD_DIR";
const CHILD_FIRST_SEQ: &str = "SVC_ENGINE_CRASH_CHILD_FIRST_SEQ";

/// A record written in the same batch as its event, to check record + graph atomicity.
#[derive(Serialize, Deserialize, Debug)]
struct Ack {
    seq: u64,
    customer: u64,
}

impl Record for Ack {
    const KIND: &'static str = "crash_ack";
    fn id(&self) -> String {
        format!("{:020}", self.seq)
    }
}

fn email_of(seq: u64) -> String {
    format!("e{seq}@crash.test")
}

/// Not a test of its own: the child process of `acknowledged_writes_survive_sigkill`. It does
/// nothing unless started by that test.
#[test]
fn child_writer() {
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let first: u64 = std::env::var(CHILD_FIRST_SEQ)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let graph = Graph::open(&dir, GraphOptions::default()).expect("child opens the store");
    let next = Arc::new(AtomicU64::new(first));
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let (graph, next) = (graph.clone(), Arc::clone(&next));
            std::thread::spawn(move || loop {
                let seq = next.fetch_add(1, Ordering::SeqCst);
                let mut ev = email_event(&email_of(seq), seq as i64);
                ev.campaign_id = Some(format!("c{}", seq % 7));
                let done = graph.write(move |txn| {
                    let mut w = txn.workspace(WS);
                    let out = w.record_event(&ev)?;
                    w.put_record(&Ack {
                        seq,
                        customer: out.customer_id.0,
                    })?;
                    Ok::<_, EngineError>(())
                });
                done.expect("write");
                println!("ack {seq}");
            })
        })
        .collect();
    for w in writers {
        let _ = w.join();
    }
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = std::env::current_exe().expect("test binary");
    let mut rng = rand::thread_rng();
    let mut acked: Vec<u64> = Vec::new();
    let mut next_seq = 0u64;
    for cycle in 0..20 {
        let mut child = Command::new(&exe)
            .args(["--exact", "child_writer", "--nocapture", "--test-threads=1"])
            .env(CHILD_DIR, dir.path())
            .env(CHILD_FIRST_SEQ, next_seq.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("stdout");
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .filter_map(|l| l.strip_prefix("ack ").and_then(|n| n.parse::<u64>().ok()))
                .collect::<Vec<u64>>()
        });
        std::thread::sleep(Duration::from_millis(rng.gen_range(150..600)));
        child.kill().expect("SIGKILL");
        let _ = child.wait();
        let this_cycle = reader.join().expect("reader");
        assert!(
            !this_cycle.is_empty() || cycle > 0,
            "the child acknowledged nothing; is it starting?"
        );
        next_seq += 1_000_000;
        acked.extend(this_cycle);

        let graph = reopen(dir.path());
        assert_valid(&graph);
        let snap = graph.snapshot(WS);
        for seq in &acked {
            let keys = IdentityKeys {
                email: Some(email_of(*seq)),
                ..Default::default()
            };
            let customer = snap
                .find_customer(&keys)
                .expect("lookup")
                .unwrap_or_else(|| panic!("acked event {seq} lost"));
            assert_eq!(
                snap.degree(customer, Direction::Outgoing, Some("HAS_TOUCHPOINT"))
                    .expect("degree"),
                1
            );
            assert!(
                snap.get_record::<Ack>(&format!("{seq:020}"))
                    .expect("read")
                    .is_some(),
                "ack record {seq} lost"
            );
        }
        // Atomicity: every record has its event and every customer its record, acked or not.
        let records: Vec<Ack> = snap.scan_records(&RecordScan::default()).expect("scan");
        assert_eq!(
            records.len() as u64,
            snap.label_count("Customer").expect("count")
        );
        assert_eq!(
            records.len() as u64,
            snap.label_count("Touchpoint").expect("count")
        );
        for r in &records {
            let keys = IdentityKeys {
                email: Some(email_of(r.seq)),
                ..Default::default()
            };
            assert_eq!(
                snap.find_customer(&keys).expect("lookup").map(|c| c.0),
                Some(r.customer)
            );
        }
        drop(snap);
        graph.close();
    }
    assert!(
        acked.len() > 100,
        "only {} writes were acknowledged in 20 cycles",
        acked.len()
    );
}
