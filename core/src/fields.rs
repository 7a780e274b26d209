//! Reading one field of a JSON object body by the rules of SPEC.md's field tables (playbooks,
//! brand context): out-of-bound numbers, over-long strings and wrong types are 400 naming the
//! field and the bound; enum values outside their set read as "not given" (the caller keeps the
//! old or default value).

use serde_json::{json, Map, Value as Json};

use crate::error::{Error, Result};

/// Declares a closed set of wire strings as an enum with `as_str`, `parse` and `ALL`. Its OpenAPI
/// schema is a string enum of exactly the wire values, named after the type or after the
/// `as "Name"` given (component names must be unique in the document: a second type of the same
/// name would silently replace the first).
#[macro_export]
macro_rules! wire_enum {
    ($(#[$m:meta])* $name:ident $(as $schema:literal)? { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $( #[serde(rename = $text)] $variant, )+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text,)+ }
            }

            pub fn parse(s: &str) -> Option<$name> {
                match s { $($text => Some($name::$variant),)+ _ => None }
            }

            /// The wire values joined for error messages.
            pub fn choices() -> String {
                [$($text),+].join(", ")
            }
        }

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some([$($text),+]))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed($crate::wire_enum!(@name $name $($schema)?))
            }
        }
    };
    (@name $name:ident) => { stringify!($name) };
    (@name $name:ident $schema:literal) => { $schema };
}

/// What a body says about one field.
#[derive(Clone, Debug, PartialEq)]
pub enum Given<T> {
    Absent,
    /// An explicit `null`: clears an optional field, means "not given" for the others.
    Null,
    Value(T),
}

impl<T> Given<T> {
    /// The value, treating `null` like absence.
    pub fn value(self) -> Option<T> {
        match self {
            Given::Value(v) => Some(v),
            _ => None,
        }
    }

    /// Applies the field to an optional slot: a value sets it, `null` clears it.
    pub fn apply_optional(self, slot: &mut Option<T>) {
        match self {
            Given::Absent => {}
            Given::Null => *slot = None,
            Given::Value(v) => *slot = Some(v),
        }
    }

    /// Applies the field to a slot that always has a value: `null` leaves it as it is.
    pub fn apply(self, slot: &mut T) {
        if let Given::Value(v) = self {
            *slot = v;
        }
    }
}

/// `path` names the field in errors (e.g. `strategy.hypothesis`).
fn raw<'a>(obj: &'a Map<String, Json>, key: &str) -> Given<&'a Json> {
    match obj.get(key) {
        None => Given::Absent,
        Some(Json::Null) => Given::Null,
        Some(v) => Given::Value(v),
    }
}

fn wrong_type(path: &str, what: &str, value: &Json) -> Error {
    Error::invalid_input(format!("{path}: must be {what}"))
        .with_details(json!({ "field": path, "expected": what, "value": short(value) }))
}

/// The offending value for `details`, cut so an error never echoes a huge body back.
fn short(value: &Json) -> Json {
    let text = value.to_string();
    if text.chars().count() <= 80 {
        value.clone()
    } else {
        Json::String(text.chars().take(80).collect::<String>() + "…")
    }
}

/// Whether `c` is whitespace as the OpenAPI document's patterns mean it: ECMA-262's `\s`,
/// the regular-expression dialect of JSON Schema. It differs from `char::is_whitespace` in
/// U+0085 (not whitespace here) and U+FEFF (whitespace here).
pub fn is_pattern_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// `s` without leading and trailing pattern whitespace ([`is_pattern_space`]): a field the
/// document declares `pattern: \S` is blank exactly when this is empty.
pub fn trim_blank(s: &str) -> &str {
    s.trim_matches(is_pattern_space)
}

/// A string of at most `max` characters (Unicode scalar values).
pub fn text(obj: &Map<String, Json>, path: &str, key: &str, max: usize) -> Result<Given<String>> {
    Ok(match raw(obj, key) {
        Given::Absent => Given::Absent,
        Given::Null => Given::Null,
        Given::Value(Json::String(s)) => {
            let n = s.chars().count();
            if n > max {
                return Err(Error::invalid_input(format!(
                    "{path}: at most {max} characters (got {n})"
                ))
                .with_details(json!({ "field": path, "max_chars": max, "chars": n })));
            }
            Given::Value(s.clone())
        }
        Given::Value(other) => return Err(wrong_type(path, "a string", other)),
    })
}

