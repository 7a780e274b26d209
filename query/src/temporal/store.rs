//! Temporal values between queries and the store: each `Val` temporal has an engine `Value`
//! (plain numbers and a zone name, no calendar library in the engine), and back, losslessly
//! (zone names and nanoseconds included). Also the typed parameters of the HTTP API.

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};
use svc_engine::{DurationValue, Value, ZonedDateTime};

use super::{err, fixed, Duration, Kind};
use crate::error::QueryError;
use crate::value::Val;

const NANOS_PER_DAY: i64 = 86_400_000_000_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(d: Date) -> i64 {
    let (y, m, day) = (
        i64::from(d.year()),
        i64::from(d.month()),
        i64::from(d.day()),
    );
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `days` after 1970-01-01; None outside the supported years (-9999..=9999).
fn civil_from_days(days: i64) -> Option<Date> {
    // Far outside ±10,000 years: refuse before the arithmetic can overflow.
    if days.unsigned_abs() > 5_000_000 {
        return None;
    }
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    Date::new(i16::try_from(y).ok()?, m as i8, d as i8).ok()
}

fn time_nanos(t: Time) -> i64 {
    ((i64::from(t.hour()) * 60 + i64::from(t.minute())) * 60 + i64::from(t.second()))
        * 1_000_000_000
        + i64::from(t.subsec_nanosecond())
}

fn time_from_nanos(n: i64) -> Option<Time> {
    if !(0..NANOS_PER_DAY).contains(&n) {
        return None;
    }
    let secs = n / 1_000_000_000;
    Time::new(
        (secs / 3600) as i8,
        ((secs / 60) % 60) as i8,
        (secs % 60) as i8,
        (n % 1_000_000_000) as i32,
    )
    .ok()
}

/// The engine value of a temporal `Val` (None: not a temporal, or a `DateTime`, which is
/// already the engine's).
pub(crate) fn to_value(v: &Val) -> Option<Value> {
    Some(match v {
        Val::Date(d) => Value::Date(days_from_civil(*d)),
        Val::LocalTime(t) => Value::LocalTime(time_nanos(*t)),
        Val::Time(t, off) => Value::Time(time_nanos(*t), *off),
        Val::LocalDateTime(dt) => {
            let secs = days_from_civil(dt.date()) * 86_400 + time_nanos(dt.time()) / 1_000_000_000;
            Value::LocalDateTime(secs, dt.time().subsec_nanosecond() as u32)
        }
        Val::Zoned(z) => {
            let n = z.timestamp().as_nanosecond();
            Value::ZonedDateTime(Box::new(ZonedDateTime {
                seconds: i64::try_from(n.div_euclid(1_000_000_000)).ok()?,
                nanos: n.rem_euclid(1_000_000_000) as u32,
                offset: z.offset().seconds(),
                zone: z.time_zone().iana_name().map(str::to_owned),
            }))
        }
        Val::Duration(d) => Value::Duration(Box::new(DurationValue {
            months: d.months,
            days: d.days,
            seconds: d.seconds,
            nanos: d.nanos,
        })),
        _ => return None,
    })
}

/// The `Val` of a stored temporal value; None when it is not a temporal or lies outside
/// what the calendar supports (a value no query wrote).
pub(crate) fn from_value(v: &Value) -> Option<Val> {
    Some(match v {
        Value::Date(d) => Val::Date(civil_from_days(*d)?),
        Value::LocalTime(n) => Val::LocalTime(time_from_nanos(*n)?),
        Value::Time(n, off) => {
            fixed(*off).ok()?;
            Val::Time(time_from_nanos(*n)?, *off)
        }
        Value::LocalDateTime(secs, nanos) => {
            let date = civil_from_days(secs.div_euclid(86_400))?;
            let in_day = secs.rem_euclid(86_400) * 1_000_000_000 + i64::from(*nanos);
            Val::LocalDateTime(DateTime::from_parts(date, time_from_nanos(in_day)?))
        }
        Value::ZonedDateTime(z) => {
            let ts = Timestamp::from_nanosecond(z.instant_nanos()).ok()?;
            let tz = match &z.zone {
                Some(name) => TimeZone::get(name).ok()?,
                None => fixed(z.offset).ok()?,
            };
            super::zoned_val(Zoned::new(ts, tz))
        }
        Value::Duration(d) => Val::Duration(Duration {
            months: d.months,
            days: d.days,
            seconds: d.seconds,
            nanos: d.nanos,
        }),
        _ => return None,
    })
}

/// Longest text accepted for a typed temporal parameter (ISO 8601 forms are far shorter).
const MAX_PARAM_TEXT: usize = 128;

/// The `$type` names of typed temporal parameters (Neo4j's Query API typed JSON), and the
/// constructor each one runs on its `_value`.
pub const TEMPORAL_PARAM_TYPES: [&str; 7] = [
    "Date",
    "Time",
    "LocalTime",
    "LocalDateTime",
    "OffsetDateTime",
    "ZonedDateTime",
    "Duration",
];

/// A typed temporal parameter (`{"$type": "Date", "_value": "2026-01-02"}`) as the value a
/// query sees: its ISO 8601 text parsed as Cypher's constructor of that type parses it.
pub fn temporal_param(type_name: &str, text: &str) -> Result<Value, QueryError> {
    if text.len() > MAX_PARAM_TEXT {
        return Err(err(format!(
            "a {type_name} parameter longer than {MAX_PARAM_TEXT} characters"
        )));
    }
    let s = Val::Str(text.to_owned());
    let v = match type_name {
        "Date" => super::construct(Kind::Date, Some(&s))?,
        "Time" => super::construct(Kind::Time, Some(&s))?,
        "LocalTime" => super::construct(Kind::LocalTime, Some(&s))?,
        "LocalDateTime" => super::construct(Kind::LocalDateTime, Some(&s))?,
        "OffsetDateTime" | "ZonedDateTime" => super::construct(Kind::DateTime, Some(&s))?,
        "Duration" => super::duration(&s)?,
        other => {
            return Err(err(format!(
                "unknown parameter type {other} (one of {})",
                TEMPORAL_PARAM_TYPES.join(", ")
            )))
        }
    };
    crate::value::to_property(&v)
}

/// A stored temporal value as Cypher's `toString` writes it (None: not a temporal).
pub fn temporal_text(v: &Value) -> Option<String> {
    match v {
        Value::DateTime(_)
        | Value::Date(_)
        | Value::LocalTime(_)
        | Value::Time(..)
        | Value::LocalDateTime(..)
        | Value::ZonedDateTime(_)
        | Value::Duration(_) => super::to_text(&Val::from(v)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn val(kind: Kind, s: &str) -> Val {
        super::super::construct(kind, Some(&Val::Str(s.into()))).expect("parses")
    }

    #[test]
    fn civil_days_match_the_calendar() {
        for (y, m, d) in [
            (1970, 1, 1),
            (1969, 12, 31),
            (2000, 2, 29),
            (2024, 3, 1),
            (-9999, 1, 1),
            (9999, 12, 31),
            (1, 1, 1),
            (0, 2, 29),
        ] {
            let date = Date::new(y, m, d).expect("valid");
            let days = days_from_civil(date);
            let epoch = Date::new(1970, 1, 1).expect("valid");
            let want = epoch
                .until((jiff::Unit::Day, date))
                .expect("span")
                .get_days();
            assert_eq!(days, i64::from(want), "{date}");
            assert_eq!(civil_from_days(days), Some(date));
        }
        assert_eq!(civil_from_days(i64::MAX), None);
        assert_eq!(civil_from_days(i64::MIN), None);
        assert_eq!(civil_from_days(4_000_000), None);
    }

    #[test]
    fn every_temporal_round_trips_through_the_store() {
        let vals = [
            val(Kind::Date, "2026-01-02"),
            val(Kind::Date, "-0044-03-15"),
            val(Kind::LocalTime, "23:59:59.999999999"),
            val(Kind::Time, "12:00:00.000000001-05:30"),
            val(Kind::LocalDateTime, "1969-12-31T23:59:59.5"),
            val(
                Kind::DateTime,
                "2026-03-29T02:30:00.123456789+01:00[Europe/Stockholm]",
            ),
            val(Kind::DateTime, "1900-01-01T00:00:00.000000001Z"),
            val(Kind::DateTime, "2026-01-02T10:00+01:00"),
            val(Kind::DateTime, "2026-01-02T10:00Z"),
            super::super::duration(&Val::Str("P1Y2M3DT4H5M6.000000007S".into())).expect("parses"),
            super::super::duration(&Val::Str("PT-0.5S".into())).expect("parses"),
        ];
        for v in vals {
            let stored = crate::value::to_property(&v).expect("storable");
            let back = Val::from(&stored);
            assert_eq!(back, v, "{stored:?}");
            assert_eq!(
                temporal_text(&stored),
                super::super::to_text(&v),
                "{stored:?}"
            );
        }
    }

    #[test]
    fn unrepresentable_stored_values_read_as_null() {
        for v in [
            Value::Date(i64::MAX),
            Value::LocalTime(-1),
            Value::Time(0, 100_000),
            Value::LocalDateTime(i64::MIN, 0),
        ] {
            assert_eq!(Val::from(&v), Val::Null, "{v:?}");
        }
        let bad_zone = Value::ZonedDateTime(Box::new(ZonedDateTime {
            seconds: 0,
            nanos: 0,
            offset: 0,
            zone: Some("Not/AZone".into()),
        }));
        assert_eq!(Val::from(&bad_zone), Val::Null);
    }

    #[test]
    fn typed_parameters_parse_or_refuse() {
        assert_eq!(
            temporal_param("Date", "2026-01-02").expect("date"),
            Value::Date(20_455)
        );
        assert!(matches!(
            temporal_param("ZonedDateTime", "2026-01-02T10:00+01:00[Europe/Paris]"),
            Ok(Value::ZonedDateTime(_))
        ));
        assert_eq!(
            temporal_param("OffsetDateTime", "1970-01-01T00:00:01Z").expect("utc"),
            Value::DateTime(1_000_000)
        );
        assert!(matches!(
            temporal_param("Duration", "P1D"),
            Ok(Value::Duration(_))
        ));
        assert!(temporal_param("Date", "2026-13-01").is_err());
        assert!(temporal_param("Point", "x").is_err());
        assert!(temporal_param("ZonedDateTime", "2026-01-02T10:00[No/Such_Zone]").is_err());
        assert!(temporal_param("Date", &"9".repeat(10_000)).is_err());
    }
}
