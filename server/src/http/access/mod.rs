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

mod document;
mod rules;
mod table;

use crate::http::error::ErrorResponse;
use std::collections::HashMap;

use axum::extract::{MatchedPath, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

pub use document::document;
pub use rules::{Anonymous, Effect, KeyAccess, Rule};
pub use table::{rule_for, RULES};

use crate::state::AppState;
use svc_core::auth::{self, Legacy, Presented, Principal};
use svc_core::error::{Code, Error};
use svc_core::keys::{AgentKey, KeyKind, RouteGrant};
use svc_core::plumbing::clock;
use svc_core::store::WorkspaceId;
use svc_domains::events::webhooks;
use table::methods_of;

/// 405 with the error body and `Allow`, as the router answers it elsewhere.
fn method_not_allowed(methods: &[&str]) -> Response {
    let mut response = ErrorResponse(Error::new(
        Code::MethodNotAllowed,
        "this route does not support the request method",
    ))
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
        return ErrorResponse(Error::internal(
            "the access layer ran outside a matched route",
        ))
        .into_response();
    };
    let Some(rule) = rule_for(req.method(), path.as_str()) else {
        // The route layer also wraps the router's 405 answer for methods a path does not
        // serve; answer it here, from the table, rather than let anything unruled through.
        return match methods_of(path.as_str()) {
            Some(methods) => method_not_allowed(&methods),
            None => ErrorResponse(Error::internal(format!(
                "{} {} has no access rule (http::access::RULES)",
                req.method(),
                path.as_str()
            )))
            .into_response(),
        };
    };
    match authorize(&state, &rule, req.headers(), req.uri()).await {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(e) => {
            let mut response = ErrorResponse(e).into_response();
            if rule.oauth && response.status() == axum::http::StatusCode::UNAUTHORIZED {
                // RFC 9728 §5.1: where an MCP client learns how to get a token.
                let presented = req.headers().contains_key("authorization");
                if let Some(v) = crate::oauth::challenge(&state, presented) {
                    response
                        .headers_mut()
                        .insert(axum::http::header::WWW_AUTHENTICATE, v);
                }
            }
            response
        }
    }
}

async fn authorize(
    state: &AppState,
    rule: &Rule,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<Caller, Error> {
    if matches!(
        rule.anonymous,
        Anonymous::Public | Anonymous::Signature | Anonymous::WriteKey
    ) {
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
            (Anonymous::StreamTicket, _) => by_stream_ticket(state, uri).await,
            (Anonymous::WebhookToken, Some(token)) => by_webhook_token(state, &token).await,
            _ => Err(Error::unauthenticated(
                "a valid agent key or session token is required",
            )),
        };
    }
    if let Some(token) = oauth_access_token(headers) {
        if headers.contains_key("x-api-key") {
            return Err(Error::new(
                Code::AmbiguousCredentials,
                "the Authorization and X-API-Key headers carry different credentials; send one",
            ));
        }
        return by_oauth_token(state, rule, token).await;
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
            if rule.owner_only && session.user.role != svc_core::accounts::Role::Owner {
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

pub(crate) fn grant_denied(missing: RouteGrant) -> Error {
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
    super::rate_limit::rate_limit(state, &key.id, key.rate_limit_per_min)?;
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

/// The MCP OAuth access token of `Authorization: Bearer svc_oat_...`, if that is what the
/// request carries.
fn oauth_access_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get("authorization")?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && token.starts_with(svc_core::oauth::ACCESS_PREFIX))
        .then_some(token)
}

/// An MCP OAuth access token: only on routes of its audience (`rule.oauth`, i.e. `/mcp`), and
/// only when it was issued for this server's `/mcp` URL; it then resolves to its approval's
/// key and is admitted exactly as that agent key would be.
async fn by_oauth_token(state: &AppState, rule: &Rule, token: &str) -> Result<Caller, Error> {
    if !rule.oauth {
        return Err(Error::unauthenticated(
            "an MCP OAuth access token is valid only at /mcp (its audience); use an agent key here",
        ));
    }
    let resource = crate::oauth::resource(state);
    let key = match svc_core::oauth::authenticate(&state.store, token, &resource).await? {
        Ok(key) => key,
        Err(rejection) => return Err(Error::unauthenticated(rejection.to_string())),
    };
    let principal = Principal::Key(key);
    admit(state, rule, &principal)?;
    Ok(Caller::Principal(Box::new(principal)))
}

/// The `token` query parameter, percent-decoded.
fn webhook_token(uri: &Uri) -> Option<String> {
    let Query(mut params) = Query::<HashMap<String, String>>::try_from_uri(uri).ok()?;
    params.remove("token")
}

/// The credential a ticket was issued to, if the ticket is live and the credential still holds
/// (a key revoked after the ticket was issued opens nothing).
async fn by_stream_ticket(state: &AppState, uri: &Uri) -> Result<Caller, Error> {
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
        Some(principal) if svc_core::auth::still_valid(&state.store, &principal).await? => {
            Ok(Caller::Principal(Box::new(principal)))
        }
        Some(_) => Err(Error::unauthenticated(
            "the credential this stream ticket was issued to has been revoked",
        )),
        None => Err(Error::unauthenticated(
            "the stream ticket is unknown, used or expired; ask for a new one",
        )),
    }
}

async fn by_webhook_token(state: &AppState, token: &str) -> Result<Caller, Error> {
    let ws = webhooks::resolve_token(&state.store, token).await?;
    super::rate_limit::rate_limit(
        state,
        &webhooks::token_rate_bucket(ws),
        state.config.webhook_token_rate_per_min,
    )?;
    Ok(Caller::WebhookToken(ws))
}

#[cfg(test)]
mod tests {
    use super::table::*;
    use super::*;
    use axum::http::Method;
    use Effect::Write;

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
        assert_eq!(methods_of("/mcp"), Some(vec!["POST"]));
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
