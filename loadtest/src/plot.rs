//! `ferry-load plot A.json -o run.svg`: throughput and p99 latency over time.
//!
//! Written by hand: three line charts need a few dozen lines of SVG, less than adapting a
//! plotting crate's model (and its fonts) would.

use std::fmt::Write as _;

use crate::report::RunReport;
use crate::stats::OpKind;

const WIDTH: f64 = 960.0;
const PANEL: f64 = 230.0;
const TOP: f64 = 60.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 30.0;
const GAP: f64 = 50.0;

fn color(op: OpKind) -> &'static str {
    match op {
        OpKind::Put => "#d62728",
        OpKind::Get => "#1f77b4",
        OpKind::Stat => "#2ca02c",
        OpKind::Delete => "#9467bd",
        OpKind::List => "#8c564b",
        OpKind::Multipart => "#ff7f0e",
        OpKind::Part => "#7f7f7f",
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A round axis maximum at or above `max` and its tick step (1, 2 or 5 times a power of ten),
/// for about `ticks` ticks.
fn nice_axis(max: f64, ticks: f64) -> (f64, f64) {
    if max <= 0.0 || !max.is_finite() {
        return (1.0, 1.0 / ticks);
    }
    let raw = max / ticks;
    let pow = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * pow)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * pow);
    ((max / step).ceil() * step, step)
}

fn label(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

type Series = Vec<(OpKind, Vec<(f64, f64)>)>;

/// One panel at vertical offset `y0`.
fn panel(out: &mut String, y0: f64, title: &str, t_max: f64, series: &Series) {
    let w = WIDTH - LEFT - RIGHT;
    let v_max = series
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let (y_max, y_step) = nice_axis(v_max, 4.0);
    let (x_max, x_step) = nice_axis(t_max, 10.0);
    let x = |t: f64| LEFT + t / x_max * w;
    let y = |v: f64| y0 + PANEL - v / y_max * PANEL;
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="{:.1}" font-size="14" font-weight="bold">{}</text>"#,
        y0 - 8.0,
        escape(title)
    );
    let _ = writeln!(
        out,
        r##"<rect x="{LEFT}" y="{y0}" width="{w}" height="{PANEL}" fill="none" stroke="#999"/>"##
    );
    let mut v = 0.0;
    while v <= y_max + y_step / 2.0 {
        let yy = y(v);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            LEFT + w,
            LEFT - 6.0,
            yy + 4.0,
            label(v)
        );
        v += y_step;
    }
    let mut t = 0.0;
    while t <= x_max + x_step / 2.0 {
        let xx = x(t);
        let _ = writeln!(
            out,
            r##"<line x1="{xx:.1}" y1="{:.1}" x2="{xx:.1}" y2="{:.1}" stroke="#999"/><text x="{xx:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}s</text>"##,
            y0 + PANEL,
            y0 + PANEL + 4.0,
            y0 + PANEL + 16.0,
            label(t)
        );
        t += x_step;
    }
    for (op, pts) in series {
        if pts.len() == 1 {
            let (t, v) = pts[0];
            let _ = writeln!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"/>"#,
                x(t),
                y(v),
                color(*op)
            );
            continue;
        }
        let points: Vec<String> = pts
            .iter()
            .map(|&(t, v)| format!("{:.1},{:.1}", x(t), y(v)))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline fill="none" stroke="{}" stroke-width="1.8" points="{}"/>"#,
            color(*op),
            points.join(" ")
        );
    }
}

