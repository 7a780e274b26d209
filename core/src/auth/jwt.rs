//! Dashboard session tokens: HS256 JWTs with `exp`, `iss` and `aud` required (DESIGN.md §4).

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub const ISSUER: &str = "svcd";
pub const AUDIENCE: &str = "svc-dashboard";
/// SPEC.md: JWT lifetime 7 days.
pub const LIFETIME_SECS: i64 = 7 * 24 * 60 * 60;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Claims {
    /// User id (`usr_...`).
    pub sub: String,
    /// Workspace id (`ws_...`).
    pub ws: String,
    pub iat: i64,
    pub exp: i64,
    pub iss: String,
    pub aud: String,
}

pub struct JwtKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl std::fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JwtKeys(..)")
    }
}

impl JwtKeys {
    pub fn new(secret: &[u8]) -> Self {
        // Only HS256 is accepted: "none" and every other algorithm fail validation.
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = 0;
        JwtKeys {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
        }
    }

    /// A token for `user` in `workspace`, issued at `now` (Unix seconds).
    pub fn issue(&self, user: &str, workspace: &str, now: i64) -> Result<(String, Claims)> {
        let claims = Claims {
            sub: user.to_owned(),
            ws: workspace.to_owned(),
            iat: now,
            exp: now + LIFETIME_SECS,
            iss: ISSUER.to_owned(),
            aud: AUDIENCE.to_owned(),
        };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(|e| Error::internal(format!("signing a JWT failed: {e}")))?;
        Ok((token, claims))
    }

    /// The claims of a valid token; any failure is `unauthenticated` without saying why.
    pub fn verify(&self, token: &str) -> Result<Claims> {
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map(|data| data.claims)
            .map_err(|e| {
                tracing::debug!(error = %e, "JWT rejected");
                Error::unauthenticated("invalid or expired token")
            })
    }
}

/// Whether a bearer token has the shape of a JWT (three dot-separated parts).
pub fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> JwtKeys {
        JwtKeys::new(&[7u8; 32])
    }

    fn now() -> i64 {
        time::OffsetDateTime::now_utc().unix_timestamp()
    }

    #[test]
    fn issued_tokens_verify() {
        let (token, claims) = keys()
            .issue("usr_a", "ws_0000000000000001", now())
            .expect("issue");
        assert_eq!(keys().verify(&token).expect("verify"), claims);
        assert_eq!(claims.exp - claims.iat, LIFETIME_SECS);
    }

    #[test]
    fn other_secret_expired_and_alg_none_are_rejected() {
        let (token, _) = keys().issue("usr_a", "ws_1", now()).expect("issue");
        assert!(JwtKeys::new(&[8u8; 32]).verify(&token).is_err());

        let (old, _) = keys()
            .issue("usr_a", "ws_1", now() - LIFETIME_SECS - 10)
            .expect("issue");
        assert!(keys().verify(&old).is_err());

        // Same claims, header {"alg":"none"} and an empty signature.
        let payload = token.split('.').nth(1).expect("payload");
        let none = format!("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.{payload}.");
        assert!(keys().verify(&none).is_err());
    }

    #[test]
    fn wrong_audience_is_rejected() {
        let claims = Claims {
            sub: "usr_a".into(),
            ws: "ws_1".into(),
            iat: now(),
            exp: now() + 60,
            iss: ISSUER.into(),
            aud: "someone-else".into(),
        };
        let token = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(&[7u8; 32]),
        )
        .expect("encode");
        assert!(keys().verify(&token).is_err());
    }
}
