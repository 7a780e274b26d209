//! `svcd admin` as an operator runs it, against real `svcd` processes: through the admin
//! socket of a running service (backup while events are being ingested, set-plan seen by the
//! gateway, validate, revoke-keys, master-key rotation) and on a stopped data directory
//! (validate, restore, rotation), a restored directory served and compared with every event
//! acknowledged before the backup, a directory locked by a service whose socket does not
//! answer refused, and a stale socket after a crash replaced.

#![cfg(unix)]

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{admin, send, start, wait};

/// The JSON an admin command printed; panics (with its stderr) unless it succeeded.
fn admin_ok(dir: &Path, args: &[&str], route: &str) -> Value {
    let out = admin(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "svcd admin {args:?}: {stderr}");
    assert!(stderr.contains(route), "svcd admin {args:?}: {stderr}");
    serde_json::from_slice(&out.stdout).expect("admin output is JSON")
}

const SOCKET: &str = "answered by the running service";
const DIRECT: &str = "opened directly";

/// One request; the status and the JSON body (Null when not JSON).
fn call(addr: &str, method: &str, path: &str, bearer: Option<&str>, body: &str) -> (u16, Value) {
    let auth = bearer.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth
        .as_deref()
        .map(|a| vec![("Authorization", a)])
        .unwrap_or_default();
    let raw = send(addr, method, path, &headers, body);
    let status = raw
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let json = raw
        .split_once("\r\n\r\n")
        .and_then(|(_, b)| serde_json::from_str(b).ok())
        .unwrap_or(Value::Null);
    (status, json)
}

fn register(addr: &str, email: &str) -> (String, String) {
    let (status, v) = call(
        addr,
        "POST",
        "/api/auth/register",
        None,
        &json!({"email": email, "password": "operator test pw", "name": "Owner"}).to_string(),
    );
    assert_eq!(status, 201, "{v}");
    (
        v["token"].as_str().expect("token").to_owned(),
        v["workspace"]["id"].as_str().expect("ws").to_owned(),
    )
}

const SEGMENT_SECRET: &str = "segment_signing_secret_for_rotation";

