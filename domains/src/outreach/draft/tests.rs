//! Tests of `draft.outreach`: intents, voice, facts, escaping and the schemas.

use super::*;
use crate::brand;
use crate::playbooks;
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
    with_customer(graph, email, move |w, c| {
        draft(
            &crate::scoring::tests::test_ids(),
            w,
            &brand,
            c,
            &input,
            now(),
        )
    })
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
                .map_err(svc_core::error::Error::from)
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
    assert!(
        r.text.contains(
            "\n-- \nAcme\nPrivacy policy: https://acme.io/privacy\nTerms: https://acme.io/terms\n"
        ),
        "{}",
        r.text
    );
    let bare = render_email(&BrandContext::default(), "s", "body");
    assert_eq!(bare.text, "body\n");
    assert!(!bare.html.contains("<hr"));
}
