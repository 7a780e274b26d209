//! The integers a query shows for nodes and relationships ([`IdCodec`]): `id(n)`, `id(r)` and
//! the `id`, `start` and `end` of result nodes and relationships.
//!
//! The engine numbers nodes and relationships from counters shared by every workspace of a
//! store, so a tenant reading them would see the gaps other workspaces' writes leave. A
//! keyed codec shows a keyed permutation of the engine id instead: still an integer (so
//! `WHERE id(n) = 123` and the TCK keep their shape), the same for the same entity across
//! queries and restarts, but neither sequential nor decodable without the key. The identity
//! codec (the default) shows the engine ids as they are.
//!
//! The permutation is an 8-round alternating (unbalanced) Feistel network over the low 53
//! bits (halves of 26 and 27 bits), whose round function is SipHash-1-3 under a 128-bit key
//! of the id, the round and whether it names a node or a relationship (so a node and a
//! relationship with the same engine id show different integers). 53 bits keep every id an
//! integer a JavaScript client reads exactly (below 2^53, like Neo4j's small ids); the bits
//! above pass through unchanged, so the codec is a bijection of all of `u64` onto `i64` and
//! every engine id a store will ever hand out shows as a non-negative integer below 2^53.

use svc_engine::{EdgeId, NodeId};

/// Bits permuted; higher bits pass through.
const BITS: u32 = 53;
const LOW_BITS: u32 = 27;
const HIGH_BITS: u32 = BITS - LOW_BITS;
const LOW_MASK: u64 = (1 << LOW_BITS) - 1;
const HIGH_MASK: u64 = (1 << HIGH_BITS) - 1;
const MASK: u64 = (1 << BITS) - 1;
/// Rounds of the network: each half is rewritten four times.
const ROUNDS: u64 = 8;

const NODE: u64 = 0;
const RELATIONSHIP: u64 = 1;

/// How node and relationship ids are shown to a query and read back from it. `Copy` and a
/// few words: it rides on [`crate::Limits`].
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct IdCodec {
    /// SipHash key halves; `None`: the identity.
    key: Option<(u64, u64)>,
}

impl std::fmt::Debug for IdCodec {
    // The key stays out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.key.is_some() {
            "IdCodec(keyed)"
        } else {
            "IdCodec(identity)"
        })
    }
}

impl IdCodec {
    /// Engine ids as they are (embedders, tests, the TCK).
    pub const fn identity() -> IdCodec {
        IdCodec { key: None }
    }

    /// The keyed permutation under `key` (128 bits; derive it from a deployment secret, and
    /// keep it apart from other uses of that secret).
    pub fn keyed(key: [u8; 16]) -> IdCodec {
        let mut k0 = [0u8; 8];
        let mut k1 = [0u8; 8];
        k0.copy_from_slice(&key[..8]);
        k1.copy_from_slice(&key[8..]);
        IdCodec {
            key: Some((u64::from_le_bytes(k0), u64::from_le_bytes(k1))),
        }
    }

    /// Whether this codec shows engine ids unchanged.
    pub fn is_identity(&self) -> bool {
        self.key.is_none()
    }

    /// The integer a query shows for node `id`.
    pub fn node(&self, id: NodeId) -> i64 {
        self.encode(NODE, id.0)
    }

    /// The node a shown integer names (any integer names some id; whether it exists is the
    /// graph's to say).
    pub fn node_id(&self, shown: i64) -> NodeId {
        NodeId(self.decode(NODE, shown))
    }

    /// The integer a query shows for relationship `id`.
    pub fn relationship(&self, id: EdgeId) -> i64 {
        self.encode(RELATIONSHIP, id.0)
    }

    /// The relationship a shown integer names.
    pub fn relationship_id(&self, shown: i64) -> EdgeId {
        EdgeId(self.decode(RELATIONSHIP, shown))
    }

    fn encode(&self, kind: u64, id: u64) -> i64 {
        let Some((k0, k1)) = self.key else {
            return id as i64;
        };
        let (mut high, mut low) = ((id >> LOW_BITS) & HIGH_MASK, id & LOW_MASK);
        for r in 0..ROUNDS {
            if r % 2 == 0 {
                low ^= round(k0, k1, kind, r, high) & LOW_MASK;
            } else {
                high ^= round(k0, k1, kind, r, low) & HIGH_MASK;
            }
        }
        ((id & !MASK) | (high << LOW_BITS) | low) as i64
    }

    fn decode(&self, kind: u64, shown: i64) -> u64 {
        let shown = shown as u64;
        let Some((k0, k1)) = self.key else {
            return shown;
        };
        let (mut high, mut low) = ((shown >> LOW_BITS) & HIGH_MASK, shown & LOW_MASK);
        for r in (0..ROUNDS).rev() {
            if r % 2 == 0 {
                low ^= round(k0, k1, kind, r, high) & LOW_MASK;
            } else {
                high ^= round(k0, k1, kind, r, low) & HIGH_MASK;
            }
        }
        (shown & !MASK) | (high << LOW_BITS) | low
    }
}

/// The round function: SipHash-1-3 (the algorithm of std's `HashMap` keys) of one 8-byte
/// word naming the kind, the round and the half (at most 27 bits).
fn round(k0: u64, k1: u64, kind: u64, r: u64, half: u64) -> u64 {
    siphash::<1, 3>(k0, k1, (kind << 40) | (r << 32) | half)
}

