//! `draft.outreach`: a subject and body for one customer and an intent, in the brand voice.
//!
//! Deterministic and offline: templates, no model. The rules (also in docs/decisions.md):
//! - The intent is recognised by keywords, first match wins: win-back, renewal, onboarding,
//!   pricing, demo, follow-up; anything else is `generic`, which quotes the intent text.
//! - The four voice dials (brand `voice`, adjusted by the optional `tone`) shape the wording:
//!   formality picks the greeting, the sign-off and whether contractions are used; energy
//!   picks "love" over "like" and exclamation marks; respect adds or drops courtesy lines;
//!   humor from 4 adds one light line that makes no product claim.
//! - `businessName` signs the message; `description` and `audience` frame it where the
//!   customer may not know the business well (generic, demo, win-back); `links.pricing` goes
//!   into pricing and renewal messages, `links.download` into onboarding, and the email footer
//!   carries `privacy` and `terms` (see [`render_email`]).
//! - Facts: the customer's newest own touchpoint of the last 30 days that fits the intent
//!   (for win-back, the last activity at any age), its newest open loop, and the workspace's
//!   active playbook that targets the channel (its hypothesis picks an angle sentence). Only
//!   touchpoints with a customer-facing phrase are referenced; `facts_used` lists each fact
//!   with the exact words the message uses.
//! - Every piece of user data (names, intent text, brand text, URLs) is HTML-escaped in the
//!   HTML version; subjects lose control characters.

use serde_json::{json, Value as Json};
use svc_engine::{Node, Value, WorkspaceTxn};
use time::OffsetDateTime;

use crate::brand::{BrandContext, Voice};
use crate::error::{Error, Result};
use crate::ids;
use crate::playbooks::{self, Playbook};
use crate::scoring::{self, Class, Touch};
use crate::store::RecordScan;

/// Longest intent text accepted.
pub const INTENT_CHARS: usize = 1000;
/// Touchpoints this recent count as "recent" facts.
pub const RECENT_DAYS: i64 = 30;
/// Longest subject (the outreach capabilities' bound).
pub const SUBJECT_CHARS: usize = 200;
/// Intent text quoted by a generic message, at most.
const QUOTED_INTENT_CHARS: usize = 200;
/// Playbooks read to find the active one.
const PLAYBOOKS_READ: usize = 200;

const DAY_US: i64 = 86_400 * 1_000_000;

/// What the message is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    FollowUp,
    Pricing,
    Demo,
    Renewal,
    WinBack,
    Onboarding,
    Generic,
}

impl Intent {
    pub const ALL: [Intent; 7] = [
        Intent::FollowUp,
        Intent::Pricing,
        Intent::Demo,
        Intent::Renewal,
        Intent::WinBack,
        Intent::Onboarding,
        Intent::Generic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Intent::FollowUp => "follow_up",
            Intent::Pricing => "pricing",
            Intent::Demo => "demo",
            Intent::Renewal => "renewal",
            Intent::WinBack => "win_back",
            Intent::Onboarding => "onboarding",
            Intent::Generic => "generic",
        }
    }

    /// The intent a free text names, by keywords; the order settles overlaps ("follow up on
    /// pricing" is about pricing, "renewal pricing" about the renewal).
    pub fn recognise(text: &str) -> Intent {
        let t = text.to_lowercase();
        let any = |words: &[&str]| words.iter().any(|w| t.contains(w));
        if any(&[
            "win back",
            "win-back",
            "winback",
            "re-engage",
            "reengage",
            "reactivat",
            "lapsed",
            "dormant",
            "churn",
            "come back",
            "inactive",
        ]) {
            Intent::WinBack
        } else if any(&["renew", "contract end", "expir"]) {
            Intent::Renewal
        } else if any(&[
            "onboard",
            "trial",
            "getting started",
            "get started",
            "welcome",
            "set up",
            "setup",
            "activat",
            "download",
            "install",
        ]) {
            Intent::Onboarding
        } else if any(&[
            "pricing", "price", "quote", "cost", "plan", "discount", "upgrade",
        ]) {
            Intent::Pricing
        } else if any(&[
            "demo",
            "walkthrough",
            "walk-through",
            "meeting",
            "book a call",
        ]) {
            Intent::Demo
        } else if any(&[
            "follow",
            "check in",
            "checking in",
            "check-in",
            "touch base",
            "recap",
            "nudge",
        ]) {
            Intent::FollowUp
        } else {
            Intent::Generic
        }
    }
}

/// Where the message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    Email,
    Sms,
    Linkedin,
}

impl Channel {
    pub const ALL: [Channel; 3] = [Channel::Email, Channel::Sms, Channel::Linkedin];

    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Email => "email",
            Channel::Sms => "sms",
            Channel::Linkedin => "linkedin",
        }
    }

    pub fn parse(s: &str) -> Option<Channel> {
        Channel::ALL
            .into_iter()
            .find(|c| c.as_str() == s.trim().to_ascii_lowercase())
    }
}

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

/// The email as sent: subject, plain text and HTML, both with the brand footer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderedEmail {
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// HTML text escaping (also safe inside double- and single-quoted attributes).
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A subject fit for a mail header: control characters (CR/LF included) become spaces,
/// whitespace collapses, at most [`SUBJECT_CHARS`] characters.
pub fn clean_subject(s: &str) -> String {
    let spaced: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    spaced
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(SUBJECT_CHARS)
        .collect()
}

fn is_url_start(token: &str) -> bool {
    let lower = token.to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://")
}

/// One line of text as HTML: escaped, with http(s) URLs as links (trailing punctuation stays
/// outside the link).
fn linkify(line: &str) -> String {
    let mut out = String::new();
    for piece in line.split_inclusive(' ') {
        let (token, space) = match piece.strip_suffix(' ') {
            Some(t) => (t, " "),
            None => (piece, ""),
        };
        if is_url_start(token) {
            let url = token.trim_end_matches(['.', ',', ';', ':', '!', '?', ')']);
            let rest = &token[url.len()..];
            let url_html = escape_html(url);
            out.push_str(&format!("<a href=\"{url_html}\">{url_html}</a>"));
            out.push_str(&escape_html(rest));
        } else {
            out.push_str(&escape_html(token));
        }
        out.push_str(space);
    }
    out
}

