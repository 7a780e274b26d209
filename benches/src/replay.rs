//! Replay of the `tools/bench` event stream (`events.jsonl`) through `Graph::record_events`,
//! split over parallel writers without changing what identity resolution decides, and the
//! check that the customers it leaves are exactly those of `tools/bench/ref_resolve.py`.
//!
//! Why the split keeps the reference's answer: an event's resolution depends only on which
//! customers hold its keys, and those customers only ever hold keys that earlier events put
//! together with them. So events are grouped by the connected components of "appear in one
//! event" over their normalised keys (union-find): two events of different components never
//! read or write the same customer or identity-index entry. Each component goes whole to one
//! writer, which sends its events in file order and waits for each call before the next, so
//! every component is resolved in file order, as the reference does. Partitioning by one key
//! (say the email) is not enough: an event with an email and a phone links the customer found
//! by the phone-only events to the one found by the email-only events, and they must be
//! resolved in one order. Campaigns are shared by all components; the engine's single writer
//! merges them atomically, so each campaign id still becomes one node.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use svc_engine::{
    normalize_email, normalize_external_id, normalize_phone, Direction, EngineError, EventInput,
    EventOutcome, Graph, GraphRead, IdentityKeys, NodeId, Value, WorkspaceId,
};

/// One event of the file with its 0-based line number.
#[derive(Clone, Debug)]
pub struct Line {
    pub line: usize,
    pub input: EventInput,
}

