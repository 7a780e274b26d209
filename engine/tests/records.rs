//! The typed record store: put/get/delete, secondary lookups, scans, and atomic commits with
//! graph changes.

mod common;

use common::*;
use serde::{Deserialize, Serialize};
use svc_engine::{EngineError, GraphRead, Record, RecordScan, WorkspaceId};

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct User {
    id: String,
    email: String,
    team: Option<String>,
}

impl Record for User {
    const KIND: &'static str = "user";
    fn id(&self) -> String {
        self.id.clone()
    }
    fn indexes(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("email", self.email.clone())];
        if let Some(t) = &self.team {
            v.push(("team", t.clone()));
        }
        v
    }
}

fn user(id: &str, email: &str, team: Option<&str>) -> User {
    User {
        id: id.into(),
        email: email.into(),
        team: team.map(str::to_owned),
    }
}

#[test]
fn records_put_get_find_update_delete() {
    let (_dir, graph) = temp_graph();
    let g = WorkspaceId::GLOBAL;
    graph
        .write(move |txn| {
            let mut w = txn.workspace(g);
            w.put_record(&user("usr_1", "a@x.io", Some("red")))?;
            w.put_record(&user("usr_2", "b@x.io", Some("red")))?;
            // Reads inside the closure see its own writes.
            assert_eq!(w.find_records::<User>("team", "red")?.len(), 2);
            Ok::<_, EngineError>(())
        })
        .expect("write");
    assert_eq!(
        graph.get_record::<User>(g, "usr_1").expect("get"),
        Some(user("usr_1", "a@x.io", Some("red")))
    );
    assert_eq!(
        graph
            .find_records::<User>(g, "email", "b@x.io")
            .expect("find"),
        vec![user("usr_2", "b@x.io", Some("red"))]
    );
    // Updating moves the lookups.
    graph
        .write(move |txn| txn.workspace(g).put_record(&user("usr_2", "b2@x.io", None)))
        .expect("update");
    assert!(graph
        .find_records::<User>(g, "email", "b@x.io")
        .expect("find")
        .is_empty());
    assert_eq!(
        graph
            .find_records::<User>(g, "team", "red")
            .expect("find")
            .len(),
        1
    );
    assert_eq!(
        graph
            .find_records::<User>(g, "email", "b2@x.io")
            .expect("find")
            .len(),
        1
    );
    let deleted = graph
        .write(move |txn| txn.workspace(g).delete_record::<User>("usr_1"))
        .expect("delete");
    assert!(deleted);
    assert!(graph.get_record::<User>(g, "usr_1").expect("get").is_none());
    assert!(graph
        .find_records::<User>(g, "team", "red")
        .expect("find")
        .is_empty());
    assert!(!graph
        .write(move |txn| txn.workspace(g).delete_record::<User>("usr_1"))
        .expect("delete again"));
    // Records are scoped by workspace.
    assert!(graph
        .get_record::<User>(WS, "usr_2")
        .expect("get")
        .is_none());
}

#[test]
fn scans_page_forwards_and_backwards() {
    let (_dir, graph) = temp_graph();
    graph
        .write(|txn| {
            let mut w = txn.workspace(WS);
            for i in 0..10 {
                w.put_record(&user(&format!("row_{i:02}"), &format!("{i}@x.io"), None))?;
            }
            w.put_record(&user("zzz", "z@x.io", None))
        })
        .expect("write");
    let ids = |scan: RecordScan| -> Vec<String> {
        graph
            .scan_records::<User>(WS, &scan)
            .expect("scan")
            .into_iter()
            .map(|u| u.id)
            .collect()
    };
    assert_eq!(
        ids(RecordScan {
            prefix: "row_".into(),
            limit: Some(3),
            ..Default::default()
        }),
        ["row_00", "row_01", "row_02"]
    );
    assert_eq!(
        ids(RecordScan {
            prefix: "row_".into(),
            after: Some("row_02".into()),
            limit: Some(2),
            ..Default::default()
        }),
        ["row_03", "row_04"]
    );
    assert_eq!(
        ids(RecordScan {
            prefix: "row_".into(),
            reverse: true,
            limit: Some(2),
            ..Default::default()
        }),
        ["row_09", "row_08"]
    );
    assert_eq!(
        ids(RecordScan {
            prefix: "row_".into(),
            reverse: true,
            after: Some("row_08".into()),
            limit: Some(2),
        }),
        ["row_07", "row_06"]
    );
    assert_eq!(ids(RecordScan::default()).len(), 11);
    let snap = graph.snapshot(WS);
    assert_eq!(
        snap.scan_records::<User>(&RecordScan::default())
            .expect("scan")
            .len(),
        11
    );
}

#[test]
fn a_record_and_graph_changes_commit_or_fail_together() {
    let (_dir, graph) = temp_graph();
    let failed = graph.write(|txn| {
        let mut w = txn.workspace(WS);
        w.record_event(&email_event("a@x.io", 1))?;
        w.put_record(&user("", "bad@x.io", None)) // an empty id is refused
    });
    assert!(matches!(failed, Err(EngineError::Invalid { .. })));
    assert_eq!(graph.snapshot(WS).node_count().expect("count"), 0);
    graph
        .write(|txn| {
            let mut w = txn.workspace(WS);
            w.record_event(&email_event("a@x.io", 1))?;
            w.put_record(&user("usr_9", "a@x.io", None))
        })
        .expect("write");
    assert_eq!(
        graph.snapshot(WS).label_count("Customer").expect("count"),
        1
    );
    assert!(graph
        .get_record::<User>(WS, "usr_9")
        .expect("get")
        .is_some());
}
