//! The gateway's handle on the running service: what invocations and approvals reach besides
//! their arguments (the store, the sealer, the outbound HTTP client, the idempotency keys in
//! flight, the public URL). The service's composition root builds one; everything above the
//! gateway passes it (or anything holding it) instead of the service's whole state.

use std::sync::Arc;

use parking_lot::RwLock;

use super::idempotency::InFlightKeys;
use svc_core::plumbing::sealed::Sealer;
use svc_core::store::Store;
use svc_domains::integrations::HttpClient;

/// Cheap to clone: every part is shared.
#[derive(Clone, Debug)]
pub struct Gateway {
    pub store: Store,
    /// Seals secrets at rest (integration configs, brand context).
    pub sealer: Sealer,
    /// The one outbound HTTP client (providers after the commit).
    pub http: HttpClient,
    /// Idempotency keys whose first request is still running (409 for a concurrent retry).
    pub idempotency_in_flight: InFlightKeys,
    public_url: Arc<RwLock<String>>,
}

impl Gateway {
    pub fn new(store: Store, sealer: Sealer, http: HttpClient, public_url: String) -> Gateway {
        Gateway {
            store,
            sealer,
            http,
            idempotency_in_flight: InFlightKeys::default(),
            public_url: Arc::new(RwLock::new(public_url)),
        }
    }

    /// The base URL providers reach this service at (callback URLs, the Message-ID domain).
    pub fn public_url(&self) -> String {
        self.public_url.read().clone()
    }

    /// Set once the listener is bound, when no public URL was configured.
    pub fn set_public_url(&self, url: String) {
        *self.public_url.write() = url;
    }
}

impl AsRef<Gateway> for Gateway {
    fn as_ref(&self) -> &Gateway {
        self
    }
}
