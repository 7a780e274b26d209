//! Segment's HTTP Tracking API under `/segment` (an official client whose host is
//! `http(s)://<svcd>/segment` works unmodified), the write keys it authenticates with, and the
//! read-back of anonymous ids. The domain is `events::segment`; docs/segment.md.
//!
//! The Tracking API routes authenticate in the handler, as Segment does: the write key is the
//! HTTP Basic user name or the body's `writeKey` (which may be gzipped), so the access layer
//! lets them through (`Anonymous::WriteKey`). An agent key with `events:write` is accepted
//! the same way, or as `Authorization: Bearer` or `X-API-Key`.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use base64::Engine as _;

use crate::http::error::{ErrorBody, ErrorResponse};
use crate::http::extract::{AnyAuth, ApiJson, ApiPath, JwtUser};
use crate::http::rate_limit::rate_limit;
use crate::state::AppState;
use svc_core::error::Error;
use svc_core::keys::{KeyKind, RouteGrant};
use svc_core::plumbing::clock;
use svc_core::store::WorkspaceId;
use svc_domains::events::segment::identity::{self, AnonymousView};
use svc_domains::events::segment::write_keys::{
    self, CreateWriteKey, CreatedWriteKey, WriteKeyList, WriteKeyView,
};
use svc_domains::events::segment::{self, Accepted};

/// The credential a request presents, before the body is read.
fn header_credential(headers: &HeaderMap) -> Result<Option<String>, Error> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        // An agent key may also come as `X-API-Key`, as on the other ingestion routes.
        return Ok(headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned));
    };
    let value = value
        .to_str()
        .map_err(|_| Error::unauthenticated("the Authorization header is not valid text"))?
        .trim();
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| Error::unauthenticated("the Basic credentials are not valid base64"))?;
        // Segment's clients send `writeKey:` (the key as user name, no password).
        let user = decoded.split(':').next().unwrap_or_default().trim();
        return Ok((!user.is_empty()).then(|| user.to_owned()));
    }
    if scheme.eq_ignore_ascii_case("bearer") && !rest.trim().is_empty() {
        return Ok(Some(rest.trim().to_owned()));
    }
    Err(Error::unauthenticated(
        "send the write key as the HTTP Basic user name or as writeKey in the body",
    ))
}

/// The workspace a write key (or an agent key with `events:write`) writes to, after its rate
/// limit: 401 for anything unknown, 429 with `Retry-After` past the key's limit.
async fn authenticate(state: &AppState, credential: &str) -> Result<WorkspaceId, Error> {
    if credential.starts_with(write_keys::PREFIX) {
        let key = write_keys::authenticate(&state.store, credential)
            .await?
            .ok_or_else(|| Error::unauthenticated("unknown or revoked write key"))?;
        rate_limit(
            state,
            &write_keys::rate_bucket(&key),
            key.rate_limit_per_min,
        )?;
        return Ok(WorkspaceId(key.workspace));
    }
    if svc_core::keys::token::parse(credential) == Some(KeyKind::Agent) {
        let key = svc_core::keys::authenticate(&state.store, credential)
            .await?
            .ok_or_else(|| Error::unauthenticated("unknown or revoked agent key"))?;
        rate_limit(state, &key.id, key.rate_limit_per_min)?;
        state.usage.note_use(&key, clock::now_rfc3339());
        if !key.holds(RouteGrant::EventsWrite) {
            return Err(crate::http::access::grant_denied(RouteGrant::EventsWrite));
        }
        return Ok(key.workspace_id());
    }
    if svc_core::auth::jwt::looks_like_jwt(credential) {
        return Err(Error::forbidden(
            "this route needs a write key or an agent key; a dashboard session (JWT) cannot use it",
        ));
    }
    Err(Error::unauthenticated("unknown write key"))
}

/// Every Tracking API route: authenticate, decode (gzip, Segment's size limits), ingest.
async fn track_api(
    state: AppState,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
    call: Option<&str>,
) -> Result<ApiJson<Accepted>, Error> {
    let received_at = clock::now();
    let from_header = header_credential(&headers)?;
    let header_ws = match &from_header {
        Some(c) => Some(authenticate(&state, c).await?),
        None => None,
    };
    let limit = if call.is_some() {
        segment::MAX_MESSAGE_BYTES
    } else {
        segment::MAX_BATCH_BYTES
    };
    // Past the router's 1 MiB limit the body is not read at all; Segment answers 400.
    let bytes = body.map_err(|e| {
        Error::invalid_input(format!("the body could not be read: {}", e.body_text()))
    })?;
    let gzip = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("gzip"));
    let body = segment::decode_body(&bytes, gzip, limit)?;
    let ws = match header_ws {
        Some(ws) => ws,
        None => match segment::body_write_key(&body) {
            Some(k) => authenticate(&state, k).await?,
            None => {
                return Err(Error::unauthenticated(
                    "a write key is required: HTTP Basic user name or writeKey in the body",
                ))
            }
        },
    };
    let accepted =
        segment::receive(&state.store, &state.realtime, ws, call, body, received_at).await?;
    Ok(ApiJson(accepted))
}

macro_rules! tracking_route {
    ($name:ident, $path:literal, $call:expr, $schema:ty, $doc:literal) => {
        #[doc = $doc]
        #[utoipa::path(post, path = $path, tag = "segment",
            request_body(content = $schema, description = "JSON, optionally `Content-Encoding: gzip`"),
            responses(
            (status = 200, description = "accepted: `{\"success\": true}` plus what became of each message", body = Accepted),
            (status = 400, description = "malformed JSON, a body over Segment's limit (32 KB a call, 500 KB a batch), or (single calls) an invalid message", body = ErrorBody),
            (status = 401, description = "unknown or revoked write key", body = ErrorBody),
            (status = 403, description = "read-only workspace, or an agent key without events:write", body = ErrorBody),
            (status = 429, description = "the key's rate limit; `Retry-After` says when to retry", body = ErrorBody),
        ))]
        pub async fn $name(
            State(state): State<AppState>,
            headers: HeaderMap,
            body: Result<Bytes, BytesRejection>,
        ) -> Result<ApiJson<Accepted>, ErrorResponse> {
            Ok(track_api(state, headers, body, $call).await?)
        }
    };
}

