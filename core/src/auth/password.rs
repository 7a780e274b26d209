//! Password hashing: argon2id with the crate's recommended parameters, PHC strings stored.

use std::sync::OnceLock;

use argon2::password_hash::{
    rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString,
};
use argon2::Argon2;

use crate::error::{Error, Result};

pub const MIN_PASSWORD_CHARS: usize = 8;
/// Hashing cost grows with length; a cap keeps one request from burning seconds of CPU. Counted
/// in characters like the minimum (and the OpenAPI `maxLength`); at most 1 KiB of UTF-8.
pub const MAX_PASSWORD_CHARS: usize = 256;

pub fn validate(password: &str) -> Result<()> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(Error::invalid_input(format!(
            "password: must be at least {MIN_PASSWORD_CHARS} characters"
        )));
    }
    if password.chars().count() > MAX_PASSWORD_CHARS {
        return Err(Error::invalid_input(format!(
            "password: must be at most {MAX_PASSWORD_CHARS} characters"
        )));
    }
    Ok(())
}

/// An argon2id PHC string (`$argon2id$v=19$...`). CPU-heavy: call from a blocking thread.
pub fn hash(password: &str) -> Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| Error::internal(format!("argon2 hashing failed: {e}")))
}

/// Whether `password` matches the stored PHC string. CPU-heavy: call from a blocking thread.
pub fn verify(password: &str, phc: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(parsed) => Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(e) => {
            tracing::error!(error = %e, "stored password hash does not parse");
            false
        }
    }
}

/// Verifies against a fixed hash of a random password, so a login for an unknown email costs
/// the same time as one with a wrong password.
pub fn verify_dummy(password: &str) {
    static DUMMY: OnceLock<Option<String>> = OnceLock::new();
    let dummy = DUMMY.get_or_init(|| hash(&crate::plumbing::ids::random_base62(24)).ok());
    if let Some(phc) = dummy {
        let _ = verify(password, phc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_argon2id_and_verifies() {
        let phc = hash("correct horse").expect("hash");
        assert!(phc.starts_with("$argon2id$"), "{phc}");
        assert!(!phc.contains("correct horse"));
        assert!(verify("correct horse", &phc));
        assert!(!verify("correct horsf", &phc));
        assert_ne!(hash("correct horse").expect("hash"), phc, "salts differ");
    }

    #[test]
    fn length_rules() {
        assert!(validate("1234567").is_err());
        assert!(validate("12345678").is_ok());
        assert!(validate("ééééééé").is_err(), "counts characters, not bytes");
        assert!(validate(&"x".repeat(MAX_PASSWORD_CHARS + 1)).is_err());
    }
}
