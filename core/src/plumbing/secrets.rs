//! Secrets generated once into the data directory (mode 0600) when not given in the config.

use std::fs;
use std::io::Write;
use std::path::Path;

use rand::rngs::OsRng;
use rand::RngCore;

use crate::error::{Error, Result};

/// Reads `dir/name` (hex), or creates it with `len` random bytes. Creation is exclusive, so two
/// processes starting at once agree on one secret.
pub fn load_or_create(dir: &Path, name: &str, len: usize) -> Result<Vec<u8>> {
    let path = dir.join(name);
    match fs::read_to_string(&path) {
        Ok(text) => {
            return decode_hex(text.trim())
                .filter(|b| b.len() >= len)
                .ok_or_else(|| {
                    Error::internal(format!(
                        "{} is not a hex secret of at least {len} bytes",
                        path.display()
                    ))
                })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::internal(format!("reading {}: {e}", path.display()))),
    }
    fs::create_dir_all(dir)
        .map_err(|e| Error::internal(format!("creating {}: {e}", dir.display())))?;
    let mut bytes = vec![0u8; len];
    OsRng.fill_bytes(&mut bytes);
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(&path) {
        Ok(mut file) => {
            file.write_all(crate::plumbing::ids::hex(&bytes).as_bytes())
                .and_then(|_| file.sync_all())
                .map_err(|e| Error::internal(format!("writing {}: {e}", path.display())))?;
            Ok(bytes)
        }
        // Another process won the race: use its secret.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => load_or_create(dir, name, len),
        Err(e) => Err(Error::internal(format!("creating {}: {e}", path.display()))),
    }
}

/// Bytes of a lower- or upper-case hex string; `None` when it is not hex of whole bytes.
pub fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_is_created_once_and_reread() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_or_create(dir.path(), "jwt.secret", 32).expect("create");
        assert_eq!(first.len(), 32);
        let again = load_or_create(dir.path(), "jwt.secret", 32).expect("reread");
        assert_eq!(first, again);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(dir.path().join("jwt.secret"))
                .expect("meta")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn short_secret_file_is_rejected() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("s"), "abcd").expect("write");
        assert!(load_or_create(dir.path(), "s", 32).is_err());
    }
}
