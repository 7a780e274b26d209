//! The record kinds an application stores, handed to the engine at open. The engine knows no
//! application record type, so re-encoding the records of an older store (format 3: JSON) into
//! format 4 (postcard) needs, per kind, a function that decodes the old bytes as that type and
//! encodes them again.

use std::collections::BTreeMap;

use crate::error::EngineError;
use crate::record::Record;
use crate::record_encoding;

/// Stored bytes of one kind in, stored bytes out.
type Transcode = fn(&[u8]) -> Result<Vec<u8>, EngineError>;
/// Stored bytes of one kind to the record's JSON view.
type ToJson = fn(&[u8]) -> Result<serde_json::Value, EngineError>;

#[derive(Clone, Copy, Debug)]
struct KindCodec {
    transcode: Transcode,
    to_json: ToJson,
    to_legacy: Transcode,
}

fn transcode<T: Record>(bytes: &[u8]) -> Result<Vec<u8>, EngineError> {
    record_encoding::encode(&record_encoding::decode::<T>(bytes)?)
}

fn to_json<T: Record>(bytes: &[u8]) -> Result<serde_json::Value, EngineError> {
    serde_json::to_value(record_encoding::decode::<T>(bytes)?)
        .map_err(|e| EngineError::Record(format!("{} record: {e}", T::KIND)))
}

/// The bytes a format-3 build stored for the record (its JSON).
fn to_legacy<T: Record>(bytes: &[u8]) -> Result<Vec<u8>, EngineError> {
    serde_json::to_vec(&record_encoding::decode::<T>(bytes)?)
        .map_err(|e| EngineError::Record(format!("{} record: {e}", T::KIND)))
}

/// A registry of record types by kind (`GraphOptions::records`).
#[derive(Clone, Debug, Default)]
pub struct RecordKinds {
    kinds: BTreeMap<&'static str, KindCodec>,
}

impl RecordKinds {
    pub fn new() -> RecordKinds {
        RecordKinds::default()
    }

    /// Adds `T`. Two types under one kind name would read each other's records: refused.
    pub fn with<T: Record>(mut self) -> RecordKinds {
        let codec = KindCodec {
            transcode: transcode::<T>,
            to_json: to_json::<T>,
            to_legacy: to_legacy::<T>,
        };
        if self.kinds.insert(T::KIND, codec).is_some() {
            panic!("record kind {:?} registered twice", T::KIND);
        }
        self
    }

    /// The registered kind names, sorted.
    pub fn kinds(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.kinds.keys().copied()
    }

    pub fn contains(&self, kind: &str) -> bool {
        self.kinds.contains_key(kind)
    }

    /// Stored bytes of `kind` (either encoding) in the current encoding; None for an
    /// unregistered kind.
    pub fn transcode(&self, kind: &str, bytes: &[u8]) -> Option<Result<Vec<u8>, EngineError>> {
        self.kinds.get(kind).map(|c| (c.transcode)(bytes))
    }

    /// Stored bytes of `kind` as a format-3 build wrote them (JSON); None when unregistered.
    pub fn to_legacy(&self, kind: &str, bytes: &[u8]) -> Option<Result<Vec<u8>, EngineError>> {
        self.kinds.get(kind).map(|c| (c.to_legacy)(bytes))
    }

    /// The JSON view of stored bytes of `kind`; None for an unregistered kind.
    pub fn to_json(
        &self,
        kind: &str,
        bytes: &[u8],
    ) -> Option<Result<serde_json::Value, EngineError>> {
        self.kinds.get(kind).map(|c| (c.to_json)(bytes))
    }
}