/// Footer lines shared by both renderings: (label, text, url).
fn footer(brand: &BrandContext) -> Vec<(&'static str, String, Option<String>)> {
    let mut lines = Vec::new();
    let name = brand
        .business_name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty());
    if let Some(n) = name {
        lines.push(("", n.to_owned(), None));
    }
    if let Some(w) = brand
        .website
        .as_deref()
        .map(str::trim)
        .filter(|w| !w.is_empty())
    {
        lines.push(("", w.to_owned(), is_url_start(w).then(|| w.to_owned())));
    }
    if let Some(l) = &brand.links {
        if let Some(p) = &l.privacy {
            lines.push(("Privacy policy", p.clone(), Some(p.clone())));
        }
        if let Some(t) = &l.terms {
            lines.push(("Terms", t.clone(), Some(t.clone())));
        }
    }
    lines
}

/// The email exactly as the outreach capabilities send it, for an agent-written (or drafted)
/// body: the HTML version has the escaped text in paragraphs (blank lines separate them, line
/// breaks stay, URLs become links) and a footer with the business name, website, privacy and
/// terms links; the plain-text version carries the same footer after a `-- ` separator.
pub fn render_email(brand: &BrandContext, subject: &str, body_text: &str) -> RenderedEmail {
    let subject = clean_subject(subject);
    let body = body_text.replace("\r\n", "\n");
    let body = body.trim();
    let foot = footer(brand);

    let mut text = body.to_owned();
    if !foot.is_empty() {
        text.push_str("\n\n-- \n");
        let lines: Vec<String> = foot
            .iter()
            .map(|(label, value, _)| {
                if label.is_empty() {
                    value.clone()
                } else {
                    format!("{label}: {value}")
                }
            })
            .collect();
        text.push_str(&lines.join("\n"));
    }
    text.push('\n');

    let mut html = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
    );
    html.push_str(&format!("<title>{}</title>\n", escape_html(&subject)));
    html.push_str(
        "</head>\n<body style=\"font-family: -apple-system, 'Segoe UI', Helvetica, Arial, \
         sans-serif; font-size: 15px; line-height: 1.5; color: #222222;\">\n",
    );
    for para in body.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
        let lines: Vec<String> = para.lines().map(linkify).collect();
        html.push_str(&format!("<p>{}</p>\n", lines.join("<br>\n")));
    }
    if !foot.is_empty() {
        html.push_str(
            "<hr style=\"border: none; border-top: 1px solid #dddddd; margin: 24px 0 12px;\">\n\
             <p style=\"font-size: 12px; color: #777777;\">",
        );
        let parts: Vec<String> = foot
            .iter()
            .map(|(label, value, url)| {
                let shown = if label.is_empty() {
                    escape_html(value)
                } else {
                    escape_html(label)
                };
                match url {
                    Some(u) => format!("<a href=\"{}\">{shown}</a>", escape_html(u)),
                    None => shown,
                }
            })
            .collect();
        html.push_str(&parts.join(" &middot; "));
        html.push_str("</p>\n");
    }
    html.push_str("</body>\n</html>\n");
    RenderedEmail {
        subject,
        text,
        html,
    }
}

// ---- facts ----

/// A fact the message uses: `text` is the exact wording that appears in the message (for
/// touchpoints) or what shaped it (for a playbook).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Fact {
    kind: &'static str,
    text: String,
    source: String,
}

impl Fact {
    fn to_json(&self) -> Json {
        json!({"kind": self.kind, "text": self.text, "source": self.source})
    }
}

