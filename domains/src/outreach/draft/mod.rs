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
//!
//! The parts: `intent` (intents and channels), `voice` (the tone and the wording it shapes),
//! `compose` (facts, subject and the structured result), `email` ([`render_email`], escaping,
//! the footer), `schema` (the contract). This file holds the limits, the input and [`draft`].

mod compose;
mod email;
mod intent;
mod schema;
#[cfg(test)]
mod tests;
mod voice;

pub use compose::active_playbook;
pub use email::{clean_subject, escape_html, render_email, RenderedEmail};
pub use intent::{Channel, Intent};
pub use schema::{example, input_schema, output_schema};
pub use voice::Tone;

use compose::{
    angle, customer_name, day_phrase, first_sentence, fits, lower_first, output, phrased,
    subject_line, touch_phrase, Fact,
};
use voice::Writer;

use serde_json::{json, Value as Json};
use svc_core::store::WorkspaceTxn;
use svc_engine::Node;
use time::OffsetDateTime;

use crate::brand::BrandContext;
use crate::scoring::{self, Class};
use svc_core::error::{Error, Result};
use svc_core::plumbing::ids::PublicIds;

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
    ids: &PublicIds,
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
            source: t.wire_id(ids),
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
                source: t.wire_id(ids),
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
            ids, customer, &req, channel, None, body_text, None, &voice, &facts, links_used,
            &signature,
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
            ids, customer, &req, channel, None, body_text, None, &voice, &facts, links_used,
            &signature,
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
        ids,
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
