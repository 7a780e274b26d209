//! Who may call which route: one declared rule per (method, path), enforced in one place.
//!
//! [`RULES`] is the table (DESIGN.md §4, "Access outside the gateway"). [`enforce`] runs after
//! routing for every API route: it looks up the matched route's rule, resolves the credential
//! the rule accepts, refuses what the rule refuses, and leaves the caller in the request's
//! extensions, where the extractors of `http::extract` read it. A route without a rule is
//! refused with 500 (and fails `every_documented_route_has_a_rule` and the access behaviour
//! test), so nothing is served by accident. [`document`] writes each rule into the OpenAPI
//! document: its security requirement, an `x-access` extension and a line of description.
//!
//! The dashboard (`/app/...`, `crate::dashboard`) is not an API route: it is merged after this
//! layer, is absent from RULES and the OpenAPI document, and enforces its own rule (the
//! `svc_session` cookie plus a CSRF token on writes; docs/dashboard.md). No API route accepts
//! that cookie.

use std::collections::HashMap;
use std::sync::LazyLock;

use axum::extract::{MatchedPath, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::openapi::{AGENT_KEY_BEARER, AGENT_KEY_HEADER, JWT, STREAM_TICKET, WEBHOOK_TOKEN};
use crate::auth::{self, Legacy, Presented, Principal};
use crate::error::{Code, Error};
use crate::events::webhooks;
use crate::keys::{AgentKey, KeyKind, RouteGrant};
use crate::plumbing::clock;
use crate::state::AppState;
use crate::store::WorkspaceId;

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
}

impl Rule {
    /// No credential needed.
    const fn public() -> Rule {
        Rule {
            anonymous: Anonymous::Public,
            jwt: false,
            key: KeyAccess::Refused,
            legacy: false,
            effect: Effect::Read,
            owner_only: false,
        }
    }

    /// Dashboard sessions only.
    const fn jwt(effect: Effect) -> Rule {
        Rule {
            anonymous: Anonymous::Refused,
            jwt: true,
            key: KeyAccess::Refused,
            legacy: false,
            effect,
            owner_only: false,
        }
    }

    /// Agent keys only; capability checks are the gateway's.
    const fn gateway(effect: Effect) -> Rule {
        Rule {
            anonymous: Anonymous::Refused,
            jwt: false,
            key: KeyAccess::Gateway,
            legacy: false,
            effect,
            owner_only: false,
        }
    }

    /// A JWT, or an agent key holding `grants`.
    const fn keyed(effect: Effect, grants: &'static [RouteGrant]) -> Rule {
        Rule {
            anonymous: Anonymous::Refused,
            jwt: true,
            key: KeyAccess::Grants(grants),
            legacy: false,
            effect,
            owner_only: false,
        }
    }

    /// Ingestion: a JWT, an agent key with `events:write`, or a legacy key.
    const fn ingest() -> Rule {
        Rule {
            legacy: true,
            ..Rule::keyed(Effect::Write, &[RouteGrant::EventsWrite])
        }
    }

    const fn anonymous(self, anonymous: Anonymous) -> Rule {
        Rule { anonymous, ..self }
    }

    /// Dashboard sessions of the workspace's owners only.
    const fn owner_only(self) -> Rule {
        Rule {
            owner_only: true,
            ..self
        }
    }
}

use Effect::{Read, Write};
use RouteGrant::{BrandRead, CustomersRead, GraphRead, OutboxRead, PlaybooksRead};

const PUBLIC: Rule = Rule::public();
const JWT_READ: Rule = Rule::jwt(Read);
const JWT_WRITE: Rule = Rule::jwt(Write);
/// Keys, integrations, webhook secrets and tokens, invites: owners only.
const OWNER_WRITE: Rule = Rule::jwt(Write).owner_only();
const GATEWAY_READ: Rule = Rule::gateway(Read);
const GATEWAY_WRITE: Rule = Rule::gateway(Write);
const CUSTOMERS: Rule = Rule::keyed(Read, &[CustomersRead]);
const GRAPH: Rule = Rule::keyed(Read, &[GraphRead]);
const PLAYBOOKS: Rule = Rule::keyed(Read, &[PlaybooksRead]);
const BRAND: Rule = Rule::keyed(Read, &[BrandRead]);
const OUTBOX: Rule = Rule::keyed(Read, &[OutboxRead]);
const INGEST: Rule = Rule::ingest();
/// Provider callbacks: no credential, the body's signature is checked by the handler.
const SIGNED: Rule = Rule::public().anonymous(Anonymous::Signature);

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
    ("POST", "/mcp", GATEWAY_WRITE),
    ("DELETE", "/mcp", GATEWAY_WRITE),
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
fn methods_of(path: &str) -> Option<Vec<&'static str>> {
    let rules = INDEX.get(path)?;
    let mut methods: Vec<&'static str> = rules.iter().map(|(m, _)| *m).collect();
    if methods.contains(&"GET") {
        methods.push("HEAD");
    }
    Some(methods)
}

