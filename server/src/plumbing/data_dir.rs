//! The data directory's permissions (issue 29): it holds the store, the JWT secret and the
//! master key, so it is the service's alone. Created 0700; an existing directory that other
//! users may enter is refused at start, as PostgreSQL refuses its data directory, unless the
//! operator says otherwise (`--allow-open-data-dir`). svcd also starts with umask 077, so every
//! file RocksDB writes is 0600 (see `main.rs`).

use std::path::Path;

use crate::error::{Error, Result};

/// Creates `dir` (0700) when missing, else checks that neither group nor others have any
/// access to it.
pub fn prepare(dir: &Path, allow_open: bool) -> Result<()> {
    if !dir.exists() {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        return builder
            .create(dir)
            .map_err(|e| Error::internal(format!("creating {}: {e}", dir.display())));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir)
            .map_err(|e| Error::internal(format!("reading {}: {e}", dir.display())))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 && !allow_open {
            return Err(Error::invalid_input(format!(
                "the data directory {} is open to other users (mode {:o}); it holds the store \
                 and the service's secrets. Run `chmod 700 {}`, or start with \
                 --allow-open-data-dir (SVC_ALLOW_OPEN_DATA_DIR=1) to accept it",
                dir.display(),
                mode & 0o777,
                dir.display()
            )));
        }
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn created_private_and_open_directories_refused() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("a/data");
        prepare(&dir, false).expect("created");
        let mode = std::fs::metadata(&dir).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        prepare(&dir, false).expect("private is fine");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let e = prepare(&dir, false).expect_err("open");
        assert!(e.message.contains("chmod 700"), "{}", e.message);
        prepare(&dir, true).expect("the operator allowed it");
    }
}
