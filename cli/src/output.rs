//! Human and machine output. `--json` prints one JSON document on stdout; otherwise text for
//! people, coloured only when the stream is a terminal and `NO_COLOR` is not set
//! (no-color.org: any non-empty value disables colour).

use std::io::{IsTerminal, Write};

use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Color {
    Green,
    Red,
    Yellow,
    Bold,
    Dim,
}

impl Color {
    fn code(self) -> &'static str {
        match self {
            Color::Green => "32",
            Color::Red => "31",
            Color::Yellow => "33",
            Color::Bold => "1",
            Color::Dim => "2",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Output {
    pub json: bool,
    color_out: bool,
    color_err: bool,
    /// stderr is a terminal (progress bars).
    pub err_is_terminal: bool,
}

fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

impl Output {
    pub fn new(json: bool) -> Output {
        let colors = !no_color();
        let err_is_terminal = std::io::stderr().is_terminal();
        Output {
            json,
            color_out: colors && !json && std::io::stdout().is_terminal(),
            color_err: colors && err_is_terminal,
            err_is_terminal,
        }
    }

    /// `text` in `color` for stdout.
    pub fn paint(&self, text: &str, color: Color) -> String {
        paint(self.color_out, text, color)
    }

    /// `text` in `color` for stderr.
    pub fn paint_err(&self, text: &str, color: Color) -> String {
        paint(self.color_err, text, color)
    }

    /// Prints `value` as the command's JSON document.
    pub fn json(&self, value: &Value) {
        let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
        println_out(&text);
    }

    pub fn line(&self, text: &str) {
        println_out(text);
    }
}

fn paint(on: bool, text: &str, color: Color) -> String {
    if on {
        format!("\x1b[{}m{text}\x1b[0m", color.code())
    } else {
        text.to_owned()
    }
}

/// println! that does not panic when stdout is closed (e.g. `svc ... | head`).
fn println_out(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
}

/// Pretty JSON for people.
pub fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// A one-line progress bar on stderr, redrawn at most every 100 ms.
#[derive(Debug)]
pub struct Progress {
    total: usize,
    enabled: bool,
    last: Option<std::time::Instant>,
}

impl Progress {
    pub fn new(out: &Output, total: usize) -> Progress {
        Progress {
            total,
            enabled: out.err_is_terminal && !out.json,
            last: None,
        }
    }

    pub fn update(&mut self, done: usize, failed: usize) {
        if !self.enabled {
            return;
        }
        let now = std::time::Instant::now();
        if done < self.total
            && self
                .last
                .is_some_and(|t| now.duration_since(t).as_millis() < 100)
        {
            return;
        }
        self.last = Some(now);
        eprint!("\r{}", bar(done, self.total, failed));
        let _ = std::io::stderr().flush();
    }

    pub fn finish(&mut self) {
        if self.enabled && self.last.is_some() {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
        }
    }
}

/// `[#####.....] 50/100 (2 failed)`, 30 cells wide.
pub fn bar(done: usize, total: usize, failed: usize) -> String {
    const WIDTH: usize = 30;
    let filled = (done.min(total) * WIDTH)
        .checked_div(total)
        .unwrap_or(WIDTH);
    let mut s = format!(
        "[{}{}] {done}/{total}",
        "#".repeat(filled),
        ".".repeat(WIDTH - filled)
    );
    if failed > 0 {
        s.push_str(&format!(" ({failed} failed)"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_bar_text() {
        assert_eq!(bar(0, 10, 0), format!("[{}] 0/10", ".".repeat(30)));
        assert_eq!(
            bar(5, 10, 1),
            format!("[{}{}] 5/10 (1 failed)", "#".repeat(15), ".".repeat(15))
        );
        assert_eq!(bar(0, 0, 0), format!("[{}] 0/0", "#".repeat(30)));
    }

    #[test]
    fn paint_only_when_enabled() {
        assert_eq!(paint(false, "ok", Color::Green), "ok");
        assert_eq!(paint(true, "ok", Color::Green), "\x1b[32mok\x1b[0m");
    }
}
