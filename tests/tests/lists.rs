//! Lists paged on the server with their totals (issue 28), through HTTP: opportunities (the API
//! and the dashboard page), playbook runs and their leads, agent keys (and minting them with
//! post/redirect/get), the approvals inbox. Ids are read from responses, never written here.

use reqwest::StatusCode;
use serde_json::{json, Value};
use svc_integration_tests::{expect_error, get_ok, read, Account, TestServer};

const OPPORTUNITIES: usize = 120;
const STAGES: [&str; 4] = ["proposal", "lead", "demo", "qualified"];

/// 12 customers and 120 opportunities through the batch ingest API: opportunity i is at
/// `STAGES[i % 4]`, owned by customer i % 12, worth 1000 + 10 i.
async fn seed_opportunities(s: &TestServer, key: &str) {
    let mut events: Vec<Value> = (0..12)
        .map(|c| {
            json!({"type": "identify", "email": format!("owner{c}@opps.example"),
                   "name": format!("Owner {c}"), "timestamp": "2026-01-01T00:00:00Z"})
        })
        .collect();
    events.extend((0..OPPORTUNITIES).map(|i| {
        json!({"type": "track", "action": "opportunity_created",
               "email": format!("owner{}@opps.example", i % 12),
               "properties": {"opportunityId": format!("OPP-{i}"), "name": format!("Deal {i:03}"),
                              "amount": 1000 + 10 * i, "stage": STAGES[i % STAGES.len()]},
               "timestamp": format!("2026-01-02T00:{:02}:{:02}Z", i / 60, i % 60)})
    }));
    let resp = s
        .post("/api/v1/events")
        .header("x-api-key", key)
        .json(&json!({ "events": events }))
        .send()
        .await
        .expect("send");
    let (status, v) = read(resp).await;
    assert!(status.is_success(), "{v}");
    assert_eq!(v["failed"], json!(0), "{v}");
}

