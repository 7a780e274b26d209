//! Opaque, type-prefixed ids (`usr_`, `key_`, `req_`, ...) and the base62 alphabet they use.

use rand::Rng;

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

/// Wire id of a Customer node: `cus_<engine node id>`.
pub fn customer_id(id: svc_engine::NodeId) -> String {
    format!("cus_{}", id.0)
}

/// Wire id of a Touchpoint node: `tp_<engine node id>`.
pub fn touchpoint_id(id: svc_engine::NodeId) -> String {
    format!("tp_{}", id.0)
}

/// Wire id of any node: `cus_<n>` for customers, `tp_<n>` for touchpoints, `node_<n>` for
/// every other label (campaigns are also keyed by their `campaignId` property).
pub fn node_id(labels: &[String], id: svc_engine::NodeId) -> String {
    if labels.iter().any(|l| l == svc_engine::schema::CUSTOMER) {
        customer_id(id)
    } else if labels.iter().any(|l| l == svc_engine::schema::TOUCHPOINT) {
        touchpoint_id(id)
    } else {
        format!("node_{}", id.0)
    }
}

/// Wire id of an edge: `rel_<n>`.
pub fn edge_id(id: svc_engine::EdgeId) -> String {
    format!("rel_{}", id.0)
}

/// The engine node id named by `cus_<n>`; `None` for anything else.
pub fn parse_customer_id(s: &str) -> Option<svc_engine::NodeId> {
    parse_node_id(s, "cus_")
}

/// The engine node id named by `tp_<n>`; `None` for anything else.
pub fn parse_touchpoint_id(s: &str) -> Option<svc_engine::NodeId> {
    parse_node_id(s, "tp_")
}

/// The engine node id named by any node wire id (`cus_<n>`, `tp_<n>`, `node_<n>`); whether
/// the prefix fits the node's labels is the caller's to check (compare with [`node_id`]).
pub fn parse_any_node_id(s: &str) -> Option<svc_engine::NodeId> {
    ["cus_", "tp_", "node_"]
        .iter()
        .find_map(|p| parse_node_id(s, p))
}

fn parse_node_id(s: &str, prefix: &str) -> Option<svc_engine::NodeId> {
    let digits = s.strip_prefix(prefix)?;
    // Canonical decimal only (no sign, no leading zeros), so one node has one wire id.
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if digits.len() > 1 && digits.starts_with('0') {
        return None;
    }
    digits.parse().ok().map(svc_engine::NodeId)
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

    #[test]
    fn node_ids_round_trip_and_refuse_other_forms() {
        let id = svc_engine::NodeId(42);
        assert_eq!(customer_id(id), "cus_42");
        assert_eq!(parse_customer_id("cus_42"), Some(id));
        assert_eq!(parse_touchpoint_id(&touchpoint_id(id)), Some(id));
        for bad in [
            "cus_",
            "cus_042",
            "cus_-1",
            "cus_4a",
            "tp_42",
            "42",
            "cus_99999999999999999999",
        ] {
            assert_eq!(parse_customer_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn hex_renders_lowercase() {
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
    }
}
