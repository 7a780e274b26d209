//! Cypher's temporal types: `date`, `localtime`, `time`, `localdatetime`, `datetime` and
//! `duration`, with Neo4j's semantics (construction from maps and ISO 8601 strings, accessors,
//! ordering, arithmetic with durations, truncation, `duration.between`), calendar and zone
//! rules from `jiff` (IANA zones from the system's tzdata).
//!
//! A datetime in UTC at microsecond precision is the engine's `DateTime` value (what the
//! store holds and indexes); any other datetime (an offset, a named zone, nanoseconds) is a
//! `Val::Zoned`. The other types live only in queries for now: they cannot be stored.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use jiff::civil::{Date, DateTime, Time, Weekday};
use jiff::tz::{Offset, TimeZone};
use jiff::{Timestamp, Zoned};

use crate::error::QueryError;
use crate::value::Val;

/// A duration as Cypher keeps it: months, days, seconds and nanoseconds, each with its sign.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Duration {
    pub months: i64,
    pub days: i64,
    pub seconds: i64,
    pub nanos: i64,
}

const NANOS: i128 = 1_000_000_000;
/// Seconds of an average Gregorian month (365.2425 / 12 days): how fractions of months become
/// days and seconds.
const MONTH_SECONDS: f64 = 2_629_746.0;

fn err(msg: impl Into<String>) -> QueryError {
    QueryError::type_err(msg.into())
}

fn arg_err(msg: impl Into<String>) -> QueryError {
    QueryError::Arithmetic(msg.into())
}

impl Duration {
    fn total_nanos(&self) -> i128 {
        i128::from(self.seconds) * NANOS + i128::from(self.nanos)
    }

    /// Seconds and nanoseconds normalised so that both share the sign of their total.
    /// Seconds rounded down and nanoseconds in `0..1_000_000_000`, as Neo4j keeps them.
    fn normalised(mut self) -> Duration {
        let t = self.total_nanos();
        self.seconds = t.div_euclid(NANOS) as i64;
        self.nanos = t.rem_euclid(NANOS) as i64;
        self
    }

    fn from_parts(months: f64, days: f64, seconds: f64, extra_nanos: i64) -> Duration {
        // Fractions cascade down: months -> days (and seconds), days -> seconds -> nanoseconds.
        let whole_months = months.trunc();
        let month_rest_secs = (months - whole_months) * MONTH_SECONDS;
        let days_total = days + (month_rest_secs / 86_400.0).trunc();
        let month_rest_secs = month_rest_secs - (month_rest_secs / 86_400.0).trunc() * 86_400.0;
        let whole_days = days_total.trunc();
        let secs_total = seconds + (days_total - whole_days) * 86_400.0 + month_rest_secs;
        let whole_secs = secs_total.trunc();
        let nanos = ((secs_total - whole_secs) * 1e9).round() as i64 + extra_nanos;
        Duration {
            months: whole_months as i64,
            days: whole_days as i64,
            seconds: whole_secs as i64,
            nanos,
        }
        .normalised()
    }

    fn neg(self) -> Duration {
        Duration {
            months: -self.months,
            days: -self.days,
            seconds: -self.seconds,
            nanos: -self.nanos,
        }
    }

    fn add(self, o: Duration) -> Result<Duration, QueryError> {
        let over = || arg_err("duration overflow");
        Ok(Duration {
            months: self.months.checked_add(o.months).ok_or_else(over)?,
            days: self.days.checked_add(o.days).ok_or_else(over)?,
            seconds: self.seconds.checked_add(o.seconds).ok_or_else(over)?,
            nanos: self.nanos + o.nanos,
        }
        .normalised())
    }

    fn scale(self, f: f64) -> Duration {
        Duration::from_parts(
            self.months as f64 * f,
            self.days as f64 * f,
            self.seconds as f64 * f,
            (self.nanos as f64 * f).round() as i64,
        )
    }
}

// ---- rendering ---------------------------------------------------------------------------------

fn fraction(nanos: i32) -> String {
    if nanos == 0 {
        String::new()
    } else if nanos % 1_000_000 == 0 {
        format!(".{:03}", nanos / 1_000_000)
    } else if nanos % 1_000 == 0 {
        format!(".{:06}", nanos / 1_000)
    } else {
        format!(".{nanos:09}")
    }
}

fn time_text(t: Time) -> String {
    let mut s = format!("{:02}:{:02}", t.hour(), t.minute());
    if t.second() != 0 || t.subsec_nanosecond() != 0 {
        s.push_str(&format!(
            ":{:02}{}",
            t.second(),
            fraction(t.subsec_nanosecond())
        ));
    }
    s
}

fn date_text(d: Date) -> String {
    let y = d.year();
    let year = if (0..=9999).contains(&y) {
        format!("{y:04}")
    } else if y < 0 {
        format!("-{:04}", -i32::from(y))
    } else {
        format!("+{y}")
    };
    format!("{year}-{:02}-{:02}", d.month(), d.day())
}

fn offset_text(seconds: i32) -> String {
    if seconds == 0 {
        return "Z".into();
    }
    let sign = if seconds < 0 { '-' } else { '+' };
    let a = seconds.abs();
    let (h, m, s) = (a / 3600, (a / 60) % 60, a % 60);
    if s == 0 {
        format!("{sign}{h:02}:{m:02}")
    } else {
        format!("{sign}{h:02}:{m:02}:{s:02}")
    }
}

/// The zone's IANA name; none for fixed offsets (jiff names the zero offset "UTC").
fn zone_name(z: &Zoned) -> Option<&str> {
    z.time_zone().iana_name().filter(|n| *n != "UTC")
}

fn zoned_text(z: &Zoned) -> String {
    let dt = z.datetime();
    let mut s = format!(
        "{}T{}{}",
        date_text(dt.date()),
        time_text(dt.time()),
        offset_text(z.offset().seconds())
    );
    if let Some(name) = zone_name(z) {
        s.push_str(&format!("[{name}]"));
    }
    s
}

fn duration_text(d: &Duration) -> String {
    let mut s = String::from("P");
    let (years, months) = (d.months / 12, d.months % 12);
    if years != 0 {
        s.push_str(&format!("{years}Y"));
    }
    if months != 0 {
        s.push_str(&format!("{months}M"));
    }
    if d.days != 0 {
        s.push_str(&format!("{}D", d.days));
    }
    let t = d.total_nanos();
    if t != 0 {
        s.push('T');
        let neg = t < 0;
        let a = t.unsigned_abs();
        let secs = a / NANOS as u128;
        let (h, m, sec, n) = (secs / 3600, (secs / 60) % 60, secs % 60, a % NANOS as u128);
        let sign = if neg { "-" } else { "" };
        if h != 0 {
            s.push_str(&format!("{sign}{h}H"));
        }
        if m != 0 {
            s.push_str(&format!("{sign}{m}M"));
        }
        if sec != 0 || n != 0 {
            let frac = if n == 0 {
                String::new()
            } else {
                format!(".{n:09}").trim_end_matches('0').to_owned()
            };
            s.push_str(&format!("{sign}{sec}{frac}S"));
        }
    }
    if s == "P" {
        s.push_str("T0S");
    }
    s
}

