//! Process-level behaviour: health, readiness, metrics, request ids, the error body on
//! router-level failures, body limits, JSON-only bodies, OpenAPI and Swagger UI.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use svc_integration_tests::{expect_error, read, TestServer};

#[tokio::test]
async fn health_and_readiness() {
    let s = TestServer::start().await;
    let (status, body) = read(s.get("/healthz").send().await.expect("healthz")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({"status": "ok"}));
    let (status, body) = read(s.get("/readyz").send().await.expect("readyz")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"status": "ready"}));
    s.stop().await;
}

#[tokio::test]
async fn every_response_has_a_fresh_request_id_and_nosniff() {
    let s = TestServer::start().await;
    let mut seen = std::collections::HashSet::new();
    for path in [
        "/healthz",
        "/healthz",
        "/nope",
        "/api/v1/keys",
        "/app/login",
    ] {
        let resp = s.get(path).send().await.expect("request");
        assert_eq!(
            resp.headers()
                .get("x-content-type-options")
                .and_then(|v| v.to_str().ok()),
            Some("nosniff"),
            "{path}"
        );
        let id = resp
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .expect("x-request-id")
            .to_owned();
        assert!(id.starts_with("req_"), "{id}");
        assert!(seen.insert(id), "request ids repeat");
    }
    s.stop().await;
}

