//! Webhook platform signatures: each platform's documented HMAC scheme, checked over the exact
//! bytes of a delivery when the workspace has configured a signing secret for that platform
//! (`webhook_secrets`). Comparisons are constant-time (`hmac`'s `verify_slice`). No HTTP types:
//! the adapter passes the method, the URL as the sender called it, the lower-cased headers and
//! the raw body.
//!
//! | platform | header(s) | signed bytes | encoding | freshness |
//! |---|---|---|---|---|
//! | stripe | `Stripe-Signature: t=<s>,v1=<sig>[,v1=...]` | `<t>.<body>` | hex HMAC-SHA256 | 5 min |
//! | shopify | `X-Shopify-Hmac-Sha256` | body | base64 HMAC-SHA256 | none (not signed) |
//! | hubspot | `X-HubSpot-Signature-v3`, `X-HubSpot-Request-Timestamp` (ms) | method, URI, body, timestamp | base64 HMAC-SHA256 | 5 min |
//! | segment | `X-Signature` | body | hex HMAC-SHA1 | none (not signed) |
//! | customerio | `X-CIO-Signature`, `X-CIO-Timestamp` (s) | `v0:<t>:<body>` | hex HMAC-SHA256 | 5 min |
//! | generic | `X-Svc-Signature: t=<s>,v1=<sig>` | `<t>.<body>` | hex HMAC-SHA256 | 5 min |
//!
//! A signature timestamp more than [`TOLERANCE_SECS`] away from the server's clock, in either
//! direction, is refused: an old one is a replay, a future one would outlive the window.

use std::collections::HashMap;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha1::Sha1;
use sha2::Sha256;
use time::OffsetDateTime;

use crate::error::{Code, Error, Result};

type HmacSha256 = Hmac<Sha256>;
type HmacSha1 = Hmac<Sha1>;

/// Largest accepted distance between a signature's timestamp and the server's clock.
pub const TOLERANCE_SECS: i64 = 5 * 60;
/// The generic platform's signature header (Stripe's format under our own name).
pub const GENERIC_HEADER: &str = "x-svc-signature";

/// How `platform` signs its deliveries (shown when a secret is set).
pub fn scheme(platform: &str) -> &'static str {
    match platform {
        "stripe" => "Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<body>\">; 5-minute tolerance",
        "shopify" => "X-Shopify-Hmac-Sha256: <base64 HMAC-SHA256 of the body>",
        "hubspot" => "X-HubSpot-Signature-v3: <base64 HMAC-SHA256 of method + URI + body + X-HubSpot-Request-Timestamp (ms)>; 5-minute tolerance",
        "segment" => "X-Signature: <hex HMAC-SHA1 of the body>",
        "customerio" => "X-CIO-Signature: <hex HMAC-SHA256 of \"v0:<X-CIO-Timestamp>:<body>\">; 5-minute tolerance",
        "generic" => "X-Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<body>\">; 5-minute tolerance",
        _ => "none",
    }
}

/// One webhook delivery as the sender made it.
#[derive(Debug)]
pub struct Delivery<'a> {
    /// `POST`.
    pub method: &'a str,
    /// The full URL the sender called (scheme, host, path and query), for HubSpot v3.
    pub url: &'a str,
    /// Header names lower-cased.
    pub headers: &'a HashMap<String, String>,
    pub body: &'a [u8],
}

impl Delivery<'_> {
    fn header(&self, platform: &str, name: &str) -> Result<&str> {
        self.headers
            .get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
            .ok_or_else(|| refused(platform, &format!("the {name} header is missing")))
    }
}

fn refused(platform: &str, why: &str) -> Error {
    Error::new(
        Code::InvalidSignature,
        format!("{platform} webhook signature rejected: {why}"),
    )
}

