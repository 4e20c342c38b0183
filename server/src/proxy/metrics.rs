//! Prometheus metrics of the proxy, rendered in the text exposition format.
//!
//! Hand-written: the text format is a few lines per family, and the metric crates bring
//! registries and global state this needs none of.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ferry_core::pool::BufferPool;
use ferry_core::rt::Runtime;

use super::Proxy;

/// Upper bounds of the latency histogram buckets, in seconds.
const BUCKETS: [f64; 14] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Debug, Default, Clone)]
struct Histogram {
    /// Per bucket (not cumulative); the last slot is `+Inf`.
    counts: [u64; BUCKETS.len() + 1],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, secs: f64) {
        let i = BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(BUCKETS.len());
        if let Some(c) = self.counts.get_mut(i) {
            *c += 1;
        }
        self.sum += secs;
        self.count += 1;
    }
}

/// Request counters and latencies by operation, and byte counters.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    requests: Mutex<BTreeMap<(&'static str, u16), u64>>,
    latency: Mutex<BTreeMap<&'static str, Histogram>>,
    /// Request body bytes received from clients.
    pub bytes_in: AtomicU64,
    /// Response body bytes sent to clients.
    pub bytes_out: AtomicU64,
    /// Bytes copied between backends by the proxy.
    pub copied: AtomicU64,
}

impl Metrics {
    /// Count one request.
    pub fn record(&self, op: &'static str, status: u16, elapsed: Duration) {
        *self
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((op, status))
            .or_default() += 1;
        self.latency
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(op)
            .or_default()
            .observe(elapsed.as_secs_f64());
    }

    /// The text exposition of everything, with the proxy's backends and pools.
    pub fn render<R: Runtime>(&self, p: &Proxy<R>) -> String {
        let mut o = String::with_capacity(8192);
        let requests = self
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        family(
            &mut o,
            "ferry_proxy_requests_total",
            "counter",
            "S3 requests answered, by operation and status.",
        );
        for ((op, status), n) in &requests {
            let _ = writeln!(
                o,
                "ferry_proxy_requests_total{{operation=\"{op}\",status=\"{status}\"}} {n}"
            );
        }
        let latency = self
            .latency
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        family(
            &mut o,
            "ferry_proxy_request_duration_seconds",
            "histogram",
            "Time from request head to the end of the response, by operation.",
        );
        for (op, h) in &latency {
            let mut cumulative = 0;
            for (bound, n) in BUCKETS.iter().zip(h.counts) {
                cumulative += n;
                let _ = writeln!(
                    o,
                    "ferry_proxy_request_duration_seconds_bucket{{operation=\"{op}\",le=\"{bound}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                o,
                "ferry_proxy_request_duration_seconds_bucket{{operation=\"{op}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                o,
                "ferry_proxy_request_duration_seconds_sum{{operation=\"{op}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                o,
                "ferry_proxy_request_duration_seconds_count{{operation=\"{op}\"}} {}",
                h.count
            );
        }
        let bytes = [
            (
                "ferry_proxy_bytes_in_total",
                "Request body bytes received from clients.",
                &self.bytes_in,
            ),
            (
                "ferry_proxy_bytes_out_total",
                "Response body bytes sent to clients.",
                &self.bytes_out,
            ),
            (
                "ferry_proxy_copied_bytes_total",
                "Bytes copied between backends by the proxy.",
                &self.copied,
            ),
        ];
        for (name, help, v) in bytes {
            family(&mut o, name, "counter", help);
            let _ = writeln!(o, "{name} {}", v.load(Ordering::Relaxed));
        }
        family(
            &mut o,
            "ferry_proxy_backend_up",
            "gauge",
            "1 if the backend is healthy.",
        );
        for b in &p.backends {
            let _ = writeln!(
                o,
                "ferry_proxy_backend_up{{backend=\"{}\"}} {}",
                b.id,
                u8::from(b.is_up())
            );
        }
        let per_backend = [
            (
                "ferry_proxy_backend_requests_total",
                "Requests sent to the backend.",
            ),
            (
                "ferry_proxy_backend_failures_total",
                "Connections to the backend that failed.",
            ),
            (
                "ferry_proxy_backend_connects_total",
                "New connections made to the backend (others were reused).",
            ),
            (
                "ferry_proxy_backend_marked_down_total",
                "Times the backend was marked down.",
            ),
        ];
        for (k, (name, help)) in per_backend.iter().enumerate() {
            family(&mut o, name, "counter", help);
            for b in &p.backends {
                let s = &b.stats;
                let v = [&s.requests, &s.failures, &s.connects, &s.marked_down];
                let n = v.get(k).map_or(0, |c| c.load(Ordering::Relaxed));
                let _ = writeln!(o, "{name}{{backend=\"{}\"}} {n}", b.id);
            }
        }
        let pool = BufferPool::global().stats();
        family(
            &mut o,
            "ferry_proxy_buffer_pool_hit_ratio",
            "gauge",
            "Share of buffer requests served by a pooled buffer.",
        );
        let _ = writeln!(o, "ferry_proxy_buffer_pool_hit_ratio {}", pool.hit_rate());
        family(
            &mut o,
            "ferry_proxy_buffer_pool_retained_bytes",
            "gauge",
            "Bytes held by idle pooled buffers.",
        );
        let _ = writeln!(
            o,
            "ferry_proxy_buffer_pool_retained_bytes {}",
            pool.bytes_retained
        );
        family(
            &mut o,
            "ferry_proxy_buffer_pool_gets_total",
            "counter",
            "Buffers taken from the pool.",
        );
        let _ = writeln!(o, "ferry_proxy_buffer_pool_gets_total {}", pool.gets);
        family(
            &mut o,
            "ferry_proxy_open_connections",
            "gauge",
            "Client connections open now.",
        );
        let open = p.server.get().map_or(0, |s| s.active());
        let _ = writeln!(o, "ferry_proxy_open_connections {open}");
        family(
            &mut o,
            "ferry_proxy_accepted_connections_total",
            "counter",
            "Client connections accepted.",
        );
        let accepted = p.server.get().map_or(0, |s| s.accepted());
        let _ = writeln!(o, "ferry_proxy_accepted_connections_total {accepted}");
        o
    }
}

fn family(o: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(o, "# HELP {name} {help}");
    let _ = writeln!(o, "# TYPE {name} {kind}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets() {
        let mut h = Histogram::default();
        h.observe(0.0001);
        h.observe(0.003);
        h.observe(100.0);
        assert_eq!(h.count, 3);
        assert_eq!(h.counts[0], 1);
        assert_eq!(h.counts[3], 1);
        assert_eq!(h.counts[BUCKETS.len()], 1);
    }
}
