//! `svc doctor`: ordered checks of the set-up, each PASSED or FAILED with the fix. A check
//! that needs an earlier one (a reachable server, a valid key) fails with "not checked" when
//! that one failed. Exit 1 when any check fails.

use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use crate::client::{Answer, Client};
use crate::config::KeySource;
use crate::error::{exit, CliError, Result};
use crate::output::Color;
use crate::Ctx;

use super::auth::WHOAMI;
use super::capabilities::LIST;
use super::text;

/// Largest tolerated difference between this machine's clock and the server's.
pub const MAX_SKEW: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct Check {
    pub name: &'static str,
    pub passed: bool,
    pub detail: String,
    pub fix: Option<String>,
}

fn pass(name: &'static str, detail: impl Into<String>) -> Check {
    Check {
        name,
        passed: true,
        detail: detail.into(),
        fix: None,
    }
}

fn fail(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
    Check {
        name,
        passed: false,
        detail: detail.into(),
        fix: Some(fix.into()),
    }
}

pub fn run(ctx: &Ctx) -> Result<u8> {
    let checks = checks(ctx)?;
    let ok = checks.iter().all(|c| c.passed);
    if ctx.out.json {
        let list: Vec<Value> = checks
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "status": if c.passed { "PASSED" } else { "FAILED" },
                    "detail": c.detail,
                    "fix": c.fix,
                })
            })
            .collect();
        ctx.out.json(&json!({"ok": ok, "checks": list}));
    } else {
        let o = &ctx.out;
        for c in &checks {
            let status = if c.passed {
                o.paint("PASSED", Color::Green)
            } else {
                o.paint("FAILED", Color::Red)
            };
            o.line(&format!("{status}  {:<16} {}", c.name, c.detail));
            if let Some(fix) = &c.fix {
                o.line(&format!("        {:<16} fix: {fix}", ""));
            }
        }
    }
    Ok(if ok { exit::OK } else { exit::ERROR })
}

const NAMES: [&str; 8] = [
    "server reachable",
    "version",
    "key valid",
    "grants",
    "modes",
    "quota",
    "rate limit",
    "clock skew",
];

