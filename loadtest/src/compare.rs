//! `ferry-load compare A.json B.json`: two runs side by side with relative deltas.

use std::fmt::Write as _;

use crate::report::{RunReport, fmt_us};
use crate::stats::{OpKind, OpStats};

/// One compared figure.
struct Metric {
    name: &'static str,
    a: f64,
    b: f64,
    /// How the value is shown.
    unit: Unit,
}

#[derive(Clone, Copy)]
enum Unit {
    Count,
    Rate,
    Micros,
    Seconds,
}

fn show(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Count => format!("{v:.0}"),
        Unit::Rate => format!("{v:.1}"),
        Unit::Micros => fmt_us(v.max(0.0) as u64),
        Unit::Seconds => format!("{v:.3}"),
    }
}

/// `b` relative to `a`: `+12.5%`, or `-` when `a` is zero.
fn delta(a: f64, b: f64) -> String {
    if a == 0.0 {
        if b == 0.0 { "=".into() } else { "new".into() }
    } else {
        format!("{:+.1}%", (b - a) / a * 100.0)
    }
}

fn per_s(n: u64, secs: f64) -> f64 {
    if secs > 0.0 { n as f64 / secs } else { 0.0 }
}

fn metrics(a: &OpStats, ea: f64, b: &OpStats, eb: f64) -> Vec<Metric> {
    let q = |s: &OpStats, q: f64| s.latency.quantile_us(q) as f64;
    let mut m = vec![
        Metric {
            name: "ops",
            a: a.ops as f64,
            b: b.ops as f64,
            unit: Unit::Count,
        },
        Metric {
            name: "ops/s",
            a: per_s(a.ops, ea),
            b: per_s(b.ops, eb),
            unit: Unit::Rate,
        },
        Metric {
            name: "MB/s",
            a: per_s(a.bytes, ea) / 1e6,
            b: per_s(b.bytes, eb) / 1e6,
            unit: Unit::Rate,
        },
        Metric {
            name: "errors",
            a: a.error_count() as f64,
            b: b.error_count() as f64,
            unit: Unit::Count,
        },
    ];
    for (name, p) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)] {
        m.push(Metric {
            name,
            a: q(a, p),
            b: q(b, p),
            unit: Unit::Micros,
        });
    }
    m.push(Metric {
        name: "max",
        a: a.latency.max_us() as f64,
        b: b.latency.max_us() as f64,
        unit: Unit::Micros,
    });
    if !a.ttfb.is_empty() || !b.ttfb.is_empty() {
        for (name, p) in [("ttfb p50", 0.5), ("ttfb p99", 0.99)] {
            m.push(Metric {
                name,
                a: a.ttfb.quantile_us(p) as f64,
                b: b.ttfb.quantile_us(p) as f64,
                unit: Unit::Micros,
            });
        }
    }
    m
}

