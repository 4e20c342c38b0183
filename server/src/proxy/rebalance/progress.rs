//! What a rebalance has done so far: counters shared by its moves, the progress line on
//! stderr, its Prometheus metrics, and the report at the end.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::metrics::{counter, family, gauge};

/// Error messages kept for the report (the count goes on).
const MAX_ERRORS_KEPT: usize = 20;

/// The counters of a rebalance, updated as it goes; readable from any thread (a test, the
/// metrics listener, the progress line).
#[derive(Debug, Default)]
pub struct Progress {
    /// Objects (versions and delete markers, in versioned buckets) found on a backend that is
    /// not their owner, by the count before the moves.
    pub planned_objects: AtomicU64,
    /// Their bytes.
    pub planned_bytes: AtomicU64,
    /// Counted: the count is over.
    pub planned: AtomicBool,
    /// Objects (versions, delete markers) moved: copied, checked, and removed from where they
    /// were.
    pub moved_objects: AtomicU64,
    /// Their bytes.
    pub moved_bytes: AtomicU64,
    /// Bytes streamed to new owners, moves that failed included (what `--max-bandwidth` bounds).
    pub sent_bytes: AtomicU64,
    /// Of those, the bytes that passed the bandwidth bound: all of them when one is set, none
    /// otherwise.
    pub throttled_bytes: AtomicU64,
    /// Times the bandwidth bound held a move's bytes back (they had to wait for the rate).
    pub throttle_waits: AtomicU64,
    /// Objects on their owner already.
    pub in_place: AtomicU64,
    /// Objects a client overwrote or deleted during their move: the client's write stands, the
    /// stale copy was removed.
    pub superseded: AtomicU64,
    /// SSE-C objects, which cannot be read without their key: left where they are.
    pub skipped_sse_c: AtomicU64,
    /// Versions whose object lock (COMPLIANCE retention) keeps them where they are.
    pub skipped_locked: AtomicU64,
    /// Multipart uploads in progress on a backend that is not their key's owner: they complete
    /// there (their ids name it), and the proxy then moves the object to its owner.
    pub uploads_elsewhere: AtomicU64,
    /// Objects whose move failed (left where they are; a rerun tries again).
    pub errors: AtomicU64,
    /// Whether it is running.
    pub running: AtomicBool,
    first_errors: Mutex<Vec<String>>,
    /// The backends those uploads are on.
    upload_backends: Mutex<Vec<String>>,
}

impl Progress {
    /// Count `n` uploads in progress on `backend`, which is not their key's owner.
    pub(crate) fn uploads_on(&self, backend: &str, n: u64) {
        if n == 0 {
            return;
        }
        self.uploads_elsewhere.fetch_add(n, Ordering::Relaxed);
        let mut on = self
            .upload_backends
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !on.iter().any(|b| b == backend) {
            on.push(backend.to_owned());
        }
    }

    /// Count a failed move, keeping the first messages for the report.
    pub(crate) fn error(&self, what: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(error = %what, "rebalance: a move failed");
        let mut kept = self
            .first_errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if kept.len() < MAX_ERRORS_KEPT {
            kept.push(what);
        }
    }

