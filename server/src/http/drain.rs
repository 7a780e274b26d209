//! Reads the rest of a request body that the handler left unread, before the response goes
//! out, so an early answer (429, 401, 403, a path error) does not cost the client its
//! keep-alive connection.
//!
//! Why: when a handler drops a request body whose bytes have not all arrived, hyper's HTTP/1
//! connection tries one non-blocking read to finish it and otherwise stops reading and closes
//! the connection after the response. A client whose body lands a moment after the head (a
//! separate TCP segment) then loses the connection instead of reading its 429, or reuses a
//! connection the server is closing. See docs/decisions.md, "429s that closed the connection".
//!
//! The middleware hands the handler a body that reads through a shared slot and keeps the slot;
//! whatever the handler did not read is drained here, bounded in size and time. Past those
//! bounds the response says `Connection: close`, so the client knows not to reuse it.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use parking_lot::Mutex;

/// How long an unread remainder may take to arrive before the connection is given up.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// The request body, shared between the handler (through [`Retained::body`]) and the
/// middleware (through [`Retained::drain`]).
#[derive(Clone, Default)]
pub struct Retained {
    slot: Arc<Mutex<Option<Body>>>,
    /// Never read the remainder; answer with `Connection: close` instead.
    no_drain: bool,
}

impl std::fmt::Debug for Retained {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retained")
            .field("unread", &self.slot.lock().is_some())
            .field("no_drain", &self.no_drain)
            .finish()
    }
}

impl Retained {
    pub fn new(body: Body) -> Retained {
        Retained {
            slot: Arc::new(Mutex::new(Some(body))),
            no_drain: false,
        }
    }

    /// Whatever the handler leaves unread is not read here; the response closes instead.
    pub fn close_instead_of_draining(&mut self) {
        self.no_drain = true;
    }

    /// The body the handler reads; reading it to the end empties the slot.
    pub fn body(&self) -> Body {
        Body::new(SharedBody {
            slot: Arc::clone(&self.slot),
        })
    }

    /// Reads whatever is left of the body (at most `limit` bytes, within [`DRAIN_TIMEOUT`]) and
    /// returns the response, marked `Connection: close` when the remainder could not be read.
    pub async fn drain(self, limit: usize, mut response: Response) -> Response {
        let left = self.slot.lock().take();
        let Some(body) = left else {
            return response;
        };
        if body.is_end_stream() {
            return response;
        }
        // An oversize body is not worth reading (413), declared or found while reading; nor is
        // one the client has not sent yet (see `close_instead_of_draining`).
        let skip = self.no_drain
            || response.status() == StatusCode::PAYLOAD_TOO_LARGE
            || body.size_hint().exact().is_some_and(|n| n > limit as u64);
        let drained = !skip
            && tokio::time::timeout(DRAIN_TIMEOUT, read_to_end(body, limit))
                .await
                .unwrap_or(false);
        if !drained {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

/// Discards the body's frames; false on an error or past `limit` bytes.
async fn read_to_end(mut body: Body, limit: usize) -> bool {
    let mut read = 0usize;
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            None => return true,
            Some(Err(_)) => return false,
            Some(Ok(frame)) => {
                read += frame.data_ref().map_or(0, Bytes::len);
                if read > limit {
                    return false;
                }
            }
        }
    }
}

struct SharedBody {
    slot: Arc<Mutex<Option<Body>>>,
}

impl HttpBody for SharedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let mut slot = self.slot.lock();
        let Some(body) = slot.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(body).poll_frame(cx);
        // The end or an error: nothing is left to drain.
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            *slot = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.slot.lock().as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.slot
            .lock()
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Body::size_hint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn collect(body: Body) -> Vec<u8> {
        axum::body::to_bytes(body, usize::MAX)
            .await
            .expect("body")
            .to_vec()
    }

    #[tokio::test]
    async fn the_handler_reads_the_whole_body_through_the_slot() {
        let retained = Retained::new(Body::from("hello"));
        assert_eq!(collect(retained.body()).await, b"hello");
        let response = retained.drain(10, Response::new(Body::empty())).await;
        assert!(response.headers().get(header::CONNECTION).is_none());
    }

    #[tokio::test]
    async fn an_unread_body_is_drained_and_the_connection_kept() {
        let retained = Retained::new(Body::from("left unread"));
        drop(retained.body());
        let response = retained
            .clone()
            .drain(100, Response::new(Body::empty()))
            .await;
        assert!(response.headers().get(header::CONNECTION).is_none());
        assert!(retained.slot.lock().is_none(), "drained");
    }

    #[tokio::test]
    async fn a_body_not_to_be_drained_closes_the_connection() {
        let mut retained = Retained::new(Body::from("not sent yet"));
        retained.close_instead_of_draining();
        let response = retained.drain(100, Response::new(Body::empty())).await;
        assert_eq!(response.headers()[header::CONNECTION], "close");
    }

    #[tokio::test]
    async fn a_remainder_past_the_limit_closes_the_connection() {
        let retained = Retained::new(Body::from(vec![0u8; 64]));
        let response = retained.drain(16, Response::new(Body::empty())).await;
        assert_eq!(response.headers()[header::CONNECTION], "close");
    }
}
