//! Backup and restore of a data directory.
//!
//! A backup is itself a data directory: `store/` is a RocksDB checkpoint (a consistent copy
//! taken while writes go on; every write acknowledged before it began is in it), next to the
//! secrets files (`jwt.secret`, `ids.key`, `master.key`, `master.key.retired`, whichever
//! exist), mode 0600 in a 0700 directory. `svcd serve --data-dir <backup>` serves it as it is. Secrets
//! given in the environment (`SVC_JWT_SECRET`, `SVC_MASTER_KEY`) are not in the directory and
//! so not in the backup; the result says so.

use std::fs;
use std::path::Path;

use serde_json::{json, Value};

use svc_core::error::{Code, Error, Result};
use svc_core::store::Store;

/// The secrets files of a data directory that a backup carries next to the store.
pub const SECRET_FILES: [&str; 4] = [
    "jwt.secret",
    svc_core::plumbing::ids::KEY_FILE,
    svc_core::plumbing::sealed::KEY_FILE,
    svc_core::plumbing::sealed::RETIRED_KEY_FILE,
];

/// Which secrets the service was given rather than keeping them in its data directory.
#[derive(Clone, Copy, Debug, Default)]
pub struct Configured {
    pub jwt_secret: bool,
    pub master_key: bool,
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::new(Code::Internal, format!("{what} {}: {e}", path.display()))
}

/// Refuses a destination that exists and is not an empty directory.
fn ensure_unused(dest: &Path) -> Result<()> {
    match fs::read_dir(dest).map(|mut entries| entries.next().is_none()) {
        Ok(true) => Ok(()),
        Ok(false) => Err(Error::invalid_input(format!(
            "{} exists and is not empty; choose a new directory",
            dest.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::invalid_input(format!(
            "{} cannot be used: {e}",
            dest.display()
        ))),
    }
}

/// Creates `dir` (and its parents) with mode 0700.
fn create_private_dir(dir: &Path) -> Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .map_err(|e| io_error("creating", dir, e))
}

/// Copies one file, the copy mode 0600 (secrets).
fn copy_private(from: &Path, to: &Path) -> Result<()> {
    fs::copy(from, to).map_err(|e| io_error("copying", from, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(to, fs::Permissions::from_mode(0o600))
            .map_err(|e| io_error("restricting", to, e))?;
    }
    Ok(())
}

/// The backup of `store` (the open store of `data_dir`) into `dest`, which must not exist or
/// be empty. A failed backup leaves no partial directory behind.
pub fn create(
    store: &Store,
    data_dir: &Path,
    dest: &Path,
    configured: Configured,
) -> Result<Value> {
    if !dest.is_absolute() {
        return Err(Error::invalid_input(format!(
            "the backup destination must be an absolute path: {}",
            dest.display()
        )));
    }
    ensure_unused(dest)?;
    let existed = dest.exists();
    let made = (|| {
        create_private_dir(dest)?;
        store
            .checkpoint(&dest.join("store"))
            .map_err(|e| Error::new(Code::Internal, format!("checkpoint: {}", e.message)))?;
        let mut secrets = Vec::new();
        for name in SECRET_FILES {
            let from = data_dir.join(name);
            if from.is_file() {
                copy_private(&from, &dest.join(name))?;
                secrets.push(name);
            }
        }
        Ok(secrets)
    })();
    let secrets = match made {
        Ok(s) => s,
        Err(e) => {
            let _ = if existed {
                fs::remove_dir_all(dest.join("store"))
            } else {
                fs::remove_dir_all(dest)
            };
            return Err(e);
        }
    };
    let mut not_included = Vec::new();
    if configured.jwt_secret {
        not_included.push("SVC_JWT_SECRET");
    }
    if configured.master_key {
        not_included.push("SVC_MASTER_KEY");
    }
    tracing::info!(dest = %dest.display(), "operator backup written");
    Ok(json!({
        "backup": dest.display().to_string(),
        "store": "store",
        "secrets": secrets,
        "configured_secrets_not_included": not_included,
        "bytes": dir_bytes(dest),
    }))
}

/// Copies the backup `backup` into `target` (which must not exist or be empty), then opens
/// the copy and validates it. Never runs against a served directory: a served directory is
/// never empty.
pub fn restore(backup: &Path, target: &Path) -> Result<Value> {
    if !backup.join("store").join("CURRENT").is_file() {
        return Err(Error::invalid_input(format!(
            "{} is not a backup (no store/CURRENT)",
            backup.display()
        )));
    }
    ensure_unused(target)?;
    let existed = target.exists();
    let copied = (|| {
        create_private_dir(target)?;
        let files = copy_tree(&backup.join("store"), &target.join("store"))?;
        let mut secrets = Vec::new();
        for name in SECRET_FILES {
            let from = backup.join(name);
            if from.is_file() {
                copy_private(&from, &target.join(name))?;
                secrets.push(name);
            }
        }
        Ok((files, secrets))
    })();
    let (files, secrets) = match copied {
        Ok(c) => c,
        Err(e) => {
            let _ = if existed {
                fs::remove_dir_all(target.join("store"))
            } else {
                fs::remove_dir_all(target)
            };
            return Err(e);
        }
    };
    let store =
        Store::try_open(&target.join("store"), crate::record_kinds::all()).map_err(|e| {
            Error::new(
                Code::Internal,
                format!("the restored store does not open: {e}"),
            )
        })?;
    let report = store.validate();
    store.close();
    let report = report?;
    Ok(json!({
        "data_dir": target.display().to_string(),
        "store_files": files,
        "secrets": secrets,
        "valid": report.is_ok(),
        "nodes": report.nodes,
        "edges": report.edges,
        "problems": report.problems,
    }))
}

/// Copies the regular files of `from` into a new directory `to` (a store is flat; a stray
/// subdirectory is copied too). The lock file of a store is not copied.
fn copy_tree(from: &Path, to: &Path) -> Result<usize> {
    create_private_dir(to)?;
    let mut count = 0;
    for entry in fs::read_dir(from).map_err(|e| io_error("reading", from, e))? {
        let entry = entry.map_err(|e| io_error("reading", from, e))?;
        let path = entry.path();
        let name = entry.file_name();
        if name == "LOCK" {
            continue;
        }
        let file_type = entry
            .file_type()
            .map_err(|e| io_error("reading", &path, e))?;
        if file_type.is_dir() {
            count += copy_tree(&path, &to.join(&name))?;
        } else if file_type.is_file() {
            fs::copy(&path, to.join(&name)).map_err(|e| io_error("copying", &path, e))?;
            count += 1;
        }
    }
    Ok(count)
}

/// Total size of the files under `dir` (for the operator's information).
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_must_be_new_or_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(ensure_unused(&dir.path().join("new")).is_ok());
        assert!(ensure_unused(dir.path()).is_ok());
        fs::write(dir.path().join("x"), "x").expect("write");
        let e = ensure_unused(dir.path()).expect_err("not empty");
        assert!(e.message.contains("not empty"), "{}", e.message);
    }

    #[test]
    fn restore_refuses_what_is_not_a_backup() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = restore(dir.path(), &dir.path().join("t")).expect_err("no store");
        assert!(e.message.contains("not a backup"), "{}", e.message);
    }
}
