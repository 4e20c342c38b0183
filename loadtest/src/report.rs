//! A run's results: the JSON document (`--json`), the summary table, the CSV time series
//! (`--csv`), and merging runs.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::rusage::CpuUsage;
use crate::size::SizeClass;
use crate::stats::{Costs, Histo, HistoSummary, MismatchReport, OpKind, OpStats, Recorder};

/// How a run was set up (what the report needs to say what it measured).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Workload name.
    pub workload: String,
    /// Workers.
    pub concurrency: usize,
    /// Size spec (`1MiB`, `4KiB..64MiB`, ...).
    pub size: String,
    /// Open-loop rate, operations per second.
    pub rate: Option<f64>,
    /// Duration limit, seconds.
    pub duration_s: Option<f64>,
    /// Operation limit.
    pub ops_limit: Option<u64>,
    /// Prepared objects.
    pub objects: u64,
    /// Runtime.
    pub runtime: String,
    /// Fill seed.
    pub seed: u64,
    /// Bodies verified.
    pub verify: bool,
    /// Content-MD5 sent and ETags checked.
    pub md5: bool,
    /// Payload SHA-256 signed.
    pub payload_sha256: bool,
    /// Buckets used.
    pub buckets: Vec<String>,
    /// Key prefix.
    pub prefix: String,
    /// Mixed workload weights.
    pub mix: Option<String>,
    /// Multipart: parts, part size, parts in flight.
    pub multipart: Option<(u32, u64, usize)>,
    /// Against an in-process cluster (its CPU time is in `cpu`).
    pub embedded: bool,
}

/// The totals of one operation type on one endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsEntry {
    /// Operation type.
    pub op: OpKind,
    /// Index into [`RunReport::endpoints`].
    pub endpoint: usize,
    /// What was measured.
    #[serde(flatten)]
    pub stats: OpStats,
}

/// The totals of one operation type on the objects of one size class (`--size` ranges and
/// weights).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeClassEntry {
    /// Operation type.
    pub op: OpKind,
    /// The class's name: `1MiB` (a weighted size), `4KiB..16KiB` (a part of a range).
    pub class: String,
    /// Smallest object size in the class.
    pub min_bytes: u64,
    /// Largest object size in the class (included).
    pub max_bytes: u64,
    /// What was measured.
    #[serde(flatten)]
    pub stats: OpStats,
}

/// One agent of a run across machines (`--agents`), as its coordinator saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentEntry {
    /// The address the coordinator reached it at.
    pub address: String,
    /// Its host name, as it said.
    pub host: String,
    /// Its share of the run (object ids, operations, rate).
    pub share: u32,
    /// Its clock minus the coordinator's, milliseconds (corrected for at the start).
    pub clock_offset_ms: f64,
    /// The round trip the offset was measured with, milliseconds (the offset is right within
    /// half of it).
    pub round_trip_ms: f64,
    /// When its measured phase began, milliseconds after the start instant the coordinator
    /// named (its own clock's reading less its offset); absent if it never said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ms: Option<f64>,
    /// Its measured phase, seconds.
    pub elapsed_s: f64,
    /// Its CPU time during it.
    pub cpu: CpuUsage,
    /// Its operations summed (parts left out: their uploads count).
    pub total: OpStats,
    /// Why and when it was lost, if it was (its results up to then are in the report).
    pub lost: Option<String>,
    /// Seconds from the end of the run's measured phase until its last results reached the
    /// coordinator; absent if they never did (lost) or the report predates the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collection_s: Option<f64>,
    /// Its cleanup (deleting what it wrote), seconds, as it measured it; absent with
    /// `--keep-data`, if it was lost, or in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup_s: Option<f64>,
}

/// One operation type in one point of the series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesOp {
    /// Operation type.
    pub op: OpKind,
    /// Operations completed in the interval.
    pub ops: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Failed operations.
    pub errors: u64,
    /// Latency of the interval's operations.
    pub latency: HistoSummary,
    /// Operations that ended throttled (not in `ops`).
    #[serde(default)]
    pub throttled: u64,
}

/// One point of the series: a second of the run, or [`RunReport::series_step_s`] seconds of a
/// longer one (the last point shorter, or longer by the moment operations in flight took to end).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    /// End of the point, seconds since the start.
    pub t_s: f64,
    /// Length of the point, seconds (from the end of the point before it).
    pub dt_s: f64,
    /// Per operation type.
    pub ops: Vec<SeriesOp>,
}

impl SeriesPoint {
    /// The interval's stats from a recorder holding just that interval.
    pub fn from_interval(t_s: f64, dt_s: f64, interval: &Recorder) -> Self {
        let ops = OpKind::ALL
            .into_iter()
            .filter_map(|op| {
                let s = interval.op_total(op)?;
                Some(SeriesOp {
                    op,
                    ops: s.ops,
                    bytes: s.bytes,
                    errors: s.error_count(),
                    latency: HistoSummary::from(&s.latency),
                    throttled: s.throttled,
                })
            })
            .collect();
        Self { t_s, dt_s, ops }
    }

    /// Operations (counting in totals) per second in this interval.
    pub fn ops_per_s(&self) -> f64 {
        let n: u64 = self
            .ops
            .iter()
            .filter(|o| o.op.counts_in_total())
            .map(|o| o.ops)
            .sum();
        rate(n as f64, self.dt_s)
    }