    /// The first error messages.
    pub fn errors_kept(&self) -> Vec<String> {
        self.first_errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    /// The progress line: objects and bytes done of the total, rate, time left.
    pub fn line(&self, elapsed: Duration) -> String {
        let moved = Self::get(&self.moved_bytes);
        let secs = elapsed.as_secs_f64().max(0.001);
        let rate = Self::get(&self.sent_bytes) as f64 / secs;
        let planned = Self::get(&self.planned_bytes);
        let mut s = format!(
            "rebalance: {}/{} objects, {}/{}, {}/s",
            Self::get(&self.moved_objects),
            Self::get(&self.planned_objects),
            bytes(moved),
            bytes(planned),
            bytes(rate as u64),
        );
        if self.planned.load(Ordering::Relaxed) && rate > 0.0 {
            let left = planned.saturating_sub(moved) as f64 / rate;
            let _ = write!(s, ", ETA {}", eta(left));
        }
        let skipped = Self::get(&self.skipped_sse_c) + Self::get(&self.skipped_locked);
        if skipped > 0 {
            let _ = write!(s, ", {skipped} skipped");
        }
        let errors = Self::get(&self.errors);
        if errors > 0 {
            let _ = write!(s, ", {errors} errors");
        }
        s
    }

    /// Its metrics, named `ferry_rebalance_...`.
    pub fn render_metrics(&self, o: &mut String) {
        let p = "ferry_rebalance";
        for (name, help, c) in [
            (
                "objects_moved_total",
                "Objects (and versions, delete markers) moved to their owner.",
                &self.moved_objects,
            ),
            (
                "bytes_moved_total",
                "Bytes of the objects moved.",
                &self.moved_bytes,
            ),
            (
                "bytes_sent_total",
                "Bytes streamed to new owners, failed moves included.",
                &self.sent_bytes,
            ),
            (
                "bytes_throttled_total",
                "Bytes sent that passed the bandwidth bound (--max-bandwidth): all of them when it is set.",
                &self.throttled_bytes,
            ),
            (
                "throttle_waits_total",
                "Times the bandwidth bound held a move's bytes back until the rate allowed them.",
                &self.throttle_waits,
            ),
            (
                "objects_in_place_total",
                "Objects found on their owner already.",
                &self.in_place,
            ),
            (
                "objects_superseded_total",
                "Objects a client overwrote or deleted while they moved (the stale copy removed).",
                &self.superseded,
            ),
            (
                "errors_total",
                "Moves that failed (the object stays where it was).",
                &self.errors,
            ),
        ] {
            counter(o, &format!("{p}_{name}"), help, Self::get(c));
        }
        let name = format!("{p}_objects_skipped_total");
        family(
            o,
            &name,
            "counter",
            "Objects left where they are, by reason (sse_c: no key to read them; locked: COMPLIANCE retention).",
        );
        for (reason, c) in [
            ("sse_c", &self.skipped_sse_c),
            ("locked", &self.skipped_locked),
        ] {
            let _ = writeln!(o, "{name}{{reason=\"{reason}\"}} {}", Self::get(c));
        }
        gauge(
            o,
            &format!("{p}_objects_planned"),
            "Objects to move, as counted before the moves.",
            Self::get(&self.planned_objects),
        );
        gauge(
            o,
            &format!("{p}_bytes_planned"),
            "Bytes to move, as counted before the moves.",
            Self::get(&self.planned_bytes),
        );
        gauge(
            o,
            &format!("{p}_uploads_elsewhere"),
            "Multipart uploads in progress on a backend that is not their key's owner.",
            Self::get(&self.uploads_elsewhere),
        );
        gauge(
            o,
            &format!("{p}_running"),
            "1 while the rebalance runs.",
            u8::from(self.running.load(Ordering::Relaxed)),
        );
    }
}

/// `1.5 MiB`.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// `1h02m`, `3m05s`, `12s`.
fn eta(secs: f64) -> String {
    let s = secs.round().min(1e9) as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// What a rebalance did, at its end.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RebalanceReport {
    /// Objects (versions, delete markers) found away from their owner by the count.
    pub planned_objects: u64,
    /// Their bytes.
    pub planned_bytes: u64,
    /// Objects moved.
    pub moved_objects: u64,
    /// Their bytes.
    pub moved_bytes: u64,
    /// Bytes streamed, failed moves included.
    pub sent_bytes: u64,
    /// Of those, the bytes that passed the bandwidth bound (all of them when one was set).
    pub throttled_bytes: u64,
    /// Times the bandwidth bound held a move's bytes back.
    pub throttle_waits: u64,
    /// Objects on their owner already.
    pub in_place: u64,
    /// Objects a client overwrote or deleted while they moved.
    pub superseded: u64,
    /// SSE-C objects left where they are.
    pub skipped_sse_c: u64,
    /// Versions kept where they are by COMPLIANCE retention.
    pub skipped_locked: u64,
    /// Multipart uploads in progress away from their key's owner.
    pub uploads_elsewhere: u64,
    /// The backends they are on: to keep declared until they end.
    pub upload_backends: Vec<String>,
    /// Failed moves.
    pub errors: u64,
    /// The first error messages.
    pub error_messages: Vec<String>,
    /// A dry run: nothing was moved.
    pub dry_run: bool,
}

impl RebalanceReport {
    pub(crate) fn of(p: &Progress, dry_run: bool) -> Self {
        let g = Progress::get;
        Self {
            planned_objects: g(&p.planned_objects),
            planned_bytes: g(&p.planned_bytes),
            moved_objects: g(&p.moved_objects),
            moved_bytes: g(&p.moved_bytes),
            sent_bytes: g(&p.sent_bytes),
            throttled_bytes: g(&p.throttled_bytes),
            throttle_waits: g(&p.throttle_waits),
            in_place: g(&p.in_place),
            superseded: g(&p.superseded),
            skipped_sse_c: g(&p.skipped_sse_c),
            skipped_locked: g(&p.skipped_locked),
            uploads_elsewhere: g(&p.uploads_elsewhere),
            upload_backends: p
                .upload_backends
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            errors: g(&p.errors),
            error_messages: p.errors_kept(),
            dry_run,
        }
    }