/// The SVG document for a run.
pub fn svg(report: &RunReport) -> String {
    let mut ops: Vec<OpKind> = report
        .series
        .iter()
        .flat_map(|p| p.ops.iter().map(|o| o.op))
        .collect();
    ops.sort();
    ops.dedup();
    let collect = |f: &dyn Fn(f64, &crate::report::SeriesOp) -> Option<f64>| -> Series {
        ops.iter()
            .map(|&op| {
                let pts = report
                    .series
                    .iter()
                    .filter_map(|p| {
                        let o = p.ops.iter().find(|o| o.op == op)?;
                        Some((p.t_s, f(p.dt_s, o)?))
                    })
                    .collect();
                (op, pts)
            })
            .collect()
    };
    let per_s = |n: f64, dt: f64| if dt > 0.0 { Some(n / dt) } else { None };
    let throughput = collect(&|dt, o| per_s(o.ops as f64, dt));
    let mbps = collect(&|dt, o| per_s(o.bytes as f64 / 1e6, dt));
    let p99 = collect(&|_, o| (o.ops > 0).then(|| o.latency.p99_us as f64 / 1e3));
    let t_max = report
        .series
        .iter()
        .map(|p| p.t_s)
        .fold(report.elapsed_s, f64::max);
    let height = TOP + 3.0 * (PANEL + GAP);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">"#
    );
    let _ = writeln!(
        out,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{LEFT}" y="22" font-size="15" font-weight="bold">{}</text>"#,
        escape(&format!(
            "ferry-load {}: concurrency {}, size {}{}",
            report.run.workload,
            report.run.concurrency,
            report.run.size,
            report
                .run
                .rate
                .map(|r| format!(", open loop {r} ops/s"))
                .unwrap_or_default()
        ))
    );
    let _ = writeln!(
        out,
        r##"<text x="{:.1}" y="44" font-size="11" text-anchor="end" fill="#555">{}</text>"##,
        WIDTH - RIGHT,
        escape(&report.endpoints.join(" "))
    );
    let mut lx = LEFT;
    for &op in &ops {
        let _ = writeln!(
            out,
            r#"<rect x="{lx:.1}" y="38" width="14" height="4" fill="{}"/><text x="{:.1}" y="44" font-size="12">{}</text>"#,
            color(op),
            lx + 18.0,
            op.name()
        );
        lx += 90.0;
    }
    let panels = [
        ("operations per second", &throughput),
        ("MB per second", &mbps),
        ("p99 latency, ms", &p99),
    ];
    for (i, (title, series)) in panels.into_iter().enumerate() {
        panel(
            &mut out,
            TOP + GAP / 2.0 + i as f64 * (PANEL + GAP),
            title,
            t_max,
            series,
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{RunInfo, SeriesPoint};
    use crate::stats::Recorder;
    use std::time::Duration;

    #[test]
    fn axes_are_round() {
        assert_eq!(nice_axis(97.0, 4.0), (100.0, 50.0));
        assert_eq!(nice_axis(0.7, 4.0), (0.8, 0.2));
        assert_eq!(nice_axis(0.0, 4.0), (1.0, 0.25));
        assert_eq!(nice_axis(1234.0, 4.0), (1500.0, 500.0));
        assert_eq!(nice_axis(6.06, 10.0), (7.0, 1.0));
    }

    #[test]
    fn svg_has_a_line_per_operation_and_panel() {
        let mut r = RunReport::new(
            RunInfo::default(),
            vec!["http://x".into()],
            &Recorder::new(1),
        );
        for t in 1..=5 {
            let mut rec = Recorder::new(1);
            for op in [OpKind::Get, OpKind::Put] {
                let c = rec.cell(op, 0);
                c.ops = 10 * t;
                c.bytes = 1_000_000 * t;
                c.latency.record(Duration::from_millis(t));
            }
            r.series
                .push(SeriesPoint::from_interval(t as f64, 1.0, &rec));
        }
        r.elapsed_s = 5.0;
        let doc = svg(&r);
        assert!(doc.starts_with("<svg"));
        assert!(doc.trim_end().ends_with("</svg>"));
        assert_eq!(doc.matches("<polyline").count(), 6, "2 ops x 3 panels");
        assert!(doc.contains("p99 latency"));
        assert!(!doc.contains("NaN"));
    }
}