/// The text form (`toString`, and how the TCK writes these values).
pub(crate) fn to_text(v: &Val) -> Option<String> {
    Some(match v {
        Val::Date(d) => date_text(*d),
        Val::LocalTime(t) => time_text(*t),
        Val::Time(t, off) => format!("{}{}", time_text(*t), offset_text(*off)),
        Val::LocalDateTime(dt) => format!("{}T{}", date_text(dt.date()), time_text(dt.time())),
        Val::Zoned(z) => zoned_text(z),
        Val::DateTime(us) => zoned_text(&micros_zoned(*us).ok()?),
        Val::Duration(d) => duration_text(d),
        _ => return None,
    })
}

// ---- conversions -------------------------------------------------------------------------------

pub(crate) fn micros_zoned(us: i64) -> Result<Zoned, QueryError> {
    let ts =
        Timestamp::from_microsecond(us).map_err(|e| err(format!("datetime out of range: {e}")))?;
    Ok(ts.to_zoned(utc()))
}

/// A datetime as a value: UTC at microsecond precision is the store's `DateTime`.
fn zoned_val(z: Zoned) -> Val {
    let ts = z.timestamp();
    if z.offset().seconds() == 0 && zone_name(&z).is_none() && ts.subsec_nanosecond() % 1000 == 0 {
        return Val::DateTime(ts.as_microsecond());
    }
    Val::Zoned(Box::new(z))
}

fn zoned_of(v: &Val) -> Option<Zoned> {
    match v {
        Val::Zoned(z) => Some((**z).clone()),
        Val::DateTime(us) => micros_zoned(*us).ok(),
        _ => None,
    }
}

fn date_of(v: &Val) -> Option<Date> {
    match v {
        Val::Date(d) => Some(*d),
        Val::LocalDateTime(dt) => Some(dt.date()),
        other => zoned_of(other).map(|z| z.date()),
    }
}

fn time_of(v: &Val) -> Option<Time> {
    match v {
        Val::LocalTime(t) | Val::Time(t, _) => Some(*t),
        Val::LocalDateTime(dt) => Some(dt.time()),
        other => zoned_of(other).map(|z| z.time()),
    }
}

fn offset_of(v: &Val) -> Option<i32> {
    match v {
        Val::Time(_, o) => Some(*o),
        other => zoned_of(other).map(|z| z.offset().seconds()),
    }
}

fn zone_of(v: &Val) -> Option<TimeZone> {
    match v {
        Val::Time(_, o) => fixed(*o).ok(),
        other => zoned_of(other).map(|z| z.time_zone().clone()),
    }
}

fn fixed(seconds: i32) -> Result<TimeZone, QueryError> {
    Offset::from_seconds(seconds)
        .map(TimeZone::fixed)
        .map_err(|e| err(format!("invalid offset: {e}")))
}

/// A zone from text: `Z`, `+01:00`, `-0130`, `+01`, or an IANA name.
fn parse_zone(s: &str) -> Result<TimeZone, QueryError> {
    if let Some(o) = parse_offset(s) {
        return fixed(o);
    }
    TimeZone::get(s).map_err(|_| err(format!("unknown time zone {s}")))
}

fn parse_offset(s: &str) -> Option<i32> {
    if s == "Z" || s == "z" {
        return Some(0);
    }
    let (sign, rest) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => return None,
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if !digits.chars().all(|c| c.is_ascii_digit()) || !matches!(digits.len(), 2 | 4 | 6) {
        return None;
    }
    let n = |i: usize| digits.get(i..i + 2).and_then(|x| x.parse::<i32>().ok());
    let (h, m, sec) = (n(0)?, n(2).unwrap_or(0), n(4).unwrap_or(0));
    if h > 18 || m > 59 || sec > 59 {
        return None;
    }
    Some(sign * (h * 3600 + m * 60 + sec))
}

// ---- parsing strings ---------------------------------------------------------------------------

fn num(s: &str) -> Result<i64, QueryError> {
    s.parse::<i64>()
        .map_err(|_| err(format!("invalid temporal text {s:?}")))
}

fn bad(s: &str) -> QueryError {
    err(format!("invalid temporal text {s:?}"))
}

fn parse_date(s: &str) -> Result<Date, QueryError> {
    let (sign, body) = match s.as_bytes().first() {
        Some(b'+') => (1, &s[1..]),
        Some(b'-') => (-1, &s[1..]),
        _ => (1, s),
    };
    let mk =
        |y: i64, m: i64, d: i64| Date::new((sign * y) as i16, m as i8, d as i8).map_err(|_| bad(s));
    let dashed = body.contains('-');
    let parts: Vec<&str> = body.split('-').collect();
    let year_len = if dashed {
        parts[0].len()
    } else {
        4.min(body.len())
    };
    let (ys, rest) = body.split_at(year_len);
    let y = num(ys)?;
    let rest = rest.strip_prefix('-').unwrap_or(rest);
    if rest.is_empty() {
        return mk(y, 1, 1);
    }
    if let Some(w) = rest.strip_prefix('W') {
        let w = w.replace('-', "");
        let week = num(w.get(..2).ok_or_else(|| bad(s))?)?;
        let dow = if w.len() > 2 { num(&w[2..])? } else { 1 };
        return week_date(sign * y, week, dow).map_err(|_| bad(s));
    }
    let digits = rest.replace('-', "");
    match digits.len() {
        2 => mk(y, num(&digits)?, 1),
        3 => {
            let ord = num(&digits)?;
            ordinal_date(sign * y, ord).map_err(|_| bad(s))
        }
        4 => mk(y, num(&digits[..2])?, num(&digits[2..])?),
        _ => Err(bad(s)),
    }
}

fn week_date(y: i64, week: i64, dow: i64) -> Result<Date, QueryError> {
    let wd = Weekday::from_monday_one_offset(dow as i8).map_err(|_| err("invalid dayOfWeek"))?;
    jiff::civil::ISOWeekDate::new(y as i16, week as i8, wd)
        .map(|w| w.date())
        .map_err(|e| err(format!("invalid week date: {e}")))
}

fn ordinal_date(y: i64, ord: i64) -> Result<Date, QueryError> {
    let first = Date::new(y as i16, 1, 1).map_err(|e| err(e.to_string()))?;
    if !(1..=i64::from(first.days_in_year())).contains(&ord) {
        return Err(err("invalid ordinal day"));
    }
    first
        .checked_add(jiff::Span::new().days(ord - 1))
        .map_err(|e| err(e.to_string()))
}

