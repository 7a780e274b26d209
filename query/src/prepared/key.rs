//! The plan cache's key: which bucket a (workspace, text, parameters) falls in, and when two
//! parameter sets are the same for a plan (variants and float bits told apart).

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::OnceLock;

use svc_engine::{PlanScope, Value};

use crate::result::Params;

/// Deepest parameter value (nested lists and maps) the cache keys on; deeper ones run
/// uncached rather than recurse further.
const MAX_PARAM_DEPTH: usize = 32;
/// Largest parameters (values plus string bytes / 16) the cache keeps a copy of: a statement
/// run with a long list runs uncached rather than pin the list in memory.
const MAX_PARAM_SIZE: usize = 4096;

/// The bucket of (scope, text, params); None when a parameter nests too deep to key on. The
/// catalog version is left out so that a statement's entry over an older catalog is found
/// and replaced.
pub(super) fn key_of(scope: PlanScope, text: &str, params: &Params) -> Option<u64> {
    // Keyed per process: bucket collisions cannot be worked out from outside.
    static KEYS: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
    let mut h = KEYS
        .get_or_init(std::collections::hash_map::RandomState::new)
        .build_hasher();
    (scope.graph, scope.workspace, text).hash(&mut h);
    let mut budget = MAX_PARAM_SIZE;
    for (name, v) in params {
        name.hash(&mut h);
        if !hash_value(v, &mut h, 0, &mut budget) {
            return None;
        }
    }
    Some(h.finish())
}

/// Hashes `v` into `h`; false when it nests deeper than `MAX_PARAM_DEPTH` or outgrows
/// `budget`.
fn hash_value(v: &Value, h: &mut impl Hasher, depth: usize, budget: &mut usize) -> bool {
    let size = match v {
        Value::String(s) => 1 + s.len() / 16,
        _ => 1,
    };
    if depth > MAX_PARAM_DEPTH || *budget < size {
        return false;
    }
    *budget -= size;
    std::mem::discriminant(v).hash(h);
    match v {
        Value::Null => {}
        Value::Bool(b) => b.hash(h),
        Value::Int(i) => i.hash(h),
        Value::Float(f) => f.to_bits().hash(h),
        Value::String(s) => s.hash(h),
        Value::List(items) => {
            items.len().hash(h);
            return items.iter().all(|x| hash_value(x, h, depth + 1, budget));
        }
        Value::Map(m) => {
            m.len().hash(h);
            return m.iter().all(|(k, x)| {
                k.hash(h);
                hash_value(x, h, depth + 1, budget)
            });
        }
        // Temporal values: their Debug text is exact (every field, zone names included).
        other => format!("{other:?}").hash(h),
    }
    true
}

pub(super) fn same_params(a: &Params, b: &Params) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && same_value(va, vb, 0))
}

/// Equality that tells apart everything a plan could: variants (`1` and `1.0`), float bits.
fn same_value(a: &Value, b: &Value, depth: usize) -> bool {
    if depth > MAX_PARAM_DEPTH {
        return false;
    }
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q, depth + 1))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kp, p), (kq, q))| kp == kq && same_value(p, q, depth + 1))
        }
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (x, y) => std::mem::discriminant(x) == std::mem::discriminant(y) && x == y,
    }
}
