//! `svc invoke <id> --mode <mode> --input <json|@file|@->`.

use std::io::Read;

use serde_json::Value;

use crate::cli::InvokeArgs;
use crate::error::{exit, CliError, Result};
use crate::gateway::{self, Invocation, Invoked};
use crate::output::{pretty, Color, Output};
use crate::Ctx;

use super::text;

pub fn run(ctx: &Ctx, a: InvokeArgs) -> Result<u8> {
    gateway::check_id(&a.capability_id)?;
    let input = parse_input(&a.input)?;
    let (client, _) = ctx.keyed_client()?;
    let done = gateway::invoke(
        &client,
        &Invocation {
            capability: &a.capability_id,
            mode: a.mode.as_deref(),
            input,
            idempotency_key: a.idempotency_key.as_deref(),
        },
    )?;
    print(ctx, &done);
    Ok(exit::OK)
}

/// The envelope as the command's output: as received with `--json`, rendered otherwise.
pub fn print(ctx: &Ctx, done: &Invoked) {
    if ctx.out.json {
        ctx.out.json(&done.envelope);
    } else {
        render(&ctx.out, done);
    }
}

/// `--input`: inline JSON, `@path`, or `@-` (stdin); must be an object.
pub fn parse_input(arg: &str) -> Result<Value> {
    let (text, origin) = match arg.strip_prefix('@') {
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| CliError::Local(format!("reading the input from stdin: {e}")))?;
            (s, "stdin".to_owned())
        }
        Some(path) => (
            std::fs::read_to_string(path)
                .map_err(|e| CliError::Usage(format!("--input @{path}: {e}")))?,
            path.to_owned(),
        ),
        None => (arg.to_owned(), "--input".to_owned()),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(CliError::Usage(format!(
            "{origin}: the input must be a JSON object"
        ))),
        Err(e) => Err(CliError::Usage(format!("{origin}: invalid JSON: {e}"))),
    }
}

/// An envelope for people: status line, quota, receipt, then the result.
pub fn render(o: &Output, done: &Invoked) {
    let e = &done.envelope;
    let status = text(e, "status");
    let color = if status == "committed" {
        Color::Green
    } else {
        Color::Yellow
    };
    let mut head = format!(
        "{} {} ({}) · {} credit(s)",
        o.paint(&status, color),
        text(e, "capability"),
        text(e, "mode"),
        text(e, "action_credit_cost"),
    );
    if done.replayed {
        head.push_str(" · replayed: an earlier request with this idempotency key");
    }
    o.line(&head);
    let q = &e["quota"];
    o.line(&format!(
        "quota     {} of {} used, {} left ({} plan)",
        text(q, "used"),
        text(q, "limit"),
        text(q, "remaining"),
        text(q, "plan")
    ));
    if let Some(pa) = e.get("pending_action_id").and_then(Value::as_str) {
        o.line(&format!("pending   {pa} (awaiting approval)"));
    }
    o.line(&format!("request   {}", text(e, "request_id")));
    o.line(&format!("receipt   {}", text(e, "receipt_url")));
    o.line(&pretty(&e["result"]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs() {
        assert_eq!(
            parse_input(r#"{"a":1}"#).ok(),
            Some(serde_json::json!({"a": 1}))
        );
        assert!(matches!(parse_input("[1]"), Err(CliError::Usage(_))));
        assert!(matches!(parse_input("{"), Err(CliError::Usage(_))));
        assert!(matches!(
            parse_input("@/no/such/file"),
            Err(CliError::Usage(_))
        ));
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("in.json");
        std::fs::write(&p, r#"{"customer":"a@example.com"}"#).expect("write");
        assert_eq!(
            parse_input(&format!("@{}", p.display())).ok(),
            Some(serde_json::json!({"customer": "a@example.com"}))
        );
    }
}