fn not_checked(names: &[&'static str], why: &str, fix: &str) -> Vec<Check> {
    names
        .iter()
        .map(|n| fail(n, format!("not checked: {why}"), fix))
        .collect()
}

fn checks(ctx: &Ctx) -> Result<Vec<Check>> {
    let r = ctx.resolve()?;
    let anon = Client::new(&r.server, None)?;
    let mut out = Vec::new();

    // 1. Server reachable (and its clock, for the last check).
    let started = Instant::now();
    let health = anon.get("/healthz").and_then(Answer::ok);
    let server_date = match &health {
        Ok(a) => {
            out.push(pass(
                NAMES[0],
                format!(
                    "{} answered in {} ms",
                    r.server,
                    started.elapsed().as_millis()
                ),
            ));
            a.header("date")
                .and_then(|d| httpdate::parse_http_date(d).ok())
        }
        Err(e) => {
            out.push(fail(
                NAMES[0],
                format!("{}: {e}", r.server),
                "start svcd (`make run` or `svcd serve`), or point svc at it with --server or \
                 SVC_BASE_URL",
            ));
            out.extend(not_checked(
                &NAMES[1..],
                "the server is unreachable",
                "fix the server address first",
            ));
            return Ok(out);
        }
    };

    // 2. Version: the server's OpenAPI document carries its release.
    out.push(version_check(&anon));

    // 3. Key valid.
    let Some((key, source)) = r.key else {
        out.push(fail(
            NAMES[2],
            "no agent key (not logged in)",
            "run `svc auth login --key <AGENT_KEY>` or set SVC_API_KEY",
        ));
        out.extend(not_checked(&NAMES[3..7], "no key", "log in first"));
        out.push(clock_check(server_date));
        return Ok(out);
    };
    let client = Client::new(&r.server, Some(&key))?;
    let who = match client.get(WHOAMI).and_then(Answer::ok) {
        Ok(a) => a,
        Err(e) => {
            out.push(fail(
                NAMES[2],
                format!("{e} ({})", source.describe()),
                key_fix(&e, source),
            ));
            out.extend(not_checked(
                &NAMES[3..7],
                "the key is not valid",
                "fix the key first",
            ));
            out.push(clock_check(server_date));
            return Ok(out);
        }
    };
    out.push(pass(
        NAMES[2],
        format!(
            "key {} of agent {} in workspace {} ({})",
            text(&who.body, "key_id"),
            text(&who.body, "agent"),
            text(&who.body, "workspace_id"),
            source.describe()
        ),
    ));

    // 4-5. Grants and modes, from the key's capability listing.
    let listing = client.get(LIST).and_then(Answer::ok);
    let caps: Vec<Value> = listing
        .as_ref()
        .ok()
        .and_then(|a| a.body["capabilities"].as_array().cloned())
        .unwrap_or_default();
    let grants = who.body["grants"].as_array().map_or(0, Vec::len)
        + who.body["scopes"].as_array().map_or(0, Vec::len);
    let ids: Vec<String> = caps.iter().map(|c| text(c, "id")).collect();
    out.push(match &listing {
        Err(e) => fail(NAMES[3], format!("cannot list capabilities: {e}"), "retry; see the server log"),
        Ok(_) if grants == 0 => fail(
            NAMES[3],
            "the key holds no grant or scope",
            "mint a key with grants, e.g. \"grants\": [\"capability:events.ingest\"] in POST /api/v1/keys",
        ),
        Ok(_) if caps.is_empty() => pass(NAMES[3], format!("{grants} grant(s); modes checked next")),
        Ok(_) => pass(NAMES[3], format!("may call {}", ids.join(", "))),
    });
    let modes = text(&who.body, "allowed_modes");
    out.push(if caps.is_empty() {
        fail(
            NAMES[4],
            format!("no granted capability accepts the key's modes ({modes})"),
            "mint a key whose allowed_modes fit its capabilities (e.g. dry_run and execute)",
        )
    } else if modes == "dry_run" {
        pass(
            NAMES[4],
            "dry_run only: invocations preview and never commit",
        )
    } else {
        pass(NAMES[4], modes)
    });

    // 6. Quota.
    out.push(match client.get("/api/v1/capabilities/usage/actions?limit=1").and_then(Answer::ok) {
        Ok(a) => {
            let remaining = a.body["remaining"].as_u64().unwrap_or(0);
            let detail = format!(
                "{} of {} credits used this month, {remaining} left ({} plan)",
                text(&a.body, "used"),
                text(&a.body, "limit"),
                text(&a.body, "plan")
            );
            if remaining > 0 {
                pass(NAMES[5], detail)
            } else {
                fail(
                    NAMES[5],
                    detail,
                    "wait for next month, upgrade the plan, or raise the key's quota_override_monthly",
                )
            }
        }
        Err(e) => fail(NAMES[5], format!("cannot read usage: {e}"), "retry; see the server log"),
    });

    // 7. Rate limit, from the headers of a keyed answer.
    out.push(rate_check(&client));

    // 8. Clock skew.
    out.push(clock_check(server_date));
    Ok(out)
}

fn key_fix(e: &CliError, source: KeySource) -> String {
    let unauthenticated = matches!(e, CliError::Api { status: 401, .. });
    match (unauthenticated, source) {
        (true, KeySource::File) => {
            "the stored key is revoked or invalid: mint a new key and run `svc auth login --key <AGENT_KEY>`".into()
        }
        (true, _) => format!(
            "the key given by {} is revoked or invalid: use a valid agent key",
            source.describe()
        ),
        (false, _) => "check that the key is an agent key (svc_live_...) and retry".into(),
    }
}

fn version_check(anon: &Client) -> Check {
    let mine = env!("CARGO_PKG_VERSION");
    match anon.get("/openapi.json").and_then(Answer::ok) {
        Ok(a) => match a.body["info"]["version"].as_str() {
            Some(theirs) if compatible(mine, theirs) => {
                pass(NAMES[1], format!("svcd {theirs}, svc {mine}"))
            }
            Some(theirs) => fail(
                NAMES[1],
                format!("svcd {theirs} and svc {mine} are different releases"),
                "install svc and svcd from the same release",
            ),
            None => fail(
                NAMES[1],
                "the server's /openapi.json has no version",
                "is this address an svcd?",
            ),
        },
        Err(e) => fail(
            NAMES[1],
            format!("cannot read /openapi.json: {e}"),
            "is this address an svcd?",
        ),
    }
}

/// Same major version (and same minor while the major is 0).
pub fn compatible(a: &str, b: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> {
        v.split('.')
            .take(2)
            .map(|p| p.parse().unwrap_or(u64::MAX))
            .collect()
    };
    let (a, b) = (parts(a), parts(b));
    match (a.first(), b.first()) {
        (Some(0), Some(0)) => a.get(1) == b.get(1),
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn rate_check(client: &Client) -> Check {
    match client.get(WHOAMI) {
        Ok(a) => {
            let limit = a.header("x-ratelimit-limit").unwrap_or("?").to_owned();
            let remaining = a
                .header("x-ratelimit-remaining")
                .and_then(|v| v.parse::<u64>().ok());
            match remaining {
                Some(0) => fail(
                    NAMES[6],
                    format!(
                        "0 of {limit} requests/min left; retry after {} s",
                        a.header("retry-after").unwrap_or("?")
                    ),
                    "slow down, or mint a key with a higher rate_limit_per_min",
                ),
                Some(n) => pass(NAMES[6], format!("{n} of {limit} requests/min left")),
                None if a.status == 429 => fail(
                    NAMES[6],
                    "rate limited",
                    "slow down, or mint a key with a higher rate_limit_per_min",
                ),
                None => fail(
                    NAMES[6],
                    "the server sent no X-RateLimit headers",
                    "is this address an svcd?",
                ),
            }
        }
        Err(e) => fail(NAMES[6], format!("{e}"), "retry"),
    }
}

fn clock_check(server: Option<SystemTime>) -> Check {
    let Some(server) = server else {
        return fail(
            NAMES[7],
            "the server sent no Date header",
            "is this address an svcd?",
        );
    };
    let skew = skew(SystemTime::now(), server);
    let secs = skew.as_secs();
    if skew <= MAX_SKEW {
        pass(NAMES[7], format!("within {} s of the server", secs.max(1)))
    } else {
        fail(
            NAMES[7],
            format!("this machine's clock is {secs} s away from the server's"),
            "synchronise the clock (NTP): event timestamps and quota months depend on it",
        )
    }
}

/// Absolute difference; HTTP dates have whole seconds, so up to 1 s is noise.
pub fn skew(local: SystemTime, server: SystemTime) -> Duration {
    local
        .duration_since(server)
        .or_else(|_| server.duration_since(local))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_compatibility() {
        assert!(compatible("0.1.0", "0.1.7"));
        assert!(!compatible("0.1.0", "0.2.0"));
        assert!(compatible("1.2.0", "1.9.1"));
        assert!(!compatible("1.2.0", "2.0.0"));
        assert!(!compatible("0.1.0", "garbage"));
    }

    #[test]
    fn skew_is_symmetric() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let later = t + Duration::from_secs(90);
        assert_eq!(skew(t, later), Duration::from_secs(90));
        assert_eq!(skew(later, t), Duration::from_secs(90));
        assert!(clock_check(Some(SystemTime::now())).passed);
        assert!(!clock_check(Some(SystemTime::now() - Duration::from_secs(600))).passed);
        assert!(!clock_check(None).passed);
    }

    #[test]
    fn every_check_has_a_name_in_order() {
        let skipped = not_checked(&NAMES[1..], "x", "y");
        assert_eq!(skipped.len(), 7);
        assert!(skipped.iter().all(|c| !c.passed && c.fix.is_some()));
    }
}
