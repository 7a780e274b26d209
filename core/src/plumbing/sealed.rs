//! Secrets at rest (DESIGN.md §4): values sealed with XChaCha20-Poly1305 under a master key.
//!
//! A sealed value is `version (1 byte) | key id (8) | nonce (24) | ciphertext and tag`. The key
//! id travels with the value, so a master key can be rotated: new values are sealed with the
//! current key, older values still open with a retired key the service was given. The
//! associated data binds the key id, the workspace and the record kind, so a sealed value
//! copied into another workspace or another kind of record does not open.
//!
//! The master key comes from the config (`SVC_MASTER_KEY`, 64 hex digits) or is generated once
//! into the data directory (`master.key`, mode 0600). When a key is configured and a generated
//! file also exists, the file's key is kept as a retired key, so values sealed before the key
//! was configured stay readable.
//!
//! Rotation (`svcd admin rotate-master-key`): [`rotate_generated_key`] writes a
//! new `master.key` and moves the previous one into `master.key.retired` (one hex key per
//! line, also read by [`Sealer::load`]); [`Sealer::replace_keys`] hands the new keys to a
//! running service (every clone of a sealer shares them), and [`Sealer::reseal`] rewrites one
//! value under the current key.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use parking_lot::RwLock;

use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::rngs::OsRng;
use rand::RngCore;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::plumbing::secrets;
use crate::store::WorkspaceId;

/// Master keys are 256 bits.
pub const KEY_BYTES: usize = 32;
/// The generated master key's file name inside the data directory.
pub const KEY_FILE: &str = "master.key";
/// Earlier generated master keys (hex, one per line), kept readable after a rotation.
pub const RETIRED_KEY_FILE: &str = "master.key.retired";

const VERSION: u8 = 1;
const KEY_ID_BYTES: usize = 8;
const NONCE_BYTES: usize = 24;
const TAG_BYTES: usize = 16;
const HEADER_BYTES: usize = 1 + KEY_ID_BYTES + NONCE_BYTES;
/// Domain separation of the associated data and of key ids.
const AAD_CONTEXT: &[u8] = b"svc.sealed.v1";
const KEY_ID_CONTEXT: &[u8] = b"svc.master-key-id.v1";

/// Why a sealed value could not be opened (or a key not used). Each names what is wrong, never
/// key material or plaintext.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    #[error("sealed value is {0} bytes, shorter than the smallest sealed value")]
    Truncated(usize),
    #[error("sealed value has format version {0}; this service reads version {VERSION}")]
    UnknownVersion(u8),
    #[error(
        "sealed value was sealed with master key {0}, which this service does not hold \
         (configure it as a retired master key)"
    )]
    UnknownKey(String),
    #[error(
        "sealed value failed authentication: it was altered, or belongs to another workspace \
         or record kind"
    )]
    Authentication,
    #[error("sealing failed: the value is too large")]
    TooLarge,
    #[error("a master key must be {KEY_BYTES} bytes (64 hex digits); got {0} bytes")]
    BadKeyLength(usize),
    #[error("a master key must be hex digits")]
    BadKeyHex,
    #[error("sealed JSON: {0}")]
    Json(String),
}

impl From<SealError> for Error {
    fn from(e: SealError) -> Self {
        Error::internal(e)
    }
}

/// One master key's id: the first 8 bytes of a domain-separated SHA-256 of the key, so the
/// same key always has the same id and the id reveals nothing useful about the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyId([u8; KEY_ID_BYTES]);

impl KeyId {
    fn of(key: &[u8; KEY_BYTES]) -> KeyId {
        let digest = Sha256::new()
            .chain_update(KEY_ID_CONTEXT)
            .chain_update(key)
            .finalize();
        let mut id = [0u8; KEY_ID_BYTES];
        id.copy_from_slice(&digest[..KEY_ID_BYTES]);
        KeyId(id)
    }
}

impl std::fmt::Display for KeyId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::plumbing::ids::hex(&self.0))
    }
}

