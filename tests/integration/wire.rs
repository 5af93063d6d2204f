//! Errors actix-http's HTTP/1 dispatcher answers itself, before any middleware (a request
//! head past its limits, a request that is not HTTP), carry Magnum's body like every other
//! error, and the connection handling around them stays as it was.

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{spawn_app, TestApp};

const TOO_LARGE: &str = "The request's headers are too large: at most 96 headers and 128 KiB for the request line and headers together.";

/// Sends `head` (and nothing else) on a fresh connection; the status, headers and body of the
/// answer, read until the server closes.
async fn raw(app: &TestApp, head: &[u8]) -> (u16, String, Value) {
    let address = app.address.trim_start_matches("http://");
    let mut conn = TcpStream::connect(address).await.expect("connects");
    conn.write_all(head).await.expect("head sent");
    let mut answer = Vec::new();
    // The server may reset the connection after answering, with part of the head unread.
    let _ = conn.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer).to_string();
    let (head, body) = text.split_once("\r\n\r\n").expect("a whole answer");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    (
        status,
        head.to_string(),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

#[track_caller]
fn assert_magnum_error(status: u16, head: &str, body: &Value, expected: u16, detail: &str) {
    assert_eq!(status, expected, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("\r\ncontent-type: application/json\r\n"),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains("\r\nx-openstack-request-id: req-"),
        "{head}"
    );
    let title = detail.split('.').next().unwrap_or(detail);
    assert_eq!(
        body,
        &serde_json::json!({"errors": [{"request_id": "", "code": "client", "status": expected,
            "title": title, "detail": detail, "links": []}]})
    );
}

#[tokio::test]
async fn a_header_past_the_size_limit_gets_431_with_magnums_body() {
    let app = spawn_app().await;
    let big = "a".repeat(129 * 1024);
    let head = format!("GET /v1/clustertemplates HTTP/1.1\r\nhost: x\r\nx-big: {big}\r\n\r\n");
    let (status, head, body) = raw(&app, head.as_bytes()).await;
    assert_magnum_error(status, &head, &body, 431, TOO_LARGE);
}

#[tokio::test]
async fn more_headers_than_the_limit_get_431_with_magnums_body() {
    let app = spawn_app().await;
    let mut head = String::from("GET /v1/clustertemplates HTTP/1.1\r\nhost: x\r\n");
    for n in 0..100 {
        head.push_str(&format!("x-h{n}: v\r\n"));
    }
    head.push_str("\r\n");
    let (status, head, body) = raw(&app, head.as_bytes()).await;
    assert_magnum_error(status, &head, &body, 431, TOO_LARGE);
}

#[tokio::test]
async fn a_request_that_is_not_http_gets_400_with_magnums_body() {
    let app = spawn_app().await;
    let (status, head, body) = raw(&app, b"GET /v1 HTTP/1.1\r\nhost x\r\n\r\n").await;
    assert_magnum_error(
        status,
        &head,
        &body,
        400,
        "The request is not valid HTTP/1.1.",
    );
}

#[tokio::test]
async fn a_large_header_within_the_limit_is_served_and_the_connection_kept() {
    let app = spawn_app().await;
    // A 100 KB token is within the limit: it reaches the application (which answers).
    let token = "t".repeat(100 * 1024);
    let head = format!(
        "GET /v1/clustertemplates HTTP/1.1\r\nhost: x\r\nx-project-id: p\r\nx-user-id: u\r\nx-roles: member\r\nx-big: {token}\r\n\r\nGET /v1/clustertemplates HTTP/1.1\r\nhost: x\r\nconnection: close\r\nx-project-id: p\r\nx-user-id: u\r\nx-roles: member\r\n\r\n"
    );
    let address = app.address.trim_start_matches("http://");
    let mut conn = TcpStream::connect(address).await.expect("connects");
    conn.write_all(head.as_bytes()).await.expect("sent");
    let mut answer = String::new();
    conn.read_to_string(&mut answer).await.expect("read");
    assert_eq!(answer.matches("HTTP/1.1 200 OK\r\n").count(), 2, "{answer}");
    assert_eq!(
        answer.matches("{\"clustertemplates\":[]}").count(),
        2,
        "{answer}"
    );
}
