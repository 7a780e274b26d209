//! Every key layout of the store, in one place. The byte layout is documented in
//! docs/storage-format.md; keep the two in step.
//!
//! Conventions: integers are big-endian so byte order equals numeric order; strings inside
//! composite keys are escaped (0x00 -> 0x00 0xFF) and terminated by 0x00 0x00, which keeps
//! bytewise order equal to string order and lets any field follow; the last string of a key is
//! stored raw. Every key (except `Cf::Meta`) starts with the 8-byte workspace id.

use crate::model::{Direction, EdgeId, NodeId, Value, WorkspaceId};

/// Tags of the keys of `Cf::Meta`.
pub mod meta {
    /// The on-disk format version (u32 BE).
    pub const FORMAT_VERSION: &[u8] = &[0x01];
    /// The next unallocated node/edge id (u64 BE).
    pub const NEXT_ID: &[u8] = &[0x02];
    /// The legacy id ceiling (u64 BE): the id sequence's value when the store first ran with
    /// opaque public ids (`Graph::legacy_id_ceiling`); written once, never changed.
    pub const LEGACY_ID_CEILING: &[u8] = &[0x04];
}

/// Kinds of identity keys in `Cf::Identity`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IdentityKind {
    Email = 1,
    Phone = 2,
    ExternalId = 3,
}

impl IdentityKind {
    pub const ALL: [IdentityKind; 3] = [
        IdentityKind::Email,
        IdentityKind::Phone,
        IdentityKind::ExternalId,
    ];

    /// The Customer property that carries this identity.
    pub fn property(self) -> &'static str {
        match self {
            IdentityKind::Email => "email",
            IdentityKind::Phone => "phone",
            IdentityKind::ExternalId => "externalId",
        }
    }

    fn from_byte(b: u8) -> Option<Self> {
        match b {
            1 => Some(IdentityKind::Email),
            2 => Some(IdentityKind::Phone),
            3 => Some(IdentityKind::ExternalId),
            _ => None,
        }
    }
}

/// Tags of typed values inside property-index keys (their order is the cross-type order).
mod value_tag {
    pub const BOOL: u8 = 0x01;
    pub const NUMBER: u8 = 0x02;
    pub const DATETIME: u8 = 0x03;
    pub const STRING: u8 = 0x04;
    pub const DATE: u8 = 0x05;
    pub const LOCAL_TIME: u8 = 0x06;
    pub const TIME: u8 = 0x07;
    pub const LOCAL_DATETIME: u8 = 0x08;
    /// Durations are not ordered: their entries answer equality only.
    pub const DURATION: u8 = 0x09;
}

/// Adjacency direction bytes.
const DIR_OUT: u8 = 0x00;
const DIR_IN: u8 = 0x01;

/// The exclusive upper bound of all keys starting with `prefix` (None: no bound).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_be_bytes());
}

pub fn read_u64(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.get(..8)?.try_into().ok()?))
}

/// Appends `s` escaped and terminated.
pub fn put_str(out: &mut Vec<u8>, s: &str) {
    for &b in s.as_bytes() {
        out.push(b);
        if b == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0x00, 0x00]);
}

/// Reads an escaped, terminated string; returns it and the rest of the input.
pub fn read_str(bytes: &[u8]) -> Option<(String, &[u8])> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        let b = *bytes.get(i)?;
        if b == 0 {
            match *bytes.get(i + 1)? {
                0x00 => break,
                0xFF => out.push(0),
                _ => return None,
            }
            i += 2;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Some((String::from_utf8(out).ok()?, &bytes[i + 2..]))
}

pub fn workspace_prefix(ws: WorkspaceId) -> Vec<u8> {
    // Most callers append a kind, ids and names: room for them spares the reallocations.
    let mut k = Vec::with_capacity(48);
    k.extend_from_slice(&ws.0.to_be_bytes());
    k
}

// ---- nodes and edges: ws | id ----

