//! Temporal values as text: Cypher's ISO forms of dates, times, zones and durations.

#[allow(unused_imports)]
use super::*;

pub(super) fn fraction(nanos: i32) -> String {
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

pub(super) fn time_text(t: Time) -> String {
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

pub(super) fn date_text(d: Date) -> String {
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

pub(super) fn offset_text(seconds: i32) -> String {
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
pub(super) fn zone_name(z: &Zoned) -> Option<&str> {
    z.time_zone().iana_name().filter(|n| *n != "UTC")
}

pub(super) fn zoned_text(z: &Zoned) -> String {
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

pub(super) fn duration_text(d: &Duration) -> String {
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
