//! `svc auth login | logout | status`.

use std::io::Read;

use serde_json::json;

use crate::cli::AuthCommand;
use crate::client::Client;
use crate::config::{self, Credentials};
use crate::error::{exit, CliError, Result};
use crate::output::Color;
use crate::Ctx;

use super::text;

/// The route that tells a key who it is.
pub const WHOAMI: &str = "/api/v1/keys/whoami";

pub fn run(ctx: &Ctx, c: AuthCommand) -> Result<u8> {
    match c {
        AuthCommand::Login { key } => login(ctx, &key),
        AuthCommand::Logout => logout(ctx),
        AuthCommand::Status => status(ctx),
    }
}

fn read_key(arg: &str) -> Result<String> {
    let key = if arg == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| CliError::Local(format!("reading the key from stdin: {e}")))?;
        s
    } else {
        arg.to_owned()
    };
    let key = key.trim().to_owned();
    if key.is_empty() {
        return Err(CliError::Usage("the key is empty".into()));
    }
    if !key.starts_with("svc_live_") {
        return Err(CliError::Usage(
            "agent keys start with svc_live_ (dashboard dsk_ keys and JWTs cannot use the gateway)"
                .into(),
        ));
    }
    Ok(key)
}

fn login(ctx: &Ctx, key_arg: &str) -> Result<u8> {
    let key = read_key(key_arg)?;
    let server = ctx.resolve()?.server;
    let who = Client::new(&server, Some(&key))?.get(WHOAMI)?.ok()?.body;
    let path = config::store(&Credentials {
        api_key: key,
        server: server.clone(),
    })?;
    if ctx.out.json {
        ctx.out.json(&json!({
            "logged_in": true,
            "server": server,
            "credentials_path": path,
            "key": who,
        }));
    } else {
        ctx.out.line(&format!(
            "{} to {server} as agent {} (key {}, workspace {})",
            ctx.out.paint("Logged in", Color::Green),
            text(&who, "agent"),
            text(&who, "key_id"),
            text(&who, "workspace_id"),
        ));
        ctx.out
            .line(&format!("Key stored in {} (mode 0600).", path.display()));
    }
    Ok(exit::OK)
}

fn logout(ctx: &Ctx) -> Result<u8> {
    let removed = config::remove()?;
    if ctx.out.json {
        ctx.out.json(&json!({"logged_out": removed}));
    } else if removed {
        ctx.out.line("Logged out: the stored key is removed.");
    } else {
        ctx.out.line("Not logged in: there was no stored key.");
    }
    Ok(exit::OK)
}

fn status(ctx: &Ctx) -> Result<u8> {
    let (client, source) = ctx.keyed_client()?;
    let who = client.get(WHOAMI)?.ok()?.body;
    if ctx.out.json {
        ctx.out.json(&json!({
            "logged_in": true,
            "server": client.base,
            "key_source": source.describe(),
            "key": who,
        }));
        return Ok(exit::OK);
    }
    let o = &ctx.out;
    o.line(&format!(
        "{} to {} ({})",
        o.paint("Logged in", Color::Green),
        client.base,
        source.describe()
    ));
    for (label, field) in [
        ("agent", "agent"),
        ("key", "key_id"),
        ("name", "name"),
        ("workspace", "workspace_id"),
        ("grants", "grants"),
        ("scopes", "scopes"),
        ("modes", "allowed_modes"),
        ("auto_run", "auto_run"),
        ("rate limit/min", "rate_limit_per_min"),
        ("quota override", "quota_override_monthly"),
        ("last used", "last_used_at"),
    ] {
        o.line(&format!("  {:<15} {}", label, text(&who, field)));
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked_before_any_request() {
        assert!(matches!(read_key("  "), Err(CliError::Usage(_))));
        assert!(matches!(read_key("dsk_abc"), Err(CliError::Usage(_))));
        assert_eq!(
            read_key(" svc_live_abc\n").ok().as_deref(),
            Some("svc_live_abc")
        );
    }
}
