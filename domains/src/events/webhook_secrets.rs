//! Per-workspace signing secrets of the webhook platforms, one per platform, sealed at rest
//! (`svc_core::plumbing::sealed`: XChaCha20-Poly1305, bound to the workspace, the record kind and the
//! platform). When a platform has a secret, every delivery for it must carry that platform's
//! valid signature (`signatures::verify`), whatever credential delivered it. The plaintext is
//! never returned, logged or stored.

use serde::{Deserialize, Serialize};

use super::{signatures, webhooks};
use svc_core::error::{Error, Result};
use svc_core::plumbing::clock;
use svc_core::plumbing::reseal::{reseal_all, SealedRecord};
use svc_core::plumbing::sealed::{Sealed, Sealer};
use svc_core::store::{Record, Store, WorkspaceId};

/// Shortest accepted secret (platform-issued secrets are longer; this refuses typos and toys).
pub const MIN_SECRET_CHARS: usize = 16;
pub const MAX_SECRET_CHARS: usize = 512;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WebhookSecret {
    platform: String,
    sealed: Sealed,
    updated_at: String,
    updated_by: String,
}

impl Record for WebhookSecret {
    const KIND: &'static str = "webhook_secret";
    fn id(&self) -> String {
        self.platform.clone()
    }
}

/// What the sealing binds besides the workspace: the record kind and the platform, so a sealed
/// secret moved to another platform's record does not open.
fn seal_context(platform: &str) -> String {
    format!("{}/{platform}", WebhookSecret::KIND)
}

/// Whether a platform has a signing secret (never the secret itself).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct SecretStatus {
    pub platform: String,
    pub configured: bool,
    /// When the secret was last set, RFC 3339 UTC.
    pub updated_at: Option<String>,
    /// The signature the platform's deliveries must carry while a secret is configured.
    pub scheme: String,
}

fn status_of(platform: &str, record: Option<&WebhookSecret>) -> SecretStatus {
    SecretStatus {
        platform: platform.to_owned(),
        configured: record.is_some(),
        updated_at: record.map(|r| r.updated_at.clone()),
        scheme: signatures::scheme(platform).to_owned(),
    }
}

fn check_secret(secret: &str) -> Result<()> {
    let chars = secret.chars().count();
    let problem = if !(MIN_SECRET_CHARS..=MAX_SECRET_CHARS).contains(&chars) {
        Some(format!(
            "must be {MIN_SECRET_CHARS} to {MAX_SECRET_CHARS} characters; got {chars}"
        ))
    } else if secret.trim() != secret || secret.chars().any(char::is_control) {
        Some("must not have surrounding white space or control characters".to_owned())
    } else {
        None
    };
    match problem {
        // The value is never echoed: it is a secret even when it is a wrong one.
        Some(why) => Err(Error::invalid_input(format!("secret: {why}"))
            .with_details(serde_json::json!({ "field": "secret" }))),
        None => Ok(()),
    }
}

/// Sets (or replaces: the previous secret stops working in the same commit) the workspace's
/// signing secret for `platform`.
pub async fn set(
    store: &Store,
    sealer: &Sealer,
    ws: WorkspaceId,
    platform: &str,
    secret: &str,
    user_id: &str,
) -> Result<SecretStatus> {
    webhooks::ensure_platform(platform)?;
    check_secret(secret)?;
    let record = WebhookSecret {
        platform: platform.to_owned(),
        sealed: Sealed(sealer.seal(ws, &seal_context(platform), secret.as_bytes())?),
        updated_at: clock::now_rfc3339(),
        updated_by: user_id.to_owned(),
    };
    let status = status_of(platform, Some(&record));
    store.write(move |tx| tx.put(ws, &record)).await?;
    Ok(status)
}

/// Removes the secret (idempotent); deliveries are no longer signature-checked.
pub async fn delete(store: &Store, ws: WorkspaceId, platform: &str) -> Result<SecretStatus> {
    webhooks::ensure_platform(platform)?;
    let id = platform.to_owned();
    store
        .write(move |tx| tx.delete::<WebhookSecret>(ws, &id))
        .await?;
    Ok(status_of(platform, None))
}

