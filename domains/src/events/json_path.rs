//! Reading text out of a foreign JSON payload by path, shared by the webhook normalizers and
//! Segment's mapping.

use serde_json::Value as Json;

/// The text at `path`: strings as they are, numbers in decimal.
pub(crate) fn text(v: &Json, path: &[&str]) -> Option<String> {
    let mut cur = v;
    for p in path {
        cur = cur.get(*p)?;
    }
    match cur {
        Json::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Json::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The first of `paths` that holds text.
pub(crate) fn first(v: &Json, paths: &[&[&str]]) -> Option<String> {
    paths.iter().find_map(|p| text(v, p))
}
