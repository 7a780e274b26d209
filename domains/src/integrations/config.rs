//! The config of each integration kind: read field by field from a PUT body (400 naming the
//! field), kept whole in the sealed record, and shown masked.
//!
//! PUT rules: the body is the whole config; unknown fields are 400 (a misspelt `pasword` must
//! not pass silently); a secret (`password`, `auth_token`, `api_key`) that is absent, or equal
//! to its masked form, keeps the stored value, so a user can change the host without retyping
//! the password; `null` clears an optional secret.

use std::str::FromStr;

use lettre::message::Mailbox;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};

use svc_core::error::{Code, Error, Result};
use svc_core::integration_kind::Kind;
use svc_core::wire_enum;

use super::fields::{http_url, mask, Body};
use super::llm::LlmConfig;

/// Twilio's REST API host, the default `base_url` of the voice integration.
pub const DEFAULT_VOICE_BASE_URL: &str = "https://api.twilio.com";

const HOST_CHARS: usize = 253;
const NAME_CHARS: usize = 320;
const URL_CHARS: usize = 2048;
const ID_CHARS: usize = 128;

wire_enum!(
    /// How the SMTP connection is protected: `tls` is TLS from the first byte (port 465),
    /// `starttls` upgrades a plain connection and refuses to go on without TLS, `none` is
    /// plain text (a relay on a trusted network).
    SmtpSecurity {
        None = "none",
        Starttls = "starttls",
        Tls = "tls",
    }
);

wire_enum!(
    /// Customer.io's data centre: the Track API host differs (`track` / `track-eu`).
    Region { Us = "us", Eu = "eu" }
);

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SmtpConfig {
    pub host: String,
    pub port: u16,
    /// Default: `tls` on port 465, `starttls` otherwise.
    pub security: SmtpSecurity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Secret: never returned (masked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// The sender: `addr@example.com` or `Name <addr@example.com>`.
    pub from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    /// PEM certificates that are the only trusted roots for this relay's TLS (a private relay
    /// with its own CA); the public web roots otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_cert_pem: Option<String>,
}

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VoiceConfig {
    /// The Twilio-compatible REST API (default `https://api.twilio.com`).
    pub base_url: String,
    pub account_sid: String,
    /// Secret: never returned (masked).
    pub auth_token: String,
    /// The caller id, E.164 (`+14155550100`).
    pub from_number: String,
}

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CustomerioConfig {
    pub site_id: String,
    /// Secret: never returned (masked). The Track API key.
    pub api_key: String,
    /// Default `us`.
    pub region: Region,
    /// Overrides the region's Track API host (a proxy, or a test server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

/// One integration's config.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Config {
    Smtp(SmtpConfig),
    Voice(VoiceConfig),
    Customerio(CustomerioConfig),
    Llm(LlmConfig),
}

// Debug by hand: configs reach logs through `?`, secrets must not.
impl std::fmt::Debug for SmtpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpConfig")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("from", &self.from)
            .field("reply_to", &self.reply_to)
            .field("ca_cert_pem", &self.ca_cert_pem.as_ref().map(String::len))
            .finish()
    }
}

impl std::fmt::Debug for VoiceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VoiceConfig")
            .field("base_url", &self.base_url)
            .field("account_sid", &self.account_sid)
            .field("auth_token", &"<redacted>")
            .field("from_number", &self.from_number)
            .finish()
    }
}

impl std::fmt::Debug for CustomerioConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomerioConfig")
            .field("site_id", &self.site_id)
            .field("api_key", &"<redacted>")
            .field("region", &self.region)
            .field("base_url", &self.base_url)
            .finish()
    }
}

impl Config {
    pub fn kind(&self) -> Kind {
        match self {
            Config::Smtp(_) => Kind::Smtp,
            Config::Voice(_) => Kind::Voice,
            Config::Customerio(_) => Kind::Customerio,
            Config::Llm(_) => Kind::Llm,
        }
    }

