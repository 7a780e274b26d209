//! `svcd serve --tls-cert --tls-key` as a process: HTTPS only, the certificate checked by a
//! client that trusts it, a clean stop on SIGTERM. The fixture certificate (127.0.0.1 and
//! localhost, valid 2024-2124) and its key exist for this test only; they protect nothing.

mod support;

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use support::{start_with_args, wait};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[cfg(unix)]
#[test]
fn svcd_serves_https_with_the_given_certificate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cert, key) = (fixture("test-tls-cert.pem"), fixture("test-tls-key.pem"));
    let args = [
        OsStr::new("--tls-cert"),
        cert.as_os_str(),
        OsStr::new("--tls-key"),
        key.as_os_str(),
    ];
    let (child, addr, reader) = start_with_args(dir.path(), &args);
    let pem = std::fs::read(&cert).expect("certificate");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let trusting = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&pem).expect("pem"))
            .timeout(Duration::from_secs(10))
            .build()
            .expect("client");
        let resp = trusting
            .get(format!("https://{addr}/healthz"))
            .send()
            .await
            .expect("https");
        assert_eq!(resp.status().as_u16(), 200);
        // Plain HTTP is not served on a TLS port.
        let plain = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("client");
        assert!(plain
            .get(format!("http://{addr}/healthz"))
            .send()
            .await
            .is_err());
    });

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    assert!(wait(child).success());
    let lines = reader.join().expect("reader");
    assert!(
        lines.iter().any(|l| l.contains("\"tls\":true")),
        "{lines:#?}"
    );
}

#[cfg(unix)]
#[test]
fn svcd_refuses_to_start_with_an_unreadable_certificate() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    // A private data directory, so the certificate is what svcd refuses.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let out = Command::new(env!("CARGO_BIN_EXE_svcd"))
        .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .arg("--tls-cert")
        .arg(dir.path().join("missing.pem"))
        .arg("--tls-key")
        .arg(fixture("test-tls-key.pem"))
        .output()
        .expect("run svcd");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing.pem"), "{stderr}");
}
