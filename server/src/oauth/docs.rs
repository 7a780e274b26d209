//! The OAuth side of `/openapi.json`: the `mcp_oauth` security scheme (authorization code with
//! PKCE at this service's endpoints) and its requirement on `/mcp`. The endpoints themselves
//! are documented by their handlers' attributes; the consent page `/oauth/authorize` is the
//! dashboard's (HTML) and is described in the scheme.

use utoipa::openapi::security::{
    AuthorizationCode, Flow, OAuth2, Scopes, SecurityRequirement, SecurityScheme,
};

/// The scheme's name in the document.
pub const SCHEME: &str = "mcp_oauth";

/// Adds the scheme and `/mcp`'s requirement (after `access::document` wrote the rules).
pub fn document(doc: &mut utoipa::openapi::OpenApi) {
    let flow = AuthorizationCode::new("/oauth/authorize", "/oauth/token", Scopes::new());
    let mut scheme = OAuth2::new([Flow::AuthorizationCode(flow)]);
    scheme.description = Some(
        "MCP authorization (OAuth 2.1, docs/mcp-oauth.md): discovery through \
         `/.well-known/oauth-protected-resource` and `/.well-known/oauth-authorization-server`, \
         registration by `POST /oauth/register` or a client metadata document URL, PKCE S256, \
         `resource` = this server's `/mcp`. `/oauth/authorize` is the dashboard's consent page \
         (a signed-in person picks the grants and modes to hand over). The access token acts \
         as an agent key with those grants, at `/mcp` only."
            .to_owned(),
    );
    doc.components
        .get_or_insert_with(Default::default)
        .add_security_scheme(SCHEME, SecurityScheme::OAuth2(scheme));
    let Some(op) = doc
        .paths
        .paths
        .get_mut("/mcp")
        .and_then(|item| item.post.as_mut())
    else {
        return;
    };
    op.security
        .get_or_insert_with(Vec::new)
        .push(SecurityRequirement::new(SCHEME, Vec::<String>::new()));
    if let Some(access) = op
        .extensions
        .as_mut()
        .and_then(|e| e.get_mut("x-access"))
        .and_then(|a| a.get_mut("credentials"))
        .and_then(|c| c.as_array_mut())
    {
        access.push("mcp_oauth_token".into());
    }
    let line = "An MCP OAuth access token (`Authorization: Bearer svc_oat_...`) acts as the \
                agent key its approval made. Without a valid credential the 401 carries \
                `WWW-Authenticate: Bearer resource_metadata=\"<base>/.well-known/oauth-protected-resource\"`.";
    op.description = Some(match op.description.take() {
        Some(d) if !d.is_empty() => format!("{d}\n\n{line}"),
        _ => line.to_owned(),
    });
}
