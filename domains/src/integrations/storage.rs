//! One record per (workspace, kind): the config sealed at rest (DESIGN.md §4 "Secrets at
//! rest": the workspace and the record kind `integration:<kind>` bound as associated data, so
//! a sealed config opens neither in another workspace nor as another kind), plus the
//! unsecret bookkeeping the API shows: when it was connected and changed, and the outcome of
//! the last live test.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::config::{Config, CustomerioConfig, SmtpConfig, VoiceConfig};
use super::destinations::Destinations;
use super::http::HttpClient;
use super::{customerio, smtp, voice};
use svc_core::error::{Code, Error, Result};
use svc_core::integration_kind::Kind;
use svc_core::plumbing::clock;
use svc_core::plumbing::reseal::{reseal_all, SealedRecord};
use svc_core::plumbing::sealed::{Sealed, Sealer};
use svc_core::store::{Record, Store, WorkspaceId};
use svc_core::workspaces::ensure_writable;

/// Record kind of the store.
pub const RECORD_KIND: &str = "integration";

/// The associated-data kind a config is sealed under.
fn sealed_kind(kind: Kind) -> String {
    format!("{RECORD_KIND}:{}", kind.as_str())
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IntegrationRecord {
    kind: Kind,
    sealed: Sealed,
    connected_at: String,
    updated_at: String,
    #[serde(default)]
    last_test: Option<LastTest>,
}

impl Record for IntegrationRecord {
    const KIND: &'static str = RECORD_KIND;
    fn id(&self) -> String {
        self.kind.as_str().to_owned()
    }
}

/// The outcome of the last live test (`POST /api/v1/integrations/:kind/test`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LastTest {
    pub ok: bool,
    pub at: String,
    pub message: String,
}

/// One kind as the API shows it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct IntegrationView {
    pub kind: Kind,
    pub connected: bool,
    /// The config with secrets masked (`••••1234`); `null` when not connected.
    #[schema(value_type = Option<Object>)]
    pub config: Option<Json>,
    /// The capability ids this integration unlocks.
    pub capabilities: Vec<String>,
    pub connected_at: Option<String>,
    pub updated_at: Option<String>,
    pub last_test: Option<LastTest>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct IntegrationList {
    pub integrations: Vec<IntegrationView>,
}

/// The answer of a live test.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct TestResult {
    pub ok: bool,
    pub kind: Kind,
    pub message: String,
}

