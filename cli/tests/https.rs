//! `svc` against an svcd that serves HTTPS with a private CA (`SVC_CA_CERT`).

use std::process::{Command, Stdio};

use svc_integration_tests::TestServer;

fn svc(server: &TestServer, home: &std::path::Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_svc"));
    c.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("SVC_BASE_URL", &server.base)
        .stdin(Stdio::null());
    c
}

async fn run(mut c: Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || c.output().expect("run svc"))
        .await
        .expect("join")
}

#[tokio::test]
async fn svc_speaks_https_and_trusts_a_private_ca_only_when_told() {
    let server = TestServer::start_tls().await;
    assert!(server.base.starts_with("https://"), "{}", server.base);
    let account = server.account().await;
    let key = server.agent_key(&account).await;
    let home = tempfile::tempdir().expect("home");
    let ca = server.tls_cert.clone().expect("certificate");

    let mut trusted = svc(&server, home.path(), &["auth", "status", "--json"]);
    trusted
        .env("SVC_API_KEY", &key.plaintext)
        .env("SVC_CA_CERT", &ca);
    let out = run(trusted).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(&key.id), "{stdout}");

    // Without the CA the certificate is not trusted, and svc says so.
    let mut untrusted = svc(&server, home.path(), &["auth", "status"]);
    untrusted.env("SVC_API_KEY", &key.plaintext);
    let out = run(untrusted).await;
    assert!(!out.status.success());
    server.stop().await;
}
