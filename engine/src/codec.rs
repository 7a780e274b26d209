//! Encoding of node and edge records and of property values (docs/storage-format.md).
//!
//! Records start with a version byte so a later format can be read next to this one.

use std::collections::BTreeMap;

use crate::error::EngineError;
use crate::model::{DurationValue, NodeId, Properties, Value, ZonedDateTime};

const RECORD_V1: u8 = 1;

mod tag {
    pub const NULL: u8 = 0;
    pub const FALSE: u8 = 1;
    pub const TRUE: u8 = 2;
    pub const INT: u8 = 3;
    pub const FLOAT: u8 = 4;
    pub const STRING: u8 = 5;
    pub const DATETIME: u8 = 6;
    pub const LIST: u8 = 7;
    pub const MAP: u8 = 8;
    // Temporal types, added after the first release: older records never hold these tags,
    // so they decode as before.
    pub const DATE: u8 = 9;
    pub const LOCAL_TIME: u8 = 10;
    pub const TIME: u8 = 11;
    pub const LOCAL_DATETIME: u8 = 12;
    pub const ZONED_DATETIME: u8 = 13;
    pub const DURATION: u8 = 14;
}

/// Longest zone name accepted in a record (IANA names are far shorter).
const MAX_ZONE_NAME: usize = 64;

/// Deepest nesting of lists and maps accepted, so hostile input cannot overflow the stack.
pub const MAX_VALUE_DEPTH: usize = 32;

/// A stored node: what the `Nodes` family holds under (workspace, id).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeRecord {
    pub labels: Vec<String>,
    pub properties: Properties,
}

/// A stored edge: what the `Edges` family holds under (workspace, id).
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeRecord {
    pub rel_type: String,
    pub start: NodeId,
    pub end: NodeId,
    pub properties: Properties,
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.push(tag::NULL),
        Value::Bool(false) => out.push(tag::FALSE),
        Value::Bool(true) => out.push(tag::TRUE),
        Value::Int(i) => {
            out.push(tag::INT);
            out.extend_from_slice(&i.to_be_bytes());
        }
        Value::Float(f) => {
            out.push(tag::FLOAT);
            out.extend_from_slice(&f.to_bits().to_be_bytes());
        }
        Value::String(s) => {
            out.push(tag::STRING);
            put_bytes(out, s.as_bytes());
        }
        Value::DateTime(us) => {
            out.push(tag::DATETIME);
            out.extend_from_slice(&us.to_be_bytes());
        }
        Value::List(items) => {
            out.push(tag::LIST);
            put_varint(out, items.len() as u64);
            for item in items {
                put_value(out, item);
            }
        }
        Value::Map(map) => {
            out.push(tag::MAP);
            put_map(out, map);
        }
        Value::Date(d) => {
            out.push(tag::DATE);
            out.extend_from_slice(&d.to_be_bytes());
        }
        Value::LocalTime(n) => {
            out.push(tag::LOCAL_TIME);
            out.extend_from_slice(&n.to_be_bytes());
        }
        Value::Time(n, off) => {
            out.push(tag::TIME);
            out.extend_from_slice(&n.to_be_bytes());
            out.extend_from_slice(&off.to_be_bytes());
        }
        Value::LocalDateTime(s, n) => {
            out.push(tag::LOCAL_DATETIME);
            out.extend_from_slice(&s.to_be_bytes());
            out.extend_from_slice(&n.to_be_bytes());
        }
        Value::ZonedDateTime(z) => {
            out.push(tag::ZONED_DATETIME);
            out.extend_from_slice(&z.seconds.to_be_bytes());
            out.extend_from_slice(&z.nanos.to_be_bytes());
            out.extend_from_slice(&z.offset.to_be_bytes());
            // The zone name; empty for a fixed offset (no IANA name is empty).
            put_bytes(out, z.zone.as_deref().unwrap_or("").as_bytes());
        }
        Value::Duration(d) => {
            out.push(tag::DURATION);
            for part in [d.months, d.days, d.seconds, d.nanos] {
                out.extend_from_slice(&part.to_be_bytes());
            }
        }
    }
}