/// Seals and opens values for one process. Cheap to clone: clones share the keys, so
/// [`Sealer::replace_keys`] on one reaches all of them.
#[derive(Clone)]
pub struct Sealer {
    keys: Arc<RwLock<Arc<Keys>>>,
}

/// The current key's id and every key this sealer opens with.
struct Keys {
    current: KeyId,
    ciphers: HashMap<KeyId, XChaCha20Poly1305>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Key ids only; key material never reaches logs.
        let keys = self.keys();
        let mut ids: Vec<String> = keys.ciphers.keys().map(KeyId::to_string).collect();
        ids.sort();
        f.debug_struct("Sealer")
            .field("current", &keys.current.to_string())
            .field("keys", &ids)
            .finish()
    }
}

impl Sealer {
    /// A sealer that seals with `current` and also opens values sealed with any of `retired`.
    pub fn new(current: [u8; KEY_BYTES], retired: &[[u8; KEY_BYTES]]) -> Sealer {
        let mut ciphers = HashMap::new();
        for key in retired.iter().chain(std::iter::once(&current)) {
            ciphers.insert(KeyId::of(key), XChaCha20Poly1305::new(key.into()));
        }
        Sealer {
            keys: Arc::new(RwLock::new(Arc::new(Keys {
                current: KeyId::of(&current),
                ciphers,
            }))),
        }
    }

    fn keys(&self) -> Arc<Keys> {
        Arc::clone(&self.keys.read())
    }

    /// Gives this sealer, and every clone of it, `other`'s keys: from now on values are sealed
    /// with `other`'s current key (a master-key rotation in a running service).
    pub fn replace_keys(&self, other: &Sealer) {
        let keys = other.keys();
        *self.keys.write() = keys;
    }

    /// The configured master key, else the one generated once into `data_dir`; see the module
    /// documentation for how a generated key stays readable once a key is configured.
    pub fn load(
        data_dir: &Path,
        configured: Option<&[u8]>,
        retired: &[Vec<u8>],
    ) -> Result<Sealer, Error> {
        let mut old = retired
            .iter()
            .map(|k| key_array(k))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::invalid_input(format!("retired master key: {e}")))?;
        old.extend(read_retired_file(data_dir)?);
        let current = match configured {
            Some(k) => {
                let key =
                    key_array(k).map_err(|e| Error::invalid_input(format!("master key: {e}")))?;
                if data_dir.join(KEY_FILE).exists() {
                    old.push(load_generated(data_dir)?);
                }
                key
            }
            None => load_generated(data_dir)?,
        };
        Ok(Sealer::new(current, &old))
    }

    /// The id of the key new values are sealed with.
    pub fn current_key_id(&self) -> KeyId {
        self.keys().current
    }

    /// `sealed` re-sealed under the current key, or `None` when it already is (rotation).
    pub fn reseal(
        &self,
        ws: WorkspaceId,
        kind: &str,
        sealed: &[u8],
    ) -> Result<Option<Vec<u8>>, SealError> {
        if key_id_of(sealed) == Some(self.current_key_id()) {
            return Ok(None);
        }
        let plain = self.open(ws, kind, sealed)?;
        self.seal(ws, kind, &plain).map(Some)
    }

    /// Seals `plaintext` for records of `kind` in workspace `ws`, with a fresh random nonce.
    pub fn seal(
        &self,
        ws: WorkspaceId,
        kind: &str,
        plaintext: &[u8],
    ) -> Result<Vec<u8>, SealError> {
        let keys = self.keys();
        let current = keys.current;
        let cipher = keys
            .ciphers
            .get(&current)
            .ok_or_else(|| SealError::UnknownKey(current.to_string()))?;
        let mut nonce = [0u8; NONCE_BYTES];
        OsRng.fill_bytes(&mut nonce);
        let aad = associated_data(current, ws, kind);
        let ciphertext = cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: &aad,
                },
            )
            .map_err(|_| SealError::TooLarge)?;
        let mut out = Vec::with_capacity(HEADER_BYTES + ciphertext.len());
        out.push(VERSION);
        out.extend_from_slice(&current.0);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&ciphertext);
        Ok(out)
    }

    /// Opens a value sealed by [`Sealer::seal`] for the same workspace and kind.
    pub fn open(&self, ws: WorkspaceId, kind: &str, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
        if sealed.len() < HEADER_BYTES + TAG_BYTES {
            return Err(SealError::Truncated(sealed.len()));
        }
        if sealed[0] != VERSION {
            return Err(SealError::UnknownVersion(sealed[0]));
        }
        let mut id = [0u8; KEY_ID_BYTES];
        id.copy_from_slice(&sealed[1..1 + KEY_ID_BYTES]);
        let key_id = KeyId(id);
        let keys = self.keys();
        let cipher = keys
            .ciphers
            .get(&key_id)
            .ok_or_else(|| SealError::UnknownKey(key_id.to_string()))?;
        let nonce = XNonce::from_slice(&sealed[1 + KEY_ID_BYTES..HEADER_BYTES]);
        let aad = associated_data(key_id, ws, kind);
        cipher
            .decrypt(
                nonce,
                Payload {
                    msg: &sealed[HEADER_BYTES..],
                    aad: &aad,
                },
            )
            .map_err(|_| SealError::Authentication)
    }

    /// Seals the JSON form of `value` (for records that keep a value sealed).
    pub fn seal_json<T: Serialize>(
        &self,
        ws: WorkspaceId,
        kind: &str,
        value: &T,
    ) -> Result<Sealed, SealError> {
        let plain = serde_json::to_vec(value).map_err(|e| SealError::Json(e.to_string()))?;
        self.seal(ws, kind, &plain).map(Sealed)
    }

    /// Opens a [`Sealed`] value written by [`Sealer::seal_json`] and parses it.
    pub fn open_json<T: DeserializeOwned>(
        &self,
        ws: WorkspaceId,
        kind: &str,
        sealed: &Sealed,
    ) -> Result<T, SealError> {
        let plain = self.open(ws, kind, &sealed.0)?;
        serde_json::from_slice(&plain).map_err(|e| SealError::Json(e.to_string()))
    }
}

