//! The dashboard's lists on a workspace large enough to page (issue 28), in headless Chromium
//! at 1440x900 and 390x844: the customers list is paged on the server with its total and
//! searches the whole workspace (an old customer's exact email, a name across thousands), and
//! the approvals inbox shows recipients in full, counts and groups the actions, approves a
//! group in bulk after one confirmation and keeps the decided ones in its history; the
//! opportunities list is paged with its total; a minted key is shown once (a reload neither
//! shows nor mints it again) and revoking asks first.

use serde_json::{json, Value};
use svc_integration_tests::browser::Browser;
use svc_integration_tests::{grant, invoke_path, read, str_at, Capability, TestServer};

const CUSTOMERS: usize = 3_000;
const QUEUED: usize = 6;
const OPPORTUNITIES: usize = 60;

/// 3,000 customers through the batch ingest API (500 a request); customer i was last seen at
/// second i, so customer 0 is the least recently seen; every 100th is a "Tanaka".
async fn seed(s: &TestServer, key: &str) {
    let events: Vec<Value> = (0..CUSTOMERS)
        .map(|i| {
            let name = if i % 100 == 0 {
                format!("Yuki Tanaka {i}")
            } else {
                format!("Person {i}")
            };
            json!({"type": "identify", "email": format!("p{i}@lists.example"), "name": name,
                   "timestamp": format!("2026-01-01T{:02}:{:02}:{:02}Z", i / 3600, (i / 60) % 60, i % 60)})
        })
        .collect();
    let mut events = events;
    // 60 opportunities, owned by the first customers: more than one page of the list.
    events.extend((0..OPPORTUNITIES).map(|i| {
        let stage = ["demo", "lead", "proposal"][i % 3];
        json!({"type": "track", "action": "opportunity_created", "email": format!("p{}@lists.example", i % 20),
               "properties": {"opportunityId": format!("L-{i}"), "name": format!("Lists deal {i:02}"),
                              "amount": 500 + 100 * i, "stage": stage},
               "timestamp": "2026-01-02T00:00:00Z"})
    }));
    let sends = events.chunks(500).map(|chunk| {
        s.post("/api/v1/events")
            .header("x-api-key", key)
            .json(&json!({ "events": chunk }))
            .send()
    });
    for resp in futures_util::future::join_all(sends).await {
        let (status, v) = read(resp.expect("send")).await;
        assert!(status.is_success(), "{v}");
        assert_eq!(v["failed"], json!(0), "{v}");
    }
}

async fn text_of(b: &Browser, css: &str) -> String {
    b.text(&b.wait_for(css).await).await
}