/// What the customer did, as a phrase that follows "you" ("looked at our pricing page");
/// `None` for actions without a customer-facing wording, which are never referenced.
fn touch_phrase(t: &Touch) -> Option<String> {
    let a = t.action.to_ascii_lowercase();
    let page = ["page", "url", "path", "title"]
        .iter()
        .find_map(|k| t.prop_str(k))
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    let has = |w: &str| a.contains(w);
    let phrase = if has("pricing") || (has("page") && page.contains("pricing")) {
        "looked at our pricing page"
    } else if has("demo") && (has("complet") || has("attend")) {
        "joined a demo with us"
    } else if has("demo") {
        "asked for a demo"
    } else if has("trial") && has("start") {
        "started a trial"
    } else if has("signup") || has("sign_up") || has("signed_up") || has("register") {
        "signed up"
    } else if has("quote") {
        "asked for a quote"
    } else if has("contact_sales") {
        "reached out to our sales team"
    } else if has("checkout") || has("cart") {
        "started a checkout"
    } else if has("meeting") && has("book") {
        "booked a meeting with us"
    } else if has("purchase") || has("order_completed") {
        "placed an order"
    } else if has("renew") {
        "renewed your plan"
    } else if has("download") {
        "downloaded our app"
    } else if has("webinar") {
        "joined our webinar"
    } else if has("ticket") || has("support") {
        "contacted our support team"
    } else if has("repl") {
        "replied to our email"
    } else if has("click") {
        "clicked through one of our emails"
    } else if has("email_opened") {
        "opened one of our emails"
    } else if has("page") || has("visit") {
        "visited our website"
    } else if has("activated") {
        "got set up"
    } else {
        return None;
    };
    Some(phrase.to_owned())
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// "Nov 20" (or "November 20" when formal), with the year when it is not `now`'s.
fn day_phrase(us: i64, now: OffsetDateTime, formal: bool) -> String {
    let Ok(t) = OffsetDateTime::from_unix_timestamp_nanos(i128::from(us) * 1000) else {
        return "recently".to_owned();
    };
    let month = MONTHS[usize::from(u8::from(t.month())) - 1];
    let month = if formal { month } else { &month[..3] };
    if t.year() == now.year() {
        format!("{month} {}", t.day())
    } else {
        format!("{month} {}, {}", t.day(), t.year())
    }
}

/// Which actions fit an intent best, checked before any other recent touchpoint.
fn fits(intent: Intent, t: &Touch) -> bool {
    let a = t.action.to_ascii_lowercase();
    let any = |ws: &[&str]| ws.iter().any(|w| a.contains(w));
    match intent {
        Intent::Pricing => any(&["pricing", "quote", "checkout", "cart", "upgrade"]),
        Intent::Demo => any(&["demo", "meeting", "contact_sales", "webinar"]),
        Intent::Onboarding => any(&["signup", "sign_up", "trial", "download", "activat"]),
        Intent::Renewal => scoring::is_purchase(&t.action),
        Intent::FollowUp | Intent::Generic | Intent::WinBack => {
            scoring::classify(&t.action) == Class::Intent
        }
    }
}

/// The customer's own touchpoints that have a phrase, newest first.
fn phrased(tps: &[Touch], now_us: i64) -> Vec<(&Touch, String, i64)> {
    let mut out: Vec<(&Touch, String, i64)> = tps
        .iter()
        .filter(|t| scoring::classify(&t.action) != Class::Outbound)
        .filter_map(|t| {
            let ts = t.ts.filter(|ts| *ts <= now_us)?;
            Some((t, touch_phrase(t)?, ts))
        })
        .collect();
    out.reverse();
    out
}

/// The active playbook that targets this kind of work: active, and either naming the
/// channel among its channels or naming no channel it could mean; the best match on the
/// intent's words (and outbound over inbound), then the newest.
pub fn active_playbook(
    w: &WorkspaceTxn<'_, '_>,
    intent: Option<Intent>,
    channel: Option<Channel>,
) -> Result<Option<Playbook>> {
    let scan = RecordScan {
        limit: Some(PLAYBOOKS_READ),
        ..RecordScan::default()
    };
    let mut best: Option<(i32, Playbook)> = None;
    for pb in w.scan_records::<Playbook>(&scan)? {
        if pb.status != playbooks::Status::Active {
            continue;
        }
        let channels: Vec<Channel> = pb
            .strategy
            .channels
            .iter()
            .filter_map(|c| Channel::parse(c))
            .collect();
        let fits_channel = match channel {
            Some(c) => channels.is_empty() || channels.contains(&c),
            None => true,
        };
        if !fits_channel {
            continue;
        }
        let text = format!("{} {}", pb.name, pb.strategy.hypothesis);
        let mut score = 0;
        if Some(Intent::recognise(&text)) == intent {
            score += 2;
        }
        if pb.mode != playbooks::Mode::Inbound {
            score += 1;
        }
        // Later (newer) playbooks win ties: scan order is creation order.
        if best.as_ref().is_none_or(|(s, _)| score >= *s) {
            best = Some((score, pb));
        }
    }
    Ok(best.map(|(_, pb)| pb))
}

/// The angle a playbook hypothesis asks for, as a sentence template (`{business}` filled).
fn angle(hypothesis: &str) -> Option<&'static str> {
    let h = hypothesis.to_lowercase();
    let any = |ws: &[&str]| ws.iter().any(|w| h.contains(w));
    if any(&[
        "cost",
        "roi",
        "save money",
        "saving",
        "budget",
        "spend",
        "price",
    ]) {
        Some("If keeping costs predictable matters to you, I'd be glad to show where {business} helps.")
    } else if any(&["time", "speed", "fast", "productiv", "hours", "efficien"]) {
        Some("If saving your team time is a priority, I'd be glad to show where {business} helps.")
    } else if any(&[
        "security",
        "compliance",
        "privacy",
        "risk",
        "gdpr",
        "soc 2",
        "soc2",
    ]) {
        Some("If security and compliance are on your list, I'm happy to share how {business} handles them.")
    } else if any(&["growth", "revenue", "pipeline", "sales", "conversion"]) {
        Some("If growing revenue is the focus right now, I'd be glad to show where {business} fits in.")
    } else {
        None
    }
}

// ---- wording ----

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
struct Writer<'a> {
    voice: Voice,
    business: &'a str,
}

impl Writer<'_> {
    fn formal(&self) -> bool {
        self.voice.formality >= 4
    }

    /// A template in this voice: contractions expanded when formal, "like" lifted to "love"
    /// when energetic, then the placeholders filled.
    fn say(&self, template: &str, values: &[(&str, &str)]) -> String {
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
    fn bang(&self, sentence: String) -> String {
        if self.voice.energy >= 4 && self.voice.formality <= 3 && sentence.ends_with('.') {
            format!("{}!", &sentence[..sentence.len() - 1])
        } else {
            sentence
        }
    }

    fn greeting(&self, name: Option<&str>) -> String {
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

    fn signature(&self, has_name: bool) -> String {
        let signer = match (has_name, self.voice.formality >= 5) {
            (true, true) => self.business.to_owned(),
            (true, false) => format!("The {} team", self.business),
            (false, _) => "The team".to_owned(),
        };
        format!("{}\n{signer}", self.sign_off())
    }
}

/// The customer's display name, when known (never an email or id).
fn customer_name(customer: &Node) -> Option<String> {
    ["name", "fullName", "full_name"]
        .iter()
        .find_map(|k| match customer.get(k) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
            _ => None,
        })
        .or_else(|| {
            let part = |k: &str| match customer.get(k) {
                Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
                _ => None,
            };
            match (part("firstName"), part("lastName")) {
                (Some(f), Some(l)) => Some(format!("{f} {l}")),
                (Some(f), None) => Some(f),
                _ => None,
            }
        })
}

