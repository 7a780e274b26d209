//! Composing the message: the facts it may use (touchpoints, open loops, the active
//! playbook), the customer's name, the subject line and the structured result.

use serde_json::{json, Value as Json};
use svc_core::store::WorkspaceTxn;
use svc_engine::{Node, Value};
use time::OffsetDateTime;

use super::voice::Writer;
use super::{Channel, Intent, Request, PLAYBOOKS_READ};
use crate::brand::Voice;
use crate::playbooks::{self, Playbook};
use crate::scoring::{self, Class, Touch};
use svc_core::error::Result;
use svc_core::plumbing::ids::PublicIds;
use svc_core::store::RecordScan;

// ---- facts ----

/// A fact the message uses: `text` is the exact wording that appears in the message (for
/// touchpoints) or what shaped it (for a playbook).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Fact {
    pub(super) kind: &'static str,
    pub(super) text: String,
    pub(super) source: String,
}

impl Fact {
    fn to_json(&self) -> Json {
        json!({"kind": self.kind, "text": self.text, "source": self.source})
    }
}

/// What the customer did, as a phrase that follows "you" ("looked at our pricing page");
/// `None` for actions without a customer-facing wording, which are never referenced.
pub(super) fn touch_phrase(t: &Touch) -> Option<String> {
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
pub(super) fn day_phrase(us: i64, now: OffsetDateTime, formal: bool) -> String {
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
pub(super) fn fits(intent: Intent, t: &Touch) -> bool {
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
pub(super) fn phrased(tps: &[Touch], now_us: i64) -> Vec<(&Touch, String, i64)> {
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
pub(super) fn angle(hypothesis: &str) -> Option<&'static str> {
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

/// The customer's display name, when known (never an email or id).
pub(super) fn customer_name(customer: &Node) -> Option<String> {
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
pub(super) fn first_sentence(text: Option<&str>, max: usize) -> Option<String> {
    let t = text?.trim();
    let end = t
        .char_indices()
        .find(|(i, c)| matches!(c, '.' | '!' | '?') && t[i + 1..].starts_with([' ', '\n']))
        .map_or(t.len(), |(i, _)| i);
    let s = t[..end].trim().trim_end_matches(['.', '!', '?']).trim();
    (!s.is_empty() && s.chars().count() <= max).then(|| s.to_owned())
}

pub(super) fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match (chars.next(), chars.clone().next()) {
        // "Growth teams" -> "growth teams", but "SaaS founders" and "CFOs" keep their case.
        (Some(c), Some(n)) if c.is_uppercase() && n.is_lowercase() => {
            c.to_lowercase().chain(chars).collect()
        }
        _ => s.to_owned(),
    }
}

pub(super) fn subject_line(wr: &Writer<'_>, intent: Intent, business: Option<&str>) -> String {
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
pub(super) fn output(
    ids: &PublicIds,
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
        "customer_id": ids.customer(customer.id),
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