/// A whole number in `min..=max`.
pub fn integer(
    obj: &Map<String, Json>,
    path: &str,
    key: &str,
    min: u32,
    max: u32,
) -> Result<Given<u32>> {
    Ok(match raw(obj, key) {
        Given::Absent => Given::Absent,
        Given::Null => Given::Null,
        Given::Value(v) => {
            // 7.0 is the integer 7; 1.5, -1 and "5" are not integers of the range.
            let n = v.as_u64().or_else(|| {
                v.as_f64()
                    .filter(|f| f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(f))
                    .map(|f| f as u64)
            });
            match n.and_then(|n| u32::try_from(n).ok()) {
                Some(n) if (min..=max).contains(&n) => Given::Value(n),
                _ => {
                    return Err(Error::invalid_input(format!(
                        "{path}: must be an integer from {min} to {max}"
                    ))
                    .with_details(
                        json!({ "field": path, "min": min, "max": max, "value": short(v) }),
                    ))
                }
            }
        }
    })
}

/// A finite number of at least `min`.
pub fn number_at_least(
    obj: &Map<String, Json>,
    path: &str,
    key: &str,
    min: f64,
) -> Result<Given<f64>> {
    Ok(match raw(obj, key) {
        Given::Absent => Given::Absent,
        Given::Null => Given::Null,
        Given::Value(v) => match v.as_f64() {
            Some(f) if f.is_finite() && f >= min => Given::Value(f),
            _ => {
                return Err(Error::invalid_input(format!(
                    "{path}: must be a number greater than or equal to {min}"
                ))
                .with_details(json!({ "field": path, "min": min, "value": short(v) })))
            }
        },
    })
}

pub fn boolean(obj: &Map<String, Json>, path: &str, key: &str) -> Result<Given<bool>> {
    Ok(match raw(obj, key) {
        Given::Absent => Given::Absent,
        Given::Null => Given::Null,
        Given::Value(Json::Bool(b)) => Given::Value(*b),
        Given::Value(other) => return Err(wrong_type(path, "true or false", other)),
    })
}

/// A nested object (`leadSource`, `voice`, ...); `null` and absence read as no object.
pub fn object<'a>(
    obj: &'a Map<String, Json>,
    path: &str,
    key: &str,
) -> Result<Option<&'a Map<String, Json>>> {
    match raw(obj, key) {
        Given::Value(Json::Object(m)) => Ok(Some(m)),
        Given::Value(other) => Err(wrong_type(path, "an object", other)),
        _ => Ok(None),
    }
}

/// An enum value: one of its wire strings, else "not given" (SPEC.md: invalid enum values are
/// ignored).
pub fn choice<E>(
    obj: &Map<String, Json>,
    key: &str,
    parse: impl Fn(&str) -> Option<E>,
) -> Option<E> {
    obj.get(key).and_then(Json::as_str).and_then(parse)
}

/// An array of at most `max_items` strings of at most `max_chars` characters each.
pub fn string_list(
    obj: &Map<String, Json>,
    path: &str,
    key: &str,
    max_items: usize,
    max_chars: usize,
) -> Result<Given<Vec<String>>> {
    Ok(match raw(obj, key) {
        Given::Absent => Given::Absent,
        Given::Null => Given::Null,
        Given::Value(Json::Array(items)) => {
            if items.len() > max_items {
                return Err(Error::invalid_input(format!(
                    "{path}: at most {max_items} items (got {})",
                    items.len()
                ))
                .with_details(json!({ "field": path, "max_items": max_items })));
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let item_path = format!("{path}[{i}]");
                match item {
                    Json::String(s) if s.chars().count() <= max_chars => out.push(s.clone()),
                    Json::String(s) => {
                        return Err(Error::invalid_input(format!(
                            "{item_path}: at most {max_chars} characters (got {})",
                            s.chars().count()
                        ))
                        .with_details(json!({ "field": item_path, "max_chars": max_chars })))
                    }
                    other => return Err(wrong_type(&item_path, "a string", other)),
                }
            }
            Given::Value(out)
        }
        Given::Value(other) => return Err(wrong_type(path, "an array of strings", other)),
    })
}