/// The first sentence of a brand text, without its final period, when short enough to quote.
fn first_sentence(text: Option<&str>, max: usize) -> Option<String> {
    let t = text?.trim();
    let end = t
        .char_indices()
        .find(|(i, c)| matches!(c, '.' | '!' | '?') && t[i + 1..].starts_with([' ', '\n']))
        .map_or(t.len(), |(i, _)| i);
    let s = t[..end].trim().trim_end_matches(['.', '!', '?']).trim();
    (!s.is_empty() && s.chars().count() <= max).then(|| s.to_owned())
}

fn str_field<'v>(input: &'v Json, name: &str) -> Option<&'v str> {
    input.get(name).and_then(Json::as_str)
}

/// The parsed input.
struct Request {
    intent_text: String,
    intent: Intent,
    channel: Option<Channel>,
    tone: Option<Tone>,
}

fn parse(input: &Json) -> Result<Request> {
    let intent_text = str_field(input, "intent")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Error::invalid_field("intent", "", "required (a non-empty string)"))?;
    if intent_text.chars().count() > INTENT_CHARS {
        return Err(Error::invalid_input(format!(
            "intent: at most {INTENT_CHARS} characters"
        )));
    }
    let channel = match input.get("channel") {
        None | Some(Json::Null) => None,
        Some(v) => Some(v.as_str().and_then(Channel::parse).ok_or_else(|| {
            Error::invalid_field("channel", &v.to_string(), "one of email, sms, linkedin")
        })?),
    };
    let tone = match input.get("tone") {
        None | Some(Json::Null) => None,
        Some(v) => Some(v.as_str().and_then(Tone::parse).ok_or_else(|| {
            Error::invalid_field(
                "tone",
                &v.to_string(),
                "one of formal, casual, warm, direct, enthusiastic",
            )
        })?),
    };
    Ok(Request {
        intent_text: intent_text.to_owned(),
        intent: Intent::recognise(intent_text),
        channel,
        tone,
    })
}

fn micros_of(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX)
}

