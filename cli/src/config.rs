//! Where the CLI finds its server and its key.
//!
//! Server: `--server`, else `SVC_BASE_URL`, else the server the stored key was verified
//! against, else `http://127.0.0.1:8080`. Key: `--api-key`, else `SVC_API_KEY`, else the key
//! stored by `svc auth login` in `$XDG_CONFIG_HOME/svc/credentials.json` (else
//! `~/.config/svc/credentials.json`), a file of mode 0600 in a directory of mode 0700.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{CliError, Result};

pub const DEFAULT_SERVER: &str = "http://127.0.0.1:8080";
const FILE_NAME: &str = "credentials.json";

/// What `svc auth login` stores.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    pub api_key: String,
    pub server: String,
}

/// Where a key came from (shown by `auth status` and `doctor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeySource {
    Flag,
    Env,
    File,
}

impl KeySource {
    pub fn describe(self) -> &'static str {
        match self {
            KeySource::Flag => "--api-key",
            KeySource::Env => "SVC_API_KEY",
            KeySource::File => "stored by svc auth login",
        }
    }
}

/// The configuration directory: `$XDG_CONFIG_HOME/svc`, else `$HOME/.config/svc`.
pub fn config_dir() -> Result<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(xdg) = non_empty("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(xdg).join("svc"));
    }
    match non_empty("HOME") {
        Some(home) => Ok(PathBuf::from(home).join(".config").join("svc")),
        None => Err(CliError::Local(
            "neither XDG_CONFIG_HOME nor HOME is set: cannot locate the credentials file".into(),
        )),
    }
}

pub fn credentials_path() -> Result<PathBuf> {
    Ok(config_dir()?.join(FILE_NAME))
}

/// The stored credentials, if any.
pub fn load() -> Result<Option<Credentials>> {
    let path = credentials_path()?;
    match fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            CliError::Local(format!(
                "{} is not a valid credentials file ({e}); run `svc auth logout` and log in again",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CliError::Local(format!("reading {}: {e}", path.display()))),
    }
}

/// Stores `creds` with mode 0600 (written to a temporary file, then renamed over the old one,
/// so a crash never leaves half a file and the key is never readable by others).
pub fn store(creds: &Credentials) -> Result<PathBuf> {
    let dir = config_dir()?;
    create_private_dir(&dir)?;
    let path = dir.join(FILE_NAME);
    let tmp = dir.join(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
    let body = serde_json::to_vec_pretty(creds)
        .map_err(|e| CliError::Local(format!("encoding credentials: {e}")))?;
    let write = || -> std::io::Result<()> {
        let mut f = private_file(&tmp)?;
        f.write_all(&body)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        fs::rename(&tmp, &path)
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        CliError::Local(format!("writing {}: {e}", path.display()))
    })?;
    Ok(path)
}

/// Removes the stored credentials; whether there were any.
pub fn remove() -> Result<bool> {
    let path = credentials_path()?;
    match fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(CliError::Local(format!("removing {}: {e}", path.display()))),
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| CliError::Local(format!("creating {}: {e}", dir.display())))
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| CliError::Local(format!("creating {}: {e}", dir.display())))
}

#[cfg(unix)]
fn private_file(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn private_file(path: &Path) -> std::io::Result<fs::File> {
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
}

/// Flags and environment as parsed by clap (which reads `SVC_BASE_URL` and `SVC_API_KEY`).
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub server: Option<String>,
    pub api_key: Option<String>,
    pub api_key_from_env: bool,
}

/// The server and key a command uses.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub server: String,
    pub key: Option<(String, KeySource)>,
}

pub fn resolve(o: &Overrides) -> Result<Resolved> {
    // The file is read only when something is missing from the flags and environment.
    let stored = if o.server.is_some() && o.api_key.is_some() {
        None
    } else {
        load()?
    };
    let server = o
        .server
        .clone()
        .or_else(|| stored.as_ref().map(|c| c.server.clone()))
        .unwrap_or_else(|| DEFAULT_SERVER.to_owned());
    let key = match &o.api_key {
        Some(k) if o.api_key_from_env => Some((k.clone(), KeySource::Env)),
        Some(k) => Some((k.clone(), KeySource::Flag)),
        None => stored.map(|c| (c.api_key, KeySource::File)),
    };
    Ok(Resolved {
        server: normalize_server(&server)?,
        key,
    })
}

/// Checks the base URL and drops a trailing slash.
pub fn normalize_server(raw: &str) -> Result<String> {
    let s = raw.trim().trim_end_matches('/');
    let rest = s
        .strip_prefix("http://")
        .or_else(|| s.strip_prefix("https://"));
    if rest.is_some_and(|r| !r.is_empty()) {
        return Ok(s.to_owned());
    }
    Err(CliError::Usage(format!(
        "{raw:?} is not a server address; expected e.g. {DEFAULT_SERVER}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_addresses() {
        assert_eq!(
            normalize_server("http://127.0.0.1:8080/").ok().as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(
            normalize_server("https://svc.example.com/").ok().as_deref(),
            Some("https://svc.example.com")
        );
        assert!(normalize_server("https://").is_err());
        assert!(matches!(
            normalize_server("localhost:8080"),
            Err(CliError::Usage(_))
        ));
        assert!(normalize_server("http://").is_err());
    }
}
