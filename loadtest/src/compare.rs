//! `ferry-load compare A.json... -- B.json...`: two sets of runs side by side. Each figure is
//! the median of its side's runs with their spread (the median absolute deviation), the
//! change of B's median against A's, and the two-sided p-value of a Mann-Whitney U test
//! (`ferry_core::stats`) of B's runs against A's. A change that is not significant at the 5%
//! level is marked `~`; with one run on a side there is no test (`-`) and every change is `~`.
//! At least 4 runs a side are needed for any change to be called significant, 5 or more
//! on a shared machine (see `loadtest/README.md`).

use std::fmt::Write as _;

use ferry_core::stats::{mann_whitney, summarize};

use crate::report::{RunReport, fmt_us};
use crate::stats::{OpKind, OpStats};

/// How a figure is shown.
#[derive(Clone, Copy, PartialEq, Eq)]
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
        Unit::Micros => fmt_us(v.max(0.0).round() as u64),
        Unit::Seconds => format!("{v:.3}"),
    }
}

/// `b` relative to `a`: `+12.5%`; `=` when both are zero, `new` when only `a` is.
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

/// One figure of one run: its name, unit and value (`None`: absent, a latency of an
/// operation the run did not do).
type Figure = (&'static str, Unit, Option<f64>);

/// The figures of `s`, an operation's totals over a run of `secs` seconds.
fn figures(s: &OpStats, secs: f64) -> Vec<Figure> {
    let did = s.ops > 0;
    let lat = |v: u64| did.then_some(v as f64);
    let mut f: Vec<Figure> = vec![
        ("ops", Unit::Count, Some(s.ops as f64)),
        ("ops/s", Unit::Rate, Some(per_s(s.ops, secs))),
        ("MB/s", Unit::Rate, Some(per_s(s.bytes, secs) / 1e6)),
        ("errors", Unit::Count, Some(s.error_count() as f64)),
    ];
    for (name, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)] {
        f.push((name, Unit::Micros, lat(s.latency.quantile_us(q))));
    }
    f.push(("max", Unit::Micros, lat(s.latency.max_us())));
    if !s.ttfb.is_empty() {
        for (name, q) in [("ttfb p50", 0.5), ("ttfb p99", 0.99)] {
            f.push((name, Unit::Micros, lat(s.ttfb.quantile_us(q))));
        }
    }
    if s.costs.cpu_ns > 0 {
        let per_op = s.costs.cpu_ns as f64 / 1e3 / s.ops.max(1) as f64;
        f.push(("cpu/op", Unit::Micros, Some(per_op)));
    }
    f
}

/// The client's CPU figures of a run.
fn client_figures(r: &RunReport) -> Vec<Figure> {
    vec![
        ("cpu s", Unit::Seconds, Some(r.cpu.total_s())),
        (
            "cpu s/GB",
            Unit::Seconds,
            Some(r.cpu.per_gb(r.total().bytes).unwrap_or(0.0)),
        ),
    ]
}

/// The figures of each agent of a coordinator's run (`agent N`, by share, so that runs on other
/// machines or ports line up): its throughput, errors and latency.
fn agent_figures(r: &RunReport, share: u32) -> Vec<Figure> {
    const SHOWN: [&str; 5] = ["ops/s", "MB/s", "errors", "p50", "p99"];
    r.agents
        .iter()
        .find(|a| a.share == share)
        .map(|a| {
            figures(&a.total, a.elapsed_s)
                .into_iter()
                .filter(|(name, _, _)| SHOWN.contains(name))
                .collect()
        })
        .unwrap_or_default()
}

/// One row: a figure over the runs of each side.
struct Row {
    op: String,
    name: &'static str,
    unit: Unit,
    a: Vec<f64>,
    b: Vec<f64>,
}

