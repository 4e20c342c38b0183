//! `ferry-load overhead --direct URL --via URL`: what a proxy (or any middle box) costs. The
//! same workload runs against both endpoints in alternating rounds — direct then via, via then
//! direct, and so on, so that a drift of the machine or the backend over time weighs on both
//! sides alike — and each side's rounds add up (counts and histograms merge exactly, time
//! sums). The table gives each side's throughput and latency and their ratio.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::config::LoadConfig;
use crate::report::{RunReport, fmt_us};
use crate::stats::OpStats;

/// Both sides of an overhead measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverheadReport {
    /// The workload.
    pub workload: String,
    /// Rounds per side.
    pub rounds: u32,
    /// The endpoint loaded directly.
    pub direct_url: String,
    /// The endpoint in front of it.
    pub via_url: String,
    /// The direct side, its rounds merged (`elapsed_s` is their sum; no series).
    pub direct: RunReport,
    /// The via side, the same way.
    pub via: RunReport,
    /// Each figure of the table: via divided by direct.
    pub ratios: Vec<(String, f64)>,
}

/// Run `cfg` (its endpoints ignored) against `direct` and `via`, `rounds` times each,
/// alternating; `on_round` hears of each round as it starts.
pub fn overhead(
    cfg: &LoadConfig,
    direct: &str,
    via: &str,
    rounds: u32,
    mut on_round: impl FnMut(u32, &str),
) -> Result<OverheadReport, String> {
    if rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    let mut sides: [Option<RunReport>; 2] = [None, None];
    for round in 0..rounds {
        // ABBA: each side goes first in every other round.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            let url = [direct, via][side];
            on_round(round + 1, url);
            let mut c = cfg.clone();
            c.endpoints = vec![url.to_string()];
            let r = crate::run::run(c)?;
            match &mut sides[side] {
                None => sides[side] = Some(r),
                Some(acc) => {
                    let elapsed = acc.elapsed_s + r.elapsed_s;
                    acc.merge(&r)?;
                    acc.elapsed_s = elapsed;
                }
            }
        }
    }
    let [Some(mut d), Some(mut v)] = sides else {
        return Err("no round ran".into());
    };
    // Series of rounds one after the other do not line up by second.
    d.series.clear();
    v.series.clear();
    let ratios = figures(&d, &v)
        .into_iter()
        .filter(|&(_, a, _, _)| a > 0.0)
        .map(|(name, a, b, _)| (name.to_string(), b / a))
        .collect();
    Ok(OverheadReport {
        workload: cfg.workload.name().into(),
        rounds,
        direct_url: direct.into(),
        via_url: via.into(),
        direct: d,
        via: v,
        ratios,
    })
}

/// How a figure is shown.
#[derive(Clone, Copy)]
enum Show {
    Rate,
    Micros,
    Count,
}

/// The compared figures: name, direct, via, how shown.
fn figures(d: &RunReport, v: &RunReport) -> Vec<(&'static str, f64, f64, Show)> {
    let (td, tv) = (d.total(), v.total());
    let per_s = |n: u64, r: &RunReport| {
        if r.elapsed_s > 0.0 {
            n as f64 / r.elapsed_s
        } else {
            0.0
        }
    };
    let q = |s: &OpStats, q: f64| s.latency.quantile_us(q) as f64;
    let mut out = vec![
        ("ops/s", per_s(td.ops, d), per_s(tv.ops, v), Show::Rate),
        (
            "MB/s",
            per_s(td.bytes, d) / 1e6,
            per_s(tv.bytes, v) / 1e6,
            Show::Rate,
        ),
    ];
    for (name, p) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)] {
        out.push((name, q(&td, p), q(&tv, p), Show::Micros));
    }
    out.push((
        "max",
        td.latency.max_us() as f64,
        tv.latency.max_us() as f64,
        Show::Micros,
    ));
    if !td.ttfb.is_empty() {
        out.push((
            "ttfb p50",
            td.ttfb.quantile_us(0.5) as f64,
            tv.ttfb.quantile_us(0.5) as f64,
            Show::Micros,
        ));
    }
    out.push((
        "errors",
        td.error_count() as f64,
        tv.error_count() as f64,
        Show::Count,
    ));
    out.push((
        "throttled",
        td.throttled as f64,
        tv.throttled as f64,
        Show::Count,
    ));
    out
}

impl OverheadReport {
    /// The table people read.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "overhead of {} over {}: {}, {} rounds on each, alternating ({:.1}s direct, {:.1}s via)",
            self.via_url,
            self.direct_url,
            self.workload,
            self.rounds,
            self.direct.elapsed_s,
            self.via.elapsed_s
        );
        let _ = writeln!(
            out,
            "{:<10} {:>12} {:>12} {:>11}",
            "", "direct", "via", "via/direct"
        );
        for (name, a, b, how) in figures(&self.direct, &self.via) {
            let show = |x: f64| match how {
                Show::Rate => format!("{x:.1}"),
                Show::Micros => fmt_us(x.max(0.0) as u64),
                Show::Count => format!("{x:.0}"),
            };
            let ratio = if a > 0.0 {
                format!("{:.3}", b / a)
            } else {
                "-".into()
            };
            let _ = writeln!(
                out,
                "{name:<10} {:>12} {:>12} {ratio:>11}",
                show(a),
                show(b)
            );
        }
        out
    }

    /// Whether every operation of both sides succeeded.
    pub fn all_succeeded(&self) -> bool {
        self.direct.all_succeeded() && self.via.all_succeeded()
    }
}
