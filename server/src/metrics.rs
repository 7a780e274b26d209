//! Request metrics in the Prometheus text format. Routes are labelled by their template
//! (`/api/v1/keys/{id}`), never the raw path, so label cardinality stays bounded.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Upper bounds (seconds) of the latency histogram buckets.
const BUCKETS: [f64; 11] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Debug)]
pub struct Metrics {
    started: Instant,
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    latency: Mutex<BTreeMap<(String, String), Histogram>>,
}

#[derive(Debug, Default, Clone)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// Point-in-time values the registry does not own (limiter sizes and the like).
#[derive(Debug, Default)]
pub struct Gauges {
    pub rate_limiter_keys: usize,
    pub login_limiter_emails: usize,
    pub pending_key_usage: usize,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        Metrics {
            started: Instant::now(),
            requests: Mutex::default(),
            latency: Mutex::default(),
        }
    }

    pub fn observe(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        *self
            .requests
            .lock()
            .entry((method.to_owned(), route.to_owned(), status))
            .or_insert(0) += 1;
        let secs = elapsed.as_secs_f64();
        let mut latency = self.latency.lock();
        let h = latency
            .entry((method.to_owned(), route.to_owned()))
            .or_default();
        for (slot, bound) in h.counts.iter_mut().zip(BUCKETS) {
            if secs <= bound {
                *slot += 1;
            }
        }
        h.count += 1;
        h.sum += secs;
    }

    pub fn render(&self, gauges: &Gauges) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP svc_uptime_seconds Seconds since the process started."
        );
        let _ = writeln!(out, "# TYPE svc_uptime_seconds gauge");
        let _ = writeln!(
            out,
            "svc_uptime_seconds {}",
            self.started.elapsed().as_secs_f64()
        );

        let _ = writeln!(
            out,
            "# HELP svc_http_requests_total HTTP requests by method, route and status."
        );
        let _ = writeln!(out, "# TYPE svc_http_requests_total counter");
        for ((method, route, status), n) in self.requests.lock().iter() {
            let _ = writeln!(
                out,
                "svc_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{status}\"}} {n}",
                escape(method),
                escape(route)
            );
        }

        let _ = writeln!(
            out,
            "# HELP svc_http_request_duration_seconds HTTP request latency."
        );
        let _ = writeln!(out, "# TYPE svc_http_request_duration_seconds histogram");
        for ((method, route), h) in self.latency.lock().iter() {
            let labels = format!("method=\"{}\",route=\"{}\"", escape(method), escape(route));
            for (bound, n) in BUCKETS.iter().zip(h.counts) {
                let _ = writeln!(
                    out,
                    "svc_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "svc_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "svc_http_request_duration_seconds_sum{{{labels}}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "svc_http_request_duration_seconds_count{{{labels}}} {}",
                h.count
            );
        }

        for (name, help, value) in [
            (
                "svc_rate_limiter_keys",
                "Agent keys with live rate-limit state.",
                gauges.rate_limiter_keys,
            ),
            (
                "svc_login_limiter_emails",
                "Emails with recent failed logins.",
                gauges.login_limiter_emails,
            ),
            (
                "svc_pending_key_usage",
                "Key last-used times not yet written.",
                gauges.pending_key_usage,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} gauge");
            let _ = writeln!(out, "{name} {value}");
        }
        out
    }
}

fn escape(label: &str) -> String {
    label
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_histograms() {
        let m = Metrics::new();
        m.observe("GET", "/healthz", 200, Duration::from_millis(2));
        m.observe("GET", "/healthz", 200, Duration::from_millis(300));
        let text = m.render(&Gauges::default());
        assert!(
            text.contains(
                "svc_http_requests_total{method=\"GET\",route=\"/healthz\",status=\"200\"} 2"
            ),
            "{text}"
        );
        assert!(text.contains("le=\"0.0025\"} 1"), "{text}");
        assert!(text.contains("le=\"+Inf\"} 2"), "{text}");
        assert!(text.contains(
            "svc_http_request_duration_seconds_count{method=\"GET\",route=\"/healthz\"} 2"
        ));
    }
}
