//! Opaque, type-prefixed ids: random ones (`usr_`, `key_`, `req_`, ...), the public ids of
//! graph nodes and edges ([`PublicIds`]), and the base62 alphabet they use.

use hmac::{Hmac, Mac};
use rand::{Rng, RngCore};
use sha2::digest::KeyInit;
use sha2::Sha256;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `n` random base62 characters (used for ids and key secrets alike). The thread-local
/// generator is a CSPRNG (ChaCha, seeded and periodically reseeded from the OS); asking the OS
/// for every character cost a system call each, 20 per request id.
pub fn random_base62(n: usize) -> String {
    let mut rng = rand::thread_rng();
    (0..n)
        .map(|_| BASE62[rng.gen_range(0..BASE62.len())] as char)
        .collect()
}

/// Fixed-width base62 rendering of `value`, most significant digit first.
pub fn base62_fixed(mut value: u64, width: usize) -> String {
    let mut out = vec![b'0'; width];
    for slot in out.iter_mut().rev() {
        *slot = BASE62[(value % 62) as usize];
        value /= 62;
    }
    out.into_iter().map(char::from).collect()
}

pub fn is_base62(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// A new id of the given kind: prefix plus 20 base62 characters (~119 bits).
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", random_base62(20))
}

pub fn user_id() -> String {
    new_id("usr")
}

pub fn key_id() -> String {
    new_id("key")
}

pub fn request_id() -> String {
    new_id("req")
}

/// A random nonzero workspace number (zero is the engine's global scope).
pub fn workspace_number() -> u64 {
    let mut rng = rand::thread_rng();
    loop {
        let n: u64 = rng.gen();
        if n != 0 {
            return n;
        }
    }
}

/// The deployment's id key, beside the other secrets files of the data directory (0600).
pub const KEY_FILE: &str = "ids.key";
/// Bytes of the id key.
pub const KEY_BYTES: usize = 32;
/// Characters of a public id's body: 62^11 > 2^64, so every permuted counter fits.
pub const BODY_WIDTH: usize = 11;
/// The longest legacy decimal body accepted: shorter than [`BODY_WIDTH`], so the two forms
/// can never be read as one another.
const LEGACY_MAX_DIGITS: usize = 10;
const FEISTEL_ROUNDS: u8 = 4;
/// Bytes of the Cypher id key ([`PublicIds::cypher_key`]).
pub const CYPHER_KEY_BYTES: usize = 16;
/// What the Cypher id key is derived from (longer than any round input, so no round of the
/// public-id permutation ever computes it).
const CYPHER_KEY_LABEL: &[u8] = b"svc cypher ids v1";

const CUSTOMER: &str = "cus_";
const TOUCHPOINT: &str = "tp_";
const NODE: &str = "node_";
const EDGE: &str = "rel_";

/// Public ids of graph nodes and edges (`cus_`, `tp_`, `node_`, `rel_` plus 11 base62
/// characters). The body is a keyed permutation of the engine's id, so ids neither reveal
/// how much another workspace writes nor can be enumerated; the engine keeps its counters.
/// The permutation is a 4-round Feistel network over two 32-bit halves whose round function
/// is HMAC-SHA256 under the deployment's key ([`KEY_FILE`]).
///
/// Ids from before opaque ids (`cus_547`) stay valid for ids below the store's legacy
/// ceiling (the id sequence when it first ran with opaque ids); a store that started with
/// opaque ids has ceiling 0 and accepts none. Ids are not capabilities: every lookup still
/// runs inside the caller's workspace.
#[derive(Clone)]
pub struct PublicIds {
    /// Keyed once; each round clones the state (the key's pad blocks are already absorbed).
    mac: Hmac<Sha256>,
    legacy_ceiling: u64,
    /// The key of the integers Cypher shows for nodes and relationships.
    cypher_key: [u8; CYPHER_KEY_BYTES],
}

impl std::fmt::Debug for PublicIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublicIds")
            .field("legacy_ceiling", &self.legacy_ceiling)
            .finish_non_exhaustive()
    }
}

impl PublicIds {
    pub fn new(key: &[u8; KEY_BYTES], legacy_ceiling: u64) -> PublicIds {
        // HMAC pads a key shorter than the block with zeros: this is HMAC under `key`.
        let mut block = [0u8; 64];
        block[..KEY_BYTES].copy_from_slice(key);
        let mac = <Hmac<Sha256> as KeyInit>::new(&block.into());
        let mut derive = mac.clone();
        derive.update(CYPHER_KEY_LABEL);
        let mut cypher_key = [0u8; CYPHER_KEY_BYTES];
        cypher_key.copy_from_slice(&derive.finalize().into_bytes()[..CYPHER_KEY_BYTES]);
        PublicIds {
            mac,
            legacy_ceiling,
            cypher_key,
        }
    }

