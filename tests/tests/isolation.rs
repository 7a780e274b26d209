//! Workspace isolation: walks every operation of the OpenAPI document with a second
//! workspace's credentials and proves nothing of the first workspace can be read, listed,
//! changed or even detected. Routes added later are walked automatically.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use svc_integration_tests::{read, TestServer};

#[tokio::test]
async fn second_workspace_cannot_see_or_touch_the_first() {
    let s = TestServer::start().await;
    let a = s.account().await;
    let a_key = s.agent_key(&a).await;
    let a_legacy = s.legacy_key(&a).await;
    let (_, a_ws_before) = read(
        s.get("/api/v1/workspace")
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("ws"),
    )
    .await;
    let (_, a_keys_before) = read(
        s.get("/api/v1/keys")
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("keys"),
    )
    .await;

    let b = s.account().await;
    let b_key = s.reader_key(&b).await;

    // Anything that would betray workspace A's existence or contents.
    let secrets_of_a = [
        a.workspace_id.clone(),
        a.user_id.clone(),
        a.email.clone(),
        a_key.id.clone(),
        a_legacy.id.clone(),
        a_key.plaintext.clone(),
        a_legacy.plaintext.clone(),
    ];
    let ids_of_a = [
        a_key.id.clone(),
        a_legacy.id.clone(),
        a.workspace_id.clone(),
        a.user_id.clone(),
    ];

    let (_, doc) = read(s.get("/openapi.json").send().await.expect("openapi")).await;
    let paths = doc["paths"].as_object().expect("paths");
    let mut walked = 0;
    for (path, item) in paths {
        for method in item.as_object().expect("item").keys() {
            let m = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            let has_param = path.contains('{');
            let substitutions: Vec<String> = if has_param {
                ids_of_a.to_vec()
            } else {
                vec![String::new()]
            };
            for id in &substitutions {
                let url = substitute(path, id);
                let unknown_url = substitute(path, "key_0000000000000000000unknown");
                for cred in [
                    Cred::Jwt(&b.token),
                    Cred::Bearer(&b_key.plaintext),
                    Cred::Header(&b_key.plaintext),
                ] {
                    let resp = cred
                        .apply(s.request(m.clone(), &url))
                        .json(&json!({}))
                        .send()
                        .await
                        .expect("req");
                    let status = resp.status();
                    let text = resp.text().await.expect("text");
                    for secret in &secrets_of_a {
                        assert!(
                            !text.contains(secret.as_str()),
                            "{method} {url} with {cred:?} leaked {secret}: {text}"
                        );
                    }
                    if has_param {
                        assert!(
                            !status.is_success(),
                            "{method} {url} with {cred:?} succeeded on A's object: {text}"
                        );
                        // Indistinguishable from an id that never existed.
                        let other = cred
                            .apply(s.request(m.clone(), &unknown_url))
                            .json(&json!({}))
                            .send()
                            .await
                            .expect("req");
                        let other_status = other.status();
                        let other_body: Value = other.json().await.unwrap_or(Value::Null);
                        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                        assert_eq!(
                            (status, &body["error"]["code"], &body["error"]["message"]),
                            (
                                other_status,
                                &other_body["error"]["code"],
                                &other_body["error"]["message"]
                            ),
                            "{method} {url} with {cred:?}"
                        );
                    }
                    walked += 1;
                }
            }
        }
    }
    assert!(walked >= 30, "walked only {walked} requests");

    // Workspace A is exactly as it was: keys live and unrevoked, settings unchanged.
    assert_eq!(
        s.get("/api/v1/keys/whoami")
            .bearer_auth(&a_key.plaintext)
            .send()
            .await
            .expect("whoami")
            .status(),
        StatusCode::OK
    );
    let (_, a_ws_after) = read(
        s.get("/api/v1/workspace")
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("ws"),
    )
    .await;
    assert_eq!(a_ws_before, a_ws_after);
    let (_, a_keys_after) = read(
        s.get("/api/v1/keys")
            .bearer_auth(&a.token)
            .send()
            .await
            .expect("keys"),
    )
    .await;
    let ids = |v: &Value| -> Vec<(Value, Value)> {
        v["keys"]
            .as_array()
            .expect("keys")
            .iter()
            .map(|k| (k["id"].clone(), k["revoked"].clone()))
            .collect()
    };
    assert_eq!(ids(&a_keys_before), ids(&a_keys_after));
    s.stop().await;
}

fn substitute(path: &str, id: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        out.push_str(id);
        rest = rest[start..].split_once('}').map(|(_, r)| r).unwrap_or("");
    }
    out.push_str(rest);
    out
}

#[derive(Debug, Clone, Copy)]
enum Cred<'a> {
    Jwt(&'a str),
    Bearer(&'a str),
    Header(&'a str),
}

impl Cred<'_> {
    fn apply(self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self {
            Cred::Jwt(t) | Cred::Bearer(t) => req.bearer_auth(t),
            Cred::Header(k) => req.header("x-api-key", k),
        }
    }
}