pub async fn status(store: &Store, ws: WorkspaceId, platform: &str) -> Result<SecretStatus> {
    webhooks::ensure_platform(platform)?;
    let record = store.get::<WebhookSecret>(ws, platform).await?;
    Ok(status_of(platform, record.as_ref()))
}

/// The plaintext secret for checking a delivery, when one is configured.
pub async fn load(
    store: &Store,
    sealer: &Sealer,
    ws: WorkspaceId,
    platform: &str,
) -> Result<Option<Vec<u8>>> {
    let Some(record) = store.get::<WebhookSecret>(ws, platform).await? else {
        return Ok(None);
    };
    Ok(Some(sealer.open(
        ws,
        &seal_context(platform),
        &record.sealed.0,
    )?))
}

impl SealedRecord for WebhookSecret {
    fn seal_context(&self) -> String {
        seal_context(&self.platform)
    }
    fn sealed_mut(&mut self) -> &mut Sealed {
        &mut self.sealed
    }
}

/// Re-seals every signing secret of the workspace under the sealer's current key (master-key
/// rotation, `svcd admin`); returns how many values were rewritten.
pub async fn reseal(store: &Store, sealer: &Sealer, ws: WorkspaceId) -> Result<usize> {
    reseal_all::<WebhookSecret>(store, sealer, ws).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_must_be_long_enough_and_clean_and_are_never_echoed() {
        check_secret("whsec_0123456789abcdef").expect("fine");
        for bad in [
            "short",
            " whsec_0123456789abcdef",
            "whsec_0123456789\nabcdef",
        ] {
            let e = check_secret(bad).expect_err("refused");
            assert!(!e.message.contains(bad.trim()), "{}", e.message);
        }
        check_secret(&"x".repeat(MAX_SECRET_CHARS + 1)).expect_err("too long");
    }

    #[tokio::test]
    async fn set_load_rotate_delete_and_bound_to_workspace_and_platform() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("store")).expect("store");
        let sealer = Sealer::new([7; 32], &[]);
        let ws = WorkspaceId(21);
        let first = "whsec_first_secret_value_1";
        let s = set(&store, &sealer, ws, "stripe", first, "usr_1")
            .await
            .expect("set");
        assert!(s.configured);
        assert_eq!(
            load(&store, &sealer, ws, "stripe")
                .await
                .expect("load")
                .as_deref(),
            Some(first.as_bytes())
        );
        assert_eq!(
            load(&store, &sealer, ws, "shopify").await.expect("none"),
            None
        );
        assert_eq!(
            load(&store, &sealer, WorkspaceId(22), "stripe")
                .await
                .expect("none"),
            None
        );

        // The sealed value only opens for its own platform and workspace.
        let rec: WebhookSecret = store.get(ws, "stripe").await.expect("get").expect("record");
        assert!(sealer
            .open(ws, &seal_context("segment"), &rec.sealed.0)
            .is_err());
        assert!(sealer
            .open(WorkspaceId(22), &seal_context("stripe"), &rec.sealed.0)
            .is_err());
        let raw = serde_json::to_string(&rec).expect("json");
        assert!(!raw.contains(first), "{raw}");

        let second = "whsec_second_secret_value_2";
        set(&store, &sealer, ws, "stripe", second, "usr_1")
            .await
            .expect("rotate");
        assert_eq!(
            load(&store, &sealer, ws, "stripe")
                .await
                .expect("load")
                .as_deref(),
            Some(second.as_bytes())
        );
        assert!(
            !delete(&store, ws, "stripe")
                .await
                .expect("delete")
                .configured
        );
        assert!(
            !status(&store, ws, "stripe")
                .await
                .expect("status")
                .configured
        );
        assert_eq!(
            load(&store, &sealer, ws, "stripe").await.expect("gone"),
            None
        );
        delete(&store, ws, "stripe").await.expect("idempotent");
        let unknown = status(&store, ws, "myspace")
            .await
            .expect_err("unknown platform");
        assert_eq!(unknown.code, svc_core::error::Code::NotFound);
        store.close();
    }
}