/// Sealed bytes; in JSON a base64 string (standard alphabet, padded).
#[derive(Clone, PartialEq, Eq)]
pub struct Sealed(pub Vec<u8>);

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sealed({} bytes)", self.0.len())
    }
}

/// In a binary format (the stored records, postcard) the bytes themselves, a third smaller.
impl Serialize for Sealed {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !s.is_human_readable() {
            return s.serialize_bytes(&self.0);
        }
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

struct SealedBytes;

impl serde::de::Visitor<'_> for SealedBytes {
    type Value = Sealed;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("sealed bytes")
    }
    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Sealed, E> {
        Ok(Sealed(v.to_vec()))
    }
}

impl<'de> Deserialize<'de> for Sealed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Sealed, D::Error> {
        if !d.is_human_readable() {
            return d.deserialize_byte_buf(SealedBytes);
        }
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map(Sealed)
            .map_err(serde::de::Error::custom)
    }
}

/// Parses a master key given as 64 hex digits (surrounding white space ignored).
pub fn parse_key_hex(text: &str) -> Result<[u8; KEY_BYTES], SealError> {
    let bytes = secrets::decode_hex(text.trim()).ok_or(SealError::BadKeyHex)?;
    key_array(&bytes)
}

fn key_array(bytes: &[u8]) -> Result<[u8; KEY_BYTES], SealError> {
    bytes
        .try_into()
        .map_err(|_| SealError::BadKeyLength(bytes.len()))
}

/// The id of the key a sealed value was sealed with, when it has the shape of one.
pub fn key_id_of(sealed: &[u8]) -> Option<KeyId> {
    let id = sealed.get(1..1 + KEY_ID_BYTES)?;
    (sealed.first() == Some(&VERSION)).then(|| {
        let mut out = [0u8; KEY_ID_BYTES];
        out.copy_from_slice(id);
        KeyId(out)
    })
}

