//! The connection under the HTTP server: errors actix-http's HTTP/1 dispatcher answers itself,
//! before any middleware runs, get Magnum's body too.
//!
//! The dispatcher refuses a request head larger than 128 KiB or with more than 96 headers
//! (431), a request that is not HTTP/1.x (400) and one whose head does not arrive in time
//! (408) with a response of its own: no body, `content-length: 0`, and the connection closed
//! after it. Those limits are constants of actix-http, so they cannot be raised and left to a
//! middleware; instead [`ErrorBodies`] wraps each accepted connection and replaces such a
//! bodiless error response, as it is written, by the same status with Magnum's error body.
//!
//! Nothing the application sends is touched: its error responses always carry a body (the
//! request middleware renders one), and no body it writes holds a raw CR LF (JSON escapes
//! them), so a bodiless 4xx or 5xx head on the wire can only be the dispatcher's.
//!
//! Over HTTPS ([`crate::tls`]) the wrapper sits on the TLS stream, so the same holds there;
//! a client that speaks plain HTTP to the HTTPS port is answered 400 in clear text by
//! [`refuse_plain_http`] (as Go's servers do) instead of seeing the connection reset.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use actix_web::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::error::error_body;

/// The sentence of a dispatcher-made error.
fn sentence(status: StatusCode) -> String {
    match status {
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => {
            "The request's headers are too large: at most 96 headers and 128 KiB for the request line and headers together.".into()
        }
        StatusCode::BAD_REQUEST => "The request is not valid HTTP/1.1.".into(),
        StatusCode::REQUEST_TIMEOUT => {
            "The request's headers did not arrive in time.".into()
        }
        other => format!("{}.", other.canonical_reason().unwrap_or("Error")),
    }
}

/// A connection whose dispatcher-made bodiless error responses are rewritten with Magnum's
/// error body.
pub struct ErrorBodies<T> {
    io: T,
    /// The rewritten response and how much of it is written.
    pending: Vec<u8>,
    written: usize,
    /// A response was rewritten: the dispatcher closes the connection after it, and whatever
    /// it would still write is dropped.
    rewritten: bool,
}

impl<T> ErrorBodies<T> {
    /// The connection underneath (the TLS stream, over HTTPS).
    pub fn get_ref(&self) -> &T {
        &self.io
    }

    pub fn new(io: T) -> Self {
        ErrorBodies {
            io,
            pending: Vec::new(),
            written: 0,
            rewritten: false,
        }
    }
}

/// Where a bodiless error response head starts in `buf`, its length and its status, if `buf`
/// holds one whole.
fn find_bare_error(buf: &[u8]) -> Option<(usize, usize, StatusCode)> {
    let mut from = 0;
    while let Some(offset) = find(&buf[from..], b"HTTP/1.") {
        let start = from + offset;
        from = start + 1;
        let head = &buf[start..];
        // "HTTP/1.1 431 ..."
        let Some(code) = head.get(9..12) else {
            continue;
        };
        if head.get(8) != Some(&b' ') || !matches!(code[0], b'4' | b'5') {
            continue;
        }
        // A status line: the reason phrase is words up to CR LF (text inside a JSON body
        // cannot hold a raw CR LF, so it never passes for one).
        let Some(line_end) = find(head, b"\r\n") else {
            continue;
        };
        let reason_ok = head.get(12) == Some(&b' ')
            && head[13..line_end.max(13)]
                .iter()
                .all(|b| b.is_ascii_alphabetic() || matches!(b, b' ' | b'-' | b'\''));
        if !reason_ok {
            continue;
        }
        let Some(end) = find(head, b"\r\n\r\n") else {
            continue;
        };
        let lines = &head[..end + 2];
        let bare = lines
            .split(|b| *b == b'\n')
            .any(|l| l.eq_ignore_ascii_case(b"content-length: 0\r"));
        let status = std::str::from_utf8(code)
            .ok()
            .and_then(|c| c.parse::<u16>().ok())
            .and_then(|c| StatusCode::from_u16(c).ok());
        if let (true, Some(status)) = (bare, status) {
            return Some((start, end + 4, status));
        }
    }
    None
}

/// Where `needle` first occurs (memchr's vectorised search: every response the service writes
/// passes through here).
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

/// The dispatcher's head `head` (status line and headers, ending in an empty line) with
/// Magnum's body for `status`.
fn rewrite(head: &[u8], status: StatusCode) -> Vec<u8> {
    let body = serde_json::to_vec(&error_body(status, &sentence(status))).unwrap_or_default();
    let mut out = Vec::with_capacity(head.len() + body.len() + 64);
    let text = String::from_utf8_lossy(head);
    for line in text.split("\r\n").filter(|l| !l.is_empty()) {
        if line.to_ascii_lowercase().starts_with("content-length:") {
            continue;
        }
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"content-type: application/json\r\n");
    out.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
    out.extend_from_slice(
        format!(
            "{}: req-{}\r\n\r\n",
            crate::api::REQUEST_ID_HEADER,
            uuid::Uuid::new_v4()
        )
        .as_bytes(),
    );
    out.extend_from_slice(&body);
    out
}

