//! Temporal values built from maps (`date({year: 2024, week: 3})`, `time({hour: 12,
//! timezone: 'Europe/Stockholm'})`, a base temporal with fields replaced).

use super::*;

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

pub(super) fn map_num(m: &BTreeMap<String, Val>, k: &str) -> Result<f64, QueryError> {
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
        if !(1..=4).contains(&q) || !(1..=92).contains(&doq) {
            return Err(err("quarter or dayOfQuarter out of range"));
        }
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
        if !(1..=7).contains(&dow) {
            return Err(err("dayOfWeek out of range"));
        }
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

pub(super) fn from_map(kind: Kind, m: &BTreeMap<String, Val>) -> Result<Val, QueryError> {
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
