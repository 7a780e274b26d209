//! The rule as documentation: each operation's security requirement, its `x-access`
//! extension and a line of description, written from the table so the document cannot
//! disagree with what is enforced.

use axum::http::Method;
use serde_json::{json, Value};

use super::rules::{Anonymous, Effect, KeyAccess, Rule};
use super::table::rule_for;
use crate::http::openapi::{
    AGENT_KEY_BEARER, AGENT_KEY_HEADER, JWT, SEGMENT_WRITE_KEY, STREAM_TICKET, WEBHOOK_TOKEN,
};
use svc_core::keys::RouteGrant;

impl Rule {
    /// The credential kinds the rule accepts, as named in `x-access.credentials`.
    pub fn credential_kinds(&self) -> Vec<&'static str> {
        let mut kinds = Vec::new();
        match self.anonymous {
            Anonymous::Public | Anonymous::Demo => kinds.push("none"),
            Anonymous::WebhookToken => kinds.push("webhook_token"),
            Anonymous::Signature => kinds.push("signature"),
            Anonymous::StreamTicket => kinds.push("stream_ticket"),
            Anonymous::WriteKey => kinds.push("segment_write_key"),
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
            Anonymous::WriteKey => who.push(
                "a Segment source write key (HTTP Basic user name, or `writeKey` in the body)"
                    .to_owned(),
            ),
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
        if self.anonymous == Anonymous::WriteKey {
            out.push(SecurityRequirement::new(
                SEGMENT_WRITE_KEY,
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