    /// Objects still away from their owner: SSE-C and locked ones, failed moves. (Uploads in
    /// progress away from their key's owner are not: the proxy moves each object to its owner
    /// when its upload completes, whatever the layouts then.)
    pub fn left_behind(&self) -> u64 {
        self.skipped_sse_c + self.skipped_locked + self.errors
    }

    /// Whether every key now lives on its owner under the current layout, so that the
    /// previous layouts can go from the configuration.
    pub fn previous_layouts_removable(&self) -> bool {
        !self.dry_run && self.left_behind() == 0
    }

    /// The summary `ferry rebalance` prints at its end.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        if self.dry_run {
            let _ = writeln!(
                s,
                "dry run: {} objects ({}) would move; {} are on their owner already",
                self.planned_objects,
                bytes(self.planned_bytes),
                self.in_place
            );
        } else {
            let _ = writeln!(
                s,
                "moved {} objects ({}); {} were on their owner already; {} were overwritten or deleted by clients meanwhile",
                self.moved_objects,
                bytes(self.moved_bytes),
                self.in_place,
                self.superseded
            );
        }
        if self.skipped_sse_c > 0 {
            let _ = writeln!(
                s,
                "{} SSE-C objects were left where they are: they cannot be read without their key (copy them with it, e.g. `aws s3 cp` with --sse-c-key, then run again)",
                self.skipped_sse_c
            );
        }
        if self.skipped_locked > 0 {
            let _ = writeln!(
                s,
                "{} versions under COMPLIANCE retention were copied but cannot be removed from their old owners until their retention ends",
                self.skipped_locked
            );
        }
        if self.uploads_elsewhere > 0 {
            let _ = writeln!(
                s,
                "{} multipart uploads are in progress on backends that are not their key's owner ({}): each completes there and the proxy then moves its object to its owner; keep those backends declared ([[backend]]) until the uploads are completed or aborted",
                self.uploads_elsewhere,
                self.upload_backends.join(", ")
            );
        }
        if self.errors > 0 {
            let _ = writeln!(s, "{} moves failed (run again to retry them):", self.errors);
            for e in &self.error_messages {
                let _ = writeln!(s, "  {e}");
            }
        }
        if self.previous_layouts_removable() {
            let _ = writeln!(
                s,
                "every object is on its owner under the current layout: the previous [[layout]] blocks can now be removed from the configuration (then reload the proxies)"
            );
        } else if !self.dry_run {
            let _ = writeln!(
                s,
                "keep the previous [[layout]] blocks: {} objects are still away from their owner",
                self.left_behind()
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_and_the_summary() {
        let p = Progress::default();
        p.planned_objects.store(10, Ordering::Relaxed);
        p.planned_bytes.store(10 << 20, Ordering::Relaxed);
        p.planned.store(true, Ordering::Relaxed);
        p.moved_objects.store(4, Ordering::Relaxed);
        p.moved_bytes.store(4 << 20, Ordering::Relaxed);
        p.sent_bytes.store(4 << 20, Ordering::Relaxed);
        let line = p.line(Duration::from_secs(2));
        assert_eq!(
            line,
            "rebalance: 4/10 objects, 4.0 MiB/10.0 MiB, 2.0 MiB/s, ETA 3s"
        );
        p.error("a/b: backend n2 failed".into());
        assert!(p.line(Duration::from_secs(2)).ends_with(", 1 errors"));
        let r = RebalanceReport::of(&p, false);
        assert!(!r.previous_layouts_removable());
        assert!(
            r.summary().contains("a/b: backend n2 failed"),
            "{}",
            r.summary()
        );
        let done = RebalanceReport {
            moved_objects: 3,
            ..RebalanceReport::default()
        };
        assert!(done.previous_layouts_removable());
        assert!(done.summary().contains("can now be removed"));
        assert!(
            !RebalanceReport {
                dry_run: true,
                ..done
            }
            .previous_layouts_removable()
        );
        assert_eq!(eta(3725.0), "1h02m");
        assert_eq!(bytes(1536), "1.5 KiB");
        let mut m = String::new();
        p.render_metrics(&mut m);
        assert!(m.contains("ferry_rebalance_objects_moved_total 4\n"), "{m}");
        assert!(
            m.contains("ferry_rebalance_bytes_throttled_total 0\n"),
            "{m}"
        );
        assert!(m.contains("ferry_rebalance_objects_skipped_total{reason=\"sse_c\"} 0\n"));
    }
}
