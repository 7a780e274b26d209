//! The browser session of the dashboard: the API's JWT in an `HttpOnly; SameSite=Strict` cookie,
//! and the CSRF token every state-changing request must carry.
//!
//! The cookie is resolved exactly like a Bearer JWT (`auth::resolve`), so a session is valid
//! for as long as the API would accept its token. The JSON API never reads the cookie.
//!
//! CSRF: a synchronizer token derived from the session, `HMAC-SHA256(key = the session's JWT,
//! "svc dashboard csrf v1")`, base64url. Only a holder of the (HttpOnly, so script-invisible)
//! cookie can derive it; it is stateless and survives restarts. Pages carry it in a hidden
//! `csrf` form field and in htmx's `hx-headers` (`X-CSRF-Token`); [`super::guard::require_session`] checks
//! one of them on every non-GET request and answers 403 otherwise.

use axum::http::{header, HeaderMap, HeaderValue};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::state::AppState;
use svc_core::auth::{self, Legacy, Presented, Principal, UserSession};

/// The session cookie's name.
pub const COOKIE: &str = "svc_session";
/// The header htmx sends the CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// The form field plain forms send it in.
pub const CSRF_FIELD: &str = "csrf";
const CSRF_CONTEXT: &[u8] = b"svc dashboard csrf v1";
/// The cookie lives as long as the JWT it holds (7 days).
const COOKIE_MAX_AGE_SECS: i64 = 7 * 24 * 3600;

/// A signed-in dashboard user, left in the request's extensions by [`super::guard::require_session`].
#[derive(Clone, Debug)]
pub struct Session {
    pub user: UserSession,
    /// The JWT of the cookie.
    pub token: String,
    /// This session's CSRF token.
    pub csrf: String,
}

impl Session {
    pub fn is_owner(&self) -> bool {
        self.user.user.role == svc_core::accounts::Role::Owner
    }

    /// 403 `owner_required` unless the user owns the workspace; `to` says what they tried
    /// ("create or revoke keys").
    pub fn require_owner(&self, to: &str) -> Result<(), svc_core::error::Error> {
        if self.is_owner() {
            return Ok(());
        }
        Err(svc_core::error::Error::new(
            svc_core::error::Code::OwnerRequired,
            format!("only an owner of the workspace may {to}"),
        ))
    }
}

/// The CSRF token of a session token.
pub fn csrf_token(session_token: &str) -> String {
    URL_SAFE_NO_PAD.encode(csrf_mac(session_token).finalize().into_bytes())
}

fn csrf_mac(session_token: &str) -> Hmac<Sha256> {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(session_token.as_bytes()).expect("HMAC takes any key");
    mac.update(CSRF_CONTEXT);
    mac
}

/// Whether `presented` is the CSRF token of `session_token` (constant-time comparison).
pub fn csrf_valid(session_token: &str, presented: &str) -> bool {
    match URL_SAFE_NO_PAD.decode(presented.trim()) {
        Ok(bytes) => csrf_mac(session_token).verify_slice(&bytes).is_ok(),
        Err(_) => false,
    }
}

/// `Set-Cookie` that starts a session (`Secure` when the service is served over TLS).
pub fn set_cookie(token: &str, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={COOKIE_MAX_AGE_SECS}{secure}"
    ))
    .expect("a JWT is a valid header value")
}

/// `Set-Cookie` that ends the session.
pub fn clear_cookie(secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{secure}"
    ))
    .expect("static header value")
}

/// Whether cookies must be `Secure` (the service terminates TLS itself).
pub fn secure(state: &AppState) -> bool {
    state.config.tls_cert.is_some()
}

/// The value of the session cookie, if the request carries one.
pub fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, value)| *name == COOKIE && !value.is_empty())
        .map(|(_, value)| value.to_owned())
}

/// The session of a request's cookie, if it names a valid dashboard session.
pub async fn resolve(state: &AppState, headers: &HeaderMap) -> Option<Session> {
    let token = cookie_token(headers)?;
    let bearer = format!("Bearer {token}");
    let presented = Presented {
        authorization: Some(&bearer),
        api_key: None,
    };
    match auth::resolve(&state.store, &state.jwt, presented, Legacy::Refused).await {
        // Only JWTs: an agent key pasted into the cookie is not a browser session.
        Ok(Principal::User(user)) => Some(Session {
            csrf: csrf_token(&token),
            user,
            token,
        }),
        _ => None,
    }
}

/// `name=value&...` pairs, percent- and plus-decoded.
pub fn form_urlencoded_parse(bytes: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(bytes);
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csrf_token_is_bound_to_the_session() {
        let t = csrf_token("a.b.c");
        assert!(csrf_valid("a.b.c", &t));
        assert!(!csrf_valid("a.b.d", &t));
        assert!(!csrf_valid("a.b.c", ""));
        assert!(!csrf_valid("a.b.c", "not base64!"));
    }

    #[test]
    fn cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("theme=dark; svc_session=x.y.z; other=1"),
        );
        assert_eq!(cookie_token(&h).as_deref(), Some("x.y.z"));
        let mut empty = HeaderMap::new();
        empty.insert(header::COOKIE, HeaderValue::from_static("svc_session="));
        assert_eq!(cookie_token(&empty), None);
    }

    #[test]
    fn cookie_attributes() {
        let c = set_cookie("t", true);
        let c = c.to_str().expect("text");
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && c.contains("Secure"));
        assert!(!set_cookie("t", false)
            .to_str()
            .expect("text")
            .contains("Secure"));
    }

    #[test]
    fn form_decoding() {
        let f = form_urlencoded_parse(b"a=1+2&csrf=x%2Dy&b=%E2%9C%93&c");
        assert_eq!(
            f,
            vec![
                ("a".into(), "1 2".into()),
                ("csrf".into(), "x-y".into()),
                ("b".into(), "\u{2713}".into()),
                ("c".into(), "".into()),
            ]
        );
    }
}