pub fn node_key(ws: WorkspaceId, id: NodeId) -> Vec<u8> {
    let mut k = Vec::with_capacity(16);
    put_u64(&mut k, ws.0);
    put_u64(&mut k, id.0);
    k
}

pub fn edge_key(ws: WorkspaceId, id: EdgeId) -> Vec<u8> {
    let mut k = Vec::with_capacity(16);
    put_u64(&mut k, ws.0);
    put_u64(&mut k, id.0);
    k
}

/// Decodes `node_key` / `edge_key`: (workspace, id).
pub fn decode_id_key(key: &[u8]) -> Option<(WorkspaceId, u64)> {
    if key.len() != 16 {
        return None;
    }
    Some((WorkspaceId(read_u64(key)?), read_u64(&key[8..])?))
}

// ---- adjacency: ws | node | dir | type | neighbour | edge ----

/// One decoded adjacency key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdjacencyKey {
    pub ws: WorkspaceId,
    pub node: NodeId,
    pub direction: Direction,
    pub rel_type: String,
    pub neighbour: NodeId,
    pub edge: EdgeId,
}

fn dir_byte(d: Direction) -> u8 {
    match d {
        Direction::Outgoing => DIR_OUT,
        Direction::Incoming => DIR_IN,
    }
}

pub fn adjacency_key(k: &AdjacencyKey) -> Vec<u8> {
    let mut out = adjacency_prefix(k.ws, k.node, Some(k.direction), Some(&k.rel_type));
    put_u64(&mut out, k.neighbour.0);
    put_u64(&mut out, k.edge.0);
    out
}

/// Prefix of a node's adjacency, optionally narrowed to one direction and then one type.
pub fn adjacency_prefix(
    ws: WorkspaceId,
    node: NodeId,
    direction: Option<Direction>,
    rel_type: Option<&str>,
) -> Vec<u8> {
    // ws, node, direction, type and its terminator, then neighbour and edge (adjacency_key).
    let mut k = Vec::with_capacity(16 + 1 + rel_type.map_or(0, str::len) + 2 + 16);
    put_u64(&mut k, ws.0);
    put_u64(&mut k, node.0);
    if let Some(d) = direction {
        k.push(dir_byte(d));
        if let Some(t) = rel_type {
            put_str(&mut k, t);
        }
    }
    k
}

pub fn decode_adjacency_key(key: &[u8]) -> Option<AdjacencyKey> {
    let ws = WorkspaceId(read_u64(key)?);
    let node = NodeId(read_u64(key.get(8..)?)?);
    let direction = match *key.get(16)? {
        DIR_OUT => Direction::Outgoing,
        DIR_IN => Direction::Incoming,
        _ => return None,
    };
    let (rel_type, rest) = read_str(key.get(17..)?)?;
    if rest.len() != 16 {
        return None;
    }
    Some(AdjacencyKey {
        ws,
        node,
        direction,
        rel_type,
        neighbour: NodeId(read_u64(rest)?),
        edge: EdgeId(read_u64(&rest[8..])?),
    })
}

// ---- labels: ws | label (raw) ----

pub fn label_key(ws: WorkspaceId, label: &str) -> Vec<u8> {
    let mut k = workspace_prefix(ws);
    k.extend_from_slice(label.as_bytes());
    k
}

pub fn decode_label_key(key: &[u8]) -> Option<(WorkspaceId, String)> {
    let ws = WorkspaceId(read_u64(key)?);
    Some((ws, String::from_utf8(key.get(8..)?.to_vec()).ok()?))
}

// ---- property index: ws | label | property | value | node ----

