//! The `svcd` binary as a process: flags, listening, SIGTERM with a clean exit, and the data
//! directory reopening afterwards.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

fn get(addr: &str, path: &str) -> String {
    send(addr, "GET", path, &[], "")
}

/// One HTTP/1.1 exchange on a fresh connection; returns the raw response text.
fn send(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut conn = TcpStream::connect(addr).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes()).expect("write head");
    conn.write_all(body.as_bytes()).expect("write body");
    let mut out = String::new();
    conn.read_to_string(&mut out).expect("read");
    out
}

fn json_body(response: &str) -> serde_json::Value {
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or("");
    serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {response}"))
}

/// Starts svcd on port 0 and returns the child and the address it logged.
fn start(
    data_dir: &std::path::Path,
) -> (
    std::process::Child,
    String,
    std::thread::JoinHandle<Vec<String>>,
) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_svcd"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--data-dir",
        ])
        .arg(data_dir)
        .env_remove("SVC_ADDR")
        .env_remove("SVC_JWT_SECRET")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn svcd");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line.clone());
            lines.push(line);
        }
        lines
    });
    let addr = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("svcd logged nothing");
        let v: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("log line is not JSON: {line}"));
        if v["message"] == "svcd listening" {
            break v["addr"].as_str().expect("addr").to_owned();
        }
    };
    (child, addr, reader)
}

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

fn wait(mut child: std::process::Child) -> std::process::ExitStatus {
    for _ in 0..300 {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("svcd did not stop within 30 s of SIGTERM");
}
