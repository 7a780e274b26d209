//! Customer.io's Track API (v1): identify and track one customer, and check the credentials.
//!
//! - Identify: `PUT {host}/api/v1/customers/{id}` with the attributes as the JSON body.
//! - Track: `POST {host}/api/v1/customers/{id}/events` with `{"name", "data"}`.
//! - Check: `GET {host}/api/v1/accounts/region`, which answers the account's `region` and `url`
//!   for valid credentials (and 401 otherwise).
//!
//! Auth is HTTP Basic `site_id:api_key`; the host is `https://track.customer.io` (us),
//! `https://track-eu.customer.io` (eu) or the configured `base_url`.

use serde::Deserialize;
use serde_json::{json, Map, Value as Json};

use super::config::{CustomerioConfig, Region};
use super::http::{error_message, HttpClient};
use super::provider_error::ProviderError;

/// `{host}/api/v1/…segments`, each segment percent-encoded (customer ids are free text).
fn url(cfg: &CustomerioConfig, segments: &[&str]) -> Result<reqwest::Url, ProviderError> {
    let mut url = reqwest::Url::parse(cfg.host())
        .map_err(|e| ProviderError::new(format!("Customer.io host: {e}")))?;
    {
        let mut path = url
            .path_segments_mut()
            .map_err(|()| ProviderError::new("Customer.io host cannot take a path"))?;
        path.pop_if_empty().extend(["api", "v1"]);
        path.extend(segments);
    }
    Ok(url)
}

async fn call(
    http: &HttpClient,
    cfg: &CustomerioConfig,
    request: reqwest::RequestBuilder,
    what: &str,
) -> Result<reqwest::Response, ProviderError> {
    let result = async {
        let resp = http
            .send(request.basic_auth(&cfg.site_id, Some(&cfg.api_key)))
            .await?;
        if resp.status().is_success() {
            Ok::<_, ProviderError>(resp)
        } else {
            Err(error_message(resp, what).await)
        }
    }
    .await;
    result.map_err(|e| e.scrubbed(&[&cfg.api_key]))
}

/// Creates or updates the customer `customer_id` with `attributes`.
pub async fn identify(
    http: &HttpClient,
    cfg: &CustomerioConfig,
    customer_id: &str,
    attributes: &Map<String, Json>,
) -> Result<(), ProviderError> {
    let request = http
        .client()
        .put(url(cfg, &["customers", customer_id])?)
        .json(attributes);
    call(http, cfg, request, "Customer.io refused the identify").await?;
    Ok(())
}

/// Records the event `name` with `data` on the customer `customer_id`.
pub async fn track(
    http: &HttpClient,
    cfg: &CustomerioConfig,
    customer_id: &str,
    name: &str,
    data: &Map<String, Json>,
) -> Result<(), ProviderError> {
    let request = http
        .client()
        .post(url(cfg, &["customers", customer_id, "events"])?)
        .json(&json!({"name": name, "data": data}));
    call(http, cfg, request, "Customer.io refused the event").await?;
    Ok(())
}

#[derive(Deserialize)]
struct RegionAnswer {
    #[serde(default)]
    region: Option<String>,
}

/// A live check: the credentials are accepted, and belong to the configured region (a key of
/// the other region would be redirected through, or refused by, the wrong data centre).
pub async fn check(http: &HttpClient, cfg: &CustomerioConfig) -> Result<(), ProviderError> {
    let request = http.client().get(url(cfg, &["accounts", "region"])?);
    let resp = call(http, cfg, request, "Customer.io refused the credentials").await?;
    let answer: RegionAnswer = resp.json().await.unwrap_or(RegionAnswer { region: None });
    match answer.region.as_deref().and_then(Region::parse) {
        Some(region) if region != cfg.region => Err(ProviderError::new(format!(
            "the credentials belong to Customer.io's {} region; set region to \"{}\"",
            region.as_str(),
            region.as_str()
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn customer_ids_are_one_encoded_path_segment() {
        let cfg = CustomerioConfig {
            site_id: "site".to_owned(),
            api_key: "key".to_owned(),
            region: Region::Us,
            base_url: None,
        };
        assert_eq!(
            url(&cfg, &["customers", "a/b c?d", "events"])
                .expect("url")
                .as_str(),
            "https://track.customer.io/api/v1/customers/a%2Fb%20c%3Fd/events"
        );
        let eu = CustomerioConfig {
            region: Region::Eu,
            ..cfg
        };
        assert_eq!(
            url(&eu, &["accounts", "region"]).expect("url").as_str(),
            "https://track-eu.customer.io/api/v1/accounts/region"
        );
    }
}
