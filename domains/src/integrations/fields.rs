//! Reading an integration's PUT body field by field, and showing secrets masked: shared by
//! every kind's config.

use serde_json::{json, Map, Value as Json};

use svc_core::error::{Code, Error, Result};

const SECRET_CHARS: usize = 1024;
const PEM_BYTES: usize = 64 * 1024;

/// A secret as the API shows it: `••••` and, for secrets of 12 characters or more, the last
/// four (enough to tell two keys apart, too little to matter).
pub fn mask(secret: &str) -> String {
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() >= 12 {
        let tail: String = chars[chars.len() - 4..].iter().collect();
        format!("••••{tail}")
    } else {
        "••••".to_owned()
    }
}

/// A PUT body being read: an object whose every key is one of `allowed`.
pub(super) struct Body<'a> {
    obj: &'a Map<String, Json>,
}

impl<'a> Body<'a> {
    pub(super) fn new(body: &'a Json, allowed: &[&str]) -> Result<Body<'a>> {
        let obj = body
            .as_object()
            .ok_or_else(|| Error::invalid_input("the body must be a JSON object (the config)"))?;
        if let Some(unknown) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(Error::new(
                Code::InvalidInput,
                format!(
                    "{unknown}: unknown field; the fields are {}",
                    allowed.join(", ")
                ),
            )
            .with_details(json!({"field": unknown})));
        }
        Ok(Body { obj })
    }

    /// A trimmed string field; absent, `null` and empty read as `None`. Never echoes the value
    /// of a wrongly typed field (it might be a secret).
    pub(super) fn text(&self, key: &str, max: usize) -> Result<Option<String>> {
        match self.obj.get(key) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::String(s)) => {
                let s = s.trim();
                if s.chars().count() > max {
                    return Err(field_error(key, &format!("longer than {max} characters")));
                }
                if s.chars().any(char::is_control) {
                    return Err(field_error(key, "must not contain control characters"));
                }
                Ok((!s.is_empty()).then(|| s.to_owned()))
            }
            Some(_) => Err(field_error(key, "must be a string")),
        }
    }

    pub(super) fn required(&self, key: &str, max: usize) -> Result<String> {
        self.text(key, max)?
            .ok_or_else(|| field_error(key, "required"))
    }

    /// An optional secret: absent or its masked form keeps `prev`, `null` or `""` clears it.
    pub(super) fn optional_secret(&self, key: &str, prev: Option<&str>) -> Result<Option<String>> {
        match self.obj.get(key) {
            None => Ok(prev.map(str::to_owned)),
            Some(Json::String(s)) if prev.is_some_and(|p| *s == mask(p)) => {
                Ok(prev.map(str::to_owned))
            }
            Some(_) => self.secret_value(key),
        }
    }

    /// A required secret: absent, `null` or its masked form keeps `prev`; required otherwise.
    pub(super) fn required_secret(&self, key: &str, prev: Option<&str>) -> Result<String> {
        let given = match self.obj.get(key) {
            None | Some(Json::Null) => None,
            Some(Json::String(s)) if prev.is_some_and(|p| *s == mask(p)) => None,
            Some(_) => self.secret_value(key)?,
        };
        given
            .or_else(|| prev.map(str::to_owned))
            .ok_or_else(|| field_error(key, "required"))
    }

    /// Secrets are taken as given (no trimming: a password may end in a space).
    pub(super) fn secret_value(&self, key: &str) -> Result<Option<String>> {
        match self.obj.get(key) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::String(s)) if s.is_empty() => Ok(None),
            Some(Json::String(s)) => {
                if s.chars().count() > SECRET_CHARS {
                    return Err(field_error(
                        key,
                        &format!("longer than {SECRET_CHARS} characters"),
                    ));
                }
                if s.chars().any(char::is_control) {
                    return Err(field_error(key, "must not contain control characters"));
                }
                Ok(Some(s.clone()))
            }
            Some(_) => Err(field_error(key, "must be a string")),
        }
    }

    pub(super) fn port(&self, key: &str) -> Result<u16> {
        match self.obj.get(key) {
            None | Some(Json::Null) => Err(field_error(key, "required")),
            Some(v) => v
                .as_u64()
                .and_then(|n| u16::try_from(n).ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| Error::invalid_field(key, &v.to_string(), "not a port (1-65535)")),
        }
    }

    /// PEM certificates, checked to parse.
    pub(super) fn pem(&self, key: &str) -> Result<Option<String>> {
        let pem = match self.obj.get(key) {
            None | Some(Json::Null) => return Ok(None),
            Some(Json::String(s)) if s.trim().is_empty() => return Ok(None),
            Some(Json::String(s)) => s.trim().to_owned(),
            Some(_) => return Err(field_error(key, "must be a string")),
        };
        if pem.len() > PEM_BYTES {
            return Err(field_error(key, &format!("larger than {PEM_BYTES} bytes")));
        }
        if !pem.contains("-----BEGIN CERTIFICATE-----") {
            return Err(field_error(
                key,
                "no PEM certificate (-----BEGIN CERTIFICATE-----)",
            ));
        }
        lettre::transport::smtp::client::Certificate::from_pem(pem.as_bytes())
            .map_err(|e| field_error(key, &format!("not a valid certificate: {e}")))?;
        Ok(Some(pem))
    }
}

/// 400 naming the field, without its value.
pub(super) fn field_error(field: &str, why: &str) -> Error {
    Error::new(Code::InvalidInput, format!("{field}: {why}")).with_details(json!({"field": field}))
}

/// An `http://` or `https://` URL without credentials, query or fragment; the trailing slash
/// is dropped so paths can be appended.
pub(super) fn http_url(field: &str, value: &str) -> Result<String> {
    let url = reqwest::Url::parse(value)
        .map_err(|e| Error::invalid_field(field, value, &format!("not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(Error::invalid_field(field, value, "not an http(s) URL"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        // Credentials belong in their own (sealed, masked) fields, never in a shown URL.
        return Err(field_error(field, "must not contain credentials"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(Error::invalid_field(
            field,
            value,
            "must not have a query or fragment",
        ));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}