/// `draft.outreach`: a message for `customer` (already resolved from `input.customer`) and the
/// input's intent, in the brand voice, from what the service knows. Reads only.
pub fn draft(
    w: &WorkspaceTxn<'_, '_>,
    brand: &BrandContext,
    customer: &Node,
    input: &Json,
    now: OffsetDateTime,
) -> Result<Json> {
    let req = parse(input)?;
    let hood = scoring::neighbourhood(w, customer)?;
    let playbook = active_playbook(w, Some(req.intent), req.channel)?;
    let channel = req
        .channel
        .or_else(|| {
            playbook
                .as_ref()
                .and_then(|pb| pb.strategy.channels.iter().find_map(|c| Channel::parse(c)))
        })
        .unwrap_or(Channel::Email);
    let channel_from_playbook = req.channel.is_none() && channel != Channel::Email;

    let base_voice = brand.voice.clone().unwrap_or_default();
    let voice = req
        .tone
        .map_or(base_voice.clone(), |t| t.apply(&base_voice));
    let business = brand
        .business_name
        .as_deref()
        .map(str::trim)
        .filter(|b| !b.is_empty());
    let wr = Writer {
        voice: voice.clone(),
        business: business.unwrap_or("our product"),
    };
    let name = customer_name(customer);
    let now_us = micros_of(now);
    let links = brand.links.clone().unwrap_or_default();
    let mut facts: Vec<Fact> = Vec::new();
    let mut links_used: Vec<Json> = Vec::new();
    let mut use_link = |kind: &str, url: &str| {
        if !links_used.iter().any(|l| l["kind"] == kind) {
            links_used.push(json!({"kind": kind, "url": url}));
        }
    };

    // The facts: one touchpoint that fits the intent, and one open loop.
    let mine = phrased(&hood.touchpoints, now_us);
    let recent = |ts: i64| now_us.saturating_sub(ts) < RECENT_DAYS * DAY_US;
    let primary = if req.intent == Intent::WinBack {
        mine.first()
    } else {
        mine.iter()
            .filter(|(_, _, ts)| recent(*ts))
            .find(|(t, _, _)| fits(req.intent, t))
            .or_else(|| mine.iter().find(|(_, _, ts)| recent(*ts)))
    };
    let said =
        |phrase: &str, ts: i64| format!("you {phrase} on {}", day_phrase(ts, now, wr.formal()));
    let mut context: Vec<String> = Vec::new();
    if let Some((t, phrase, ts)) = primary {
        let words = said(phrase, *ts);
        let sentence = match (req.intent, channel) {
            (Intent::WinBack, _) => wr.say("It's been a while since {fact}.", &[("fact", &words)]),
            (_, Channel::Sms) => wr.say("I saw {fact}.", &[("fact", &words)]),
            _ if wr.formal() => wr.say("I noticed that {fact}.", &[("fact", &words)]),
            _ => wr.say("I saw {fact}.", &[("fact", &words)]),
        };
        context.push(sentence);
        let kind = if scoring::classify(&t.action) == Class::Intent {
            "intent_signal"
        } else {
            "recent_touchpoint"
        };
        facts.push(Fact {
            kind,
            text: words,
            source: t.wire_id(),
        });
    } else if req.intent == Intent::WinBack {
        context.push(wr.say("It's been a while since we last heard from you.", &[]));
    }
    let primary_id = primary.map(|(t, _, _)| t.id);
    if channel != Channel::Sms {
        let loop_touch = scoring::open_loops(&hood.touchpoints)
            .into_iter()
            .filter(|t| Some(t.id) != primary_id)
            .find_map(|t| Some((t, touch_phrase(t)?, t.ts?)));
        if let Some((t, phrase, ts)) = loop_touch {
            let words = said(&phrase, ts);
            context.push(wr.say(
                "I also noticed {fact}, and I want to make sure that's taken care of.",
                &[("fact", &words)],
            ));
            facts.push(Fact {
                kind: "open_loop",
                text: words,
                source: t.wire_id(),
            });
        }
    }

    // Framing for readers who may not know the business well.
    let mut framing: Vec<String> = Vec::new();
    let frames = matches!(req.intent, Intent::Generic | Intent::Demo | Intent::WinBack);
    if frames && channel != Channel::Sms {
        if let Some(d) = first_sentence(brand.description.as_deref(), 300) {
            framing.push(wr.say("A quick reminder of what we do: {d}.", &[("d", &d)]));
        }
        if let (Some(b), Some(a)) = (business, first_sentence(brand.audience.as_deref(), 200)) {
            let a = lower_first(&a);
            framing.push(wr.say("We built {b} for {a}.", &[("b", b), ("a", &a)]));
        }
    }

    // The core of the message and its call to action.
    let mut core: Vec<String> = Vec::new();
    let respectful = voice.respect >= 4;
    let blunt = voice.respect <= 2;
    let sms = channel == Channel::Sms;
    match req.intent {
        Intent::Pricing => {
            match &links.pricing {
                Some(url) => {
                    core.push(wr.say("You can compare every plan at {url}.", &[("url", url)]));
                    use_link("pricing", url);
                }
                None => {
                    core.push(wr.say("I'm happy to send over pricing that fits your team.", &[]))
                }
            }
            core.push(wr.bang(if sms {
                wr.say("Reply here with any questions.", &[])
            } else if respectful {
                wr.say("If it would help, I'd like to walk you through which plan fits best, whenever it suits you.", &[])
            } else if blunt {
                wr.say("Reply and I'll tell you which plan fits.", &[])
            } else {
                wr.say("If you have questions about which plan fits, just reply to this message.", &[])
            }));
        }
        Intent::Demo => {
            if !sms {
                core.push(wr.say("I'd like to show you how {business} works in a short demo tailored to your team.", &[]));
            }
            core.push(wr.bang(if respectful {
                wr.say("If a short demonstration would be useful, please let me know a time that is convenient for you.", &[])
            } else if blunt || sms {
                wr.say("Reply with a time for a 20-minute demo.", &[])
            } else {
                wr.say("Would a 20-minute call this week work? Reply with a time that suits you.", &[])
            }));
        }
        Intent::Renewal => {
            core.push(wr.say("Your renewal is coming up, and I'd like to make sure your plan still fits how you use {business}.", &[]));
            if let Some(url) = &links.pricing {
                core.push(wr.say("Current plans are at {url}.", &[("url", url)]));
                use_link("pricing", url);
            }
            core.push(wr.bang(if respectful {
                wr.say(
                    "Would you be open to reviewing your plan together before it renews?",
                    &[],
                )
            } else {
                wr.say("Want to review your plan together before it renews?", &[])
            }));
        }
        Intent::WinBack => {
            if !sms {
                core.push(wr.say(
                    "If something didn't work for you, I'd really like to hear what it was.",
                    &[],
                ));
            }
            core.push(wr.bang(wr.say("If you'd like to take another look, just reply and I'll help you get set up again.", &[])));
        }
        Intent::Onboarding => {
            core.push(if wr.formal() {
                wr.say("Thank you for getting started with {business}.", &[])
            } else {
                wr.say(
                    "Welcome aboard, and thanks for getting started with {business}.",
                    &[],
                )
            });
            if let Some(url) = &links.download {
                core.push(wr.say("Here's where to download it: {url}.", &[("url", url)]));
                use_link("download", url);
            }
            core.push(wr.bang(wr.say(
                "If you get stuck, reply to this message and we'll help you get going.",
                &[],
            )));
        }
        Intent::FollowUp => {
            core.push(wr.say(
                "I wanted to follow up and see whether you have any questions.",
                &[],
            ));
            core.push(wr.bang(if respectful {
                wr.say("Whenever it suits you, just reply; I'm happy to help.", &[])
            } else {
                wr.say("Just reply; I'm happy to help.", &[])
            }));
        }
        Intent::Generic => {
            let limit = if sms { 100 } else { QUOTED_INTENT_CHARS };
            let about: String = req.intent_text.chars().take(limit).collect();
            let about = about.trim_end_matches(['.', '!', '?']);
            core.push(wr.say("I'm getting in touch about: {about}.", &[("about", about)]));
            core.push(wr.bang(wr.say("Let me know if you'd like to talk.", &[])));
        }
    }

    // The active playbook's angle, when its hypothesis names one.
    if let Some(pb) = &playbook {
        let angle_line = (!sms)
            .then(|| angle(&pb.strategy.hypothesis))
            .flatten()
            .map(|t| wr.say(t, &[]));
        if angle_line.is_some() || channel_from_playbook {
            let hypothesis: String = pb.strategy.hypothesis.chars().take(200).collect();
            let how = match (&angle_line, channel_from_playbook) {
                (Some(_), true) => "angle and channel",
                (Some(_), false) => "angle",
                _ => "channel",
            };
            facts.push(Fact {
                kind: "playbook",
                text: format!("{} ({how}): {hypothesis}", pb.name),
                source: pb.id.clone(),
            });
        }
        if let Some(line) = angle_line {
            core.insert(core.len().saturating_sub(1), line);
        }
    }

    let humor = (voice.humor >= 4 && !sms).then(|| {
        wr.say(
            match req.intent {
                Intent::Pricing => "Spreadsheets optional.",
                Intent::Demo => "I promise it'll be more fun than another status meeting.",
                Intent::Renewal => "Think of it as a quick tune-up.",
                Intent::WinBack => "We kept the lights on for you.",
                Intent::Onboarding => "The first step is the hardest one; it's downhill from here.",
                Intent::FollowUp | Intent::Generic => "I'll keep this shorter than a coffee break.",
            },
            &[],
        )
    });
    let courtesy = (respectful && !sms).then(|| wr.say("Thank you for your time.", &[]));

    let greeting = wr.greeting(name.as_deref());
    let signature = if sms {
        format!("- {}", business.unwrap_or("The team"))
    } else {
        wr.signature(business.is_some())
    };
    if sms {
        let mut parts = vec![greeting];
        parts.extend(context);
        parts.extend(core);
        parts.push(signature.clone());
        parts.push("Reply STOP to opt out.".to_owned());
        let body_text = parts.join(" ");
        return Ok(output(
            customer, &req, channel, None, body_text, None, &voice, &facts, links_used, &signature,
        ));
    }
    let mut paragraphs = vec![greeting];
    for group in [context, framing, core] {
        if !group.is_empty() {
            paragraphs.push(group.join(" "));
        }
    }
    if let Some(h) = humor {
        paragraphs.push(h);
    }
    if let Some(c) = courtesy {
        paragraphs.push(c);
    }
    paragraphs.push(signature.clone());
    let body_text = paragraphs.join("\n\n");

    if channel == Channel::Linkedin {
        return Ok(output(
            customer, &req, channel, None, body_text, None, &voice, &facts, links_used, &signature,
        ));
    }
    let subject = subject_line(&wr, req.intent, business);
    let rendered = render_email(brand, &subject, &body_text);
    if let Some(l) = &brand.links {
        if let Some(p) = &l.privacy {
            use_link("privacy", p);
        }
        if let Some(t) = &l.terms {
            use_link("terms", t);
        }
    }
    Ok(output(
        customer,
        &req,
        channel,
        Some(rendered.subject),
        body_text,
        Some(rendered.html),
        &voice,
        &facts,
        links_used,
        &signature,
    ))
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match (chars.next(), chars.clone().next()) {
        // "Growth teams" -> "growth teams", but "SaaS founders" and "CFOs" keep their case.
        (Some(c), Some(n)) if c.is_uppercase() && n.is_lowercase() => {
            c.to_lowercase().chain(chars).collect()
        }
        _ => s.to_owned(),
    }
}

