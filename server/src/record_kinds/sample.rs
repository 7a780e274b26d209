//! Sample values of any `Deserialize` type, generated from the type's own serde description:
//! every field present, every `Option` either `Some` or `None`, each enum at a chosen variant,
//! two elements in every sequence and one entry in every map. So a round-trip test covers
//! every field of every record type without a hand-written fixture that could fall behind.

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

/// Which `Option`s of a sample are `Some`.
#[derive(Clone, Copy, Debug)]
pub enum Options {
    Set,
    Unset,
    /// `Some` at nesting depths of this parity only, so an optional field inside a present
    /// optional value is absent, and the other way round.
    Alternate(usize),
}

/// The generator. `variant`: the index (modulo the number of variants) of the variant every
/// enum takes.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    options: Options,
    variant: usize,
    depth: usize,
}

/// Nesting beyond this gives empty sequences and maps (recursive types end).
const MAX_DEPTH: usize = 8;

#[derive(Debug)]
pub struct SampleError(String);

impl std::fmt::Display for SampleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SampleError {}

impl de::Error for SampleError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        SampleError(msg.to_string())
    }
}

/// A sample `T`.
pub fn sample<T: de::DeserializeOwned>(options: Options, variant: usize) -> Result<T, SampleError> {
    T::deserialize(Sample {
        options,
        variant,
        depth: 0,
    })
}

impl Sample {
    fn deeper(self) -> Sample {
        Sample {
            depth: self.depth + 1,
            ..self
        }
    }

    fn count(self, n: usize) -> usize {
        if self.depth >= MAX_DEPTH {
            0
        } else {
            n
        }
    }
}

/// A string that also passes as base64 (sealed bytes) and as a non-empty name.
const TEXT: &str = "QUJD";

struct Seq {
    s: Sample,
    left: usize,
}

impl<'de> de::SeqAccess<'de> for Seq {
    type Error = SampleError;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, SampleError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(self.s.deeper()).map(Some)
    }
}

/// A map with `keys` (struct fields) or one generated entry.
struct Map {
    s: Sample,
    keys: Vec<&'static str>,
    generated: usize,
}

impl<'de> de::MapAccess<'de> for Map {
    type Error = SampleError;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, SampleError> {
        if let Some(key) = self.keys.pop() {
            let key: de::value::StrDeserializer<'_, SampleError> = key.into_deserializer();
            return seed.deserialize(key).map(Some);
        }
        if self.generated == 0 {
            return Ok(None);
        }
        self.generated -= 1;
        seed.deserialize(self.s.deeper()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, SampleError> {
        seed.deserialize(self.s.deeper())
    }
}

struct Enum {
    s: Sample,
    variant: &'static str,
}

impl<'de> de::EnumAccess<'de> for Enum {
    type Error = SampleError;
    type Variant = Sample;
    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Sample), SampleError> {
        let name: de::value::StrDeserializer<'_, SampleError> = self.variant.into_deserializer();
        Ok((seed.deserialize(name)?, self.s.deeper()))
    }
}

impl<'de> de::VariantAccess<'de> for Sample {
    type Error = SampleError;
    fn unit_variant(self) -> Result<(), SampleError> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, SampleError> {
        seed.deserialize(self)
    }
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, SampleError> {
        v.visit_seq(Seq { s: self, left: len })
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, SampleError> {
        de::Deserializer::deserialize_struct(self, "", fields, v)
    }
}

macro_rules! number {
    ($($method:ident => $visit:ident($($value:expr)?)),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SampleError> {
            v.$visit($($value)?)
        })*
    };
}

impl<'de> de::Deserializer<'de> for Sample {
    type Error = SampleError;

    /// Self-describing requests (`serde_json::Value` and the like): an object with one string.
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SampleError> {
        if self.depth >= 2 {
            return v.visit_str(TEXT);
        }
        v.visit_map(Map {
            s: self,
            keys: Vec::new(),
            generated: 1,
        })
    }

    number!(
        deserialize_bool => visit_bool(true),
        deserialize_i8 => visit_i8(-7),
        deserialize_i16 => visit_i16(-300),
        deserialize_i32 => visit_i32(-70_000),
        deserialize_i64 => visit_i64(1_764_000_000_123),
        deserialize_u8 => visit_u8(7),
        deserialize_u16 => visit_u16(300),
        deserialize_u32 => visit_u32(70_000),
        deserialize_u64 => visit_u64(1_764_000_000_123),
        deserialize_f32 => visit_f32(0.25),
        deserialize_f64 => visit_f64(0.625),
        deserialize_char => visit_char('x'),
        deserialize_str => visit_str(TEXT),
        deserialize_string => visit_str(TEXT),
        deserialize_identifier => visit_str(TEXT),
        deserialize_bytes => visit_bytes(&[1, 2, 3]),
        deserialize_byte_buf => visit_bytes(&[1, 2, 3]),
        deserialize_unit => visit_unit(),
        deserialize_ignored_any => visit_unit(),
    );

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SampleError> {
        let set = match self.options {
            Options::Set => true,
            Options::Unset => false,
            Options::Alternate(parity) => self.depth % 2 == parity,
        };
        if set {
            v.visit_some(self)
        } else {
            v.visit_none()
        }
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, SampleError> {
        v.visit_unit()
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, SampleError> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SampleError> {
        v.visit_seq(Seq {
            s: self,
            left: self.count(2),
        })
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, SampleError> {
        v.visit_seq(Seq { s: self, left: len })
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        len: usize,
        v: V,
    ) -> Result<V::Value, SampleError> {
        v.visit_seq(Seq { s: self, left: len })
    }
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, SampleError> {
        v.visit_map(Map {
            s: self,
            keys: Vec::new(),
            generated: self.count(1),
        })
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, SampleError> {
        v.visit_map(Map {
            s: self,
            keys: fields.iter().rev().copied().collect(),
            generated: 0,
        })
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, SampleError> {
        let variant = variants
            .get(self.variant % variants.len().max(1))
            .ok_or_else(|| SampleError("an enum without variants".into()))?;
        v.visit_enum(Enum { s: self, variant })
    }
}
