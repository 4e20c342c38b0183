//! The S3 front's request metrics, the same for node and proxy (named `ferry_<server>_...`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use ferry_core::pool::BufferPool;

use crate::metrics::{Histogram, counter, counter_seconds, family, gauge};

/// Request counters and latencies by operation, and body byte counters.
#[derive(Debug, Default)]
pub(crate) struct RequestMetrics {
    requests: Mutex<BTreeMap<(&'static str, u16), u64>>,
    per_op: Mutex<BTreeMap<&'static str, PerOp>>,
    /// Request body bytes received from clients.
    bytes_in: AtomicU64,
    /// Response body bytes sent to clients.
    bytes_out: AtomicU64,
    /// Requests being served now.
    in_flight: AtomicU64,
}

/// A request being served, counted in `_requests_in_flight` until dropped.
#[derive(Debug)]
pub(crate) struct InFlight<'a>(&'a AtomicU64);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What the requests of one operation took.
#[derive(Debug, Default, Clone)]
struct PerOp {
    latency: Histogram,
    /// CPU time (`crate::cpu`), nanoseconds.
    cpu_ns: u64,
    bytes_in: u64,
    bytes_out: u64,
}

/// Connection counts of a listener, for the gauges.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Connections {
    /// Open now.
    pub open: usize,
    /// Accepted since the start.
    pub accepted: u64,
    /// Closed at once since the start: the cap was reached and none was idle.
    pub refused: u64,
    /// Idle ones closed since the start to make room for new ones.
    pub evicted: u64,
}

impl RequestMetrics {
    /// Count a request as in flight until the guard is dropped: from its head to the end of
    /// its answer.
    pub(crate) fn enter(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(&self.in_flight)
    }

