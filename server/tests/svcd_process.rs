//! The `svcd` binary as a process: flags, listening, SIGTERM with a clean exit, and the data
//! directory reopening afterwards.

mod support;

use std::process::Command;

use support::{get, json_body, send, start, wait};

#[cfg(unix)]
#[test]
fn sigterm_stops_cleanly_and_the_store_reopens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (child, addr, reader) = start(dir.path());
    let health = get(&addr, "/healthz");
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert!(
        health.to_lowercase().contains("x-request-id: req_"),
        "{health}"
    );
    let ready = get(&addr, "/readyz");
    assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");

    // Secrets pass through the process; none may reach its logs.
    let password = "process-test-password-4242";
    let registered = send(
        &addr,
        "POST",
        "/api/auth/register",
        &[],
        &format!(r#"{{"email": "proc@example.com", "password": "{password}", "name": "P"}}"#),
    );
    assert!(registered.starts_with("HTTP/1.1 201"), "{registered}");
    let token = json_body(&registered)["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let bearer = format!("Bearer {token}");
    let created = send(
        &addr,
        "POST",
        "/api/v1/keys",
        &[("Authorization", &bearer)],
        r#"{"name": "p"}"#,
    );
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    let key = json_body(&created)["key"].as_str().expect("key").to_owned();
    let me = send(
        &addr,
        "GET",
        "/api/v1/keys/whoami",
        &[("X-API-Key", &key)],
        "",
    );
    assert!(me.starts_with("HTTP/1.1 200"), "{me}");

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let exit = wait(child);
    assert!(exit.success(), "svcd exited with {exit}");
    let lines = reader.join().expect("reader");
    assert!(
        lines.iter().any(|l| l.contains("svcd stopped cleanly")),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("\"request_id\":\"req_")),
        "request logs carry the id: {lines:#?}"
    );
    for secret in [password, key.as_str(), token.as_str()] {
        assert!(
            !lines.iter().any(|l| l.contains(secret)),
            "a secret reached the log: {lines:#?}"
        );
    }

    // The store was closed properly: a new process opens the same directory.
    let (child, addr, _reader) = start(dir.path());
    assert!(get(&addr, "/readyz").starts_with("HTTP/1.1 200"));
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    assert!(wait(child).success());
}
