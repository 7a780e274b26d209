//! Which network destinations integrations may reach (issue 29: SSRF).
//!
//! A workspace owner chooses the URLs and hosts of its integrations, so without a rule any
//! tenant could make svcd call the inside network (a metadata service, an admin port, svcd
//! itself) with stored credentials. The rule is the operator's: by default only public
//! addresses; loopback and private ranges only where `--outbound-allow` lists them (a
//! self-hoster's local model at `http://127.0.0.1:11434/v1`).
//!
//! The check runs on the addresses a connection will actually use: names are resolved by
//! [`Resolver`] (plugged into the HTTP client, and used by the SMTP adapter before it connects
//! to the resolved address), so a name that resolves to a public address at save time and to
//! a private one later (DNS rebinding) is refused at connect time. IP literals in any spelling
//! (`2130706433`, `0x7f.1`, `127.1`) are normalised by the URL parser before the check.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

/// An address range: an address and a prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpRange {
    base: IpAddr,
    prefix: u8,
}

impl IpRange {
    /// Parses `10.0.0.0/8`, `::1/128` or a bare address (a range of one).
    pub fn parse(s: &str) -> Result<IpRange, String> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let base: IpAddr = addr
            .trim_matches(|c| c == '[' || c == ']')
            .parse()
            .map_err(|_| format!("{s:?} is not an IP address or range (10.0.0.0/8, ::1)"))?;
        let max = if base.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{s:?}: the prefix length must be 0 to {max}"))?,
        };
        Ok(IpRange { base, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.base, canonical(ip)) {
            (IpAddr::V4(b), IpAddr::V4(a)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(b) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(b), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(b) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for IpRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.base, self.prefix)
    }
}

/// The operator's rule for outbound destinations: public addresses, plus the listed ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Destinations {
    allowed: Vec<IpRange>,
}

impl Destinations {
    /// Public addresses only (the default of a hosted deployment).
    pub fn public_only() -> Destinations {
        Destinations::default()
    }

    /// Public addresses and the given non-public ranges.
    pub fn allowing(allowed: Vec<IpRange>) -> Destinations {
        Destinations { allowed }
    }

    /// Parses the `--outbound-allow` list: comma-separated ranges, or `private` for every
    /// loopback, private and link-local range (a self-hosted, single-tenant deployment).
    pub fn parse_allow_list(s: &str) -> Result<Vec<IpRange>, String> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part.eq_ignore_ascii_case("private") {
                out.extend(
                    [
                        "127.0.0.0/8",
                        "10.0.0.0/8",
                        "172.16.0.0/12",
                        "192.168.0.0/16",
                        "100.64.0.0/10",
                        "169.254.0.0/16",
                        "::1/128",
                        "fc00::/7",
                        "fe80::/10",
                    ]
                    .iter()
                    .filter_map(|r| IpRange::parse(r).ok()),
                );
            } else {
                out.push(IpRange::parse(part)?);
            }
        }
        Ok(out)
    }

    /// Whether a connection to `ip` is allowed.
    pub fn allows(&self, ip: IpAddr) -> bool {
        is_public(ip) || self.allowed.iter().any(|r| r.contains(ip))
    }

    /// `Ok` when `ip` is allowed, else the refusal in words (without any credential).
    pub fn check(&self, host: &str, ip: IpAddr) -> Result<(), Refused> {
        if self.allows(ip) {
            Ok(())
        } else {
            Err(Refused {
                host: host.to_owned(),
                ip,
            })
        }
    }

    /// Resolves `host` (a name or an address literal) and keeps the allowed addresses; an error
    /// when none is left, so nothing connects to a refused address.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, ResolveError> {
        let literal = host.trim_matches(|c| c == '[' || c == ']');
        if let Ok(ip) = literal.parse::<IpAddr>() {
            self.check(host, ip)?;
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        let found: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| ResolveError::Lookup(format!("could not resolve {host}: {e}")))?
            .collect();
        let allowed: Vec<SocketAddr> = found
            .iter()
            .copied()
            .filter(|a| self.allows(a.ip()))
            .collect();
        match (allowed.is_empty(), found.first()) {
            (false, _) => Ok(allowed),
            (true, Some(first)) => Err(ResolveError::Refused(Refused {
                host: host.to_owned(),
                ip: first.ip(),
            })),
            (true, None) => Err(ResolveError::Lookup(format!(
                "{host} resolved to no address"
            ))),
        }
    }

    /// The resolver for reqwest: the same rule at connect time.
    pub fn resolver(&self) -> Arc<Resolver> {
        Arc::new(Resolver(self.clone()))
    }
}