fn names(v: &Value) -> Vec<String> {
    v["opportunities"]
        .as_array()
        .expect("opportunities")
        .iter()
        .map(|o| o["name"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// The dashboard page at `path` as the signed-in `a` (the session cookie is the JWT).
async fn dashboard(s: &TestServer, a: &Account, path: &str) -> (StatusCode, String) {
    let resp = s
        .get(path)
        .header("cookie", format!("svc_session={}", a.token))
        .send()
        .await
        .expect("page");
    let status = resp.status();
    (status, resp.text().await.expect("html"))
}

#[tokio::test]
async fn opportunities_are_paged_searched_sorted_and_filtered_on_the_server() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let key = s.reader_key(&a).await.plaintext;
    seed_opportunities(&s, &key).await;

    // Without parameters: the historical first page (50), now with the total.
    let first = get_ok(&s, "/v1/opportunities", &a.token).await;
    assert_eq!(
        (&first["total"], &first["offset"], &first["limit"]),
        (&json!(OPPORTUNITIES), &json!(0), &json!(50))
    );
    assert_eq!(first["opportunities"].as_array().map(Vec::len), Some(50));
    // Unscored: by amount, largest first.
    assert_eq!(names(&first)[0], "Deal 119");

    // Three pages by amount, ascending: every opportunity once, in order.
    let mut seen = Vec::new();
    for offset in [0, 50, 100] {
        let page = get_ok(
            &s,
            &format!("/v1/opportunities?sort=amount&order=asc&offset={offset}&limit=50"),
            &key,
        )
        .await;
        assert_eq!(page["total"], json!(OPPORTUNITIES));
        seen.extend(names(&page));
    }
    let expected: Vec<String> = (0..OPPORTUNITIES).map(|i| format!("Deal {i:03}")).collect();
    assert_eq!(seen, expected);

    // Search by the customer's email, filter by stage and amount, sort by stage.
    let owner = get_ok(&s, "/v1/opportunities?q=OWNER5@opps", &a.token).await;
    assert_eq!(owner["total"], json!(10));
    assert!(owner["opportunities"]
        .as_array()
        .expect("list")
        .iter()
        .all(|o| o["customer_email"] == "owner5@opps.example" && o["customer_name"] == "Owner 5"));
    let demo = get_ok(
        &s,
        "/v1/opportunities?stage=Demo&min_amount=1500&max_amount=2000",
        &a.token,
    )
    .await;
    // i % 4 == 2 and 50 <= i <= 100.
    assert_eq!(demo["total"], json!(13));
    let funnel = get_ok(
        &s,
        "/v1/opportunities?sort=stage&order=asc&limit=500",
        &a.token,
    )
    .await;
    let mut stages: Vec<String> = funnel["opportunities"]
        .as_array()
        .expect("list")
        .iter()
        .map(|o| o["stage"].as_str().unwrap_or("").to_owned())
        .collect();
    stages.dedup();
    assert_eq!(stages, ["lead", "qualified", "demo", "proposal"]);
    let updated = get_ok(&s, "/v1/opportunities?sort=updated&limit=1", &a.token).await;
    assert_eq!(names(&updated), ["Deal 119"]);

    // Bad parameters are the client's fault, with the field named.
    for bad in [
        "limit=0",
        "limit=501",
        "offset=-1",
        "sort=colour",
        "order=up",
        "status=maybe",
        "min_amount=lots",
    ] {
        let resp = s
            .get(&format!("/v1/opportunities?{bad}"))
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("send");
        expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
    }

    // The dashboard page: the total and the pager.
    let (status, html) = dashboard(&s, &a, "/app/opportunities?sort=amount").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("Showing 1–50 of <strong>120</strong>"),
        "{html}"
    );
    assert!(
        html.contains("Deal 119") && html.contains("$2,190"),
        "{html}"
    );
    assert!(html.contains("Page 1 of 3"));
    let (_, second) = dashboard(&s, &a, "/app/opportunities?sort=amount&offset=50").await;
    assert!(second.contains("Showing 51–100 of <strong>120</strong>"));
    let (_, searched) = dashboard(&s, &a, "/app/opportunities?q=owner5%40opps&status=open").await;
    assert!(
        searched.contains("Showing 1–10 of <strong>10</strong>"),
        "{searched}"
    );
    let (status, _) = dashboard(&s, &a, "/app/opportunities?min_amount=x").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// A client that does not follow redirects, to see post/redirect/get happen.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// The CSRF token of a dashboard page's forms.
fn csrf_of(html: &str) -> String {
    let at = html.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    html[at..].split('"').next().unwrap_or_default().to_owned()
}

/// The value of the input with `id`.
fn input_value(html: &str, id: &str) -> Option<String> {
    let at = html.find(&format!("id=\"{id}\""))?;
    let rest = &html[at..];
    let v = rest.find("value=\"")? + 7;
    Some(rest[v..].split('"').next().unwrap_or_default().to_owned())
}

async fn wait_for_run(s: &TestServer, a: &Account, pb: &str, run: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let r = get_ok(s, &format!("/v1/playbooks/{pb}/runs/{run}"), &a.token).await;
        if r["run"]["status"] != "running" {
            return r;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run did not stop: {r}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn playbook_runs_and_their_leads_are_paged_with_totals() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let created = s
        .post("/v1/playbooks")
        .bearer_auth(&a.token)
        .json(
            &json!({"name": "Spring win-back", "mode": "outbound", "buddyId": "campaign",
                      "strategy": {"hypothesis": "Lapsed users answer a short note"}}),
        )
        .send()
        .await
        .expect("create");
    let (status, pb) = read(created).await;
    assert_eq!(status, StatusCode::CREATED, "{pb}");
    let pb = pb["playbook"]["id"].as_str().expect("id").to_owned();
    let resp = s
        .request(reqwest::Method::PUT, &format!("/v1/playbooks/{pb}"))
        .bearer_auth(&a.token)
        .json(&json!({"leadSource": {"sampleSize": 500}}))
        .send()
        .await
        .expect("update");
    let (status, v) = read(resp).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["playbook"]["leadSource"]["sampleSize"], json!(500), "{v}");
    // Three runs of 120 references nobody matches: every lead is skipped at once.
    let mut runs = Vec::new();
    for r in 0..3 {
        let refs: Vec<String> = (0..120)
            .map(|i| format!("nobody{r}-{i:03}@runs.example"))
            .collect();
        let resp = s
            .post(&format!("/v1/playbooks/{pb}/run"))
            .bearer_auth(&a.token)
            .json(&json!({ "leads": refs }))
            .send()
            .await
            .expect("run");
        let (status, v) = read(resp).await;
        assert_eq!(status, StatusCode::CREATED, "{v}");
        let id = v["run"]["id"].as_str().expect("run id").to_owned();
        wait_for_run(&s, &a, &pb, &id).await;
        runs.push(id);
    }

    // Runs: oldest first by default, with the total; newest first when asked, paged.
    let all = get_ok(&s, &format!("/v1/playbooks/{pb}/runs"), &a.token).await;
    assert_eq!((&all["total"], &all["limit"]), (&json!(3), &json!(100)));
    let ids: Vec<&str> = all["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert_eq!(ids, runs.iter().map(String::as_str).collect::<Vec<_>>());
    let page = get_ok(
        &s,
        &format!("/v1/playbooks/{pb}/runs?order=desc&limit=2&offset=1"),
        &a.token,
    )
    .await;
    assert_eq!(page["total"], json!(3));
    assert_eq!(page["runs"][0]["id"].as_str(), Some(runs[1].as_str()));
    assert_eq!(page["runs"].as_array().map(Vec::len), Some(2));

    // A run's leads: 120, paged by 50 in the order they are worked, searchable.
    let leads_path = format!("/v1/playbooks/{pb}/runs/{}/leads", runs[0]);
    let mut seqs = Vec::new();
    for offset in [0, 50, 100] {
        let p = get_ok(
            &s,
            &format!("{leads_path}?limit=50&offset={offset}"),
            &a.token,
        )
        .await;
        assert_eq!(p["total"], json!(120));
        seqs.extend(
            p["leads"]
                .as_array()
                .expect("leads")
                .iter()
                .filter_map(|l| l["seq"].as_u64()),
        );
    }
    assert_eq!(seqs, (0..120).collect::<Vec<u64>>());
    let found = get_ok(
        &s,
        &format!("{leads_path}?q=nobody0-11&status=skipped"),
        &a.token,
    )
    .await;
    assert_eq!(found["total"], json!(10));
    let newest = get_ok(
        &s,
        &format!("{leads_path}?sort=seq&order=desc&limit=1"),
        &a.token,
    )
    .await;
    assert_eq!(newest["leads"][0]["seq"], json!(119));
    let none = get_ok(&s, &format!("{leads_path}?status=sent"), &a.token).await;
    assert_eq!((&none["total"], &none["leads"]), (&json!(0), &json!([])));
    for bad in [
        "limit=0",
        "limit=501",
        "status=lost",
        "sort=colour",
        "order=up",
    ] {
        let resp = s
            .get(&format!("{leads_path}?{bad}"))
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("send");
        expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
        let resp = s
            .get(&format!("/v1/playbooks/{pb}/runs?{bad}"))
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("send");
        expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
    }

    // The dashboard: the playbook's runs and a run's leads, paged, with the playbook's name.
    let (status, html) = dashboard(&s, &a, &format!("/app/playbooks/{pb}/runs")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("Runs of “Spring win-back”"), "{html}");
    assert!(
        html.contains("Showing 1–3 of <strong>3</strong> runs"),
        "{html}"
    );
    let (status, html) = dashboard(&s, &a, &format!("/app/playbooks/{pb}/runs/{}", runs[0])).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("Run of “Spring win-back”"), "{html}");
    assert!(
        html.contains("Showing 1–50 of <strong>120</strong> leads"),
        "{html}"
    );
    assert!(html.contains("Page 1 of 3"));
    let (_, html) = dashboard(
        &s,
        &a,
        &format!("/app/playbooks/{pb}/runs/{}?offset=100", runs[0]),
    )
    .await;
    assert!(
        html.contains("Showing 101–120 of <strong>120</strong> leads"),
        "{html}"
    );
}

#[tokio::test]
async fn keys_are_paged_and_searched_and_minting_is_post_redirect_get() {
    let s = TestServer::start().await;
    let a = s.account().await;
    for i in 0..60 {
        s.mint_key(
            &a,
            json!({"name": format!("bot {i:02}"), "grants": ["customers:read"]}),
        )
        .await;
    }
    let page = get_ok(&s, "/api/v1/keys?limit=25&offset=50", &a.token).await;
    assert_eq!(
        (&page["total"], &page["has_more"]),
        (&json!(60), &json!(false))
    );
    assert_eq!(page["keys"].as_array().map(Vec::len), Some(10));
    let first = get_ok(&s, "/api/v1/keys?limit=25", &a.token).await;
    assert_eq!(first["has_more"], json!(true));
    // Newest first by default (keys minted in one millisecond tie, by id).
    let created: Vec<&str> = first["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .filter_map(|k| k["created_at"].as_str())
        .collect();
    assert_eq!(created.len(), 25);
    assert!(created.windows(2).all(|w| w[0] >= w[1]), "{created:?}");
    let found = get_ok(&s, "/api/v1/keys?q=BOT 1&sort=name&order=asc", &a.token).await;
    assert_eq!(found["total"], json!(10));
    assert_eq!(found["keys"][0]["name"], "bot 10");
    for bad in ["limit=0", "limit=1001", "state=gone", "sort=colour"] {
        let resp = s
            .get(&format!("/api/v1/keys?{bad}"))
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("send");
        expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
    }

    // The page: counted and paged, searchable by name.
    let (_, html) = dashboard(&s, &a, "/app/keys").await;
    assert!(
        html.contains("Showing 1–50 of <strong>60</strong> keys"),
        "{html}"
    );
    assert!(html.contains("data-confirm=\"Revoke “bot 59”?"), "{html}");
    let (_, html) = dashboard(&s, &a, "/app/keys?q=bot%205").await;
    assert!(
        html.contains("Showing 1–10 of <strong>10</strong> keys"),
        "{html}"
    );

    // Minting: the POST redirects; the GET after it shows the plaintext once; a reload shows
    // nothing and mints nothing.
    let client = no_redirects();
    let cookie = format!("svc_session={}", a.token);
    let csrf = csrf_of(&dashboard(&s, &a, "/app/keys").await.1);
    let resp = client
        .post(s.url("/app/keys"))
        .header("cookie", &cookie)
        .form(&[
            ("csrf", csrf.as_str()),
            ("name", "prg bot"),
            ("mode", "dry_run"),
        ])
        .send()
        .await
        .expect("mint");
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let location = resp.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    assert!(location.starts_with("/app/keys"), "{location}");
    assert!(
        !location.contains("svc_live_"),
        "the secret is not in the URL: {location}"
    );
    let shown = client
        .get(s.url(&location))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("get");
    let shown = shown.text().await.expect("html");
    let secret = input_value(&shown, "new-key").expect("the new key, shown once");
    assert!(secret.starts_with("svc_live_"), "{secret}");
    assert!(shown.contains("Key “prg bot” created"));
    // The key works.
    let whoami = get_ok(&s, "/api/v1/keys/whoami", &secret).await;
    assert_eq!(whoami["name"], "prg bot");
    let reload = client
        .get(s.url(&location))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("reload")
        .text()
        .await
        .expect("html");
    assert!(!reload.contains(&secret) && input_value(&reload, "new-key").is_none());
    let keys = get_ok(&s, "/api/v1/keys?q=prg", &a.token).await;
    assert_eq!(keys["total"], json!(1), "one key minted: {keys}");
    // Another person of the workspace never sees it.
    let member = s.member(&a).await;
    let (_, theirs) = dashboard(&s, &member, "/app/keys").await;
    assert!(!theirs.contains(&secret));

    // Revoking redirects back to the list.
    let key_id = keys["keys"][0]["id"].as_str().expect("id").to_owned();
    let resp = client
        .post(s.url(&format!("/app/keys/{key_id}/revoke")))
        .header("cookie", &cookie)
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .expect("revoke");
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let revoked = get_ok(&s, "/api/v1/keys?q=prg&state=revoked", &a.token).await;
    assert_eq!(revoked["total"], json!(1));
}

#[tokio::test]
async fn approvals_are_paged_filtered_and_show_recipients_to_people() {
    const QUEUED: usize = 60;
    let s = TestServer::start().await;
    let a = s.account().await;
    // 60 actions of 2 credits: more than the free plan's month.
    s.operator_set_plan(&a.workspace_id, "enterprise", Some(100_000))
        .await;
    let key = s.reader_key(&a).await.plaintext;
    let events: Vec<Value> = (0..QUEUED)
        .map(|i| {
            json!({"type": "identify", "email": format!("ada{i}@inbox.example"),
                   "name": format!("Ada {i}"), "timestamp": "2026-01-01T00:00:00Z"})
        })
        .collect();
    let resp = s
        .post("/api/v1/events")
        .header("x-api-key", &key)
        .json(&json!({ "events": events }))
        .send()
        .await
        .expect("send");
    assert!(resp.status().is_success());
    let crm = s
        .mint_key(
            &a,
            json!({"name": "crm", "agent": "crm-bot", "allowed_modes": ["queue"],
                   "grants": [svc_integration_tests::grant(svc_integration_tests::Capability::CrmMutate)]}),
        )
        .await
        .plaintext;
    let mut pending_ids = Vec::new();
    for i in 0..QUEUED {
        let resp = s
            .post(&svc_integration_tests::invoke_path(
                svc_integration_tests::Capability::CrmMutate,
            ))
            .bearer_auth(&crm)
            .json(&json!({"mode": "queue",
                          "input": {"customer": format!("ada{i}@inbox.example"), "set": {"tier": "gold"}}}))
            .send()
            .await
            .expect("queue");
        let (status, v) = read(resp).await;
        assert!(status.is_success(), "{v}");
        pending_ids.push(v["pending_action_id"].as_str().expect("queued").to_owned());
    }
    // Reject five through the API.
    for id in &pending_ids[..5] {
        let resp = s
            .post(&format!("/api/v1/approvals/{id}/reject"))
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("reject");
        assert!(resp.status().is_success());
    }

    let page = get_ok(&s, "/api/v1/approvals?status=pending&limit=25", &a.token).await;
    assert_eq!(
        (&page["total"], &page["limit"]),
        (&json!(QUEUED - 5), &json!(25))
    );
    let actions = page["actions"].as_array().expect("actions");
    assert_eq!(actions.len(), 25);
    // Newest first; the recipient in full for people who may approve.
    assert_eq!(
        actions[0]["id"].as_str(),
        pending_ids.last().map(String::as_str)
    );
    assert_eq!(
        actions[0]["recipient"]["email"],
        format!("ada{}@inbox.example", QUEUED - 1)
    );
    assert_eq!(
        actions[0]["recipient"]["name"],
        format!("Ada {}", QUEUED - 1)
    );
    let last = get_ok(
        &s,
        "/api/v1/approvals?status=pending&limit=25&offset=50",
        &a.token,
    )
    .await;
    assert_eq!(last["actions"].as_array().map(Vec::len), Some(5));
    let rejected = get_ok(&s, "/api/v1/approvals?status=rejected", &a.token).await;
    assert_eq!(rejected["total"], json!(5));
    let decided = get_ok(&s, "/api/v1/approvals?status=decided", &a.token).await;
    assert_eq!(decided["total"], json!(5));
    let every = get_ok(&s, "/api/v1/approvals", &a.token).await;
    assert_eq!(
        (&every["total"], &every["capabilities"]),
        (&json!(QUEUED), &json!(["crm.mutate"]))
    );
    for bad in ["status=maybe", "limit=0", "limit=501", "offset=x"] {
        let resp = s
            .get(&format!("/api/v1/approvals?{bad}"))
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("send");
        expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
    }
    // The agent that queued it sees its action masked, without the recipient.
    let mine = get_ok(
        &s,
        &format!("/api/v1/capabilities/pending/{}", pending_ids[10]),
        &crm,
    )
    .await;
    assert!(mine.get("recipient").is_none(), "{mine}");
    assert!(!mine.to_string().contains("ada10@inbox.example"), "{mine}");

    // The inbox: the count of all, 50 a page, a status filter.
    let (_, html) = dashboard(&s, &a, "/app/approvals").await;
    assert!(html.contains("<strong>55</strong> waiting"), "{html}");
    assert!(html.contains("Page 1 of 2"), "{html}");
    assert!(
        html.contains("Ada 59 &lt;ada59@inbox.example&gt;"),
        "{html}"
    );
    let (_, html) = dashboard(&s, &a, "/app/approvals?status=pending&offset=50").await;
    assert!(html.contains("showing 51–55"), "{html}");
    let (_, html) = dashboard(&s, &a, "/app/approvals?status=rejected").await;
    assert!(html.contains("<strong>5</strong> decided"), "{html}");
    let (status, _) = dashboard(&s, &a, "/app/approvals?status=maybe").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}
