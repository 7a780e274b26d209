//! `svc events send`: one event, or `--batch` a JSON-lines file with one `events.ingest`
//! invocation per row (sequential, like the service's own batch processing).

use std::io::Read;

use serde_json::{json, Map, Value};

use crate::batch::{self, Row};
use crate::cli::SendArgs;
use crate::client::Client;
use crate::error::{exit, CliError, Result};
use crate::gateway::{self, Invocation};
use crate::output::{Color, Progress};
use crate::Ctx;

pub const CAPABILITY: &str = "events.ingest";

pub fn send(ctx: &Ctx, a: SendArgs) -> Result<u8> {
    if a.mode != "execute" && a.mode != "dry_run" {
        return Err(CliError::Usage(format!(
            "--mode {}: events.ingest runs in dry_run or execute",
            a.mode
        )));
    }
    match a.batch.clone() {
        Some(path) => send_batch(ctx, &a, &path),
        None => send_one(ctx, &a),
    }
}

/// The events.ingest input of a single `events send`.
pub fn single_input(a: &SendArgs) -> Result<Value> {
    let mut input = Map::new();
    let required = |v: &Option<String>, flag: &str| {
        v.clone()
            .ok_or_else(|| CliError::Usage(format!("{flag} is required without --batch")))
    };
    input.insert("event".into(), json!(required(&a.event_type, "--type")?));
    input.insert(
        "customer".into(),
        json!(required(&a.customer, "--customer")?),
    );
    if let Some(p) = &a.props {
        match serde_json::from_str::<Value>(p) {
            Ok(v @ Value::Object(_)) => {
                input.insert("properties".into(), v);
            }
            Ok(_) => return Err(CliError::Usage("--props must be a JSON object".into())),
            Err(e) => return Err(CliError::Usage(format!("--props: invalid JSON: {e}"))),
        }
    }
    if let Some(c) = &a.channel {
        input.insert("channel".into(), json!(c));
    }
    if let Some(t) = &a.timestamp {
        input.insert("timestamp".into(), json!(t));
    }
    Ok(Value::Object(input))
}

fn send_one(ctx: &Ctx, a: &SendArgs) -> Result<u8> {
    let input = single_input(a)?;
    let (client, _) = ctx.keyed_client()?;
    let done = gateway::invoke(
        &client,
        &Invocation {
            capability: CAPABILITY,
            mode: Some(&a.mode),
            input,
            idempotency_key: a.idempotency_key.as_deref(),
        },
    )?;
    super::invoke::print(ctx, &done);
    Ok(exit::OK)
}

/// What happened to one row.
#[derive(Debug)]
enum RowOutcome {
    Sent,
    Replayed,
    Failed { code: String, message: String },
}

fn send_batch(ctx: &Ctx, a: &SendArgs, path: &std::path::Path) -> Result<u8> {
    let prefix = match &a.idempotency_prefix {
        Some(p) => {
            batch::check_prefix(p)?;
            p.clone()
        }
        None => batch::random_prefix(),
    };
    let text = read_file(path)?;
    let rows = batch::rows(&text, &prefix);
    let (client, _) = ctx.keyed_client()?;
    let mut progress = Progress::new(&ctx.out, rows.len());
    let (mut sent, mut replayed) = (0usize, 0usize);
    let mut failed: Vec<Value> = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let outcome = send_row(&client, &a.mode, row).inspect_err(|_| {
            progress.finish();
            eprintln!(
                "stopped at line {} after {} of {} rows; rerun with --idempotency-prefix {prefix} \
                 to resume without sending any row twice",
                row.line,
                i,
                rows.len()
            );
        })?;
        match outcome {
            RowOutcome::Sent => sent += 1,
            RowOutcome::Replayed => replayed += 1,
            RowOutcome::Failed { code, message } => {
                failed.push(json!({"line": row.line, "code": code, "message": message}))
            }
        }
        progress.update(i + 1, failed.len());
    }
    progress.finish();
    let code = if failed.is_empty() {
        exit::OK
    } else if sent + replayed == 0 {
        exit::ERROR
    } else {
        exit::PARTIAL
    };
    let summary = json!({
        "file": path,
        "rows": rows.len(),
        "sent": sent,
        "replayed": replayed,
        "failed": failed.len(),
        "failures": failed,
        "idempotency_prefix": prefix,
    });
    if ctx.out.json {
        ctx.out.json(&summary);
    } else {
        print_summary(ctx, &summary, &failed);
    }
    Ok(code)
}

/// Sends one row. Row-level refusals (bad input, a grant refusal) are the row's failure; an
/// unreachable server, a refused key (401) or exhausted credits (402) stop the whole batch,
/// since every later row would fail the same way (and a rerun with the same prefix resumes
/// safely).
fn send_row(client: &Client, mode: &str, row: &Row) -> Result<RowOutcome> {
    let input = match &row.input {
        Ok(v) => v.clone(),
        Err(why) => {
            return Ok(RowOutcome::Failed {
                code: "invalid_row".into(),
                message: why.clone(),
            })
        }
    };
    let outcome = gateway::invoke(
        client,
        &Invocation {
            capability: CAPABILITY,
            mode: Some(mode),
            input,
            idempotency_key: row.idempotency_key.as_deref(),
        },
    );
    match outcome {
        Ok(done) if done.replayed => Ok(RowOutcome::Replayed),
        Ok(_) => Ok(RowOutcome::Sent),
        Err(
            e @ CliError::Api {
                status: 401 | 402, ..
            },
        ) => Err(e),
        Err(CliError::Api { code, message, .. }) => Ok(RowOutcome::Failed { code, message }),
        Err(e) => Err(e),
    }
}

fn read_file(path: &std::path::Path) -> Result<String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| CliError::Local(format!("reading the batch from stdin: {e}")))?;
        return Ok(s);
    }
    std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("--batch {}: {e}", path.display())))
}

fn print_summary(ctx: &Ctx, s: &Value, failed: &[Value]) {
    let o = &ctx.out;
    let head = format!(
        "{} rows: {} sent, {} already sent (replayed), {} failed",
        s["rows"], s["sent"], s["replayed"], s["failed"]
    );
    let color = if failed.is_empty() {
        Color::Green
    } else {
        Color::Yellow
    };
    o.line(&o.paint(&head, color));
    for f in failed {
        o.line(&format!(
            "  line {}: {}: {}",
            f["line"],
            f["code"].as_str().unwrap_or("-"),
            f["message"].as_str().unwrap_or("-")
        ));
    }
    o.line(&format!(
        "Idempotency prefix {}: rerun with --idempotency-prefix {} to retry the failed rows \
         without sending any row twice.",
        s["idempotency_prefix"].as_str().unwrap_or("-"),
        s["idempotency_prefix"].as_str().unwrap_or("-"),
    ));
}
