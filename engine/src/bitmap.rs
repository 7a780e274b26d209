//! The codec of label bitmaps and of the deltas that update them through RocksDB's merge
//! operator, so recording one node never rewrites a whole bitmap.
//!
//! A stored value is `0x00 | treemap`; a merge operand is `0x01 | len(adds) u32 | adds | removes`,
//! meaning "insert `adds`, then remove `removes`" (the two are disjoint).

use roaring::RoaringTreemap;

const FULL: u8 = 0x00;
const DELTA: u8 = 0x01;

/// A pending change to one label bitmap.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Delta {
    pub adds: RoaringTreemap,
    pub removes: RoaringTreemap,
}

impl Delta {
    pub fn add(&mut self, id: u64) {
        self.removes.remove(id);
        self.adds.insert(id);
    }

    pub fn remove(&mut self, id: u64) {
        self.adds.remove(id);
        self.removes.insert(id);
    }

    pub fn apply_to(&self, bitmap: &mut RoaringTreemap) {
        *bitmap |= &self.adds;
        *bitmap -= &self.removes;
    }

    /// `self` followed by `later`, as one delta.
    fn then(&mut self, later: &Delta) {
        self.adds -= &later.removes;
        self.adds |= &later.adds;
        self.removes -= &later.adds;
        self.removes |= &later.removes;
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut adds = Vec::with_capacity(self.adds.serialized_size());
        let mut removes = Vec::with_capacity(self.removes.serialized_size());
        // Writing into a Vec cannot fail.
        let _ = self.adds.serialize_into(&mut adds);
        let _ = self.removes.serialize_into(&mut removes);
        let mut out = Vec::with_capacity(5 + adds.len() + removes.len());
        out.push(DELTA);
        out.extend_from_slice(&(adds.len() as u32).to_be_bytes());
        out.extend_from_slice(&adds);
        out.extend_from_slice(&removes);
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Delta> {
        if *bytes.first()? != DELTA {
            return None;
        }
        let n = u32::from_be_bytes(bytes.get(1..5)?.try_into().ok()?) as usize;
        let adds = bytes.get(5..5 + n)?;
        let removes = bytes.get(5 + n..)?;
        Some(Delta {
            adds: RoaringTreemap::deserialize_from(adds).ok()?,
            removes: RoaringTreemap::deserialize_from(removes).ok()?,
        })
    }
}

pub fn encode_full(bitmap: &RoaringTreemap) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + bitmap.serialized_size());
    out.push(FULL);
    let _ = bitmap.serialize_into(&mut out);
    out
}

pub fn decode_full(bytes: &[u8]) -> Option<RoaringTreemap> {
    if *bytes.first()? != FULL {
        return None;
    }
    RoaringTreemap::deserialize_from(&bytes[1..]).ok()
}

/// Full merge: the stored bitmap (if any) with every operand applied in order. None (which
/// RocksDB reports as corruption) when anything fails to decode.
pub fn full_merge<'a>(
    existing: Option<&[u8]>,
    operands: impl Iterator<Item = &'a [u8]>,
) -> Option<Vec<u8>> {
    let mut bitmap = match existing {
        Some(b) => decode_full(b)?,
        None => RoaringTreemap::new(),
    };
    for op in operands {
        Delta::decode(op)?.apply_to(&mut bitmap);
    }
    bitmap.optimize();
    Some(encode_full(&bitmap))
}

/// Partial merge: consecutive operands folded into one delta.
pub fn partial_merge<'a>(operands: impl Iterator<Item = &'a [u8]>) -> Option<Vec<u8>> {
    let mut acc = Delta::default();
    for op in operands {
        acc.then(&Delta::decode(op)?);
    }
    Some(acc.encode())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(adds: &[u64], removes: &[u64]) -> Delta {
        let mut d = Delta::default();
        adds.iter().for_each(|a| d.add(*a));
        removes.iter().for_each(|r| d.remove(*r));
        d
    }

    #[test]
    fn full_merge_applies_operands_in_order() {
        let base = encode_full(&[1u64, 2, 3].into_iter().collect());
        let ops = [delta(&[4, 5], &[1]).encode(), delta(&[1], &[5]).encode()];
        let merged = full_merge(Some(&base), ops.iter().map(|o| o.as_slice())).expect("merges");
        let got: Vec<u64> = decode_full(&merged).expect("decodes").iter().collect();
        assert_eq!(got, vec![1, 2, 3, 4]);
    }

    #[test]
    fn partial_then_full_equals_full() {
        let ops = [
            delta(&[1, 2], &[]).encode(),
            delta(&[3], &[2]).encode(),
            delta(&[2], &[1]).encode(),
        ];
        let folded = partial_merge(ops.iter().map(|o| o.as_slice())).expect("folds");
        let base = encode_full(&[1u64, 9].into_iter().collect());
        let via_partial =
            full_merge(Some(&base), std::iter::once(folded.as_slice())).expect("merges");
        let direct = full_merge(Some(&base), ops.iter().map(|o| o.as_slice())).expect("merges");
        assert_eq!(decode_full(&via_partial), decode_full(&direct));
        let got: Vec<u64> = decode_full(&direct).expect("decodes").iter().collect();
        assert_eq!(got, vec![2, 3, 9]);
    }

    #[test]
    fn garbage_is_refused() {
        assert!(full_merge(Some(&[7, 1, 2]), std::iter::empty()).is_none());
        assert!(full_merge(None, std::iter::once(&[1u8, 0, 0, 0, 9][..])).is_none());
    }
}
