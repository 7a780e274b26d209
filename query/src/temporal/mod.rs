//! Cypher's temporal types: `date`, `localtime`, `time`, `localdatetime`, `datetime` and
//! `duration`, with Neo4j's semantics (construction from maps and ISO 8601 strings, accessors,
//! ordering, arithmetic with durations, truncation, `duration.between`), calendar and zone
//! rules from `jiff` (IANA zones from its bundled database, never the machine's).
//!
//! A datetime in UTC at microsecond precision is the engine's `DateTime` value (what the
//! store holds and indexes); any other datetime (an offset, a named zone, nanoseconds) is a
//! `Val::Zoned`. Every type is stored as an engine value of its own (`store`).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use jiff::civil::{Date, DateTime, Time, Weekday};
use jiff::tz::{Offset, TimeZone};
use jiff::{Timestamp, Zoned};

use crate::error::QueryError;
use crate::value::Val;

mod between;
mod from_map;
mod parse;
mod store;
mod text;

#[allow(unused_imports)]
pub(crate) use between::*;
use from_map::{from_map, map_num};
use parse::*;
pub(crate) use store::{from_value, to_value};
pub use store::{temporal_param, temporal_text, TEMPORAL_PARAM_TYPES};
pub(crate) use text::*;

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
    /// Seconds past the i64 range (only from values no query built) saturate.
    fn normalised(mut self) -> Duration {
        let t = self.total_nanos();
        self.seconds =
            i64::try_from(t.div_euclid(NANOS)).unwrap_or(if t < 0 { i64::MIN } else { i64::MAX });
        self.nanos = t.rem_euclid(NANOS) as i64;
        self
    }

    /// A duration from fractional parts; an error when a part is not finite or does not fit
    /// (so `duration({years: 1e300})` fails rather than wrapping or panicking).
    fn from_parts(
        months: f64,
        days: f64,
        seconds: f64,
        extra_nanos: i64,
    ) -> Result<Duration, QueryError> {
        // Below 2^63, with room for the carries between parts.
        const LIMIT: f64 = 9.0e18;
        let fits = |x: f64| x.is_finite() && x.abs() < LIMIT;
        let over = || arg_err("duration out of range");
        // A saturated `extra_nanos` is a sum that did not fit.
        if ![months, days, seconds].into_iter().all(fits)
            || extra_nanos.unsigned_abs() >= i64::MAX.unsigned_abs()
        {
            return Err(over());
        }
        // Fractions cascade down: months -> days (and seconds), days -> seconds -> nanoseconds.
        let whole_months = months.trunc();
        let month_rest_secs = (months - whole_months) * MONTH_SECONDS;
        let days_total = days + (month_rest_secs / 86_400.0).trunc();
        let month_rest_secs = month_rest_secs - (month_rest_secs / 86_400.0).trunc() * 86_400.0;
        let whole_days = days_total.trunc();
        let secs_total = seconds + (days_total - whole_days) * 86_400.0 + month_rest_secs;
        let whole_secs = secs_total.trunc();
        if ![days_total, secs_total].into_iter().all(fits) {
            return Err(over());
        }
        let nanos = ((secs_total - whole_secs) * 1e9).round() as i64 + extra_nanos;
        let d = Duration {
            months: whole_months as i64,
            days: whole_days as i64,
            seconds: whole_secs as i64,
            nanos,
        };
        let secs = d.total_nanos().div_euclid(NANOS);
        if secs.unsigned_abs() >= 1 << 63 {
            return Err(over());
        }
        Ok(d.normalised())
    }

    fn neg(self) -> Duration {
        Duration {
            months: self.months.saturating_neg(),
            days: self.days.saturating_neg(),
            seconds: self.seconds.saturating_neg(),
            nanos: self.nanos.saturating_neg(),
        }
    }

    fn add(self, o: Duration) -> Result<Duration, QueryError> {
        let over = || arg_err("duration overflow");
        let d = Duration {
            months: self.months.checked_add(o.months).ok_or_else(over)?,
            days: self.days.checked_add(o.days).ok_or_else(over)?,
            seconds: self.seconds.checked_add(o.seconds).ok_or_else(over)?,
            nanos: self.nanos.checked_add(o.nanos).ok_or_else(over)?,
        };
        if d.total_nanos().div_euclid(NANOS).unsigned_abs() >= 1 << 63 {
            return Err(over());
        }
        Ok(d.normalised())
    }

    fn scale(self, f: f64) -> Result<Duration, QueryError> {
        // Towards zero, as Neo4j (`duration / 2` of 1 ns is 0 ns).
        let nanos = (self.nanos as f64 * f).trunc();
        if !nanos.is_finite() || nanos.abs() >= 9.0e18 {
            return Err(arg_err("duration out of range"));
        }
        Duration::from_parts(
            self.months as f64 * f,
            self.days as f64 * f,
            self.seconds as f64 * f,
            nanos as i64,
        )
    }
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

// ---- construction from maps --------------------------------------------------------------------

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
    let now = PINNED_NOW
        .with(|p| *p.borrow())
        .unwrap_or_else(Timestamp::now);
    STATEMENT_NOW.with(|n| *n.borrow_mut() = Some(now));
}