fn put_map(out: &mut Vec<u8>, map: &BTreeMap<String, Value>) {
    put_varint(out, map.len() as u64);
    for (k, v) in map {
        put_bytes(out, k.as_bytes());
        put_value(out, v);
    }
}

/// A cursor over encoded bytes; every read fails cleanly on truncated or malformed input.
struct Reader<'a> {
    bytes: &'a [u8],
    context: &'static str,
}

impl<'a> Reader<'a> {
    fn corrupt(&self, detail: &str) -> EngineError {
        EngineError::Corrupt {
            context: self.context,
            detail: detail.to_owned(),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], EngineError> {
        if self.bytes.len() < n {
            return Err(self.corrupt("truncated"));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, EngineError> {
        Ok(self.take(1)?[0])
    }

    fn u64(&mut self) -> Result<u64, EngineError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }

    fn u32(&mut self) -> Result<u32, EngineError> {
        let b = self.take(4)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        Ok(u32::from_be_bytes(a))
    }

    fn i64(&mut self) -> Result<i64, EngineError> {
        Ok(self.u64()? as i64)
    }

    fn zoned(&mut self) -> Result<ZonedDateTime, EngineError> {
        let seconds = self.i64()?;
        let nanos = self.u32()?;
        let offset = self.u32()? as i32;
        let zone = self.string()?;
        if nanos >= 1_000_000_000 || zone.len() > MAX_ZONE_NAME {
            return Err(self.corrupt("invalid datetime"));
        }
        Ok(ZonedDateTime {
            seconds,
            nanos,
            offset,
            zone: (!zone.is_empty()).then_some(zone),
        })
    }

    fn varint(&mut self) -> Result<u64, EngineError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.corrupt("varint too long"))
    }

    fn len(&mut self) -> Result<usize, EngineError> {
        let n = self.varint()?;
        // A length can never exceed the bytes left; this also bounds allocations.
        usize::try_from(n)
            .ok()
            .filter(|n| *n <= self.bytes.len())
            .ok_or_else(|| self.corrupt("length past end"))
    }

    fn string(&mut self) -> Result<String, EngineError> {
        let n = self.len()?;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| self.corrupt("invalid utf-8"))
    }

    fn value(&mut self, depth: usize) -> Result<Value, EngineError> {
        if depth > MAX_VALUE_DEPTH {
            return Err(self.corrupt("value nested too deeply"));
        }
        Ok(match self.byte()? {
            tag::NULL => Value::Null,
            tag::FALSE => Value::Bool(false),
            tag::TRUE => Value::Bool(true),
            tag::INT => Value::Int(self.u64()? as i64),
            tag::FLOAT => Value::Float(f64::from_bits(self.u64()?)),
            tag::STRING => Value::String(self.string()?),
            tag::DATETIME => Value::DateTime(self.u64()? as i64),
            tag::LIST => {
                let n = self.len()?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(depth + 1)?);
                }
                Value::List(items)
            }
            tag::MAP => Value::Map(self.map(depth + 1)?),
            tag::DATE => Value::Date(self.i64()?),
            tag::LOCAL_TIME => Value::LocalTime(self.i64()?),
            tag::TIME => Value::Time(self.i64()?, self.u32()? as i32),
            tag::LOCAL_DATETIME => {
                let (s, n) = (self.i64()?, self.u32()?);
                if n >= 1_000_000_000 {
                    return Err(self.corrupt("invalid localdatetime"));
                }
                Value::LocalDateTime(s, n)
            }
            tag::ZONED_DATETIME => Value::ZonedDateTime(Box::new(self.zoned()?)),
            tag::DURATION => Value::Duration(Box::new(DurationValue {
                months: self.i64()?,
                days: self.i64()?,
                seconds: self.i64()?,
                nanos: self.i64()?,
            })),
            _ => return Err(self.corrupt("unknown value tag")),
        })
    }

    /// Moves past one value without building it.
    fn skip_value(&mut self, depth: usize) -> Result<(), EngineError> {
        if depth > MAX_VALUE_DEPTH {
            return Err(self.corrupt("value nested too deeply"));
        }
        match self.byte()? {
            tag::NULL | tag::FALSE | tag::TRUE => {}
            tag::INT | tag::FLOAT | tag::DATETIME | tag::DATE | tag::LOCAL_TIME => {
                self.take(8)?;
            }
            tag::TIME | tag::LOCAL_DATETIME => {
                self.take(12)?;
            }
            tag::ZONED_DATETIME => {
                self.zoned()?;
            }
            tag::DURATION => {
                self.take(32)?;
            }
            tag::STRING => {
                let n = self.len()?;
                self.take(n)?;
            }
            tag::LIST => {
                let n = self.len()?;
                for _ in 0..n {
                    self.skip_value(depth + 1)?;
                }
            }
            tag::MAP => {
                let n = self.len()?;
                for _ in 0..n {
                    let k = self.len()?;
                    self.take(k)?;
                    self.skip_value(depth + 1)?;
                }
            }
            _ => return Err(self.corrupt("unknown value tag")),
        }
        Ok(())
    }

    fn map(&mut self, depth: usize) -> Result<BTreeMap<String, Value>, EngineError> {
        let n = self.len()?;
        let mut map = BTreeMap::new();
        for _ in 0..n {
            let k = self.string()?;
            let v = self.value(depth)?;
            map.insert(k, v);
        }
        Ok(map)
    }

    fn version(&mut self) -> Result<(), EngineError> {
        match self.byte()? {
            RECORD_V1 => Ok(()),
            _ => Err(self.corrupt("unknown record version")),
        }
    }

    fn finish(&self) -> Result<(), EngineError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(self.corrupt("trailing bytes"))
        }
    }
}