fn parse_time(s: &str) -> Result<Time, QueryError> {
    let (main, frac) = match s.split_once(['.', ',']) {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let digits = main.replace(':', "");
    if !digits.chars().all(|c| c.is_ascii_digit()) || digits.is_empty() || digits.len() % 2 == 1 {
        return Err(bad(s));
    }
    let n = |i: usize| digits.get(i..i + 2).map(num).transpose();
    let (h, m, sec) = (n(0)?.unwrap_or(0), n(2)?.unwrap_or(0), n(4)?.unwrap_or(0));
    let nanos = match frac {
        Some(f) if !f.is_empty() && f.len() <= 9 && f.chars().all(|c| c.is_ascii_digit()) => {
            num(&format!("{f:0<9}"))?
        }
        Some(_) => return Err(bad(s)),
        None => 0,
    };
    Time::new(h as i8, m as i8, sec as i8, nanos as i32).map_err(|_| bad(s))
}

/// Splits `21:40:32.142+01:00[Europe/Stockholm]` into the time, the offset and the zone name.
fn split_zone(s: &str) -> (&str, Option<&str>, Option<&str>) {
    let (s, name) = match s.find('[') {
        Some(i) => (&s[..i], s[i + 1..].strip_suffix(']')),
        None => (s, None),
    };
    match s.find(['+', '-', 'Z', 'z']) {
        Some(i) => (&s[..i], Some(&s[i..]), name),
        None => (s, None, name),
    }
}

/// A datetime's date, time, offset text and zone name.
type DateTimeParts<'a> = (Date, Time, Option<&'a str>, Option<&'a str>);

fn parse_datetime_parts(s: &str) -> Result<DateTimeParts<'_>, QueryError> {
    let (d, t) = match s.split_once('T') {
        Some((d, t)) => (d, t),
        None => (s, "00"),
    };
    let (t, offset, name) = split_zone(t);
    Ok((parse_date(d)?, parse_time(t)?, offset, name))
}

fn zoned_from(
    dt: DateTime,
    offset: Option<&str>,
    name: Option<&str>,
    default: &TimeZone,
) -> Result<Zoned, QueryError> {
    let tz = match (name, offset) {
        (Some(n), _) => TimeZone::get(n).map_err(|_| err(format!("unknown time zone {n}")))?,
        (None, Some(o)) => {
            fixed(parse_offset(o).ok_or_else(|| err(format!("invalid offset {o}")))?)?
        }
        (None, None) => default.clone(),
    };
    // With both an offset and a zone, the offset picks the instant (in a DST overlap).
    if let (Some(_), Some(o)) = (name, offset) {
        if let Some(secs) = parse_offset(o) {
            let off = Offset::from_seconds(secs).map_err(|e| err(e.to_string()))?;
            let ts = off.to_timestamp(dt).map_err(|e| err(e.to_string()))?;
            return Ok(ts.to_zoned(tz));
        }
    }
    dt.to_zoned(tz).map_err(|e| err(e.to_string()))
}

fn parse_duration(s: &str) -> Result<Duration, QueryError> {
    let body = s.strip_prefix('P').ok_or_else(|| bad(s))?;
    // The alternative form `P2012-02-02T14:37:21.545`.
    if body.len() > 4 && body.as_bytes().get(4) == Some(&b'-') {
        let (d, t) = body.split_once('T').unwrap_or((body, "00"));
        let p: Vec<&str> = d.split('-').collect();
        let [y, m, dd] = p.as_slice() else {
            return Err(bad(s));
        };
        let t = parse_time(t)?;
        return Ok(Duration::from_parts(
            (num(y)? * 12 + num(m)?) as f64,
            num(dd)? as f64,
            f64::from(t.hour()) * 3600.0 + f64::from(t.minute()) * 60.0 + f64::from(t.second()),
            i64::from(t.subsec_nanosecond()),
        ));
    }
    let (date_part, time_part) = match body.split_once('T') {
        Some((a, b)) => (a, Some(b)),
        None => (body, None),
    };
    let (mut months, mut days, mut secs) = (0.0, 0.0, 0.0);
    let mut scan = |text: &str, time: bool| -> Result<(), QueryError> {
        let mut cur = String::new();
        for c in text.chars() {
            if c.is_ascii_digit() || c == '.' || c == '-' || c == ',' {
                cur.push(if c == ',' { '.' } else { c });
                continue;
            }
            let v: f64 = cur.parse().map_err(|_| bad(s))?;
            cur.clear();
            match (c, time) {
                ('Y', false) => months += v * 12.0,
                ('M', false) => months += v,
                ('W', false) => days += v * 7.0,
                ('D', false) => days += v,
                ('H', true) => secs += v * 3600.0,
                ('M', true) => secs += v * 60.0,
                ('S', true) => secs += v,
                _ => return Err(bad(s)),
            }
        }
        if cur.is_empty() {
            Ok(())
        } else {
            Err(bad(s))
        }
    };
    scan(date_part, false)?;
    if let Some(t) = time_part {
        scan(t, true)?;
    }
    // Seconds written with a fraction keep their nanoseconds exactly.
    let whole = secs.trunc();
    let nanos = ((secs - whole) * 1e9).round() as i64;
    Ok(Duration::from_parts(months, days, whole, nanos))
}

// ---- construction from maps --------------------------------------------------------------------

fn map_int(m: &BTreeMap<String, Val>, k: &str) -> Result<Option<i64>, QueryError> {
    match m.get(k) {
        None | Some(Val::Null) => Ok(None),
        Some(Val::Int(i)) => Ok(Some(*i)),
        Some(other) => Err(err(format!(
            "{k} must be an integer, got a {}",
            other.type_name()
        ))),
    }
}

fn map_num(m: &BTreeMap<String, Val>, k: &str) -> Result<f64, QueryError> {
    match m.get(k) {
        None | Some(Val::Null) => Ok(0.0),
        Some(v) => v
            .as_f64()
            .ok_or_else(|| err(format!("{k} must be a number, got a {}", v.type_name()))),
    }
}

fn date_from_map(m: &BTreeMap<String, Val>, base: Option<Date>) -> Result<Date, QueryError> {
    let year = map_int(m, "year")?;
    let base_year = year.or(base.map(|b| i64::from(b.year())));
    if let Some(week) = map_int(m, "week")? {
        let y = match (year, base) {
            (Some(y), _) => y,
            (None, Some(b)) => i64::from(b.iso_week_date().year()),
            (None, None) => return Err(err("week needs a year")),
        };
        let dow = map_int(m, "dayOfWeek")?
            .or(base.map(|b| i64::from(b.weekday().to_monday_one_offset())))
            .unwrap_or(1);
        return week_date(y, week, dow);
    }
    if let Some(ord) = map_int(m, "ordinalDay")? {
        return ordinal_date(
            base_year.ok_or_else(|| err("ordinalDay needs a year"))?,
            ord,
        );
    }
    if let Some(q) = map_int(m, "quarter")? {
        let y = base_year.ok_or_else(|| err("quarter needs a year"))?;
        let base_doq = base.and_then(|b| match field(&Val::Date(b), "dayOfQuarter") {
            Ok(Val::Int(d)) => Some(d),
            _ => None,
        });
        let doq = map_int(m, "dayOfQuarter")?.or(base_doq).unwrap_or(1);
        let first =
            Date::new(y as i16, ((q - 1) * 3 + 1) as i8, 1).map_err(|e| err(e.to_string()))?;
        return first
            .checked_add(jiff::Span::new().days(doq - 1))
            .map_err(|e| err(e.to_string()));
    }
    if let (Some(dow), Some(b), None, None) = (
        map_int(m, "dayOfWeek")?,
        base,
        map_int(m, "month")?,
        map_int(m, "day")?,
    ) {
        let shift = dow - i64::from(b.weekday().to_monday_one_offset());
        return b
            .checked_add(jiff::Span::new().days(shift))
            .map_err(|e| err(e.to_string()));
    }
    let y = base_year.ok_or_else(|| err("a date needs a year"))?;
    let month = map_int(m, "month")?
        .or(base.map(|b| i64::from(b.month())))
        .unwrap_or(1);
    let day = map_int(m, "day")?
        .or(base.map(|b| i64::from(b.day())))
        .unwrap_or(1);
    if map_int(m, "month")?.is_none() && map_int(m, "day")?.is_some() && base.is_none() {
        return Err(err("day needs a month"));
    }
    Date::new(y as i16, month as i8, day as i8).map_err(|e| err(e.to_string()))
}

