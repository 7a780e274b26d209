//! Restart persistence, and that secrets never reach the data directory in plaintext.

use reqwest::{Method, StatusCode};
use serde_json::json;
use svc_integration_tests::{
    all_files, contains_bytes, expect_error, read, str_at, Capability, TestServer,
};

#[tokio::test]
async fn users_workspaces_and_keys_survive_a_restart() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await;
    let legacy = s.legacy_key(&a).await;
    let gone = s.agent_key(&a).await;
    s.request(Method::DELETE, &format!("/api/v1/keys/{}", gone.id))
        .bearer_auth(&a.token)
        .send()
        .await
        .expect("revoke");
    s.operator_set_plan(&a.workspace_id, "pro", None).await;
    let (status, _) = read(
        s.request(Method::PUT, "/api/v1/workspace")
            .bearer_auth(&a.token)
            .json(&json!({"policy": {"forbid": [Capability::CrmMutate.id()]}}))
            .send()
            .await
            .expect("put"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, me) = read(
        s.get("/api/v1/keys/whoami")
            .bearer_auth(&key.plaintext)
            .send()
            .await
            .expect("whoami"),
    )
    .await;
    let used_at = str_at(&me, "/last_used_at");

    let s = s.restart().await;

    // The old JWT still verifies (the secret persisted) and the password still logs in.
    let (status, session) = read(
        s.get("/api/auth/session")
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("session"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{session}");
    assert_eq!(str_at(&session, "/workspace/id"), a.workspace_id);
    assert_eq!(session["workspace"]["plan"], "pro");
    assert_eq!(
        session["workspace"]["policy"]["forbid"],
        json!([Capability::CrmMutate.id()])
    );
    let login = s
        .post("/api/auth/login")
        .json(&json!({"email": a.email, "password": a.password}))
        .send()
        .await
        .expect("login");
    assert_eq!(login.status(), StatusCode::OK);
    let dup = s
        .post("/api/auth/register")
        .json(&json!({"email": a.email, "password": "another one", "name": "X"}))
        .send()
        .await
        .expect("reg");
    expect_error(dup, StatusCode::CONFLICT, "conflict").await;

    // Keys: the live one works, the revoked one stays revoked, last use was written at shutdown.
    let (_, list) = read(
        s.get("/api/v1/keys")
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("list"),
    )
    .await;
    let listed = list["keys"].as_array().expect("keys");
    assert_eq!(listed.len(), 3, "{list}");
    let live = listed
        .iter()
        .find(|k| k["id"] == json!(key.id))
        .expect("live key");
    assert_eq!(
        live["last_used_at"],
        json!(used_at),
        "coalesced last use was flushed at shutdown"
    );
    assert_eq!(
        s.get("/api/v1/keys/whoami")
            .bearer_auth(&key.plaintext)
            .send()
            .await
            .expect("whoami")
            .status(),
        StatusCode::OK
    );
    let resp = s
        .get("/api/v1/keys/whoami")
        .bearer_auth(&gone.plaintext)
        .send()
        .await
        .expect("whoami");
    expect_error(resp, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    assert!(listed
        .iter()
        .any(|k| k["id"] == json!(legacy.id) && k["kind"] == "legacy"));
    s.stop().await;
}

#[tokio::test]
async fn last_use_is_flushed_in_the_background() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.agent_key(&a).await;
    s.get("/api/v1/keys/whoami")
        .bearer_auth(&key.plaintext)
        .send()
        .await
        .expect("whoami");
    // The test config flushes every 200 ms; /metrics shows the pending count drop to zero.
    let mut pending = u64::MAX;
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let text = s
            .get("/metrics")
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text");
        pending = text
            .lines()
            .find_map(|l| l.strip_prefix("svc_pending_key_usage "))
            .and_then(|v| v.trim().parse().ok())
            .expect("gauge");
        if pending == 0 {
            break;
        }
    }
    assert_eq!(pending, 0);
    s.stop().await;
}

#[tokio::test]
async fn plaintext_keys_and_passwords_never_reach_the_data_directory() {
    let s = TestServer::start().await;
    let password = "a-very-distinctive-password-9731";
    let a = s
        .register(
            &format!("secret-{}@example.com", svc_integration_tests::unique()),
            password,
            "Sec",
        )
        .await;
    let key = s.agent_key(&a).await;
    let legacy = s.legacy_key(&a).await;
    s.get("/api/v1/keys/whoami")
        .bearer_auth(&key.plaintext)
        .send()
        .await
        .expect("whoami");
    let data_dir = s.data_dir().to_path_buf();
    let (dir, _config) = s.stop().await;

    let files = all_files(&data_dir);
    assert!(files.len() > 2, "the store wrote files: {files:?}");
    // Sanity: the scan sees stored data (the email is stored in the clear).
    assert!(
        files
            .iter()
            .any(|(_, b)| contains_bytes(b, a.email.as_bytes())),
        "scan finds nothing at all"
    );
    for (path, bytes) in &files {
        for secret in [
            password,
            key.plaintext.as_str(),
            &key.plaintext["svc_live_".len()..],
            legacy.plaintext.as_str(),
            &legacy.plaintext["dsk_".len()..],
        ] {
            assert!(
                !contains_bytes(bytes, secret.as_bytes()),
                "{} contains a secret",
                path.display()
            );
        }
    }
    drop(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn graceful_stop_finishes_in_flight_requests_and_keeps_their_writes() {
    let s = TestServer::start().await;
    // Registrations are slow (argon2), so some are mid-flight when the stop begins; ten, the
    // most one address may start per minute.
    // The stop begins once the first answer is back (not after a fixed sleep, which a loaded
    // machine can outlast before any request arrives), so the others are still being served.
    let (answered_tx, mut answered) = tokio::sync::mpsc::unbounded_channel();
    let mut in_flight = Vec::new();
    for i in 0..10 {
        let email = format!("drain-{i}-{}@example.com", svc_integration_tests::unique());
        let req = s
            .post("/api/auth/register")
            .json(&json!({"email": email, "password": "drain password", "name": "D"}));
        let answered_tx = answered_tx.clone();
        in_flight.push(tokio::spawn(async move {
            let outcome = req.send().await.map(|r| r.status());
            let _ = answered_tx.send(());
            (email, outcome, std::time::Instant::now())
        }));
    }
    answered.recv().await.expect("a first answer");
    let stop_began = std::time::Instant::now();
    let s = s.restart().await;

    let mut created = Vec::new();
    let mut finished_during_stop = 0;
    for t in in_flight {
        let (email, outcome, at) = t.await.expect("task");
        match outcome {
            Ok(StatusCode::CREATED) => {
                finished_during_stop += usize::from(at > stop_began);
                created.push(email)
            }
            // Never an error answer: a request is either served in full or never accepted.
            Ok(other) => panic!("{email}: answered {other} during shutdown"),
            Err(_) => {}
        }
    }
    assert!(
        finished_during_stop > 0,
        "no registration in flight at the stop finished"
    );
    for email in created {
        let resp = s
            .post("/api/auth/login")
            .json(&json!({"email": email, "password": "drain password"}))
            .send()
            .await
            .expect("login");
        assert_eq!(
            resp.status(),
            StatusCode::OK,
            "{email} was acknowledged but not kept"
        );
    }
    s.stop().await;
}

/// `v` without the members named `name`, at any depth (fields a restart legitimately moves).
fn without(mut v: serde_json::Value, name: &str) -> serde_json::Value {
    match &mut v {
        serde_json::Value::Object(o) => {
            o.remove(name);
            for x in o.values_mut() {
                *x = without(x.take(), name);
            }
        }
        serde_json::Value::Array(a) => {
            for x in a.iter_mut() {
                *x = without(x.take(), name);
            }
        }
        _ => {}
    }
    v
}

/// A data directory as a build before format 4 left it (every record JSON, format 3) opens,
/// is re-encoded to postcard (format 4), and serves what it held through the API.
#[tokio::test]
async fn a_format_three_data_directory_is_migrated_and_reads_back() {
    use svc_integration_tests::{get_ok, grant, invoke_path, track};
    use svc_server::record_kinds::{downgrade_to_format_three, record_census, FORMAT_VERSION};

    let s = TestServer::start().await;
    let a = s.account().await;
    let ingest = s.agent_key(&a).await;
    let key = s
        .key_with_grants(
            &a,
            &[
                grant(Capability::MemoryWrite),
                grant(Capability::ContextGet),
            ],
        )
        .await;
    track(
        &s,
        &ingest.plaintext,
        json!({"action": "demo_requested", "email": "grace@example.com", "channel": "web"}),
    )
    .await;
    let (status, note) = read(
        s.post(&invoke_path(Capability::MemoryWrite))
            .bearer_auth(&key.plaintext)
            .json(
                &json!({"mode": "execute", "input": {"customer": "grace@example.com",
                "kind": "blocker", "text": "Security review pending", "tags": ["security"]}}),
            )
            .send()
            .await
            .expect("note"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{note}");
    let request_id = str_at(&note, "/request_id");
    let views = [
        ("/api/v1/keys".to_owned(), a.token.clone()),
        ("/api/v1/workspace".to_owned(), a.token.clone()),
        ("/api/auth/session".to_owned(), a.token.clone()),
        (
            format!("/api/v1/capabilities/actions/{request_id}"),
            key.plaintext.clone(),
        ),
        (
            "/api/v1/capabilities/usage/actions?limit=10".to_owned(),
            key.plaintext.clone(),
        ),
    ];
    let mut before = Vec::new();
    for (path, bearer) in &views {
        before.push(without(get_ok(&s, path, bearer).await, "last_used_at"));
    }

    let (dir, config) = s.stop().await;
    let stored = downgrade_to_format_three(&config.store_dir()).expect("downgrade");
    assert_eq!(stored.version, Some(3));
    assert_eq!(stored.postcard, 0);
    assert!(stored.json >= 10, "{stored:?}");

    let s = TestServer::start_with(dir, config).await;
    for ((path, bearer), want) in views.iter().zip(&before) {
        let got = without(get_ok(&s, path, bearer).await, "last_used_at");
        assert_eq!(&got, want, "GET {path}");
    }
    // The memory note comes back through the context the gateway builds from it.
    let (status, context) = read(
        s.post(&invoke_path(Capability::ContextGet))
            .bearer_auth(&key.plaintext)
            .json(&json!({"mode": "execute", "input": {"customer": "grace@example.com"}}))
            .send()
            .await
            .expect("context"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{context}");
    assert!(
        context.to_string().contains("Security review pending"),
        "{context}"
    );

    let (_dir, config) = s.stop().await;
    let census = record_census(&config.store_dir()).expect("census");
    assert_eq!(census.version, Some(FORMAT_VERSION));
    assert_eq!(census.json, 0, "{census:?}");
    assert!(census.postcard > stored.json, "{census:?}");
}
