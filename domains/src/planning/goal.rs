//! Interpreting the goal text: the metric, the target and the horizon it states.

use super::HORIZON_DEFAULT_DAYS;

/// What the goal is measured by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    ReplyRate,
    MeetingBooked,
    PipelineArr,
    Conversion,
    Retention,
}

impl Metric {
    pub const ALL: [Metric; 5] = [
        Metric::ReplyRate,
        Metric::MeetingBooked,
        Metric::PipelineArr,
        Metric::Conversion,
        Metric::Retention,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Metric::ReplyRate => "reply_rate",
            Metric::MeetingBooked => "meeting_booked",
            Metric::PipelineArr => "pipeline_arr",
            Metric::Conversion => "conversion",
            Metric::Retention => "retention",
        }
    }

    pub fn parse(s: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.as_str() == s)
    }

    fn is_rate(self) -> bool {
        matches!(
            self,
            Metric::ReplyRate | Metric::Conversion | Metric::Retention
        )
    }

    /// The metric a goal's words name; conversion when none does.
    pub fn from_goal(goal: &str) -> Metric {
        let g = goal.to_lowercase();
        let any = |ws: &[&str]| ws.iter().any(|w| g.contains(w));
        if any(&[
            "churn",
            "retain",
            "retention",
            "renew",
            "at-risk",
            "at risk",
            "save ",
            "win back",
            "win-back",
        ]) {
            Metric::Retention
        } else if any(&["meeting", "demo", "call booked", "book"]) {
            Metric::MeetingBooked
        } else if any(&["pipeline", "arr", "revenue", "deal", "mrr"]) {
            Metric::PipelineArr
        } else if any(&["reply", "replies", "response", "respond"]) {
            Metric::ReplyRate
        } else {
            Metric::Conversion
        }
    }
}

/// The interpreted goal.
#[derive(Clone, Debug, PartialEq)]
pub struct Interpreted {
    pub metric: Metric,
    /// In the metric's unit (rates as fractions); `None` when neither given nor stated.
    pub target: Option<f64>,
    pub horizon_days: u32,
}

fn unit_days(word: &str) -> Option<u32> {
    let w = word.trim_end_matches(|c: char| !c.is_alphabetic());
    match w {
        "day" | "days" => Some(1),
        "week" | "weeks" => Some(7),
        "month" | "months" => Some(30),
        "quarter" | "quarters" => Some(90),
        "year" | "years" => Some(365),
        _ => None,
    }
}

/// "20%" -> (20, true), "50k" -> (50000, false), "$1.5m" -> (1500000, false).
fn number(token: &str) -> Option<(f64, bool)> {
    let t = token
        .trim_start_matches(['$', '€', '£'])
        .trim_end_matches([',', '.', ';', ':', ')', '!', '?']);
    let (t, percent) = match t.strip_suffix('%') {
        Some(rest) => (rest, true),
        None => (t, false),
    };
    let (t, scale) = match t.to_ascii_lowercase().chars().last() {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        _ => (t, 1.0),
    };
    let v: f64 = t.replace(',', "").parse().ok()?;
    v.is_finite().then_some((v * scale, percent))
}

/// Reads the goal: metric, target and horizon from explicit fields, else from the words
/// ("book 5 meetings in 3 weeks", "reply rate to 20% this quarter").
pub fn interpret(
    goal: &str,
    metric: Option<Metric>,
    target: Option<f64>,
    horizon: Option<u32>,
) -> Interpreted {
    let metric = metric.unwrap_or_else(|| Metric::from_goal(goal));
    let lower = goal.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let mut stated_target = None;
    let mut stated_horizon = None;
    for (i, w) in words.iter().enumerate() {
        let Some((v, percent)) = number(w) else {
            continue;
        };
        match words.get(i + 1).and_then(|n| unit_days(n)) {
            Some(unit) if !percent && stated_horizon.is_none() => {
                stated_horizon = Some((v.max(0.0) * f64::from(unit)).round() as u32);
            }
            _ if stated_target.is_none() => {
                let rate = metric.is_rate() && (percent || v > 1.0);
                stated_target = Some(if rate { v / 100.0 } else { v });
            }
            _ => {}
        }
    }
    if stated_horizon.is_none() {
        stated_horizon = [
            ("this week", 7),
            ("next week", 14),
            ("this month", 30),
            ("next month", 60),
            ("this quarter", 90),
            ("quarter", 90),
            ("this year", 365),
        ]
        .iter()
        .find(|(p, _)| lower.contains(p))
        .map(|(_, d)| *d);
    }
    Interpreted {
        metric,
        target: target.or(stated_target),
        horizon_days: horizon
            .or(stated_horizon)
            .unwrap_or(HORIZON_DEFAULT_DAYS)
            .clamp(1, 365),
    }
}
