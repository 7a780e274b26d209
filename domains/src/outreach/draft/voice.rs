//! The tone: the brand's voice levels, adjusted per message, and the wording they shape
//! (greetings, sign-offs, contractions, templates).

use crate::brand::Voice;

/// A per-message adjustment of the brand voice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    Formal,
    Casual,
    Warm,
    Direct,
    Enthusiastic,
}

impl Tone {
    pub const ALL: [Tone; 5] = [
        Tone::Formal,
        Tone::Casual,
        Tone::Warm,
        Tone::Direct,
        Tone::Enthusiastic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Tone::Formal => "formal",
            Tone::Casual => "casual",
            Tone::Warm => "warm",
            Tone::Direct => "direct",
            Tone::Enthusiastic => "enthusiastic",
        }
    }

    pub fn parse(s: &str) -> Option<Tone> {
        Tone::ALL
            .into_iter()
            .find(|t| t.as_str() == s.trim().to_ascii_lowercase())
    }

    /// The voice with this tone's offsets applied (each dial stays within 1-5).
    pub fn apply(self, v: &Voice) -> Voice {
        let (f, h, r, e): (i8, i8, i8, i8) = match self {
            Tone::Formal => (2, -2, 1, 0),
            Tone::Casual => (-2, 1, 0, 0),
            Tone::Warm => (0, 1, 1, 1),
            Tone::Direct => (0, -1, -1, 0),
            Tone::Enthusiastic => (0, 0, 0, 2),
        };
        let dial = |base: u8, d: i8| (i16::from(base) + i16::from(d)).clamp(1, 5) as u8;
        Voice {
            formality: dial(v.formality, f),
            humor: dial(v.humor, h),
            respect: dial(v.respect, r),
            energy: dial(v.energy, e),
        }
    }
}

const CONTRACTIONS: &[(&str, &str)] = &[
    ("I'm", "I am"),
    ("I'd", "I would"),
    ("I'll", "I will"),
    ("I've", "I have"),
    ("we'd", "we would"),
    ("we'll", "we will"),
    ("we've", "we have"),
    ("we're", "we are"),
    ("We'd", "We would"),
    ("We'll", "We will"),
    ("We've", "We have"),
    ("you're", "you are"),
    ("you'd", "you would"),
    ("it's", "it is"),
    ("It's", "It is"),
    ("that's", "that is"),
    ("there's", "there is"),
    ("here's", "here is"),
    ("Here's", "Here is"),
    ("didn't", "did not"),
    ("don't", "do not"),
    ("haven't", "have not"),
    ("won't", "will not"),
    ("can't", "cannot"),
    ("isn't", "is not"),
];

/// Fills `{name}` placeholders in one pass (values are never re-scanned, so user data that
/// looks like a placeholder stays as it is).
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}').and_then(|close| {
            let key = &after[..close];
            values
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (close, *v))
        }) {
            Some((close, v)) => {
                out.push_str(v);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Writes sentences in one voice.
pub(super) struct Writer<'a> {
    pub(super) voice: Voice,
    pub(super) business: &'a str,
}

impl Writer<'_> {
    pub(super) fn formal(&self) -> bool {
        self.voice.formality >= 4
    }

    /// A template in this voice: contractions expanded when formal, "like" lifted to "love"
    /// when energetic, then the placeholders filled.
    pub(super) fn say(&self, template: &str, values: &[(&str, &str)]) -> String {
        let mut t = template.to_owned();
        if self.formal() {
            for (short, long) in CONTRACTIONS {
                t = t.replace(short, long);
            }
        }
        if self.voice.energy >= 4 {
            t = t.replace("I'd like to", "I'd love to");
            t = t.replace("I would like to", "I would love to");
        }
        let mut all: Vec<(&str, &str)> = vec![("business", self.business)];
        all.extend_from_slice(values);
        fill(&t, &all)
    }

    /// The end of a call to action: "!" when energetic and not formal.
    pub(super) fn bang(&self, sentence: String) -> String {
        if self.voice.energy >= 4 && self.voice.formality <= 3 && sentence.ends_with('.') {
            format!("{}!", &sentence[..sentence.len() - 1])
        } else {
            sentence
        }
    }

    pub(super) fn greeting(&self, name: Option<&str>) -> String {
        let first = name.and_then(|n| n.split_whitespace().next());
        let excited = self.voice.energy >= 4;
        match (self.voice.formality, first, name) {
            (1, Some(f), _) => format!("Hey {f}{}", if excited { "!" } else { "," }),
            (1, None, _) => format!("Hey there{}", if excited { "!" } else { "," }),
            (2, Some(f), _) => format!("Hi {f}{}", if excited { "!" } else { "," }),
            (2 | 3, None, _) => "Hi there,".to_owned(),
            (3, Some(f), _) => format!("Hi {f},"),
            (4, _, Some(full)) => format!("Hello {full},"),
            (4, _, None) => "Hello,".to_owned(),
            (_, _, Some(full)) => format!("Dear {full},"),
            _ => "Dear customer,".to_owned(),
        }
    }

    fn sign_off(&self) -> &'static str {
        match self.voice.formality {
            1 => "Cheers,",
            2 => "Thanks,",
            3 => "Best,",
            4 => "Kind regards,",
            _ => "Yours sincerely,",
        }
    }

    pub(super) fn signature(&self, has_name: bool) -> String {
        let signer = match (has_name, self.voice.formality >= 5) {
            (true, true) => self.business.to_owned(),
            (true, false) => format!("The {} team", self.business),
            (false, _) => "The team".to_owned(),
        };
        format!("{}\n{signer}", self.sign_off())
    }
}