/// A destination the rule refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{host} is {ip}, a loopback, private, link-local or otherwise non-public address; \
     integrations may only reach public addresses unless the operator allows the range \
     (svcd serve --outbound-allow)"
)]
pub struct Refused {
    pub host: String,
    pub ip: IpAddr,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error(transparent)]
    Refused(#[from] Refused),
    #[error("{0}")]
    Lookup(String),
}

/// reqwest's DNS hook: resolves with the system resolver and drops refused addresses.
#[derive(Debug)]
pub struct Resolver(Destinations);

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let rule = self.0.clone();
        Box::pin(async move {
            // reqwest connects to the port of the URL whatever port these addresses carry.
            let addrs = rule.resolve(name.as_str(), 0).await?;
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) is its IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// Whether `ip` is a globally routable unicast address (the ranges of the IANA special-purpose
/// registries are not).
pub fn is_public(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0
        // carrier-grade NAT 100.64.0.0/10
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments 192.0.0.0/24
        || (a == 192 && b == 0 && c == 0)
        // benchmarking 198.18.0.0/15
        || (a == 198 && (b == 18 || b == 19))
        // reserved 240.0.0.0/4
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    // Addresses that embed an IPv4 address are judged by it (NAT64, 6to4).
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return is_public_v4(Ipv4Addr::new(
            (s[6] >> 8) as u8,
            s[6] as u8,
            (s[7] >> 8) as u8,
            s[7] as u8,
        ));
    }
    if s[0] == 0x2002 {
        return is_public_v4(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        // IPv4-compatible ::a.b.c.d (deprecated) and the discard prefix 100::/64
        || s[0..6] == [0, 0, 0, 0, 0, 0]
        || (s[0] == 0x100 && s[1..4] == [0, 0, 0])
        // unique local fc00::/7 (e.g. fd00:ec2::254, a cloud metadata service)
        || (s[0] & 0xfe00) == 0xfc00
        // link-local fe80::/10 and the deprecated site-local fec0::/10
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xffc0) == 0xfec0
        // documentation 2001:db8::/32, and 2001::/23 IETF protocol assignments (Teredo, ...)
        || (s[0] == 0x2001 && s[1] == 0x0db8)
        || (s[0] == 0x2001 && s[1] < 0x200))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn inside_addresses_are_not_public() {
        for s in [
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2001:db8::1",
        ] {
            assert!(!is_public(ip(s)), "{s}");
            assert!(
                Destinations::public_only().check("h", ip(s)).is_err(),
                "{s}"
            );
        }
        for s in ["93.184.215.14", "1.1.1.1", "2606:4700::1111", "8.8.8.8"] {
            assert!(is_public(ip(s)), "{s}");
        }
    }

    #[test]
    fn the_url_parser_normalises_odd_ipv4_spellings_before_the_check() {
        for raw in [
            "http://2130706433/",
            "http://0x7f.1/",
            "http://127.1/",
            "http://0177.0.0.1/",
        ] {
            let url = reqwest::Url::parse(raw).expect("url");
            assert_eq!(url.host_str(), Some("127.0.0.1"), "{raw}");
        }
    }

    #[test]
    fn the_operator_allows_ranges_explicitly() {
        let allow = Destinations::parse_allow_list("127.0.0.1/32, 10.1.0.0/16").expect("list");
        let d = Destinations::allowing(allow);
        assert!(d.allows(ip("127.0.0.1")));
        assert!(d.allows(ip("::ffff:127.0.0.1")));
        assert!(!d.allows(ip("127.0.0.2")));
        assert!(d.allows(ip("10.1.200.3")));
        assert!(!d.allows(ip("10.2.0.1")));
        assert!(d.allows(ip("8.8.8.8")));
        let private = Destinations::allowing(Destinations::parse_allow_list("private").expect("p"));
        assert!(private.allows(ip("192.168.0.10")) && private.allows(ip("fd00::1")));
        assert!(Destinations::parse_allow_list("10.0.0.0/33").is_err());
        assert!(Destinations::parse_allow_list("localhost").is_err());
    }

    #[tokio::test]
    async fn names_are_checked_after_resolution() {
        let d = Destinations::public_only();
        let e = d.resolve("localhost", 80).await.expect_err("loopback");
        assert!(matches!(e, ResolveError::Refused(_)), "{e}");
        assert!(e.to_string().contains("--outbound-allow"), "{e}");
        let ok = Destinations::allowing(Destinations::parse_allow_list("private").expect("p"))
            .resolve("localhost", 80)
            .await
            .expect("allowed");
        assert!(ok.iter().all(|a| a.ip().is_loopback()));
    }
}
