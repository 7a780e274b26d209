//! A Twilio-compatible voice REST API: place a call that says a script, check the credentials,
//! and verify the signature of the provider's status callbacks.
//!
//! - Calls: `POST {base_url}/2010-04-01/Accounts/{AccountSid}/Calls.json`, form-encoded `To`,
//!   `From`, `Twiml` (`<Response><Say>…</Say></Response>`), `StatusCallback`,
//!   `StatusCallbackEvent=completed`, `StatusCallbackMethod=POST`; HTTP Basic auth
//!   `AccountSid:AuthToken`; 201 with the call resource (`sid`, `status`).
//! - Check: `GET {base_url}/2010-04-01/Accounts/{AccountSid}.json` with the same auth.
//! - Callbacks carry `X-Twilio-Signature`: base64 HMAC-SHA1, keyed with the auth token, of the
//!   full callback URL followed by every POST parameter's name and value, sorted by name.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha1::Sha1;

use super::config::VoiceConfig;
use super::http::{error_message, HttpClient};
use super::provider_error::ProviderError;

/// Twilio's API version path segment.
const API_VERSION: &str = "2010-04-01";

/// A call the provider accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacedCall {
    /// The provider's call id (`CA…` at Twilio).
    pub sid: String,
    /// Its state when created (`queued`, `initiated`, …).
    pub status: String,
}

#[derive(Deserialize)]
struct CallResource {
    sid: String,
    #[serde(default)]
    status: Option<String>,
}

/// `{base_url}/2010-04-01/Accounts/{sid}` followed by `tail` segments.
fn account_url(cfg: &VoiceConfig, tail: &[&str]) -> Result<reqwest::Url, ProviderError> {
    let mut url = reqwest::Url::parse(&cfg.base_url)
        .map_err(|e| ProviderError::new(format!("voice base_url: {e}")))?;
    {
        let mut segments = url
            .path_segments_mut()
            .map_err(|()| ProviderError::new("voice base_url cannot take a path"))?;
        segments.pop_if_empty().extend([API_VERSION, "Accounts"]);
        segments.extend(tail);
    }
    Ok(url)
}

/// Places a call to `to` (E.164) that says `script`; the provider reports the outcome to
/// `status_callback`.
pub async fn place_call(
    http: &HttpClient,
    cfg: &VoiceConfig,
    to: &str,
    script: &str,
    status_callback: &str,
) -> Result<PlacedCall, ProviderError> {
    let url = account_url(cfg, &[&cfg.account_sid, "Calls.json"])?;
    let twiml = twiml_say(script);
    let form = [
        ("To", to),
        ("From", cfg.from_number.as_str()),
        ("Twiml", twiml.as_str()),
        ("StatusCallback", status_callback),
        ("StatusCallbackEvent", "completed"),
        ("StatusCallbackMethod", "POST"),
    ];
    let request = http
        .client()
        .post(url)
        .basic_auth(&cfg.account_sid, Some(&cfg.auth_token))
        .form(&form);
    let result = async {
        let resp = http.send(request).await?;
        if !resp.status().is_success() {
            return Err(error_message(resp, "the voice provider refused the call").await);
        }
        let status = resp.status().as_u16();
        let call: CallResource = resp.json().await.map_err(|e| {
            ProviderError::with_status(
                format!("the voice provider's answer is not a call resource: {e}"),
                status,
            )
        })?;
        Ok::<_, ProviderError>(PlacedCall {
            sid: call.sid,
            status: call.status.unwrap_or_else(|| "queued".to_owned()),
        })
    }
    .await;
    result.map_err(|e| e.scrubbed(&[&cfg.auth_token]))
}

/// A live check: fetches the account resource with the configured credentials.
pub async fn check(http: &HttpClient, cfg: &VoiceConfig) -> Result<(), ProviderError> {
    let url = account_url(cfg, &[&format!("{}.json", cfg.account_sid)])?;
    let request = http
        .client()
        .get(url)
        .basic_auth(&cfg.account_sid, Some(&cfg.auth_token));
    let result = async {
        let resp = http.send(request).await?;
        if resp.status().is_success() {
            Ok::<_, ProviderError>(())
        } else {
            Err(error_message(resp, "the voice provider refused the account check").await)
        }
    }
    .await;
    result.map_err(|e| e.scrubbed(&[&cfg.auth_token]))
}

/// The TwiML that says `script` once.
pub fn twiml_say(script: &str) -> String {
    format!("<Response><Say>{}</Say></Response>", xml_escape(script))
}

/// Escapes XML's five special characters and drops characters XML 1.0 cannot carry (control
/// characters other than tab, newline and carriage return), so no script can break out of
/// `<Say>`.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// The signature the provider sends for a POST to `full_url` with `params` (base64).
pub fn sign(auth_token: &str, full_url: &str, params: &[(String, String)]) -> String {
    base64::engine::general_purpose::STANDARD
        .encode(mac(auth_token, full_url, params).finalize().into_bytes())
}