/// The keys of `master.key.retired` (none when the file is absent).
fn read_retired_file(data_dir: &Path) -> Result<Vec<[u8; KEY_BYTES]>, Error> {
    let path = data_dir.join(RETIRED_KEY_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::internal(format!("reading {}: {e}", path.display()))),
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| parse_key_hex(l).map_err(|e| Error::internal(format!("{}: {e}", path.display()))))
        .collect()
}

/// What [`rotate_generated_key`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotated {
    pub old: KeyId,
    pub new: KeyId,
}

/// Generates a new `master.key` into `data_dir`; the previous one is appended to
/// `master.key.retired` first, so a crash at any point leaves every value readable. Refused
/// when the directory has no generated key (a configured key is rotated by configuring the
/// new one and retiring the old, see README).
pub fn rotate_generated_key(data_dir: &Path) -> Result<Rotated, Error> {
    if !data_dir.join(KEY_FILE).exists() {
        return Err(Error::invalid_input(format!(
            "{} has no generated master key ({KEY_FILE}); a configured SVC_MASTER_KEY is \
             rotated by configuring the new key with the old one in SVC_MASTER_KEYS_RETIRED",
            data_dir.display()
        )));
    }
    let old = load_generated(data_dir)?;
    let mut retired = read_retired_file(data_dir)?;
    if !retired.contains(&old) {
        retired.push(old);
    }
    write_keys(data_dir, RETIRED_KEY_FILE, &retired)?;
    let mut new = [0u8; KEY_BYTES];
    OsRng.fill_bytes(&mut new);
    write_keys(data_dir, KEY_FILE, &[new])?;
    Ok(Rotated {
        old: KeyId::of(&old),
        new: KeyId::of(&new),
    })
}

/// Removes `master.key.retired` once no stored value needs its keys any more.
pub fn drop_retired_file(data_dir: &Path) -> Result<(), Error> {
    match std::fs::remove_file(data_dir.join(RETIRED_KEY_FILE)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::internal(format!("removing {RETIRED_KEY_FILE}: {e}"))),
    }
}