    /// Count one request: its time, body bytes (in, out) and CPU time.
    pub(crate) fn record(
        &self,
        op: &'static str,
        status: u16,
        elapsed: Duration,
        (bytes_in, bytes_out): (u64, u64),
        cpu: Duration,
    ) {
        *self
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((op, status))
            .or_default() += 1;
        {
            let mut per_op = self.per_op.lock().unwrap_or_else(PoisonError::into_inner);
            let o = per_op.entry(op).or_default();
            o.latency.observe(elapsed.as_secs_f64());
            o.cpu_ns += u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX);
            o.bytes_in += bytes_in;
            o.bytes_out += bytes_out;
        }
        self.bytes_in.fetch_add(bytes_in, Ordering::Relaxed);
        self.bytes_out.fetch_add(bytes_out, Ordering::Relaxed);
    }

    /// The text exposition of the request metrics, the buffer pool and the connections, every
    /// name starting with `prefix` (`ferry_node`, `ferry_proxy`).
    pub(crate) fn render(&self, o: &mut String, prefix: &str, conns: Connections) {
        let requests = self
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let name = format!("{prefix}_requests_total");
        family(
            o,
            &name,
            "counter",
            "S3 requests answered, by operation and status.",
        );
        for ((op, status), n) in &requests {
            let _ = writeln!(o, "{name}{{operation=\"{op}\",status=\"{status}\"}} {n}");
        }
        gauge(
            o,
            &format!("{prefix}_requests_in_flight"),
            "S3 requests being served now: head read, answer not finished.",
            self.in_flight.load(Ordering::Relaxed),
        );
        let per_op = self
            .per_op
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let name = format!("{prefix}_request_duration_seconds");
        family(
            o,
            &name,
            "histogram",
            "Time from request head to the end of the response, by operation.",
        );
        for (op, p) in &per_op {
            p.latency.render(o, &name, &format!("operation=\"{op}\""));
        }
        let name = format!("{prefix}_request_cpu_seconds_total");
        family(
            o,
            &name,
            "counter",
            "CPU time of the requests, by operation: their polls on the thread CPU clock and \
             the blocking work they handed off.",
        );
        for (op, p) in &per_op {
            let secs = p.cpu_ns as f64 / 1e9;
            let _ = writeln!(o, "{name}{{operation=\"{op}\"}} {secs}");
        }
        for (dir, help, get) in [
            (
                "in",
                "Request body bytes received from clients, by operation.",
                (|p: &PerOp| p.bytes_in) as fn(&PerOp) -> u64,
            ),
            (
                "out",
                "Response body bytes sent to clients, by operation.",
                |p: &PerOp| p.bytes_out,
            ),
        ] {
            let name = format!("{prefix}_request_bytes_{dir}_total");
            family(o, &name, "counter", help);
            for (op, p) in &per_op {
                let _ = writeln!(o, "{name}{{operation=\"{op}\"}} {}", get(p));
            }
        }
        counter_seconds(
            o,
            &format!("{prefix}_process_cpu_seconds_total"),
            "CPU time of the whole process (every thread; a local cluster's node and proxy share it).",
            crate::cpu::process_cpu().as_secs_f64(),
        );
        counter(
            o,
            &format!("{prefix}_bytes_in_total"),
            "Request body bytes received from clients.",
            self.bytes_in.load(Ordering::Relaxed),
        );
        counter(
            o,
            &format!("{prefix}_bytes_out_total"),
            "Response body bytes sent to clients.",
            self.bytes_out.load(Ordering::Relaxed),
        );
        let pool = BufferPool::global().stats();
        gauge(
            o,
            &format!("{prefix}_buffer_pool_hit_ratio"),
            "Share of buffer requests served by a pooled buffer.",
            pool.hit_rate(),
        );
        gauge(
            o,
            &format!("{prefix}_buffer_pool_retained_bytes"),
            "Bytes held by idle pooled buffers.",
            pool.bytes_retained,
        );
        counter(
            o,
            &format!("{prefix}_buffer_pool_gets_total"),
            "Buffers taken from the pool.",
            pool.gets,
        );
        counter(
            o,
            &format!("{prefix}_buffer_pool_hits_total"),
            "Buffers taken that were pooled ones (the rest were allocated: the pool never waits).",
            pool.hits,
        );
        counter(
            o,
            &format!("{prefix}_buffer_pool_misses_total"),
            "Buffers taken that had to be allocated.",
            pool.misses,
        );
        gauge(
            o,
            &format!("{prefix}_open_connections"),
            "Client connections open now.",
            conns.open,
        );
        counter(
            o,
            &format!("{prefix}_accepted_connections_total"),
            "Client connections accepted.",
            conns.accepted,
        );
        counter(
            o,
            &format!("{prefix}_refused_connections_total"),
            "Client connections closed at once: the connection cap was reached, none was idle.",
            conns.refused,
        );
        counter(
            o,
            &format!("{prefix}_evicted_connections_total"),
            "Idle client connections closed to make room at the connection cap.",
            conns.evicted,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_render_by_operation() {
        let m = RequestMetrics::default();
        m.record(
            "PutObject",
            200,
            Duration::from_millis(3),
            (1000, 0),
            Duration::from_micros(1500),
        );
        m.record(
            "GetObject",
            200,
            Duration::from_millis(1),
            (0, 1000),
            Duration::from_micros(250),
        );
        m.record(
            "GetObject",
            404,
            Duration::from_millis(1),
            (0, 0),
            Duration::from_micros(250),
        );
        let mut o = String::new();
        m.render(&mut o, "ferry_node", Connections::default());
        for want in [
            "ferry_node_requests_total{operation=\"PutObject\",status=\"200\"} 1",
            "ferry_node_request_duration_seconds_count{operation=\"GetObject\"} 2",
            "ferry_node_bytes_in_total 1000",
            "ferry_node_request_cpu_seconds_total{operation=\"PutObject\"} 0.0015\n",
            "ferry_node_request_cpu_seconds_total{operation=\"GetObject\"} 0.0005\n",
            "ferry_node_request_bytes_in_total{operation=\"PutObject\"} 1000\n",
            "ferry_node_request_bytes_out_total{operation=\"GetObject\"} 1000\n",
            "ferry_node_process_cpu_seconds_total ",
            "ferry_node_bytes_out_total 1000",
            "ferry_node_open_connections 0",
            "ferry_node_refused_connections_total 0",
            "ferry_node_evicted_connections_total 0",
        ] {
            assert!(o.contains(want), "{want} in\n{o}");
        }
    }
}