fn has_any(m: &BTreeMap<String, Val>, keys: &[&str]) -> bool {
    keys.iter().any(|k| m.contains_key(*k))
}

const TIME_KEYS: [&str; 7] = [
    "hour",
    "minute",
    "second",
    "millisecond",
    "microsecond",
    "nanosecond",
    "time",
];

fn time_from_map(m: &BTreeMap<String, Val>, base: Option<Time>) -> Result<Time, QueryError> {
    let b = base.unwrap_or(Time::midnight());
    let get = |k: &str, d: i64| map_int(m, k).map(|x| x.unwrap_or(d));
    let hour = get("hour", i64::from(b.hour()))?;
    let minute = get("minute", i64::from(b.minute()))?;
    let second = get("second", i64::from(b.second()))?;
    let sub = i64::from(b.subsec_nanosecond());
    let given = has_any(m, &["millisecond", "microsecond", "nanosecond"]);
    // Fields not given keep the base's (or zero): milli, micro and nano parts add up.
    let nanos = if given {
        let has_base = base.is_some();
        let ms = get("millisecond", if has_base { sub / 1_000_000 } else { 0 })?;
        let us = get(
            "microsecond",
            if has_base { (sub / 1000) % 1000 } else { 0 },
        )?;
        let ns = get("nanosecond", if has_base { sub % 1000 } else { 0 })?;
        ms * 1_000_000 + us * 1000 + ns
    } else {
        sub
    };
    if !(0..1_000_000_000).contains(&nanos) {
        return Err(err("sub-second fields out of range"));
    }
    if m.contains_key("minute") && !m.contains_key("hour") && base.is_none() {
        return Err(err("minute needs an hour"));
    }
    Time::new(hour as i8, minute as i8, second as i8, nanos as i32).map_err(|e| err(e.to_string()))
}

fn timezone_from_map(m: &BTreeMap<String, Val>) -> Result<Option<TimeZone>, QueryError> {
    match m.get("timezone") {
        None | Some(Val::Null) => Ok(None),
        Some(Val::Str(s)) => parse_zone(s).map(Some),
        Some(other) => Err(err(format!(
            "timezone must be a string, got a {}",
            other.type_name()
        ))),
    }
}

/// Which temporal type a constructor builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Date,
    LocalTime,
    Time,
    LocalDateTime,
    DateTime,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Date => "date",
            Kind::LocalTime => "localtime",
            Kind::Time => "time",
            Kind::LocalDateTime => "localdatetime",
            Kind::DateTime => "datetime",
        }
    }
}

/// UTC as a fixed offset (an IANA "UTC" zone would print as `[UTC]`).
fn utc() -> TimeZone {
    TimeZone::fixed(Offset::UTC)
}

thread_local! {
    /// The statement's clock: `date()`, `datetime.transaction()`, ... all read one instant.
    static STATEMENT_NOW: std::cell::RefCell<Option<Timestamp>> = const { std::cell::RefCell::new(None) };
}

/// Fixes the clock the temporal functions read for the statement about to run on this thread.
pub(crate) fn begin_statement() {
    STATEMENT_NOW.with(|n| *n.borrow_mut() = Some(Timestamp::now()));
}

fn now() -> Zoned {
    let ts = STATEMENT_NOW
        .with(|n| *n.borrow())
        .unwrap_or_else(Timestamp::now);
    ts.to_zoned(utc())
}

/// `date(x)`, `time(x)`, ...: from nothing (now), a string, a map, or another temporal.
pub(crate) fn construct(kind: Kind, arg: Option<&Val>) -> Result<Val, QueryError> {
    match arg {
        None => from_zoned(kind, &now()),
        Some(Val::Null) => Ok(Val::Null),
        Some(Val::Str(s)) => from_string(kind, s),
        Some(Val::Map(m)) => from_map(kind, m),
        Some(v) if is_temporal(v) => {
            from_map(kind, &BTreeMap::from([(base_key(v).to_owned(), v.clone())]))
        }
        Some(other) => Err(err(format!(
            "{}() cannot take a {}",
            kind.name(),
            other.type_name()
        ))),
    }
}

fn base_key(v: &Val) -> &'static str {
    match v {
        Val::Date(_) => "date",
        Val::LocalTime(_) | Val::Time(..) => "time",
        _ => "datetime",
    }
}

pub(crate) fn is_temporal(v: &Val) -> bool {
    matches!(
        v,
        Val::Date(_)
            | Val::LocalTime(_)
            | Val::Time(..)
            | Val::LocalDateTime(_)
            | Val::Zoned(_)
            | Val::DateTime(_)
    )
}

fn from_zoned(kind: Kind, z: &Zoned) -> Result<Val, QueryError> {
    Ok(match kind {
        Kind::Date => Val::Date(z.date()),
        Kind::LocalTime => Val::LocalTime(z.time()),
        Kind::Time => Val::Time(z.time(), z.offset().seconds()),
        Kind::LocalDateTime => Val::LocalDateTime(z.datetime()),
        Kind::DateTime => zoned_val(z.clone()),
    })
}

fn from_string(kind: Kind, s: &str) -> Result<Val, QueryError> {
    let s = s.trim();
    match kind {
        Kind::Date => Ok(Val::Date(parse_date(s)?)),
        Kind::LocalTime => {
            let (t, _, _) = split_zone(s);
            Ok(Val::LocalTime(parse_time(t)?))
        }
        Kind::Time => {
            let (t, off, _) = split_zone(s);
            let off = off
                .map(|o| parse_offset(o).ok_or_else(|| bad(s)))
                .transpose()?
                .unwrap_or(0);
            Ok(Val::Time(parse_time(t)?, off))
        }
        Kind::LocalDateTime => {
            let (d, t, _, _) = parse_datetime_parts(s)?;
            Ok(Val::LocalDateTime(DateTime::from_parts(d, t)))
        }
        Kind::DateTime => {
            let (d, t, off, name) = parse_datetime_parts(s)?;
            Ok(zoned_val(zoned_from(
                DateTime::from_parts(d, t),
                off,
                name,
                &utc(),
            )?))
        }
    }
}