fn subject_line(wr: &Writer<'_>, intent: Intent, business: Option<&str>) -> String {
    let named = business.is_some();
    let s = match intent {
        Intent::Pricing if named => wr.say("Pricing for {business}", &[]),
        Intent::Pricing => wr.say("Your pricing questions", &[]),
        Intent::Demo if named => wr.say("A short demo of {business}", &[]),
        Intent::Demo => wr.say("A short demo", &[]),
        Intent::Renewal if named => wr.say("Your {business} renewal", &[]),
        Intent::Renewal => wr.say("Your upcoming renewal", &[]),
        Intent::WinBack if wr.formal() => wr.say("It has been a while", &[]),
        Intent::WinBack => wr.say("We'd love to have you back", &[]),
        Intent::Onboarding if named => wr.say("Getting started with {business}", &[]),
        Intent::Onboarding => wr.say("Getting started", &[]),
        Intent::FollowUp if named => wr.say("Following up from {business}", &[]),
        Intent::FollowUp => wr.say("Following up", &[]),
        Intent::Generic if named => wr.say("A note from {business}", &[]),
        Intent::Generic => wr.say("A quick note", &[]),
    };
    if wr.voice.energy >= 5 && wr.voice.formality <= 2 {
        format!("{s}!")
    } else {
        s
    }
}

#[allow(clippy::too_many_arguments)]
fn output(
    customer: &Node,
    req: &Request,
    channel: Channel,
    subject: Option<String>,
    body_text: String,
    body_html: Option<String>,
    voice: &Voice,
    facts: &[Fact],
    links_used: Vec<Json>,
    signature: &str,
) -> Json {
    json!({
        "customer_id": ids::customer_id(customer.id),
        "intent": req.intent.as_str(),
        "channel": channel.as_str(),
        "subject": subject,
        "body_text": body_text,
        "body_html": body_html,
        "voice": {"formality": voice.formality, "humor": voice.humor,
                  "respect": voice.respect, "energy": voice.energy},
        "facts_used": facts.iter().map(Fact::to_json).collect::<Vec<_>>(),
        "links_used": links_used,
        "signature": signature,
    })
}

// ---- contract ----

pub fn input_schema() -> Json {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "customer": {
                "type": "string", "minLength": 1, "maxLength": 320,
                "description": "Customer id (cus_...), email, phone or external id."
            },
            "intent": {
                "type": "string", "minLength": 1, "maxLength": INTENT_CHARS,
                "description": "What the message is for, in words. Recognised: follow-up, \
                                pricing, demo, renewal, win-back, onboarding; anything else \
                                is a generic message about the text."
            },
            "channel": {"enum": ["email", "sms", "linkedin"], "default": "email",
                "description": "Default: the active playbook's channel, else email."},
            "tone": {"enum": ["formal", "casual", "warm", "direct", "enthusiastic"],
                "description": "Adjusts the brand voice for this message."}
        },
        "required": ["customer", "intent"],
        "additionalProperties": false,
    })
}

pub fn output_schema() -> Json {
    let dial = json!({"type": "integer", "minimum": 1, "maximum": 5});
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "customer_id": {"type": "string", "pattern": "^cus_"},
            "intent": {"enum": Intent::ALL.iter().map(|i| i.as_str()).collect::<Vec<_>>()},
            "channel": {"enum": ["email", "sms", "linkedin"]},
            "subject": {"type": ["string", "null"], "maxLength": SUBJECT_CHARS,
                "description": "Email only; null for sms and linkedin."},
            "body_text": {"type": "string", "minLength": 1,
                "description": "The message body (pass it to queue.outreach as `body`); the \
                                email footer is added when the email is rendered."},
            "body_html": {"type": ["string", "null"],
                "description": "Email only: the HTML email as it would be sent, footer \
                                included."},
            "voice": {
                "type": "object",
                "properties": {"formality": dial, "humor": dial, "respect": dial, "energy": dial},
                "required": ["formality", "humor", "respect", "energy"]
            },
            "facts_used": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"enum": ["recent_touchpoint", "intent_signal", "open_loop", "playbook"]},
                        "text": {"type": "string"},
                        "source": {"type": "string",
                            "description": "tp_... for a touchpoint, pb_... for a playbook."}
                    },
                    "required": ["kind", "text", "source"]
                }
            },
            "links_used": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"enum": ["pricing", "download", "privacy", "terms"]},
                        "url": {"type": "string"}
                    },
                    "required": ["kind", "url"]
                }
            },
            "signature": {"type": "string"}
        },
        "required": ["customer_id", "intent", "channel", "subject", "body_text", "body_html",
                     "voice", "facts_used", "links_used", "signature"],
    })
}

