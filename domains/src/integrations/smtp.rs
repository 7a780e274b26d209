//! Email over SMTP with `lettre` (rustls with the ring provider; no OpenSSL).
//!
//! One connection per message (no pool: sends are rare and a pooled connection would outlive a
//! config change): connect, EHLO, STARTTLS or implicit TLS as configured, AUTH when credentials
//! are set, MAIL/RCPT/DATA, QUIT. The message is multipart/alternative (plain text first, then
//! HTML) with the caller's Message-ID, so a retry by the gateway is recognisable downstream.

use std::str::FromStr;
use std::time::Duration;

use lettre::message::header::{HeaderName, HeaderValue, MessageId};
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, CertificateStore, Tls, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{Address, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::config::{SmtpConfig, SmtpSecurity};
use super::destinations::Destinations;
use super::provider_error::ProviderError;

/// Each SMTP command's timeout (connect included).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(15);
/// A whole send or check, however many commands it takes.
pub const TOTAL_TIMEOUT: Duration = Duration::from_secs(60);

/// One email to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Email {
    /// The recipient's address.
    pub to: String,
    /// The recipient's display name.
    pub to_name: Option<String>,
    pub subject: String,
    pub text: String,
    pub html: String,
    /// The full Message-ID without angle brackets (`req_abc@svc.local`).
    pub message_id: String,
    /// Overrides the config's `reply_to`.
    pub reply_to: Option<String>,
    /// Extra headers (e.g. `List-Unsubscribe`), name and value.
    pub headers: Vec<(String, String)>,
}

/// What the relay said when it took the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmtpSent {
    /// The Message-ID sent (without angle brackets).
    pub message_id: String,
    /// The relay's final reply, e.g. `250 2.0.0 Ok: queued as 4F2A1`.
    pub response: String,
}

/// Whether `s` is a single email address (`addr@example.com`, no display name).
pub fn is_address(s: &str) -> bool {
    Address::from_str(s).is_ok()
}

/// The message exactly as it would be sent (for previews and tests).
pub fn message(cfg: &SmtpConfig, email: &Email) -> Result<Message, ProviderError> {
    let from = cfg.from_mailbox().map_err(ProviderError::new)?;
    let address = Address::from_str(&email.to)
        .map_err(|e| ProviderError::new(format!("recipient {:?}: {e}", email.to)))?;
    let to = Mailbox::new(email.to_name.clone(), address);
    if email.message_id.is_empty()
        || email.message_id.contains(['<', '>', ' ', '\r', '\n'])
        || !email.message_id.contains('@')
    {
        return Err(ProviderError::new(format!(
            "Message-ID {:?}: expected left@right without angle brackets",
            email.message_id
        )));
    }
    let mut builder = Message::builder()
        .from(from)
        .to(to)
        .subject(email.subject.clone())
        .header(MessageId::from(format!("<{}>", email.message_id)));
    if let Some(reply_to) = email.reply_to.as_ref().or(cfg.reply_to.as_ref()) {
        let mbox = Mailbox::from_str(reply_to)
            .map_err(|e| ProviderError::new(format!("reply-to {reply_to:?}: {e}")))?;
        builder = builder.reply_to(mbox);
    }
    for (name, value) in &email.headers {
        builder = builder.raw_header(header(name, value)?);
    }
    builder
        .multipart(MultiPart::alternative_plain_html(
            email.text.clone(),
            email.html.clone(),
        ))
        .map_err(|e| ProviderError::new(format!("building the message: {e}")))
}