/// The RFC 3339 date-time as a pattern, stated beside `format: date-time` on every timestamp
/// field: JSON Schema 2020-12 makes `format` an annotation, which generators and validators
/// may ignore; a pattern is always asserted. It cannot know month lengths (the parser refuses
/// February 30 with `invalid_timestamp`).
pub const DATE_TIME_PATTERN: &str = r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$";

/// The one reader of client timestamps (every route, every body): an RFC 3339 date-time, what
/// the document's `format: date-time` states (`2026-01-31T09:30:00Z`, an offset instead of `Z`,
/// fractional seconds allowed). No surrounding whitespace and no other ISO-8601 form (a missing
/// timezone, week dates, the basic format): anything else is 400 `invalid_timestamp` naming
/// `field`.
pub fn timestamp(s: &str, field: &str) -> Result<time::OffsetDateTime> {
    use time::format_description::well_known::Rfc3339;
    time::OffsetDateTime::parse(s, &Rfc3339).map_err(|_| {
        Error::new(
            crate::error::Code::InvalidTimestamp,
            format!(
                "{field}: must be an RFC 3339 date-time with a timezone (e.g. 2026-01-31T09:30:00Z), got {:?}",
                short(&Json::String(s.to_owned()))
            ),
        )
        .with_details(json!({ "field": field, "value": short(&Json::String(s.to_owned())) }))
    })
}

/// Rewrites every number with an integral value (`332.0`, `-0.0`, `1e3`) as the integer it is,
/// so typed fields (`u32`, `i64`) read it: JSON Schema counts `332.0` as an integer, and every
/// request body is read this way (docs/api-contract.md). Fractions and integral values past
/// 64 bits stay floats (an integer field refuses them). Recursion is bounded by the JSON
/// parser's nesting limit (128).
pub fn integral_numbers_as_integers(v: &mut Json) {
    match v {
        Json::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0) {
                // i64::MIN is exactly representable; i64::MAX and u64::MAX round up to 2^63
                // and 2^64, hence the strict upper bounds.
                if f >= i64::MIN as f64 && f < 0.0 {
                    *v = Json::from(f as i64);
                } else if (0.0..u64::MAX as f64).contains(&f) {
                    *v = Json::from(f as u64);
                }
            }
        }
        Json::Array(items) => items.iter_mut().for_each(integral_numbers_as_integers),
        Json::Object(map) => map.values_mut().for_each(integral_numbers_as_integers),
        _ => {}
    }
}