    /// MB (10^6 bytes) per second in this interval.
    pub fn mb_per_s(&self) -> f64 {
        let n: u64 = self
            .ops
            .iter()
            .filter(|o| o.op.counts_in_total())
            .map(|o| o.bytes)
            .sum();
        rate(n as f64 / 1e6, self.dt_s)
    }
}

/// The preparation phase (objects put before the measured phase).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Prepared {
    /// Objects put.
    pub objects: u64,
    /// Bytes put.
    pub bytes: u64,
    /// How long it took.
    pub seconds: f64,
}

/// Everything a run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// `ferry-load`.
    pub tool: String,
    /// Its version.
    pub version: String,
    /// How the run was set up.
    pub run: RunInfo,
    /// Start, Unix seconds.
    pub started_unix: i64,
    /// Measured phase, seconds.
    pub elapsed_s: f64,
    /// Endpoint URLs.
    pub endpoints: Vec<String>,
    /// Totals per operation type and endpoint.
    pub stats: Vec<StatsEntry>,
    /// The time series: point `k` covers seconds `k × series_step_s` up to `(k + 1) ×
    /// series_step_s` of the measured phase (the last point ends with the run). At most
    /// [`MAX_SERIES_POINTS`]: a longer run's points cover 2, 4, 8, ... seconds each.
    pub series: Vec<SeriesPoint>,
    /// Seconds each point of `series` covers: 1, or a power of two for a run longer than
    /// [`MAX_SERIES_POINTS`] seconds (1 in older reports).
    #[serde(default = "one_second")]
    pub series_step_s: u64,
    /// The client's CPU time during the measured phase.
    pub cpu: CpuUsage,
    /// Verification failures with key and offset (capped).
    pub mismatches: Vec<MismatchReport>,
    /// The preparation phase, if any.
    pub prepared: Option<Prepared>,
    /// Anything the reader should know (ran out of objects, cleanup failures, ...).
    pub notes: Vec<String>,
    /// How many runs this report merges (1 for a plain run).
    #[serde(default = "one")]
    pub merged_runs: u32,
    /// Per operation type and object size class, when sizes vary (`--size` ranges and
    /// weights).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub size_classes: Vec<SizeClassEntry>,
    /// Per agent, for a run across machines (`--agents`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentEntry>,
    /// With `--agents`: seconds from the end of the measured phase (the named start plus
    /// `--duration`, or the stop) until every agent's results were merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collection_s: Option<f64>,
    /// Seconds the run went on after its results were complete, deleting what it wrote (with
    /// `--agents`: until the last agent's cleanup was over); absent with `--keep-data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup_s: Option<f64>,
}

fn one() -> u32 {
    1
}

fn one_second() -> u64 {
    1
}

fn rate(n: f64, secs: f64) -> f64 {
    if secs > 0.0 { n / secs } else { 0.0 }
}

/// A duration in µs as people read it: `850µs`, `12.3ms`, `1.25s`.
pub fn fmt_us(us: u64) -> String {
    if us < 1_000 {
        format!("{us}µs")
    } else if us < 1_000_000 {
        format!("{:.2}ms", us as f64 / 1e3)
    } else {
        format!("{:.2}s", us as f64 / 1e6)
    }
}

impl RunReport {
    /// A report from the measured totals.
    pub fn new(run: RunInfo, endpoints: Vec<String>, totals: &Recorder) -> Self {
        let stats = totals
            .entries()
            .map(|(op, endpoint, s)| StatsEntry {
                op,
                endpoint,
                stats: s.clone(),
            })
            .collect();
        Self {
            tool: "ferry-load".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            run,
            started_unix: 0,
            elapsed_s: 0.0,
            endpoints,
            stats,
            series: Vec::new(),
            series_step_s: 1,
            cpu: CpuUsage::default(),
            mismatches: totals.mismatches.clone(),
            prepared: None,
            notes: Vec::new(),
            merged_runs: 1,
            size_classes: Vec::new(),
            agents: Vec::new(),
            collection_s: None,
            cleanup_s: None,
        }
    }

    /// The per-size-class breakdown of `totals`, whose class indices are into `classes`.
    pub fn set_size_classes(&mut self, classes: &[SizeClass], totals: &Recorder) {
        self.size_classes = totals
            .class_entries()
            .filter_map(|(op, c, s)| {
                let class = classes.get(c)?;
                Some(SizeClassEntry {
                    op,
                    class: class.label.clone(),
                    min_bytes: class.min,
                    max_bytes: class.max,
                    stats: s.clone(),
                })
            })
            .collect();
    }

    /// The run's series.
    pub fn set_series(&mut self, series: Series) {
        self.series_step_s = series.step_s;
        self.series = series.points;
    }

    /// Each operation type summed over endpoints, in report order.
    pub fn op_totals(&self) -> Vec<(OpKind, OpStats)> {
        let mut by_op: BTreeMap<OpKind, OpStats> = BTreeMap::new();
        for e in &self.stats {
            by_op.entry(e.op).or_default().merge(&e.stats);
        }
        by_op.into_iter().collect()
    }

    /// The stats of one operation type, summed over endpoints.
    pub fn op(&self, op: OpKind) -> Option<OpStats> {
        self.op_totals()
            .into_iter()
            .find_map(|(o, s)| (o == op).then_some(s))
    }

    /// Each endpoint's operations summed (parts left out: their uploads count).
    pub fn endpoint_totals(&self) -> Vec<OpStats> {
        let mut out = vec![OpStats::default(); self.endpoints.len()];
        for e in self.stats.iter().filter(|e| e.op.counts_in_total()) {
            if let Some(t) = out.get_mut(e.endpoint) {
                t.merge(&e.stats);
            }
        }
        out
    }

