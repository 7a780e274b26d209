//! `svc capabilities list | explain <id>`: the key's listing from `GET /api/v1/capabilities`.

use serde_json::{json, Value};

use crate::cli::CapabilitiesCommand;
use crate::client::Client;
use crate::error::{exit, CliError, Result};
use crate::output::{pretty, Color, Output};
use crate::Ctx;

use super::text;

pub const LIST: &str = "/api/v1/capabilities";

pub fn run(ctx: &Ctx, c: CapabilitiesCommand) -> Result<u8> {
    let (client, _) = ctx.keyed_client()?;
    match c {
        CapabilitiesCommand::List => list(ctx, &client),
        CapabilitiesCommand::Explain { capability_id } => explain(ctx, &client, &capability_id),
    }
}

fn fetch(client: &Client) -> Result<Value> {
    Ok(client.get(LIST)?.ok()?.body)
}

fn capabilities(listing: &Value) -> &[Value] {
    listing
        .get("capabilities")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn list(ctx: &Ctx, client: &Client) -> Result<u8> {
    let listing = fetch(client)?;
    if ctx.out.json {
        ctx.out.json(&listing);
        return Ok(exit::OK);
    }
    let caps = capabilities(&listing);
    let o = &ctx.out;
    if caps.is_empty() {
        o.line("This key may call no capability (it holds no grant, or none of its modes fit).");
        return Ok(exit::OK);
    }
    let head = format!(
        "{:<18} {:<24} {:<24} {:>4}  {}",
        "CAPABILITY", "MCP TOOL", "MODES", "COST", "SIDE EFFECT"
    );
    o.line(&o.paint(&head, Color::Bold));
    for c in caps {
        o.line(&format!(
            "{:<18} {:<24} {:<24} {:>4}  {}",
            text(c, "id"),
            text(c, "mcp_tool_name"),
            text(c, "allowed_modes"),
            text(c, "action_credit_cost"),
            text(c, "side_effect"),
        ));
    }
    o.line(&o.paint(
        "`svc capabilities explain <id>` shows schemas and examples.",
        Color::Dim,
    ));
    Ok(exit::OK)
}

fn explain(ctx: &Ctx, client: &Client, id: &str) -> Result<u8> {
    let listing = fetch(client)?;
    let Some(c) = capabilities(&listing).iter().find(|c| c["id"] == id) else {
        return Err(CliError::Api {
            status: 404,
            code: "capability_not_found".into(),
            message: format!(
                "{id} is not among the capabilities this key may call (see `svc capabilities list`)"
            ),
            request_id: None,
            details: None,
        });
    };
    if ctx.out.json {
        ctx.out.json(c);
    } else {
        render(&ctx.out, c);
    }
    Ok(exit::OK)
}

/// A descriptor for people.
fn render(o: &Output, c: &Value) {
    o.line(&o.paint(
        &format!("{} — {}", text(c, "id"), text(c, "title")),
        Color::Bold,
    ));
    o.line(&text(c, "description"));
    o.line("");
    let approval = &c["approval_behavior"];
    for (label, value) in [
        ("version", text(c, "version")),
        ("grant", text(c, "grant")),
        ("legacy scope", text(c, "legacy_scope")),
        ("modes (this key)", text(c, "allowed_modes")),
        (
            "cost",
            format!(
                "{} action credit(s) when queued or committed; dry_run is free",
                text(c, "action_credit_cost")
            ),
        ),
        ("side effect", text(c, "side_effect")),
        (
            "approval",
            format!(
                "{}: {}",
                text(approval, "kind"),
                text(approval, "description")
            ),
        ),
        ("MCP tool", text(c, "mcp_tool_name")),
    ] {
        o.line(&format!("  {label:<17} {value}"));
    }
    o.line("");
    o.line(&o.paint("Input schema", Color::Bold));
    o.line(&pretty(&c["input_schema"]));
    o.line(&o.paint("Output schema", Color::Bold));
    o.line(&pretty(&c["output_schema"]));
    let examples = c["examples"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if !examples.is_empty() {
        o.line(&o.paint("Examples", Color::Bold));
    }
    for ex in examples {
        o.line(&format!("  # {}", text(ex, "title")));
        o.line(&format!(
            "  svc invoke {} --mode {} --input '{}'",
            text(c, "id"),
            text(ex, "mode"),
            ex.get("input").unwrap_or(&json!({}))
        ));
        if let Some(out) = ex.get("output") {
            o.line(&format!("  # result: {out}"));
        }
    }
}
