//! Wall-clock helpers. Timestamps on the wire and in records are RFC 3339 UTC strings with
//! exactly three fractional digits, so string order equals time order.

use time::macros::format_description;
use time::OffsetDateTime;

pub fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

pub fn rfc3339(t: OffsetDateTime) -> String {
    let fixed =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    // Formatting only fails for years outside 0..=9999.
    t.to_offset(time::UtcOffset::UTC)
        .format(fixed)
        .unwrap_or_else(|_| t.unix_timestamp().to_string())
}

pub fn now_rfc3339() -> String {
    rfc3339(now())
}

/// RFC 3339 rendering of a Unix timestamp in seconds.
pub fn unix_rfc3339(secs: i64) -> String {
    OffsetDateTime::from_unix_timestamp(secs)
        .map(rfc3339)
        .unwrap_or_else(|_| secs.to_string())
}

/// Engine time (microseconds since the epoch) of `t`, saturating.
pub fn micros_of(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX)
}

/// RFC 3339 rendering of engine microseconds (the number itself when out of range).
pub fn micros_rfc3339(us: i64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(us) * 1000)
        .map(rfc3339)
        .unwrap_or_else(|_| us.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_width_utc() {
        let t = OffsetDateTime::from_unix_timestamp(1_700_000_000).expect("valid");
        assert_eq!(rfc3339(t), "2023-11-14T22:13:20.000Z");
        let later = t + time::Duration::milliseconds(5);
        assert!(rfc3339(later) > rfc3339(t));
    }
}