/// Reads a flat JSON object of string values (the generator's event lines).
fn parse_flat_object(s: &str) -> Result<HashMap<String, String>, String> {
    let mut out = HashMap::new();
    let mut chars = s.trim().chars().peekable();
    let expect = |c: Option<char>, want: char| {
        (c == Some(want))
            .then_some(())
            .ok_or_else(|| format!("expected {want:?}"))
    };
    expect(chars.next(), '{')?;
    let read_string = |chars: &mut std::iter::Peekable<std::str::Chars>| {
        let mut v = String::new();
        loop {
            match chars.next().ok_or("unterminated string")? {
                '"' => return Ok::<_, String>(v),
                '\\' => match chars.next().ok_or("bad escape")? {
                    'n' => v.push('\n'),
                    't' => v.push('\t'),
                    'r' => v.push('\r'),
                    'b' => v.push('\u{8}'),
                    'f' => v.push('\u{c}'),
                    'u' => {
                        let hex: String = chars.by_ref().take(4).collect();
                        let code = u32::from_str_radix(&hex, 16).map_err(|e| e.to_string())?;
                        v.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                    }
                    c => v.push(c),
                },
                c => v.push(c),
            }
        }
    };
    loop {
        match chars.next() {
            Some('}') => return Ok(out),
            Some('"') => {}
            Some(',') => continue,
            other => return Err(format!("unexpected {other:?}")),
        }
        let key = read_string(&mut chars)?;
        expect(chars.next(), ':')?;
        match chars.next() {
            Some('"') => {
                let v = read_string(&mut chars)?;
                out.insert(key, v);
            }
            Some('n') => {
                // null
                chars.by_ref().take(3).for_each(drop);
            }
            other => return Err(format!("value of {key}: only strings, not {other:?}")),
        }
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (the generator's form) in microseconds since the epoch.
fn parse_ts(s: &str) -> Result<i64, String> {
    let n = |r: std::ops::Range<usize>| -> Result<i64, String> {
        s.get(r)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("bad timestamp {s:?}"))
    };
    if s.len() != 24 || !s.ends_with('Z') {
        return Err(format!("bad timestamp {s:?}"));
    }
    let days = days_from_civil(n(0..4)?, n(5..7)?, n(8..10)?);
    let secs = days * 86_400 + n(11..13)? * 3_600 + n(14..16)? * 60 + n(17..19)?;
    Ok(secs * 1_000_000 + n(20..23)? * 1_000)
}

/// Reads `events.jsonl` into engine inputs, in file order.
pub fn load_events(path: &str) -> Result<Vec<Line>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut out = Vec::new();
    for (line, s) in text.lines().enumerate() {
        let mut o = parse_flat_object(s).map_err(|e| format!("line {line}: {e}"))?;
        let ts = parse_ts(o.get("timestamp").ok_or("no timestamp")?)?;
        out.push(Line {
            line,
            input: EventInput {
                keys: IdentityKeys {
                    customer_id: None,
                    email: o.remove("email"),
                    phone: o.remove("phone"),
                    external_id: o.remove("externalId"),
                },
                action: o.remove("event").ok_or("no event")?,
                channel: o.remove("channel"),
                ts,
                properties: Default::default(),
                campaign_id: o.remove("campaignId").filter(|c| !c.is_empty()),
                outbound: false,
            },
        });
    }
    Ok(out)
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

/// Splits the events over `writers` streams, each a set of whole key components in file
/// order (see the module comment); components go largest first to the least loaded stream.
pub fn partition(events: &[Line], writers: usize) -> Vec<Vec<Line>> {
    let mut key_ids: HashMap<(u8, String), usize> = HashMap::new();
    let mut parent: Vec<usize> = Vec::new();
    let mut first_key: Vec<usize> = Vec::with_capacity(events.len());
    for ev in events {
        let k = &ev.input.keys;
        let keys = [
            (0u8, k.email.as_deref().and_then(normalize_email)),
            (1, k.phone.as_deref().and_then(normalize_phone)),
            (2, k.external_id.as_deref().and_then(normalize_external_id)),
        ];
        let mut ids = Vec::with_capacity(3);
        for (kind, v) in keys {
            let Some(v) = v else { continue };
            let next = parent.len();
            let id = *key_ids.entry((kind, v)).or_insert(next);
            if id == next {
                parent.push(id);
            }
            ids.push(id);
        }
        // An event without a usable key fails alone; give it a component of its own.
        let first = match ids.first() {
            Some(id) => *id,
            None => {
                parent.push(parent.len());
                parent.len() - 1
            }
        };
        for &other in ids.iter().skip(1) {
            let (a, b) = (find(&mut parent, first), find(&mut parent, other));
            parent[a] = b;
        }
        first_key.push(first);
    }
    let mut members: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, k) in first_key.iter().enumerate() {
        members.entry(find(&mut parent, *k)).or_default().push(i);
    }
    let mut components: Vec<Vec<usize>> = members.into_values().collect();
    components.sort_by_key(|c| (std::cmp::Reverse(c.len()), c[0]));
    let mut streams: Vec<Vec<usize>> = vec![Vec::new(); writers.max(1)];
    for c in components {
        if let Some(s) = streams.iter_mut().min_by_key(|s| s.len()) {
            s.extend(c);
        }
    }
    streams
        .into_iter()
        .map(|mut s| {
            s.sort_unstable();
            s.into_iter().map(|i| events[i].clone()).collect()
        })
        .collect()
}

/// An event's line number and what recording it answered.
pub type Outcome = (usize, Result<EventOutcome, EngineError>);

/// Replays the streams, one thread each, `per_call` events per `record_events` call (one
/// `record_event` call when 1). Returns the elapsed time and every event's outcome by line.
pub fn replay(
    graph: &Graph,
    ws: WorkspaceId,
    streams: Vec<Vec<Line>>,
    per_call: usize,
) -> (Duration, Vec<Outcome>) {
    let start = Instant::now();
    let outcomes = std::thread::scope(|s| {
        let handles: Vec<_> = streams
            .into_iter()
            .map(|stream| {
                s.spawn(move || {
                    let mut out = Vec::with_capacity(stream.len());
                    for chunk in stream.chunks(per_call.max(1)) {
                        let lines: Vec<usize> = chunk.iter().map(|l| l.line).collect();
                        let inputs: Vec<EventInput> =
                            chunk.iter().map(|l| l.input.clone()).collect();
                        let results = if per_call == 1 {
                            let input = inputs.into_iter().next().expect("one event");
                            vec![graph.record_event(ws, input)]
                        } else {
                            graph.record_events(ws, inputs).expect("record_events")
                        };
                        out.extend(lines.into_iter().zip(results));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("writer thread"))
            .collect::<Vec<_>>()
    });
    (start.elapsed(), outcomes)
}

fn json_str(out: &mut String, v: Option<&str>) {
    let Some(v) = v else {
        out.push_str("null");
        return;
    };
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The customers of `ws` as `ref_resolve.py --customers` writes them (one JSON line each, in
/// creation order: a customer's `cid` is the rank of the event that created it).
pub fn customer_lines(
    graph: &Graph,
    ws: WorkspaceId,
    outcomes: &[Outcome],
) -> Result<Vec<String>, String> {
    let mut created_by: HashMap<NodeId, usize> = HashMap::new();
    for (line, r) in outcomes {
        if let Ok(o) = r {
            if o.is_new && created_by.insert(o.customer_id, *line).is_some() {
                return Err(format!("customer {} created twice", o.customer_id));
            }
        }
    }
    let snap = graph.snapshot(ws);
    let mut rows = Vec::new();
    for id in snap.label_scan("Customer").map_err(|e| e.to_string())? {
        let node = snap
            .node(id)
            .map_err(|e| e.to_string())?
            .ok_or("customer vanished")?;
        let line = created_by
            .get(&id)
            .ok_or_else(|| format!("customer {id} has no creating event"))?;
        let s = |k: &str| node.properties.get(k).and_then(Value::as_str);
        let touchpoints = snap
            .degree(id, Direction::Outgoing, Some("HAS_TOUCHPOINT"))
            .map_err(|e| e.to_string())?;
        let last_seen = match node.properties.get("lastSeen") {
            Some(Value::DateTime(us)) => Some(us.div_euclid(1_000)),
            _ => None,
        };
        rows.push(Row {
            line: *line,
            email: s("email").map(str::to_owned),
            phone: s("phone").map(str::to_owned),
            external_id: s("externalId").map(str::to_owned),
            touchpoints,
            last_seen,
        });
    }
    rows.sort_by_key(|r| r.line);
    Ok(rows
        .into_iter()
        .enumerate()
        .map(|(cid, r)| {
            let mut out = format!("{{\"cid\":{cid},\"email\":");
            json_str(&mut out, r.email.as_deref());
            out.push_str(",\"phone\":");
            json_str(&mut out, r.phone.as_deref());
            out.push_str(",\"externalId\":");
            json_str(&mut out, r.external_id.as_deref());
            let seen = r.last_seen.map_or("null".to_owned(), |ms| ms.to_string());
            let _ = write!(
                out,
                ",\"touchpoints\":{},\"lastSeen\":{seen}}}",
                r.touchpoints
            );
            out
        })
        .collect())
}

/// One customer as the check reads it back.
struct Row {
    line: usize,
    email: Option<String>,
    phone: Option<String>,
    external_id: Option<String>,
    touchpoints: u64,
    last_seen: Option<i64>,
}

/// Compares the engine's customers with the reference file line by line; the mismatches
/// (at most `show`) and their total.
pub fn compare(ours: &[String], reference: &str, show: usize) -> (usize, Vec<String>) {
    let theirs: Vec<&str> = reference.lines().collect();
    let mut shown = Vec::new();
    let mut bad = 0;
    for i in 0..ours.len().max(theirs.len()) {
        let (a, b) = (ours.get(i).map(String::as_str), theirs.get(i).copied());
        if a != b {
            bad += 1;
            if shown.len() < show {
                shown.push(format!("cid {i}:\n  engine    {a:?}\n  reference {b:?}"));
            }
        }
    }
    (bad, shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_lines_parse() {
        assert_eq!(
            parse_ts("2025-01-01T00:00:40.356Z"),
            Ok(1_735_689_640_356_000)
        );
        let o = parse_flat_object(r#"{"a":"x\"y","b":"\u00e9","c":null}"#).expect("parse");
        assert_eq!(o["a"], "x\"y");
        assert_eq!(o["b"], "é");
        assert!(!o.contains_key("c"));
    }
}
