//! The dashboard's pages against the API, in headless Chromium over a seeded workspace
//! (`svc_integration_tests::seed`: more opportunities than one page of the opportunity list,
//! stages that do not sort alphabetically in funnel order). Every figure a page shows names
//! the API answer it stands for (`data-api="<path>#<JSON pointer>"`); the test reads what the
//! page shows, asks the API the same, and compares. Also: the pipeline chart adds up to the
//! figures above it, in funnel order; and the pages' smaller promises (readable money, times,
//! names, post/redirect/get, the phone-width navigation).

use std::collections::BTreeMap;

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::browser::Browser;
use svc_integration_tests::providers::SmtpSink;
use svc_integration_tests::{grant, read, seed, Account, Capability, Key, TestServer};

/// The number a figure's text shows (`$1,152,000` is 1152000, `61.9%` is 61.9) and how many
/// decimals it shows.
fn shown_number(text: &str) -> Option<(f64, usize)> {
    let kept: String = text
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == '.' || *c == '-')
        .collect();
    let kept = kept.trim_matches('.');
    let decimals = kept.split_once('.').map_or(0, |(_, f)| f.len());
    kept.parse().ok().map(|n| (n, decimals))
}

/// The API's answer at `path`: as the key named `as_key` when the figure says whose figure it
/// is, else the account's JWT, else the first key that reads it.
async fn api(s: &TestServer, a: &Account, keys: &[Key], as_key: Option<&str>, path: &str) -> Value {
    let tokens: Vec<&str> = match as_key {
        Some(id) => vec![keys
            .iter()
            .find(|k| k.id == id)
            .unwrap_or_else(|| {
                panic!("{path}: the figure is key {id}'s, which the test does not hold")
            })
            .plaintext
            .as_str()],
        None => std::iter::once(a.token.as_str())
            .chain(keys.iter().map(|k| k.plaintext.as_str()))
            .collect(),
    };
    for token in tokens {
        let (status, v) = read(s.get(path).bearer_auth(token).send().await.expect("api")).await;
        if status == StatusCode::OK {
            return v;
        }
    }
    panic!("no credential reads {path}");
}

/// A JSON pointer with one extension: a segment `[key=value]` steps into the element of an
/// array whose `key` is `value` (lists are named by id, not position).
fn resolve<'v>(v: &'v Value, pointer: &str) -> Option<&'v Value> {
    let mut at = v;
    for raw in pointer.split('/').skip(1) {
        let seg = raw.replace("~1", "/").replace("~0", "~");
        at = match seg
            .strip_prefix('[')
            .and_then(|r| r.strip_suffix(']'))
            .and_then(|r| r.split_once('='))
        {
            Some((key, want)) => at
                .as_array()?
                .iter()
                .find(|e| e.get(key).and_then(Value::as_str) == Some(want))?,
            None => match at {
                Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
                other => other.get(seg.as_str())?,
            },
        };
    }
    Some(at)
}

/// One `[data-api]` element of a page.
#[derive(Debug, serde::Deserialize)]
struct Figure {
    api: String,
    text: String,
    /// `data-api-as`: the key whose credential reads it.
    #[serde(rename = "as")]
    as_key: Option<String>,
    /// `data-yes` / `data-no`: what a boolean is shown as.
    yes: Option<String>,
    no: Option<String>,
}

/// `[data-api]` elements of the current page.
async fn figures(b: &Browser) -> Vec<Figure> {
    let v = b
        .execute(
            "return [...document.querySelectorAll('[data-api]')].map(e => ({api: e.dataset.api, text: e.textContent.trim(), as: e.dataset.apiAs || null, yes: e.dataset.yes || null, no: e.dataset.no || null}));",
            json!([]),
        )
        .await;
    serde_json::from_value(v).expect("figures")
}