    /// Every operation summed (parts left out: their uploads count).
    pub fn total(&self) -> OpStats {
        let mut t = OpStats::default();
        for e in self.stats.iter().filter(|e| e.op.counts_in_total()) {
            t.merge(&e.stats);
        }
        t
    }

    /// Client costs over every operation (parts included: uploads do not repeat them).
    pub fn costs(&self) -> Costs {
        let mut c = Costs::default();
        for e in &self.stats {
            c.add(&e.stats.costs);
        }
        c
    }

    /// Failed operations of every kind.
    pub fn error_count(&self) -> u64 {
        self.total().error_count()
    }

    /// Operations that ended throttled.
    pub fn throttled_count(&self) -> u64 {
        self.total().throttled
    }

    /// Whether every operation succeeded: no failure, no mismatch, nothing throttled, and no
    /// agent lost.
    pub fn all_succeeded(&self) -> bool {
        self.error_count() == 0
            && self.mismatches.is_empty()
            && self.throttled_count() == 0
            && self.agents.iter().all(|a| a.lost.is_none())
    }

    /// Merge another run (e.g. from another client machine) into this one: counts and
    /// histograms add up, series line up by time (the finer one coarsened to the other's
    /// step), CPU adds, elapsed is the longer one. On an error `self` is as it was.
    pub fn merge(&mut self, other: &RunReport) -> Result<(), String> {
        if other
            .stats
            .iter()
            .any(|e| e.endpoint >= other.endpoints.len())
        {
            return Err("a stats entry names an endpoint the report does not list".into());
        }
        let mut series = Series::from_points(self.series.clone(), self.series_step_s)?;
        series.merge(&other.series, other.series_step_s)?;
        for url in &other.endpoints {
            if !self.endpoints.contains(url) {
                self.endpoints.push(url.clone());
            }
        }
        for e in &other.stats {
            let Some(url) = other.endpoints.get(e.endpoint) else {
                continue;
            };
            let endpoint = self
                .endpoints
                .iter()
                .position(|u| u == url)
                .unwrap_or_default();
            match self
                .stats
                .iter_mut()
                .find(|s| s.op == e.op && s.endpoint == endpoint)
            {
                Some(s) => s.stats.merge(&e.stats),
                None => self.stats.push(StatsEntry {
                    op: e.op,
                    endpoint,
                    stats: e.stats.clone(),
                }),
            }
        }
        self.stats.sort_by_key(|e| (e.op, e.endpoint));
        for e in &other.size_classes {
            match self
                .size_classes
                .iter_mut()
                .find(|s| s.op == e.op && s.class == e.class)
            {
                Some(s) => s.stats.merge(&e.stats),
                None => self.size_classes.push(e.clone()),
            }
        }
        self.size_classes.sort_by_key(|e| (e.min_bytes, e.op));
        self.agents.extend(other.agents.iter().cloned());
        self.set_series(series);
        self.cpu.add(&other.cpu);
        self.elapsed_s = self.elapsed_s.max(other.elapsed_s);
        self.started_unix = self.started_unix.min(other.started_unix);
        for m in &other.mismatches {
            if self.mismatches.len() < crate::stats::MAX_MISMATCHES {
                self.mismatches.push(m.clone());
            }
        }
        self.notes.extend(other.notes.iter().cloned());
        self.merged_runs += other.merged_runs;
        // The runs ended side by side: the slowest end is the merged run's.
        let longer = |a: Option<f64>, b: Option<f64>| a.into_iter().chain(b).reduce(f64::max);
        self.collection_s = longer(self.collection_s, other.collection_s);
        self.cleanup_s = longer(self.cleanup_s, other.cleanup_s);
        Ok(())
    }

    /// The summary table people read at the end of a run.
    pub fn summary(&self) -> String {
        let mut out = self.heading();
        out.push_str(&self.op_table());
        out.push_str(&self.agent_summary());
        out.push_str(&self.size_class_summary());
        out.push_str(&self.error_summary());
        let costs = self.costs();
        out.push_str(&self.client_work_summary(&costs));
        out.push_str(&self.throttling_summary());
        out.push_str(&self.resend_summary(&costs));
        out.push_str(&self.client_cpu_summary());
        if let Some(c) = self.collection_s {
            let _ = writeln!(
                out,
                "results merged {c:.3}s after the end of the measured phase"
            );
        }
        out.push_str(&self.summary_tail(0));
        out
    }

    /// The summary's first lines: what ran, where, how long and how; what was prepared.
    fn heading(&self) -> String {
        let mut out = String::new();
        let el = self.elapsed_s;
        let _ = writeln!(
            out,
            "{} on {} for {el:.2}s, concurrency {}{}, size {}, runtime {}",
            self.run.workload,
            self.endpoints.join(" "),
            self.run.concurrency,
            self.run
                .rate
                .map(|r| format!(", open loop at {r} ops/s"))
                .unwrap_or_default(),
            self.run.size,
            self.run.runtime,
        );
        if let Some(p) = &self.prepared {
            let _ = writeln!(
                out,
                "prepared {} objects ({:.1} MB) in {:.2}s",
                p.objects,
                p.bytes as f64 / 1e6,
                p.seconds
            );
        }
        out
    }