/// An extra header; names are RFC 5322 field names, values single-line (no header injection).
fn header(name: &str, value: &str) -> Result<HeaderValue, ProviderError> {
    let valid_name =
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if !valid_name {
        return Err(ProviderError::new(format!(
            "header name {name:?}: letters, digits and '-' only"
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(ProviderError::new(format!(
            "header {name}: the value must be one line"
        )));
    }
    let name = HeaderName::new_from_ascii(name.to_owned())
        .map_err(|e| ProviderError::new(format!("header name {name:?}: {e}")))?;
    Ok(HeaderValue::new(name, value.to_owned()))
}

/// The transport for `cfg`: TLS as configured, the configured CA as the only root when set.
/// It connects to an address of the host that `destinations` allows, resolved here (so the
/// address checked is the address used); TLS still verifies the configured host name.
async fn transport(
    cfg: &SmtpConfig,
    destinations: &Destinations,
) -> Result<AsyncSmtpTransport<Tokio1Executor>, ProviderError> {
    let addrs = destinations
        .resolve(&cfg.host, cfg.port)
        .await
        .map_err(|e| ProviderError::new(e.to_string()))?;
    let Some(addr) = addrs.first() else {
        return Err(ProviderError::new(format!("{} has no address", cfg.host)));
    };
    let tls = match cfg.security {
        SmtpSecurity::None => Tls::None,
        SmtpSecurity::Starttls => Tls::Required(tls_parameters(cfg)?),
        SmtpSecurity::Tls => Tls::Wrapper(tls_parameters(cfg)?),
    };
    let mut builder =
        AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(addr.ip().to_string())
            .port(cfg.port)
            .tls(tls)
            .timeout(Some(COMMAND_TIMEOUT))
            .hello_name(hello_name(cfg));
    if let (Some(user), Some(password)) = (&cfg.username, &cfg.password) {
        builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
    }
    Ok(builder.build())
}

fn tls_parameters(cfg: &SmtpConfig) -> Result<TlsParameters, ProviderError> {
    let mut params = TlsParameters::builder(cfg.host.clone());
    if let Some(pem) = &cfg.ca_cert_pem {
        let cert = Certificate::from_pem(pem.as_bytes())
            .map_err(|e| ProviderError::new(format!("ca_cert_pem: {e}")))?;
        params = params
            .certificate_store(CertificateStore::None)
            .add_root_certificate(cert);
    }
    params
        .build_rustls()
        .map_err(|e| ProviderError::new(format!("TLS setup: {e}")))
}

/// EHLO with the sender's domain: a name the relay can tie to the mail (lettre's default
/// without the machine's host name would be `localhost`).
fn hello_name(cfg: &SmtpConfig) -> ClientId {
    cfg.from_mailbox()
        .map(|m| ClientId::Domain(m.email.domain().to_owned()))
        .unwrap_or_else(|_| ClientId::Domain("localhost".to_owned()))
}

/// Sends `email` through the relay of `cfg`.
pub async fn send(
    cfg: &SmtpConfig,
    destinations: &Destinations,
    email: &Email,
) -> Result<SmtpSent, ProviderError> {
    let message = message(cfg, email)?;
    let transport = transport(cfg, destinations).await?;
    let sent = tokio::time::timeout(TOTAL_TIMEOUT, transport.send(message))
        .await
        .map_err(|_| timed_out(cfg))?
        .map_err(|e| describe(cfg, e))?;
    let text: Vec<&str> = sent.message().collect();
    Ok(SmtpSent {
        message_id: email.message_id.clone(),
        response: format!("{} {}", sent.code(), text.join(" "))
            .trim()
            .to_owned(),
    })
}

/// A live check: connect, EHLO, TLS as configured, AUTH when credentials are set, NOOP, QUIT.
pub async fn check(cfg: &SmtpConfig, destinations: &Destinations) -> Result<(), ProviderError> {
    let transport = transport(cfg, destinations).await?;
    let alive = tokio::time::timeout(TOTAL_TIMEOUT, transport.test_connection())
        .await
        .map_err(|_| timed_out(cfg))?
        .map_err(|e| describe(cfg, e))?;
    if alive {
        Ok(())
    } else {
        Err(ProviderError::new(format!(
            "{}:{} accepted the session but did not answer NOOP",
            cfg.host, cfg.port
        )))
    }
}

fn timed_out(cfg: &SmtpConfig) -> ProviderError {
    // The relay may have taken the message before going quiet.
    ProviderError::ambiguous(format!(
        "{}:{} did not finish within {} s",
        cfg.host,
        cfg.port,
        TOTAL_TIMEOUT.as_secs()
    ))
}

/// lettre's error in words: the relay's reply code as `status`, the failing stage named.
fn describe(cfg: &SmtpConfig, e: lettre::transport::smtp::Error) -> ProviderError {
    let at = format!("{}:{}", cfg.host, cfg.port);
    let status = e.status().map(u16::from);
    // A reply is summarised by its code, never echoed: the relay's words are the provider's,
    // not ours to show a tenant (issue 29). Otherwise the innermost cause is our own
    // description of the failure (lettre's outer layers repeat "Connection error").
    let detail = match status {
        Some(code) => {
            tracing::info!(relay = %at, reply = %e, "SMTP relay refused");
            format!("the relay answered {code}")
        }
        None => root_cause(&e),
    };
    let certificate = detail.contains("certificate");
    let stage = if e.is_tls() || certificate {
        "TLS with"
    } else if e.is_timeout() {
        "timed out talking to"
    } else if matches!(status, Some(530 | 534 | 535)) {
        "authentication refused by"
    } else if e.is_permanent() {
        "permanently refused by"
    } else if e.is_transient() {
        "temporarily refused by"
    } else {
        "SMTP session with"
    };
    let mut message = format!("{stage} {at} failed: {detail}");
    if certificate && cfg.ca_cert_pem.is_none() {
        message.push_str(" (a relay with its own CA needs ca_cert_pem)");
    }
    // Without a reply code the relay never refused: a timeout may come after it took the
    // message. A refused connection or TLS failure happens before anything is sent.
    let maybe_delivered = status.is_none() && e.is_timeout();
    let err = ProviderError {
        message,
        status,
        maybe_delivered,
    };
    err.scrubbed(&cfg.password.as_deref().into_iter().collect::<Vec<_>>())
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> SmtpConfig {
        SmtpConfig {
            host: "127.0.0.1".to_owned(),
            port: 2525,
            security: SmtpSecurity::None,
            username: None,
            password: None,
            from: "Acme <hi@acme.io>".to_owned(),
            reply_to: Some("support@acme.io".to_owned()),
            ca_cert_pem: None,
        }
    }

    fn email() -> Email {
        Email {
            to: "ann@example.com".to_owned(),
            to_name: Some("Ann Example".to_owned()),
            subject: "Your trial".to_owned(),
            text: "Hello Ann".to_owned(),
            html: "<p>Hello Ann</p>".to_owned(),
            message_id: "req_abc@svc.local".to_owned(),
            reply_to: None,
            headers: vec![(
                "List-Unsubscribe".to_owned(),
                "<mailto:unsubscribe@acme.io>".to_owned(),
            )],
        }
    }

    #[test]
    fn the_message_carries_ids_recipients_and_both_bodies() {
        let m = message(&cfg(), &email()).expect("message");
        let text = String::from_utf8(m.formatted()).expect("utf8");
        assert!(
            text.contains("Message-ID: <req_abc@svc.local>\r\n"),
            "{text}"
        );
        assert!(
            text.contains("To: \"Ann Example\" <ann@example.com>\r\n"),
            "{text}"
        );
        assert!(text.contains("From: Acme <hi@acme.io>\r\n"), "{text}");
        assert!(text.contains("Reply-To: support@acme.io\r\n"), "{text}");
        assert!(
            text.contains("List-Unsubscribe: <mailto:unsubscribe@acme.io>\r\n"),
            "{text}"
        );
        assert!(text.contains("multipart/alternative"), "{text}");
        let plain = text.find("text/plain").expect("plain part");
        let html = text.find("text/html").expect("html part");
        assert!(plain < html, "plain text first");
        assert_eq!(
            m.envelope().to(),
            [Address::from_str("ann@example.com").expect("address")]
        );
    }

    #[test]
    fn bad_recipients_ids_and_headers_are_refused() {
        let mut e = email();
        e.to = "not-an-address".to_owned();
        assert!(message(&cfg(), &e).is_err());
        let mut e = email();
        e.message_id = "<req_abc@svc.local>".to_owned();
        assert!(message(&cfg(), &e).is_err());
        let mut e = email();
        e.headers = vec![("X-Bad".to_owned(), "a\r\nBcc: evil@x.io".to_owned())];
        assert!(message(&cfg(), &e).is_err());
        let mut e = email();
        e.headers = vec![("X Bad".to_owned(), "v".to_owned())];
        assert!(message(&cfg(), &e).is_err());
        assert!(is_address("ann@example.com"));
        assert!(!is_address("Ann <ann@example.com>"));
    }

    #[tokio::test]
    async fn a_closed_port_is_a_provider_error_without_secrets() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        let c = SmtpConfig {
            port,
            username: Some("mailer".to_owned()),
            password: Some("hunter2-secret".to_owned()),
            ..cfg()
        };
        let loopback =
            Destinations::allowing(Destinations::parse_allow_list("127.0.0.1").expect("range"));
        let e = check(&c, &loopback).await.expect_err("nobody listens");
        assert!(
            e.message.contains(&format!("127.0.0.1:{port}")),
            "{}",
            e.message
        );
        assert!(!e.message.contains("hunter2"), "{}", e.message);
    }
}