/// Checks one figure's text against the API's value: numbers within the shown precision,
/// booleans as their `data-yes` / `data-no` words, text exactly.
fn check(page: &str, f: &Figure, expected: &Value) {
    let reference = &f.api;
    match expected {
        Value::Number(n) => {
            let expected = n.as_f64().expect("number");
            let (number, decimals) =
                shown_number(&f.text).unwrap_or_else(|| panic!("{page} {reference}: {:?}", f.text));
            let tolerance = 0.5 * 10f64.powi(-(decimals as i32)) + 1e-9;
            assert!(
                (number - expected).abs() <= tolerance,
                "{page} shows {:?} for {reference}, the API says {expected}",
                f.text
            );
        }
        Value::Bool(b) => {
            let word = if *b { &f.yes } else { &f.no };
            let word = word.as_deref().unwrap_or_else(|| {
                panic!("{page} {reference}: a boolean without data-yes/data-no")
            });
            assert_eq!(f.text, word, "{page} {reference}: the API says {b}");
        }
        Value::String(t) => assert_eq!(&f.text, t, "{page} {reference}"),
        other => panic!("{page} {reference}: not a figure: {other}"),
    }
}

async fn sign_in(s: &TestServer, b: &Browser, a: &Account) {
    b.goto(&s.url("/app/login")).await;
    b.fill_in("#email", &a.email).await;
    b.fill_in("#password", &a.password).await;
    b.click_on("form button[type=submit]").await;
    b.wait_for_path("/app/home").await;
}