    /// The summary's table: a row an operation, the total (of more than one), and a row an
    /// endpoint (of more than one).
    fn op_table(&self) -> String {
        let mut out = String::new();
        let el = self.elapsed_s;
        let _ = writeln!(
            out,
            "{:<10} {:>9} {:>10} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "op",
            "ops",
            "ops/s",
            "MB/s",
            "errors",
            "p50",
            "p90",
            "p99",
            "p99.9",
            "max",
            "ttfb p50",
            "ttfb p99"
        );
        let rows = self.op_totals();
        for (op, s) in &rows {
            out.push_str(&row(op.name(), s, el));
        }
        if rows.iter().filter(|(op, _)| op.counts_in_total()).count() > 1 {
            out.push_str(&row("total", &self.total(), el));
        }
        let eps = self.endpoint_totals();
        if eps.len() > 1 {
            let _ = writeln!(out, "per endpoint:");
            for (url, s) in self.endpoints.iter().zip(&eps) {
                out.push_str(&row(url, s, el));
            }
        }
        out
    }

    /// The errors by operation and kind, and the first mismatches.
    fn error_summary(&self) -> String {
        let mut out = String::new();
        let errors: Vec<(OpKind, String, u64)> = self
            .op_totals()
            .into_iter()
            .flat_map(|(op, s)| s.errors.into_iter().map(move |(k, n)| (op, k, n)))
            .collect();
        if !errors.is_empty() {
            let _ = writeln!(out, "errors:");
            for (op, kind, n) in errors {
                let _ = writeln!(out, "  {:<10} {kind:<40} {n:>9}", op.name());
            }
        }
        for m in self.mismatches.iter().take(10) {
            let _ = writeln!(
                out,
                "  mismatch: {} at offset {}: expected {:#04x}, found {:#04x}",
                m.key, m.offset, m.expected, m.found
            );
        }
        out
    }

    /// What the client's own work cost (`costs`): verifying, generating and hashing bodies,
    /// each with its share of the client's CPU.
    fn client_work_summary(&self, costs: &Costs) -> String {
        let mut out = String::new();
        let cpu = self.cpu.total_s();
        let share = |ns: u64| {
            if cpu > 0.0 {
                format!(" ({:.1}% of client CPU)", ns as f64 / 1e9 / cpu * 100.0)
            } else {
                String::new()
            }
        };
        if costs.verified_bytes > 0 {
            let secs = costs.verify_ns as f64 / 1e9;
            let _ = writeln!(
                out,
                "verified {:.1} MB in {secs:.3}s: {:.2} GB/s{}, {} mismatches",
                costs.verified_bytes as f64 / 1e6,
                rate(costs.verified_bytes as f64 / 1e9, secs),
                share(costs.verify_ns),
                self.mismatches.len()
            );
        } else if !self.run.verify {
            let _ = writeln!(out, "verification off");
        }
        if costs.fill_ns > 0 {
            let _ = writeln!(
                out,
                "generated bodies in {:.3}s{}",
                costs.fill_ns as f64 / 1e9,
                share(costs.fill_ns)
            );
        }
        if costs.hash_ns > 0 {
            let _ = writeln!(
                out,
                "hashed (MD5/SHA-256) in {:.3}s{}",
                costs.hash_ns as f64 / 1e9,
                share(costs.hash_ns)
            );
        }
        out
    }

    /// The requests sent again (`costs`): operations retried after a lost connection, requests
    /// resent on a new connection.
    fn resend_summary(&self, costs: &Costs) -> String {
        let mut out = String::new();
        if costs.retries > costs.throttled_retries {
            let _ = writeln!(
                out,
                "{} operations retried after a lost connection (not failures unless listed under errors)",
                costs.retries - costs.throttled_retries
            );
        }
        if costs.reconnects > 0 {
            let _ = writeln!(
                out,
                "{} requests sent again on a new connection (the server had closed a kept-alive one)",
                costs.reconnects
            );
        }
        out
    }

    /// The client's CPU time: in all (and per GB moved), then by operation.
    fn client_cpu_summary(&self) -> String {
        let mut out = String::new();
        let total = self.total();
        let cpu = self.cpu.total_s();
        let _ = writeln!(
            out,
            "client CPU: user {:.2}s + system {:.2}s = {cpu:.2}s{}{}",
            self.cpu.user_s,
            self.cpu.system_s,
            self.cpu
                .per_gb(total.bytes)
                .map(|g| format!(", {g:.3} CPU-s per GB moved"))
                .unwrap_or_default(),
            if self.run.embedded {
                " (includes the embedded cluster)"
            } else {
                ""
            }
        );
        let by_op: Vec<String> = self
            .op_totals()
            .iter()
            .filter(|(_, s)| s.costs.cpu_ns > 0 && s.ops > 0)
            .map(|(op, s)| {
                let per_gb = if s.bytes > 0 {
                    format!(", {:.3} CPU-s/GB", s.costs.cpu_ns as f64 / s.bytes as f64)
                } else {
                    String::new()
                };
                format!(
                    "{} {:.1}µs/op{per_gb}",
                    op.name(),
                    s.costs.cpu_ns as f64 / 1e3 / s.ops as f64
                )
            })
            .collect();
        if !by_op.is_empty() {
            let _ = writeln!(
                out,
                "client CPU by operation (its polls on the thread CPU clock): {}",
                by_op.join(", ")
            );
        }
        out
    }

    /// The end of [`RunReport::summary`] from the cleanup on, with the notes after the first
    /// `shown` (a coordinator shows the results before its agents' cleanup is over).
    pub fn summary_tail(&self, shown: usize) -> String {
        let mut out = String::new();
        if let Some(c) = self.cleanup_s {
            let _ = writeln!(out, "cleanup took {c:.3}s after the results were complete");
        }
        for n in self.notes.iter().skip(shown) {
            let _ = writeln!(out, "note: {n}");
        }
        out
    }