/// 405 with the error body and `Allow`, as the router answers it elsewhere.
fn method_not_allowed(methods: &[&str]) -> Response {
    let mut response = Error::new(
        Code::MethodNotAllowed,
        "this route does not support the request method",
    )
    .into_response();
    if let Ok(allow) = axum::http::HeaderValue::from_str(&methods.join(",")) {
        response
            .headers_mut()
            .insert(axum::http::header::ALLOW, allow);
    }
    response
}

/// Who the access layer let in; the handlers' auth extractors read it.
#[derive(Clone, Debug)]
pub enum Caller {
    /// No credential, on a route whose rule serves anonymous callers.
    Anonymous,
    /// Boxed: a principal is large next to the other variants.
    Principal(Box<Principal>),
    /// The workspace's webhook token (`?token=`).
    WebhookToken(WorkspaceId),
}

impl Caller {
    /// The resolved credential, if the caller presented one.
    pub fn principal(&self) -> Option<&Principal> {
        match self {
            Caller::Principal(p) => Some(p),
            _ => None,
        }
    }
}

/// The caller the access layer admitted for this request.
pub fn caller(parts: &Parts) -> Result<&Caller, Error> {
    parts.extensions.get::<Caller>().ok_or_else(|| {
        Error::internal(format!(
            "{} {} reached a handler without passing the access layer",
            parts.method,
            parts.uri.path()
        ))
    })
}

/// The access layer (a route layer, so the matched path is known).
pub async fn enforce(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let Some(path) = req.extensions().get::<MatchedPath>().cloned() else {
        return Error::internal("the access layer ran outside a matched route").into_response();
    };
    let Some(rule) = rule_for(req.method(), path.as_str()) else {
        // The route layer also wraps the router's 405 answer for methods a path does not
        // serve; answer it here, from the table, rather than let anything unruled through.
        return match methods_of(path.as_str()) {
            Some(methods) => method_not_allowed(&methods),
            None => Error::internal(format!(
                "{} {} has no access rule (http::access::RULES)",
                req.method(),
                path.as_str()
            ))
            .into_response(),
        };
    };
    match authorize(&state, &rule, req.headers(), req.uri()).await {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(e) => e.into_response(),
    }
}