#[tokio::test]
async fn every_figure_equals_the_api_and_the_pipeline_adds_up() {
    let smtp = SmtpSink::start();
    let (s, b) = tokio::join!(TestServer::start(), Browser::start());
    let a = s.account().await;
    let seeded = seed::workspace(&s, &a, &smtp, 40, 72).await;
    sign_in(&s, &b, &a).await;

    // A key granted every capability, so the catalogue's figures can be read as a key sees
    // them; and a conversation, so Chat lists one.
    let all: Vec<String> = Capability::ALL.into_iter().map(grant).collect();
    let every = s
        .mint_key(
            &a,
            json!({"name": "every capability", "agent": "auditor", "grants": all,
                   "allowed_modes": ["dry_run", "queue", "execute"]}),
        )
        .await;
    // The widest key first: a figure without `data-api-as` is read with the first that can.
    let keys = [every, seeded.key.clone()];
    b.goto(&s.url("/app/chat")).await;
    b.fill_in("#chat-message", "What can you do?\u{E007}").await;
    b.wait_for("#chat-log li.buddy[data-state='completed']")
        .await;

    let mut answers: BTreeMap<(String, Option<String>), Value> = BTreeMap::new();
    let mut checked: BTreeMap<&str, usize> = BTreeMap::new();
    for page in [
        "/app/home",
        "/app/playbooks",
        "/app/settings",
        "/app/capabilities",
        "/app/integrations",
        "/app/chat",
    ] {
        b.goto(&s.url(page)).await;
        b.wait_for("main h1").await;
        let shown = figures(&b).await;
        assert!(!shown.is_empty(), "{page} names no figure's API answer");
        for f in shown {
            let (path, pointer) = f.api.split_once('#').expect("path#pointer");
            let at = (path.to_owned(), f.as_key.clone());
            if !answers.contains_key(&at) {
                let v = api(&s, &a, &keys, f.as_key.as_deref(), path).await;
                answers.insert(at.clone(), v);
            }
            let expected = resolve(&answers[&at], pointer)
                .unwrap_or_else(|| panic!("{}: nothing there in {}", f.api, answers[&at]));
            check(page, &f, expected);
            *checked.entry(page).or_default() += 1;
        }
    }
    // The seeded traits reach the customers: the average confidence is theirs, not 0.
    let confidence = answers[&("/v1/reporting/summary".to_owned(), None)]["avgConfidence"]
        .as_f64()
        .expect("avgConfidence");
    assert!(confidence > 40.0 && confidence < 90.0, "{confidence}");
    // Every capability's cost, both keys' credits and every integration's state were compared.
    assert!(
        checked["/app/capabilities"] >= Capability::ALL.len() + 4,
        "{checked:?}"
    );
    assert!(checked["/app/integrations"] >= 4, "{checked:?}");
    assert!(checked["/app/chat"] >= 2, "{checked:?}");
    // Every figure on Home is checked: none without its API reference.
    b.goto(&s.url("/app/home")).await;
    let unchecked = b
        .execute(
            "return [...document.querySelectorAll('.figure')].filter(f => !f.matches('[data-api]') && !f.querySelector('[data-api]')).length;",
            json!([]),
        )
        .await;
    assert_eq!(unchecked, json!(0));
    assert!(checked["/app/home"] >= 7, "{checked:?}");

    // The pipeline chart: every open opportunity (72 seeded, more than the list's 50), so it
    // adds up to the figures above it; stages in funnel order.
    let summary = &answers[&("/v1/reporting/summary".to_owned(), None)];
    b.wait_for("#chart-pipeline").await;
    let chart = b
        .execute(
            "const c = Chart.getChart('chart-pipeline'); const d = JSON.parse(document.getElementById('chart-data').textContent); return {labels: c.data.labels, amounts: c.data.datasets[0].data, counts: d.stage_counts};",
            json!([]),
        )
        .await;
    let amounts: f64 = chart["amounts"]
        .as_array()
        .expect("amounts")
        .iter()
        .filter_map(Value::as_f64)
        .sum();
    let counts: u64 = chart["counts"]
        .as_array()
        .expect("counts")
        .iter()
        .filter_map(Value::as_u64)
        .sum();
    assert_eq!(
        amounts.trunc(),
        summary["pipelineArr"].as_f64().expect("arr")
    );
    assert_eq!(counts, summary["openTasks"].as_u64().expect("open"));
    assert!(counts > 50, "more than one page of opportunities: {counts}");
    let open_stages: Vec<&str> = seed::STAGES
        .iter()
        .copied()
        .filter(|st| *st != "closedwon")
        .collect();
    assert_eq!(chart["labels"], json!(open_stages), "funnel order");

    // The playbook run says what it did: its queued messages, with links to their approvals.
    b.goto(&s.url("/app/playbooks")).await;
    let run = b
        .wait_for(&format!("tr[data-run='{}']", seeded.run_id))
        .await;
    let text = b.text(&run).await;
    assert!(text.contains("3 queued for approval"), "{text}");

    // The console: Ctrl+Enter runs and the query is remembered; a result with nodes opens
    // on the graph tab (coloured by label with a legend), the table one click away; the
    // result has its own address (post/redirect/get).
    b.goto(&s.url("/app/graph")).await;
    b.fill_in(
        "#query",
        "MATCH (c:Customer)-[r]-(o:Opportunity) RETURN c, r, o LIMIT 20\u{E009}\u{E007}\u{E000}",
    )
    .await;
    b.wait_for("#graph canvas").await;
    let legend = b.find_all("#graph-legend li").await.len();
    assert!(legend >= 2, "a legend entry per label: {legend}");
    b.wait_for("#tab-graph[aria-selected='true']").await;
    assert!(
        b.find("#panel-table[hidden]").await.is_some(),
        "the table waits behind its tab"
    );
    b.click_on("#tab-table").await;
    b.wait_for("#panel-graph[hidden]").await;
    assert!(b.find("#result-table tbody tr").await.is_some());
    let remembered = b
        .execute(
            "return localStorage.getItem('svc-cypher-history');",
            json!([]),
        )
        .await;
    assert!(
        remembered.as_str().is_some_and(|h| h.contains("LIMIT 20")),
        "{remembered}"
    );
    let url = b.current_url().await;
    assert!(url.contains("/app/graph?q=MATCH"), "{url}");
    assert!(
        url.contains("view=table"),
        "the address keeps the view: {url}"
    );
    b.goto(&url).await;
    b.wait_for("#tab-table[aria-selected='true']").await;
    b.click_on("#tab-graph").await;
    b.wait_for("#graph canvas").await;

    // The schema sidebar: labels with the API's counts; a click puts a snippet in the box.
    let count_of = |label: &str| format!("MATCH (n:{label}) RETURN count(n) AS n");
    for label in ["Customer", "Opportunity"] {
        let (status, v) = read(
            s.post("/v1/graph/query")
                .bearer_auth(&a.token)
                .json(&json!({"query": count_of(label)}))
                .send()
                .await
                .expect("count"),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{v}");
        let shown = b
            .text(
                &b.wait_for(&format!("#schema-labels li[data-label='{label}'] .count"))
                    .await,
            )
            .await;
        assert_eq!(
            shown_number(&shown).map(|(n, _)| n),
            v["rows"][0][0].as_f64(),
            "{label}: {shown}"
        );
    }
    assert!(b
        .find("#schema-types li[data-type='HAS_TOUCHPOINT']")
        .await
        .is_some());
    let here = b.current_url().await;
    b.click_on("#schema-labels li[data-label='Opportunity'] a")
        .await;
    let typed = b.property(&b.wait_for("#query").await, "value").await;
    assert_eq!(typed, json!("MATCH (n:Opportunity) RETURN n LIMIT 25"));
    assert_eq!(b.current_url().await, here, "a snippet only fills the box");

    // Expand on click: a node's neighbours join the drawn graph, the page stays.
    b.fill_in(
        "#query",
        "MATCH (c:Customer) RETURN c LIMIT 1\u{E009}\u{E007}\u{E000}",
    )
    .await;
    b.wait_for("#graph canvas").await;
    let nodes = "return document.getElementById('graph')._cyreg.cy.nodes().length;";
    assert_eq!(b.execute(nodes, json!([])).await, json!(1));
    let before = b.current_url().await;
    b.execute(
        "document.getElementById('graph')._cyreg.cy.nodes()[0].emit('tap');",
        json!([]),
    )
    .await;
    b.wait_for("#graph[data-expanded='1']").await;
    let grown = b.execute(nodes, json!([])).await;
    assert!(grown.as_u64().is_some_and(|n| n > 1), "{grown}");
    assert_eq!(b.current_url().await, before);

    // The explorer's links show a neighbourhood with its centre marked.
    b.click_on("ul.explore a").await;
    b.wait_for("#graph[data-centre] canvas").await;

    // Home's live feed names the customer of a new event (name before id).
    b.goto(&s.url("/app/home")).await;
    b.wait_for("#live-feed[data-connected='true']").await;
    let resp = s
        .post("/api/v1/events/track")
        .header("x-api-key", &seeded.key.plaintext)
        .json(&json!({"action": "pricing_viewed", "email": seeded.emails[0]}))
        .send()
        .await
        .expect("track");
    assert_eq!(resp.status(), StatusCode::OK);
    let named = b.wait_for("#live-feed li[data-named]").await;
    let text = b.text(&named).await;
    assert!(
        text.contains("Ada Tanaka") && text.contains(&seeded.emails[0]),
        "{text}"
    );

    // Brand preview's picker searches the whole workspace: a customer outside the 20 listed
    // at first is found by typing (htmx) and by the search form's GET (no JavaScript).
    let (status, recent) = read(
        s.get("/v1/customers?limit=20")
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("customers"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{recent}");
    let listed: Vec<&str> = recent["customers"]
        .as_array()
        .expect("customers")
        .iter()
        .filter_map(|c| c["email"].as_str())
        .collect();
    let other = seeded
        .emails
        .iter()
        .find(|e| !listed.contains(&e.as_str()))
        .expect("a customer beyond the first 20");
    b.goto(&s.url("/app/brand")).await;
    b.wait_for_text("#preview-count", "20 most recently seen of 40")
        .await;
    let options = "return [...document.querySelectorAll('#preview-customer option')].map(o => o.textContent);";
    let first = b.execute(options, json!([])).await;
    assert!(!first.to_string().contains(other.as_str()), "{first}");
    b.fill_in("#preview-find", other).await;
    b.wait_for_text("#preview-count", "1 customer matches.")
        .await;
    let found = b.execute(options, json!([])).await;
    assert!(found.to_string().contains(other.as_str()), "{found}");
    b.goto(&s.url(&format!(
        "/app/brand?customer_q={}",
        other.replace('@', "%40")
    )))
    .await;
    b.wait_for_text("#preview-count", "1 customer matches.")
        .await;
    let found = b.execute(options, json!([])).await;
    assert_eq!(found.as_array().map(Vec::len), Some(1), "{found}");

    // The theme toggle draws the charts again in the new theme's colours.
    b.goto(&s.url("/app/home")).await;
    b.wait_for("#chart-pipeline").await;
    let colour = "return Chart.getChart('chart-pipeline').data.datasets[0].backgroundColor;";
    let before = b.execute(colour, json!([])).await;
    b.click_on("#theme-toggle").await;
    let after = b.execute(colour, json!([])).await;
    assert_ne!(before, after, "the chart follows the theme");
    b.close().await;
}

/// A new workspace gets first steps instead of empty figures; unknown addresses answer an
/// HTML page; the favicon is served; a refused form keeps what was typed and says why next to
/// the field; success redirects (a reload repeats nothing); the navigation is one row on a
/// phone.
#[tokio::test]
async fn first_steps_not_found_forms_and_the_phone_navigation() {
    let (s, b) = tokio::join!(TestServer::start(), Browser::start());
    let a = s.account().await;
    sign_in(&s, &b, &a).await;
    b.wait_for_text("#first-steps", "First steps").await;
    assert!(b.find("#first-steps a[href='/app/keys']").await.is_some());

    b.goto(&s.url("/app/no-such-page")).await;
    b.wait_for_text("main h1", "Page not found").await;
    assert!(b.find("nav a[href='/app/home']").await.is_some());
    let jar_cookie = b
        .cookies()
        .await
        .into_iter()
        .find(|c| c["name"] == "svc_session")
        .and_then(|c| c["value"].as_str().map(str::to_owned))
        .expect("session cookie");
    let resp = s
        .get("/app/no-such-page")
        .header("cookie", format!("svc_session={jar_cookie}"))
        .send()
        .await
        .expect("404");
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert!(resp.headers()["content-type"]
        .to_str()
        .expect("type")
        .starts_with("text/html"));
    let icon = b
        .execute(
            "return document.querySelector('link[rel=icon]').getAttribute('href');",
            json!([]),
        )
        .await;
    let resp = s
        .get(icon.as_str().expect("icon href"))
        .send()
        .await
        .expect("icon");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "image/svg+xml");

    // Playbooks: a refused create keeps the hypothesis and names the missing field; a
    // successful one redirects, so the page's URL is a GET that repeats nothing.
    b.goto(&s.url("/app/playbooks")).await;
    b.fill_in("#pb-hypothesis", "Trial users answer a short note")
        .await;
    b.click_on("form[action='/app/playbooks'] button[type=submit]")
        .await;
    b.wait_for("#playbook-notice .alert").await;
    let kept = b
        .property(&b.wait_for("#pb-hypothesis").await, "value")
        .await;
    assert_eq!(kept, json!("Trial users answer a short note"));
    b.wait_for("form[action='/app/playbooks'] .field-error")
        .await;
    b.fill_in("#pb-name", "Trial nudge").await;
    b.click_on("form[action='/app/playbooks'] button[type=submit]")
        .await;
    b.wait_for_text("#playbook-notice", "created").await;
    let url = b.current_url().await;
    assert!(url.contains("/app/playbooks?done=created"), "{url}");
    b.goto(&url).await;
    let listed = b.find_all("article.playbook").await.len();
    assert_eq!(listed, 1, "a reload creates nothing");

    // Settings: a bad cap is refused next to its field, the typed text kept.
    b.goto(&s.url("/app/settings")).await;
    b.fill_in("#cap", "lots").await;
    b.click_on("form[action='/app/settings'] button[type=submit]")
        .await;
    b.wait_for_text("#settings-error", "whole number").await;
    let kept = b.property(&b.wait_for("#cap").await, "value").await;
    assert_eq!(kept, json!("lots"));

    // Chat: Enter sends; the conversation survives a reload and is listed to resume.
    b.goto(&s.url("/app/chat")).await;
    b.fill_in("#chat-message", "What can you do?\u{E007}").await;
    b.wait_for("#chat-log li.buddy[data-state='completed']")
        .await;
    let url = b.current_url().await;
    assert!(url.contains("/app/chat?session=chs_"), "{url}");
    b.goto(&url).await;
    b.wait_for_text("#chat-log li.you", "What can you do?")
        .await;
    b.wait_for("#chat-log li.buddy").await;
    b.wait_for_text("#chat-sessions", "What can you do?").await;
    let resumed = b
        .property(&b.wait_for("#chat-session").await, "value")
        .await;
    assert!(
        url.ends_with(resumed.as_str().expect("session id")),
        "{url}"
    );

    // A phone: the navigation stays one row (it scrolls sideways).
    b.set_window_size(390, 844).await;
    b.goto(&s.url("/app/home")).await;
    let rows = b
        .execute(
            "return new Set([...document.querySelectorAll('nav li')].map(li => Math.round(li.getBoundingClientRect().top))).size;",
            json!([]),
        )
        .await;
    assert_eq!(rows, json!(1), "navigation rows at 390 px");
    b.close().await;
}

/// The console over plain HTTP (no JavaScript): a reading query's POST redirects to its
/// `?q=` address; a GET never writes; a writing query runs on its POST; the schema link
/// counts and comes back; a node's neighbourhood (JSON for the graph) is only ever the
/// session's own workspace's.
#[tokio::test]
async fn console_reads_by_get_and_writes_only_on_post() {
    let s = TestServer::start().await;
    let (a, other) = tokio::join!(s.account(), s.account());
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let origin = s.url("/").trim_end_matches('/').to_owned();
    let sign_in = |acc: &Account| {
        let form = [
            ("email", acc.email.clone()),
            ("password", acc.password.clone()),
        ];
        let req = client
            .post(s.url("/app/login"))
            .header("origin", &origin)
            .form(&form);
        async move {
            let resp = req.send().await.expect("login");
            assert_eq!(resp.status(), StatusCode::SEE_OTHER);
            let cookie = resp.headers()["set-cookie"]
                .to_str()
                .expect("cookie")
                .split(';')
                .next()
                .expect("pair")
                .to_owned();
            cookie
        }
    };
    let cookie = sign_in(&a).await;
    let get = |path: &str| client.get(s.url(path)).header("cookie", &cookie).send();
    let page = get("/app/graph")
        .await
        .expect("console")
        .text()
        .await
        .expect("html");
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("csrf field")
        .to_owned();
    let post = |query: &str| {
        client
            .post(s.url("/app/graph"))
            .header("cookie", &cookie)
            .header("origin", &origin)
            .form(&[("csrf", csrf.as_str()), ("query", query)])
            .send()
    };
    let probes = || async {
        let (status, v) = read(
            s.post("/v1/graph/query")
                .bearer_auth(&a.token)
                .json(&json!({"query": "MATCH (p:Probe) RETURN count(p)"}))
                .send()
                .await
                .expect("count"),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{v}");
        v["rows"][0][0].as_u64().expect("count")
    };

    // Reading: the POST redirects to the GET, which answers.
    let resp = post("MATCH (n) RETURN count(n) AS nodes")
        .await
        .expect("post");
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let location = resp.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    assert!(location.starts_with("/app/graph?q=MATCH"), "{location}");
    let html = get(&location)
        .await
        .expect("get")
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("id=\"result-table\"") && html.contains("1 rows in"),
        "{html}"
    );

    // A GET never writes; the POST does, and answers the page.
    let html = get("/app/graph?q=CREATE%20(%3AProbe)")
        .await
        .expect("get")
        .text()
        .await
        .expect("html");
    assert!(html.contains("changes the graph"), "{html}");
    assert_eq!(probes().await, 0);
    let resp = post("CREATE (:Probe)-[:NEXT]->(:Probe)")
        .await
        .expect("post");
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.text().await.expect("html").contains("2 nodes created"));
    assert_eq!(probes().await, 2);

    // A node in the table links to its neighbourhood.
    let html = get("/app/graph?q=MATCH%20(p%3AProbe)-%5B%3ANEXT%5D-%3E()%20RETURN%20p")
        .await
        .expect("get")
        .text()
        .await
        .expect("html");
    let explore = html
        .split("href=\"/app/graph?explore=")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("a node links to its neighbourhood")
        .to_owned();
    let html = get(&format!("/app/graph?explore={explore}"))
        .await
        .expect("explore")
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("NEXT") && html.contains("data-centre"),
        "{html}"
    );

    // The schema: counted on its link, then shown on the console.
    let resp = get("/app/graph/schema").await.expect("schema");
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let html = get("/app/graph")
        .await
        .expect("get")
        .text()
        .await
        .expect("html");
    assert!(html.contains("data-label=\"Probe\""), "{html}");

    // The neighbourhood of a node, for this workspace's session only.
    let (_, v) = read(
        s.post("/v1/graph/query")
            .bearer_auth(&a.token)
            .json(&json!({"query": "MATCH (p:Probe)-[:NEXT]->() RETURN id(p)"}))
            .send()
            .await
            .expect("id"),
    )
    .await;
    let node = v["rows"][0][0].as_u64().expect("node id");
    let near: Value = get(&format!("/app/graph/neighbourhood?node={node}"))
        .await
        .expect("neighbourhood")
        .json()
        .await
        .expect("json");
    assert_eq!(near["elements"].as_array().map(Vec::len), Some(3), "{near}");
    let theirs = sign_in(&other).await;
    let near: Value = client
        .get(s.url(&format!("/app/graph/neighbourhood?node={node}")))
        .header("cookie", &theirs)
        .send()
        .await
        .expect("neighbourhood")
        .json()
        .await
        .expect("json");
    assert_eq!(
        near["elements"],
        json!([]),
        "another workspace's node: {near}"
    );
}