/// Checks `delivery` against `platform`'s scheme with the workspace's `secret`; `Ok` only for
/// a valid, fresh signature. Every refusal is 401 `invalid_signature` saying what was wrong
/// (never the expected value).
pub fn verify(
    platform: &str,
    secret: &[u8],
    delivery: &Delivery<'_>,
    now: OffsetDateTime,
) -> Result<()> {
    let now = now.unix_timestamp();
    match platform {
        "stripe" => {
            let header = delivery.header(platform, "stripe-signature")?;
            timestamped_v1(platform, header, secret, delivery.body, now)
        }
        "generic" => {
            let header = delivery.header(platform, GENERIC_HEADER)?;
            timestamped_v1(platform, header, secret, delivery.body, now)
        }
        "shopify" => {
            let sig = decode_base64(
                platform,
                delivery.header(platform, "x-shopify-hmac-sha256")?,
            )?;
            check(platform, mac::<HmacSha256>(secret, &[delivery.body])?, &sig)
        }
        "hubspot" => {
            let sig = decode_base64(
                platform,
                delivery.header(platform, "x-hubspot-signature-v3")?,
            )?;
            let ts_text = delivery.header(platform, "x-hubspot-request-timestamp")?;
            let ts_ms: i64 = ts_text.parse().map_err(|_| {
                refused(platform, "X-HubSpot-Request-Timestamp is not milliseconds")
            })?;
            fresh(platform, ts_ms.div_euclid(1000), now)?;
            let uri = hubspot_uri(delivery.url);
            let signed: [&[u8]; 4] = [
                delivery.method.as_bytes(),
                uri.as_bytes(),
                delivery.body,
                ts_text.as_bytes(),
            ];
            check(platform, mac::<HmacSha256>(secret, &signed)?, &sig)
        }
        "segment" => {
            let sig = decode_hex(platform, delivery.header(platform, "x-signature")?)?;
            check(platform, mac::<HmacSha1>(secret, &[delivery.body])?, &sig)
        }
        "customerio" => {
            let sig = decode_hex(platform, delivery.header(platform, "x-cio-signature")?)?;
            let ts_text = delivery.header(platform, "x-cio-timestamp")?;
            let ts: i64 = ts_text
                .parse()
                .map_err(|_| refused(platform, "X-CIO-Timestamp is not Unix seconds"))?;
            fresh(platform, ts, now)?;
            let signed: [&[u8]; 4] = [b"v0:", ts_text.as_bytes(), b":", delivery.body];
            check(platform, mac::<HmacSha256>(secret, &signed)?, &sig)
        }
        other => Err(Error::internal(format!(
            "no signature scheme for webhook platform {other}"
        ))),
    }
}

/// The headers that carry each platform's signature (and its timestamp, where signed).
fn signature_headers(platform: &str) -> &'static [&'static str] {
    match platform {
        "stripe" => &["stripe-signature"],
        "generic" => &[GENERIC_HEADER],
        "shopify" => &["x-shopify-hmac-sha256"],
        "hubspot" => &["x-hubspot-signature-v3", "x-hubspot-request-timestamp"],
        "segment" => &["x-signature"],
        "customerio" => &["x-cio-signature", "x-cio-timestamp"],
        _ => &[],
    }
}

/// What makes a verified delivery this delivery: its signature headers and body, hashed. A
/// replay of a captured delivery inside the timestamp tolerance carries exactly these, so
/// events that name no `messageId` of their own are deduplicated by it (issue 29); a sender's
/// genuine retry signs anew and is a new delivery.
pub fn replay_fingerprint(platform: &str, delivery: &Delivery<'_>) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(platform.as_bytes());
    for name in signature_headers(platform) {
        h.update([0u8]);
        h.update(
            delivery
                .headers
                .get(*name)
                .map_or("", String::as_str)
                .as_bytes(),
        );
    }
    h.update([0u8]);
    h.update(delivery.body);
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Stripe's scheme (and the generic one): `t=<unix seconds>,v1=<hex>` (several `v1` allowed,
/// e.g. while a secret is rolled; other schemes such as `v0` ignored) over `<t>.<body>`.
fn timestamped_v1(
    platform: &str,
    header: &str,
    secret: &[u8],
    body: &[u8],
    now: i64,
) -> Result<()> {
    let mut t = None;
    let mut candidates = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = Some(v),
            Some(("v1", v)) => candidates.push(v),
            _ => {}
        }
    }
    let t = t.ok_or_else(|| refused(platform, "the signature header has no t= timestamp"))?;
    let ts: i64 = t
        .parse()
        .map_err(|_| refused(platform, "the signature timestamp t= is not Unix seconds"))?;
    if candidates.is_empty() {
        return Err(refused(
            platform,
            "the signature header has no v1= signature",
        ));
    }
    fresh(platform, ts, now)?;
    let signed: [&[u8]; 3] = [t.as_bytes(), b".", body];
    let expected = mac::<HmacSha256>(secret, &signed)?;
    for candidate in candidates {
        if let Ok(sig) = decode_hex(platform, candidate) {
            if expected.clone().verify_slice(&sig).is_ok() {
                return Ok(());
            }
        }
    }
    Err(refused(platform, "no v1 signature matches the body"))
}

fn fresh(platform: &str, ts: i64, now: i64) -> Result<()> {
    if now.saturating_sub(ts).abs() > TOLERANCE_SECS {
        return Err(refused(
            platform,
            &format!(
                "the signature timestamp is more than {} minutes from the server's clock",
                TOLERANCE_SECS / 60
            ),
        ));
    }
    Ok(())
}