pub fn encode_node(n: &NodeRecord) -> Vec<u8> {
    let mut out = vec![RECORD_V1];
    put_varint(&mut out, n.labels.len() as u64);
    for l in &n.labels {
        put_bytes(&mut out, l.as_bytes());
    }
    put_map(&mut out, &n.properties);
    out
}

pub fn decode_node(bytes: &[u8]) -> Result<NodeRecord, EngineError> {
    let mut r = Reader {
        bytes,
        context: "node record",
    };
    r.version()?;
    let n = r.len()?;
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        labels.push(r.string()?);
    }
    let properties = r.map(0)?;
    r.finish()?;
    Ok(NodeRecord { labels, properties })
}

/// Reads only the properties `keys` (ascending, no duplicates) of an encoded node into `out`
/// (None: absent), skipping the labels and every other value without decoding it. For scans
/// that filter on one or two properties of many nodes.
pub fn node_values(
    bytes: &[u8],
    keys: &[&str],
    out: &mut [Option<Value>],
) -> Result<(), EngineError> {
    out.iter_mut().for_each(|v| *v = None);
    let mut r = Reader {
        bytes,
        context: "node record",
    };
    r.version()?;
    let labels = r.len()?;
    for _ in 0..labels {
        let n = r.len()?;
        r.take(n)?;
    }
    let n = r.len()?;
    let mut want = 0;
    for _ in 0..n {
        if want == keys.len() {
            return Ok(());
        }
        let klen = r.len()?;
        let key = r.take(klen)?;
        // Record keys ascend, so a wanted key smaller than this one is absent.
        while want < keys.len() && keys[want].as_bytes() < key {
            want += 1;
        }
        if want < keys.len() && keys[want].as_bytes() == key {
            out[want] = Some(r.value(0)?);
            want += 1;
        } else {
            r.skip_value(0)?;
        }
    }
    Ok(())
}

pub fn encode_edge(e: &EdgeRecord) -> Vec<u8> {
    let mut out = vec![RECORD_V1];
    put_bytes(&mut out, e.rel_type.as_bytes());
    out.extend_from_slice(&e.start.0.to_be_bytes());
    out.extend_from_slice(&e.end.0.to_be_bytes());
    put_map(&mut out, &e.properties);
    out
}

pub fn decode_edge(bytes: &[u8]) -> Result<EdgeRecord, EngineError> {
    let mut r = Reader {
        bytes,
        context: "edge record",
    };
    r.version()?;
    let rel_type = r.string()?;
    let start = NodeId(r.u64()?);
    let end = NodeId(r.u64()?);
    let properties = r.map(0)?;
    r.finish()?;
    Ok(EdgeRecord {
        rel_type,
        start,
        end,
        properties,
    })
}