/// The order-preserving encoding of an indexable value; None for values no index holds
/// (null, lists, maps, NaN).
pub fn index_value(v: &Value) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(9);
    match v {
        Value::Bool(b) => {
            out.push(value_tag::BOOL);
            out.push(u8::from(*b));
        }
        Value::Int(_) | Value::Float(_) => {
            let f = v.as_f64()?;
            if f.is_nan() {
                return None;
            }
            // -0.0 and 0.0 are equal in comparisons, so they share one key.
            let f = if f == 0.0 { 0.0 } else { f };
            out.push(value_tag::NUMBER);
            out.extend_from_slice(&sortable_f64(f).to_be_bytes());
        }
        Value::DateTime(us) => {
            out.push(value_tag::DATETIME);
            out.extend_from_slice(&sortable_i64(*us).to_be_bytes());
        }
        // Every datetime shares the `DateTime` key (its instant in whole microseconds, as
        // stored indexes already hold them), so one range covers both kinds. Keys are thus
        // coarser than values (`index_key_is_coarse`): readers re-check entries at a bound.
        Value::ZonedDateTime(z) => {
            let micros = clamp_i64(z.instant_nanos().div_euclid(1000));
            out.push(value_tag::DATETIME);
            out.extend_from_slice(&sortable_i64(micros).to_be_bytes());
        }
        Value::String(s) => {
            out.push(value_tag::STRING);
            put_str(&mut out, s);
        }
        Value::Date(d) => {
            out.push(value_tag::DATE);
            out.extend_from_slice(&sortable_i64(*d).to_be_bytes());
        }
        Value::LocalTime(n) => {
            out.push(value_tag::LOCAL_TIME);
            out.extend_from_slice(&sortable_i64(*n).to_be_bytes());
        }
        // Times order by their UTC time of day; the offset is not in the key.
        Value::Time(n, off) => {
            let utc = i128::from(*n) - i128::from(*off) * 1_000_000_000;
            out.push(value_tag::TIME);
            out.extend_from_slice(&sortable_i64(clamp_i64(utc)).to_be_bytes());
        }
        Value::LocalDateTime(secs, nanos) => {
            out.push(value_tag::LOCAL_DATETIME);
            out.extend_from_slice(&sortable_i64(*secs).to_be_bytes());
            out.extend_from_slice(&nanos.to_be_bytes());
        }
        Value::Duration(d) => {
            out.push(value_tag::DURATION);
            for part in [d.months, d.days, d.seconds, d.nanos] {
                out.extend_from_slice(&sortable_i64(part).to_be_bytes());
            }
        }
        Value::Null | Value::List(_) | Value::Map(_) => return None,
    }
    Some(out)
}

/// Whether values of index tag `tag` can share a key without being equal (datetimes at one
/// microsecond, or in different zones; times with different offsets): index readers re-check
/// the entries whose key is a bound's.
pub fn index_key_is_coarse(tag: u8) -> bool {
    tag == value_tag::DATETIME || tag == value_tag::TIME
}

/// Whether `tag` is the tag of a type that has no order (durations).
pub fn index_tag_is_unordered(tag: u8) -> bool {
    tag == value_tag::DURATION
}

fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// The tag byte shared by every index value of `v`'s type, for scanning one type's range.
pub fn index_value_tag(v: &Value) -> Option<u8> {
    index_value(v).map(|k| k[0])
}

fn sortable_f64(f: f64) -> u64 {
    let bits = f.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits ^ (1 << 63)
    }
}

fn sortable_i64(i: i64) -> u64 {
    (i as u64) ^ (1 << 63)
}

pub fn prop_index_prefix(ws: WorkspaceId, label: &str, property: &str) -> Vec<u8> {
    let mut k = workspace_prefix(ws);
    put_str(&mut k, label);
    put_str(&mut k, property);
    k
}

pub fn prop_index_key(
    ws: WorkspaceId,
    label: &str,
    property: &str,
    value: &[u8],
    node: NodeId,
) -> Vec<u8> {
    let mut k = prop_index_prefix(ws, label, property);
    k.extend_from_slice(value);
    put_u64(&mut k, node.0);
    k
}

/// The node id at the end of a property-index key.
pub fn prop_index_node(key: &[u8]) -> Option<NodeId> {
    let tail = key.len().checked_sub(8)?;
    Some(NodeId(read_u64(&key[tail..])?))
}