async fn authorize(
    state: &AppState,
    rule: &Rule,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<Caller, Error> {
    if matches!(rule.anonymous, Anonymous::Public | Anonymous::Signature) {
        return Ok(Caller::Anonymous);
    }
    let presented = headers.contains_key("authorization") || headers.contains_key("x-api-key");
    let token = match rule.anonymous {
        Anonymous::WebhookToken => webhook_token(uri),
        _ => None,
    };
    if !presented {
        return match (rule.anonymous, token) {
            (Anonymous::Demo, _) => Ok(Caller::Anonymous),
            (Anonymous::StreamTicket, _) => by_stream_ticket(state, uri),
            (Anonymous::WebhookToken, Some(token)) => by_webhook_token(state, &token).await,
            _ => Err(Error::unauthenticated(
                "a valid agent key or session token is required",
            )),
        };
    }
    let legacy = if rule.legacy {
        Legacy::Accepted
    } else {
        Legacy::Refused
    };
    let principal = match resolve(state, headers, legacy).await {
        Ok(p) => p,
        // A sender holding the workspace's webhook token is let in by it even next to a
        // credential that does not resolve.
        Err(_) if token.is_some() => {
            return by_webhook_token(state, token.as_deref().unwrap_or_default()).await
        }
        Err(e) => return Err(e),
    };
    admit(state, rule, &principal)?;
    Ok(Caller::Principal(Box::new(principal)))
}

/// Applies the rule to a resolved credential: its kind, then (keys) rate limit and grants.
fn admit(state: &AppState, rule: &Rule, principal: &Principal) -> Result<(), Error> {
    match principal {
        Principal::User(session) if rule.jwt => {
            if rule.owner_only && session.user.role != crate::accounts::Role::Owner {
                return Err(Error::new(
                    Code::OwnerRequired,
                    "only an owner of the workspace may do this; members cannot manage keys, \
                     integrations, webhook secrets or invites",
                ));
            }
            Ok(())
        }
        Principal::User(_) => Err(Error::forbidden(
            "this route needs an agent key; a dashboard session (JWT) cannot use it",
        )),
        Principal::Key(key) if key.kind == KeyKind::Legacy => {
            // Only resolved where the rule accepts legacy keys.
            count_use(state, key)
        }
        Principal::Key(key) => match rule.key {
            KeyAccess::Refused => Err(Error::forbidden(
                "this route needs a dashboard session (JWT); agent keys cannot use it",
            )),
            KeyAccess::Gateway => count_use(state, key),
            KeyAccess::Grants(grants) => {
                count_use(state, key)?;
                match grants.iter().find(|g| !key.holds(**g)) {
                    None => Ok(()),
                    Some(missing) => Err(grant_denied(*missing)),
                }
            }
        },
    }
}

fn grant_denied(missing: RouteGrant) -> Error {
    let alternatives = missing.also_satisfied_by();
    let message = if alternatives.is_empty() {
        format!("the key lacks the grant {}", missing.as_str())
    } else {
        format!(
            "the key lacks the grant {} (or {})",
            missing.as_str(),
            alternatives.join(" or ")
        )
    };
    Error::new(Code::GrantDenied, message).with_details(json!({
        "grant": missing.as_str(),
        "also_satisfied_by": alternatives,
    }))
}

/// Rate limit, then note the use (coalesced; no store write here).
fn count_use(state: &AppState, key: &AgentKey) -> Result<(), Error> {
    super::extract::rate_limit(state, &key.id, key.rate_limit_per_min)?;
    state.usage.note_use(key, clock::now_rfc3339());
    Ok(())
}

async fn resolve(
    state: &AppState,
    headers: &HeaderMap,
    legacy: Legacy,
) -> Result<Principal, Error> {
    let header = |name: &str| -> Result<Option<&str>, Error> {
        match headers.get(name) {
            None => Ok(None),
            Some(v) => v.to_str().map(Some).map_err(|_| {
                Error::unauthenticated(format!("the {name} header is not valid text"))
            }),
        }
    };
    let presented = Presented {
        authorization: header("authorization")?,
        api_key: header("x-api-key")?,
    };
    auth::resolve(&state.store, &state.jwt, presented, legacy).await
}

/// The `token` query parameter, percent-decoded.
fn webhook_token(uri: &Uri) -> Option<String> {
    let Query(mut params) = Query::<HashMap<String, String>>::try_from_uri(uri).ok()?;
    params.remove("token")
}

fn by_stream_ticket(state: &AppState, uri: &Uri) -> Result<Caller, Error> {
    let Query(mut params) =
        Query::<HashMap<String, String>>::try_from_uri(uri).unwrap_or(Query(HashMap::new()));
    let Some(ticket) = params.remove("ticket") else {
        return Err(Error::unauthenticated(
            "a valid agent key, session token or stream ticket is required",
        ));
    };
    match state
        .stream_tickets
        .redeem(&ticket, std::time::Instant::now())
    {
        Some(principal) => Ok(Caller::Principal(Box::new(principal))),
        None => Err(Error::unauthenticated(
            "the stream ticket is unknown, used or expired; ask for a new one",
        )),
    }
}

async fn by_webhook_token(state: &AppState, token: &str) -> Result<Caller, Error> {
    let ws = webhooks::resolve_token(&state.store, token).await?;
    super::extract::rate_limit(
        state,
        &webhooks::token_rate_bucket(ws),
        state.config.webhook_token_rate_per_min,
    )?;
    Ok(Caller::WebhookToken(ws))
}

// ---- The rule as documentation -----------------------------------------------------------

impl Rule {
    /// The credential kinds the rule accepts, as named in `x-access.credentials`.
    pub fn credential_kinds(&self) -> Vec<&'static str> {
        let mut kinds = Vec::new();
        match self.anonymous {
            Anonymous::Public | Anonymous::Demo => kinds.push("none"),
            Anonymous::WebhookToken => kinds.push("webhook_token"),
            Anonymous::Signature => kinds.push("signature"),
            Anonymous::StreamTicket => kinds.push("stream_ticket"),
            Anonymous::Refused => {}
        }
        if matches!(self.anonymous, Anonymous::Public | Anonymous::Signature) {
            return kinds;
        }
        if self.jwt {
            kinds.push("jwt");
        }
        if self.key != KeyAccess::Refused {
            kinds.push("agent_key");
        }
        if self.legacy {
            kinds.push("legacy_key");
        }
        kinds
    }

    /// The route grants an agent key needs (empty when keys are refused or need none).
    pub fn key_grants(&self) -> &'static [RouteGrant] {
        match self.key {
            KeyAccess::Grants(g) => g,
            _ => &[],
        }
    }

    /// `x-access`: the machine-readable rule.
    pub fn extension(&self) -> Value {
        let grants: Vec<&str> = self.key_grants().iter().map(|g| g.as_str()).collect();
        let also: Vec<&str> = self
            .key_grants()
            .iter()
            .flat_map(|g| g.also_satisfied_by().iter().copied())
            .collect();
        json!({
            "credentials": self.credential_kinds(),
            "agent_key_grants": grants,
            "agent_key_grants_also_satisfied_by": also,
            "gateway": self.key == KeyAccess::Gateway,
            "owner_only": self.owner_only,
            "effect": match self.effect { Effect::Read => "read", Effect::Write => "write" },
        })
    }

    /// One sentence for people.
    pub fn describe(&self) -> String {
        let mut who = Vec::new();
        match self.anonymous {
            Anonymous::Public => return "Access: no credential needed.".to_owned(),
            Anonymous::Signature => {
                return "Access: no credential; the provider's signature over the body is verified."
                    .to_owned()
            }
            Anonymous::Demo => who.push("no credential (demo data)".to_owned()),
            Anonymous::WebhookToken => who.push("the workspace's webhook `?token=`".to_owned()),
            Anonymous::StreamTicket => {
                who.push("a one-use `?ticket=` from `POST /v1/stream/ticket`".to_owned())
            }
            Anonymous::Refused => {}
        }
        if self.jwt && self.owner_only {
            who.push(
                "a dashboard session (JWT) of a workspace owner (members: 403 `owner_required`)"
                    .to_owned(),
            );
        } else if self.jwt {
            who.push("a dashboard session (JWT)".to_owned());
        }
        match self.key {
            KeyAccess::Refused => {}
            KeyAccess::Gateway => {
                who.push("an agent key (capability grants are checked per capability)".to_owned())
            }
            KeyAccess::Grants(grants) => {
                let names: Vec<String> = grants
                    .iter()
                    .map(|g| {
                        let mut s = format!("`{}`", g.as_str());
                        for alt in g.also_satisfied_by() {
                            s.push_str(&format!(" (or `{alt}`)"));
                        }
                        s
                    })
                    .collect();
                who.push(format!("an agent key with {}", names.join(" and ")));
            }
        }
        if self.legacy {
            who.push("a legacy `dsk_` key in `X-API-Key`".to_owned());
        }
        let effect = match self.effect {
            Effect::Read => "reads",
            Effect::Write => "writes",
        };
        format!("Access ({effect}): {}.", who.join("; or "))
    }

    /// The OpenAPI security requirements: any one of them suffices. Route grants are listed
    /// as the agent-key schemes' required roles (OpenAPI 3.1 allows roles for non-OAuth
    /// schemes).
    fn security(&self) -> Vec<utoipa::openapi::security::SecurityRequirement> {
        use utoipa::openapi::security::SecurityRequirement;
        let mut out = Vec::new();
        if matches!(
            self.anonymous,
            Anonymous::Public | Anonymous::Signature | Anonymous::Demo
        ) {
            out.push(SecurityRequirement::default());
        }
        if matches!(self.anonymous, Anonymous::Public | Anonymous::Signature) {
            return out;
        }
        if self.anonymous == Anonymous::WebhookToken {
            out.push(SecurityRequirement::new(
                WEBHOOK_TOKEN,
                Vec::<String>::new(),
            ));
        }
        if self.anonymous == Anonymous::StreamTicket {
            out.push(SecurityRequirement::new(
                STREAM_TICKET,
                Vec::<String>::new(),
            ));
        }
        if self.jwt {
            out.push(SecurityRequirement::new(JWT, Vec::<String>::new()));
        }
        if self.key != KeyAccess::Refused || self.legacy {
            let roles: Vec<&str> = self.key_grants().iter().map(|g| g.as_str()).collect();
            if self.key != KeyAccess::Refused {
                out.push(SecurityRequirement::new(AGENT_KEY_BEARER, roles.clone()));
            }
            out.push(SecurityRequirement::new(AGENT_KEY_HEADER, roles));
        }
        out
    }
}

