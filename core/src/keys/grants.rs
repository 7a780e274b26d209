//! Route grants: what opens a non-gateway route to an agent key (DESIGN.md §4, "Access outside
//! the gateway"). Capability grants (`capability:<id>`) are the gateway's; these name areas of
//! the REST API. Which route needs which grant is declared in `http::access`.

use super::record::AgentKey;

/// A grant in a key's `grants` that opens a group of routes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RouteGrant {
    /// Customer, segment, campaign, opportunity, journey, cohort and product reads (and the
    /// reports and live stream built from them).
    CustomersRead,
    /// Graph export with a credential, and read-only graph queries.
    GraphRead,
    /// The direct event routes and webhooks.
    EventsWrite,
    PlaybooksRead,
    BrandRead,
    OutboxRead,
}

impl RouteGrant {
    pub const ALL: [RouteGrant; 6] = [
        RouteGrant::CustomersRead,
        RouteGrant::GraphRead,
        RouteGrant::EventsWrite,
        RouteGrant::PlaybooksRead,
        RouteGrant::BrandRead,
        RouteGrant::OutboxRead,
    ];

    /// The grant as written in a key's `grants`.
    pub const fn as_str(self) -> &'static str {
        match self {
            RouteGrant::CustomersRead => "customers:read",
            RouteGrant::GraphRead => "graph:read",
            RouteGrant::EventsWrite => "events:write",
            RouteGrant::PlaybooksRead => "playbooks:read",
            RouteGrant::BrandRead => "brand:read",
            RouteGrant::OutboxRead => "outbox:read",
        }
    }

    pub fn parse(s: &str) -> Option<RouteGrant> {
        RouteGrant::ALL.into_iter().find(|g| g.as_str() == s)
    }

    /// Older grants and legacy scopes that satisfy this grant too: ingestion was open to
    /// `capability:events.ingest` and `v1:events:write` keys before route grants existed.
    pub const fn also_satisfied_by(self) -> &'static [&'static str] {
        match self {
            RouteGrant::EventsWrite => &["capability:events.ingest", "v1:events:write"],
            _ => &[],
        }
    }

    /// Every route grant, comma-separated (for error messages).
    pub fn list() -> String {
        RouteGrant::ALL
            .iter()
            .map(|g| g.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl AgentKey {
    /// Whether the key holds `grant`, directly or through a grant or scope that satisfies it.
    pub fn holds(&self, grant: RouteGrant) -> bool {
        let held = |name: &str| self.grants.iter().chain(&self.scopes).any(|g| g == name);
        held(grant.as_str()) || grant.also_satisfied_by().iter().any(|alt| held(alt))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for g in RouteGrant::ALL {
            assert_eq!(RouteGrant::parse(g.as_str()), Some(g));
        }
        assert_eq!(RouteGrant::parse("customers:write"), None);
        assert_eq!(RouteGrant::parse("capability:context.get"), None);
    }
}
