//! Key plaintext format: `svc_live_` (agent) or `dsk_` (legacy dashboard) + 32 base62 characters
//! of randomness + a 6-character base62 CRC32 checksum of everything before it. The checksum lets
//! malformed or mistyped keys be refused without a store lookup (and lets secret scanners spot
//! real keys). Only the SHA-256 digest of the whole plaintext is stored.

use sha2::{Digest, Sha256};

use crate::plumbing::ids;

pub const AGENT_PREFIX: &str = "svc_live_";
pub const LEGACY_PREFIX: &str = "dsk_";
const RANDOM_LEN: usize = 32;
const CHECKSUM_LEN: usize = 6;

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum KeyKind {
    /// `svc_live_` agent key, workspace-bound, used with the capability gateway.
    Agent,
    /// `dsk_` legacy dashboard key, accepted in `X-API-Key` on event and webhook routes only.
    Legacy,
    /// A chat buddy's principal for the gateway (`agents::principal`): a stored key record
    /// with no plaintext and no digest, so no request can ever present it.
    Internal,
    /// An MCP client's approval (`crate::oauth`): a stored key record with no plaintext and no
    /// digest; the client's OAuth access tokens act as it.
    #[serde(rename = "oauth")]
    OAuth,
}

impl KeyKind {
    pub fn prefix(self) -> &'static str {
        match self {
            KeyKind::Agent => AGENT_PREFIX,
            KeyKind::Legacy => LEGACY_PREFIX,
            // The id prefix of internal principals; no plaintext of this kind exists.
            KeyKind::Internal => "int_",
            // Shown as the key's prefix in listings; no plaintext of this kind exists either.
            KeyKind::OAuth => "oauth_",
        }
    }
}

/// A freshly minted key. The plaintext leaves the process once, in the create response.
pub struct NewKey {
    pub plaintext: String,
    pub digest: String,
    /// Shown in listings: the kind prefix plus the first four random characters.
    pub display_prefix: String,
    pub last_four: String,
}

impl std::fmt::Debug for NewKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the plaintext, even in debug output.
        f.debug_struct("NewKey")
            .field("display_prefix", &self.display_prefix)
            .finish_non_exhaustive()
    }
}

pub fn mint(kind: KeyKind) -> NewKey {
    let head = format!("{}{}", kind.prefix(), ids::random_base62(RANDOM_LEN));
    let plaintext = format!("{head}{}", checksum(&head));
    NewKey {
        digest: digest(&plaintext),
        display_prefix: plaintext[..kind.prefix().len() + 4].to_owned(),
        last_four: plaintext[plaintext.len() - 4..].to_owned(),
        plaintext,
    }
}

/// The kind of a well-formed key with a valid checksum; `None` for anything else.
pub fn parse(candidate: &str) -> Option<KeyKind> {
    let kind = if candidate.starts_with(AGENT_PREFIX) {
        KeyKind::Agent
    } else if candidate.starts_with(LEGACY_PREFIX) {
        KeyKind::Legacy
    } else {
        return None;
    };
    let body = &candidate[kind.prefix().len()..];
    if body.len() != RANDOM_LEN + CHECKSUM_LEN || !ids::is_base62(body) {
        return None;
    }
    let (head, sum) = candidate.split_at(candidate.len() - CHECKSUM_LEN);
    (checksum(head) == sum).then_some(kind)
}

/// Hex SHA-256 of the plaintext: the only form in which a key is stored.
pub fn digest(plaintext: &str) -> String {
    ids::hex(&Sha256::digest(plaintext.as_bytes()))
}

fn checksum(head: &str) -> String {
    ids::base62_fixed(u64::from(crc32fast::hash(head.as_bytes())), CHECKSUM_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_agent_keys_have_the_documented_shape() {
        let k = mint(KeyKind::Agent);
        assert!(k.plaintext.starts_with("svc_live_"));
        assert_eq!(k.plaintext.len(), 9 + 32 + 6);
        assert_eq!(parse(&k.plaintext), Some(KeyKind::Agent));
        assert_eq!(k.digest, digest(&k.plaintext));
        assert_eq!(k.digest.len(), 64);
        assert!(!k.digest.contains(&k.plaintext[9..]));
        assert_eq!(k.display_prefix.len(), 13);
        assert!(k.plaintext.ends_with(&k.last_four));
    }

    #[test]
    fn legacy_keys_parse_as_legacy() {
        let k = mint(KeyKind::Legacy);
        assert!(k.plaintext.starts_with("dsk_"));
        assert_eq!(parse(&k.plaintext), Some(KeyKind::Legacy));
    }

    #[test]
    fn corrupted_keys_fail_the_checksum() {
        let k = mint(KeyKind::Agent).plaintext;
        let mut chars: Vec<char> = k.chars().collect();
        chars[12] = if chars[12] == 'a' { 'b' } else { 'a' };
        let typo: String = chars.into_iter().collect();
        assert_eq!(parse(&typo), None);
        assert_eq!(parse(&k[..k.len() - 1]), None);
        assert_eq!(parse("svc_live_"), None);
        assert_eq!(parse(&format!("svc_test_{}", &k[9..])), None);
    }
}
