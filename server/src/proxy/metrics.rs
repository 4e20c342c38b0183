//! What the proxy adds to the front's metrics: its backends' health and counters, the bytes
//! it copied between backends, its configuration reloads and layouts.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use ferry_core::rt::Runtime;

use super::Proxy;
use super::backend::SlowDownReason;
use super::reload::ReloadStats;
use crate::metrics::{counter, family, gauge, ratio};

/// The proxy's own metrics, named `<prefix>_...`, for the configuration in use `p`.
pub(crate) fn render<R: Runtime>(
    p: &Proxy<R>,
    reloads: &ReloadStats,
    o: &mut String,
    prefix: &str,
) {
    let name = format!("{prefix}_config_reloads_total");
    family(
        o,
        &name,
        "counter",
        "Configuration reloads (SIGHUP, POST /admin/reload), applied or refused.",
    );
    for (result, c) in [("applied", &reloads.applied), ("refused", &reloads.refused)] {
        let _ = writeln!(
            o,
            "{name}{{result=\"{result}\"}} {}",
            c.load(Ordering::Relaxed)
        );
    }
    gauge(
        o,
        &format!("{prefix}_config_last_reload_successful"),
        "0 if the last configuration reload was refused (the configuration in use is older).",
        u8::from(!reloads.last_failed.load(Ordering::Relaxed)),
    );
    gauge(
        o,
        &format!("{prefix}_layout_version"),
        "Version of the current layout (0 without [[layout]] blocks).",
        p.version,
    );
    gauge(
        o,
        &format!("{prefix}_layouts_draining"),
        "Previous layouts still configured (being drained).",
        p.previous.len(),
    );
    counter(
        o,
        &format!("{prefix}_copied_bytes_total"),
        "Bytes copied between backends by the proxy.",
        p.shared.copied.load(Ordering::Relaxed),
    );
    let name = format!("{prefix}_backend_up");
    family(o, &name, "gauge", "1 if the backend is healthy.");
    for b in &p.backends {
        let _ = writeln!(o, "{name}{{backend=\"{}\"}} {}", b.id, u8::from(b.is_up()));
    }
    let per_backend = [
        ("backend_requests_total", "Requests sent to the backend."),
        (
            "backend_failures_total",
            "Connections to the backend that failed.",
        ),
        (
            "backend_connects_total",
            "New connections made to the backend (others were reused).",
        ),
        (
            "backend_marked_down_total",
            "Times the backend was marked down.",
        ),
        (
            "backend_queued_total",
            "Requests that waited for a free connection to the backend.",
        ),
        (
            "backend_queue_timeouts_total",
            "Requests that found no free connection to the backend in time (503 SlowDown).",
        ),
        (
            "backend_retries_total",
            "Requests that waited for the backend to come back or went again on a new connection.",
        ),
    ];
    for (k, (suffix, help)) in per_backend.iter().enumerate() {
        let name = format!("{prefix}_{suffix}");
        family(o, &name, "counter", help);
        for b in &p.backends {
            let s = &b.stats;
            let v = [
                &s.requests,
                &s.failures,
                &s.connects,
                &s.marked_down,
                &s.queued,
                &s.queue_timeouts,
                &s.retries,
            ];
            let n = v.get(k).map_or(0, |c| c.load(Ordering::Relaxed));
            let _ = writeln!(o, "{name}{{backend=\"{}\"}} {n}", b.id);
        }
    }
    let name = format!("{prefix}_backend_reuses_total");
    family(
        o,
        &name,
        "counter",
        "Requests sent on a pooled keep-alive connection to the backend.",
    );
    for b in &p.backends {
        let n = b.stats.reuses.load(Ordering::Relaxed);
        let _ = writeln!(o, "{name}{{backend=\"{}\"}} {n}", b.id);
    }
    let name = format!("{prefix}_backend_forwarded_total");
    family(
        o,
        &name,
        "counter",
        "Client requests forwarded to the backend, by auth: passthrough (as the client sent them) or resigned (signed again by the proxy, an aws-chunked body decoded and framed again). The proxy's own requests (fan-outs, copies between backends, checks) are not counted.",
    );
    for b in &p.backends {
        for (auth, c) in [
            ("passthrough", &b.stats.passed_through),
            ("resigned", &b.stats.resigned),
        ] {
            let n = c.load(Ordering::Relaxed);
            let _ = writeln!(o, "{name}{{backend=\"{}\",auth=\"{auth}\"}} {n}", b.id);
        }
    }
    let name = format!("{prefix}_backend_pool_hit_ratio");
    family(
        o,
        &name,
        "gauge",
        "Share of the backend's connections that were reused from its pool (reuses over reuses and connects).",
    );
    for b in &p.backends {
        let (r, c) = (
            b.stats.reuses.load(Ordering::Relaxed),
            b.stats.connects.load(Ordering::Relaxed),
        );
        let _ = writeln!(o, "{name}{{backend=\"{}\"}} {}", b.id, ratio(r, r + c));
    }
    let name = format!("{prefix}_backend_conn_wait_seconds");
    family(
        o,
        &name,
        "histogram",
        "Time requests waited for a connection to the backend (a free slot, then a pooled or new one), those that got one; the others are in backend_queue_timeouts_total and backend_slow_down_total.",
    );
    for b in &p.backends {
        b.stats
            .conn_wait
            .snapshot()
            .render(o, &name, &format!("backend=\"{}\"", b.id));
    }
    let name = format!("{prefix}_backend_waiting");
    family(
        o,
        &name,
        "gauge",
        "Requests waiting for a free connection slot of the backend now.",
    );
    for b in &p.backends {
        let n = b.stats.waiting.load(Ordering::Relaxed);
        let _ = writeln!(o, "{name}{{backend=\"{}\"}} {n}", b.id);
    }
    let name = format!("{prefix}_backend_in_flight");
    family(o, &name, "gauge", "Requests in flight to the backend.");
    for b in &p.backends {
        let _ = writeln!(o, "{name}{{backend=\"{}\"}} {}", b.id, b.in_flight());
    }
    let name = format!("{prefix}_backend_slow_down_total");
    family(
        o,
        &name,
        "counter",
        "503 SlowDown answers for the backend, by reason (down, busy, in_flight, failed, answered_503).",
    );
    for b in &p.backends {
        for (reason, c) in SlowDownReason::ALL.iter().zip(&b.stats.slow_down) {
            let _ = writeln!(
                o,
                "{name}{{backend=\"{}\",reason=\"{}\"}} {}",
                b.id,
                reason.as_str(),
                c.load(Ordering::Relaxed)
            );
        }
    }
}
