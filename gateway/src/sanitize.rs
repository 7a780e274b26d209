//! Masking for previews and receipts: secrets are replaced, contact details shortened to what
//! identifies them to a person who already knows them (`a***@example.com`, `***67`).

use serde_json::{Map, Value};

const SECRET_WORDS: &[&str] = &[
    "secret",
    "token",
    "password",
    "api_key",
    "apikey",
    "authorization",
];

pub fn sanitize(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, x) in m {
                let lower = k.to_ascii_lowercase();
                let masked = if SECRET_WORDS.iter().any(|w| lower.contains(w)) {
                    Value::String("[redacted]".into())
                } else if lower == "phone" || lower.ends_with("_phone") {
                    x.as_str()
                        .map(|s| Value::String(mask_phone(s)))
                        .unwrap_or_else(|| sanitize(x))
                } else {
                    sanitize(x)
                };
                out.insert(k.clone(), masked);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sanitize).collect()),
        Value::String(s) => Value::String(mask_emails(s)),
        other => other.clone(),
    }
}

/// Masks every email-looking word of `s`: first character of the local part, then `***`.
fn mask_emails(s: &str) -> String {
    if !s.contains('@') {
        return s.to_owned();
    }
    s.split(' ')
        .map(|word| match word.split_once('@') {
            Some((local, domain)) if !local.is_empty() && domain.contains('.') => {
                let first: String = local.chars().take(1).collect();
                format!("{first}***@{domain}")
            }
            _ => word.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn mask_phone(s: &str) -> String {
    let digits: Vec<char> = s.chars().filter(|c| c.is_ascii_digit()).collect();
    let tail: String = digits[digits.len().saturating_sub(2)..].iter().collect();
    format!("***{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn masks_contacts_and_secrets_everywhere() {
        let v = json!({"customer": "ada@example.com", "nested": [{"phone": "+44 20 7946 0958",
            "api_token": "abc", "note": "write to bob@corp.io today"}], "count": 3});
        let s = sanitize(&v);
        assert_eq!(s["customer"], "a***@example.com");
        assert_eq!(s["nested"][0]["phone"], "***58");
        assert_eq!(s["nested"][0]["api_token"], "[redacted]");
        assert_eq!(s["nested"][0]["note"], "write to b***@corp.io today");
        assert_eq!(s["count"], 3);
        assert!(!s.to_string().contains("ada@"));
    }
}