/// Writes every route's rule into the document (replacing hand-written security
/// requirements, so the document cannot disagree with what is enforced).
pub fn document(doc: &mut utoipa::openapi::OpenApi) {
    for (path, item) in doc.paths.paths.iter_mut() {
        let ops = [
            ("GET", &mut item.get),
            ("PUT", &mut item.put),
            ("POST", &mut item.post),
            ("DELETE", &mut item.delete),
            ("PATCH", &mut item.patch),
            ("HEAD", &mut item.head),
            ("OPTIONS", &mut item.options),
            ("TRACE", &mut item.trace),
        ];
        for (method, op) in ops {
            let Some(op) = op.as_mut() else { continue };
            let Ok(method) = Method::from_bytes(method.as_bytes()) else {
                continue;
            };
            let Some(rule) = rule_for(&method, path) else {
                continue;
            };
            op.security = Some(rule.security());
            let ext = op.extensions.get_or_insert_with(Default::default);
            ext.insert("x-access".to_owned(), rule.extension());
            let line = rule.describe();
            op.description = Some(match op.description.take() {
                Some(d) if !d.is_empty() => format!("{d}\n\n{line}"),
                _ => line,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_route_has_a_rule() {
        let (_, doc) = super::super::routes();
        let mut served = std::collections::HashSet::new();
        for (path, item) in &doc.paths.paths {
            for (method, op) in [
                ("GET", &item.get),
                ("PUT", &item.put),
                ("POST", &item.post),
                ("DELETE", &item.delete),
                ("PATCH", &item.patch),
            ] {
                if op.is_some() {
                    let m = Method::from_bytes(method.as_bytes()).expect("method");
                    assert!(
                        rule_for(&m, path).is_some(),
                        "{method} {path} has no access rule in http::access::RULES"
                    );
                    served.insert((method, path.as_str()));
                }
            }
        }
        // A rule may land before its route (people work in parallel); it is only reported.
        for (method, path, _) in RULES {
            if !served.contains(&(*method, *path)) {
                eprintln!("access rule for {method} {path}, which is not routed");
            }
        }
    }

    #[test]
    fn unruled_methods_of_a_ruled_path_are_405_with_allow() {
        assert_eq!(methods_of("/mcp"), Some(vec!["POST", "DELETE"]));
        assert_eq!(methods_of("/healthz"), Some(vec!["GET", "HEAD"]));
        assert_eq!(methods_of("/nowhere"), None);
        let r = method_not_allowed(&["GET", "HEAD"]);
        assert_eq!(r.status(), axum::http::StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(r.headers()[axum::http::header::ALLOW], "GET,HEAD");
    }

    #[test]
    fn rules_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for (method, path, _) in RULES {
            assert!(seen.insert((method, path)), "two rules for {method} {path}");
        }
    }

    #[test]
    fn rules_follow_design() {
        // Nothing that changes data outside the gateway and ingestion is open to keys.
        for (method, path, rule) in RULES {
            if rule.effect == Effect::Write && rule.key != KeyAccess::Refused {
                let gateway = rule.key == KeyAccess::Gateway;
                let ingest = rule.key_grants() == [RouteGrant::EventsWrite];
                let graph_reads = rule.key_grants() == [RouteGrant::GraphRead];
                assert!(
                    gateway || ingest || graph_reads,
                    "{method} {path} lets keys write"
                );
            }
            if rule.legacy {
                assert_eq!(rule.key_grants(), [RouteGrant::EventsWrite], "{path}");
            }
            if rule.owner_only {
                assert!(rule.jwt && rule.key == KeyAccess::Refused && rule.effect == Write);
            }
        }
        let head = rule_for(&Method::HEAD, "/v1/customers").expect("HEAD is GET");
        assert_eq!(head.key_grants(), [RouteGrant::CustomersRead]);
    }

    #[test]
    fn descriptions_name_the_grants() {
        let d = Rule::ingest().describe();
        assert!(
            d.contains("`events:write` (or `capability:events.ingest`) (or `v1:events:write`)"),
            "{d}"
        );
        assert_eq!(
            Rule::ingest().credential_kinds(),
            ["jwt", "agent_key", "legacy_key"]
        );
        assert_eq!(PUBLIC.credential_kinds(), ["none"]);
    }

    #[test]
    fn webhook_token_is_read_from_the_query() {
        let uri: Uri = "/api/webhooks/generic?a=1&token=whk_x%2By"
            .parse()
            .expect("uri");
        assert_eq!(webhook_token(&uri).as_deref(), Some("whk_x+y"));
        let uri: Uri = "/api/webhooks/generic?a=1".parse().expect("uri");
        assert_eq!(webhook_token(&uri), None);
    }
}