/// The side-by-side table (`A` is the baseline: deltas are B relative to A).
pub fn compare(a: &RunReport, b: &RunReport, name_a: &str, name_b: &str) -> String {
    let mut out = String::new();
    for (tag, name, r) in [("A", name_a, a), ("B", name_b, b)] {
        let _ = writeln!(
            out,
            "{tag}: {name}: {} on {}, {:.2}s, concurrency {}, size {}{}",
            r.run.workload,
            r.endpoints.join(" "),
            r.elapsed_s,
            r.run.concurrency,
            r.run.size,
            r.run
                .rate
                .map(|x| format!(", open loop {x} ops/s"))
                .unwrap_or_default()
        );
    }
    let _ = writeln!(
        out,
        "{:<10} {:<10} {:>12} {:>12} {:>9}",
        "op", "metric", "A", "B", "delta"
    );
    let (ta, tb) = (a.op_totals(), b.op_totals());
    let mut ops: Vec<OpKind> = ta.iter().chain(&tb).map(|(op, _)| *op).collect();
    ops.sort();
    ops.dedup();
    let empty = OpStats::default();
    let find = |t: &[(OpKind, OpStats)], op| {
        t.iter()
            .find(|(o, _)| *o == op)
            .map(|(_, s)| s.clone())
            .unwrap_or_else(|| empty.clone())
    };
    let mut rows: Vec<(String, OpStats, OpStats)> = ops
        .into_iter()
        .map(|op| (op.name().to_string(), find(&ta, op), find(&tb, op)))
        .collect();
    if rows.len() > 1 {
        rows.push(("total".into(), a.total(), b.total()));
    }
    for (name, sa, sb) in &rows {
        for (i, m) in metrics(sa, a.elapsed_s, sb, b.elapsed_s).iter().enumerate() {
            // A latency of an operation a run did not do is absent, not zero.
            let absent = |s: &OpStats| matches!(m.unit, Unit::Micros) && s.ops == 0;
            let (va, vb) = (
                if absent(sa) {
                    "-".into()
                } else {
                    show(m.a, m.unit)
                },
                if absent(sb) {
                    "-".into()
                } else {
                    show(m.b, m.unit)
                },
            );
            let d = if absent(sa) || absent(sb) {
                "-".into()
            } else {
                delta(m.a, m.b)
            };
            let _ = writeln!(
                out,
                "{:<10} {:<10} {:>12} {:>12} {:>9}",
                if i == 0 { name.as_str() } else { "" },
                m.name,
                va,
                vb,
                d
            );
        }
    }
    let (ga, gb) = (a.total().bytes, b.total().bytes);
    let cpu = [
        Metric {
            name: "cpu s",
            a: a.cpu.total_s(),
            b: b.cpu.total_s(),
            unit: Unit::Seconds,
        },
        Metric {
            name: "cpu s/GB",
            a: a.cpu.per_gb(ga).unwrap_or(0.0),
            b: b.cpu.per_gb(gb).unwrap_or(0.0),
            unit: Unit::Seconds,
        },
    ];
    for (i, m) in cpu.iter().enumerate() {
        let _ = writeln!(
            out,
            "{:<10} {:<10} {:>12} {:>12} {:>9}",
            if i == 0 { "client" } else { "" },
            m.name,
            show(m.a, m.unit),
            show(m.b, m.unit),
            delta(m.a, m.b)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::RunInfo;
    use crate::stats::Recorder;
    use std::time::Duration;

    fn run(ops: u64, ms: u64) -> RunReport {
        let mut rec = Recorder::new(1);
        let c = rec.cell(OpKind::Get, 0);
        for _ in 0..ops {
            c.ops += 1;
            c.bytes += 1_000_000;
            c.latency.record(Duration::from_millis(ms));
        }
        let mut r = RunReport::new(RunInfo::default(), vec!["http://x".into()], &rec);
        r.elapsed_s = 10.0;
        r
    }

    #[test]
    fn deltas_are_relative_to_a() {
        let table = compare(&run(100, 10), &run(150, 5), "a.json", "b.json");
        let line = |metric: &str| {
            table
                .lines()
                .find(|l| l.split_whitespace().any(|w| w == metric))
                .unwrap_or_else(|| panic!("no {metric} in\n{table}"))
                .to_string()
        };
        assert!(line("ops/s").contains("+50.0%"), "{table}");
        assert!(line("p50").contains("-50.0%"), "{table}");
        assert!(line("errors").trim_end().ends_with('='), "{table}");
        assert!(table.starts_with("A: a.json"));
    }

    #[test]
    fn operations_in_one_run_only_are_listed() {
        let mut b = run(10, 1);
        let mut rec = Recorder::new(1);
        rec.cell(OpKind::Put, 0).ops = 5;
        b.stats
            .extend(RunReport::new(RunInfo::default(), vec!["http://x".into()], &rec).stats);
        let table = compare(&run(10, 1), &b, "a", "b");
        assert!(table.lines().any(|l| l.starts_with("put")), "{table}");
        assert!(table.lines().any(|l| l.starts_with("total")), "{table}");
        assert!(table.contains("new"), "{table}");
    }
}