#[tokio::test]
async fn lists_page_search_the_whole_workspace_and_approve_in_bulk() {
    let (s, b) = tokio::join!(TestServer::start(), Browser::start());
    let a = s.account().await;
    let key = s.reader_key(&a).await.plaintext;
    seed(&s, &key).await;
    // Six crm.mutate actions queued for approval, for old customers.
    let crm = s
        .mint_key(
            &a,
            json!({"name": "crm", "agent": "crm-bot", "allowed_modes": ["queue"],
                   "grants": [grant(Capability::CrmMutate)]}),
        )
        .await
        .plaintext;
    for i in 0..QUEUED {
        let resp = s
            .post(&invoke_path(Capability::CrmMutate))
            .bearer_auth(&crm)
            .json(&json!({"mode": "queue",
                          "input": {"customer": format!("p{i}@lists.example"), "set": {"tier": "gold"}}}))
            .send()
            .await
            .expect("queue");
        let (status, v) = read(resp).await;
        assert!(status.is_success(), "{v}");
        assert_eq!(v["status"], "queued", "{v}");
    }

    b.set_window_size(1440, 900).await;
    b.goto(&s.url("/app/login")).await;
    b.fill_in("#email", &a.email).await;
    b.fill_in("#password", &a.password).await;
    b.click_on("form button[type=submit]").await;
    b.wait_for_path("/app/home").await;

    // Paged on the server, with the total.
    b.goto(&s.url("/app/customers")).await;
    b.wait_for_text("#customer-count", "of 3,000 customers")
        .await;
    assert!(text_of(&b, "#customer-count")
        .await
        .contains("Showing 1–50"));
    assert_eq!(b.find_all("#customer-rows tr").await.len(), 50);
    // The most recently seen first.
    b.wait_for_text("#customer-rows", "p2999@lists.example")
        .await;
    b.click_on("a[rel=next]").await;
    b.wait_for_text("#customer-count", "Showing 51–100").await;
    b.wait_for_text("#customer-rows", "p2949@lists.example")
        .await;
    assert!(b.current_url().await.contains("offset=50"));

    // Search the whole workspace: the least recently seen customer's exact email, any case.
    b.goto(&s.url("/app/customers")).await;
    b.fill_in("#q", "P0@Lists.Example").await;
    b.wait_for_text("#customer-count", "of 1 customer").await;
    b.wait_for_text("#customer-rows", "p0@lists.example").await;
    // A name across thousands: 30 Tanakas, sorted by name.
    b.goto(&s.url("/app/customers?q=tanaka&sort=name&order=asc"))
        .await;
    b.wait_for_text("#customer-count", "of 30 customers").await;
    let first = text_of(&b, "#customer-rows tr td:nth-child(2)").await;
    assert_eq!(first, "Yuki Tanaka 0");

    // Approvals: counted, grouped by origin, recipients in full.
    b.goto(&s.url("/app/approvals")).await;
    b.wait_for_text("#approvals-count", "6 waiting").await;
    b.wait_for_text("main", "Agent: crm-bot").await;
    b.wait_for_text("main", "Yuki Tanaka 0 <p0@lists.example>")
        .await;
    b.wait_for_text("main", "Person 5 <p5@lists.example>").await;
    assert!(
        !b.page_text().await.contains("p***@"),
        "masked recipient shown"
    );

    // Bulk: select the group, approve, confirm once.
    b.click_on("input[data-select-group]").await;
    let checked = b
        .execute(
            "return [...document.querySelectorAll('input.select')].filter(c => c.checked).length;",
            json!([]),
        )
        .await;
    assert_eq!(checked, json!(QUEUED));
    b.click_on("#bulk button[value=approve]").await;
    b.wait_for_text("#bulk-confirm", "Approve 6 actions?").await;
    b.click_on("#bulk-confirm button[type=submit]").await;
    b.wait_for_text("#bulk-result", "6 decided").await;
    b.wait_for_text("#approvals-count", "0 waiting").await;
    // Decided items stay, in the history.
    b.click_on("a[href='/app/approvals?status=decided']").await;
    b.wait_for_text("#approvals-count", "6 decided").await;
    assert_eq!(
        b.find_all("article.approval[data-status=executed]")
            .await
            .len(),
        QUEUED
    );
    // The API agrees: the customers were changed.
    let v = svc_integration_tests::get_ok(&s, "/v1/customers/p0@lists.example", &a.token).await;
    assert_eq!(str_at(&v, "/customer/properties/tier"), "gold");

    // Opportunities: paged on the server with the total, sorted by a column.
    b.goto(&s.url("/app/opportunities?sort=amount")).await;
    b.wait_for_text("#opportunity-count", "Showing 1–50 of 60")
        .await;
    b.wait_for_text("#opportunity-rows", "Lists deal 59").await;
    b.click_on("a[rel=next]").await;
    b.wait_for_text("#opportunity-count", "Showing 51–60 of 60")
        .await;
    b.fill_in("#q", "p7@lists.example").await;
    b.wait_for_text("#opportunity-count", "of 3 opportunities")
        .await;

    // Keys: minting is post/redirect/get, so a reload shows the key no more and mints none.
    b.goto(&s.url("/app/keys")).await;
    b.fill_in("#key-name", "lists bot").await;
    b.click_on("form[action='/app/keys'] button[type=submit]")
        .await;
    let field = b.wait_for("#new-key").await;
    let secret = b.property(&field, "value").await;
    assert!(secret.as_str().is_some_and(|k| k.starts_with("svc_live_")));
    b.execute("location.reload();", json!([])).await;
    b.wait_for_text("#key-count", "keys").await;
    assert!(b.find("#new-key").await.is_none(), "shown once");
    let listed = svc_integration_tests::get_ok(&s, "/api/v1/keys?q=lists%20bot", &a.token).await;
    assert_eq!(listed["total"], json!(1));
    // Revoking asks first: declined, nothing happens; accepted, the key is revoked.
    b.execute("window.confirm = () => false;", json!([])).await;
    b.click_on("#key-rows form[data-confirm] button").await;
    assert!(!text_of(&b, "#key-rows").await.contains("revoked"));
    b.execute("window.confirm = () => true;", json!([])).await;
    b.click_on("#key-rows form[data-confirm] button").await;
    b.wait_for_text("#key-rows", "revoked").await;

    // A phone: the count and the pager fit the screen.
    b.set_window_size(390, 844).await;
    b.goto(&s.url("/app/customers?offset=2950")).await;
    b.wait_for_text("#customer-count", "Showing 2,951–3,000 of 3,000")
        .await;
    b.wait_for("a[rel=prev]").await;
    let fits = b
        .execute(
            "return ['#customer-count', '.pager'].map(s => { const r = document.querySelector(s).getBoundingClientRect(); return r.left >= 0 && r.right <= window.innerWidth; });",
            json!([]),
        )
        .await;
    assert_eq!(fits, json!([true, true]));
    assert!(
        b.find("a[rel=next]").await.is_none(),
        "no next on the last page"
    );
    b.close().await;
}
