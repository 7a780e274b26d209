//! `duration.between` and its relatives, and truncation of temporal values.

#[allow(unused_imports)]
use super::*;

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
pub(super) fn between_instants(a: &Val, b: &Val, unit: &str) -> Result<Val, QueryError> {
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
pub(super) fn months_between(a: DateTime, b: DateTime) -> i64 {
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
