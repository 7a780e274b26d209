//! `svc chat "message" [--session ID] [--buddy NAME]`: one chat turn (`POST /v1/chat`), its
//! server-sent events printed as they arrive: the answer's `message.delta` text on stdout, the
//! routing and each tool call and result as lines on stderr. With `--json`, stdout carries only
//! the completed turn (the `turn.completed` event's data) as one JSON document.
//!
//! Chat is for people: the server takes a session token (JWT), not an agent key. The token comes
//! from `--token` or `SVC_TOKEN`; the server address from the usual config (`--server`,
//! `SVC_BASE_URL`, the stored login's server).

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use serde_json::{json, Value};

use crate::cli::ChatArgs;
use crate::client::Client;
use crate::error::{exit, CliError, Result};
use crate::output::{Color, Output};
use crate::Ctx;

/// How long one turn may stream: at most 10 model calls of at most 600 s each, and the tools.
const TURN_LIMIT: Duration = Duration::from_secs(2 * 60 * 60);

pub fn run(ctx: &Ctx, a: ChatArgs) -> Result<u8> {
    let Some(token) = a.token.filter(|t| !t.is_empty()) else {
        return Err(CliError::NotLoggedIn(
            "svc chat needs a person's session token (--token or SVC_TOKEN, the token of \
             POST /api/auth/login): chat is for people, agent keys cannot chat"
                .into(),
        ));
    };
    if a.message.trim().is_empty() {
        return Err(CliError::Usage("the message is empty".into()));
    }
    let server = ctx.resolve()?.server;
    let client = Client::new(&server, Some(&token))?;
    let mut body = json!({"message": a.message});
    if let Some(s) = a.session {
        body["session_id"] = json!(s);
    }
    if let Some(b) = a.buddy {
        body["buddy"] = json!(b);
    }
    let resp = client.post_stream("/v1/chat", &body, TURN_LIMIT)?;
    let mut reader = BufReader::new(resp);
    let mut printer = Printer::new(ctx.out);
    let mut event = Event::default();
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                return Err(CliError::Transport(format!(
                    "reading the answer from {server}: {e}"
                )))
            }
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            if let Some(turn) = printer.event(&std::mem::take(&mut event))? {
                return Ok(printer.finish(&turn));
            }
        } else if let Some(name) = l.strip_prefix("event:") {
            event.name = name.trim().to_owned();
        } else if let Some(data) = l.strip_prefix("data:") {
            event.data.push_str(data.strip_prefix(' ').unwrap_or(data));
        }
    }
    Err(CliError::Transport(format!(
        "the stream from {server} ended before the turn completed"
    )))
}

/// One server-sent event as read so far.
#[derive(Debug, Default)]
struct Event {
    name: String,
    data: String,
}

struct Printer {
    out: Output,
    /// The answer text printed so far does not end with a new line.
    open_line: bool,
}

impl Printer {
    fn new(out: Output) -> Printer {
        Printer {
            out,
            open_line: false,
        }
    }

    /// Prints one event; returns the whole turn at `turn.completed`.
    fn event(&mut self, e: &Event) -> Result<Option<Value>> {
        if e.name.is_empty() {
            return Ok(None); // a comment or keep-alive
        }
        let v: Value = serde_json::from_str(&e.data).map_err(|err| {
            CliError::Transport(format!("the {} event is not JSON: {err}", e.name))
        })?;
        let s = |k: &str| v[k].as_str().unwrap_or("-").to_owned();
        match e.name.as_str() {
            "turn.completed" => return Ok(Some(v)),
            "message.delta" if !self.out.json => {
                let text = v["text"].as_str().unwrap_or_default();
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
                self.open_line = !text.ends_with('\n');
            }
            "route" => self.note(&format!(
                "route: {} ({}: {})",
                s("buddy_id"),
                s("by"),
                s("reason")
            )),
            "tool_call" => self.note(&format!(
                "tool_call #{}: {} ({}) {}",
                v["n"],
                s("capability"),
                s("mode"),
                v["input"]
            )),
            "tool_result" => {
                let mut l = format!(
                    "tool_result #{}: {} {}",
                    v["n"],
                    s("capability"),
                    s("status")
                );
                if let Some(pa) = v["pending_action_id"].as_str() {
                    l.push_str(&format!(", waiting for approval ({pa})"));
                }
                if let Some(c) = v["credits"].as_u64().filter(|c| *c > 0) {
                    l.push_str(&format!(", {c} credit(s)"));
                }
                if let Some(code) = v.pointer("/error/code").and_then(Value::as_str) {
                    l.push_str(&format!(", error {code}"));
                }
                self.note(&l);
            }
            _ => {}
        }
        Ok(None)
    }

    /// A line on stderr (not with `--json`), after ending the answer's open line.
    fn note(&mut self, text: &str) {
        if self.out.json {
            return;
        }
        self.end_line();
        eprintln!("{}", self.out.paint_err(text, Color::Dim));
    }

    fn end_line(&mut self) {
        if self.open_line {
            let _ = writeln!(std::io::stdout().lock());
            self.open_line = false;
        }
    }

    /// The end of the turn: its document with `--json`, else a summary line on stderr; a
    /// failed turn (the model provider failed) exits 1.
    fn finish(&mut self, turn: &Value) -> u8 {
        let failed = turn["status"] != "completed";
        if self.out.json {
            self.out.json(turn);
        } else {
            self.end_line();
            let s = |k: &str| turn[k].as_str().unwrap_or("-").to_owned();
            let mut l = format!(
                "session {} · turn {} · {} by {} ({})",
                s("session_id"),
                s("turn_id"),
                s("status"),
                s("buddy_id"),
                s("agent")
            );
            if let Some(ids) = turn["pending_action_ids"]
                .as_array()
                .filter(|a| !a.is_empty())
            {
                let ids: Vec<&str> = ids.iter().filter_map(Value::as_str).collect();
                l.push_str(&format!(" · waiting for approval: {}", ids.join(", ")));
            }
            let color = if failed { Color::Red } else { Color::Dim };
            eprintln!("{}", self.out.paint_err(&l, color));
            if let Some(m) = turn.pointer("/error/message").and_then(Value::as_str) {
                eprintln!("{} {m}", self.out.paint_err("error:", Color::Red));
            }
        }
        if failed {
            exit::ERROR
        } else {
            exit::OK
        }
    }
}