    /// A fresh random key: for stores opened outside the service (tests, tools), whose ids
    /// mean nothing beyond the handle.
    pub fn random(legacy_ceiling: u64) -> PublicIds {
        let mut key = [0u8; KEY_BYTES];
        rand::rngs::OsRng.fill_bytes(&mut key);
        PublicIds::new(&key, legacy_ceiling)
    }

    /// The key of the integers Cypher shows for nodes and relationships (`id(n)`, result
    /// nodes; `svc_query::IdCodec::keyed`): derived from the deployment's key, so they stay
    /// the same across restarts, and independent of the public ids' permutation.
    pub fn cypher_key(&self) -> [u8; CYPHER_KEY_BYTES] {
        self.cypher_key
    }

    /// The legacy decimal ids accepted are those below this.
    pub fn legacy_ceiling(&self) -> u64 {
        self.legacy_ceiling
    }

    fn round(&self, round: u8, half: u32) -> u32 {
        let mut mac = self.mac.clone();
        mac.update(&[round]);
        mac.update(&half.to_be_bytes());
        let out = mac.finalize().into_bytes();
        u32::from_be_bytes([out[0], out[1], out[2], out[3]])
    }

    /// The keyed permutation of the 64-bit ids.
    fn permute(&self, id: u64) -> u64 {
        let (mut left, mut right) = ((id >> 32) as u32, id as u32);
        for r in 0..FEISTEL_ROUNDS {
            (left, right) = (right, left ^ self.round(r, right));
        }
        (u64::from(left) << 32) | u64::from(right)
    }

    fn unpermute(&self, public: u64) -> u64 {
        let (mut left, mut right) = ((public >> 32) as u32, public as u32);
        for r in (0..FEISTEL_ROUNDS).rev() {
            (left, right) = (right ^ self.round(r, left), left);
        }
        (u64::from(left) << 32) | u64::from(right)
    }

    fn render(&self, prefix: &str, id: u64) -> String {
        format!("{prefix}{}", base62_fixed(self.permute(id), BODY_WIDTH))
    }

    /// The engine id a body names: the opaque form, or a legacy decimal below the ceiling.
    fn parse(&self, s: &str, prefix: &str) -> Option<u64> {
        let body = s.strip_prefix(prefix)?;
        if body.len() == BODY_WIDTH {
            return decode_base62(body).map(|p| self.unpermute(p));
        }
        let id = parse_decimal(body)?;
        (id < self.legacy_ceiling).then_some(id)
    }

    /// Public id of a Customer node.
    pub fn customer(&self, id: svc_engine::NodeId) -> String {
        self.render(CUSTOMER, id.0)
    }

    /// Public id of a Touchpoint node.
    pub fn touchpoint(&self, id: svc_engine::NodeId) -> String {
        self.render(TOUCHPOINT, id.0)
    }

    /// Public id of any node: `cus_` for customers, `tp_` for touchpoints, `node_` for every
    /// other label (campaigns are also keyed by their `campaignId` property).
    pub fn node(&self, labels: &[String], id: svc_engine::NodeId) -> String {
        self.render(node_prefix(labels), id.0)
    }

    /// Public id of an edge.
    pub fn edge(&self, id: svc_engine::EdgeId) -> String {
        self.render(EDGE, id.0)
    }

    /// The engine node a customer id names; `None` for anything else.
    pub fn parse_customer(&self, s: &str) -> Option<svc_engine::NodeId> {
        self.parse(s, CUSTOMER).map(svc_engine::NodeId)
    }

    /// The engine node a touchpoint id names; `None` for anything else.
    pub fn parse_touchpoint(&self, s: &str) -> Option<svc_engine::NodeId> {
        self.parse(s, TOUCHPOINT).map(svc_engine::NodeId)
    }

    /// The engine node any node id names (`cus_`, `tp_`, `node_`); whether the prefix fits
    /// the node's labels is the caller's to check (compare with [`PublicIds::node`]).
    pub fn parse_any_node(&self, s: &str) -> Option<svc_engine::NodeId> {
        [CUSTOMER, TOUCHPOINT, NODE]
            .iter()
            .find_map(|p| self.parse(s, p))
            .map(svc_engine::NodeId)
    }

