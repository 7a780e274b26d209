//! The one outbound HTTP client of the service (voice and Customer.io adapters).
//!
//! rustls with the ring provider and the public web roots (no OpenSSL); a 5 s connect timeout
//! and a 15 s timeout for the whole exchange. Retries are bounded and only for failures that
//! provably sent nothing: an error while connecting (refused, unreachable, DNS, TLS handshake,
//! connect timeout) happens before a byte of the request is written, so repeating it cannot
//! create a second call or event at the provider. A timeout or a dropped connection after the
//! request went out is never retried: the provider may have acted on it.
//!
//! Every destination passes the operator's rule ([`Destinations`]): names through the client's
//! resolver at connect time, address literals before the request is sent.

use std::time::Duration;

use super::destinations::Destinations;
use super::provider_error::ProviderError;
use svc_core::error::{Error, Result};

pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
pub const TOTAL_TIMEOUT: Duration = Duration::from_secs(15);
/// Attempts after the first, for connect failures only.
pub const CONNECT_RETRIES: u32 = 2;
const FIRST_BACKOFF: Duration = Duration::from_millis(200);

/// Cheap to clone (one connection pool shared by every clone).
#[derive(Clone, Debug)]
pub struct HttpClient {
    inner: reqwest::Client,
    destinations: Destinations,
    retries: u32,
    backoff: Duration,
}

impl HttpClient {
    /// A client that reaches only what `destinations` allows.
    pub fn new(destinations: Destinations) -> Result<HttpClient> {
        let inner = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(TOTAL_TIMEOUT)
            .user_agent(concat!("svcd/", env!("CARGO_PKG_VERSION")))
            // Provider APIs answer where they are; a redirect would resend credentials elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            // A proxy from the environment would connect on our behalf, past the rule.
            .no_proxy()
            .dns_resolver(destinations.resolver())
            .build()
            .map_err(|e| Error::internal(format!("building the outbound HTTP client: {e}")))?;
        Ok(HttpClient {
            inner,
            destinations,
            retries: CONNECT_RETRIES,
            backoff: FIRST_BACKOFF,
        })
    }

    /// The rule this client enforces (the SMTP adapter connects by itself and applies it too).
    pub fn destinations(&self) -> &Destinations {
        &self.destinations
    }

    /// The underlying client, to build requests with.
    pub fn client(&self) -> &reqwest::Client {
        &self.inner
    }

    /// Sends `request`, retrying (with doubling backoff) only connect failures. Any HTTP
    /// status is a response, not an error; callers judge it.
    pub async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ProviderError> {
        self.check_literal(&request)?;
        let mut backoff = self.backoff;
        let mut attempt = 0;
        loop {
            // Bodies here are always in memory, so the clone exists; without one there is
            // nothing to retry with.
            let retry_copy = request_copy(&request, attempt < self.retries);
            let this = match retry_copy {
                Some(copy) => copy,
                None => return request.send().await.map_err(describe),
            };
            match this.send().await {
                Ok(resp) => return Ok(resp),
                Err(e) if e.is_connect() => {
                    tracing::debug!(error = %e.without_url(), attempt, "connect failed; retrying");
                    attempt += 1;
                    tokio::time::sleep(backoff).await;
                    backoff *= 2;
                }
                Err(e) => return Err(describe(e)),
            }
        }
    }
}

impl HttpClient {
    /// Address literals never reach the resolver, so they are checked here.
    fn check_literal(&self, request: &reqwest::RequestBuilder) -> Result<(), ProviderError> {
        let Some(built) = request.try_clone().and_then(|r| r.build().ok()) else {
            // A streaming body cannot be cloned; the URL is still checked by the resolver when
            // it is a name, and every caller here sends in-memory bodies.
            return Ok(());
        };
        let host = built.url().host_str().unwrap_or_default();
        // The URL parser has already normalised every IPv4 spelling to dotted decimal.
        let Ok(ip) = host
            .trim_matches(|c| c == '[' || c == ']')
            .parse::<std::net::IpAddr>()
        else {
            return Ok(());
        };
        self.destinations
            .check(host, ip)
            .map_err(|e| ProviderError::new(e.to_string()))
    }
}

