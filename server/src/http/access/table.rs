//! The table: one rule per routed (method, path), and its lookup.

use std::collections::HashMap;
use std::sync::LazyLock;

use axum::http::Method;

use super::rules::{Anonymous, Effect, Rule};
use svc_core::keys::RouteGrant;
use Effect::{Read, Write};
use RouteGrant::{BrandRead, CustomersRead, GraphRead, OutboxRead, PlaybooksRead};

pub(super) const PUBLIC: Rule = Rule::public();
pub(super) const JWT_READ: Rule = Rule::jwt(Read);
pub(super) const JWT_WRITE: Rule = Rule::jwt(Write);
/// Keys, integrations, webhook secrets and tokens, invites: owners only.
pub(super) const OWNER_WRITE: Rule = Rule::jwt(Write).owner_only();
pub(super) const GATEWAY_READ: Rule = Rule::gateway(Read);
pub(super) const GATEWAY_WRITE: Rule = Rule::gateway(Write);
pub(super) const CUSTOMERS: Rule = Rule::keyed(Read, &[CustomersRead]);
pub(super) const GRAPH: Rule = Rule::keyed(Read, &[GraphRead]);
pub(super) const PLAYBOOKS: Rule = Rule::keyed(Read, &[PlaybooksRead]);
pub(super) const BRAND: Rule = Rule::keyed(Read, &[BrandRead]);
pub(super) const OUTBOX: Rule = Rule::keyed(Read, &[OutboxRead]);
pub(super) const INGEST: Rule = Rule::ingest();
/// Segment's Tracking API: a write key, or an agent key with `events:write`, checked by the
/// handler (the key may be in the body). No JWT: Segment's clients never send one.
pub(super) const SEGMENT: Rule = Rule {
    jwt: false,
    legacy: false,
    ..Rule::ingest()
}
.anonymous(Anonymous::WriteKey);
/// Provider callbacks: no credential, the body's signature is checked by the handler.
pub(super) const SIGNED: Rule = Rule::public().anonymous(Anonymous::Signature);