    /// Every form a stored reference to customer `id` may have (records keep the id they were
    /// written with): the current id, and the decimal one for a customer from before opaque
    /// ids.
    pub fn customer_references(&self, id: svc_engine::NodeId) -> Vec<String> {
        let mut forms = vec![self.customer(id)];
        if id.0 < self.legacy_ceiling {
            forms.push(format!("{CUSTOMER}{}", id.0));
        }
        forms
    }

    /// The id customer `id` was first given out under: the decimal one for a customer from
    /// before opaque ids (what a provider may already know it by), else its id.
    pub fn original_customer(&self, id: svc_engine::NodeId) -> String {
        if id.0 < self.legacy_ceiling {
            format!("{CUSTOMER}{}", id.0)
        } else {
            self.customer(id)
        }
    }

    /// `s` in the current form when it is a node id (a stored legacy reference renders as
    /// the id the node has now); anything else unchanged.
    pub fn current(&self, s: &str) -> String {
        [CUSTOMER, TOUCHPOINT, NODE]
            .iter()
            .find_map(|p| self.parse(s, p).map(|id| self.render(p, id)))
            .unwrap_or_else(|| s.to_owned())
    }
}

/// Whether `s` has the shape of a node id (a node prefix and a body of either form), known or
/// not: callers answer such an id like an absent one, and anything else as malformed.
pub fn is_node_id_shaped(s: &str) -> bool {
    [CUSTOMER, TOUCHPOINT, NODE].iter().any(|p| shaped(s, p))
}

/// [`is_node_id_shaped`] for customer ids.
pub fn is_customer_id_shaped(s: &str) -> bool {
    shaped(s, CUSTOMER)
}

fn shaped(s: &str, prefix: &str) -> bool {
    s.strip_prefix(prefix).is_some_and(|body| {
        (body.len() == BODY_WIDTH && is_base62(body))
            || (!body.is_empty() && body.bytes().all(|b| b.is_ascii_digit()))
    })
}

fn node_prefix(labels: &[String]) -> &'static str {
    if labels.iter().any(|l| l == svc_engine::schema::CUSTOMER) {
        CUSTOMER
    } else if labels.iter().any(|l| l == svc_engine::schema::TOUCHPOINT) {
        TOUCHPOINT
    } else {
        NODE
    }
}

/// The value of a fixed-width base62 body; `None` for another alphabet or past `u64`.
fn decode_base62(body: &str) -> Option<u64> {
    body.bytes().try_fold(0u64, |acc, b| {
        let digit = BASE62.iter().position(|&c| c == b)? as u64;
        acc.checked_mul(62)?.checked_add(digit)
    })
}

/// A canonical legacy decimal body (no sign, no leading zeros, at most 10 digits).
fn parse_decimal(body: &str) -> Option<u64> {
    if body.is_empty()
        || body.len() > LEGACY_MAX_DIGITS
        || !body.bytes().all(|b| b.is_ascii_digit())
        || (body.len() > 1 && body.starts_with('0'))
    {
        return None;
    }
    body.parse().ok()
}