fn from_map(kind: Kind, m: &BTreeMap<String, Val>) -> Result<Val, QueryError> {
    let date_base = m.get("date").or(m.get("datetime")).filter(|v| !v.is_null());
    let time_base = m.get("time").or(m.get("datetime")).filter(|v| !v.is_null());
    let zone_base = m.get("time").or(m.get("datetime")).filter(|v| !v.is_null());
    let base_date = date_base
        .map(|v| date_of(v).ok_or_else(|| err("date needs a temporal with a date")))
        .transpose()?;
    let base_time = time_base.and_then(time_of);
    let tz = timezone_from_map(m)?;
    let has_date = has_any(
        m,
        &[
            "year",
            "month",
            "day",
            "week",
            "ordinalDay",
            "quarter",
            "dayOfQuarter",
            "dayOfWeek",
        ],
    ) || base_date.is_some();
    let has_time = has_any(m, &TIME_KEYS) || base_time.is_some();
    match kind {
        Kind::Date => Ok(Val::Date(date_from_map(m, base_date)?)),
        Kind::LocalTime => Ok(Val::LocalTime(time_from_map(m, base_time)?)),
        Kind::Time => {
            let t = time_from_map(m, base_time)?;
            let base_off = zone_base.and_then(offset_of);
            let off = match (&tz, base_off, zone_base) {
                (Some(tz), Some(_), Some(b)) => {
                    // Convert the base's time into the new zone.
                    let z = base_zoned(b, t)?;
                    let converted = z.with_time_zone(tz.clone());
                    return Ok(Val::Time(converted.time(), converted.offset().seconds()));
                }
                (Some(tz), _, _) => tz.to_offset(Timestamp::now()).seconds(),
                (None, Some(o), _) => o,
                (None, None, _) => 0,
            };
            Ok(Val::Time(t, off))
        }
        Kind::LocalDateTime => {
            let d = date_from_map(m, base_date)?;
            let t = if has_time {
                time_from_map(m, base_time)?
            } else {
                Time::midnight()
            };
            Ok(Val::LocalDateTime(DateTime::from_parts(d, t)))
        }
        Kind::DateTime => {
            if !has_date {
                return Err(err("datetime() needs a date"));
            }
            let d = date_from_map(m, base_date)?;
            let t = if has_time {
                time_from_map(m, base_time)?
            } else {
                Time::midnight()
            };
            let dt = DateTime::from_parts(d, t);
            let base_zone = zone_base.and_then(zone_of);
            let z = match (tz, base_zone, zone_base) {
                (Some(tz), Some(_), Some(b)) => {
                    // A zoned base moves to the new zone at the same instant.
                    let z = base_zoned_dt(b, dt)?;
                    z.with_time_zone(tz)
                }
                (Some(tz), _, _) => dt.to_zoned(tz).map_err(|e| err(e.to_string()))?,
                (None, Some(bz), _) => dt.to_zoned(bz).map_err(|e| err(e.to_string()))?,
                (None, None, _) => dt.to_zoned(utc()).map_err(|e| err(e.to_string()))?,
            };
            Ok(zoned_val(z))
        }
    }
}

/// The base temporal's zone with the given time of day (today's date for a time).
fn base_zoned(b: &Val, t: Time) -> Result<Zoned, QueryError> {
    let d = date_of(b).unwrap_or(Date::constant(1970, 1, 1));
    base_zoned_dt(b, DateTime::from_parts(d, t))
}

fn base_zoned_dt(b: &Val, dt: DateTime) -> Result<Zoned, QueryError> {
    let tz = zone_of(b).unwrap_or(utc());
    dt.to_zoned(tz).map_err(|e| err(e.to_string()))
}

/// `duration(x)`: from a map or a string.
pub(crate) fn duration(arg: &Val) -> Result<Val, QueryError> {
    match arg {
        Val::Null => Ok(Val::Null),
        Val::Str(s) => Ok(Val::Duration(parse_duration(s.trim())?)),
        Val::Map(m) => {
            let months =
                map_num(m, "years")? * 12.0 + map_num(m, "quarters")? * 3.0 + map_num(m, "months")?;
            let days = map_num(m, "weeks")? * 7.0 + map_num(m, "days")?;
            let secs = map_num(m, "hours")? * 3600.0
                + map_num(m, "minutes")? * 60.0
                + map_num(m, "seconds")?;
            let whole = secs.trunc();
            let extra = ((secs - whole) * 1e9).round() as i64
                + (map_num(m, "milliseconds")? * 1e6).round() as i64
                + (map_num(m, "microseconds")? * 1e3).round() as i64
                + map_num(m, "nanoseconds")?.round() as i64;
            Ok(Val::Duration(Duration::from_parts(
                months, days, whole, extra,
            )))
        }
        other => Err(err(format!(
            "duration() cannot take a {}",
            other.type_name()
        ))),
    }
}

// ---- accessors ---------------------------------------------------------------------------------

pub(crate) fn field(v: &Val, key: &str) -> Result<Val, QueryError> {
    if let Val::Duration(d) = v {
        return duration_field(d, key);
    }
    let date = date_of(v);
    let time = time_of(v);
    let int = |x: i64| Ok(Val::Int(x));
    let need = |o: Option<i64>| {
        o.map(Val::Int)
            .ok_or_else(|| err(format!("a {} has no field {key}", v.type_name())))
    };
    match key {
        "year" => need(date.map(|d| i64::from(d.year()))),
        "quarter" => need(date.map(|d| (i64::from(d.month()) - 1) / 3 + 1)),
        "month" => need(date.map(|d| i64::from(d.month()))),
        "week" => need(date.map(|d| i64::from(d.iso_week_date().week()))),
        "weekYear" => need(date.map(|d| i64::from(d.iso_week_date().year()))),
        "day" => need(date.map(|d| i64::from(d.day()))),
        "ordinalDay" => need(date.map(|d| i64::from(d.day_of_year()))),
        "dayOfWeek" | "weekDay" => {
            need(date.map(|d| i64::from(d.weekday().to_monday_one_offset())))
        }
        "dayOfQuarter" => need(date.map(|d| {
            let q_first = Date::new(d.year(), (d.month() - 1) / 3 * 3 + 1, 1).unwrap_or(d);
            i64::from(d.day_of_year() - q_first.day_of_year()) + 1
        })),
        "hour" => need(time.map(|t| i64::from(t.hour()))),
        "minute" => need(time.map(|t| i64::from(t.minute()))),
        "second" => need(time.map(|t| i64::from(t.second()))),
        "millisecond" => need(time.map(|t| i64::from(t.subsec_nanosecond() / 1_000_000))),
        "microsecond" => need(time.map(|t| i64::from(t.subsec_nanosecond() / 1000))),
        "nanosecond" => need(time.map(|t| i64::from(t.subsec_nanosecond()))),
        "timezone" => match v {
            Val::Time(_, o) => Ok(Val::Str(offset_text(*o))),
            other => match zoned_of(other) {
                Some(z) => Ok(Val::Str(
                    zone_name(&z).map_or_else(|| offset_text(z.offset().seconds()), str::to_owned),
                )),
                None => Err(err(format!("a {} has no time zone", v.type_name()))),
            },
        },
        "offset" => offset_of(v)
            .map(|o| Val::Str(offset_text(o).replace('Z', "+00:00")))
            .ok_or_else(|| err(format!("a {} has no offset", v.type_name()))),
        "offsetMinutes" => need(offset_of(v).map(|o| i64::from(o / 60))),
        "offsetSeconds" => need(offset_of(v).map(i64::from)),
        "epochMillis" => match zoned_of(v) {
            Some(z) => int(z.timestamp().as_millisecond()),
            None => Err(err(format!("a {} has no epochMillis", v.type_name()))),
        },
        "epochSeconds" => match zoned_of(v) {
            Some(z) => int(z.timestamp().as_second()),
            None => Err(err(format!("a {} has no epochSeconds", v.type_name()))),
        },
        _ => Err(err(format!("a {} has no field {key}", v.type_name()))),
    }
}