#[tokio::test]
async fn unknown_route_is_404_with_error_body() {
    let s = TestServer::start().await;
    expect_error(
        s.get("/api/v1/nothing-here").send().await.expect("req"),
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    expect_error(
        s.post("/").send().await.expect("req"),
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    s.stop().await;
}

#[tokio::test]
async fn wrong_method_is_405_with_error_body_and_allow() {
    let s = TestServer::start().await;
    let resp = s
        .request(Method::DELETE, "/healthz")
        .send()
        .await
        .expect("req");
    let allow = resp
        .headers()
        .get("allow")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    expect_error(resp, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed").await;
    assert!(allow.contains("GET"), "Allow: {allow:?}");
    let resp = s
        .request(Method::PATCH, "/api/v1/keys")
        .send()
        .await
        .expect("req");
    expect_error(resp, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed").await;
    s.stop().await;
}

#[tokio::test]
async fn non_json_bodies_are_415_and_malformed_json_400() {
    let s = TestServer::start().await;
    let resp = s
        .post("/api/auth/register")
        .header("content-type", "text/plain")
        .body("email=a@b.c")
        .send()
        .await
        .expect("req");
    expect_error(
        resp,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    )
    .await;
    let resp = s
        .post("/api/auth/register")
        .body("{}")
        .send()
        .await
        .expect("req");
    expect_error(
        resp,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    )
    .await;

    let resp = s
        .post("/api/auth/register")
        .header("content-type", "application/json")
        .body("{\"email\": ")
        .send()
        .await
        .expect("req");
    expect_error(resp, StatusCode::BAD_REQUEST, "invalid_json").await;

    let resp = s
        .post("/api/auth/register")
        .json(&json!({"email": 5}))
        .send()
        .await
        .expect("req");
    expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
    s.stop().await;
}

#[tokio::test]
async fn bodies_over_one_mebibyte_are_413() {
    let s = TestServer::start().await;
    let big = format!(
        "{{\"email\": \"{}\", \"password\": \"x\", \"name\": \"y\"}}",
        "a".repeat(1024 * 1024 + 10)
    );
    let resp = s
        .post("/api/auth/register")
        .header("content-type", "application/json")
        .body(big.clone())
        .send()
        .await
        .expect("req");
    expect_error(resp, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;

    // Chunked (no Content-Length): the limit applies while the body is read.
    let raw = raw_chunked_post(&s.base, "/api/auth/register", big.as_bytes()).await;
    assert!(raw.starts_with("HTTP/1.1 413"), "{raw}");
    assert!(raw.contains("\"code\":\"payload_too_large\""), "{raw}");

    // Just under the limit is read and judged on its content.
    let ok_size = format!(
        "{{\"email\": \"a@b.c\", \"password\": \"x\", \"name\": \"{}\"}}",
        "n".repeat(1000)
    );
    let resp = s
        .post("/api/auth/register")
        .header("content-type", "application/json")
        .body(ok_size)
        .send()
        .await
        .expect("req");
    expect_error(resp, StatusCode::BAD_REQUEST, "invalid_input").await;
    s.stop().await;
}

/// Sends a chunked POST over a raw connection (no Content-Length) and returns the response
/// head and body as text.
async fn raw_chunked_post(base: &str, path: &str, body: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let conn = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut rd, mut wr) = conn.into_split();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    let body = body.to_vec();
    // Write and read at once: the server answers 413 (and closes) before the body is all sent.
    let writer = tokio::spawn(async move {
        wr.write_all(head.as_bytes()).await?;
        for chunk in body.chunks(16 * 1024) {
            wr.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                .await?;
            wr.write_all(chunk).await?;
            wr.write_all(b"\r\n").await?;
        }
        wr.write_all(b"0\r\n\r\n").await
    });
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = rd.read(&mut buf).await {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    let _ = writer.await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn metrics_count_requests_by_route_template() {
    let s = TestServer::start().await;
    for _ in 0..3 {
        s.get("/healthz").send().await.expect("healthz");
    }
    s.request(Method::DELETE, "/api/v1/keys/key_whatever")
        .send()
        .await
        .expect("delete");
    let resp = s.get("/metrics").send().await.expect("metrics");
    assert_eq!(resp.status(), StatusCode::OK);
    let ctype = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(ctype.starts_with("text/plain"), "{ctype}");
    let text = resp.text().await.expect("text");
    assert!(
        text.contains(r#"svc_http_requests_total{method="GET",route="/healthz",status="200"} 3"#),
        "{text}"
    );
    // Routes are labelled by template, never by the raw id.
    assert!(
        text.contains(r#"route="/api/v1/keys/{id}",status="401""#),
        "{text}"
    );
    assert!(!text.contains("key_whatever"));
    assert!(text.contains("svc_http_request_duration_seconds_bucket"));
    s.stop().await;
}

/// Every route the service serves, as (method, OpenAPI path).
pub const ROUTES: &[(&str, &str)] = &[
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
    ("post", "/api/auth/register"),
    ("post", "/api/auth/login"),
    ("get", "/api/auth/session"),
    ("get", "/api/v1/workspace"),
    ("put", "/api/v1/workspace"),
    ("post", "/api/v1/keys"),
    ("get", "/api/v1/keys"),
    ("post", "/api/v1/keys/legacy"),
    ("get", "/api/v1/keys/whoami"),
    ("delete", "/api/v1/keys/{id}"),
];

#[tokio::test]
async fn openapi_document_is_3_1_and_lists_every_route() {
    let s = TestServer::start().await;
    let (status, doc) = read(s.get("/openapi.json").send().await.expect("openapi")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        doc["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1")),
        "{}",
        doc["openapi"]
    );
    assert!(doc.pointer("/info/title").and_then(Value::as_str).is_some());
    assert!(doc
        .pointer("/info/version")
        .and_then(Value::as_str)
        .is_some());
    let paths = doc["paths"].as_object().expect("paths");
    for (method, path) in ROUTES {
        let op = paths.get(*path).and_then(|p| p.get(*method));
        assert!(
            op.is_some(),
            "{method} {path} missing from the OpenAPI document"
        );
        let responses = op
            .and_then(|o| o["responses"].as_object())
            .expect("responses");
        assert!(
            !responses.is_empty(),
            "{method} {path} documents no responses"
        );
    }
    // And nothing documented that is not served: each documented operation answers something
    // other than the router's 404/405.
    for (path, item) in paths {
        for method in item.as_object().expect("path item").keys() {
            let url = path.replace("{id}", "key_doesnotexist");
            let m = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            let resp = s
                .request(m, &url)
                .header("content-type", "application/json")
                .body("{}")
                .send()
                .await
                .expect("req");
            let (st, body) = read(resp).await;
            assert_ne!(st, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
            let code = body
                .pointer("/error/code")
                .and_then(Value::as_str)
                .unwrap_or("");
            assert!(
                !(st == StatusCode::NOT_FOUND
                    && body.pointer("/error/message") == Some(&json!("no such route"))),
                "{method} {path}: {code}"
            );
        }
    }
    // Every $ref resolves inside the document.
    let text = doc.to_string();
    for piece in text.split("\"$ref\":\"").skip(1) {
        let target = piece.split('"').next().expect("ref");
        let pointer = target.strip_prefix('#').expect("local ref");
        assert!(doc.pointer(pointer).is_some(), "dangling $ref {target}");
    }
    // Security schemes exist for the credentials the service takes.
    for scheme in ["jwt", "agent_key", "api_key"] {
        assert!(
            doc.pointer(&format!("/components/securitySchemes/{scheme}"))
                .is_some(),
            "{scheme}"
        );
    }
    s.stop().await;
}

#[tokio::test]
async fn swagger_ui_is_served_from_vendored_assets() {
    let s = TestServer::start().await;
    let resp = s.get("/docs/").send().await.expect("docs");
    assert_eq!(resp.status(), StatusCode::OK);
    let html = resp.text().await.expect("html");
    assert!(html.contains("swagger"), "{html}");
    // The page's script and style come from this server, not a CDN.
    assert!(
        !html.contains("https://"),
        "docs page references an external URL"
    );
    for asset in [
        "/docs/swagger-ui.css",
        "/docs/swagger-ui-bundle.js",
        "/docs/swagger-initializer.js",
    ] {
        let resp = s.get(asset).send().await.expect("asset");
        assert_eq!(resp.status(), StatusCode::OK, "{asset}");
        assert!(!resp.bytes().await.expect("bytes").is_empty(), "{asset}");
    }
    let init = s
        .get("/docs/swagger-initializer.js")
        .send()
        .await
        .expect("init")
        .text()
        .await
        .expect("text");
    assert!(init.contains("/openapi.json"), "{init}");
    s.stop().await;
}