/// Lower-case hex of bytes (digests, secrets on disk).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_prefix_and_base62_body() {
        let id = key_id();
        let body = id.strip_prefix("key_").expect("prefix");
        assert_eq!(body.len(), 20);
        assert!(is_base62(body));
        assert_ne!(key_id(), key_id());
    }

    #[test]
    fn base62_fixed_pads_and_encodes() {
        assert_eq!(base62_fixed(0, 6), "000000");
        assert_eq!(base62_fixed(61, 2), "0z");
        assert_eq!(base62_fixed(62, 2), "10");
        assert_eq!(base62_fixed(u32::MAX as u64, 6), "4gfFC3");
    }

    fn codec(ceiling: u64) -> PublicIds {
        PublicIds::new(&[7u8; KEY_BYTES], ceiling)
    }

    #[test]
    fn node_ids_round_trip_at_fixed_width() {
        let ids = codec(0);
        for n in [0, 1, 2, 41, 42, 547, 1 << 32, u64::MAX - 1, u64::MAX] {
            let id = svc_engine::NodeId(n);
            let wire = ids.customer(id);
            let body = wire.strip_prefix("cus_").expect("prefix");
            assert_eq!(body.len(), BODY_WIDTH, "{wire}");
            assert!(is_base62(body));
            assert_eq!(ids.parse_customer(&wire), Some(id), "{wire}");
            assert_eq!(ids.parse_any_node(&wire), Some(id));
            assert_eq!(ids.parse_touchpoint(&ids.touchpoint(id)), Some(id));
            // The prefix is part of the id.
            assert_eq!(ids.parse_touchpoint(&wire), None);
        }
        let e = svc_engine::EdgeId(9);
        assert!(ids.edge(e).starts_with("rel_"));
        let labels = vec!["Opportunity".to_owned()];
        assert!(ids
            .node(&labels, svc_engine::NodeId(3))
            .starts_with("node_"));
    }

    #[test]
    fn permutation_is_a_bijection_that_hides_the_order() {
        let ids = codec(0);
        let sample: Vec<u64> = (0..5_000).chain((0..64).map(|b| 1u64 << b)).collect();
        let mut images = std::collections::HashSet::new();
        for &n in &sample {
            let p = ids.permute(n);
            assert_eq!(ids.unpermute(p), n);
            images.insert(p);
        }
        let distinct: std::collections::HashSet<u64> = sample.iter().copied().collect();
        assert_eq!(images.len(), distinct.len());
        // Neighbouring counters are not neighbouring ids, and another key gives other ids.
        let (a, b) = (ids.permute(130), ids.permute(131));
        assert!(a.abs_diff(b) > 1 << 20, "{a} {b}");
        let other = PublicIds::new(&[8u8; KEY_BYTES], 0);
        assert_ne!(
            ids.customer(svc_engine::NodeId(7)),
            other.customer(svc_engine::NodeId(7))
        );
    }

    #[test]
    fn the_cypher_key_is_derived_and_independent() {
        let a = codec(0);
        assert_eq!(
            a.cypher_key(),
            codec(548).cypher_key(),
            "the key alone decides it"
        );
        assert_ne!(
            a.cypher_key(),
            PublicIds::new(&[8u8; KEY_BYTES], 0).cypher_key()
        );
        // Not any part of the key itself, nor of a round's output.
        assert!(!a.cypher_key().iter().all(|b| *b == 7));
        let round = a.round(0, 0).to_be_bytes();
        assert_ne!(a.cypher_key()[..4], round);
    }

    #[test]
    fn legacy_decimal_ids_resolve_only_below_the_ceiling() {
        let old = codec(548);
        assert_eq!(old.parse_customer("cus_547"), Some(svc_engine::NodeId(547)));
        assert_eq!(old.parse_any_node("node_12"), Some(svc_engine::NodeId(12)));
        assert_eq!(old.parse_customer("cus_548"), None);
        assert_eq!(
            old.current("cus_547"),
            old.customer(svc_engine::NodeId(547))
        );
        assert_eq!(old.current("someone@x.io"), "someone@x.io");
        assert_eq!(old.current("tp_9"), old.touchpoint(svc_engine::NodeId(9)));
        let forms = old.customer_references(svc_engine::NodeId(547));
        assert_eq!(
            forms,
            vec![old.customer(svc_engine::NodeId(547)), "cus_547".to_owned()]
        );
        assert_eq!(old.customer_references(svc_engine::NodeId(548)).len(), 1);
        assert_eq!(old.original_customer(svc_engine::NodeId(547)), "cus_547");
        assert_eq!(
            old.original_customer(svc_engine::NodeId(548)),
            old.customer(svc_engine::NodeId(548))
        );
        let fresh = codec(0);
        assert_eq!(fresh.parse_customer("cus_1"), None);
        assert_eq!(fresh.parse_customer("cus_0"), None);
        // Even a huge ceiling reads at most 10 digits as decimal: 11 characters are opaque.
        let huge = codec(u64::MAX);
        assert_eq!(
            huge.parse_customer("cus_9999999999"),
            Some(svc_engine::NodeId(9_999_999_999))
        );
        let eleven = huge.parse_customer("cus_12345678901").expect("opaque form");
        assert_ne!(eleven, svc_engine::NodeId(12_345_678_901));
    }

    #[test]
    fn garbage_is_refused() {
        let ids = codec(1_000);
        for bad in [
            "",
            "cus_",
            "cus_042",
            "cus_-1",
            "cus_4a",
            "cus_+5",
            "tp_42x",
            "42",
            "cus_99999999999999999999",
            "cus_zzzzzzzzzzz",
            "cus_0000000000!",
            "cus_00000000 00",
            "cus_ééééé",
            "usr_00000000000",
            "CUS_00000000001",
        ] {
            assert_eq!(ids.parse_customer(bad), None, "{bad}");
        }
        assert!(is_node_id_shaped("cus_00000000000"));
        assert!(is_node_id_shaped("node_999"));
        assert!(!is_node_id_shaped("cus_x"));
        assert!(!is_node_id_shaped("rel_1"));
        assert!(is_customer_id_shaped("cus_999999"));
        assert!(!is_customer_id_shaped("tp_1"));
    }

    #[test]
    fn hex_renders_lowercase() {
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
    }
}
