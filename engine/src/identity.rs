//! Normalisation of identity keys (email, phone, external id).
//!
//! Resolution itself (priority, enrichment, creation) lives in `events`, where it runs inside
//! the single writer so that concurrent events carrying one new key create one customer.

use crate::keys::IdentityKind;
use crate::model::NodeId;
#[cfg(feature = "storage")]
use crate::model::Properties;

/// The identity keys an event carries, before normalisation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IdentityKeys {
    /// A canonical customer id; used directly when it names an existing customer.
    pub customer_id: Option<NodeId>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub external_id: Option<String>,
}

/// Values that clients send when they have no identity; never used as a key.
fn is_blocked(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "" | "null" | "undefined" | "anonymous" | "-1" | "none" | "nil"
    ) || v.chars().all(|c| c == '0' || c == '+')
}

/// Email: trimmed and lower-cased.
pub fn normalize_email(raw: &str) -> Option<String> {
    let e = raw.trim().to_lowercase();
    (!is_blocked(&e)).then_some(e)
}

/// Phone: E.164 form. Separators (spaces, dashes, dots, parentheses) are dropped, a leading
/// `00` becomes `+`; the result must be `+` and 7 to 15 digits, or 7 to 15 bare digits (a
/// national number, kept as digits because its country is unknown).
pub fn normalize_phone(raw: &str) -> Option<String> {
    let t = raw.trim();
    let (plus, rest) = if let Some(r) = t.strip_prefix('+') {
        (true, r)
    } else if let Some(r) = t.strip_prefix("00") {
        (true, r)
    } else {
        (false, t)
    };
    let mut digits = String::with_capacity(rest.len());
    for c in rest.chars() {
        match c {
            '0'..='9' => digits.push(c),
            ' ' | '-' | '.' | '(' | ')' => {}
            _ => return None,
        }
    }
    if !(7..=15).contains(&digits.len()) || is_blocked(&digits) {
        return None;
    }
    Some(if plus { format!("+{digits}") } else { digits })
}

/// External id: trimmed, otherwise verbatim.
pub fn normalize_external_id(raw: &str) -> Option<String> {
    let x = raw.trim();
    (!is_blocked(x)).then(|| x.to_owned())
}

pub fn normalize(kind: IdentityKind, raw: &str) -> Option<String> {
    match kind {
        IdentityKind::Email => normalize_email(raw),
        IdentityKind::Phone => normalize_phone(raw),
        IdentityKind::ExternalId => normalize_external_id(raw),
    }
}

impl IdentityKeys {
    /// The usable keys in priority order (email, phone, external id), normalised.
    pub fn normalized(&self) -> Vec<(IdentityKind, String)> {
        let raw = [
            (IdentityKind::Email, &self.email),
            (IdentityKind::Phone, &self.phone),
            (IdentityKind::ExternalId, &self.external_id),
        ];
        raw.into_iter()
            .filter_map(|(k, v)| v.as_deref().and_then(|v| normalize(k, v)).map(|n| (k, n)))
            .collect()
    }
}

/// The normalised identity values a customer's properties carry.
#[cfg(feature = "storage")]
pub fn identities_of(properties: &Properties) -> Vec<(IdentityKind, String)> {
    IdentityKind::ALL
        .into_iter()
        .filter_map(|k| {
            let v = properties.get(k.property())?.as_str()?;
            normalize(k, v).map(|n| (k, n))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_trimmed_and_lower_cased() {
        assert_eq!(
            normalize_email("  Ada@Example.COM ").as_deref(),
            Some("ada@example.com")
        );
        for blocked in [
            "",
            "  ",
            "null",
            "NULL",
            "undefined",
            "anonymous",
            "-1",
            "0",
            "000",
        ] {
            assert_eq!(normalize_email(blocked), None, "{blocked:?}");
        }
    }

    #[test]
    fn phones_become_e164() {
        assert_eq!(
            normalize_phone("+1 (555) 000-1234").as_deref(),
            Some("+15550001234")
        );
        assert_eq!(
            normalize_phone("0044 20 7946 0958").as_deref(),
            Some("+442079460958")
        );
        assert_eq!(
            normalize_phone("+15550001234").as_deref(),
            Some("+15550001234")
        );
        assert_eq!(
            normalize_phone("555.000.1234").as_deref(),
            Some("5550001234")
        );
        for bad in [
            "",
            "null",
            "+0000000",
            "0000000",
            "12345",
            "+1234567890123456",
            "call me",
            "-1",
        ] {
            assert_eq!(normalize_phone(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn external_ids_are_trimmed_and_blocked_values_refused() {
        assert_eq!(normalize_external_id(" u-42 ").as_deref(), Some("u-42"));
        assert_eq!(normalize_external_id("undefined"), None);
        assert_eq!(normalize_external_id("0"), None);
    }

    #[test]
    fn keys_come_out_in_priority_order_without_blocked_ones() {
        let keys = IdentityKeys {
            customer_id: None,
            email: Some("null".into()),
            phone: Some("+15550001234".into()),
            external_id: Some("X1".into()),
        };
        assert_eq!(
            keys.normalized(),
            vec![
                (IdentityKind::Phone, "+15550001234".into()),
                (IdentityKind::ExternalId, "X1".into())
            ]
        );
    }
}
