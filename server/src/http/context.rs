//! Per-request context visible to code that has no access to the request: the request id
//! (for error bodies) and the rate-limit decision (for response headers). It is a task-local
//! set by the request middleware around the whole handler.

use std::sync::Arc;

use parking_lot::Mutex;

use svc_core::ratelimit::Decision;

#[derive(Debug)]
pub struct RequestContext {
    pub request_id: String,
    rate: Mutex<Option<Decision>>,
}

impl RequestContext {
    pub fn new(request_id: String) -> Arc<Self> {
        Arc::new(RequestContext {
            request_id,
            rate: Mutex::new(None),
        })
    }

    pub fn rate(&self) -> Option<Decision> {
        *self.rate.lock()
    }
}

tokio::task_local! {
    static CURRENT: Arc<RequestContext>;
}

pub async fn scope<F: std::future::Future>(ctx: Arc<RequestContext>, f: F) -> F::Output {
    CURRENT.scope(ctx, f).await
}

/// The id of the request being handled; `None` outside a request.
pub fn request_id() -> Option<String> {
    CURRENT.try_with(|c| c.request_id.clone()).ok()
}

/// Records the rate-limit decision, which the middleware turns into `X-RateLimit-*` headers on
/// whatever response the handler produces (success or error).
pub fn set_rate(decision: Decision) {
    let _ = CURRENT.try_with(|c| *c.rate.lock() = Some(decision));
}
