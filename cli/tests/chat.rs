//! `svc chat`: the real binary streams a chat turn from a real svcd (the built-in agent, so the
//! answers are exact): the answer on stdout, routing and tool calls on stderr, `--json` for the
//! completed turn, sessions continued with `--session`, a buddy chosen with `--buddy`.

mod support;

use serde_json::{json, Value};
use support::World;
use svc_integration_tests::{get_ok, track};

async fn chat(w: &World, token: &str, args: &[&str]) -> support::Run {
    let mut all = vec!["chat"];
    all.extend_from_slice(args);
    let mut c = w.cmd(&all);
    c.env("SVC_TOKEN", token);
    w.run(c).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_streams_the_answer_and_the_tool_calls_and_continues_a_session() {
    let w = World::new().await;
    for email in ["ada@x.test", "bo@x.test"] {
        track(
            &w.server,
            &w.key.plaintext,
            json!({"action": "trial_started", "email": email}),
        )
        .await;
    }
    let token = w.account.token.clone();

    let r = chat(&w, &token, &["Who is likely to churn this week?"]).await;
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.starts_with("Built-in agent"), "{r:?}");
    for email in ["ada@x.test", "bo@x.test"] {
        assert!(r.stdout.contains(email), "{email}: {r:?}");
    }
    assert!(r.stderr.contains("route: insights (rules"), "{r:?}");
    assert!(r.stderr.contains("tool_call #1: score.churn"), "{r:?}");
    assert!(
        r.stderr.contains("tool_result #1: score.churn committed"),
        "{r:?}"
    );
    // The printed deltas are the stored answer.
    let session = r
        .stderr
        .split_whitespace()
        .find(|t| t.starts_with("chs_"))
        .unwrap_or_else(|| panic!("no session id: {r:?}"))
        .to_owned();
    let stored = get_ok(&w.server, &format!("/v1/chat/sessions/{session}"), &token).await;
    let answer = stored["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .and_then(|m| m["text"].as_str())
        .unwrap_or_else(|| panic!("no assistant message: {stored}"))
        .to_owned();
    assert_eq!(r.stdout.trim_end(), answer.trim_end());

    // The same session, a buddy asked directly, the turn as JSON.
    let r = chat(
        &w,
        &token,
        &[
            "draft an email to ada@x.test about the trial",
            "--session",
            &session,
            "--buddy",
            "campaign",
            "--json",
        ],
    )
    .await;
    assert_eq!(r.code, 0, "{r:?}");
    let turn: Value = r.json();
    assert_eq!(turn["session_id"], session.as_str());
    assert_eq!(turn["buddy_id"], "campaign");
    assert_eq!(turn["status"], "completed");
    assert_eq!(
        turn["tool_calls"][0]["capability"], "draft.outreach",
        "{turn}"
    );
    assert!(r.stderr.is_empty(), "--json prints nothing else: {r:?}");

    // No session token: not logged in (4); an agent key is refused by the server (1); an
    // unknown session is the server's 404.
    let r = w.svc(&["chat", "hello"]).await;
    assert_eq!(r.code, 4, "{r:?}");
    assert!(r.stderr.contains("SVC_TOKEN"), "{r:?}");
    let r = chat(&w, &w.key.plaintext, &["hello"]).await;
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("forbidden"), "{r:?}");
    let r = chat(&w, &token, &["hello", "--session", "chs_nope", "--json"]).await;
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(r.json()["error"]["code"], "not_found", "{r:?}");
}