fn capabilities(kind: Kind) -> Vec<String> {
    svc_core::capabilities::requiring(kind)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

fn open(sealer: &Sealer, ws: WorkspaceId, record: &IntegrationRecord) -> Result<Config> {
    let config: Config = sealer.open_json(ws, &sealed_kind(record.kind), &record.sealed)?;
    if config.kind() != record.kind {
        return Err(Error::internal(format!(
            "integration record {} holds a {} config",
            record.kind.as_str(),
            config.kind().as_str()
        )));
    }
    Ok(config)
}

fn view(kind: Kind, stored: Option<(&IntegrationRecord, &Config)>) -> IntegrationView {
    IntegrationView {
        kind,
        connected: stored.is_some(),
        config: stored.map(|(_, c)| c.masked()),
        capabilities: capabilities(kind),
        connected_at: stored.map(|(r, _)| r.connected_at.clone()),
        updated_at: stored.map(|(r, _)| r.updated_at.clone()),
        last_test: stored.and_then(|(r, _)| r.last_test.clone()),
    }
}

/// Every kind, connected or not, in [`Kind::ALL`] order.
pub async fn list(store: &Store, sealer: &Sealer, ws: WorkspaceId) -> Result<IntegrationList> {
    let mut integrations = Vec::with_capacity(Kind::ALL.len());
    for kind in Kind::ALL {
        let record = store.get::<IntegrationRecord>(ws, kind.as_str()).await?;
        let config = record.as_ref().map(|r| open(sealer, ws, r)).transpose()?;
        integrations.push(view(kind, record.as_ref().zip(config.as_ref())));
    }
    Ok(IntegrationList { integrations })
}

/// The stored config of `kind` (for the routes and anything outside a write transaction).
pub async fn load(
    store: &Store,
    sealer: &Sealer,
    ws: WorkspaceId,
    kind: Kind,
) -> Result<Option<Config>> {
    let record = store.get::<IntegrationRecord>(ws, kind.as_str()).await?;
    record.as_ref().map(|r| open(sealer, ws, r)).transpose()
}

/// The stored config of `kind`, read inside an engine write transaction (the gateway's).
pub fn load_in(
    w: &svc_core::store::WorkspaceTxn<'_, '_>,
    sealer: &Sealer,
    kind: Kind,
) -> Result<Option<Config>> {
    let record = w.get_record::<IntegrationRecord>(kind.as_str())?;
    record
        .as_ref()
        .map(|r| open(sealer, w.workspace_id(), r))
        .transpose()
}

/// [`load_in`] for SMTP.
pub fn load_smtp_in(
    w: &svc_core::store::WorkspaceTxn<'_, '_>,
    sealer: &Sealer,
) -> Result<Option<SmtpConfig>> {
    Ok(match load_in(w, sealer, Kind::Smtp)? {
        Some(Config::Smtp(c)) => Some(c),
        _ => None,
    })
}

/// [`load_in`] for the voice provider.
pub fn load_voice_in(
    w: &svc_core::store::WorkspaceTxn<'_, '_>,
    sealer: &Sealer,
) -> Result<Option<VoiceConfig>> {
    Ok(match load_in(w, sealer, Kind::Voice)? {
        Some(Config::Voice(c)) => Some(c),
        _ => None,
    })
}

/// [`load_in`] for Customer.io.
pub fn load_customerio_in(
    w: &svc_core::store::WorkspaceTxn<'_, '_>,
    sealer: &Sealer,
) -> Result<Option<CustomerioConfig>> {
    Ok(match load_in(w, sealer, Kind::Customerio)? {
        Some(Config::Customerio(c)) => Some(c),
        _ => None,
    })
}

/// Connects `kind` with the config `body`, or replaces its config (omitted secrets keep their
/// stored values). A changed config forgets the last test: it was of the old one.
///
/// A host given as an address the operator's rule refuses (loopback, private, link-local,
/// metadata) is refused here; a name is checked on the addresses it resolves to each time a
/// connection is made (`super::destinations`).
pub async fn put(
    store: &Store,
    sealer: &Sealer,
    destinations: &Destinations,
    ws: WorkspaceId,
    kind: Kind,
    body: Json,
) -> Result<IntegrationView> {
    let sealer = sealer.clone();
    let destinations = destinations.clone();
    store
        .write(move |tx| {
            ensure_writable(tx, ws)?;
            let previous = tx.get::<IntegrationRecord>(ws, kind.as_str())?;
            let old = previous
                .as_ref()
                .map(|r| open(&sealer, ws, r))
                .transpose()?;
            let config = Config::from_body(kind, &body, old.as_ref())?;
            refuse_literal_destination(&config, &destinations)?;
            let now = clock::now_rfc3339();
            let unchanged = old.as_ref() == Some(&config);
            let record = IntegrationRecord {
                kind,
                sealed: sealer.seal_json(ws, &sealed_kind(kind), &config)?,
                connected_at: previous
                    .as_ref()
                    .map_or_else(|| now.clone(), |r| r.connected_at.clone()),
                updated_at: now,
                last_test: previous
                    .as_ref()
                    .and_then(|r| r.last_test.clone())
                    .filter(|_| unchanged),
            };
            tx.put(ws, &record)?;
            Ok(view(kind, Some((&record, &config))))
        })
        .await
}

fn refuse_literal_destination(config: &Config, destinations: &Destinations) -> Result<()> {
    let (field, host) = config.destination();
    let Ok(ip) = host
        .trim_matches(|c| c == '[' || c == ']')
        .parse::<std::net::IpAddr>()
    else {
        return Ok(());
    };
    destinations.check(&host, ip).map_err(|refused| {
        Error::new(Code::InvalidInput, format!("{field}: {refused}"))
            .with_details(serde_json::json!({"field": field, "reason": "destination_not_allowed"}))
    })
}

/// Disconnects `kind` (idempotent): the sealed config is deleted.
pub async fn delete(store: &Store, ws: WorkspaceId, kind: Kind) -> Result<()> {
    store
        .write(move |tx| {
            ensure_writable(tx, ws)?;
            tx.delete::<IntegrationRecord>(ws, kind.as_str())
        })
        .await
}

/// A live check against the provider with the stored config, outside any transaction; the
/// outcome is recorded as `last_test` unless the config changed meanwhile.
pub async fn test(
    store: &Store,
    sealer: &Sealer,
    http: &HttpClient,
    ws: WorkspaceId,
    kind: Kind,
) -> Result<TestResult> {
    let record = store.get::<IntegrationRecord>(ws, kind.as_str()).await?;
    let Some(record) = record else {
        return Err(Error::new(
            Code::IntegrationNotConnected,
            format!(
                "{} is not connected; connect it with {} first",
                kind.label(),
                kind.connect_route()
            ),
        )
        .with_details(serde_json::json!({
            "integration": kind.as_str(),
            "connect": kind.connect_route(),
        })));
    };
    let config = open(sealer, ws, &record)?;
    let outcome = match &config {
        Config::Smtp(c) => smtp::check(c, http.destinations()).await,
        Config::Voice(c) => voice::check(http, c).await,
        Config::Customerio(c) => customerio::check(http, c).await,
        Config::Llm(c) => super::llm::check(http, c).await,
    };
    let (ok, message) = match outcome {
        Ok(()) => (
            true,
            format!(
                "{} accepted the connection and the credentials",
                kind.label()
            ),
        ),
        Err(e) => (false, e.scrubbed(&config.secrets()).message),
    };
    let last = LastTest {
        ok,
        at: clock::now_rfc3339(),
        message: message.clone(),
    };
    let tested_version = record.updated_at;
    store
        .write(move |tx| {
            if let Some(mut current) = tx.get::<IntegrationRecord>(ws, kind.as_str())? {
                if current.updated_at == tested_version {
                    current.last_test = Some(last);
                    tx.put(ws, &current)?;
                }
            }
            Ok(())
        })
        .await?;
    Ok(TestResult { ok, kind, message })
}

impl SealedRecord for IntegrationRecord {
    fn seal_context(&self) -> String {
        sealed_kind(self.kind)
    }
    fn sealed_mut(&mut self) -> &mut Sealed {
        &mut self.sealed
    }
}

/// Re-seals every integration config of the workspace under the sealer's current key
/// (master-key rotation, `svcd admin`); returns how many values were rewritten.
pub async fn reseal(store: &Store, sealer: &Sealer, ws: WorkspaceId) -> Result<usize> {
    reseal_all::<IntegrationRecord>(store, sealer, ws).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sealed_configs_open_only_as_their_kind_and_workspace() {
        let sealer = Sealer::new([7u8; 32], &[]);
        let ws = WorkspaceId(3);
        let config = Config::from_body(
            Kind::Customerio,
            &json!({"site_id": "s", "api_key": "cio-secret-key-1234"}),
            None,
        )
        .expect("valid");
        let record = IntegrationRecord {
            kind: Kind::Customerio,
            sealed: sealer
                .seal_json(ws, &sealed_kind(Kind::Customerio), &config)
                .expect("seal"),
            connected_at: "t".to_owned(),
            updated_at: "t".to_owned(),
            last_test: None,
        };
        let stored = serde_json::to_string(&record).expect("json");
        assert!(!stored.contains("cio-secret"), "{stored}");
        assert_eq!(open(&sealer, ws, &record).expect("open"), config);
        assert!(open(&sealer, WorkspaceId(4), &record).is_err());
        let as_voice = IntegrationRecord {
            kind: Kind::Voice,
            ..record
        };
        assert!(open(&sealer, ws, &as_voice).is_err());
    }
}
