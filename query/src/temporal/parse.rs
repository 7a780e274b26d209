//! Temporal values from strings: ISO dates (calendar, week, ordinal), times, zones and durations.

#[allow(unused_imports)]
use super::*;

pub(super) fn num(s: &str) -> Result<i64, QueryError> {
    s.parse::<i64>()
        .map_err(|_| err(format!("invalid temporal text {s:?}")))
}

pub(super) fn bad(s: &str) -> QueryError {
    err(format!("invalid temporal text {s:?}"))
}

pub(super) fn parse_date(s: &str) -> Result<Date, QueryError> {
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

pub(super) fn week_date(y: i64, week: i64, dow: i64) -> Result<Date, QueryError> {
    let wd = Weekday::from_monday_one_offset(dow as i8).map_err(|_| err("invalid dayOfWeek"))?;
    jiff::civil::ISOWeekDate::new(y as i16, week as i8, wd)
        .map(|w| w.date())
        .map_err(|e| err(format!("invalid week date: {e}")))
}

pub(super) fn ordinal_date(y: i64, ord: i64) -> Result<Date, QueryError> {
    let first = Date::new(y as i16, 1, 1).map_err(|e| err(e.to_string()))?;
    if !(1..=i64::from(first.days_in_year())).contains(&ord) {
        return Err(err("invalid ordinal day"));
    }
    first
        .checked_add(jiff::Span::new().days(ord - 1))
        .map_err(|e| err(e.to_string()))
}

pub(super) fn parse_time(s: &str) -> Result<Time, QueryError> {
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
pub(super) fn split_zone(s: &str) -> (&str, Option<&str>, Option<&str>) {
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
pub(super) type DateTimeParts<'a> = (Date, Time, Option<&'a str>, Option<&'a str>);

pub(super) fn parse_datetime_parts(s: &str) -> Result<DateTimeParts<'_>, QueryError> {
    let (d, t) = match s.split_once('T') {
        Some((d, t)) => (d, t),
        None => (s, "00"),
    };
    let (t, offset, name) = split_zone(t);
    Ok((parse_date(d)?, parse_time(t)?, offset, name))
}

pub(super) fn zoned_from(
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

pub(super) fn parse_duration(s: &str) -> Result<Duration, QueryError> {
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
