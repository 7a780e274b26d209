//! CORS for browser clients on other origins (`--cors-origins`): off unless origins are listed,
//! and then only those exact origins, with the headers the API reads and exposes.

use std::time::Duration;

use axum::http::{header, HeaderName, HeaderValue, Method};
use tower_http::cors::{AllowOrigin, CorsLayer};

use svc_core::error::{Error, Result};

/// Checks each configured origin: `http(s)://host[:port]`, nothing after it.
pub fn parse_origins(origins: &[String]) -> Result<Vec<HeaderValue>> {
    origins
        .iter()
        .map(|o| o.trim())
        .filter(|o| !o.is_empty())
        .map(|o| {
            let rest = o
                .strip_prefix("https://")
                .or_else(|| o.strip_prefix("http://"));
            match rest {
                Some(host) if !host.is_empty() && !host.contains('/') => HeaderValue::from_str(o)
                    .map_err(|_| Error::invalid_input(format!("CORS origin {o:?} is not valid"))),
                _ => Err(Error::invalid_input(format!(
                    "CORS origin {o:?}: expected scheme://host[:port] with no path, e.g. \
                     https://app.example.com"
                ))),
            }
        })
        .collect()
}

/// The layer for `origins`; `None` (no CORS headers at all) when the list is empty or invalid
/// (svcd refuses to start with an invalid list, see `parse_origins`).
pub fn layer(origins: &[String]) -> Option<CorsLayer> {
    let origins = parse_origins(origins).ok()?;
    if origins.is_empty() {
        return None;
    }
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([
                Method::GET,
                Method::POST,
                Method::PUT,
                Method::PATCH,
                Method::DELETE,
            ])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                HeaderName::from_static("x-api-key"),
                HeaderName::from_static("idempotency-key"),
            ])
            .expose_headers([
                HeaderName::from_static("x-request-id"),
                HeaderName::from_static("x-ratelimit-limit"),
                HeaderName::from_static("x-ratelimit-remaining"),
                HeaderName::from_static("x-ratelimit-reset"),
                HeaderName::from_static("idempotent-replayed"),
                header::RETRY_AFTER,
            ])
            .max_age(Duration::from_secs(600)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_scheme_and_host_only() {
        let ok = parse_origins(&[
            "https://app.example.com".into(),
            "http://localhost:3000".into(),
        ]);
        assert_eq!(ok.expect("valid").len(), 2);
        for bad in [
            "app.example.com",
            "https://app.example.com/",
            "ftp://x",
            "https://",
        ] {
            assert!(parse_origins(&[bad.into()]).is_err(), "{bad}");
        }
        assert!(layer(&[]).is_none());
    }
}