fn describe(tag: &str, names: &[String], runs: &[RunReport]) -> String {
    let r = &runs[0];
    let how = format!(
        "{} on {}, {:.2}s, concurrency {}, size {}{}",
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
    if runs.len() == 1 {
        format!("{tag}: {}: {how}", names[0])
    } else {
        format!("{tag}: {} runs: {}: {how}", runs.len(), names.join(" "))
    }
}

/// Rows of every operation either side did, then of every agent (runs across machines), then
/// the client's CPU.
fn rows(a: &[RunReport], b: &[RunReport]) -> Vec<Row> {
    let totals = |runs: &[RunReport]| -> Vec<Vec<(OpKind, OpStats)>> {
        runs.iter().map(RunReport::op_totals).collect()
    };
    let (ta, tb) = (totals(a), totals(b));
    let mut ops: Vec<OpKind> = ta.iter().chain(&tb).flatten().map(|(op, _)| *op).collect();
    ops.sort();
    ops.dedup();
    let find = |t: &[(OpKind, OpStats)], op: OpKind| {
        t.iter()
            .find(|(o, _)| *o == op)
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    };
    // Each side's runs as (elapsed, stats) of one operation, or of the total.
    type Side = Vec<(f64, OpStats)>;
    let mut groups: Vec<(String, Side, Side)> = ops
        .iter()
        .map(|op| {
            let side = |runs: &[RunReport], t: &[Vec<(OpKind, OpStats)>]| -> Side {
                runs.iter()
                    .zip(t)
                    .map(|(r, t)| (r.elapsed_s, find(t, *op)))
                    .collect()
            };
            (op.name().to_string(), side(a, &ta), side(b, &tb))
        })
        .collect();
    if ops.len() > 1 {
        let side = |runs: &[RunReport]| -> Side {
            runs.iter().map(|r| (r.elapsed_s, r.total())).collect()
        };
        groups.push(("total".into(), side(a), side(b)));
    }
    let mut out = Vec::new();
    let mut push = |op: &str, fa: Vec<Vec<Figure>>, fb: Vec<Vec<Figure>>| {
        // Figure names in the order the first run with the most of them gives.
        let longest = fa
            .iter()
            .chain(&fb)
            .max_by_key(|f| f.len())
            .cloned()
            .unwrap_or_default();
        for (i, (name, unit, _)) in longest.iter().enumerate() {
            let values = |runs: &[Vec<Figure>]| -> Vec<f64> {
                runs.iter()
                    .filter_map(|f| f.iter().find(|(n, _, _)| n == name).and_then(|x| x.2))
                    .collect()
            };
            out.push(Row {
                op: if i == 0 { op.to_owned() } else { String::new() },
                name,
                unit: *unit,
                a: values(&fa),
                b: values(&fb),
            });
        }
    };
    for (op, sa, sb) in &groups {
        let f = |side: &Side| side.iter().map(|(secs, s)| figures(s, *secs)).collect();
        push(op, f(sa), f(sb));
    }
    let mut shares: Vec<u32> = a
        .iter()
        .chain(b)
        .flat_map(|r| &r.agents)
        .map(|x| x.share)
        .collect();
    shares.sort_unstable();
    shares.dedup();
    for share in shares {
        let f = |runs: &[RunReport]| runs.iter().map(|r| agent_figures(r, share)).collect();
        push(&format!("agent {share}"), f(a), f(b));
    }
    push(
        "client",
        a.iter().map(client_figures).collect(),
        b.iter().map(client_figures).collect(),
    );
    out
}

/// The table of `a`'s runs (the baseline) against `b`'s; `names_*` name each run.
pub fn compare_sets(
    a: &[RunReport],
    b: &[RunReport],
    names_a: &[String],
    names_b: &[String],
) -> String {
    let mut out = String::new();
    if a.is_empty() || b.is_empty() {
        return "nothing to compare: each side needs a run\n".into();
    }
    let _ = writeln!(out, "{}", describe("A", names_a, a));
    let _ = writeln!(out, "{}", describe("B", names_b, b));
    let _ = writeln!(
        out,
        "{:<10} {:<10} {:>21} {:>21} {:>9}   {:>6}",
        "op", "metric", "A", "B", "change", "p"
    );
    let side = |v: &[f64], unit: Unit| -> String {
        if v.is_empty() {
            return "-".into();
        }
        let s = summarize(v);
        if v.len() == 1 {
            show(s.median, unit)
        } else {
            format!("{} ± {}", show(s.median, unit), show(s.mad, unit))
        }
    };
    for row in rows(a, b) {
        let (va, vb) = (side(&row.a, row.unit), side(&row.b, row.unit));
        let (change, mark, p) = if row.a.is_empty() || row.b.is_empty() {
            ("-".to_owned(), ' ', "-".to_owned())
        } else {
            let (ma, mb) = (summarize(&row.a).median, summarize(&row.b).median);
            let d = delta(ma, mb);
            if row.a.len() < 2 || row.b.len() < 2 {
                (d, '~', "-".to_owned())
            } else {
                let t = mann_whitney(&row.b, &row.a);
                let mark = if t.significant() { ' ' } else { '~' };
                (d, mark, format!("{:.3}", t.p))
            }
        };
        let _ = writeln!(
            out,
            "{:<10} {:<10} {va:>21} {vb:>21} {change:>9} {mark} {p:>6}",
            row.op, row.name
        );
    }
    let (na, nb) = (a.len(), b.len());
    let _ = writeln!(
        out,
        "A and B: medians ± median absolute deviation over {na} and {nb} run(s); change: B's \
         median against A's; p: two-sided Mann-Whitney U; ~: not significant at 5%{}",
        if na < 4 || nb < 4 {
            " (fewer than 4 runs a side can never be: take 5 or more)"
        } else {
            ""
        }
    );
    out
}

/// One run against another (`compare A.json B.json`).
pub fn compare(a: &RunReport, b: &RunReport, name_a: &str, name_b: &str) -> String {
    compare_sets(
        std::slice::from_ref(a),
        std::slice::from_ref(b),
        &[name_a.to_owned()],
        &[name_b.to_owned()],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::RunInfo;
    use crate::stats::Recorder;
    use std::time::Duration;

    /// A GET run of `ops` operations of 1 MB taking `us` µs each, over 10 s.
    fn run(ops: u64, us: u64) -> RunReport {
        let mut rec = Recorder::new(1);
        let c = rec.cell(OpKind::Get, 0);
        for _ in 0..ops {
            c.ops += 1;
            c.bytes += 1_000_000;
            c.latency.record(Duration::from_micros(us));
        }
        c.costs.cpu_ns = ops * 20_000;
        let mut r = RunReport::new(RunInfo::default(), vec!["http://x".into()], &rec);
        r.elapsed_s = 10.0;
        r
    }

    fn names(n: usize, side: &str) -> Vec<String> {
        (0..n).map(|i| format!("{side}{i}.json")).collect()
    }

    fn line<'a>(table: &'a str, op: Option<&str>, metric: &str) -> &'a str {
        let mut in_op = op.is_none();
        table
            .lines()
            .find(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                if let Some(op) = op
                    && words.first() == Some(&op)
                {
                    in_op = true;
                }
                in_op && l.contains(&format!(" {metric} "))
            })
            .unwrap_or_else(|| panic!("no {metric} in\n{table}"))
    }

    #[test]
    fn one_run_a_side_shows_the_change_without_a_test() {
        let table = compare(&run(100, 10_000), &run(150, 5_000), "a.json", "b.json");
        assert!(table.starts_with("A: a.json"), "{table}");
        let ops = line(&table, None, "ops/s");
        assert!(ops.contains("+50.0%"), "{table}");
        assert!(
            ops.trim_end().ends_with("~      -"),
            "no test with one run: {ops}"
        );
        assert!(line(&table, None, "p50").contains("-50.0%"), "{table}");
        assert!(line(&table, None, "errors").contains(" = "), "{table}");
        assert!(line(&table, None, "cpu/op").contains("20µs"), "{table}");
        assert!(table.contains("fewer than 4 runs"), "{table}");
    }

    #[test]
    fn identical_run_sets_are_not_significant() {
        let set: Vec<RunReport> = [1000, 1003, 998, 1001, 999]
            .iter()
            .map(|&n| run(n, 2_000))
            .collect();
        let table = compare_sets(&set, &set, &names(5, "a"), &names(5, "b"));
        assert!(table.starts_with("A: 5 runs: a0.json"), "{table}");
        let ops = line(&table, None, "ops/s");
        assert!(ops.contains("100.0 ± 0.1"), "median ± MAD: {ops}");
        assert!(ops.contains("+0.0%"), "{ops}");
        let rows = table.lines().skip(3).filter(|l| !l.starts_with("A and B"));
        for l in rows.filter(|l| l.contains('%')) {
            assert!(l.contains(" ~ "), "not significant: {l}\n{table}");
        }
    }

    #[test]
    fn clearly_different_run_sets_are_significant() {
        let a: Vec<RunReport> = [1000, 1010, 990, 1005, 995]
            .iter()
            .map(|&n| run(n, 2_000))
            .collect();
        let b: Vec<RunReport> = [1500, 1490, 1510, 1505, 1495]
            .iter()
            .map(|&n| run(n, 2_000))
            .collect();
        let table = compare_sets(&a, &b, &names(5, "a"), &names(5, "b"));
        let ops = line(&table, None, "ops/s");
        assert!(ops.contains("+50.0%"), "{ops}");
        assert!(!ops.contains(" ~ "), "significant: {ops}");
        // 5 against 5 fully separated: p = 2/252.
        assert!(ops.trim_end().ends_with("0.008"), "{ops}");
        // The latencies are the same on both sides: not significant.
        assert!(line(&table, None, "p50").contains(" ~ "), "{table}");
        assert!(!table.contains("fewer than 4"), "{table}");
    }

    #[test]
    fn operations_in_one_run_only_are_listed() {
        let mut b = run(10, 1_000);
        let mut rec = Recorder::new(1);
        rec.cell(OpKind::Put, 0).ops = 5;
        b.stats
            .extend(RunReport::new(RunInfo::default(), vec!["http://x".into()], &rec).stats);
        let table = compare(&run(10, 1_000), &b, "a", "b");
        assert!(table.lines().any(|l| l.starts_with("put")), "{table}");
        assert!(table.lines().any(|l| l.starts_with("total")), "{table}");
        assert!(table.contains("new"), "{table}");
    }
}