/// A Segment delivery signed with `secret` (hex HMAC-SHA1 of the body); the status.
fn segment_delivery(addr: &str, token: &str, secret: &str, n: u32) -> u16 {
    use hmac::{Hmac, Mac};
    let body = json!({"type": "track", "event": "Signed Up", "userId": format!("seg-{n}"),
                      "messageId": format!("m-{n}")})
    .to_string();
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(body.as_bytes());
    let signature: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let auth = format!("Bearer {token}");
    let raw = send(
        addr,
        "POST",
        "/api/webhooks/segment",
        &[("Authorization", &auth), ("X-Signature", &signature)],
        &body,
    );
    raw.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn terminate(child: std::process::Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    assert!(wait(child).success(), "svcd did not exit cleanly");
}

#[test]
fn backup_while_ingesting_then_restore_serves_every_acknowledged_event() {
    let started = Instant::now();
    let root = tempfile::tempdir().expect("tempdir");
    let live = root.path().join("live");
    let (child, addr, _log) = start(&live);
    let (token, ws) = register(&addr, "owner@example.com");
    let (status, key) = call(
        &addr,
        "POST",
        "/api/v1/keys",
        Some(&token),
        r#"{"name": "agent", "grants": ["capability:context.get"]}"#,
    );
    assert_eq!(status, 201, "{key}");
    let key_plain = key["key"].as_str().expect("key").to_owned();
    let key_id = key["id"].as_str().expect("id").to_owned();

    // The socket is the service's, and only its account's.
    {
        use std::os::unix::fs::{FileTypeExt, PermissionsExt};
        let meta = std::fs::metadata(live.join("admin.sock")).expect("admin.sock");
        assert!(meta.file_type().is_socket());
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    }

    // Ingest over HTTP while the backup runs; remember what was acknowledged.
    let acked = Arc::new(Mutex::new(Vec::<usize>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let ingest = {
        let (acked, stop, addr, token) = (acked.clone(), stop.clone(), addr.clone(), token.clone());
        std::thread::spawn(move || {
            for i in 0..2_000 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let body = json!({"action": "signup", "email": format!("ev-{i}@example.com")});
                let (status, v) = call(
                    &addr,
                    "POST",
                    "/api/v1/events/track",
                    Some(&token),
                    &body.to_string(),
                );
                assert_eq!(status, 200, "{v}");
                acked.lock().expect("lock").push(i);
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while acked.lock().expect("lock").len() < 100 {
        assert!(Instant::now() < deadline, "ingestion too slow");
        std::thread::sleep(Duration::from_millis(10));
    }
    let before_backup = acked.lock().expect("lock").clone();
    // A public id given out before the backup (ids.key travels with it).
    let (status, first) = call(
        &addr,
        "GET",
        "/v1/customers/ev-0@example.com",
        Some(&token),
        "",
    );
    assert_eq!(status, 200, "{first}");
    let first_id = first["customer"]["id"].as_str().expect("id").to_owned();
    let backup = root.path().join("backup");
    let b = admin_ok(&live, &["backup", backup.to_str().expect("utf8")], SOCKET);
    assert_eq!(
        b["secrets"],
        json!(["jwt.secret", "ids.key", "master.key"]),
        "{b}"
    );
    // Ingestion went on during the backup and continues after it.
    let at_backup_end = acked.lock().expect("lock").len();
    while acked.lock().expect("lock").len() < at_backup_end + 20 {
        assert!(
            Instant::now() < deadline,
            "ingestion stalled after the backup"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    ingest.join().expect("ingest thread");
    let all_acked = acked.lock().expect("lock").len();

    // The plan is the operator's, and the gateway reports it at once.
    let usage = |key: &str| {
        let (status, v) = call(
            &addr,
            "GET",
            "/api/v1/capabilities/usage/actions",
            Some(key),
            "",
        );
        assert_eq!(status, 200, "{v}");
        v
    };
    assert_eq!(usage(&key_plain)["limit"], 100, "free plan");
    let set = admin_ok(&live, &["workspace", "set-plan", &ws, "pro"], SOCKET);
    assert_eq!(
        (&set["plan"], &set["monthly_credit_limit"]),
        (&json!("pro"), &json!(15_000))
    );
    assert_eq!(usage(&key_plain)["limit"], 15_000);
    let set = admin_ok(
        &live,
        &[
            "workspace",
            "set-plan",
            &ws,
            "enterprise",
            "--monthly-credit-limit",
            "123456",
        ],
        SOCKET,
    );
    assert_eq!(set["monthly_credit_limit"], 123_456);
    assert_eq!(usage(&key_plain)["limit"], 123_456);
    let refused = admin(&live, &["workspace", "set-plan", &ws, "enterprise"]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("monthly_credit_limit"),
        "{refused:?}"
    );
    let list = admin_ok(&live, &["workspace", "list"], SOCKET);
    assert_eq!(list["workspaces"][0]["id"], ws.as_str(), "{list}");
    assert_eq!(list["workspaces"][0]["plan"], "enterprise");
    let valid = admin_ok(&live, &["validate"], SOCKET);
    assert_eq!(valid["ok"], true, "{valid}");

    // Revocation takes effect on the next request.
    let revoked = admin_ok(&live, &["revoke-keys", &ws], SOCKET);
    assert_eq!(revoked["revoked"], json!([key_id]));
    let (status, _) = call(&addr, "GET", "/api/v1/keys/whoami", Some(&key_plain), "");
    assert_eq!(status, 401);

    terminate(child);
    assert!(
        !live.join("admin.sock").exists(),
        "a clean stop removes the socket"
    );
    let valid = admin_ok(&live, &["validate"], DIRECT);
    assert_eq!(valid["ok"], true, "{valid}");

    // Restore into a new directory, serve it, and find every event acknowledged before the
    // backup began (later ones may or may not be in it, never more than were sent).
    let restored = root.path().join("restored");
    let r = admin_ok(
        root.path(),
        &[
            "restore",
            backup.to_str().expect("utf8"),
            restored.to_str().expect("utf8"),
        ],
        "",
    );
    assert_eq!(r["valid"], true, "{r}");
    let again = admin(
        root.path(),
        &[
            "restore",
            backup.to_str().expect("utf8"),
            restored.to_str().expect("utf8"),
        ],
    );
    assert!(!again.status.success(), "restoring over data is refused");
    let (child, addr, _log) = start(&restored);
    // The JWT secret came with the backup: the old session is still valid.
    let (status, session) = call(&addr, "GET", "/api/auth/session", Some(&token), "");
    assert_eq!(status, 200, "{session}");
    // The restored service gives the customer the same public id.
    let (status, same) = call(
        &addr,
        "GET",
        &format!("/v1/customers/{first_id}"),
        Some(&token),
        "",
    );
    assert_eq!(status, 200, "{same}");
    assert_eq!(same["customer"]["id"], json!(first_id));
    let mut found = 0;
    for i in 0..all_acked {
        let (status, _) = call(
            &addr,
            "GET",
            &format!("/v1/customers/ev-{i}@example.com"),
            Some(&token),
            "",
        );
        assert!(status == 200 || status == 404, "{status}");
        if status == 200 {
            found += 1;
        } else {
            assert!(
                !before_backup.contains(&i),
                "event {i} was acknowledged before the backup but is not in it"
            );
        }
    }
    assert!(
        found >= before_backup.len(),
        "{found} < {}",
        before_backup.len()
    );
    let (status, _) = call(
        &addr,
        "GET",
        &format!("/v1/customers/ev-{all_acked}@example.com"),
        Some(&token),
        "",
    );
    assert_eq!(status, 404, "never sent");
    terminate(child);
    eprintln!(
        "{} events acknowledged before the backup, {found} in it, {all_acked} in all; {:?}",
        before_backup.len(),
        started.elapsed()
    );
}

#[test]
fn rotation_online_and_offline_locked_directory_and_stale_socket() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("data");
    let (child, addr, _log) = start(&dir);
    let (token, _ws) = register(&addr, "rotate@example.com");
    let brand = |addr: &str| {
        let (status, v) = call(addr, "GET", "/v1/brand-context", Some(&token), "");
        assert_eq!(status, 200, "{v}");
        v["context"]["businessName"].clone()
    };
    let (status, v) = call(
        &addr,
        "PUT",
        "/v1/brand-context",
        Some(&token),
        r#"{"businessName": "Acme Rockets"}"#,
    );
    assert_eq!(status, 200, "{v}");
    let (status, v) = call(
        &addr,
        "PUT",
        "/api/v1/webhooks/segment/secret",
        Some(&token),
        &json!({ "secret": SEGMENT_SECRET }).to_string(),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(segment_delivery(&addr, &token, SEGMENT_SECRET, 1), 200);
    let smtp = json!({"host": "smtp.example.com", "port": 587, "username": "mailer",
                      "password": "mail-password-6789", "from": "Acme <hi@acme.io>"});
    let (status, v) = call(
        &addr,
        "PUT",
        "/api/v1/integrations/smtp",
        Some(&token),
        &smtp.to_string(),
    );
    assert_eq!(status, 200, "{v}");
    let key_before = std::fs::read_to_string(dir.join("master.key")).expect("master.key");

    // Brand context, the webhook signing secret and the SMTP config are the sealed values.
    let rotated = admin_ok(&dir, &["rotate-master-key"], SOCKET);
    assert_eq!(rotated["resealed"], 3, "{rotated}");
    assert_eq!(rotated["generated"], true);
    assert_eq!(rotated["retired_file_removed"], false, "kept while serving");
    assert_ne!(rotated["key_id"], rotated["previous_key_id"]);
    let key_after = std::fs::read_to_string(dir.join("master.key")).expect("master.key");
    assert_ne!(key_before, key_after);
    assert!(dir.join("master.key.retired").exists());
    assert_eq!(brand(&addr), "Acme Rockets", "the service uses the new key");

    // A service whose socket does not answer: its directory is refused, not opened twice.
    std::fs::rename(dir.join("admin.sock"), root.path().join("moved.sock")).expect("move");
    let refused = admin(&dir, &["validate"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(stderr.contains("is in use"), "{stderr}");
    std::fs::rename(root.path().join("moved.sock"), dir.join("admin.sock")).expect("move back");

    // A crash leaves the socket behind; nobody answers on it, so the directory opens directly.
    let mut child = child;
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    assert!(dir.join("admin.sock").exists());
    let rotated = admin_ok(&dir, &["rotate-master-key"], DIRECT);
    assert_eq!(rotated["resealed"], 3, "{rotated}");
    assert_eq!(rotated["retired_file_removed"], true, "{rotated}");
    assert!(!dir.join("master.key.retired").exists());

    // The next service replaces the stale socket and reads the value under the newest key.
    let (child, addr, log) = start(&dir);
    assert_eq!(brand(&addr), "Acme Rockets");
    // The signing secret opens under the newest key: signed deliveries pass, others do not.
    assert_eq!(segment_delivery(&addr, &token, SEGMENT_SECRET, 2), 200);
    assert_eq!(
        segment_delivery(&addr, &token, "another_secret_entirely", 3),
        401
    );
    let (status, list) = call(&addr, "GET", "/api/v1/integrations", Some(&token), "");
    assert_eq!(status, 200, "{list}");
    let smtp = list["integrations"]
        .as_array()
        .and_then(|l| l.iter().find(|i| i["kind"] == "smtp"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(smtp["config"]["password"], "••••6789", "{list}");
    let answered = admin_ok(&dir, &["validate"], SOCKET);
    assert_eq!(answered["ok"], true);
    terminate(child);
    let lines = log.join().expect("log");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("replaced a stale admin socket")),
        "{lines:#?}"
    );
}