/// Decodes a property-index key into (workspace, label, property, value bytes, node).
pub fn decode_prop_index_key(key: &[u8]) -> Option<(WorkspaceId, String, String, Vec<u8>, NodeId)> {
    let ws = WorkspaceId(read_u64(key)?);
    let (label, rest) = read_str(key.get(8..)?)?;
    let (property, rest) = read_str(rest)?;
    let tail = rest.len().checked_sub(8)?;
    Some((
        ws,
        label,
        property,
        rest[..tail].to_vec(),
        NodeId(read_u64(&rest[tail..])?),
    ))
}

// ---- counts: ws | kind | ... ----

/// Kinds of counters in `Cf::Counts`.
mod count_kind {
    pub const DEGREE: u8 = 0x01;
    pub const INDEX_VALUES: u8 = 0x02;
    pub const TYPE_EDGES: u8 = 0x03;
    pub const ENDPOINT_LABEL: u8 = 0x04;
}

/// The workspace of an index entry counter key (`index_count_key`); None for other keys.
pub(crate) fn index_count_workspace(key: &[u8]) -> Option<WorkspaceId> {
    if *key.get(8)? != count_kind::INDEX_VALUES {
        return None;
    }
    read_u64(key).map(WorkspaceId)
}

/// The number of relationships of a type in the workspace.
pub fn type_count_key(ws: WorkspaceId, rel_type: &str) -> Vec<u8> {
    let mut k = workspace_prefix(ws);
    k.push(count_kind::TYPE_EDGES);
    put_str(&mut k, rel_type);
    k
}

/// The number of relationships of a type whose start (`Outgoing`) or end (`Incoming`) node
/// carries `label`. When it equals `type_count_key`'s total, every such relationship has a
/// node with that label at that end, and a degree counts them exactly.
pub fn endpoint_label_key(
    ws: WorkspaceId,
    rel_type: &str,
    side: Direction,
    label: &str,
) -> Vec<u8> {
    let mut k = workspace_prefix(ws);
    k.push(count_kind::ENDPOINT_LABEL);
    put_str(&mut k, rel_type);
    k.push(dir_byte(side));
    put_str(&mut k, label);
    k
}

/// The degree counter of (node, direction, type): the number of its adjacency entries.
pub fn degree_key(ws: WorkspaceId, node: NodeId, direction: Direction, rel_type: &str) -> Vec<u8> {
    let mut k = degree_prefix(ws, node, direction);
    put_str(&mut k, rel_type);
    k
}

/// Prefix of the degree counters of a node in one direction (every type).
pub fn degree_prefix(ws: WorkspaceId, node: NodeId, direction: Direction) -> Vec<u8> {
    let mut k = workspace_prefix(ws);
    k.push(count_kind::DEGREE);
    put_u64(&mut k, node.0);
    k.push(dir_byte(direction));
    k
}

/// The degree key that counts adjacency key `adjacency` (its prefix up to the type).
pub fn degree_key_of_adjacency(a: &AdjacencyKey) -> Vec<u8> {
    degree_key(a.ws, a.node, a.direction, &a.rel_type)
}

/// Decodes a degree key: (workspace, node, direction, type).
pub fn decode_degree_key(key: &[u8]) -> Option<(WorkspaceId, NodeId, Direction, String)> {
    let ws = WorkspaceId(read_u64(key)?);
    if *key.get(8)? != count_kind::DEGREE {
        return None;
    }
    let node = NodeId(read_u64(key.get(9..)?)?);
    let direction = match *key.get(17)? {
        DIR_OUT => Direction::Outgoing,
        DIR_IN => Direction::Incoming,
        _ => return None,
    };
    let (rel_type, rest) = read_str(key.get(18..)?)?;
    rest.is_empty().then_some((ws, node, direction, rel_type))
}