/// Deserializes an optional integer the way JSON Schema reads one: `154` and `154.0` are the
/// same integer (a generated client may send either); a fraction or a value out of `T`'s range
/// is refused.
pub fn optional_integer<'de, D, T>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<u64>,
{
    use serde::de::Error as _;
    use serde::Deserialize as _;
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    let whole = match (n.as_u64(), n.as_f64()) {
        (Some(u), _) => Some(u),
        // 2^64 itself is out of range (u64::MAX as f64 rounds up to it).
        (None, Some(f)) if f >= 0.0 && f.fract() == 0.0 && f < u64::MAX as f64 => Some(f as u64),
        _ => None,
    };
    whole
        .and_then(|u| T::try_from(u).ok())
        .map(Some)
        .ok_or_else(|| {
            D::Error::custom(format!("expected a non-negative integer in range, got {n}"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_means_what_the_documents_pattern_means() {
        // ECMA-262's \s: U+0085 is text (schemathesis sent it as a valid `\S` message).
        assert_eq!(trim_blank("\u{85}"), "\u{85}");
        assert_eq!(trim_blank(" \t\u{A0}\u{FEFF}\u{3000}x\u{2028}\n"), "x");
        assert_eq!(
            trim_blank("\u{200B}"),
            "\u{200B}",
            "a zero-width space is not \\s"
        );
        assert!(trim_blank(" \r\n\u{0B}\u{0C}\u{2000}\u{200A}").is_empty());
    }

    fn obj(v: Json) -> Map<String, Json> {
        match v {
            Json::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn text_bounds_count_characters_and_name_the_field() {
        let o = obj(json!({"a": "é".repeat(200), "b": "x".repeat(201), "c": 5, "d": null}));
        assert_eq!(
            text(&o, "a", "a", 200).expect("ok"),
            Given::Value("é".repeat(200))
        );
        let e = text(&o, "x.b", "b", 200).expect_err("too long");
        assert!(
            e.message.contains("x.b") && e.message.contains("200"),
            "{}",
            e.message
        );
        assert!(text(&o, "c", "c", 10).is_err());
        assert_eq!(text(&o, "d", "d", 10).expect("null"), Given::Null);
        assert_eq!(text(&o, "e", "e", 10).expect("absent"), Given::Absent);
    }

    #[test]
    fn timestamps_are_rfc_3339_date_times_only() {
        for ok in [
            "2026-01-31T09:30:00Z",
            "2026-01-31t09:30:00.123456z",
            "2026-01-31T09:30:00+05:30",
            "0001-01-01T00:00:00-23:59",
        ] {
            assert!(timestamp(ok, "timestamp").is_ok(), "{ok}");
        }
        for bad in [
            "",
            " 2026-01-31T09:30:00Z",
            "2026-01-31T09:30:00",
            "2026-01-31T09:30Z",
            "20260131T093000Z",
            "2026-W05-6T09:30:00Z",
            "2026-02-30T09:30:00Z",
        ] {
            let e = timestamp(bad, "sentAt").expect_err(bad);
            assert_eq!(e.code, crate::error::Code::InvalidTimestamp);
            assert!(e.message.starts_with("sentAt:"), "{}", e.message);
        }
    }

    #[test]
    fn integral_floats_become_integers_and_fractions_stay() {
        let mut v = json!({"a": 332.0, "b": [-0.0, -7.0, 1.5], "c": {"d": 1e300, "e": 18446744073709549568.0}, "f": "1.0"});
        integral_numbers_as_integers(&mut v);
        assert_eq!(v["a"], json!(332));
        assert!(v["a"].is_u64());
        assert_eq!(v["b"], json!([0, -7, 1.5]));
        assert!(v["b"][1].is_i64());
        assert!(v["c"]["d"].is_f64(), "past 64 bits stays a float");
        assert_eq!(v["c"]["e"], json!(18446744073709549568u64));
        assert_eq!(v["f"], json!("1.0"), "strings are not numbers");
    }

    #[test]
    fn integers_are_whole_and_in_range() {
        let o = obj(
            json!({"ok": 50, "float_whole": 7.0, "frac": 1.5, "neg": -1, "big": 5001, "s": "5"}),
        );
        assert_eq!(
            integer(&o, "ok", "ok", 1, 5000).expect("ok"),
            Given::Value(50)
        );
        assert_eq!(
            integer(&o, "f", "float_whole", 1, 10).expect("ok"),
            Given::Value(7)
        );
        for k in ["frac", "neg", "big", "s"] {
            let e = integer(&o, k, k, 1, 5000).expect_err(k);
            assert!(e.message.contains("from 1 to 5000"), "{}", e.message);
        }
    }

    #[test]
    fn numbers_lists_booleans_and_choices() {
        let o = obj(
            json!({"n": -0.5, "l": ["a", "b"], "long": ["x".repeat(61)], "b": "yes", "e": "nope", "g": "draft"}),
        );
        assert!(number_at_least(&o, "n", "n", 0.0).is_err());
        assert_eq!(
            string_list(&o, "l", "l", 12, 60).expect("ok"),
            Given::Value(vec!["a".to_owned(), "b".to_owned()])
        );
        let e = string_list(&o, "s.long", "long", 12, 60).expect_err("long item");
        assert!(e.message.starts_with("s.long[0]"), "{}", e.message);
        assert!(boolean(&o, "b", "b").is_err());
        let parse = |s: &str| (s == "draft").then_some(1);
        assert_eq!(choice(&o, "e", parse), None);
        assert_eq!(choice(&o, "g", parse), Some(1));
    }
}