thread_local! {
    /// Set only while two runs of one statement are compared (`fuzzing`): both read one clock.
    static PINNED_NOW: std::cell::RefCell<Option<Timestamp>> = const { std::cell::RefCell::new(None) };
}

/// Pins (or with `false`, releases) the clock of this thread's statements, so that comparing
/// two runs of a statement that reads the clock (`datetime()`) compares like with like.
pub(crate) fn pin_clock(pinned: bool) {
    PINNED_NOW.with(|p| *p.borrow_mut() = pinned.then(Timestamp::now));
}

/// Whether this thread's clock is pinned (see [`pin_clock`]).
pub(crate) fn clock_pinned() -> bool {
    PINNED_NOW.with(|p| p.borrow().is_some())
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
            // Saturating: a sum past the range is refused by `from_parts`.
            let extra = (((secs - whole) * 1e9).round() as i64)
                .saturating_add((map_num(m, "milliseconds")? * 1e6).round() as i64)
                .saturating_add((map_num(m, "microseconds")? * 1e3).round() as i64)
                .saturating_add(map_num(m, "nanoseconds")?.round() as i64);
            Ok(Val::Duration(Duration::from_parts(
                months, days, whole, extra,
            )?))
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

/// The calendar part of a duration as two spans, months then days: a jiff span has one sign,
/// so `1 month -14 days` cannot be one span (jiff would flip the months). jiff's setters panic
/// past their range, hence the checked ones (huge durations are an error, not a crash).
fn span_of(d: Duration, sign: i64) -> Result<[jiff::Span; 2], QueryError> {
    let over = |e: jiff::Error| arg_err(format!("duration out of range: {e}"));
    Ok([
        jiff::Span::new()
            .try_months(d.months.saturating_mul(sign))
            .map_err(over)?,
        jiff::Span::new()
            .try_days(d.days.saturating_mul(sign))
            .map_err(over)?,
    ])
}

/// Seconds and nanoseconds as a span (checked, as `span_of`).
fn span_of_nanos(nanos: i128) -> Result<jiff::Span, QueryError> {
    let secs = i64::try_from(nanos / NANOS).map_err(|_| arg_err("duration out of range"))?;
    jiff::Span::new()
        .try_seconds(secs)
        .and_then(|s| s.try_nanoseconds((nanos % NANOS) as i64))
        .map_err(|e| arg_err(format!("duration out of range: {e}")))
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
    let [months, days] = span_of(d, sign)?;
    let dt = dt
        .checked_add(months)
        .and_then(|dt| dt.checked_add(days))
        .map_err(|e| arg_err(e.to_string()))?;
    let nanos = d.total_nanos() * i128::from(sign);
    dt.checked_add(span_of_nanos(nanos)?)
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
            let Some(days) = d.days.checked_add(days) else {
                return Some(Err(arg_err("duration out of range")));
            };
            let d2 = Duration {
                days,
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
                .checked_add(span_of_nanos(nanos)?)
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
    Some(d.scale(if divide { 1.0 / f } else { f }).map(Val::Duration))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: Result<Val, QueryError>) -> String {
        to_text(&v.expect("value")).expect("temporal")
    }

    #[test]
    fn huge_durations_are_errors_not_panics() {
        let map = |k: &str, v: Val| Val::Map(BTreeMap::from([(k.to_owned(), v)]));
        for arg in [
            map("years", Val::Float(1e300)),
            map("months", Val::Int(i64::MAX)),
            map("days", Val::Float(f64::INFINITY)),
            map("milliseconds", Val::Float(9e18)),
            map("nanoseconds", Val::Float(-1e30)),
            Val::Str("P9999999999999999999Y".into()),
            Val::Str("P2012-9223372036854775000-02T14:37:21".into()),
        ] {
            assert!(duration(&arg).is_err(), "{arg:?}");
        }
        let big = duration(&map("months", Val::Int(1_000_000_000_000))).expect("fits");
        let date = construct(Kind::Date, Some(&Val::Str("2020-01-01".into()))).expect("date");
        assert!(add(&date, &big, 1).expect("temporal").is_err());
        assert!(add(&big, &big, -1).expect("temporal").is_ok());
        let secs = duration(&map("seconds", Val::Int(9_000_000_000_000_000_000 / 2))).expect("ok");
        assert!(add(&secs, &secs, 1).expect("temporal").is_ok());
        assert!(add(&date, &secs, 1).expect("temporal").is_err());
        assert!(scale(&secs, &Val::Float(1e10), false)
            .expect("duration")
            .is_err());
        let dt =
            construct(Kind::DateTime, Some(&Val::Str("2020-01-01T00:00Z".into()))).expect("dt");
        assert!(add(&dt, &big, -1).expect("temporal").is_err());
        assert!(construct(Kind::Date, Some(&map("year", Val::Int(2020)).clone())).is_ok());
        let odd = Val::Map(BTreeMap::from([
            ("year".to_owned(), Val::Int(2020)),
            ("quarter".to_owned(), Val::Int(i64::MIN)),
        ]));
        assert!(construct(Kind::Date, Some(&odd)).is_err());
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