fn duration_field(d: &Duration, key: &str) -> Result<Val, QueryError> {
    let total = d.total_nanos();
    let secs = d.seconds;
    Ok(Val::Int(match key {
        "years" => d.months / 12,
        "quarters" => d.months / 3,
        "months" => d.months,
        "weeks" => d.days / 7,
        "days" => d.days,
        "hours" => secs / 3600,
        "minutes" => secs / 60,
        "seconds" => secs,
        "milliseconds" => (total / 1_000_000) as i64,
        "microseconds" => (total / 1_000) as i64,
        "nanoseconds" => total as i64,
        "quartersOfYear" => (d.months / 3) % 4,
        "monthsOfQuarter" => d.months % 3,
        "monthsOfYear" => d.months % 12,
        "daysOfWeek" => d.days % 7,
        "minutesOfHour" => (secs / 60) % 60,
        "secondsOfMinute" => secs % 60,
        "millisecondsOfSecond" => d.nanos / 1_000_000,
        "microsecondsOfSecond" => d.nanos / 1_000,
        "nanosecondsOfSecond" => d.nanos,
        _ => return Err(err(format!("a duration has no field {key}"))),
    }))
}

// ---- ordering and arithmetic -------------------------------------------------------------------

/// Cypher's `<` on temporals: within one type only (a duration has no order).
pub(crate) fn compare(a: &Val, b: &Val) -> Option<Ordering> {
    match (a, b) {
        (Val::Date(x), Val::Date(y)) => Some(x.cmp(y)),
        (Val::LocalTime(x), Val::LocalTime(y)) => Some(x.cmp(y)),
        (Val::LocalDateTime(x), Val::LocalDateTime(y)) => Some(x.cmp(y)),
        (Val::Time(x, o), Val::Time(y, p)) => {
            Some(time_utc_nanos(*x, *o).cmp(&time_utc_nanos(*y, *p)))
        }
        (Val::Zoned(_) | Val::DateTime(_), Val::Zoned(_) | Val::DateTime(_)) => {
            Some(zoned_of(a)?.timestamp().cmp(&zoned_of(b)?.timestamp()))
        }
        _ => None,
    }
}

fn time_utc_nanos(t: Time, off: i32) -> i128 {
    let n = i128::from(t.hour()) * 3600 + i128::from(t.minute()) * 60 + i128::from(t.second())
        - i128::from(off);
    n * NANOS + i128::from(t.subsec_nanosecond())
}

/// Equality of temporal values (null when the types differ is not needed: they are unequal).
pub(crate) fn equals(a: &Val, b: &Val) -> Option<bool> {
    match (a, b) {
        (Val::Duration(x), Val::Duration(y)) => Some(x == y),
        (Val::Zoned(x), Val::Zoned(y)) => {
            Some(x.timestamp() == y.timestamp() && x.time_zone() == y.time_zone())
        }
        (Val::Zoned(_), Val::DateTime(_)) | (Val::DateTime(_), Val::Zoned(_)) => {
            Some(zoned_text(&zoned_of(a)?) == zoned_text(&zoned_of(b)?))
        }
        (Val::Time(x, o), Val::Time(y, p)) => Some(x == y && o == p),
        _ if is_temporal(a) || matches!(a, Val::Duration(_)) => Some(a == b),
        _ => None,
    }
}

fn span_of(d: Duration, sign: i64) -> jiff::Span {
    jiff::Span::new()
        .months(d.months * sign)
        .days(d.days * sign)
}

fn add_time(t: Time, d: Duration, sign: i64) -> Time {
    let day = 86_400 * NANOS;
    let cur = i128::from(t.hour()) * 3600 * NANOS
        + i128::from(t.minute()) * 60 * NANOS
        + i128::from(t.second()) * NANOS
        + i128::from(t.subsec_nanosecond());
    let n = (cur + d.total_nanos() * i128::from(sign)).rem_euclid(day);
    let secs = (n / NANOS) as i64;
    Time::new(
        (secs / 3600) as i8,
        ((secs / 60) % 60) as i8,
        (secs % 60) as i8,
        (n % NANOS) as i32,
    )
    .unwrap_or(t)
}

fn add_datetime(dt: DateTime, d: Duration, sign: i64) -> Result<DateTime, QueryError> {
    let dt = dt
        .checked_add(span_of(d, sign))
        .map_err(|e| arg_err(e.to_string()))?;
    let nanos = d.total_nanos() * i128::from(sign);
    let secs = (nanos / NANOS) as i64;
    let sub = (nanos % NANOS) as i64;
    dt.checked_add(jiff::Span::new().seconds(secs).nanoseconds(sub))
        .map_err(|e| arg_err(e.to_string()))
}

/// `temporal ± duration`, `duration ± duration`; None when the operands are not temporal.
pub(crate) fn add(a: &Val, b: &Val, sign: i64) -> Option<Result<Val, QueryError>> {
    let (t, d) = match (a, b) {
        (Val::Duration(x), Val::Duration(y)) => {
            return Some(
                x.add(if sign < 0 { y.neg() } else { *y })
                    .map(Val::Duration),
            )
        }
        (t, Val::Duration(d)) => (t, *d),
        (Val::Duration(d), t) if sign > 0 => (t, *d),
        _ => return None,
    };
    Some(match t {
        Val::Date(x) => {
            // Whole days of the time part count; the rest is dropped.
            let days = (d.total_nanos() / (86_400 * NANOS)) as i64;
            let d2 = Duration {
                days: d.days + days,
                seconds: 0,
                nanos: 0,
                ..d
            };
            add_datetime(DateTime::from_parts(*x, Time::midnight()), d2, sign)
                .map(|dt| Val::Date(dt.date()))
        }
        Val::LocalTime(x) => Ok(Val::LocalTime(add_time(*x, d, sign))),
        Val::Time(x, o) => Ok(Val::Time(add_time(*x, d, sign), *o)),
        Val::LocalDateTime(x) => add_datetime(*x, d, sign).map(Val::LocalDateTime),
        Val::Zoned(_) | Val::DateTime(_) => (|| {
            let z = zoned_of(t).ok_or_else(|| err("bad datetime"))?;
            let local = add_datetime(
                z.datetime(),
                Duration {
                    seconds: 0,
                    nanos: 0,
                    ..d
                },
                sign,
            )?;
            let z2 = local
                .to_zoned(z.time_zone().clone())
                .map_err(|e| arg_err(e.to_string()))?;
            let nanos = d.total_nanos() * i128::from(sign);
            let z3 = z2
                .checked_add(
                    jiff::Span::new()
                        .seconds((nanos / NANOS) as i64)
                        .nanoseconds((nanos % NANOS) as i64),
                )
                .map_err(|e| arg_err(e.to_string()))?;
            Ok(zoned_val(z3))
        })(),
        _ => return None,
    })
}