    /// Reads a PUT body of `kind`; `previous` (the stored config) supplies omitted secrets.
    pub fn from_body(kind: Kind, body: &Json, previous: Option<&Config>) -> Result<Config> {
        match kind {
            Kind::Smtp => {
                let prev = match previous {
                    Some(Config::Smtp(c)) => Some(c),
                    _ => None,
                };
                SmtpConfig::from_body(body, prev).map(Config::Smtp)
            }
            Kind::Voice => {
                let prev = match previous {
                    Some(Config::Voice(c)) => Some(c),
                    _ => None,
                };
                VoiceConfig::from_body(body, prev).map(Config::Voice)
            }
            Kind::Customerio => {
                let prev = match previous {
                    Some(Config::Customerio(c)) => Some(c),
                    _ => None,
                };
                CustomerioConfig::from_body(body, prev).map(Config::Customerio)
            }
            Kind::Llm => {
                let prev = match previous {
                    Some(Config::Llm(c)) => Some(c),
                    _ => None,
                };
                LlmConfig::from_body(body, prev).map(Config::Llm)
            }
        }
    }

    /// The config as the API shows it: every field, secrets masked.
    pub fn masked(&self) -> Json {
        let (mut value, secret) = match self {
            Config::Smtp(c) => (json!(c), "password"),
            Config::Voice(c) => (json!(c), "auth_token"),
            Config::Customerio(c) => (json!(c), "api_key"),
            Config::Llm(c) => (json!(c), "api_key"),
        };
        if let Some(obj) = value.as_object_mut() {
            if let Some(Json::String(s)) = obj.get(secret) {
                let masked = mask(s);
                obj.insert(secret.to_owned(), Json::String(masked));
            }
        }
        value
    }

    /// The host this config connects to, and the field it is set by (for the destination rule
    /// of `super::destinations`).
    pub fn destination(&self) -> (&'static str, String) {
        let url_host = |u: &str| {
            reqwest::Url::parse(u)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_default()
        };
        match self {
            Config::Smtp(c) => ("host", c.host.clone()),
            Config::Voice(c) => ("base_url", url_host(&c.base_url)),
            Config::Customerio(c) => ("base_url", url_host(c.host())),
            Config::Llm(c) => ("base_url", url_host(&c.base_url)),
        }
    }

    /// The secret values of this config (for scrubbing provider messages).
    pub fn secrets(&self) -> Vec<&str> {
        match self {
            Config::Smtp(c) => c.password.as_deref().into_iter().collect(),
            Config::Voice(c) => vec![c.auth_token.as_str()],
            Config::Customerio(c) => vec![c.api_key.as_str()],
            Config::Llm(c) => c.api_key.as_deref().into_iter().collect(),
        }
    }
}

/// `+` and 8 to 15 digits, no leading zero (ITU-T E.164).
pub fn is_e164(s: &str) -> bool {
    let Some(digits) = s.strip_prefix('+') else {
        return false;
    };
    (8..=15).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0')
}

impl SmtpConfig {
    fn from_body(body: &Json, prev: Option<&SmtpConfig>) -> Result<SmtpConfig> {
        let b = Body::new(
            body,
            &[
                "host",
                "port",
                "security",
                "username",
                "password",
                "from",
                "reply_to",
                "ca_cert_pem",
            ],
        )?;
        let host = b.required("host", HOST_CHARS)?;
        if !is_host(&host) {
            return Err(Error::invalid_field(
                "host",
                &host,
                "not a host name or IP address",
            ));
        }
        let port = b.port("port")?;
        let security = match b.text("security", 16)? {
            None if port == 465 => SmtpSecurity::Tls,
            None => SmtpSecurity::Starttls,
            Some(s) => SmtpSecurity::parse(&s).ok_or_else(|| {
                Error::invalid_field(
                    "security",
                    &s,
                    &format!("expected one of {}", SmtpSecurity::choices()),
                )
            })?,
        };
        let username = b.text("username", NAME_CHARS)?;
        let password = b.optional_secret("password", prev.and_then(|p| p.password.as_deref()))?;
        if password.is_some() && username.is_none() {
            return Err(Error::new(
                Code::InvalidInput,
                "username: required when a password is set",
            )
            .with_details(json!({"field": "username"})));
        }
        let from = b.required("from", NAME_CHARS)?;
        mailbox("from", &from)?;
        let reply_to = b.text("reply_to", NAME_CHARS)?;
        if let Some(r) = &reply_to {
            mailbox("reply_to", r)?;
        }
        let ca_cert_pem = b.pem("ca_cert_pem")?;
        Ok(SmtpConfig {
            host,
            port,
            security,
            username,
            password,
            from,
            reply_to,
            ca_cert_pem,
        })
    }

