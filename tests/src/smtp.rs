//! A real SMTP server on loopback: aiosmtpd (PyPI, in the venv of scripts/mcp-venv.sh) running
//! tests/smtp_server.py, which writes every accepted message to a directory the test reads.
//! Plus a private CA and a server certificate for STARTTLS (rcgen).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::Deserialize;
use tempfile::TempDir;

/// The venv's python (created once per machine by scripts/mcp-venv.sh; idempotent and locked).
pub fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/mcp-venv.sh");
            let out = Command::new("bash")
                .arg(&script)
                .stderr(Stdio::inherit())
                .output()
                .expect("run scripts/mcp-venv.sh");
            assert!(out.status.success(), "scripts/mcp-venv.sh failed");
            let text = String::from_utf8_lossy(&out.stdout);
            PathBuf::from(text.lines().last().expect("python path").trim())
        })
        .clone()
}

/// A CA and a server certificate it signed for `127.0.0.1` and `localhost`, in PEM.
#[derive(Clone, Debug)]
pub struct TestPki {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestPki {
    pub fn new(ca_name: &str) -> TestPki {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.distinguished_name.push(DnType::CommonName, ca_name);
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).expect("CA cert");

        let key = KeyPair::generate().expect("server key");
        let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .expect("server params");
        leaf.distinguished_name
            .push(DnType::CommonName, "smtp.test");
        let cert = leaf
            .signed_by(&key, &ca_cert, &ca_key)
            .expect("server cert");
        TestPki {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// How the server is set up.
#[derive(Clone, Debug, Default)]
pub struct SmtpOptions {
    /// AUTH required, with this user and password.
    pub auth: Option<(String, String)>,
    /// STARTTLS offered (and required before MAIL) with this certificate.
    pub tls: Option<TestPki>,
}

/// One message the server accepted.
#[derive(Clone, Debug, Deserialize)]
pub struct Delivered {
    /// The envelope sender (MAIL FROM).
    pub mail_from: String,
    /// The envelope recipients (RCPT TO).
    #[serde(rename = "rcpt_tos")]
    pub recipients: Vec<String>,
    /// The message as received (headers and body).
    #[serde(rename = "data")]
    pub raw: String,
    /// Whether the session was under TLS.
    pub tls: bool,
    /// The AUTH user of the session.
    pub auth_login: Option<String>,
}

impl Delivered {
    /// The first header `name` (case-insensitive), unfolded.
    pub fn header(&self, name: &str) -> Option<String> {
        let text = self.raw.replace("\r\n", "\n");
        let head = text
            .split("\n\n")
            .next()
            .unwrap_or_default()
            .replace("\n ", " ")
            .replace("\n\t", " ");
        head.lines().find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }
}

/// A running server; dropping it stops it.
#[derive(Debug)]
pub struct SmtpServer {
    pub port: u16,
    dir: TempDir,
    child: Child,
}

impl SmtpServer {
    pub async fn start(options: SmtpOptions) -> SmtpServer {
        tokio::task::spawn_blocking(move || SmtpServer::start_blocking(&options))
            .await
            .expect("start SMTP server")
    }

    /// [`SmtpServer::start`] for synchronous callers (python starts in well under a second).
    pub fn start_blocking(options: &SmtpOptions) -> SmtpServer {
        let python = python();
        let dir = tempfile::tempdir().expect("tempdir");
        let maildir = dir.path().join("mail");
        std::fs::create_dir(&maildir).expect("maildir");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("smtp_server.py");
        let mut cmd = Command::new(python);
        cmd.arg(script).arg("--maildir").arg(&maildir);
        if let Some((user, password)) = &options.auth {
            cmd.args(["--user", user, "--password", password]);
        }
        if let Some(pki) = &options.tls {
            let cert = dir.path().join("cert.pem");
            let key = dir.path().join("key.pem");
            std::fs::write(&cert, &pki.cert_pem).expect("write cert");
            std::fs::write(&key, &pki.key_pem).expect("write key");
            cmd.arg("--cert").arg(cert).arg("--key").arg(key);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn smtp_server.py");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read READY line");
        let port = line
            .trim()
            .strip_prefix("READY ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("smtp_server.py did not start: {line:?}"));
        SmtpServer { port, dir, child }
    }

    /// Every message accepted so far.
    pub fn messages(&self) -> Vec<Delivered> {
        let mut out = Vec::new();
        let Ok(entries) = std::fs::read_dir(self.dir.path().join("mail")) else {
            return out;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.extension().is_some_and(|x| x == "json") {
                let text = std::fs::read_to_string(&path).expect("read message");
                out.push(serde_json::from_str(&text).expect("message json"));
            }
        }
        out
    }

    /// Waits (up to 10 s) until at least `n` messages arrived; returns them.
    pub async fn wait_for(&self, n: usize) -> Vec<Delivered> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let got = self.messages();
            if got.len() >= n || Instant::now() > deadline {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