fn mac(auth_token: &str, full_url: &str, params: &[(String, String)]) -> Hmac<Sha1> {
    // HMAC takes keys of any length; the error arm cannot happen.
    let mut mac = <Hmac<Sha1> as Mac>::new_from_slice(auth_token.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(full_url.as_bytes());
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    // By name; a repeated name keeps its values in value order, as Twilio's libraries do.
    sorted.sort();
    for (name, value) in sorted {
        mac.update(name.as_bytes());
        mac.update(value.as_bytes());
    }
    mac
}

/// Whether `signature_header_b64` (the `X-Twilio-Signature` header) is the provider's signature
/// of a POST to `full_url` (scheme, host, path and query exactly as the provider called it)
/// with form `params`. Compared in constant time.
pub fn verify_signature(
    auth_token: &str,
    full_url: &str,
    params: &[(String, String)],
    signature_header_b64: &str,
) -> bool {
    let Ok(given) = base64::engine::general_purpose::STANDARD.decode(signature_header_b64.trim())
    else {
        return false;
    };
    mac(auth_token, full_url, params)
        .verify_slice(&given)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// The example of Twilio's "Validating requests" documentation.
    const DOC_URL: &str = "https://mycompany.com/myapp.php?foo=1&bar=2";
    const DOC_TOKEN: &str = "12345";
    const DOC_SIGNATURE: &str = "0/KCTR6DLpKmkAf8muzZqo1nDgQ=";

    fn doc_params() -> Vec<(String, String)> {
        pairs(&[
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+12349013030"),
            ("Digits", "1234"),
            ("From", "+12349013030"),
            ("To", "+18005551212"),
        ])
    }

    #[test]
    fn signature_matches_the_documented_example() {
        let mut params = doc_params();
        params.reverse(); // order of arrival does not matter
        assert_eq!(sign(DOC_TOKEN, DOC_URL, &params), DOC_SIGNATURE);
        assert!(verify_signature(DOC_TOKEN, DOC_URL, &params, DOC_SIGNATURE));
    }

    #[test]
    fn any_change_breaks_the_signature() {
        let params = doc_params();
        assert!(!verify_signature("54321", DOC_URL, &params, DOC_SIGNATURE));
        assert!(!verify_signature(
            DOC_TOKEN,
            "https://mycompany.com/myapp.php?foo=1&bar=3",
            &params,
            DOC_SIGNATURE
        ));
        let mut altered = params.clone();
        altered[2].1 = "1235".to_owned();
        assert!(!verify_signature(
            DOC_TOKEN,
            DOC_URL,
            &altered,
            DOC_SIGNATURE
        ));
        let mut extra = params.clone();
        extra.push(("CallStatus".to_owned(), "completed".to_owned()));
        assert!(!verify_signature(DOC_TOKEN, DOC_URL, &extra, DOC_SIGNATURE));
        assert!(!verify_signature(DOC_TOKEN, DOC_URL, &params, ""));
        assert!(!verify_signature(
            DOC_TOKEN,
            DOC_URL,
            &params,
            "not base64!"
        ));
        assert!(!verify_signature(
            DOC_TOKEN,
            DOC_URL,
            &params,
            "0/KCTR6DLpKmkAf8muzZqo1nDgQ"
        ));
    }

    #[test]
    fn twiml_escapes_the_script() {
        assert_eq!(
            twiml_say("Hi <b>Ann</b> & \"Bob\" it's\u{0007} 5 > 4"),
            "<Response><Say>Hi &lt;b&gt;Ann&lt;/b&gt; &amp; &quot;Bob&quot; it&apos;s 5 &gt; 4</Say></Response>"
        );
        assert_eq!(
            twiml_say("</Say><Dial>+15550000000</Dial><Say>"),
            "<Response><Say>&lt;/Say&gt;&lt;Dial&gt;+15550000000&lt;/Dial&gt;&lt;Say&gt;</Say></Response>"
        );
        assert_eq!(xml_escape("line\nnext\ttab"), "line\nnext\ttab");
    }

    #[test]
    fn account_urls_append_to_the_base() {
        let cfg = VoiceConfig {
            base_url: "http://127.0.0.1:9/twilio".to_owned(),
            account_sid: "AC1".to_owned(),
            auth_token: "t".to_owned(),
            from_number: "+14155550100".to_owned(),
        };
        assert_eq!(
            account_url(&cfg, &["AC1", "Calls.json"])
                .expect("url")
                .as_str(),
            "http://127.0.0.1:9/twilio/2010-04-01/Accounts/AC1/Calls.json"
        );
        let root = VoiceConfig {
            base_url: "https://api.twilio.com".to_owned(),
            ..cfg
        };
        assert_eq!(
            account_url(&root, &["AC1.json"]).expect("url").as_str(),
            "https://api.twilio.com/2010-04-01/Accounts/AC1.json"
        );
    }
}