    /// The per-agent rows of the summary and the agents' clock offsets (nothing for a local
    /// run).
    fn agent_summary(&self) -> String {
        let mut out = String::new();
        if self.agents.is_empty() {
            return out;
        }
        let _ = writeln!(out, "per agent:");
        for a in &self.agents {
            out.push_str(&row(&a.address, &a.total, a.elapsed_s));
        }
        for a in &self.agents {
            let _ = writeln!(
                out,
                "  agent {} ({}): share {}, clock offset {:+.3} ms (round trip {:.3} ms){}{}{}",
                a.address,
                if a.host.is_empty() { "?" } else { &a.host },
                a.share,
                a.clock_offset_ms,
                a.round_trip_ms,
                a.start_ms
                    .map(|s| format!(", started {s:+.3} ms from the named instant"))
                    .unwrap_or_default(),
                a.collection_s
                    .map(|s| format!(", results in {s:.3}s after the end"))
                    .unwrap_or_default(),
                a.lost
                    .as_deref()
                    .map(|l| format!(", LOST {l}"))
                    .unwrap_or_default()
            );
        }
        out
    }

    /// The per-size-class table of the summary (nothing for a fixed size).
    fn size_class_summary(&self) -> String {
        let mut out = String::new();
        if self.size_classes.is_empty() {
            return out;
        }
        let el = self.elapsed_s;
        let _ = writeln!(
            out,
            "per size class:\n{:<10} {:<20} {:>9} {:>10} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9}",
            "op", "size", "ops", "ops/s", "MB/s", "errors", "p50", "p90", "p99", "max"
        );
        for e in &self.size_classes {
            let (s, l) = (&e.stats, &e.stats.latency);
            let _ = writeln!(
                out,
                "{:<10} {:<20} {:>9} {:>10.1} {:>9.1} {:>7} {:>9} {:>9} {:>9} {:>9}",
                e.op.name(),
                e.class,
                s.ops,
                rate(s.ops as f64, el),
                rate(s.bytes as f64 / 1e6, el),
                s.error_count(),
                fmt_us(l.quantile_us(0.5)),
                fmt_us(l.quantile_us(0.9)),
                fmt_us(l.quantile_us(0.99)),
                fmt_us(l.max_us()),
            );
        }
        out
    }

    /// The throttling lines of the summary: answers retried, and per operation type those
    /// that ended throttled with their latency; nothing when the server never throttled.
    fn throttling_summary(&self) -> String {
        let mut out = String::new();
        let retried = self.costs().throttled_retries;
        let rows: Vec<(OpKind, OpStats)> = self
            .op_totals()
            .into_iter()
            .filter(|(_, s)| s.throttled > 0)
            .collect();
        if retried == 0 && rows.is_empty() {
            return out;
        }
        let ended: u64 = rows
            .iter()
            .filter(|(op, _)| op.counts_in_total())
            .map(|(_, s)| s.throttled)
            .sum();
        let _ = writeln!(
            out,
            "throttled (503 SlowDown, 429, ...): {retried} answers retried after a backoff, \
             {ended} operations ended throttled (not in ops, latency or errors above)"
        );
        for (op, s) in &rows {
            let l = &s.throttled_latency;
            let _ = writeln!(
                out,
                "  {:<10} {:>9} throttled  p50 {}  p99 {}  max {}",
                op.name(),
                s.throttled,
                fmt_us(l.quantile_us(0.5)),
                fmt_us(l.quantile_us(0.99)),
                fmt_us(l.max_us())
            );
        }
        out
    }

    /// The time series as CSV: one line per interval and operation type.
    pub fn series_csv(&self) -> String {
        let mut out = String::from(
            "t_s,dt_s,op,ops,bytes,errors,ops_per_s,mb_per_s,p50_us,p90_us,p99_us,p999_us,max_us,throttled\n",
        );
        for p in &self.series {
            for o in &p.ops {
                let l = &o.latency;
                let _ = writeln!(
                    out,
                    "{:.3},{:.3},{},{},{},{},{:.2},{:.3},{},{},{},{},{},{}",
                    p.t_s,
                    p.dt_s,
                    o.op.name(),
                    o.ops,
                    o.bytes,
                    o.errors,
                    rate(o.ops as f64, p.dt_s),
                    rate(o.bytes as f64 / 1e6, p.dt_s),
                    l.p50_us,
                    l.p90_us,
                    l.p99_us,
                    l.p999_us,
                    l.max_us,
                    o.throttled
                );
            }
        }
        out
    }
}

/// Most points a series keeps (a run's, an agent's, a coordinator's, a merge's). Past it,
/// adjacent pairs of points merge and the step doubles: an hour keeps a point a second, a day
/// a point every 32 s (2,700 points), whatever the run's length at most 3,600 points (a few
/// MiB with every operation type of `mixed`).
pub const MAX_SERIES_POINTS: usize = 3600;

/// A time series as it is built: at most a cap of points, point `k` covering seconds `k ×
/// step` up to `(k + 1) × step` of the run, the step a power of two that doubles when a second
/// past the cap comes (adjacent pairs merge: counts add, histograms merge exactly).
///
/// Intervals are added by the second they are (from 0): a run adds its own, a coordinator its
/// agents' (each agent's own series may be coarser or finer than the coordinator's: the
/// second says where it goes in either). A point ends (`t_s`) with the latest interval added
/// to it, and lasts (`dt_s`) from the end of the point before it: one rule for a run's
/// successive seconds, agents' same second and a sliver joining the last second, which gives
/// the same series whatever the order intervals arrive in.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    points: Vec<SeriesPoint>,
    step_s: u64,
    cap: usize,
}