/// The counter of the entries of index (label, property) whose value has type tag `tag` (the
/// first byte of `index_value`).
pub fn index_count_key(ws: WorkspaceId, label: &str, property: &str, tag: u8) -> Vec<u8> {
    let mut k = workspace_prefix(ws);
    k.push(count_kind::INDEX_VALUES);
    put_str(&mut k, label);
    put_str(&mut k, property);
    k.push(tag);
    k
}

/// The counter key that counts property-index key `key`.
pub fn index_count_key_of_entry(key: &[u8]) -> Option<Vec<u8>> {
    let (ws, label, property, value, _) = decode_prop_index_key(key)?;
    Some(index_count_key(ws, &label, &property, *value.first()?))
}

/// Value-type tags of index values, in index order (see `index_value`).
pub const INDEX_VALUE_TAGS: [u8; 9] = [
    value_tag::BOOL,
    value_tag::NUMBER,
    value_tag::DATETIME,
    value_tag::STRING,
    value_tag::DATE,
    value_tag::LOCAL_TIME,
    value_tag::TIME,
    value_tag::LOCAL_DATETIME,
    value_tag::DURATION,
];

/// Encodes a counter value or delta.
pub fn count_bytes(n: i64) -> [u8; 8] {
    n.to_be_bytes()
}

/// Decodes a counter value or delta.
pub fn read_count(b: &[u8]) -> Option<i64> {
    Some(i64::from_be_bytes(b.try_into().ok()?))
}

// ---- identity: ws | kind | normalised value (raw) ----

pub fn identity_key(ws: WorkspaceId, kind: IdentityKind, normalised: &str) -> Vec<u8> {
    let mut k = workspace_prefix(ws);
    k.push(kind as u8);
    k.extend_from_slice(normalised.as_bytes());
    k
}

pub fn decode_identity_key(key: &[u8]) -> Option<(WorkspaceId, IdentityKind, String)> {
    let ws = WorkspaceId(read_u64(key)?);
    let kind = IdentityKind::from_byte(*key.get(8)?)?;
    Some((ws, kind, String::from_utf8(key.get(9..)?.to_vec()).ok()?))
}

// ---- records: ws | kind | id (raw) ----

pub fn record_prefix(ws: WorkspaceId, kind: &str) -> Vec<u8> {
    let mut k = workspace_prefix(ws);
    put_str(&mut k, kind);
    k
}

pub fn record_key(ws: WorkspaceId, kind: &str, id: &str) -> Vec<u8> {
    let mut k = record_prefix(ws, kind);
    k.extend_from_slice(id.as_bytes());
    k
}

/// The kind of a record key (`record_key`).
pub fn decode_record_kind(key: &[u8]) -> Option<String> {
    read_str(key.get(8..)?).map(|(kind, _)| kind)
}

// ---- record index: ws | kind | index | value | id (raw) ----

pub fn record_index_prefix(ws: WorkspaceId, kind: &str, index: &str, value: &str) -> Vec<u8> {
    let mut k = record_prefix(ws, kind);
    put_str(&mut k, index);
    put_str(&mut k, value);
    k
}

pub fn record_index_key(
    ws: WorkspaceId,
    kind: &str,
    index: &str,
    value: &str,
    id: &str,
) -> Vec<u8> {
    let mut k = record_index_prefix(ws, kind, index, value);
    k.extend_from_slice(id.as_bytes());
    k
}