tracking_route!(
    track,
    "/segment/v1/track",
    Some("track"),
    segment::SegmentMessage,
    "Segment `track`: an action of a user (`event`, `properties`)."
);
tracking_route!(
    identify,
    "/segment/v1/identify",
    Some("identify"),
    segment::SegmentMessage,
    "Segment `identify`: who the user is (`traits`); links `anonymousId` to the customer."
);
tracking_route!(
    page,
    "/segment/v1/page",
    Some("page"),
    segment::SegmentMessage,
    "Segment `page`: a page view (`name`, `properties`), a touchpoint `page:<name>`."
);
tracking_route!(
    screen,
    "/segment/v1/screen",
    Some("screen"),
    segment::SegmentMessage,
    "Segment `screen`: a mobile screen view, a touchpoint `screen:<name>`."
);
tracking_route!(
    group,
    "/segment/v1/group",
    Some("group"),
    segment::SegmentMessage,
    "Segment `group`: links the customer to the Company node of `groupId` (its `traits`)."
);
tracking_route!(
    alias,
    "/segment/v1/alias",
    Some("alias"),
    segment::SegmentMessage,
    "Segment `alias`: `previousId` (an anonymous or earlier user id) is the same person as `userId`."
);
tracking_route!(
    batch,
    "/segment/v1/batch",
    None,
    segment::SegmentBatch,
    "Segment `batch`: up to 500 KB of messages of any type; valid ones are kept, the others listed in `rejected`."
);
tracking_route!(
    import,
    "/segment/v1/import",
    None,
    segment::SegmentBatch,
    "Segment `import`: the same as `batch`."
);

/// Create a source write key; the plaintext `write_key` is in this response only.
#[utoipa::path(post, path = "/api/v1/segment/write-keys", tag = "segment",
    request_body = CreateWriteKey, responses(
    (status = 201, body = CreatedWriteKey),
    (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
    (status = 409, description = "the workspace already has 100 write keys that are not revoked", body = ErrorBody),
))]
pub async fn create_write_key(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiJson(body): ApiJson<CreateWriteKey>,
) -> Result<(StatusCode, ApiJson<CreatedWriteKey>), ErrorResponse> {
    let created = write_keys::create(&state.store, s.workspace, &s.user.id, body).await?;
    tracing::info!(write_key_id = %created.key.id, "segment write key created");
    Ok((StatusCode::CREATED, ApiJson(created)))
}

/// The workspace's write keys, newest first (never the plaintext).
#[utoipa::path(get, path = "/api/v1/segment/write-keys", tag = "segment", responses(
    (status = 200, body = WriteKeyList),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
))]
pub async fn list_write_keys(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
) -> Result<ApiJson<WriteKeyList>, ErrorResponse> {
    Ok(ApiJson(write_keys::list(&state.store, s.workspace).await?))
}

/// Revoke a write key (idempotent): its requests are 401 from now on.
#[utoipa::path(delete, path = "/api/v1/segment/write-keys/{id}", tag = "segment",
    params(("id" = String, Path, description = "The write key's id")), responses(
    (status = 200, body = WriteKeyView),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn revoke_write_key(
    State(state): State<AppState>,
    JwtUser(s): JwtUser,
    ApiPath(id): ApiPath<String>,
) -> Result<ApiJson<WriteKeyView>, ErrorResponse> {
    Ok(ApiJson(
        write_keys::revoke(&state.store, s.workspace, &id).await?,
    ))
}

/// The customer an `anonymousId` belongs to now, and whether (how) a known customer claimed it.
#[utoipa::path(get, path = "/api/v1/segment/anonymous-ids/{anonymous_id}", tag = "segment",
    params(("anonymous_id" = String, Path, description = "Segment's anonymousId")), responses(
    (status = 200, body = AnonymousView),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody),
    (status = 404, body = ErrorBody),
))]
pub async fn anonymous_id(
    State(state): State<AppState>,
    AnyAuth(p): AnyAuth,
    ApiPath(anonymous_id): ApiPath<String>,
) -> Result<ApiJson<AnonymousView>, ErrorResponse> {
    Ok(ApiJson(
        identity::lookup(&state.store, p.workspace(), anonymous_id).await?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_auth(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(v).expect("header"),
        );
        h
    }

    #[test]
    fn basic_user_name_is_the_write_key() {
        let b64 = base64::engine::general_purpose::STANDARD.encode("swk_abc:");
        assert_eq!(
            header_credential(&with_auth(&format!("Basic {b64}"))).expect("ok"),
            Some("swk_abc".to_owned())
        );
        assert_eq!(
            header_credential(&with_auth("Bearer svc_live_x")).expect("ok"),
            Some("svc_live_x".to_owned())
        );
        assert_eq!(header_credential(&HeaderMap::new()).expect("ok"), None);
        let mut h = HeaderMap::new();
        h.insert("x-api-key", HeaderValue::from_static("svc_live_y"));
        assert_eq!(
            header_credential(&h).expect("ok"),
            Some("svc_live_y".to_owned())
        );
        assert!(header_credential(&with_auth("Basic !!!")).is_err());
        assert!(header_credential(&with_auth("Digest x")).is_err());
    }
}