impl Default for Series {
    fn default() -> Self {
        Self::with_cap(MAX_SERIES_POINTS)
    }
}

impl Series {
    /// An empty series of at most `cap` points (at least 2; tests use small ones).
    pub fn with_cap(cap: usize) -> Self {
        Self {
            points: Vec::new(),
            step_s: 1,
            cap: cap.max(2),
        }
    }

    /// A report's series (`points` of `step_s` seconds), coarsened to at most
    /// [`MAX_SERIES_POINTS`].
    pub fn from_points(points: Vec<SeriesPoint>, step_s: u64) -> Result<Self, String> {
        if !step_s.is_power_of_two() {
            return Err(format!("series_step_s {step_s} is not a power of two"));
        }
        let mut s = Self {
            points,
            step_s,
            ..Self::default()
        };
        while s.points.len() > s.cap {
            s.coarsen()?;
        }
        Ok(s)
    }

    /// The points.
    pub fn points(&self) -> &[SeriesPoint] {
        &self.points
    }

    /// Seconds each point covers.
    pub fn step_s(&self) -> u64 {
        self.step_s
    }

    /// Whether second `second` of the run (from 0) has a point without coarsening.
    pub fn fits(&self, second: usize) -> bool {
        (second as u64) / self.step_s < self.cap as u64
    }

    /// Coarsen until second `second` fits. Each time every pair of points merges, which
    /// takes seconds of CPU with [`MAX_SERIES_POINTS`] points (a run does it off the threads
    /// that run its load).
    pub fn make_room(&mut self, second: usize) -> Result<(), String> {
        while !self.fits(second) {
            self.coarsen()?;
        }
        Ok(())
    }

    /// Add `interval`, what second `second` of the run (from 0) recorded, into the point that
    /// covers it (coarsening first if that point would be past the cap).
    pub fn add(&mut self, second: usize, interval: &SeriesPoint) -> Result<(), String> {
        self.make_room(second)?;
        // Below the cap, so it fits in usize.
        let k = ((second as u64) / self.step_s) as usize;
        while self.points.len() <= k {
            // An empty point to add into (more than one only if a coordinator lost an agent's
            // earlier chunks), ending where the one before it does.
            let t_s = self.points.last().map_or(0.0, |p| p.t_s);
            self.points.push(SeriesPoint {
                t_s,
                dt_s: 0.0,
                ops: Vec::new(),
            });
        }
        merge_point(&mut self.points[k], interval)?;
        self.set_lengths(k..k + 2);
        Ok(())
    }

    /// Add another run's series (`points` of `step_s` seconds), lined up by time: the finer
    /// of the two is coarsened to the other's step first.
    pub fn merge(&mut self, points: &[SeriesPoint], step_s: u64) -> Result<(), String> {
        let mut other = Self::from_points(points.to_vec(), step_s)?;
        while other.step_s < self.step_s {
            other.coarsen()?;
        }
        while self.step_s < other.step_s {
            self.coarsen()?;
        }
        for (k, p) in other.points.iter().enumerate() {
            match self.points.get_mut(k) {
                Some(mine) => merge_point(mine, p)?,
                None => self.points.push(p.clone()),
            }
        }
        self.set_lengths(0..self.points.len());
        while self.points.len() > self.cap {
            self.coarsen()?;
        }
        Ok(())
    }

    /// Merge adjacent pairs of points: half as many, twice as long.
    fn coarsen(&mut self) -> Result<(), String> {
        self.step_s = self
            .step_s
            .checked_mul(2)
            .ok_or("the series step overflows")?;
        let mut pairs = std::mem::take(&mut self.points).into_iter();
        while let Some(mut first) = pairs.next() {
            if let Some(second) = pairs.next() {
                merge_point(&mut first, &second)?;
            }
            self.points.push(first);
        }
        self.set_lengths(0..self.points.len());
        Ok(())
    }

    /// Each point of `range` lasts from the end of the one before it (the first from 0).
    fn set_lengths(&mut self, range: std::ops::Range<usize>) {
        for k in range.start..range.end.min(self.points.len()) {
            let start = match k {
                0 => 0.0,
                _ => self.points[k - 1].t_s,
            };
            let p = &mut self.points[k];
            p.dt_s = (p.t_s - start).max(0.0);
        }
    }
}

/// Add `other`'s counts and histograms into `mine`, which ends at the later of the two ends
/// (its length is the series' to set).
fn merge_point(mine: &mut SeriesPoint, other: &SeriesPoint) -> Result<(), String> {
    mine.t_s = mine.t_s.max(other.t_s);
    for o in &other.ops {
        match mine.ops.iter_mut().find(|m| m.op == o.op) {
            Some(m) => {
                m.ops += o.ops;
                m.bytes += o.bytes;
                m.errors += o.errors;
                m.throttled += o.throttled;
                let mut h: Histo = m.latency.histo()?;
                h.merge(&o.latency.histo()?);
                m.latency = HistoSummary::from(&h);
            }
            None => mine.ops.push(o.clone()),
        }
    }
    mine.ops.sort_by_key(|o| o.op);
    Ok(())
}

