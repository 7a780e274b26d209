//! Clients registered by Dynamic Client Registration (RFC 7591): public clients only (no
//! secret; PKCE protects the code). A client identified by a Client ID Metadata Document (an
//! https URL) is not stored: its document is fetched when it asks (svc-server `oauth`).

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::plumbing::{clock, ids};
use crate::store::{Record, Store, WorkspaceId};

/// Prefix of registered client ids.
pub const CLIENT_PREFIX: &str = "mcpc_";

/// A registered client, in the global scope (registration precedes any workspace).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RegisteredClient {
    pub client_id: String,
    pub client_name: String,
    /// Compared exactly at authorization (loopback ports aside, RFC 8252 §7.3).
    pub redirect_uris: Vec<String>,
    pub created_at: String,
}

impl Record for RegisteredClient {
    const KIND: &'static str = "oauth_client";
    fn id(&self) -> String {
        self.client_id.clone()
    }
}

/// Stores a new client (its metadata already checked) and returns it with its id.
pub async fn register(
    store: &Store,
    client_name: String,
    redirect_uris: Vec<String>,
) -> Result<RegisteredClient> {
    let client = RegisteredClient {
        client_id: format!("{CLIENT_PREFIX}{}", ids::random_base62(24)),
        client_name,
        redirect_uris,
        created_at: clock::now_rfc3339(),
    };
    let stored = client.clone();
    store
        .write(move |tx| tx.put(WorkspaceId::GLOBAL, &stored))
        .await?;
    Ok(client)
}

/// A registered client by id.
pub async fn find(store: &Store, client_id: &str) -> Result<Option<RegisteredClient>> {
    if !client_id.starts_with(CLIENT_PREFIX) || client_id.len() > 64 {
        return Ok(None);
    }
    store
        .get::<RegisteredClient>(WorkspaceId::GLOBAL, client_id)
        .await
}
