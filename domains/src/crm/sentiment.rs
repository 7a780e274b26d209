//! Sentiment of a customer's touchpoints for `context.get` (docs/intelligence.md "Sentiment").
//!
//! Each touchpoint gets at most one dated score in [-1, 1]:
//! - text-bearing touchpoints (support tickets, replies, notes, call summaries: any of
//!   [`TEXT_KEYS`] in the event properties) are scored by VADER (the `vader-sentimental` crate,
//!   a maintained port of Hutto & Gilbert's lexicon- and rule-based model): its `compound`;
//! - an explicit `sentiment` property (a provider's own score: a number, or
//!   `positive`/`negative`/`neutral`) wins over the text;
//! - other touchpoints are scored from their event name (`payment_failed` -1, `meeting_booked`
//!   +1; see `context`), and only when that says something (non-zero).
//!
//! The 30-day direction compares the mean score of the last 15 days with the mean of the 15
//! before (a half without scores counts as neutral, 0): a difference above
//! [`DIRECTION_THRESHOLD`] is `improving`, below its negative `declining`, else `stable`.

use vader_sentimental::SentimentIntensityAnalyzer;

/// Event properties that carry a customer's own words, read in this order.
pub const TEXT_KEYS: &[&str] = &[
    "subject",
    "summary",
    "text",
    "body",
    "message",
    "comment",
    "note",
    "description",
    "content",
    "transcript",
];
/// Longest text scored (characters); the rest is ignored.
pub const MAX_TEXT_CHARS: usize = 5_000;
/// Mean-score difference between the two 15-day halves that makes a direction.
pub const DIRECTION_THRESHOLD: f64 = 0.25;
/// A score at or above this is positive evidence, at or below its negative negative evidence
/// (VADER's own cut is ±0.05; blockers need clearer words than that).
pub const POLARITY: f64 = 0.3;
/// Characters of a text quoted in an evidence item.
pub const EXCERPT_CHARS: usize = 140;

/// Where a score came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Text,
    Explicit,
    Action,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Text => "text",
            Source::Explicit => "explicit",
            Source::Action => "action",
        }
    }
}

/// One dated score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Score {
    pub value: f64,
    pub source: Source,
}

impl Score {
    pub fn is_positive(&self) -> bool {
        self.value >= POLARITY
    }
    pub fn is_negative(&self) -> bool {
        self.value <= -POLARITY
    }
}

/// The VADER compound score of a text, in [-1, 1] (0 for an empty text).
pub fn compound(text: &str) -> f64 {
    let text: String = text.chars().take(MAX_TEXT_CHARS).collect();
    if text.trim().is_empty() {
        return 0.0;
    }
    SentimentIntensityAnalyzer::new()
        .polarity_scores(&text)
        .compound
}

/// The first characters of a text, on one line.
pub fn excerpt(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= EXCERPT_CHARS {
        return one_line;
    }
    let mut out: String = one_line.chars().take(EXCERPT_CHARS - 1).collect();
    out.push('…');
    out
}

/// A touchpoint's score: explicit, else its text's, else its event name's (when non-zero).
pub fn score(explicit: Option<f64>, text: Option<&str>, action_score: i8) -> Option<Score> {
    if let Some(v) = explicit {
        return Some(Score {
            value: v.clamp(-1.0, 1.0),
            source: Source::Explicit,
        });
    }
    if let Some(t) = text {
        return Some(Score {
            value: compound(t),
            source: Source::Text,
        });
    }
    (action_score != 0).then(|| Score {
        value: f64::from(action_score),
        source: Source::Action,
    })
}

/// The 30-day direction of dated scores `(ts, score)` at `now_us`, with the two half means.
pub fn direction(scores: &[(i64, f64)], now_us: i64) -> (&'static str, Option<f64>, Option<f64>) {
    const DAY_US: i64 = super::DAY_US;
    let half = now_us - 15 * DAY_US;
    let start = now_us - 30 * DAY_US;
    let mean = |range: &dyn Fn(i64) -> bool| {
        let v: Vec<f64> = scores
            .iter()
            .filter(|(ts, _)| range(*ts))
            .map(|(_, s)| *s)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let recent = mean(&|ts| ts >= half && ts <= now_us);
    let prior = mean(&|ts| ts >= start && ts < half);
    let delta = recent.unwrap_or(0.0) - prior.unwrap_or(0.0);
    let dir = if delta > DIRECTION_THRESHOLD {
        "improving"
    } else if delta < -DIRECTION_THRESHOLD {
        "declining"
    } else {
        "stable"
    };
    (dir, recent, prior)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vader_reads_words_negations_and_emphasis() {
        assert!(compound("Thanks, the new dashboard is great and support was wonderful!") > 0.5);
        assert!(compound("This is broken again. Terrible, I'm very frustrated.") < -0.5);
        assert!(compound("The export is not good") < 0.0);
        assert!(compound("GREAT!!!") > compound("great"));
        assert_eq!(compound("   "), 0.0);
    }

    #[test]
    fn explicit_beats_text_beats_action() {
        let s = score(Some(-0.8), Some("I love it"), 1).expect("score");
        assert_eq!((s.value, s.source), (-0.8, Source::Explicit));
        let s = score(None, Some("I love it"), -1).expect("score");
        assert_eq!(s.source, Source::Text);
        assert!(s.is_positive());
        assert_eq!(score(None, None, 0), None);
        assert_eq!(
            score(None, None, -1).map(|s| s.source),
            Some(Source::Action)
        );
    }

    #[test]
    fn direction_compares_the_two_halves_of_the_window() {
        let day = super::super::DAY_US;
        let now = 100 * day;
        // Happy a month ago, angry this week.
        let scores = [
            (now - 25 * day, 0.8),
            (now - 20 * day, 0.6),
            (now - 2 * day, -0.7),
        ];
        let (dir, recent, prior) = direction(&scores, now);
        assert_eq!(dir, "declining");
        assert_eq!(recent, Some(-0.7));
        assert!((prior.expect("prior") - 0.7).abs() < 1e-9);
        // Older than the window: ignored.
        assert_eq!(direction(&[(now - 40 * day, -1.0)], now).0, "stable");
        assert_eq!(direction(&[(now - day, 0.9)], now).0, "improving");
    }

    #[test]
    fn excerpts_are_one_short_line() {
        assert_eq!(excerpt("a\n  b"), "a b");
        let long = "x".repeat(500);
        assert_eq!(excerpt(&long).chars().count(), EXCERPT_CHARS);
    }
}