/// `duration * number`, `duration / number`.
pub(crate) fn scale(a: &Val, b: &Val, divide: bool) -> Option<Result<Val, QueryError>> {
    let (d, f) = match (a, b) {
        (Val::Duration(d), n) => (*d, n.as_f64()?),
        (n, Val::Duration(d)) if !divide => (*d, n.as_f64()?),
        _ => return None,
    };
    if divide && f == 0.0 {
        return Some(Err(arg_err("division of a duration by zero")));
    }
    Some(Ok(Val::Duration(d.scale(if divide { 1.0 / f } else { f }))))
}

// ---- duration.between, truncate ----------------------------------------------------------------

/// `duration.between(a, b)` and its `inMonths`, `inDays`, `inSeconds` forms.
pub(crate) fn between(a: &Val, b: &Val, unit: &str) -> Result<Val, QueryError> {
    if a.is_null() || b.is_null() {
        return Ok(Val::Null);
    }
    if !is_temporal(a) || !is_temporal(b) {
        return Err(err("duration.between needs two temporal values"));
    }
    let has_date = |v: &Val| !matches!(v, Val::LocalTime(_) | Val::Time(..));
    // Both sides as local date-times; zoned ones in the first one's zone (a time of day on
    // the first's date).
    let za = zone_of(a);
    let to_local = |v: &Val, other_date: Option<Date>| -> Option<DateTime> {
        let t = time_of(v).unwrap_or(Time::midnight());
        let d = date_of(v)
            .or(other_date)
            .unwrap_or(Date::constant(1970, 1, 1));
        match (&za, zoned_of(v)) {
            (Some(tz), Some(z)) => Some(z.with_time_zone(tz.clone()).datetime()),
            _ => match (v, &za, offset_of(v)) {
                (Val::Time(..), Some(_), Some(o)) => {
                    let off_a = offset_of(a).unwrap_or(0);
                    let dt = DateTime::from_parts(d, t);
                    dt.checked_add(jiff::Span::new().seconds(i64::from(off_a - o)))
                        .ok()
                }
                _ => Some(DateTime::from_parts(d, t)),
            },
        }
    };
    let both_dates = has_date(a) && has_date(b);
    if (has_date(a) || has_date(b)) && (zoned_of(a).is_some() || zoned_of(b).is_some()) {
        return between_instants(a, b, unit);
    }
    let da = to_local(a, date_of(b)).ok_or_else(|| err("duration.between: bad operand"))?;
    let db = to_local(b, date_of(a)).ok_or_else(|| err("duration.between: bad operand"))?;
    let (da, db) = if both_dates {
        (da, db)
    } else {
        // A time on either side: only the time of day counts.
        (
            DateTime::from_parts(Date::constant(1970, 1, 1), da.time()),
            DateTime::from_parts(Date::constant(1970, 1, 1), db.time()),
        )
    };
    let total = |x: DateTime| -> i128 {
        let days = i128::from(
            x.date()
                .since(Date::constant(1970, 1, 1))
                .map(|s| s.get_days())
                .unwrap_or(0),
        );
        days * 86_400 * NANOS
            + i128::from(x.hour()) * 3600 * NANOS
            + i128::from(x.minute()) * 60 * NANOS
            + i128::from(x.second()) * NANOS
            + i128::from(x.subsec_nanosecond())
    };
    let diff = total(db) - total(da);
    let months = if both_dates {
        months_between(da, db)
    } else {
        0
    };
    let d = match unit {
        "seconds" => Duration {
            months: 0,
            days: 0,
            seconds: (diff / NANOS) as i64,
            nanos: (diff % NANOS) as i64,
        },
        "days" => Duration {
            days: (diff / (86_400 * NANOS)) as i64,
            ..Duration::default()
        },
        "months" => Duration {
            months,
            ..Duration::default()
        },
        _ => {
            let after_months = add_datetime(
                da,
                Duration {
                    months,
                    ..Duration::default()
                },
                1,
            )?;
            let rest = total(db) - total(after_months);
            let days = (rest / (86_400 * NANOS)) as i64;
            let rest = rest - i128::from(days) * 86_400 * NANOS;
            Duration {
                months,
                days,
                seconds: (rest / NANOS) as i64,
                nanos: (rest % NANOS) as i64,
            }
        }
    };
    Ok(Val::Duration(d.normalised()))
}

/// `duration.between` where a side has a zone: local sides are read in that zone (a time of day
/// on the other side's date) and the time part is the difference of the instants.
fn between_instants(a: &Val, b: &Val, unit: &str) -> Result<Val, QueryError> {
    let tz = zoned_of(a)
        .or_else(|| zoned_of(b))
        .map(|z| z.time_zone().clone())
        .unwrap_or_else(utc);
    let instant = |v: &Val, other: &Val| -> Result<Timestamp, QueryError> {
        if let Some(z) = zoned_of(v) {
            return Ok(z.timestamp());
        }
        let other_date = zoned_of(other)
            .map(|z| z.with_time_zone(tz.clone()).date())
            .or_else(|| date_of(other));
        let d = date_of(v)
            .or(other_date)
            .ok_or_else(|| err("duration.between needs a date"))?;
        let t = time_of(v).unwrap_or(Time::midnight());
        // A time with an offset keeps its own offset.
        let zone = match v {
            Val::Time(_, off) => fixed(*off)?,
            _ => tz.clone(),
        };
        DateTime::from_parts(d, t)
            .to_zoned(zone)
            .map(|z| z.timestamp())
            .map_err(|e| err(e.to_string()))
    };
    let (ia, ib) = (instant(a, b)?, instant(b, a)?);
    let nanos = |t: Timestamp| t.as_nanosecond();
    let diff = nanos(ib) - nanos(ia);
    let day = 86_400 * NANOS;
    let (la, lb) = (
        ia.to_zoned(tz.clone()).datetime(),
        ib.to_zoned(tz.clone()).datetime(),
    );
    let months = months_between(la, lb);
    let split = |n: i128| Duration {
        seconds: n.div_euclid(NANOS) as i64,
        nanos: n.rem_euclid(NANOS) as i64,
        ..Duration::default()
    };
    let d = match unit {
        "seconds" => split(diff),
        "days" => Duration {
            days: (diff / day) as i64,
            ..Duration::default()
        },
        "months" => Duration {
            months,
            ..Duration::default()
        },
        _ => {
            let shifted = la
                .checked_add(jiff::Span::new().months(months))
                .and_then(|x| x.to_zoned(tz.clone()))
                .map_err(|e| arg_err(e.to_string()))?;
            let rest = nanos(ib) - nanos(shifted.timestamp());
            let days = (rest / day) as i64;
            Duration {
                months,
                days,
                ..split(rest - i128::from(days) * day)
            }
        }
    };
    Ok(Val::Duration(d.normalised()))
}

/// Whole months from `a` to `b` (towards zero).
fn months_between(a: DateTime, b: DateTime) -> i64 {
    let mut m = (i64::from(b.year()) - i64::from(a.year())) * 12 + i64::from(b.month())
        - i64::from(a.month());
    let shifted = |m: i64| a.checked_add(jiff::Span::new().months(m)).unwrap_or(a);
    if m > 0 && shifted(m) > b {
        m -= 1;
    } else if m < 0 && shifted(m) < b {
        m += 1;
    }
    m
}