/// An invocation example (input, output); it validates against the schemas.
pub fn example() -> (Json, Json) {
    let body = "Hi Ada,\n\nI saw you looked at our pricing page on Nov 20.\n\nYou can compare \
                every plan at https://acme.io/pricing. If you have questions about which plan \
                fits, just reply to this message.\n\nBest,\nThe Acme team";
    let brand = BrandContext {
        business_name: Some("Acme".into()),
        links: Some(crate::brand::Links {
            privacy: Some("https://acme.io/privacy".into()),
            pricing: Some("https://acme.io/pricing".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let rendered = render_email(&brand, "Pricing for Acme", body);
    (
        json!({"customer": "ada@example.com", "intent": "follow up on pricing",
               "channel": "email"}),
        json!({
            "customer_id": "cus_42",
            "intent": "pricing",
            "channel": "email",
            "subject": rendered.subject,
            "body_text": body,
            "body_html": rendered.html,
            "voice": {"formality": 3, "humor": 3, "respect": 3, "energy": 3},
            "facts_used": [{"kind": "intent_signal",
                            "text": "you looked at our pricing page on Nov 20",
                            "source": "tp_97"}],
            "links_used": [{"kind": "pricing", "url": "https://acme.io/pricing"},
                           {"kind": "privacy", "url": "https://acme.io/privacy"}],
            "signature": "Best,\nThe Acme team"
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brand;
    use crate::scoring::tests::{now, open_graph, track, two_customers, with_customer, WS};
    use svc_engine::Graph;

    fn acme(voice: Json) -> BrandContext {
        let mut ctx = BrandContext::default();
        brand::merge(
            &mut ctx,
            &json!({
                "businessName": "Acme",
                "description": "Acme schedules field crews. It also does invoicing.",
                "audience": "Operations leads at trade businesses",
                "voice": voice,
                "links": {"pricing": "https://acme.io/pricing", "download": "https://acme.io/get",
                          "privacy": "https://acme.io/privacy", "terms": "https://acme.io/terms"}
            }),
            "2026-01-01T00:00:00.000Z",
        )
        .expect("brand");
        ctx
    }

    fn drafted(graph: &Graph, email: &str, brand: BrandContext, input: Json) -> Json {
        with_customer(graph, email, move |w, c| draft(w, &brand, c, &input, now()))
    }

    fn validates(schema: &Json, instance: &Json) {
        let v = jsonschema::draft202012::new(schema).expect("schema compiles");
        let errors: Vec<String> = v.iter_errors(instance).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?} in {instance}");
    }

    fn body(out: &Json) -> &str {
        out["body_text"].as_str().expect("body")
    }

    #[test]
    fn intents_are_recognised_by_keywords() {
        let cases = [
            ("Follow up on their pricing questions", Intent::Pricing),
            ("win back lapsed users", Intent::WinBack),
            ("renewal pricing for next year", Intent::Renewal),
            ("book a demo", Intent::Demo),
            ("help them get started with the trial", Intent::Onboarding),
            ("just checking in", Intent::FollowUp),
            ("invite to our user conference", Intent::Generic),
        ];
        for (text, want) in cases {
            assert_eq!(Intent::recognise(text), want, "{text}");
        }
    }

    #[test]
    fn the_draft_mentions_every_customer_fact_it_lists() {
        let (_dir, graph) = open_graph();
        two_customers(&graph);
        track(&graph, "hot@x.io", "ticket_opened", 3.0, json!({}));
        let out = drafted(
            &graph,
            "hot@x.io",
            acme(json!({})),
            json!({"customer": "hot@x.io", "intent": "pricing follow-up"}),
        );
        let facts = out["facts_used"].as_array().expect("facts");
        assert!(facts.len() >= 2, "{out}");
        for f in facts {
            let text = f["text"].as_str().expect("text");
            assert!(body(&out).contains(text), "{text:?} not in {}", body(&out));
            assert!(f["source"].as_str().is_some_and(|s| s.starts_with("tp_")));
        }
        assert_eq!(facts[0]["kind"], "intent_signal");
        assert!(
            body(&out).contains("looked at our pricing page on Nov 20"),
            "{out}"
        );
        assert_eq!(facts[1]["kind"], "open_loop");
        assert!(body(&out).contains("asked for a demo on Nov 23"));
        assert!(body(&out).contains("https://acme.io/pricing"));
        let kinds: Vec<&str> = out["links_used"]
            .as_array()
            .expect("links")
            .iter()
            .filter_map(|l| l["kind"].as_str())
            .collect();
        assert_eq!(kinds, vec!["pricing", "privacy", "terms"]);
        let html = out["body_html"].as_str().expect("html");
        assert!(html.contains("<a href=\"https://acme.io/privacy\">Privacy policy</a>"));
        assert!(out["signature"]
            .as_str()
            .expect("sig")
            .ends_with("The Acme team"));
        validates(&output_schema(), &out);
    }

    #[test]
    fn voice_levels_change_the_wording() {
        let (_dir, graph) = open_graph();
        track(
            &graph,
            "ada@x.io",
            "identify",
            10.0,
            json!({"traits": {"name": "Ada Lovelace"}}),
        );
        track(&graph, "ada@x.io", "demo_requested", 2.0, json!({}));
        let input = json!({"customer": "ada@x.io", "intent": "book a demo"});
        let casual = drafted(
            &graph,
            "ada@x.io",
            acme(json!({"formality": 1, "humor": 5, "energy": 5, "respect": 2})),
            input.clone(),
        );
        let formal = drafted(
            &graph,
            "ada@x.io",
            acme(json!({"formality": 5, "humor": 1, "energy": 2, "respect": 5})),
            input,
        );
        let (c, f) = (body(&casual), body(&formal));
        assert!(c.starts_with("Hey Ada!"), "{c}");
        assert!(f.starts_with("Dear Ada Lovelace,"), "{f}");
        assert!(c.contains("Cheers,") && f.contains("Yours sincerely,"));
        assert!(
            c.contains("I'd love to") && c.contains("status meeting"),
            "{c}"
        );
        assert!(
            !f.contains("I'd") && !f.contains("I'm") && !f.contains('!'),
            "{f}"
        );
        assert!(f.contains("Thank you for your time."));
        assert!(
            f.contains("I noticed that you asked for a demo on November 23"),
            "{f}"
        );
        assert_eq!(casual["voice"]["formality"], 1);
        assert_eq!(formal["voice"]["formality"], 5);
        // A tone shifts the brand voice for one message.
        let toned = drafted(
            &graph,
            "ada@x.io",
            acme(json!({"formality": 2})),
            json!({"customer": "ada@x.io", "intent": "demo", "tone": "formal"}),
        );
        assert_eq!(toned["voice"]["formality"], 4);
        assert!(body(&toned).starts_with("Hello Ada Lovelace,"));
    }

    #[test]
    fn html_escapes_user_data() {
        let (_dir, graph) = open_graph();
        track(
            &graph,
            "x@x.io",
            "identify",
            1.0,
            json!({"traits": {"name": "<script>alert(1)</script> Eve"}}),
        );
        let mut brand = acme(json!({"formality": 5}));
        brand.business_name = Some("Acme & \"Sons\" <b>".into());
        let out = drafted(
            &graph,
            "x@x.io",
            brand,
            json!({"customer": "x@x.io", "intent": "<img src=x onerror=alert(1)>"}),
        );
        let html = out["body_html"].as_str().expect("html");
        assert!(!html.contains("<script>") && !html.contains("<img") && !html.contains("<b>"));
        assert!(
            html.contains("Dear &lt;script&gt;alert(1)&lt;/script&gt; Eve,"),
            "{html}"
        );
        assert!(html.contains("Acme &amp; &quot;Sons&quot; &lt;b&gt;"));
        assert!(
            body(&out).contains("<script>"),
            "plain text keeps the name as is"
        );
        validates(&output_schema(), &out);
    }

    #[test]
    fn sms_and_linkedin_have_no_subject_or_html_and_validate() {
        let (_dir, graph) = open_graph();
        two_customers(&graph);
        for channel in ["sms", "linkedin"] {
            let out = drafted(
                &graph,
                "hot@x.io",
                acme(json!({})),
                json!({"customer": "hot@x.io", "intent": "pricing", "channel": channel}),
            );
            assert_eq!(out["subject"], Json::Null);
            assert_eq!(out["body_html"], Json::Null);
            assert_eq!(out["channel"], channel);
            validates(&output_schema(), &out);
            if channel == "sms" {
                assert!(body(&out).ends_with("Reply STOP to opt out."));
                assert!(body(&out).chars().count() <= 320, "{}", body(&out));
            }
        }
        let (input, output) = example();
        validates(&input_schema(), &input);
        validates(&output_schema(), &output);
        let v = jsonschema::draft202012::new(&input_schema()).expect("schema");
        assert!(!v.is_valid(&json!({"customer": "c", "intent": "x", "extra": true})));
        assert!(!v.is_valid(&json!({"customer": "c", "intent": "x", "channel": "fax"})));
    }

    #[test]
    fn the_active_playbook_shapes_channel_and_angle() {
        let (_dir, graph) = open_graph();
        two_customers(&graph);
        let mut pb = playbooks::build(
            &json!({"name": "Cost play", "mode": "outbound", "buddyId": "prospect",
                    "status": "active",
                    "strategy": {"hypothesis": "Ops leads reply to cost savings",
                                 "channels": ["linkedin"]}}),
            "pb_1".into(),
            "usr_1".into(),
            "2026-01-01T00:00:00.000Z",
        )
        .expect("playbook");
        pb.status = playbooks::Status::Active;
        graph
            .write(move |tx| {
                tx.workspace(WS)
                    .put_record(&pb)
                    .map_err(crate::error::Error::from)
            })
            .expect("put playbook");
        let out = drafted(
            &graph,
            "hot@x.io",
            acme(json!({})),
            json!({"customer": "hot@x.io", "intent": "check in"}),
        );
        assert_eq!(out["channel"], "linkedin");
        assert!(body(&out).contains("keeping costs predictable"), "{out}");
        let pb_fact = out["facts_used"]
            .as_array()
            .expect("facts")
            .iter()
            .find(|f| f["kind"] == "playbook")
            .cloned()
            .expect("playbook fact");
        assert_eq!(pb_fact["source"], "pb_1");
        // An explicit channel the playbook does not target leaves it out.
        let out = drafted(
            &graph,
            "hot@x.io",
            acme(json!({})),
            json!({"customer": "hot@x.io", "intent": "check in", "channel": "email"}),
        );
        assert!(out["facts_used"]
            .as_array()
            .expect("facts")
            .iter()
            .all(|f| f["kind"] != "playbook"));
    }

    #[test]
    fn render_email_splits_paragraphs_links_urls_and_strips_header_breaks() {
        let r = render_email(
            &acme(json!({})),
            "Hello\r\nBcc: evil@x.io",
            "Hi,\n\nSee https://acme.io/pricing.\nThanks",
        );
        assert_eq!(r.subject, "Hello Bcc: evil@x.io");
        assert!(r.html.contains(
            "<p>See <a href=\"https://acme.io/pricing\">https://acme.io/pricing</a>.<br>\nThanks</p>"
        ), "{}", r.html);
        assert!(r.text.contains("\n-- \nAcme\nPrivacy policy: https://acme.io/privacy\nTerms: https://acme.io/terms\n"), "{}", r.text);
        let bare = render_email(&BrandContext::default(), "s", "body");
        assert_eq!(bare.text, "body\n");
        assert!(!bare.html.contains("<hr"));
    }
}
