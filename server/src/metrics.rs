//! Prometheus' text exposition format: latency histograms and the lines of a family. The S3
//! front's request metrics ([`crate::front::metrics`]) and the store's are written with these.
//!
//! Hand-written: the text format is a few lines per family, and the metric crates bring
//! registries and global state this needs none of.

use std::fmt::Write as _;

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
}