fn row(name: &str, s: &OpStats, elapsed: f64) -> String {
    let l = &s.latency;
    let ttfb = |q| {
        if s.ttfb.is_empty() {
            "-".to_string()
        } else {
            fmt_us(s.ttfb.quantile_us(q))
        }
    };
    format!(
        "{:<10} {:>9} {:>10.1} {:>9.1} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        name,
        s.ops,
        rate(s.ops as f64, elapsed),
        rate(s.bytes as f64 / 1e6, elapsed),
        s.error_count(),
        fmt_us(l.quantile_us(0.5)),
        fmt_us(l.quantile_us(0.9)),
        fmt_us(l.quantile_us(0.99)),
        fmt_us(l.quantile_us(0.999)),
        fmt_us(l.max_us()),
        ttfb(0.5),
        ttfb(0.99),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A report with `n` GETs of 1 MB taking 1..=n ms on endpoint 0, over 2 seconds.
    fn report(n: u64, url: &str) -> RunReport {
        let mut rec = Recorder::new(1);
        let mut second = [Recorder::new(1), Recorder::new(1)];
        for i in 1..=n {
            for r in [&mut rec, &mut second[(i % 2) as usize]] {
                let c = r.cell(OpKind::Get, 0);
                c.ops += 1;
                c.bytes += 1_000_000;
                c.latency.record(Duration::from_millis(i));
            }
        }
        *rec.cell(OpKind::Get, 0)
            .errors
            .entry("http 503".into())
            .or_default() += 1;
        let mut r = RunReport::new(
            RunInfo {
                workload: "get".into(),
                ..RunInfo::default()
            },
            vec![url.into()],
            &rec,
        );
        r.elapsed_s = 2.0;
        r.series = second
            .iter()
            .enumerate()
            .map(|(i, s)| SeriesPoint::from_interval(i as f64 + 1.0, 1.0, s))
            .collect();
        r.cpu = CpuUsage {
            user_s: 1.0,
            system_s: 1.0,
        };
        r
    }

    #[test]
    fn totals_and_summary() {
        let r = report(100, "http://a");
        let get = r.op(OpKind::Get).unwrap();
        assert_eq!(
            (get.ops, get.bytes, get.error_count()),
            (100, 100_000_000, 1)
        );
        let s = r.summary();
        assert!(s.contains("get"), "{s}");
        assert!(s.contains("50.0"), "ops/s: {s}");
        assert!(s.contains("http 503"), "{s}");
        // 2 CPU-s for 0.1 GB.
        assert!(s.contains("20.000 CPU-s per GB"), "{s}");
        let csv = r.series_csv();
        assert_eq!(csv.lines().count(), 3);
        assert!(
            csv.lines()
                .nth(1)
                .unwrap()
                .starts_with("1.000,1.000,get,50,50000000,0,50.00,50.000,")
        );
    }

    #[test]
    fn json_round_trip_then_merge() {
        let mut a = report(100, "http://a");
        a.cleanup_s = Some(0.5);
        let json = serde_json::to_string(&a).unwrap();
        let back: RunReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, a);
        // A report from before the series had a step reads as one of seconds.
        let mut older: serde_json::Value = serde_json::from_str(&json).unwrap();
        let step = older.as_object_mut().unwrap().remove("series_step_s");
        assert_eq!(step, Some(1.into()));
        assert_eq!(serde_json::from_value::<RunReport>(older).unwrap(), a);
        let mut m = back;
        let mut b = report(300, "http://b");
        (b.collection_s, b.cleanup_s) = (Some(0.25), Some(2.0));
        m.merge(&b).unwrap();
        // The merged run ends as the slower one did.
        assert_eq!((m.collection_s, m.cleanup_s), (Some(0.25), Some(2.0)));
        assert_eq!(m.merged_runs, 2);
        assert_eq!(m.endpoints, ["http://a", "http://b"]);
        let get = m.op(OpKind::Get).unwrap();
        assert_eq!(get.ops, 400);
        // Latencies 1..=100 and 1..=300 ms: 1..=100 twice make the lowest 200 of the 400
        // values, so the median (the 200th) is 100 ms, and the 99th percentile (the 396th) 296.
        let p50 = get.latency.quantile_us(0.5);
        assert!(p50.abs_diff(100_000) < 200, "{p50}");
        let p99 = get.latency.quantile_us(0.99);
        assert!(p99.abs_diff(296_000) < 600, "{p99}");
        assert_eq!(m.endpoint_totals()[1].ops, 300);
        assert_eq!(m.series[0].ops[0].ops, 50 + 150);
        assert_eq!(m.cpu.total_s(), 4.0);
    }

    /// What `agent` recorded in second `s` of a synthetic run: PUTs and GETs whose counts,
    /// bytes and latencies change with the second, an error now and then.
    fn recorded(agent: u64, s: u64) -> Recorder {
        let mut r = Recorder::new(1);
        for (op, n) in [
            (OpKind::Put, 1 + (s * 7 + agent) % 4),
            (OpKind::Get, 2 + (s + agent) % 3),
        ] {
            let c = r.cell(op, 0);
            for i in 0..n {
                c.ops += 1;
                c.bytes += 1000 + s;
                c.latency
                    .record_us(100 + (s * 131 + i * 17 + agent * 7) % 5000);
            }
            if (s + agent).is_multiple_of(5) {
                *c.errors.entry("http 500".into()).or_default() += 1;
            }
        }
        r
    }

    /// The intervals of `agent` over `seconds` seconds, as its reporter gives them: (second,
    /// end, what it recorded), a second's end a millisecond later per agent, then a sliver of
    /// 0.2 s joining the last second.
    fn intervals(agent: u64, seconds: u64) -> Vec<(usize, f64, Recorder)> {
        let late = agent as f64 * 1e-3;
        let mut out: Vec<_> = (0..seconds)
            .map(|s| (s as usize, s as f64 + 1.0 + late, recorded(agent, s)))
            .collect();
        let last = out.len() - 1;
        out.push((last, seconds as f64 + 0.2 + late, recorded(agent, seconds)));
        out
    }

    fn feed(series: &mut Series, intervals: &[(usize, f64, Recorder)]) {
        for (second, t_s, rec) in intervals {
            let point = SeriesPoint::from_interval(*t_s, 1.0, rec);
            series.add(*second, &point).unwrap();
        }
    }

    /// The series `intervals` make at `step` seconds a point, merged directly: per point,
    /// every interval of its seconds in one recorder, ending with the latest.
    fn expected(intervals: &[(usize, f64, Recorder)], step: u64) -> Vec<SeriesPoint> {
        let mut merged: BTreeMap<usize, (f64, Recorder)> = BTreeMap::new();
        for (second, t_s, rec) in intervals {
            let k = *second / step as usize;
            let (end, r) = merged.entry(k).or_insert((0.0, Recorder::new(1)));
            *end = end.max(*t_s);
            r.merge(rec);
        }
        let mut before = 0.0;
        merged
            .values()
            .map(|(end, r)| {
                let p = SeriesPoint::from_interval(*end, end - before, r);
                before = *end;
                p
            })
            .collect()
    }

    fn assert_same(series: &[SeriesPoint], expected: &[SeriesPoint]) {
        assert_eq!(series.len(), expected.len());
        for (k, (p, e)) in series.iter().zip(expected).enumerate() {
            assert_eq!(p.ops, e.ops, "point {k}: counts and histograms");
            assert_eq!(p.t_s, e.t_s, "point {k}");
            assert!((p.dt_s - e.dt_s).abs() < 1e-9, "point {k}: {p:?}");
        }
    }

    #[test]
    fn a_long_series_keeps_its_cap_and_every_operation() {
        let run = intervals(0, 400);
        let mut series = Series::with_cap(8);
        feed(&mut series, &run);
        // 400 seconds in at most 8 points: 64 s each (32 would need 13).
        assert_eq!(series.step_s(), 64);
        assert_eq!(series.points().len(), 7);
        assert_same(series.points(), &expected(&run, 64));
        let mut all = Recorder::new(1);
        run.iter().for_each(|(_, _, r)| all.merge(r));
        let sum = |points: &[SeriesPoint], f: fn(&SeriesOp) -> u64| -> u64 {
            points.iter().flat_map(|p| &p.ops).map(f).sum()
        };
        let total = all.op_total(OpKind::Put).unwrap();
        let puts = |o: &SeriesOp| if o.op == OpKind::Put { o.ops } else { 0 };
        assert_eq!(sum(series.points(), puts), total.ops);
        let (ops, bytes) = crate::control::counted(&all);
        assert_eq!(sum(series.points(), |o| o.ops), ops);
        assert_eq!(sum(series.points(), |o| o.bytes), bytes);
        let lengths: f64 = series.points().iter().map(|p| p.dt_s).sum();
        assert!((lengths - 400.2).abs() < 1e-9, "{lengths}");

        // A second however far out (a hostile agent's) coarsens, never grows the series.
        let before = sum(series.points(), |o| o.ops);
        let far = SeriesPoint::from_interval(2e6, 1.0, &recorded(0, 0));
        series.add(usize::MAX, &far).unwrap();
        assert!(series.points().len() <= 8);
        assert_eq!(
            sum(series.points(), |o| o.ops),
            before + far.ops[0].ops + far.ops[1].ops
        );
    }

    /// Two agents' seconds go into a coordinator's series by the second they are, whatever
    /// step each agent's own series is at; merging the agents' own reports gives the same.
    #[test]
    fn agents_at_other_steps_merge_as_their_intervals_do() {
        let (a, b) = (intervals(1, 100), intervals(2, 37));
        let (mut own_a, mut own_b) = (Series::with_cap(16), Series::with_cap(16));
        feed(&mut own_a, &a);
        feed(&mut own_b, &b);
        assert_eq!((own_a.step_s(), own_b.step_s()), (8, 4));

        // As they arrive: second by second, the agents' interleaved.
        let mut coordinator = Series::with_cap(16);
        for i in 0..a.len().max(b.len()) {
            for agent in [&a, &b] {
                feed(&mut coordinator, agent.get(i..=i).unwrap_or_default());
            }
        }
        let both: Vec<_> = a.iter().chain(&b).cloned().collect();
        assert_eq!(coordinator.step_s(), 8);
        assert_same(coordinator.points(), &expected(&both, 8));
        // In another order, the same series.
        let mut reversed = Series::with_cap(16);
        feed(&mut reversed, &b);
        feed(&mut reversed, &a);
        assert_eq!(reversed, coordinator);

        // `ferry-load merge` of the agents' reports, either way round.
        let report = |s: &Series| {
            let mut r = RunReport::new(RunInfo::default(), Vec::new(), &Recorder::new(1));
            r.set_series(s.clone());
            r
        };
        let (ra, rb) = (report(&own_a), report(&own_b));
        for (mut first, second) in [(ra.clone(), &rb), (rb.clone(), &ra)] {
            first.merge(second).unwrap();
            assert_eq!(first.series_step_s, 8);
            assert_eq!(first.series, coordinator.points());
        }
    }
}
