//! The shape of an access rule: who may call a route (anonymous callers, dashboard sessions,
//! agent keys with which grants, legacy ingestion keys), whether it reads or writes, and
//! whether only owners may use it. The table of rules is `table`; enforcing them is `super`.

use svc_core::keys::RouteGrant;

/// Whether a route reads or changes data (shown in the OpenAPI document).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    Read,
    Write,
}

/// What a caller without any credential gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anonymous {
    /// 401 `unauthenticated`.
    Refused,
    /// Served; credentials are not even looked at (health, register, login).
    Public,
    /// Served as demo data; a credential that is presented must be valid and is then used
    /// (`GET /v1/graph`).
    Demo,
    /// Served when the query carries the workspace's webhook `?token=` (rate limited per
    /// workspace); 401 otherwise.
    WebhookToken,
    /// Served; the handler verifies the sender's signature over the body (callbacks of
    /// outside providers, which cannot hold our credentials).
    Signature,
    /// Served as the credential a one-use `?ticket=` stands for (`/v1/stream` from browsers,
    /// see `events::stream_tickets`); 401 otherwise.
    StreamTicket,
    /// Segment's Tracking API: the handler authenticates the source write key (HTTP Basic
    /// user name or `writeKey` in the possibly gzipped body) or an agent key with the rule's
    /// grants, as Segment's clients send them (`http::routes::segment`).
    WriteKey,
}

/// What an agent (`svc_live_`) key gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyAccess {
    /// 403 `forbidden`: a dashboard-only route (it changes data outside the gateway and
    /// ingestion, or manages the workspace).
    Refused,
    /// Any live key of the workspace: the gateway and `/mcp` check each capability's grant
    /// themselves; whoami needs none.
    Gateway,
    /// Only a key holding every one of these route grants; 403 `grant_denied` otherwise.
    Grants(&'static [RouteGrant]),
}

/// One route's access rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub anonymous: Anonymous,
    /// A dashboard session (JWT) is accepted.
    pub jwt: bool,
    pub key: KeyAccess,
    /// A legacy `dsk_` key in `X-API-Key` is accepted (ingestion routes only).
    pub legacy: bool,
    pub effect: Effect,
    /// Only the workspace's owners, not its members, may use the route with a JWT
    /// (403 `owner_required`).
    pub owner_only: bool,
    /// An MCP OAuth access token bound to this route (its audience) is accepted, and a 401
    /// carries the `WWW-Authenticate` challenge that starts discovery (`crate::oauth`).
    pub oauth: bool,
}

impl Rule {
    /// No credential needed.
    pub(super) const fn public() -> Rule {
        Rule {
            anonymous: Anonymous::Public,
            jwt: false,
            key: KeyAccess::Refused,
            legacy: false,
            effect: Effect::Read,
            owner_only: false,
            oauth: false,
        }
    }

    /// Dashboard sessions only.
    pub(super) const fn jwt(effect: Effect) -> Rule {
        Rule {
            anonymous: Anonymous::Refused,
            jwt: true,
            key: KeyAccess::Refused,
            legacy: false,
            effect,
            owner_only: false,
            oauth: false,
        }
    }

    /// Agent keys only; capability checks are the gateway's.
    pub(super) const fn gateway(effect: Effect) -> Rule {
        Rule {
            anonymous: Anonymous::Refused,
            jwt: false,
            key: KeyAccess::Gateway,
            legacy: false,
            effect,
            owner_only: false,
            oauth: false,
        }
    }

    /// A JWT, or an agent key holding `grants`.
    pub(super) const fn keyed(effect: Effect, grants: &'static [RouteGrant]) -> Rule {
        Rule {
            anonymous: Anonymous::Refused,
            jwt: true,
            key: KeyAccess::Grants(grants),
            legacy: false,
            effect,
            owner_only: false,
            oauth: false,
        }
    }

    /// Ingestion: a JWT, an agent key with `events:write`, or a legacy key.
    pub(super) const fn ingest() -> Rule {
        Rule {
            legacy: true,
            ..Rule::keyed(Effect::Write, &[RouteGrant::EventsWrite])
        }
    }

    pub(super) const fn anonymous(self, anonymous: Anonymous) -> Rule {
        Rule { anonymous, ..self }
    }

    /// Also an MCP OAuth access token (`/mcp`, the tokens' audience).
    pub(super) const fn oauth(self) -> Rule {
        Rule {
            oauth: true,
            ..self
        }
    }

    /// Dashboard sessions of the workspace's owners only.
    pub(super) const fn owner_only(self) -> Rule {
        Rule {
            owner_only: true,
            ..self
        }
    }
}