fn request_copy(
    request: &reqwest::RequestBuilder,
    retries_left: bool,
) -> Option<reqwest::RequestBuilder> {
    if retries_left {
        request.try_clone()
    } else {
        None
    }
}

/// A transport failure in words, with the innermost cause (never the request's headers, so
/// never a credential).
pub fn describe(e: reqwest::Error) -> ProviderError {
    let host = e
        .url()
        .map(|u| match (u.host_str(), u.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            _ => "the provider".to_owned(),
        })
        .unwrap_or_else(|| "the provider".to_owned());
    let cause = root_cause(&e);
    let message = if e.is_connect() {
        format!("could not connect to {host}: {cause}")
    } else if e.is_timeout() {
        format!(
            "{host} did not answer within {} s (the request may have reached it)",
            TOTAL_TIMEOUT.as_secs()
        )
    } else {
        format!("the request to {host} failed: {cause}")
    };
    if e.is_connect() || e.is_builder() {
        ProviderError::new(message)
    } else {
        // The request was (at least partly) sent: the provider may have acted on it.
        ProviderError::ambiguous(message)
    }
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// A provider's refusal in words: what was asked, the HTTP status and what it usually means.
/// The body is the provider's and is never echoed to the tenant (issue 29: an integration URL
/// pointed at an inside service would otherwise reflect its answers); it goes to the log.
pub async fn error_message(resp: reqwest::Response, what: &str) -> ProviderError {
    let status = resp.status().as_u16();
    let host = resp.url().host_str().unwrap_or_default().to_owned();
    let text = resp.text().await.unwrap_or_default();
    let excerpt: String = text.trim().chars().take(200).collect();
    tracing::info!(provider = %host, status, body = %excerpt, "provider refused a request");
    let why = match status {
        400 | 422 => " (the provider rejected the request's content)",
        401 | 403 => " (the provider refused the credentials)",
        404 => " (not found: check the account id or base URL)",
        429 => " (the provider's rate limit)",
        500..=599 => " (the provider failed)",
        _ => "",
    };
    ProviderError::with_status(format!("{what}: HTTP {status}{why}"), status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn loopback_allowed() -> Destinations {
        Destinations::allowing(Destinations::parse_allow_list("127.0.0.1").expect("range"))
    }

    #[tokio::test]
    async fn refused_destinations_are_never_contacted() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let client = HttpClient::new(Destinations::public_only()).expect("client");
        for url in [
            format!("http://{addr}/x"),
            format!("http://localhost:{}/x", addr.port()),
            format!("http://2130706433:{}/x", addr.port()),
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "http://[fd00:ec2::254]/".to_owned(),
        ] {
            let e = client
                .send(client.client().get(&url))
                .await
                .expect_err("refused");
            assert!(
                e.message.contains("non-public address"),
                "{url}: {}",
                e.message
            );
        }
        // Nothing connected to the listener.
        let accepted = tokio::time::timeout(Duration::from_millis(50), listener.accept()).await;
        assert!(accepted.is_err(), "a refused destination was contacted");
    }

    #[tokio::test]
    async fn connect_failures_are_retried_a_bounded_number_of_times() {
        // A port nobody listens on: bind, note it, close.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        let client = HttpClient {
            backoff: Duration::from_millis(5),
            ..HttpClient::new(loopback_allowed()).expect("client")
        };
        let started = std::time::Instant::now();
        let e = client
            .send(client.client().get(format!("http://{addr}/x")))
            .await
            .expect_err("nobody listens");
        assert!(
            e.message.starts_with("could not connect to 127.0.0.1:"),
            "{}",
            e.message
        );
        assert_eq!(e.status, None);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn a_request_that_reached_the_server_is_not_retried() {
        // The server reads the request and hangs up without answering: the request went out,
        // so a retry could act twice.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        let server = tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                counter.fetch_add(1, Ordering::SeqCst);
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                drop(sock);
            }
        });
        let client = HttpClient::new(loopback_allowed()).expect("client");
        let e = client
            .send(
                client
                    .client()
                    .post(format!("http://{addr}/calls"))
                    .body("x"),
            )
            .await
            .expect_err("hung up");
        assert!(e.message.contains(&addr.to_string()), "{}", e.message);
        assert_eq!(seen.load(Ordering::SeqCst), 1, "sent exactly once");
        server.abort();
    }
}
