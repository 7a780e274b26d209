//! The dashboard's static files, embedded in the binary (nothing is fetched at run time):
//! vendored libraries from the npm registry (`server/assets/vendor`, versions in their names)
//! and our own CSS and JS, named by a hash of their content. Every path is immutable, so
//! responses carry a one-year cache lifetime.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// One embedded file: its path segment under `/app/assets/`, bytes and type.
#[derive(Debug)]
pub struct Asset {
    pub name: String,
    pub body: &'static [u8],
    pub content_type: &'static str,
}

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// Our own files, named `<stem>.<first 10 hex digits of SHA-256>.<ext>`.
fn hashed(stem: &str, ext: &str, body: &'static [u8], content_type: &'static str) -> Asset {
    let digest = Sha256::digest(body);
    let hex: String = digest.iter().take(5).map(|b| format!("{b:02x}")).collect();
    Asset {
        name: format!("{stem}.{hex}.{ext}"),
        body,
        content_type,
    }
}

fn vendored(name: &str, body: &'static [u8]) -> Asset {
    Asset {
        name: name.to_owned(),
        body,
        content_type: JS,
    }
}

/// Index positions of [`ASSETS`], for [`url`].
pub const HTMX: usize = 0;
pub const CHART: usize = 1;
pub const CYTOSCAPE: usize = 2;
pub const APP_CSS: usize = 3;
pub const APP_JS: usize = 4;
pub const FAVICON: usize = 5;

pub static ASSETS: LazyLock<[Asset; 6]> = LazyLock::new(|| {
    [
        vendored(
            "htmx-2.0.11.min.js",
            include_bytes!("../../assets/vendor/htmx-2.0.11.min.js"),
        ),
        vendored(
            "chart-4.6.1.umd.min.js",
            include_bytes!("../../assets/vendor/chart-4.6.1.umd.min.js"),
        ),
        vendored(
            "cytoscape-3.34.4.min.js",
            include_bytes!("../../assets/vendor/cytoscape-3.34.4.min.js"),
        ),
        hashed(
            "dashboard",
            "css",
            include_bytes!("../../assets/dashboard.css"),
            CSS,
        ),
        hashed(
            "dashboard",
            "js",
            include_bytes!("../../assets/dashboard.js"),
            JS,
        ),
        hashed(
            "favicon",
            "svg",
            include_bytes!("../../assets/favicon.svg"),
            "image/svg+xml",
        ),
    ]
});

/// The URL of an asset.
pub fn url(index: usize) -> String {
    format!("/app/assets/{}", ASSETS[index].name)
}

/// `GET /app/assets/{name}`.
pub async fn serve(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|a| a.name == name) {
        Some(a) => (
            [
                (header::CONTENT_TYPE, a.content_type),
                (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            a.body,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such asset").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_versioned() {
        let names: Vec<&str> = ASSETS.iter().map(|a| a.name.as_str()).collect();
        for (i, n) in names.iter().enumerate() {
            assert!(!names[i + 1..].contains(n), "{n} twice");
            assert!(n.chars().any(|c| c.is_ascii_digit()), "{n} has no version");
        }
        assert!(url(APP_CSS).starts_with("/app/assets/dashboard."));
    }
}