    /// The sender mailbox (validated on PUT).
    pub fn from_mailbox(&self) -> Result<Mailbox, String> {
        Mailbox::from_str(&self.from).map_err(|e| format!("from: {e}"))
    }
}

impl VoiceConfig {
    fn from_body(body: &Json, prev: Option<&VoiceConfig>) -> Result<VoiceConfig> {
        let b = Body::new(
            body,
            &["base_url", "account_sid", "auth_token", "from_number"],
        )?;
        let base_url = match b.text("base_url", URL_CHARS)? {
            Some(u) => http_url("base_url", &u)?,
            None => DEFAULT_VOICE_BASE_URL.to_owned(),
        };
        let account_sid = b.required("account_sid", ID_CHARS)?;
        if !account_sid
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        {
            return Err(Error::invalid_field(
                "account_sid",
                &account_sid,
                "letters, digits, '_' and '-' only",
            ));
        }
        let auth_token = b.required_secret("auth_token", prev.map(|p| p.auth_token.as_str()))?;
        let from_number = b.required("from_number", 32)?;
        if !is_e164(&from_number) {
            return Err(Error::invalid_field(
                "from_number",
                &from_number,
                "not an E.164 number (+ and 8 to 15 digits)",
            ));
        }
        Ok(VoiceConfig {
            base_url,
            account_sid,
            auth_token,
            from_number,
        })
    }
}

impl CustomerioConfig {
    fn from_body(body: &Json, prev: Option<&CustomerioConfig>) -> Result<CustomerioConfig> {
        let b = Body::new(body, &["site_id", "api_key", "region", "base_url"])?;
        let site_id = b.required("site_id", ID_CHARS)?;
        if site_id.contains(':') {
            // Basic auth is `site_id:api_key`: a colon would shift the split.
            return Err(Error::invalid_field(
                "site_id",
                &site_id,
                "must not contain ':'",
            ));
        }
        let api_key = b.required_secret("api_key", prev.map(|p| p.api_key.as_str()))?;
        let region = match b.text("region", 8)? {
            None => Region::Us,
            Some(r) => Region::parse(&r).ok_or_else(|| {
                Error::invalid_field(
                    "region",
                    &r,
                    &format!("expected one of {}", Region::choices()),
                )
            })?,
        };
        let base_url = match b.text("base_url", URL_CHARS)? {
            Some(u) => Some(http_url("base_url", &u)?),
            None => None,
        };
        Ok(CustomerioConfig {
            site_id,
            api_key,
            region,
            base_url,
        })
    }

    /// The Track API host: `base_url` when set, else the region's.
    pub fn host(&self) -> &str {
        match (&self.base_url, self.region) {
            (Some(u), _) => u,
            (None, Region::Us) => "https://track.customer.io",
            (None, Region::Eu) => "https://track-eu.customer.io",
        }
    }
}

fn mailbox(field: &str, value: &str) -> Result<()> {
    Mailbox::from_str(value).map(|_| ()).map_err(|_| {
        Error::invalid_field(
            field,
            value,
            "not an email address (addr@example.com or Name <addr@example.com>)",
        )
    })
}