/// Replaces `data_dir/name` with `keys` (hex, one per line, mode 0600) atomically: written to
/// a temporary file, synced, renamed over the old one, and the directory synced.
fn write_keys(data_dir: &Path, name: &str, keys: &[[u8; KEY_BYTES]]) -> Result<(), Error> {
    use std::io::Write;
    let path = data_dir.join(name);
    let tmp = data_dir.join(format!(".{name}.tmp"));
    let text: String = keys
        .iter()
        .map(|k| crate::plumbing::ids::hex(k) + "\n")
        .collect();
    let io =
        |what: &str, e: std::io::Error| Error::internal(format!("{what} {}: {e}", path.display()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp).map_err(|e| io("writing", e))?;
    file.write_all(text.as_bytes())
        .and_then(|_| file.sync_all())
        .map_err(|e| io("writing", e))?;
    std::fs::rename(&tmp, &path).map_err(|e| io("replacing", e))?;
    std::fs::File::open(data_dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("syncing the directory of", e))
}

fn load_generated(data_dir: &Path) -> Result<[u8; KEY_BYTES], Error> {
    let bytes = secrets::load_or_create(data_dir, KEY_FILE, KEY_BYTES)?;
    key_array(&bytes)
        .map_err(|e| Error::internal(format!("{}: {e}", data_dir.join(KEY_FILE).display())))
}

/// `context | key id | workspace (8 bytes, big-endian) | kind`: every part before the kind has a
/// fixed width, so no two (key, workspace, kind) triples give the same bytes.
fn associated_data(key: KeyId, ws: WorkspaceId, kind: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(AAD_CONTEXT.len() + KEY_ID_BYTES + 8 + kind.len());
    aad.extend_from_slice(AAD_CONTEXT);
    aad.extend_from_slice(&key.0);
    aad.extend_from_slice(&ws.0.to_be_bytes());
    aad.extend_from_slice(kind.as_bytes());
    aad
}

#[cfg(test)]
mod tests {
    use super::*;

    const WS: WorkspaceId = WorkspaceId(7);

    fn sealer() -> Sealer {
        Sealer::new([1u8; KEY_BYTES], &[])
    }

    #[test]
    fn round_trip_and_fresh_nonces() {
        let s = sealer();
        let a = s.seal(WS, "brand_context", b"Acme Rockets").expect("seal");
        let b = s.seal(WS, "brand_context", b"Acme Rockets").expect("seal");
        assert_ne!(a, b, "two seals of one value must differ (random nonce)");
        assert!(!a.windows(12).any(|w| w == b"Acme Rockets"));
        assert_eq!(a.len(), HEADER_BYTES + 12 + TAG_BYTES);
        assert_eq!(
            s.open(WS, "brand_context", &a).expect("open"),
            b"Acme Rockets"
        );
        assert_eq!(
            s.open(WS, "brand_context", &b).expect("open"),
            b"Acme Rockets"
        );
        let empty = s.seal(WS, "k", b"").expect("seal empty");
        assert_eq!(s.open(WS, "k", &empty).expect("open empty"), b"");
    }

    #[test]
    fn other_workspace_or_kind_does_not_open() {
        let s = sealer();
        let sealed = s.seal(WS, "brand_context", b"secret").expect("seal");
        assert_eq!(
            s.open(WorkspaceId(8), "brand_context", &sealed),
            Err(SealError::Authentication)
        );
        assert_eq!(
            s.open(WS, "webhook_secret", &sealed),
            Err(SealError::Authentication)
        );
    }

    #[test]
    fn any_altered_byte_is_refused() {
        let s = sealer();
        let sealed = s.seal(WS, "k", b"value").expect("seal");
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 0x01;
            let err = s.open(WS, "k", &bad).expect_err("tampered value opened");
            match i {
                0 => assert_eq!(err, SealError::UnknownVersion(VERSION ^ 1)),
                1..=8 => assert!(matches!(err, SealError::UnknownKey(_)), "{err}"),
                _ => assert_eq!(err, SealError::Authentication),
            }
        }
        assert_eq!(
            s.open(WS, "k", &sealed[..sealed.len() - 1]),
            Err(SealError::Authentication)
        );
        assert_eq!(
            s.open(WS, "k", &sealed[..10]),
            Err(SealError::Truncated(10))
        );
    }

    #[test]
    fn unknown_key_id_is_named() {
        let old = Sealer::new([2u8; KEY_BYTES], &[]);
        let sealed = old.seal(WS, "k", b"v").expect("seal");
        let err = sealer().open(WS, "k", &sealed).expect_err("foreign key");
        assert_eq!(err, SealError::UnknownKey(old.current_key_id().to_string()));
        let message = err.to_string();
        assert!(
            message.contains(&old.current_key_id().to_string()),
            "{message}"
        );
        assert!(message.contains("retired master key"), "{message}");
    }

    #[test]
    fn rotation_keeps_old_values_readable_and_seals_with_the_new_key() {
        let old_key = [2u8; KEY_BYTES];
        let new_key = [3u8; KEY_BYTES];
        let before = Sealer::new(old_key, &[])
            .seal(WS, "k", b"v1")
            .expect("seal");
        let rotated = Sealer::new(new_key, &[old_key]);
        assert_eq!(rotated.open(WS, "k", &before).expect("old value"), b"v1");
        let after = rotated.seal(WS, "k", b"v2").expect("seal");
        assert_eq!(key_id_of(&after), Some(KeyId::of(&new_key)));
        assert!(matches!(
            Sealer::new(old_key, &[]).open(WS, "k", &after),
            Err(SealError::UnknownKey(_))
        ));
    }

    #[test]
    fn json_values_round_trip_through_base64_records() {
        let s = sealer();
        let sealed = s
            .seal_json(WS, "k", &serde_json::json!({"name": "Acme"}))
            .expect("seal");
        let text = serde_json::to_string(&sealed).expect("serialize");
        assert!(!text.contains("Acme"));
        let back: Sealed = serde_json::from_str(&text).expect("deserialize");
        let value: serde_json::Value = s.open_json(WS, "k", &back).expect("open");
        assert_eq!(value["name"], "Acme");
        assert!(serde_json::from_str::<Sealed>("\"not base64!\"").is_err());
        assert_eq!(
            format!("{sealed:?}"),
            format!("Sealed({} bytes)", sealed.0.len())
        );
    }

    #[test]
    fn generated_key_persists_and_stays_readable_after_configuring_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let generated = Sealer::load(dir.path(), None, &[]).expect("generate");
        let sealed = generated.seal(WS, "k", b"v").expect("seal");
        let reopened = Sealer::load(dir.path(), None, &[]).expect("reload");
        assert_eq!(reopened.current_key_id(), generated.current_key_id());
        assert_eq!(reopened.open(WS, "k", &sealed).expect("open"), b"v");

        let configured = Sealer::load(dir.path(), Some(&[9u8; KEY_BYTES]), &[]).expect("config");
        assert_ne!(configured.current_key_id(), generated.current_key_id());
        assert_eq!(configured.open(WS, "k", &sealed).expect("open"), b"v");
    }

    #[test]
    fn configured_key_does_not_create_a_key_file_and_bad_keys_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        Sealer::load(dir.path(), Some(&[9u8; KEY_BYTES]), &[]).expect("config");
        assert!(!dir.path().join(KEY_FILE).exists());
        let err = Sealer::load(dir.path(), Some(&[9u8; 16]), &[]).expect_err("short key");
        assert!(err.message.contains("32 bytes"), "{}", err.message);
        assert!(Sealer::load(dir.path(), None, &[vec![1u8; 31]]).is_err());
    }

    #[test]
    fn hex_keys_parse_strictly() {
        let hex = "ab".repeat(KEY_BYTES);
        assert_eq!(parse_key_hex(&format!(" {hex}\n")), Ok([0xab; KEY_BYTES]));
        assert_eq!(parse_key_hex("abcd"), Err(SealError::BadKeyLength(2)));
        assert_eq!(
            parse_key_hex(&"zz".repeat(KEY_BYTES)),
            Err(SealError::BadKeyHex)
        );
    }

    #[test]
    fn rotating_the_generated_key_keeps_old_values_readable_and_reseals() {
        let dir = tempfile::tempdir().expect("tempdir");
        let before = Sealer::load(dir.path(), None, &[]).expect("generate");
        let old_value = before.seal(WS, "k", b"v").expect("seal");
        let shared = before.clone();

        let rotated = rotate_generated_key(dir.path()).expect("rotate");
        assert_eq!(rotated.old, before.current_key_id());
        let after = Sealer::load(dir.path(), None, &[]).expect("reload");
        assert_eq!(after.current_key_id(), rotated.new);
        assert_eq!(after.open(WS, "k", &old_value).expect("old value"), b"v");

        // A running service takes the new keys; its clones follow.
        before.replace_keys(&after);
        assert_eq!(shared.current_key_id(), rotated.new);
        let resealed = shared
            .reseal(WS, "k", &old_value)
            .expect("reseal")
            .expect("was under the old key");
        assert_eq!(key_id_of(&resealed), Some(rotated.new));
        assert_eq!(shared.reseal(WS, "k", &resealed).expect("again"), None);

        // Once nothing needs the retired key, dropping it leaves only the new one.
        drop_retired_file(dir.path()).expect("drop");
        let last = Sealer::load(dir.path(), None, &[]).expect("reload");
        assert_eq!(last.open(WS, "k", &resealed).expect("open"), b"v");
        assert!(matches!(
            last.open(WS, "k", &old_value),
            Err(SealError::UnknownKey(_))
        ));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE))
                .expect("meta")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn rotation_needs_a_generated_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(rotate_generated_key(dir.path()).is_err());
    }

    #[test]
    fn debug_shows_key_ids_only() {
        let s = sealer();
        let text = format!("{s:?}");
        assert!(text.contains(&s.current_key_id().to_string()), "{text}");
        assert!(!text.contains("0101010101"), "{text}");
    }
}
