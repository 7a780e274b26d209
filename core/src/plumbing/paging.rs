//! The parameters every paged list reads from a URL (`offset`, `limit`, `order`, numbers), checked
//! the same way everywhere: a bad value is the client's fault (400 with the field named).

use crate::error::{Error, Result};

/// Largest offset any list takes.
pub const OFFSET_MAX: usize = u32::MAX as usize;

/// `offset`: a whole number, 0 to [`OFFSET_MAX`].
pub fn offset(name: &str, value: &str) -> Result<usize> {
    value
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|n| *n <= OFFSET_MAX)
        .ok_or_else(|| {
            Error::invalid_field(name, value, &format!("a whole number, 0 to {OFFSET_MAX}"))
        })
}

/// `limit`: a whole number, 1 to `max`.
pub fn limit(name: &str, value: &str, max: usize) -> Result<usize> {
    value
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| Error::invalid_field(name, value, &format!("a whole number, 1 to {max}")))
}

/// `order` (or `dir`): `asc` is true, `desc` false.
pub fn ascending(name: &str, value: &str) -> Result<bool> {
    match value.trim() {
        "asc" => Ok(true),
        "desc" => Ok(false),
        _ => Err(Error::invalid_field(name, value, "asc or desc")),
    }
}

/// A finite number.
pub fn number(name: &str, value: &str) -> Result<f64> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| Error::invalid_field(name, value, "a number"))
}

/// Search text: trimmed, at most `max` characters.
pub fn text(name: &str, value: &str, max: usize) -> Result<String> {
    let v = value.trim();
    if v.chars().count() > max {
        return Err(Error::invalid_field(
            name,
            &v.chars().take(40).collect::<String>(),
            &format!("at most {max} characters"),
        ));
    }
    Ok(v.to_owned())
}

/// The items of one page of `items` (already in order).
pub fn window<T>(items: Vec<T>, offset: usize, limit: usize) -> Vec<T> {
    items.into_iter().skip(offset).take(limit).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked() {
        assert_eq!(offset("offset", " 20 ").ok(), Some(20));
        assert!(offset("offset", "-1").is_err());
        assert!(offset("offset", "4294967296").is_err());
        assert_eq!(limit("limit", "50", 100).ok(), Some(50));
        for bad in ["0", "101", "x", ""] {
            assert!(limit("limit", bad, 100).is_err(), "{bad}");
        }
        assert_eq!(ascending("order", "asc").ok(), Some(true));
        assert!(ascending("order", "up").is_err());
        assert!(number("min", "NaN").is_err() && number("min", "inf").is_err());
        assert_eq!(number("min", "1.5").ok(), Some(1.5));
        assert!(text("q", &"x".repeat(201), 200).is_err());
        assert_eq!(text("q", " a ", 200).ok().as_deref(), Some("a"));
        assert_eq!(window((0..10).collect(), 8, 5), vec![8, 9]);
        assert_eq!(
            window((0..10).collect::<Vec<i32>>(), 12, 5),
            Vec::<i32>::new()
        );
    }
}