/// The table: (method, path as routed, rule). One line per route; a route that is served must
/// have its line here. Paths use the router's `{param}` syntax.
pub const RULES: &[(&str, &str, Rule)] = &[
    // System and accounts.
    ("GET", "/healthz", PUBLIC),
    ("GET", "/readyz", PUBLIC),
    ("GET", "/metrics", PUBLIC),
    ("POST", "/api/auth/register", PUBLIC),
    ("POST", "/api/auth/login", PUBLIC),
    ("GET", "/api/auth/session", JWT_READ),
    // MCP authorization (OAuth 2.1): discovery, registration and tokens are public.
    ("GET", "/.well-known/oauth-protected-resource", PUBLIC),
    ("GET", "/.well-known/oauth-protected-resource/mcp", PUBLIC),
    ("GET", "/.well-known/oauth-authorization-server", PUBLIC),
    ("POST", "/oauth/register", PUBLIC),
    ("POST", "/oauth/token", PUBLIC),
    // Workspace settings and keys: dashboard only.
    ("GET", "/api/v1/workspace", JWT_READ),
    ("PUT", "/api/v1/workspace", JWT_WRITE),
    ("POST", "/api/v1/keys", OWNER_WRITE),
    ("GET", "/api/v1/keys", JWT_READ),
    ("POST", "/api/v1/keys/legacy", OWNER_WRITE),
    ("DELETE", "/api/v1/keys/{id}", OWNER_WRITE),
    ("GET", "/api/v1/keys/whoami", GATEWAY_READ),
    // The capability gateway and MCP: agent keys, per-capability checks inside.
    ("GET", "/api/v1/capabilities", GATEWAY_READ),
    ("POST", "/api/v1/capabilities/{id}/invoke", GATEWAY_WRITE),
    ("GET", "/api/v1/capabilities/usage/actions", GATEWAY_READ),
    (
        "GET",
        "/api/v1/capabilities/actions/{request_id}",
        GATEWAY_READ,
    ),
    ("GET", "/api/v1/capabilities/pending/{id}", GATEWAY_READ),
    ("POST", "/mcp", GATEWAY_WRITE.oauth()),
    // Approvals: a person decides, never an agent.
    ("GET", "/api/v1/approvals", JWT_READ),
    ("POST", "/api/v1/approvals/{id}/approve", JWT_WRITE),
    ("POST", "/api/v1/approvals/{id}/reject", JWT_WRITE),
    // Ingestion.
    ("POST", "/api/v1/events/track", INGEST),
    ("POST", "/api/v1/events/identify", INGEST),
    ("POST", "/api/v1/events", INGEST),
    (
        "POST",
        "/api/webhooks/{platform}",
        INGEST.anonymous(Anonymous::WebhookToken),
    ),
    ("POST", "/api/v1/webhooks/token", OWNER_WRITE),
    ("PUT", "/api/v1/webhooks/{platform}/secret", OWNER_WRITE),
    ("GET", "/api/v1/webhooks/{platform}/secret", JWT_READ),
    ("DELETE", "/api/v1/webhooks/{platform}/secret", OWNER_WRITE),
    // Segment's Tracking API (the handler checks the write key) and its write keys.
    ("POST", "/segment/v1/track", SEGMENT),
    ("POST", "/segment/v1/identify", SEGMENT),
    ("POST", "/segment/v1/page", SEGMENT),
    ("POST", "/segment/v1/screen", SEGMENT),
    ("POST", "/segment/v1/group", SEGMENT),
    ("POST", "/segment/v1/alias", SEGMENT),
    ("POST", "/segment/v1/batch", SEGMENT),
    ("POST", "/segment/v1/import", SEGMENT),
    ("POST", "/api/v1/segment/write-keys", OWNER_WRITE),
    ("GET", "/api/v1/segment/write-keys", JWT_READ),
    ("DELETE", "/api/v1/segment/write-keys/{id}", OWNER_WRITE),
    (
        "GET",
        "/api/v1/segment/anonymous-ids/{anonymous_id}",
        CUSTOMERS,
    ),
    // Customers and what is derived from them.
    ("GET", "/v1/customers", CUSTOMERS),
    ("POST", "/v1/customers/dedupe", JWT_WRITE),
    ("GET", "/v1/customers/{id}", CUSTOMERS),
    ("GET", "/v1/customers/{id}/timeline", CUSTOMERS),
    ("GET", "/v1/campaigns", CUSTOMERS),
    ("GET", "/v1/opportunities", CUSTOMERS),
    ("GET", "/v1/segments", CUSTOMERS),
    ("GET", "/v1/journeys", CUSTOMERS),
    ("GET", "/v1/cohorts", CUSTOMERS),
    ("GET", "/v1/products", CUSTOMERS),
    (
        "GET",
        "/v1/stream",
        CUSTOMERS.anonymous(Anonymous::StreamTicket),
    ),
    ("POST", "/v1/stream/ticket", CUSTOMERS),
    ("GET", "/v1/reporting/summary", CUSTOMERS),
    ("GET", "/v1/reporting/recent-reasoning", CUSTOMERS),
    ("POST", "/v1/messages", JWT_WRITE),
    // Score models: agents may read which model scores; a person retrains.
    ("GET", "/v1/models", CUSTOMERS),
    ("POST", "/v1/models/retrain", JWT_WRITE),
    // The graph: demo data without a credential. JWT queries may write; a key's queries only
    // read (decided from the parse tree by graph_api::query).
    ("GET", "/v1/graph", GRAPH.anonymous(Anonymous::Demo)),
    ("POST", "/v1/graph/query", Rule::keyed(Write, &[GraphRead])),
    ("GET", "/v1/graph/path", GRAPH),
    // Playbooks and brand: agents read, people write.
    ("GET", "/v1/playbooks", PLAYBOOKS),
    ("POST", "/v1/playbooks", JWT_WRITE),
    ("GET", "/v1/playbooks/{id}", PLAYBOOKS),
    ("PUT", "/v1/playbooks/{id}", JWT_WRITE),
    ("DELETE", "/v1/playbooks/{id}", JWT_WRITE),
    ("POST", "/v1/playbooks/{id}/run", JWT_WRITE),
    ("GET", "/v1/playbooks/{id}/runs", PLAYBOOKS),
    ("GET", "/v1/playbooks/{id}/runs/{run_id}", PLAYBOOKS),
    (
        "POST",
        "/v1/playbooks/{id}/runs/{run_id}/outcomes",
        JWT_WRITE,
    ),
    ("POST", "/v1/playbooks/{id}/runs/{run_id}/sync", JWT_WRITE),
    ("POST", "/v1/playbooks/{id}/runs/{run_id}/pause", JWT_WRITE),
    ("POST", "/v1/playbooks/{id}/runs/{run_id}/resume", JWT_WRITE),
    ("POST", "/v1/playbooks/{id}/runs/{run_id}/cancel", JWT_WRITE),
    ("GET", "/v1/playbooks/{id}/runs/{run_id}/leads", PLAYBOOKS),
    ("GET", "/v1/brand-context", BRAND),
    ("PUT", "/v1/brand-context", JWT_WRITE),
    ("DELETE", "/v1/brand-context", JWT_WRITE),
    // Integrations hold provider credentials: dashboard sessions only.
    ("GET", "/api/v1/integrations", JWT_READ),
    ("PUT", "/api/v1/integrations/{kind}", OWNER_WRITE),
    ("DELETE", "/api/v1/integrations/{kind}", OWNER_WRITE),
    ("POST", "/api/v1/integrations/{kind}/test", OWNER_WRITE),
    (
        "GET",
        "/v1/buddies/{buddy}/system-prompt",
        Rule::keyed(Read, &[BrandRead, PlaybooksRead]),
    ),
    // Outbound actions: their records, and the providers' signed callbacks.
    ("GET", "/api/v1/outbox", OUTBOX),
    ("POST", "/api/webhooks/voice/{workspace_id}/status", SIGNED),
    // Roles: owners invite, anyone with the token accepts, every member sees the members.
    ("POST", "/api/auth/accept-invite", PUBLIC),
    ("POST", "/api/v1/workspace/invites", OWNER_WRITE),
    ("GET", "/api/v1/workspace/members", JWT_READ),
    // Chat: a person talks to the buddies; the buddies act through the gateway themselves.
    ("POST", "/v1/chat", JWT_WRITE),
    ("GET", "/v1/chat/sessions", JWT_READ),
    ("GET", "/v1/chat/sessions/{id}", JWT_READ),
];

/// Rules by path, then method (built once; keyed by `&'static str` so a request's `&str`
/// looks them up without allocating).
static INDEX: LazyLock<HashMap<&'static str, Vec<(&'static str, Rule)>>> = LazyLock::new(|| {
    let mut index: HashMap<&'static str, Vec<(&'static str, Rule)>> = HashMap::new();
    for (method, path, rule) in RULES {
        index.entry(*path).or_default().push((*method, *rule));
    }
    index
});

/// The rule of a routed (method, path); HEAD is served by the GET route.
pub fn rule_for(method: &Method, path: &str) -> Option<Rule> {
    let method = if *method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    };
    INDEX
        .get(path)?
        .iter()
        .find(|(m, _)| *m == method)
        .map(|(_, rule)| *rule)
}

/// The methods a routed path has rules for (HEAD with GET), or `None` for an unknown path.
pub(super) fn methods_of(path: &str) -> Option<Vec<&'static str>> {
    let rules = INDEX.get(path)?;
    let mut methods: Vec<&'static str> = rules.iter().map(|(m, _)| *m).collect();
    if methods.contains(&"GET") {
        methods.push("HEAD");
    }
    Some(methods)
}
