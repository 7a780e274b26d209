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
    pub read_models: ReadModelGauges,
}

/// The in-memory read models, summed over workspaces (no workspace is named on this public
/// endpoint: the log line of a workspace over its budget names it).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReadModelGauges {
    pub built: usize,
    pub building: usize,
    /// Workspaces whose model outgrew `--read-model-mb`: their reads run the row path.
    pub over_budget: usize,
    pub not_built: usize,
    pub bytes: usize,
    /// Nodes changed since their workspace's model was built (read through RocksDB).
    pub touched: u64,
}

impl ReadModelGauges {
    pub fn from_states(states: &[svc_engine::ReadModelState]) -> Self {
        use svc_engine::ReadModelState as S;
        let mut g = ReadModelGauges::default();
        for s in states {
            match s {
                S::Ready { bytes, touched } => {
                    g.built += 1;
                    g.bytes += bytes;
                    g.touched += touched;
                }
                S::Building => g.building += 1,
                S::OverBudget { .. } => g.over_budget += 1,
                S::NotBuilt | S::Off => g.not_built += 1,
            }
        }
        g
    }
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
            (
                "svc_read_model_bytes",
                "Bytes of the built in-memory read models, all workspaces.",
                gauges.read_models.bytes,
            ),
            (
                "svc_read_model_touched_nodes",
                "Nodes changed since their workspace's read model was built.",
                gauges.read_models.touched as usize,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} gauge");
            let _ = writeln!(out, "{name} {value}");
        }
        let rm = &gauges.read_models;
        let _ = writeln!(
            out,
            "# HELP svc_read_model_workspaces Workspaces by read-model state (over_budget: \
             larger than --read-model-mb, reads run row by row)."
        );
        let _ = writeln!(out, "# TYPE svc_read_model_workspaces gauge");
        for (state, n) in [
            ("built", rm.built),
            ("building", rm.building),
            ("over_budget", rm.over_budget),
            ("not_built", rm.not_built),
        ] {
            let _ = writeln!(out, "svc_read_model_workspaces{{state=\"{state}\"}} {n}");
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

    #[test]
    fn renders_read_model_states_summed() {
        use svc_engine::ReadModelState as S;
        let states = [
            S::Ready {
                bytes: 100,
                touched: 2,
            },
            S::Ready {
                bytes: 50,
                touched: 0,
            },
            S::OverBudget { budget: 1 << 20 },
            S::Building,
            S::NotBuilt,
        ];
        let gauges = Gauges {
            read_models: ReadModelGauges::from_states(&states),
            ..Gauges::default()
        };
        let text = Metrics::new().render(&gauges);
        for line in [
            "svc_read_model_bytes 150",
            "svc_read_model_touched_nodes 2",
            "svc_read_model_workspaces{state=\"built\"} 2",
            "svc_read_model_workspaces{state=\"over_budget\"} 1",
            "svc_read_model_workspaces{state=\"building\"} 1",
            "svc_read_model_workspaces{state=\"not_built\"} 1",
        ] {
            assert!(text.contains(line), "{line} missing from {text}");
        }
    }
}