/// A host name or an IP address literal (no scheme, port or path).
fn is_host(s: &str) -> bool {
    if s.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    !s.starts_with(['-', '.'])
        && !s.ends_with('-')
        && !s.contains("..")
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.' || c == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn smtp(body: Json, prev: Option<&Config>) -> Result<SmtpConfig> {
        match Config::from_body(Kind::Smtp, &body, prev)? {
            Config::Smtp(c) => Ok(c),
            other => panic!("{other:?}"),
        }
    }

    fn smtp_body() -> Json {
        json!({"host": "smtp.example.com", "port": 587, "username": "mailer",
               "password": "correct horse battery", "from": "Acme <hi@acme.io>"})
    }

    #[test]
    fn smtp_defaults_and_validation() {
        let c = smtp(smtp_body(), None).expect("valid");
        assert_eq!(
            c.security,
            SmtpSecurity::Starttls,
            "587 defaults to starttls"
        );
        let mut tls = smtp_body();
        tls["port"] = json!(465);
        assert_eq!(smtp(tls, None).expect("valid").security, SmtpSecurity::Tls);

        let cases: [(&str, Json, &str); 9] = [
            ("host", json!("smtp://x.io"), "host"),
            ("host", json!(""), "host: required"),
            ("port", json!(0), "port"),
            ("port", json!(70000), "port"),
            ("port", json!("587"), "port"),
            ("security", json!("ssl"), "security"),
            ("from", json!("not an address"), "from"),
            ("reply_to", json!("nope@"), "reply_to"),
            ("ca_cert_pem", json!("hello"), "ca_cert_pem"),
        ];
        for (key, value, expect) in cases {
            let mut body = smtp_body();
            body[key] = value;
            let e = smtp(body, None).expect_err(key);
            assert_eq!(e.code, Code::InvalidInput);
            assert!(e.message.starts_with(expect), "{key}: {}", e.message);
        }
        let mut body = smtp_body();
        body["pasword"] = json!("x");
        let e = smtp(body, None).expect_err("unknown field");
        assert!(
            e.message.starts_with("pasword: unknown field"),
            "{}",
            e.message
        );
        let e = smtp(
            json!({"host": "h", "port": 25, "password": "p", "from": "a@b.io"}),
            None,
        )
        .expect_err("password without username");
        assert!(e.message.starts_with("username"), "{}", e.message);
        assert!(Config::from_body(Kind::Smtp, &json!([1]), None).is_err());
    }

    #[test]
    fn wrongly_typed_secrets_are_not_echoed() {
        let mut body = smtp_body();
        body["password"] = json!(12345678);
        let e = smtp(body, None).expect_err("number password");
        assert_eq!(e.message, "password: must be a string");
        assert!(!e.to_string().contains("12345678"));
    }

    #[test]
    fn omitted_or_masked_secrets_keep_the_stored_value_and_null_clears() {
        let first = Config::Smtp(smtp(smtp_body(), None).expect("valid"));
        let update = json!({"host": "relay.example.com", "port": 25, "username": "mailer",
                            "from": "hi@acme.io"});
        let c = smtp(update.clone(), Some(&first)).expect("update");
        assert_eq!(c.host, "relay.example.com");
        assert_eq!(c.password.as_deref(), Some("correct horse battery"));

        let mut echoed = update.clone();
        echoed["password"] = first.masked()["password"].clone();
        assert_eq!(
            smtp(echoed, Some(&first))
                .expect("echo")
                .password
                .as_deref(),
            Some("correct horse battery")
        );
        let mut changed = update.clone();
        changed["password"] = json!("new password!");
        assert_eq!(
            smtp(changed, Some(&first))
                .expect("new")
                .password
                .as_deref(),
            Some("new password!")
        );
        let mut cleared = update;
        cleared["password"] = Json::Null;
        cleared["username"] = Json::Null;
        assert_eq!(smtp(cleared, Some(&first)).expect("cleared").password, None);

        // Required secrets: absent keeps, absent with nothing stored is 400.
        let voice = json!({"account_sid": "AC123", "auth_token": "tok_0123456789abcdef",
                           "from_number": "+14155550100"});
        let stored = Config::from_body(Kind::Voice, &voice, None).expect("voice");
        let again = json!({"account_sid": "AC123", "from_number": "+14155550101"});
        match Config::from_body(Kind::Voice, &again, Some(&stored)).expect("keeps") {
            Config::Voice(v) => {
                assert_eq!(v.auth_token, "tok_0123456789abcdef");
                assert_eq!(v.base_url, DEFAULT_VOICE_BASE_URL);
            }
            other => panic!("{other:?}"),
        }
        let e = Config::from_body(Kind::Voice, &again, None).expect_err("no token");
        assert_eq!(e.message, "auth_token: required");
    }

    #[test]
    fn voice_and_customerio_validation() {
        let bad_voice = [
            json!({"account_sid": "AC/1", "auth_token": "t", "from_number": "+14155550100"}),
            json!({"account_sid": "AC1", "auth_token": "t", "from_number": "4155550100"}),
            json!({"account_sid": "AC1", "auth_token": "t", "from_number": "+14155550100",
                   "base_url": "ftp://x.io"}),
            json!({"account_sid": "AC1", "auth_token": "t", "from_number": "+14155550100",
                   "base_url": "https://user:pw@x.io"}),
        ];
        for (i, body) in bad_voice.iter().enumerate() {
            assert!(
                Config::from_body(Kind::Voice, body, None).is_err(),
                "case {i}"
            );
        }
        let e = Config::from_body(
            Kind::Voice,
            &json!({"account_sid": "AC1", "auth_token": "t", "from_number": "+1415",
                    "base_url": "https://user:pw@x.io"}),
            None,
        )
        .expect_err("credentials in url");
        assert!(!e.to_string().contains("pw@"), "{e}");

        let cio = Config::from_body(
            Kind::Customerio,
            &json!({"site_id": "site1", "api_key": "k", "region": "eu",
                    "base_url": "http://127.0.0.1:9/"}),
            None,
        )
        .expect("valid");
        match &cio {
            Config::Customerio(c) => {
                assert_eq!(c.host(), "http://127.0.0.1:9");
                let eu = CustomerioConfig {
                    base_url: None,
                    ..c.clone()
                };
                assert_eq!(eu.host(), "https://track-eu.customer.io");
                let us = CustomerioConfig {
                    region: Region::Us,
                    ..eu
                };
                assert_eq!(us.host(), "https://track.customer.io");
            }
            other => panic!("{other:?}"),
        }
        for body in [
            json!({"site_id": "a:b", "api_key": "k"}),
            json!({"site_id": "a", "api_key": "k", "region": "asia"}),
            json!({"site_id": "a"}),
        ] {
            assert!(
                Config::from_body(Kind::Customerio, &body, None).is_err(),
                "{body}"
            );
        }
    }

    #[test]
    fn masking_shows_at_most_the_last_four_of_long_secrets() {
        assert_eq!(mask("sk_live_0123456789"), "••••6789");
        assert_eq!(mask("short"), "••••");
        assert_eq!(mask("elevenchars"), "••••");
        let c = Config::from_body(
            Kind::Customerio,
            &json!({"site_id": "site1", "api_key": "cio_key_abcdefgh1234"}),
            None,
        )
        .expect("valid");
        let shown = c.masked();
        assert_eq!(shown["api_key"], "••••1234");
        assert_eq!(shown["site_id"], "site1");
        assert_eq!(shown["region"], "us");
        assert!(!shown.to_string().contains("abcdefgh"));
        assert!(!format!("{c:?}").contains("cio_key"), "{c:?}");
        assert_eq!(c.secrets(), ["cio_key_abcdefgh1234"]);
    }

    #[test]
    fn e164() {
        assert!(is_e164("+14155550100"));
        assert!(is_e164("+442071838750"));
        for bad in [
            "14155550100",
            "+0123456789",
            "+1415",
            "+1415555010012345",
            "+1 415 555",
        ] {
            assert!(!is_e164(bad), "{bad}");
        }
    }
}