/// The record id at the end of a record-index key with the given prefix.
pub fn record_index_id(key: &[u8], prefix_len: usize) -> Option<String> {
    String::from_utf8(key.get(prefix_len..)?.to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_and_keep_order() {
        let samples = [
            "",
            "a",
            "a\0",
            "a\0b",
            "ab",
            "b",
            "é",
            "\u{10FFFF}",
            "a\0\0",
        ];
        for s in samples {
            let mut k = Vec::new();
            put_str(&mut k, s);
            k.push(0xFF); // whatever follows must not confuse the decoder
            let (back, rest) = read_str(&k).expect("decodes");
            assert_eq!(back, s);
            assert_eq!(rest, &[0xFF]);
        }
        let mut sorted = samples.to_vec();
        sorted.sort();
        let mut encoded: Vec<Vec<u8>> = samples
            .iter()
            .map(|s| {
                let mut k = Vec::new();
                put_str(&mut k, s);
                k
            })
            .collect();
        encoded.sort();
        let decoded: Vec<String> = encoded
            .iter()
            .map(|k| read_str(k).expect("decodes").0)
            .collect();
        assert_eq!(decoded, sorted);
    }

    #[test]
    fn temporal_index_values_sort_like_the_values() {
        use crate::model::ZonedDateTime;
        use crate::read::compare_values;
        let zoned = |seconds: i64, nanos: u32, offset: i32| {
            Value::ZonedDateTime(Box::new(ZonedDateTime {
                seconds,
                nanos,
                offset,
                zone: None,
            }))
        };
        let groups: [Vec<Value>; 5] = [
            [-800_000, -1, 0, 20_000].map(Value::Date).to_vec(),
            [0, 1, 86_399_999_999_999].map(Value::LocalTime).to_vec(),
            vec![
                Value::Time(0, 3600),
                Value::Time(0, 0),
                Value::Time(1, 0),
                Value::Time(3_600_000_000_000, -7200),
            ],
            vec![
                Value::LocalDateTime(-5, 999_999_999),
                Value::LocalDateTime(0, 0),
                Value::LocalDateTime(0, 1),
            ],
            vec![
                zoned(-1, 0, 0),
                Value::DateTime(-1),
                Value::DateTime(0),
                zoned(0, 1000, 3600),
                Value::DateTime(2),
                zoned(i64::MAX, 0, 0),
            ],
        ];
        for values in &groups {
            for w in values.windows(2) {
                assert_eq!(
                    compare_values(&w[0], &w[1]),
                    Some(std::cmp::Ordering::Less),
                    "{w:?}"
                );
                let (a, b) = (index_value(&w[0]), index_value(&w[1]));
                assert!(a.is_some() && a < b, "{w:?}");
                assert_eq!(a.as_ref().map(|k| k[0]), b.as_ref().map(|k| k[0]));
            }
        }
        // Coarse keys: an instant between two microseconds shares the lower one's key.
        assert_eq!(
            index_value(&zoned(0, 1500, 0)),
            index_value(&Value::DateTime(1))
        );
        let d = crate::model::DurationValue {
            months: 1,
            ..Default::default()
        };
        let k = index_value(&Value::Duration(Box::new(d))).expect("indexable for equality");
        assert!(index_tag_is_unordered(k[0]));
        assert_eq!(
            compare_values(&Value::Duration(Box::new(d)), &Value::Duration(Box::new(d))),
            None
        );
    }

    #[test]
    fn index_values_sort_like_the_values() {
        let numbers = [
            Value::Float(f64::NEG_INFINITY),
            Value::Int(i64::MIN),
            Value::Float(-1.5),
            Value::Int(-1),
            Value::Float(-0.25),
            Value::Int(0),
            Value::Float(0.5),
            Value::Int(1),
            Value::Float(1.5),
            Value::Int(1_000_000),
            Value::Float(f64::INFINITY),
        ];
        let keys: Vec<Vec<u8>> = numbers
            .iter()
            .map(|v| index_value(v).expect("indexable"))
            .collect();
        for w in keys.windows(2) {
            assert!(w[0] < w[1], "{:?} !< {:?}", w[0], w[1]);
        }
        let times = [i64::MIN, -5, 0, 7, i64::MAX].map(Value::DateTime);
        let keys: Vec<Vec<u8>> = times
            .iter()
            .map(|v| index_value(v).expect("indexable"))
            .collect();
        for w in keys.windows(2) {
            assert!(w[0] < w[1]);
        }
        assert_eq!(index_value(&Value::Int(3)), index_value(&Value::Float(3.0)));
        assert_eq!(
            index_value(&Value::Float(-0.0)),
            index_value(&Value::Float(0.0))
        );
        assert_eq!(index_value(&Value::Null), None);
        assert_eq!(index_value(&Value::Float(f64::NAN)), None);
    }

    #[test]
    fn adjacency_keys_round_trip_and_group_by_node_direction_type() {
        let k = AdjacencyKey {
            ws: WorkspaceId(7),
            node: NodeId(42),
            direction: Direction::Incoming,
            rel_type: "HAS_TOUCHPOINT".into(),
            neighbour: NodeId(9),
            edge: EdgeId(u64::MAX - 1),
        };
        let bytes = adjacency_key(&k);
        assert_eq!(decode_adjacency_key(&bytes), Some(k.clone()));
        assert!(bytes.starts_with(&adjacency_prefix(
            k.ws,
            k.node,
            Some(k.direction),
            Some("HAS_TOUCHPOINT")
        )));
        assert!(!bytes.starts_with(&adjacency_prefix(
            k.ws,
            k.node,
            Some(k.direction),
            Some("HAS")
        )));
        assert!(!bytes.starts_with(&adjacency_prefix(
            k.ws,
            k.node,
            Some(Direction::Outgoing),
            None
        )));
    }

    #[test]
    fn ids_are_ordered_within_a_workspace_and_workspaces_never_interleave() {
        let a = node_key(WorkspaceId(1), NodeId(255));
        let b = node_key(WorkspaceId(1), NodeId(256));
        let c = node_key(WorkspaceId(2), NodeId(0));
        assert!(a < b && b < c);
        assert_eq!(decode_id_key(&b), Some((WorkspaceId(1), 256)));
        let end = prefix_end(&workspace_prefix(WorkspaceId(1))).expect("bounded");
        assert!(b < end && c >= end);
    }

    #[test]
    fn prop_index_and_identity_and_record_keys_round_trip() {
        let v = index_value(&Value::String("a\0b".into())).expect("indexable");
        let key = prop_index_key(WorkspaceId(3), "Customer", "name", &v, NodeId(11));
        assert_eq!(
            decode_prop_index_key(&key),
            Some((
                WorkspaceId(3),
                "Customer".into(),
                "name".into(),
                v,
                NodeId(11)
            ))
        );
        assert_eq!(prop_index_node(&key), Some(NodeId(11)));
        let id = identity_key(WorkspaceId(3), IdentityKind::Phone, "+15550001234");
        assert_eq!(
            decode_identity_key(&id),
            Some((WorkspaceId(3), IdentityKind::Phone, "+15550001234".into()))
        );
        let (ws, label) = decode_label_key(&label_key(WorkspaceId(5), "Stage")).expect("decodes");
        assert_eq!((ws, label.as_str()), (WorkspaceId(5), "Stage"));
        let p = record_index_prefix(WorkspaceId(0), "user", "email", "a@b.c");
        let rk = record_index_key(WorkspaceId(0), "user", "email", "a@b.c", "usr_1");
        assert_eq!(record_index_id(&rk, p.len()).as_deref(), Some("usr_1"));
        assert_eq!(
            decode_record_kind(&record_key(WorkspaceId(9), "user", "usr_1")).as_deref(),
            Some("user")
        );
        assert_eq!(
            decode_record_kind(&record_key(WorkspaceId(9), "a\0b", "\0")).as_deref(),
            Some("a\0b")
        );
        assert!(record_key(WorkspaceId(0), "user", "usr_1")
            .starts_with(&record_prefix(WorkspaceId(0), "user")));
    }

    #[test]
    fn prefix_end_handles_carries() {
        assert_eq!(prefix_end(&[1, 2]), Some(vec![1, 3]));
        assert_eq!(prefix_end(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xFF, 0xFF]), None);
    }
}
