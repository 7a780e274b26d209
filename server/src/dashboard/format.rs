//! How the dashboard writes numbers, money, times, people and score factors, in one place so
//! every page reads the same: thousands separators, money with its currency, times relative
//! with the absolute UTC time on hover (`<time datetime title data-relative>`, refreshed by
//! dashboard.js), names and emails before ids, model features in words.

use maud::{html, Markup};
use serde_json::Value as Json;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The currency of amounts that name none. The service keeps no workspace currency yet, and
/// the reporting summary's ARR target is in US cents.
pub const DEFAULT_CURRENCY: &str = "USD";

/// `1234567` as `1,234,567`.
pub fn thousands(n: i128) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count: `10650` as `10,650`.
pub fn count(n: u64) -> String {
    thousands(i128::from(n))
}

/// `x` with `decimals` places and thousands separators (`1234.5`, 1 as `1,234.5`).
pub fn decimal(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let text = format!("{:.*}", decimals, x.abs());
    let (whole, frac) = text.split_once('.').unwrap_or((&text, ""));
    let whole: i128 = whole.parse().unwrap_or(0);
    let sign = if x < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') {
        "-"
    } else {
        ""
    };
    let mut out = format!("{sign}{}", thousands(whole));
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    out
}

/// A percentage already on the 0-100 scale, one decimal unless whole: `61.9%`, `62%`.
pub fn percent(p: f64) -> String {
    if (p - p.round()).abs() < 0.05 {
        format!("{}%", decimal(p.round(), 0))
    } else {
        format!("{}%", decimal(p, 1))
    }
}

/// A probability (0-1) as a percentage: `0.0755` as `7.5%` (one decimal below 10%, so a
/// small risk is not rounded to a different whole number than the stored score suggests).
pub fn probability(p: f64) -> String {
    let pct = p * 100.0;
    if pct < 10.0 {
        format!("{}%", decimal(pct, 1))
    } else {
        format!("{}%", decimal(pct, 0))
    }
}

fn symbol(currency: &str) -> Option<&'static str> {
    Some(match currency {
        "USD" => "$",
        "EUR" => "€",
        "GBP" => "£",
        "JPY" => "¥",
        "INR" => "₹",
        _ => return None,
    })
}

fn currency_code(currency: Option<&str>) -> String {
    currency
        .map(|c| c.trim().to_ascii_uppercase())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| DEFAULT_CURRENCY.to_owned())
}

fn with_currency(number: &str, negative: bool, currency: Option<&str>) -> String {
    let code = currency_code(currency);
    let sign = if negative { "-" } else { "" };
    match symbol(&code) {
        Some(sym) => format!("{sign}{sym}{number}"),
        None => format!("{sign}{code} {number}"),
    }
}

/// Money in `currency` (ISO 4217, [`DEFAULT_CURRENCY`] when none): `$1,152,000`,
/// `€12,000.50`, `CHF 900`. Cents only when there are any.
pub fn money(amount: f64, currency: Option<&str>) -> String {
    let decimals = if (amount - amount.trunc()).abs() < 0.005 {
        0
    } else {
        2
    };
    with_currency(&decimal(amount.abs(), decimals), amount < 0.0, currency)
}

/// A short money figure: `$1.2M`, `$940K`, `$800`.
pub fn money_short(amount: f64, currency: Option<&str>) -> String {
    let a = amount.abs();
    let (value, suffix) = if a >= 1e9 {
        (a / 1e9, "B")
    } else if a >= 1e6 {
        (a / 1e6, "M")
    } else if a >= 1e4 {
        (a / 1e3, "K")
    } else {
        return money(amount.round(), currency);
    };
    let v = (value * 10.0).round() / 10.0;
    let number = if v.fract() == 0.0 {
        decimal(v, 0)
    } else {
        decimal(v, 1)
    };
    with_currency(&format!("{number}{suffix}"), amount < 0.0, currency)
}