/// HMAC of the concatenation of `parts`.
fn mac<M: Mac + hmac::digest::KeyInit>(secret: &[u8], parts: &[&[u8]]) -> Result<M> {
    let mut m = <M as Mac>::new_from_slice(secret)
        .map_err(|e| Error::internal(format!("HMAC key: {e}")))?;
    for p in parts {
        m.update(p);
    }
    Ok(m)
}

fn check<M: Mac>(platform: &str, expected: M, sig: &[u8]) -> Result<()> {
    expected
        .verify_slice(sig)
        .map_err(|_| refused(platform, "the signature does not match the body"))
}

fn decode_hex(platform: &str, text: &str) -> Result<Vec<u8>> {
    crate::plumbing::secrets::decode_hex(text)
        .ok_or_else(|| refused(platform, "the signature is not hex"))
}

fn decode_base64(platform: &str, text: &str) -> Result<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|_| refused(platform, "the signature is not base64"))
}

/// HubSpot v3 signs the request URI with these escapes decoded (their documentation's table).
fn hubspot_uri(url: &str) -> String {
    const DECODED: [(&str, &str); 12] = [
        ("%3A", ":"),
        ("%2F", "/"),
        ("%3F", "?"),
        ("%40", "@"),
        ("%21", "!"),
        ("%24", "$"),
        ("%27", "'"),
        ("%28", "("),
        ("%29", ")"),
        ("%2A", "*"),
        ("%2C", ","),
        ("%3B", ";"),
    ];
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    'scan: while !rest.is_empty() {
        if rest.starts_with('%') {
            for (escaped, plain) in DECODED {
                if rest
                    .get(..3)
                    .is_some_and(|head| head.eq_ignore_ascii_case(escaped))
                {
                    out.push_str(plain);
                    rest = &rest[3..];
                    continue 'scan;
                }
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"whsec_test_secret_0123456789";
    const BODY: &[u8] = br#"{"id":"evt_1","type":"customer.created"}"#;

    fn now() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_767_225_600).expect("valid")
    }

    fn hex_mac256(parts: &[&[u8]]) -> String {
        crate::plumbing::ids::hex(
            &mac::<HmacSha256>(SECRET, parts)
                .expect("mac")
                .finalize()
                .into_bytes(),
        )
    }

    fn delivery<'a>(headers: &'a HashMap<String, String>, body: &'a [u8]) -> Delivery<'a> {
        Delivery {
            method: "POST",
            url: "https://example.com/api/webhooks/x?token=whk_1",
            headers,
            body,
        }
    }

    fn headers(pairs: &[(&str, String)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    fn code(r: Result<()>) -> Option<Code> {
        r.err().map(|e| e.code)
    }

    #[test]
    fn replays_share_a_fingerprint_and_new_signatures_do_not() {
        let h1 = [(GENERIC_HEADER, "t=1,v1=aa")];
        let h2 = [(GENERIC_HEADER, "t=2,v1=bb")];
        let fp = |h: &[(&str, &str)], body: &[u8]| {
            let headers: HashMap<String, String> = h
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            replay_fingerprint("generic", &delivery(&headers, body))
        };
        assert_eq!(fp(&h1, b"{}"), fp(&h1, b"{}"));
        assert_ne!(fp(&h1, b"{}"), fp(&h2, b"{}"));
        assert_ne!(fp(&h1, b"{}"), fp(&h1, b"{ }"));
        assert_eq!(fp(&h1, b"{}").len(), 32);
    }

    #[test]
    fn stripe_accepts_a_valid_signature_among_several_and_refuses_the_rest() {
        let t = now().unix_timestamp().to_string();
        let good = hex_mac256(&[t.as_bytes(), b".", BODY]);
        let h = headers(&[(
            "stripe-signature",
            format!("t={t},v1={},v1={good},v0=abc", "00".repeat(32)),
        )]);
        assert_eq!(
            code(verify("stripe", SECRET, &delivery(&h, BODY), now())),
            None
        );
        // Tampered body, wrong secret, stale and future timestamps, missing parts.
        let tampered = br#"{"id":"evt_1","type":"customer.deleted"}"#;
        let bad = Some(Code::InvalidSignature);
        assert_eq!(
            code(verify("stripe", SECRET, &delivery(&h, tampered), now())),
            bad
        );
        assert_eq!(
            code(verify("stripe", b"other", &delivery(&h, BODY), now())),
            bad
        );
        let later = now() + time::Duration::seconds(TOLERANCE_SECS + 1);
        assert_eq!(
            code(verify("stripe", SECRET, &delivery(&h, BODY), later)),
            bad
        );
        let earlier = now() - time::Duration::seconds(TOLERANCE_SECS + 1);
        assert_eq!(
            code(verify("stripe", SECRET, &delivery(&h, BODY), earlier)),
            bad
        );
        let edge = now() + time::Duration::seconds(TOLERANCE_SECS);
        assert_eq!(
            code(verify("stripe", SECRET, &delivery(&h, BODY), edge)),
            None
        );
        for header in [format!("v1={good}"), format!("t={t}"), String::new()] {
            let h = headers(&[("stripe-signature", header)]);
            assert_eq!(
                code(verify("stripe", SECRET, &delivery(&h, BODY), now())),
                bad
            );
        }
    }

    #[test]
    fn generic_uses_the_stripe_format_under_its_own_header() {
        let t = now().unix_timestamp().to_string();
        let sig = hex_mac256(&[t.as_bytes(), b".", BODY]);
        let h = headers(&[(GENERIC_HEADER, format!("t={t},v1={sig}"))]);
        assert_eq!(
            code(verify("generic", SECRET, &delivery(&h, BODY), now())),
            None
        );
        let h = headers(&[("stripe-signature", format!("t={t},v1={sig}"))]);
        assert_eq!(
            code(verify("generic", SECRET, &delivery(&h, BODY), now())),
            Some(Code::InvalidSignature)
        );
    }

    #[test]
    fn shopify_and_segment_sign_the_body() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(
            mac::<HmacSha256>(SECRET, &[BODY])
                .expect("mac")
                .finalize()
                .into_bytes(),
        );
        let h = headers(&[("x-shopify-hmac-sha256", b64)]);
        assert_eq!(
            code(verify("shopify", SECRET, &delivery(&h, BODY), now())),
            None
        );
        assert!(verify("shopify", SECRET, &delivery(&h, b"{}"), now()).is_err());

        let sha1 = crate::plumbing::ids::hex(
            &mac::<HmacSha1>(SECRET, &[BODY])
                .expect("mac")
                .finalize()
                .into_bytes(),
        );
        let h = headers(&[("x-signature", sha1)]);
        assert_eq!(
            code(verify("segment", SECRET, &delivery(&h, BODY), now())),
            None
        );
        assert!(verify("segment", SECRET, &delivery(&h, b"{}"), now()).is_err());
        assert!(verify("segment", SECRET, &delivery(&HashMap::new(), BODY), now()).is_err());
    }

    #[test]
    fn hubspot_v3_signs_method_uri_body_and_timestamp() {
        let ms = (now().unix_timestamp() * 1000 + 123).to_string();
        let url = "https://example.com/api/webhooks/x?token=whk_1";
        let sig = base64::engine::general_purpose::STANDARD.encode(
            mac::<HmacSha256>(SECRET, &[b"POST", url.as_bytes(), BODY, ms.as_bytes()])
                .expect("mac")
                .finalize()
                .into_bytes(),
        );
        let h = headers(&[
            ("x-hubspot-signature-v3", sig),
            ("x-hubspot-request-timestamp", ms),
        ]);
        assert_eq!(
            code(verify("hubspot", SECRET, &delivery(&h, BODY), now())),
            None
        );
        let stale = now() + time::Duration::minutes(6);
        assert!(verify("hubspot", SECRET, &delivery(&h, BODY), stale).is_err());
        let mut other_url = delivery(&h, BODY);
        other_url.url = "https://example.com/api/webhooks/x?token=whk_2";
        assert!(verify("hubspot", SECRET, &other_url, now()).is_err());
    }

    #[test]
    fn hubspot_uri_decodes_only_the_listed_escapes() {
        assert_eq!(
            hubspot_uri("https://h/p%3Fa%3Ab%2c%20c%25?x=%40"),
            "https://h/p?a:b,%20c%25?x=@"
        );
        assert_eq!(hubspot_uri("https://h/é%"), "https://h/é%");
    }

    #[test]
    fn customerio_signs_version_timestamp_and_body() {
        let t = now().unix_timestamp().to_string();
        let sig = hex_mac256(&[b"v0:", t.as_bytes(), b":", BODY]);
        let h = headers(&[("x-cio-signature", sig), ("x-cio-timestamp", t)]);
        assert_eq!(
            code(verify("customerio", SECRET, &delivery(&h, BODY), now())),
            None
        );
        let stale = now() - time::Duration::minutes(6);
        assert!(verify("customerio", SECRET, &delivery(&h, BODY), stale).is_err());
        assert!(verify("customerio", SECRET, &delivery(&h, b"{}"), now()).is_err());
    }
}
