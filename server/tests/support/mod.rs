//! Shared helpers of the `svcd` process tests: start the binary on port 0 over a data directory,
//! and speak raw HTTP/1.1 to it (a client with no opinions of its own).

#![allow(dead_code)] // each test binary uses its own subset

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

pub fn get(addr: &str, path: &str) -> String {
    send(addr, "GET", path, &[], "")
}

/// One HTTP/1.1 exchange on a fresh connection; returns the raw response text.
pub fn send(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> String {
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

pub fn json_body(response: &str) -> serde_json::Value {
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or("");
    serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {response}"))
}

/// Starts svcd on port 0 and returns the child and the address it logged.
pub fn start(
    data_dir: &std::path::Path,
) -> (
    std::process::Child,
    String,
    std::thread::JoinHandle<Vec<String>>,
) {
    start_with_args(data_dir, &[])
}

/// [`start`] with more `serve` flags.
pub fn start_with_args(
    data_dir: &std::path::Path,
    extra: &[&std::ffi::OsStr],
) -> (
    std::process::Child,
    String,
    std::thread::JoinHandle<Vec<String>>,
) {
    if data_dir.exists() {
        // svcd refuses a data directory other users may enter; temporary ones are 0755.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(data_dir, std::fs::Permissions::from_mode(0o700))
            .expect("chmod 700");
    }
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
        .args(extra)
        .env_remove("SVC_ADDR")
        .env_remove("SVC_JWT_SECRET")
        // The tests' providers listen on loopback.
        .env("SVC_OUTBOUND_ALLOW", "127.0.0.0/8,::1")
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

pub fn wait(mut child: std::process::Child) -> std::process::ExitStatus {
    for _ in 0..300 {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("svcd did not stop within 30 s of SIGTERM");
}

/// Runs `svcd admin --data-dir <dir> <args>` (over the running service's socket, or on the
/// stopped directory), without the environment's data directory or keys.
pub fn admin(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_svcd"))
        .arg("admin")
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env_remove("SVC_DATA_DIR")
        .env_remove("SVC_MASTER_KEY")
        .env_remove("SVC_MASTER_KEYS_RETIRED")
        .output()
        .expect("run svcd admin")
}