/// Checks that a value can be stored: bounded nesting, no NaN-free requirement (NaN is a value).
pub fn check_storable(v: &Value) -> Result<(), EngineError> {
    fn depth(v: &Value, d: usize) -> Result<(), EngineError> {
        if d > MAX_VALUE_DEPTH {
            return Err(EngineError::invalid(
                "property value",
                format!("nested deeper than {MAX_VALUE_DEPTH} levels"),
            ));
        }
        match v {
            Value::List(items) => items.iter().try_for_each(|i| depth(i, d + 1)),
            Value::Map(m) => m.values().try_for_each(|i| depth(i, d + 1)),
            // What the decoder refuses must not be written.
            Value::LocalDateTime(_, n) if *n >= 1_000_000_000 => Err(EngineError::invalid(
                "property value",
                "nanoseconds past one second",
            )),
            Value::ZonedDateTime(z)
                if z.nanos >= 1_000_000_000
                    || z.zone
                        .as_ref()
                        .is_some_and(|n| n.is_empty() || n.len() > MAX_ZONE_NAME) =>
            {
                Err(EngineError::invalid(
                    "property value",
                    "invalid datetime (nanoseconds or zone name)",
                ))
            }
            _ => Ok(()),
        }
    }
    depth(v, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_properties() -> Properties {
        let mut inner = BTreeMap::new();
        inner.insert("utm".to_owned(), Value::String("spring".into()));
        inner.insert(
            "n".to_owned(),
            Value::List(vec![Value::Int(1), Value::Null, Value::Bool(true)]),
        );
        let mut p = Properties::new();
        p.insert("email".into(), Value::String("ada@example.com".into()));
        p.insert("score".into(), Value::Float(0.75));
        p.insert("count".into(), Value::Int(-3));
        p.insert("lastSeen".into(), Value::DateTime(1_735_689_600_000_000));
        p.insert("props".into(), Value::Map(inner));
        p.insert("none".into(), Value::Null);
        p.insert("flag".into(), Value::Bool(false));
        p
    }

    #[test]
    fn node_values_reads_only_the_wanted_properties() {
        let n = NodeRecord {
            labels: vec!["Customer".into(), "Vip".into()],
            properties: sample_properties(),
        };
        let bytes = encode_node(&n);
        for keys in [
            vec![
                "a", "count", "email", "flag", "lastSeen", "props", "score", "zz",
            ],
            vec!["props"],
            vec!["email", "score"],
            vec!["nope"],
            vec![],
        ] {
            let mut out = vec![Some(Value::Int(9)); keys.len()];
            node_values(&bytes, &keys, &mut out).expect("reads");
            let want: Vec<Option<Value>> =
                keys.iter().map(|k| n.properties.get(*k).cloned()).collect();
            assert_eq!(out, want, "{keys:?}");
        }
        assert!(node_values(&bytes[..bytes.len() - 3], &["zz"], &mut [None]).is_err());
    }

    #[test]
    fn nodes_round_trip() {
        let n = NodeRecord {
            labels: vec!["Customer".into(), "Vip".into()],
            properties: sample_properties(),
        };
        assert_eq!(decode_node(&encode_node(&n)).expect("decodes"), n);
    }

    #[test]
    fn edges_round_trip() {
        let e = EdgeRecord {
            rel_type: "HAS_TOUCHPOINT".into(),
            start: NodeId(1),
            end: NodeId(u64::MAX),
            properties: sample_properties(),
        };
        assert_eq!(decode_edge(&encode_edge(&e)).expect("decodes"), e);
    }

    #[test]
    fn truncated_or_garbled_records_are_errors_not_panics() {
        let n = NodeRecord {
            labels: vec!["Customer".into()],
            properties: sample_properties(),
        };
        let bytes = encode_node(&n);
        for cut in 0..bytes.len() {
            assert!(decode_node(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(decode_node(&long).is_err());
        assert!(
            decode_node(&[1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]).is_err()
        );
    }

    fn temporal_properties() -> Properties {
        let mut p = Properties::new();
        p.insert("d".into(), Value::Date(-719_162));
        p.insert("lt".into(), Value::LocalTime(86_399_999_999_999));
        p.insert("t".into(), Value::Time(3_600_000_000_000, -18_000));
        p.insert("ldt".into(), Value::LocalDateTime(i64::MIN, 999_999_999));
        p.insert(
            "z".into(),
            Value::ZonedDateTime(Box::new(ZonedDateTime {
                seconds: 1_700_000_000,
                nanos: 123_456_789,
                offset: 3600,
                zone: Some("Europe/Stockholm".into()),
            })),
        );
        p.insert(
            "o".into(),
            Value::ZonedDateTime(Box::new(ZonedDateTime {
                seconds: -1,
                nanos: 0,
                offset: -3600,
                zone: None,
            })),
        );
        p.insert(
            "dur".into(),
            Value::Duration(Box::new(DurationValue {
                months: i64::MAX,
                days: -3,
                seconds: i64::MIN,
                nanos: 999_999_999,
            })),
        );
        p.insert("old".into(), Value::DateTime(-5));
        p
    }

    #[test]
    fn temporal_values_round_trip_and_are_skipped() {
        let n = NodeRecord {
            labels: vec!["Event".into()],
            properties: temporal_properties(),
        };
        let bytes = encode_node(&n);
        assert_eq!(decode_node(&bytes).expect("decodes"), n);
        let keys = ["d", "dur", "ldt", "lt", "o", "old", "t", "z"];
        let mut out = vec![None; keys.len()];
        node_values(&bytes, &["old"], &mut out[..1]).expect("skips the others");
        assert_eq!(out[0], Some(Value::DateTime(-5)));
        node_values(&bytes, &keys, &mut out).expect("reads");
        for (k, v) in keys.iter().zip(&out) {
            assert_eq!(v.as_ref(), n.properties.get(*k), "{k}");
        }
        for cut in 0..bytes.len() {
            assert!(decode_node(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }

    /// Bytes written by the encoding before the temporal tags existed (a node with a
    /// `DateTime`, an int and a string) still decode to the same values.
    #[test]
    fn records_of_the_first_encoding_still_decode() {
        let old: &[u8] = &[
            1, // record version
            1, 8, b'C', b'u', b's', b't', b'o', b'm', b'e', b'r', // one label
            3,    // three properties
            1, b'n', 3, 0, 0, 0, 0, 0, 0, 0, 42, // n: Int(42)
            2, b's', b'a', 5, 2, b'h', b'i', // sa: String("hi")
            2, b't', b's', 6, 0, 6, 0x2A, 0x4F, 0x8C, 0x3A, 0x40, 0x00, // ts: DateTime
        ];
        let n = decode_node(old).expect("decodes");
        assert_eq!(n.labels, vec!["Customer".to_owned()]);
        assert_eq!(n.properties.get("n"), Some(&Value::Int(42)));
        assert_eq!(n.properties.get("sa"), Some(&Value::String("hi".into())));
        assert_eq!(
            n.properties.get("ts"),
            Some(&Value::DateTime(0x0006_2A4F_8C3A_4000))
        );
        assert_eq!(encode_node(&n), old, "the old values encode as they did");
    }

    #[test]
    fn garbled_temporal_values_are_errors() {
        // Nanoseconds past a second, and a zone name longer than any IANA name.
        let mut bad = vec![1, 0, 1, 1, b'x', tag::LOCAL_DATETIME];
        bad.extend_from_slice(&[0; 8]);
        bad.extend_from_slice(&1_000_000_000u32.to_be_bytes());
        assert!(decode_node(&bad).is_err());
        let mut long = vec![1, 0, 1, 1, b'x', tag::ZONED_DATETIME];
        long.extend_from_slice(&[0; 16]);
        long.push(100);
        long.extend_from_slice(&[b'a'; 100]);
        assert!(decode_node(&long).is_err());
    }

    #[test]
    fn deep_nesting_is_refused() {
        let mut v = Value::Null;
        for _ in 0..40 {
            v = Value::List(vec![v]);
        }
        assert!(check_storable(&v).is_err());
    }
}