/// `d` before now, in words: `just now`, `5 minutes ago`, `in 3 hours`, `2 days ago`; past
/// 60 days the date itself.
pub fn relative(at: OffsetDateTime, now: OffsetDateTime) -> String {
    let secs = (now - at).whole_seconds();
    let ago = secs >= 0;
    let s = secs.unsigned_abs();
    let (n, unit) = match s {
        0..=44 => return "just now".into(),
        45..=3_599 => (s.div_ceil(60).max(1), "minute"),
        3_600..=86_399 => (s / 3_600, "hour"),
        86_400..=5_183_999 => (s / 86_400, "day"),
        _ => return format!("on {}", date(at)),
    };
    let plural = if n == 1 { "" } else { "s" };
    if ago {
        format!("{n} {unit}{plural} ago")
    } else {
        format!("in {n} {unit}{plural}")
    }
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn date(t: OffsetDateTime) -> String {
    format!(
        "{} {} {}",
        t.day(),
        MONTHS[usize::from(u8::from(t.month())) - 1],
        t.year()
    )
}

/// The absolute time shown on hover: `27 Nov 2026, 02:52 UTC`.
pub fn absolute(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!("{}, {:02}:{:02} UTC", date(t), t.hour(), t.minute())
}

/// A timestamp as the service writes it (RFC 3339) or epoch milliseconds.
pub fn parse_time(text: &str) -> Option<OffsetDateTime> {
    let text = text.trim();
    if let Ok(t) = OffsetDateTime::parse(text, &Rfc3339) {
        return Some(t);
    }
    let ms: i64 = text.parse().ok()?;
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()
}

/// A `<time>` element: relative text (kept current by dashboard.js), the machine-readable
/// instant in `datetime` and the absolute time in `title`.
pub fn time_at(at: OffsetDateTime, now: OffsetDateTime) -> Markup {
    let iso = at
        .to_offset(time::UtcOffset::UTC)
        .format(&Rfc3339)
        .unwrap_or_default();
    html! { time datetime=(iso) title=(absolute(at)) data-relative { (relative(at, now)) } }
}

/// [`time_at`] for a stored timestamp text; text that is no timestamp is shown as it is.
pub fn time(text: &str) -> Markup {
    match parse_time(text) {
        Some(t) => time_at(t, OffsetDateTime::now_utc()),
        None => html! { (text) },
    }
}

/// [`time_at`] for epoch milliseconds.
pub fn time_ms(ms: i64) -> Markup {
    match OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000) {
        Ok(t) => time_at(t, OffsetDateTime::now_utc()),
        Err(_) => html! { (ms) },
    }
}

/// The way to name a person: name, else email, else the id; the id (when something else
/// leads) in a hint after it.
pub fn person(name: Option<&str>, email: Option<&str>, id: &str) -> Markup {
    let name = name.map(str::trim).filter(|n| !n.is_empty());
    let email = email.map(str::trim).filter(|e| !e.is_empty());
    html! {
        @match (name, email) {
            (Some(n), Some(e)) => { (n) " " span.hint { "<" (e) ">" } },
            (Some(n), None) => { (n) " " span.hint { (id) } },
            (None, Some(e)) => { (e) },
            (None, None) => { code { (id) } },
        }
    }
}

