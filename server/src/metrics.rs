//! Prometheus' text exposition format: latency histograms and the lines of a family. The S3
//! front's request metrics ([`crate::front::metrics`]) and the store's are written with these.
//!
//! Hand-written: the text format is a few lines per family, and the metric crates bring
//! registries and global state this needs none of.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the latency histogram buckets, in seconds.
const BUCKETS: [f64; 14] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Latencies, bucketed.
#[derive(Debug, Default, Clone)]
pub(crate) struct Histogram {
    /// Per bucket (not cumulative); the last slot is `+Inf`.
    counts: [u64; BUCKETS.len() + 1],
    sum: f64,
    count: u64,
}

impl Histogram {
    /// Count one observation of `secs` seconds.
    pub(crate) fn observe(&mut self, secs: f64) {
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

    /// Observations so far.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// Write the histogram `name` with the label `labels` (`key="value"`, or empty).
    pub(crate) fn render(&self, o: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (bound, n) in BUCKETS.iter().zip(self.counts) {
            cumulative += n;
            let _ = writeln!(
                o,
                "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}"
            );
        }
        let _ = writeln!(
            o,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.count
        );
        let braces = |l: &str| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{{{l}}}")
            }
        };
        let _ = writeln!(o, "{name}_sum{} {}", braces(labels), self.sum);
        let _ = writeln!(o, "{name}_count{} {}", braces(labels), self.count);
    }
}

/// Waits, bucketed like [`Histogram`] but counted with atomics: for events too frequent to take
/// a lock for (every blocking-pool job, every wait for a backend connection).
#[derive(Debug, Default)]
pub(crate) struct AtomicHistogram {
    /// Per bucket (not cumulative); the last slot is `+Inf`.
    counts: [AtomicU64; BUCKETS.len() + 1],
    sum_ns: AtomicU64,
}

impl AtomicHistogram {
    /// Count one observation of `d`.
    pub(crate) fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(BUCKETS.len());
        if let Some(c) = self.counts.get(i) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// What it holds now, as a [`Histogram`] (counts read one by one: a scrape racing
    /// observations may see the sum and the buckets a few events apart).
    pub(crate) fn snapshot(&self) -> Histogram {
        let mut h = Histogram::default();
        for (to, from) in h.counts.iter_mut().zip(&self.counts) {
            *to = from.load(Ordering::Relaxed);
        }
        h.count = h.counts.iter().sum();
        h.sum = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        h
    }
}

/// A ratio gauge: `part / whole`, 0 when `whole` is 0.
pub(crate) fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The `# HELP` and `# TYPE` lines of a family.
pub(crate) fn family(o: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(o, "# HELP {name} {help}");
    let _ = writeln!(o, "# TYPE {name} {kind}");
}

/// A counter without labels.
pub(crate) fn counter(o: &mut String, name: &str, help: &str, value: u64) {
    family(o, name, "counter", help);
    let _ = writeln!(o, "{name} {value}");
}

/// A counter of seconds without labels.
pub(crate) fn counter_seconds(o: &mut String, name: &str, help: &str, secs: f64) {
    family(o, name, "counter", help);
    let _ = writeln!(o, "{name} {secs}");
}

/// A gauge without labels.
pub(crate) fn gauge(o: &mut String, name: &str, help: &str, value: impl std::fmt::Display) {
    family(o, name, "gauge", help);
    let _ = writeln!(o, "{name} {value}");
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
        let mut o = String::new();
        h.render(&mut o, "x_seconds", "op=\"a\"");
        assert!(
            o.contains("x_seconds_bucket{op=\"a\",le=\"0.005\"} 2\n"),
            "{o}"
        );
        assert!(
            o.contains("x_seconds_bucket{op=\"a\",le=\"+Inf\"} 3\n"),
            "{o}"
        );
        assert!(o.contains("x_seconds_count{op=\"a\"} 3\n"), "{o}");
        let mut o = String::new();
        h.render(&mut o, "y_seconds", "");
        assert!(o.contains("y_seconds_bucket{le=\"+Inf\"} 3\n"), "{o}");
        assert!(o.contains("y_seconds_sum "), "{o}");
    }

    #[test]
    fn atomic_histogram_buckets_as_the_plain_one() {
        let a = AtomicHistogram::default();
        let mut h = Histogram::default();
        for us in [50, 3_000, 700_000, 100_000_000] {
            a.observe(Duration::from_micros(us));
            h.observe(us as f64 / 1e6);
        }
        let s = a.snapshot();
        assert_eq!(s.counts, h.counts);
        assert_eq!(s.count(), 4);
        assert!((s.sum - h.sum).abs() < 1e-9, "{} {}", s.sum, h.sum);
        assert_eq!(ratio(1, 4), 0.25);
        assert_eq!(ratio(3, 0), 0.0);
    }
}