/// SipHash-C-D of the 8 little-endian bytes of `m` (what a SipHasher's
/// `write(&m.to_le_bytes())` then `finish()` computes), for one block: a few nanoseconds, no
/// allocation.
fn siphash<const C: usize, const D: usize>(k0: u64, k1: u64, m: u64) -> u64 {
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    let sipround = |v: &mut [u64; 4]| {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    };
    // The message block, then the final block holding the length (8) in its top byte.
    for block in [m, 8 << 56] {
        v[3] ^= block;
        for _ in 0..C {
            sipround(&mut v);
        }
        v[0] ^= block;
    }
    v[2] ^= 0xff;
    for _ in 0..D {
        sipround(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn keyed() -> IdCodec {
        IdCodec::keyed(*b"0123456789abcdef")
    }

    #[test]
    #[allow(deprecated)] // std's SipHasher is SipHash-2-4: the reference to check against.
    fn the_round_function_is_siphash() {
        use std::hash::Hasher;
        let (k0, k1, m) = (
            0x0706_0504_0302_0100,
            0x0f0e_0d0c_0b0a_0908,
            0x0706_0504_0302_0100,
        );
        // The reference implementation's vector for key 00..0f and message 00..07.
        assert_eq!(
            siphash::<2, 4>(k0, k1, m).to_le_bytes(),
            [0x62, 0x24, 0x93, 0x9a, 0x79, 0xf5, 0xf5, 0x93]
        );
        for (k0, k1, m) in [
            (0, 0, 0),
            (k0, k1, m),
            (u64::MAX, 1, 42),
            (17, u64::MAX, u64::MAX),
        ] {
            let mut h = std::hash::SipHasher::new_with_keys(k0, k1);
            h.write(&m.to_le_bytes());
            assert_eq!(siphash::<2, 4>(k0, k1, m), h.finish(), "{k0} {k1} {m}");
        }
        // The same code with one compression and three finishing rounds is SipHash-1-3: std's
        // `DefaultHasher::new()` (zero keys) computes it today.
        for m in [0, 1, 42, u64::MAX] {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            h.write(&m.to_le_bytes());
            assert_eq!(siphash::<1, 3>(0, 0, m), h.finish(), "{m}");
        }
    }

    #[test]
    fn identity_shows_engine_ids() {
        let c = IdCodec::default();
        assert!(c.is_identity());
        for n in [0, 1, 547, u64::MAX] {
            assert_eq!(c.node(NodeId(n)), n as i64);
            assert_eq!(c.node_id(n as i64), NodeId(n));
            assert_eq!(c.relationship(EdgeId(n)), n as i64);
        }
    }

    #[test]
    fn keyed_ids_are_a_bijection_below_2_pow_53() {
        let c = keyed();
        let sample: Vec<u64> = (0..20_000)
            .chain((0..64).map(|b| 1u64 << b))
            .chain([MASK, MASK - 1, u64::MAX, u64::MAX - 1, i64::MAX as u64])
            .collect();
        let distinct: HashSet<u64> = sample.iter().copied().collect();
        let mut nodes = HashSet::new();
        let mut rels = HashSet::new();
        for &n in &distinct {
            let shown = c.node(NodeId(n));
            assert_eq!(c.node_id(shown), NodeId(n), "{n}");
            let rel = c.relationship(EdgeId(n));
            assert_eq!(c.relationship_id(rel), EdgeId(n), "{n}");
            if n <= MASK {
                // Every id a store hands out: a non-negative integer JavaScript holds exactly.
                assert!((0..1 << 53).contains(&shown), "{n} -> {shown}");
                assert!((0..1 << 53).contains(&rel), "{n} -> {rel}");
            }
            nodes.insert(shown);
            rels.insert(rel);
        }
        assert_eq!(nodes.len(), distinct.len());
        assert_eq!(rels.len(), distinct.len());
        // Any integer reads back as some id and round-trips: nothing a query sends can fail.
        for shown in [i64::MIN, -1, 0, 1, i64::MAX, 1 << 53, (1 << 53) - 1] {
            assert_eq!(c.node(c.node_id(shown)), shown);
            assert_eq!(c.relationship(c.relationship_id(shown)), shown);
        }
    }

    #[test]
    fn keyed_ids_hide_the_counter() {
        let c = keyed();
        let shown: Vec<i64> = (1000..1064).map(|n| c.node(NodeId(n))).collect();
        // Consecutive engine ids are neither consecutive nor ordered when shown.
        assert!(shown.windows(2).all(|w| w[0].abs_diff(w[1]) > 1));
        assert!(!shown.windows(2).all(|w| w[0] < w[1]));
        assert!(shown.iter().zip(1000..).all(|(s, n)| *s != n));
        // Nodes and relationships with one engine id show different integers.
        assert_ne!(c.node(NodeId(7)), c.relationship(EdgeId(7)));
        // Another key, other ids.
        let other = IdCodec::keyed(*b"0123456789abcdeg");
        assert_ne!(c.node(NodeId(7)), other.node(NodeId(7)));
        assert_eq!(format!("{c:?}"), "IdCodec(keyed)");
    }
}