/// `text` percent-encoded for a URL's path segment or query value.
pub fn url_part(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A model feature and its value in words, e.g. `last activity 64 days ago`.
pub fn factor(name: &str, value: &Json) -> String {
    let n = value.as_f64();
    let num = |d: usize| {
        n.map(|v| decimal(v, d))
            .unwrap_or_else(|| value.to_string())
    };
    let yes = value.as_bool().unwrap_or(false) || n.is_some_and(|v| v > 0.0);
    let days = |what: &str| match n {
        Some(v) if v < 1.0 => format!("{what} today"),
        Some(v) => format!("{what} {} days ago", decimal(v.round(), 0)),
        None => format!("{what}: unknown"),
    };
    match name {
        "days_since_last_activity" => days("last activity"),
        "days_since_first_seen" => days("first seen"),
        "touchpoints_7d" => format!("{} interactions in the last 7 days", num(0)),
        "touchpoints_30d" => format!("{} interactions in the last 30 days", num(0)),
        "touchpoints_90d" => format!("{} interactions in the last 90 days", num(0)),
        "activity_trend" => match n {
            Some(v) if v > 0.05 => "activity is rising".into(),
            Some(v) if v < -0.05 => "activity is falling".into(),
            _ => "activity is steady".into(),
        },
        "intent_signals_7d" => format!("{} buying signals in the last 7 days", num(0)),
        "intent_signals_90d" => format!("{} buying signals in the last 90 days", num(0)),
        "positive_events_90d" => format!("{} positive events in the last 90 days", num(0)),
        "negative_events_90d" => format!("{} negative events in the last 90 days", num(0)),
        "cancel_signal_90d" if yes => "asked to cancel in the last 90 days".into(),
        "cancel_signal_90d" => "no cancellation request".into(),
        "support_tickets_90d" => format!("{} support tickets in the last 90 days", num(0)),
        "campaign_responses_90d" => format!("{} campaign responses in the last 90 days", num(0)),
        "channels_90d" => format!("active on {} channels in the last 90 days", num(0)),
        "purchased" if yes => "has purchased".into(),
        "purchased" => "has not purchased yet".into(),
        "open_opportunity" if yes => "has an open opportunity".into(),
        "open_opportunity" => "no open opportunity".into(),
        "opportunity_stage" => match value {
            Json::String(s) => format!("opportunity at stage {s}"),
            Json::Null => "no open opportunity stage".into(),
            _ => format!(
                "opportunity {} of the way through the funnel",
                percent(n.unwrap_or(0.0) * 100.0)
            ),
        },
        "opportunity_amount" => match n {
            Some(v) => format!("opportunity worth {}", money(v, None)),
            None => "no opportunity amount".into(),
        },
        other => {
            let words = other.replace('_', " ");
            match value {
                Json::Null => words,
                Json::String(s) => format!("{words}: {s}"),
                _ => format!("{words}: {}", num(2)),
            }
        }
    }
}

/// What a factor's contribution does to a score, in words.
pub fn effect(contribution: f64) -> &'static str {
    if contribution > 0.0 {
        "raises it"
    } else if contribution < 0.0 {
        "lowers it"
    } else {
        "no effect"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use time::macros::datetime;

    #[test]
    fn numbers_get_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(-1_152_000), "-1,152,000");
        assert_eq!(count(10_650), "10,650");
        assert_eq!(url_part("a b&c/é"), "a%20b%26c%2F%C3%A9");
        assert_eq!(decimal(1234.56, 1), "1,234.6");
        assert_eq!(decimal(-0.04, 1), "0.0");
        assert_eq!(decimal(f64::NAN, 1), "–");
        assert_eq!(percent(61.9), "61.9%");
        assert_eq!(percent(62.0), "62%");
        assert_eq!(probability(0.0755), "7.5%");
        assert_eq!(probability(0.946), "95%");
    }

    #[test]
    fn money_names_its_currency() {
        assert_eq!(money(1_152_000.0, None), "$1,152,000");
        assert_eq!(money(12_000.5, Some("eur")), "€12,000.50");
        assert_eq!(money(900.0, Some("CHF")), "CHF 900");
        assert_eq!(money(-5.0, Some("GBP")), "-£5");
        assert_eq!(money_short(1_152_000.0, None), "$1.2M");
        assert_eq!(money_short(940_000.0, None), "$940K");
        assert_eq!(money_short(800.0, None), "$800");
    }

    #[test]
    fn times_read_relative_with_the_absolute_on_hover() {
        let now = datetime!(2026-11-27 12:00 UTC);
        assert_eq!(relative(now, now), "just now");
        assert_eq!(
            relative(datetime!(2026-11-27 11:55 UTC), now),
            "5 minutes ago"
        );
        assert_eq!(
            relative(datetime!(2026-11-27 11:59 UTC), now),
            "1 minute ago"
        );
        assert_eq!(
            relative(datetime!(2026-11-27 10:00 UTC), now),
            "2 hours ago"
        );
        assert_eq!(relative(datetime!(2026-11-27 15:00 UTC), now), "in 3 hours");
        assert_eq!(relative(datetime!(2026-11-20 12:00 UTC), now), "7 days ago");
        assert_eq!(
            relative(datetime!(2026-01-02 12:00 UTC), now),
            "on 2 Jan 2026"
        );
        let t = parse_time("2026-11-27T02:52:03.134Z").expect("rfc3339");
        assert_eq!(absolute(t), "27 Nov 2026, 02:52 UTC");
        assert_eq!(parse_time("1795000000000").map(|t| t.year()), Some(2026));
        assert!(parse_time("yesterday").is_none());
        let html = time_at(t, now).into_string();
        assert!(
            html.contains(r#"datetime="2026-11-27T02:52:03.134Z""#),
            "{html}"
        );
        assert!(html.contains(r#"title="27 Nov 2026, 02:52 UTC""#), "{html}");
        assert!(html.contains(">9 hours ago<"), "{html}");
        assert_eq!(time("not a time").into_string(), "not a time");
    }

    #[test]
    fn people_are_named_before_their_ids() {
        let both = person(Some("Ada Lovelace"), Some("ada@x.io"), "cus_1").into_string();
        assert!(both.starts_with("Ada Lovelace"), "{both}");
        assert!(!both.contains("cus_1"));
        assert_eq!(
            person(None, Some("ada@x.io"), "cus_1").into_string(),
            "ada@x.io"
        );
        assert!(person(None, None, "cus_1").into_string().contains("cus_1"));
    }

    #[test]
    fn factors_are_words() {
        assert_eq!(
            factor("days_since_last_activity", &json!(64.0)),
            "last activity 64 days ago"
        );
        assert_eq!(
            factor("touchpoints_30d", &json!(1200)),
            "1,200 interactions in the last 30 days"
        );
        assert_eq!(factor("purchased", &json!(true)), "has purchased");
        assert_eq!(
            factor("opportunity_amount", &json!(12000)),
            "opportunity worth $12,000"
        );
        assert_eq!(
            factor("some_new_feature", &json!(2)),
            "some new feature: 2.00"
        );
        assert_eq!(effect(2.1), "raises it");
    }
}