/// Whether the first byte a client sent opens a TLS record (a handshake, 0x16).
pub fn is_tls_handshake(first: u8) -> bool {
    first == 0x16
}

/// Answers a plain HTTP request sent to the HTTPS port: reads its head (briefly, so that
/// closing does not reset the connection under the answer), then writes a 400 with Magnum's
/// body saying to use HTTPS, and closes.
pub async fn refuse_plain_http(mut io: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0_u8; 1024];
    let read_head = async {
        while find(&head, b"\r\n\r\n").is_none() && head.len() < 16 * 1024 {
            match io.read(&mut buf).await {
                Ok(n) if n > 0 => head.extend_from_slice(&buf[..n]),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), read_head).await;
    let status = StatusCode::BAD_REQUEST;
    let body = serde_json::to_vec(&error_body(
        status,
        "This port serves HTTPS: send the request over TLS (an https:// URL).",
    ))
    .unwrap_or_default();
    let mut response = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n{}: req-{}\r\n\r\n",
        body.len(),
        crate::api::REQUEST_ID_HEADER,
        uuid::Uuid::new_v4()
    )
    .into_bytes();
    response.extend_from_slice(&body);
    let _ = io.write_all(&response).await;
    let _ = io.shutdown().await;
}

impl<T: AsyncWrite + Unpin> ErrorBodies<T> {
    /// Writes what is left of a rewritten response.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.pending.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.pending[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for ErrorBodies<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ErrorBodies<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_pending(cx))?;
        if this.rewritten {
            return Poll::Ready(Ok(buf.len()));
        }
        match find_bare_error(buf) {
            // Write up to the error response first, so that it starts the next write.
            Some((start, _, _)) if start > 0 => {
                Pin::new(&mut this.io).poll_write(cx, &buf[..start])
            }
            Some((_, len, status)) => {
                this.pending = rewrite(&buf[..len], status);
                this.written = 0;
                this.rewritten = true;
                // Started now, finished by the next write, flush or shutdown.
                let _ = this.poll_pending(cx)?;
                Poll::Ready(Ok(len))
            }
            None => Pin::new(&mut this.io).poll_write(cx, buf),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BARE_431: &[u8] = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\ndate: Mon, 23 Nov 2026 00:00:00 GMT\r\n\r\n";

    #[test]
    fn a_bodiless_error_head_is_found_after_the_responses_before_it() {
        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
        let mut buf = ok.to_vec();
        buf.extend_from_slice(BARE_431);
        assert_eq!(
            find_bare_error(&buf),
            Some((
                ok.len(),
                BARE_431.len(),
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
            ))
        );
    }

    #[test]
    fn a_status_line_inside_a_body_is_not_taken_for_one() {
        let body =
            b"HTTP/1.1 200 OK\r\ncontent-length: 30\r\n\r\n{\"l\": \"HTTP/1.1 404 Not Found\"}";
        let mut buf = body.to_vec();
        buf.extend_from_slice(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n");
        assert_eq!(find_bare_error(&buf), None);
    }

    #[test]
    fn responses_with_bodies_and_successes_are_left_alone() {
        let with_body = b"HTTP/1.1 404 Not Found\r\ncontent-length: 10\r\ncontent-type: application/json\r\n\r\n{\"a\": \"b\"}";
        assert_eq!(find_bare_error(with_body), None);
        let no_content = b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(find_bare_error(no_content), None);
        // An unfinished head is not taken.
        assert_eq!(find_bare_error(&BARE_431[..40]), None);
    }

    #[test]
    fn the_rewrite_keeps_the_status_and_headers_and_adds_magnums_body() {
        let out = rewrite(BARE_431, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
        let text = String::from_utf8(out).expect("utf-8");
        let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
        assert!(head.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
        assert!(head.contains("\r\nconnection: close\r\n"), "{head}");
        assert!(
            head.contains("\r\ncontent-type: application/json\r\n"),
            "{head}"
        );
        assert!(
            head.contains(&format!("\r\ncontent-length: {}\r\n", body.len())),
            "{head}"
        );
        let v: serde_json::Value = serde_json::from_str(body).expect("json");
        assert_eq!(v["errors"][0]["status"], 431);
        assert_eq!(v["errors"][0]["code"], "client");
        assert!(v["errors"][0]["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("The request's headers are too large")));
    }
}
