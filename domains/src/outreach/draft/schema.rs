//! The contract of `draft.outreach`: input and output schemas and an example.

use serde_json::{json, Value as Json};

use super::{render_email, Intent, INTENT_CHARS, SUBJECT_CHARS};
use crate::brand::BrandContext;

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
            "customer_id": "cus_3kTMd92jFpQ",
            "intent": "pricing",
            "channel": "email",
            "subject": rendered.subject,
            "body_text": body,
            "body_html": rendered.html,
            "voice": {"formality": 3, "humor": 3, "respect": 3, "energy": 3},
            "facts_used": [{"kind": "intent_signal",
                            "text": "you looked at our pricing page on Nov 20",
                            "source": "tp_Yh4Rw8cNz1s"}],
            "links_used": [{"kind": "pricing", "url": "https://acme.io/pricing"},
                           {"kind": "privacy", "url": "https://acme.io/privacy"}],
            "signature": "Best,\nThe Acme team"
        }),
    )
}
