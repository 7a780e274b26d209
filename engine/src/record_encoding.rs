//! How a typed record's value is stored (format 4): one tag byte, then the record in postcard,
//! a compact positional binary serde format. Values written before format 4 are JSON objects
//! (first byte `{`); they still decode, so a store reads correctly while the migration
//! re-encodes them (see `record_kinds` and `docs/storage-format.md`).
//!
//! Postcard is not self-describing: every field is written in declaration order and read back
//! by position. Two helpers let one record type serve both as a stored record and as a JSON API
//! view, with the view's JSON unchanged:
//! - [`json_text`]: a `serde(with)` module for fields postcard cannot read back
//!   (`serde_json::Value`, internally tagged or untagged enums): stored as their JSON text,
//!   serialized as-is everywhere else.
//! - [`skip_none_in_json`]: a `skip_serializing_if` predicate that omits `None` from JSON but
//!   never while a record is being encoded for storage (an omitted field would shift every
//!   later field).

use std::cell::Cell;

use crate::error::EngineError;
use crate::record::Record;

/// First byte of a record value in postcard (format 4). JSON values start with `{`.
pub const POSTCARD_TAG: u8 = 0x01;

thread_local! {
    /// True while [`encode`] runs on this thread.
    static STORAGE_ENCODING: Cell<bool> = const { Cell::new(false) };
}

/// Sets the flag for one encode and restores the previous value, also on panic.
struct StorageEncoding(bool);

impl StorageEncoding {
    fn enter() -> StorageEncoding {
        StorageEncoding(STORAGE_ENCODING.with(|f| f.replace(true)))
    }
}

impl Drop for StorageEncoding {
    fn drop(&mut self) {
        STORAGE_ENCODING.with(|f| f.set(self.0));
    }
}

/// Whether the serialization running on this thread is a record being encoded for storage.
pub fn encoding_for_storage() -> bool {
    STORAGE_ENCODING.with(|f| f.get())
}

/// `skip_serializing_if` for optional fields of records that are also JSON views: omits `None`
/// from JSON, but writes it (one byte) when the record is stored, because postcard reads fields
/// by position.
pub fn skip_none_in_json<T>(value: &Option<T>) -> bool {
    value.is_none() && !encoding_for_storage()
}

/// The stored bytes of a record: [`POSTCARD_TAG`] then postcard.
pub fn encode<T: Record>(record: &T) -> Result<Vec<u8>, EngineError> {
    let _storage = StorageEncoding::enter();
    postcard::to_extend(record, vec![POSTCARD_TAG])
        .map_err(|e| EngineError::Record(format!("{} record: {e}", T::KIND)))
}

/// A record from its stored bytes, in either encoding.
pub fn decode<T: Record>(bytes: &[u8]) -> Result<T, EngineError> {
    let fail = |e: &dyn std::fmt::Display| EngineError::Record(format!("{} record: {e}", T::KIND));
    match bytes.first() {
        Some(&POSTCARD_TAG) => {
            let (record, rest) = postcard::take_from_bytes(&bytes[1..]).map_err(|e| fail(&e))?;
            if !rest.is_empty() {
                return Err(fail(&format!("{} bytes after the record", rest.len())));
            }
            Ok(record)
        }
        _ if is_legacy_json(bytes) => serde_json::from_slice(bytes).map_err(|e| fail(&e)),
        _ => Err(fail(&"unknown record encoding")),
    }
}

/// Whether stored bytes are a record written before format 4 (a JSON object).
pub fn is_legacy_json(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{')
}

/// `#[serde(with = "svc_engine::record_encoding::json_text")]`: the field as its JSON text in
/// storage (postcard cannot read a self-describing value back), unchanged in JSON.
pub mod json_text {
    use serde::de::{DeserializeOwned, Error as _};
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            value.serialize(s)
        } else {
            s.serialize_str(&serde_json::to_string(value).map_err(S::Error::custom)?)
        }
    }

    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        d: D,
    ) -> Result<T, D::Error> {
        if d.is_human_readable() {
            T::deserialize(d)
        } else {
            let text = String::deserialize(d)?;
            serde_json::from_str(&text).map_err(D::Error::custom)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    #[serde(tag = "type", rename_all = "camelCase")]
    enum Shape {
        Circle { r: u32 },
        Dot,
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct View {
        id: String,
        #[serde(default, skip_serializing_if = "skip_none_in_json")]
        note: Option<String>,
        #[serde(with = "json_text")]
        body: serde_json::Value,
        #[serde(default, with = "json_text")]
        shape: Option<Shape>,
        after: u64,
    }

    impl Record for View {
        const KIND: &'static str = "view";
        fn id(&self) -> String {
            self.id.clone()
        }
    }

    fn view(note: Option<&str>, shape: Option<Shape>) -> View {
        View {
            id: "v1".into(),
            note: note.map(str::to_owned),
            body: serde_json::json!({"a": [1, "x", null], "b": {"c": true}}),
            shape,
            after: 300,
        }
    }

    #[test]
    fn records_round_trip_in_postcard_and_keep_their_json() {
        for v in [
            view(None, None),
            view(Some("n"), Some(Shape::Circle { r: 2 })),
            view(Some(""), Some(Shape::Dot)),
        ] {
            let bytes = encode(&v).expect("encode");
            assert_eq!(bytes[0], POSTCARD_TAG);
            assert_eq!(decode::<View>(&bytes).expect("decode"), v);
            // The JSON view is what it was before: None omitted, values inline.
            let json = serde_json::to_value(&v).expect("json");
            assert_eq!(json.get("note").is_none(), v.note.is_none());
            assert_eq!(json["body"], v.body);
            // Legacy JSON bytes decode too.
            let legacy = serde_json::to_vec(&v).expect("json");
            assert_eq!(decode::<View>(&legacy).expect("legacy"), v);
        }
        // The flag does not outlive an encode.
        assert!(!encoding_for_storage());
    }

    #[test]
    fn damaged_values_are_errors() {
        let mut bytes = encode(&view(Some("n"), None)).expect("encode");
        bytes.push(7);
        assert!(decode::<View>(&bytes).is_err());
        assert!(decode::<View>(&bytes[..bytes.len() - 4]).is_err());
        assert!(decode::<View>(b"\x02abc").is_err());
        assert!(decode::<View>(b"").is_err());
        assert!(is_legacy_json(b" {\"id\":1}"));
        assert!(!is_legacy_json(b"\x01{"));
    }
}