/// `date.truncate(unit, temporal [, map])` and the same for the other types.
pub(crate) fn truncate(
    kind: Kind,
    unit: &Val,
    v: &Val,
    map: Option<&Val>,
) -> Result<Val, QueryError> {
    if v.is_null() {
        return Ok(Val::Null);
    }
    let Val::Str(unit) = unit else {
        return Err(err("truncate() needs a unit string"));
    };
    let date = date_of(v);
    let time = time_of(v).unwrap_or(Time::midnight());
    let d = date.unwrap_or(Date::constant(1970, 1, 1));
    let year = i64::from(d.year());
    let new_date = |y: i64, m: i64, day: i64| {
        Date::new(y as i16, m as i8, day as i8).map_err(|e| err(e.to_string()))
    };
    let (td, tt): (Date, Time) = match unit.as_str() {
        "millennium" => (
            new_date(year.div_euclid(1000) * 1000, 1, 1)?,
            Time::midnight(),
        ),
        "century" => (
            new_date(year.div_euclid(100) * 100, 1, 1)?,
            Time::midnight(),
        ),
        "decade" => (new_date(year.div_euclid(10) * 10, 1, 1)?, Time::midnight()),
        "year" => (new_date(year, 1, 1)?, Time::midnight()),
        "weekYear" => (
            week_date(i64::from(d.iso_week_date().year()), 1, 1)?,
            Time::midnight(),
        ),
        "quarter" => (
            new_date(year, (i64::from(d.month()) - 1) / 3 * 3 + 1, 1)?,
            Time::midnight(),
        ),
        "month" => (new_date(year, i64::from(d.month()), 1)?, Time::midnight()),
        "week" => (
            d.checked_sub(jiff::Span::new().days(i64::from(d.weekday().to_monday_zero_offset())))
                .map_err(|e| err(e.to_string()))?,
            Time::midnight(),
        ),
        "day" => (d, Time::midnight()),
        "hour" => (
            d,
            Time::new(time.hour(), 0, 0, 0).map_err(|e| err(e.to_string()))?,
        ),
        "minute" => (
            d,
            Time::new(time.hour(), time.minute(), 0, 0).map_err(|e| err(e.to_string()))?,
        ),
        "second" => (
            d,
            Time::new(time.hour(), time.minute(), time.second(), 0)
                .map_err(|e| err(e.to_string()))?,
        ),
        "millisecond" => (
            d,
            Time::new(
                time.hour(),
                time.minute(),
                time.second(),
                time.subsec_nanosecond() / 1_000_000 * 1_000_000,
            )
            .map_err(|e| err(e.to_string()))?,
        ),
        "microsecond" => (
            d,
            Time::new(
                time.hour(),
                time.minute(),
                time.second(),
                time.subsec_nanosecond() / 1000 * 1000,
            )
            .map_err(|e| err(e.to_string()))?,
        ),
        other => return Err(err(format!("unknown truncation unit {other}"))),
    };
    let is_date_unit = matches!(
        unit.as_str(),
        "millennium"
            | "century"
            | "decade"
            | "year"
            | "weekYear"
            | "quarter"
            | "month"
            | "week"
            | "day"
    );
    if is_date_unit && date.is_none() {
        return Err(err(format!(
            "cannot truncate a {} to a {unit}",
            v.type_name()
        )));
    }
    let mut m = match map {
        None | Some(Val::Null) => BTreeMap::new(),
        Some(Val::Map(m)) => m.clone(),
        Some(other) => {
            return Err(err(format!(
                "truncate() needs a map, got a {}",
                other.type_name()
            )))
        }
    };
    // The truncated value is the base; the map's fields replace parts of it.
    let base = match kind {
        Kind::Date => Val::Date(td),
        Kind::LocalTime => Val::LocalTime(tt),
        Kind::Time => Val::Time(tt, offset_of(v).unwrap_or(0)),
        Kind::LocalDateTime => Val::LocalDateTime(DateTime::from_parts(td, tt)),
        Kind::DateTime => {
            let tz = zone_of(v).unwrap_or(utc());
            zoned_val(
                DateTime::from_parts(td, tt)
                    .to_zoned(tz)
                    .map_err(|e| err(e.to_string()))?,
            )
        }
    };
    if m.is_empty() {
        return Ok(base);
    }
    match kind {
        Kind::Date => {
            m.insert("date".into(), base);
        }
        Kind::LocalTime | Kind::Time => {
            // A new zone keeps the local time.
            let keep = if m.contains_key("timezone") {
                Val::LocalTime(tt)
            } else {
                base
            };
            m.insert("time".into(), keep);
        }
        Kind::LocalDateTime | Kind::DateTime => {
            if m.contains_key("timezone") {
                // A new zone keeps the local date and time.
                m.insert("date".into(), Val::Date(td));
                m.insert("time".into(), Val::LocalTime(tt));
            } else {
                m.insert("datetime".into(), base);
            }
        }
    }
    from_map(kind, &m)
}

/// `datetime.fromepoch(seconds, nanoseconds)` / `datetime.fromepochmillis(ms)`.
pub(crate) fn from_epoch(seconds: &Val, nanos: Option<&Val>) -> Result<Val, QueryError> {
    let ts = match (seconds, nanos) {
        (Val::Int(s), Some(Val::Int(n))) => Timestamp::new(*s, *n as i32),
        (Val::Int(ms), None) => Timestamp::from_millisecond(*ms),
        _ => return Err(err("fromepoch needs integers")),
    }
    .map_err(|e| err(e.to_string()))?;
    Ok(zoned_val(ts.to_zoned(utc())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: Result<Val, QueryError>) -> String {
        to_text(&v.expect("value")).expect("temporal")
    }

    #[test]
    fn strings_parse_and_print_in_neo4j_form() {
        assert_eq!(
            text(construct(Kind::Date, Some(&Val::Str("2015W302".into())))),
            "2015-07-21"
        );
        assert_eq!(
            text(construct(Kind::Time, Some(&Val::Str("2140-02".into())))),
            "21:40-02:00"
        );
        assert_eq!(
            text(construct(
                Kind::DateTime,
                Some(&Val::Str("2015-07-21T21:40:32.142[Europe/London]".into()))
            )),
            "2015-07-21T21:40:32.142+01:00[Europe/London]"
        );
        assert_eq!(
            text(duration(&Val::Str("P0.75M".into()))),
            "P22DT19H51M49.5S"
        );
        assert_eq!(
            text(duration(&Val::Str("P2012-02-02T14:37:21.545".into()))),
            "P2012Y2M2DT14H37M21.545S"
        );
    }

    #[test]
    fn arithmetic_and_between() {
        let d = construct(Kind::Date, Some(&Val::Str("1984-10-11".into()))).expect("date");
        let e = construct(Kind::Date, Some(&Val::Str("2015-06-24".into()))).expect("date");
        assert_eq!(text(between(&d, &e, "")), "P30Y8M13D");
        let dur = duration(&Val::Str("P1M".into())).expect("dur");
        assert_eq!(text(add(&d, &dur, 1).expect("temporal")), "1984-11-11");
    }
}
