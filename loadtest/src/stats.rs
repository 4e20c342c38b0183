//! What a run measures: per operation type (and endpoint) counts, bytes, errors by kind, and
//! HDR histograms of latency, service time and time to first byte.
//!
//! Each worker records into its own [`Recorder`] (no sharing on the hot path); the reporter
//! takes the workers' recorders once a second, which gives the per-second series, and merges
//! them into the totals. Histograms are exact within 0.1% and mergeable, and they serialise
//! (HDR V2, deflated, base64) so separate runs can be merged later.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use serde::{Deserialize, Serialize};

/// Largest latency a histogram holds: one hour, in microseconds (longer values saturate).
const MAX_US: u64 = 3_600_000_000;
/// Significant decimal digits kept: values are exact to 0.1%.
const SIGFIG: u8 = 3;

/// The operation types a run performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    /// PutObject.
    Put,
    /// GetObject (body verified as it streams).
    Get,
    /// HeadObject.
    Stat,
    /// DeleteObject.
    Delete,
    /// ListObjectsV2, one page.
    List,
    /// A whole multipart upload: initiate, parts, complete.
    Multipart,
    /// One UploadPart of a multipart upload (its bytes also count in `Multipart`).
    Part,
}

impl OpKind {
    /// Every kind, in report order.
    pub const ALL: [OpKind; 7] = [
        Self::Put,
        Self::Get,
        Self::Stat,
        Self::Delete,
        Self::List,
        Self::Multipart,
        Self::Part,
    ];

    /// The lower-case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Put => "put",
            Self::Get => "get",
            Self::Stat => "stat",
            Self::Delete => "delete",
            Self::List => "list",
            Self::Multipart => "multipart",
            Self::Part => "part",
        }
    }

    /// Position in [`OpKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether the kind adds to run totals (a part is already inside its multipart upload).
    pub fn counts_in_total(self) -> bool {
        self != Self::Part
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An HDR histogram of durations in microseconds (1 µs to 1 h, 3 significant digits).
#[derive(Clone, Serialize, Deserialize)]
#[serde(try_from = "HistoSummary", into = "HistoSummary")]
pub struct Histo(Histogram<u64>);

impl fmt::Debug for Histo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Histo")
            .field("count", &self.count())
            .field("p50_us", &self.quantile_us(0.5))
            .field("max_us", &self.max_us())
            .finish()
    }
}

impl Default for Histo {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for Histo {
    /// The same values recorded the same number of times (whatever each has allocated).
    fn eq(&self, other: &Self) -> bool {
        let values = |h: &Histo| {
            h.0.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect::<Vec<_>>()
        };
        self.count() == other.count() && values(self) == values(other)
    }
}

impl Histo {
    /// An empty histogram.
    ///
    /// It grows as values come (up to [`MAX_US`]): a full-range histogram is 188 KiB of
    /// counters, one that has seen latencies up to 100 ms about 64 KiB, an unused one 16 KiB.
    /// A run keeps several per operation type, endpoint and size class, and a coordinator
    /// several per agent.
    pub fn new() -> Self {
        // Fixed, valid bounds: construction cannot fail.
        let mut h = Histogram::new_with_bounds(1, 2, SIGFIG).expect("valid histogram bounds");
        h.auto(true);
        Self(h)
    }

    /// Record one duration (clamped to 1 µs ..= 1 h).
    pub fn record(&mut self, d: Duration) {
        self.record_us(u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    }

    /// Record one value in microseconds (clamped to 1 ..= 1 h).
    pub fn record_us(&mut self, us: u64) {
        // Within the clamp the histogram can always grow to hold the value.
        let _ = self.0.record(us.clamp(1, MAX_US));
    }

    /// Add every value of `other`.
    pub fn merge(&mut self, other: &Histo) {
        // Same bounds on both sides, so every value fits.
        let _ = self.0.add(&other.0);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value at quantile `q` (0..=1) in microseconds; 0 when empty.
    pub fn quantile_us(&self, q: f64) -> u64 {
        if self.is_empty() {
            0
        } else {
            self.0.value_at_quantile(q)
        }
    }

    /// The largest value recorded, microseconds.
    pub fn max_us(&self) -> u64 {
        self.0.max()
    }

    /// The smallest value recorded, microseconds.
    pub fn min_us(&self) -> u64 {
        if self.is_empty() { 0 } else { self.0.min() }
    }

    /// The mean, microseconds.
    pub fn mean_us(&self) -> f64 {
        if self.is_empty() { 0.0 } else { self.0.mean() }
    }

    /// Forget every value (keeps the allocation).
    pub fn reset(&mut self) {
        self.0.reset();
    }

    fn encode(&self) -> String {
        // The encoding names the histogram's range, which depends on how it grew: encode a
        // copy sized by its largest value, so the same values always encode the same.
        let mut canonical = Histogram::<u64>::new_with_bounds(1, self.0.max().max(2), SIGFIG)
            .expect("valid histogram bounds");
        let _ = canonical.add(&self.0);
        let mut buf = Vec::new();
        // Serialising into a Vec cannot fail for a histogram with valid bounds.
        let _ = V2DeflateSerializer::new().serialize(&canonical, &mut buf);
        base64::engine::general_purpose::STANDARD.encode(buf)
    }

    fn decode(s: &str) -> Result<Self, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(|e| format!("histogram is not base64: {e}"))?;
        let h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("bad histogram: {e:?}"))?;
        if h.max() > MAX_US {
            return Err(format!("histogram value {} µs out of range", h.max()));
        }
        let mut out = Self::new();
        out.0
            .add(&h)
            .map_err(|e| format!("histogram out of range: {e:?}"))?;
        Ok(out)
    }
}

/// A histogram as stored and serialised: summary figures for readers, the encoded histogram
/// (a few hundred bytes) for merging. The per-second series keeps these, not live histograms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoSummary {
    /// Values recorded.
    #[serde(default)]
    pub count: u64,
    /// Smallest, µs.
    #[serde(default)]
    pub min_us: u64,
    /// Mean, µs.
    #[serde(default)]
    pub mean_us: f64,
    /// Median, µs.
    #[serde(default)]
    pub p50_us: u64,
    /// 90th percentile, µs.
    #[serde(default)]
    pub p90_us: u64,
    /// 99th percentile, µs.
    #[serde(default)]
    pub p99_us: u64,
    /// 99.9th percentile, µs.
    #[serde(default)]
    pub p999_us: u64,
    /// Largest, µs.
    #[serde(default)]
    pub max_us: u64,
    /// HDR histogram V2 log format, deflated, base64.
    pub hdr: String,
}

impl HistoSummary {
    /// The histogram back, for merging.
    pub fn histo(&self) -> Result<Histo, String> {
        Histo::decode(&self.hdr)
    }
}

impl From<&Histo> for HistoSummary {
    fn from(h: &Histo) -> Self {
        Self {
            count: h.count(),
            min_us: h.min_us(),
            mean_us: h.mean_us(),
            p50_us: h.quantile_us(0.5),
            p90_us: h.quantile_us(0.9),
            p99_us: h.quantile_us(0.99),
            p999_us: h.quantile_us(0.999),
            max_us: h.max_us(),
            hdr: h.encode(),
        }
    }
}

impl From<Histo> for HistoSummary {
    fn from(h: Histo) -> Self {
        Self::from(&h)
    }
}

impl TryFrom<HistoSummary> for Histo {
    type Error = String;
    fn try_from(r: HistoSummary) -> Result<Self, String> {
        Self::decode(&r.hdr)
    }
}

/// Client-side work, in nanoseconds: what generating, hashing and verifying cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Costs {
    /// Filling request bodies from the fill.
    pub fill_ns: u64,
    /// Comparing received bodies with the regenerated content.
    pub verify_ns: u64,
    /// Bytes compared.
    pub verified_bytes: u64,
    /// MD5 / SHA-256 of bodies (`--md5`, `--payload-sha256`).
    pub hash_ns: u64,
    /// Requests sent again on a new connection because a kept-alive one turned out closed
    /// by the server (not errors: the server may close idle connections).
    #[serde(default)]
    pub reconnects: u64,
    /// Operations sent again after a throttling answer or a lost connection, after a backoff
    /// (`--retries`; not errors unless the last attempt failed too).
    #[serde(default)]
    pub retries: u64,
    /// Of `retries`, those after a throttling answer (`503 SlowDown`, `429`, ...); the
    /// answers that ended their operation are counted in [`OpStats::throttled`].
    #[serde(default)]
    pub throttled_retries: u64,
    /// CPU time of the operations on the client's threads (each poll of an operation's
    /// future on the thread CPU clock, retries included; `ferry_cpu`).
    #[serde(default)]
    pub cpu_ns: u64,
}

impl Costs {
    /// Add `other` into `self`.
    pub fn add(&mut self, other: &Costs) {
        self.fill_ns += other.fill_ns;
        self.verify_ns += other.verify_ns;
        self.verified_bytes += other.verified_bytes;
        self.hash_ns += other.hash_ns;
        self.reconnects += other.reconnects;
        self.retries += other.retries;
        self.throttled_retries += other.throttled_retries;
        self.cpu_ns += other.cpu_ns;
    }
}

/// A reading of the calling thread's CPU clock. The client's own work (generating, verifying,
/// hashing bodies) is timed with it, not with the wall clock: on a loaded machine a thread
/// preempted mid-fill would otherwise count the time it waited as work.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuMark(std::time::Duration);

impl CpuMark {
    pub(crate) fn now() -> Self {
        Self(ferry_cpu::thread_cpu())
    }
}

/// CPU nanoseconds of this thread since `t`, as [`Costs`] counts them.
pub(crate) fn elapsed_ns(t: CpuMark) -> u64 {
    let spent = ferry_cpu::thread_cpu().saturating_sub(t.0);
    u64::try_from(spent.as_nanos()).unwrap_or(u64::MAX)
}

/// Everything measured for one operation type (on one endpoint, in one interval or in all).
///
/// An operation ends in one of three results: a success, a failure (counted in `errors` by
/// kind), or throttled (the server still answered "slow down" after the last retry: counted
/// in `throttled`, with its own latency histogram). `ops`, `latency`, `service` and `ttfb`
/// cover the first two, so a throttled run still says how fast the server did its work.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpStats {
    /// Operations completed, successful or failed (throttled ones are in `throttled`).
    pub ops: u64,
    /// Payload bytes moved by successful operations (sent for PUT, received for GET).
    pub bytes: u64,
    /// Failed operations by kind (`s3 NoSuchKey/404`, `transport ...`, `verify ...`).
    pub errors: BTreeMap<String, u64>,
    /// Latency of every operation completed (`ops`): from its intended start in open-loop
    /// mode (corrected for coordinated omission), from its actual start otherwise.
    pub latency: Histo,
    /// Open-loop mode only: from the actual start (what the server took, without queueing).
    pub service: Histo,
    /// Time to the response head (GET), from the same origin as `latency`.
    pub ttfb: Histo,
    /// Client-side costs.
    pub costs: Costs,
    /// Operations that ended throttled: their last attempt was answered `503 SlowDown` (or
    /// another throttling answer) with no retry left.
    #[serde(default)]
    pub throttled: u64,
    /// Latency of the throttled operations (every attempt included), from the same origin as
    /// `latency`.
    #[serde(default)]
    pub throttled_latency: Histo,
}

impl OpStats {
    /// Errors of all kinds.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Operations of every result: completed and throttled.
    pub fn attempted(&self) -> u64 {
        self.ops + self.throttled
    }

    /// Add `other` into `self`.
    pub fn merge(&mut self, other: &OpStats) {
        self.ops += other.ops;
        self.bytes += other.bytes;
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
        self.latency.merge(&other.latency);
        self.service.merge(&other.service);
        self.ttfb.merge(&other.ttfb);
        self.costs.add(&other.costs);
        self.throttled += other.throttled;
        self.throttled_latency.merge(&other.throttled_latency);
    }

    /// Zero everything, keeping the histograms' allocations.
    pub fn reset(&mut self) {
        self.ops = 0;
        self.bytes = 0;
        self.errors.clear();
        self.latency.reset();
        self.service.reset();
        self.ttfb.reset();
        self.costs = Costs::default();
        self.throttled = 0;
        self.throttled_latency.reset();
    }

    fn is_empty(&self) -> bool {
        self.ops == 0 && self.throttled == 0 && self.costs == Costs::default()
    }
}

/// A body that differed from the regenerated content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MismatchReport {
    /// The object key.
    pub key: String,
    /// Offset of the first differing byte within the object.
    pub offset: u64,
    /// The byte expected there.
    pub expected: u8,
    /// The byte received.
    pub found: u8,
}

/// At most this many mismatches are kept with their details (all are counted as errors).
pub const MAX_MISMATCHES: usize = 1000;

/// Stats per (operation type, endpoint), and per (operation type, size class) when sizes
/// vary, allocated on first use.
///
/// It serialises (as [`RecorderWire`]) so that agents can send what each interval recorded
/// to their coordinator, which merges it exactly.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "RecorderWire", into = "RecorderWire")]
pub struct Recorder {
    endpoints: usize,
    cells: Vec<Option<Box<OpStats>>>,
    /// Indexed by `class * OpKind::ALL.len() + op`; grows with the classes seen.
    by_class: Vec<Option<Box<OpStats>>>,
    /// Mismatches seen, with details (capped at [`MAX_MISMATCHES`]).
    pub mismatches: Vec<MismatchReport>,
}

/// A [`Recorder`] as it travels: only the cells with something recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecorderWire {
    endpoints: usize,
    cells: Vec<(OpKind, usize, OpStats)>,
    #[serde(default)]
    classes: Vec<(OpKind, usize, OpStats)>,
    #[serde(default)]
    mismatches: Vec<MismatchReport>,
}

/// Endpoints and size classes a recorder read from the wire may name: far more than any run
/// has, few enough that a hostile document cannot make it allocate much.
const MAX_WIRE_CELLS: usize = 1 << 16;

impl From<Recorder> for RecorderWire {
    fn from(r: Recorder) -> Self {
        Self {
            endpoints: r.endpoints,
            cells: r.entries().map(|(op, ep, s)| (op, ep, s.clone())).collect(),
            classes: r
                .class_entries()
                .map(|(op, c, s)| (op, c, s.clone()))
                .collect(),
            mismatches: r.mismatches,
        }
    }
}

impl TryFrom<RecorderWire> for Recorder {
    type Error = String;

    fn try_from(w: RecorderWire) -> Result<Self, String> {
        let too_many = |n: usize| n == 0 || n > MAX_WIRE_CELLS;
        if too_many(w.endpoints) {
            return Err(format!("a recorder of {} endpoints", w.endpoints));
        }
        let mut r = Recorder::new(w.endpoints);
        for (op, ep, s) in &w.cells {
            if *ep >= w.endpoints {
                return Err(format!(
                    "a recorder cell names endpoint {ep} of {}",
                    w.endpoints
                ));
            }
            r.cell(*op, *ep).merge(s);
        }
        for (op, c, s) in &w.classes {
            if too_many(c + 1) {
                return Err(format!("a recorder cell names size class {c}"));
            }
            r.class_cell(*op, *c).merge(s);
        }
        for m in w.mismatches {
            r.mismatch(m);
        }
        Ok(r)
    }
}

impl Default for Recorder {
    /// An empty recorder for one endpoint.
    fn default() -> Self {
        Self::new(1)
    }
}

impl Recorder {
    /// An empty recorder for `endpoints` endpoints.
    pub fn new(endpoints: usize) -> Self {
        let endpoints = endpoints.max(1);
        Self {
            endpoints,
            cells: vec![None; OpKind::ALL.len() * endpoints],
            by_class: Vec::new(),
            mismatches: Vec::new(),
        }
    }

    /// The stats of `op` on objects of size class `class` (created on first use).
    pub fn class_cell(&mut self, op: OpKind, class: usize) -> &mut OpStats {
        let i = class * OpKind::ALL.len() + op.index();
        if self.by_class.len() <= i {
            self.by_class.resize(i + 1, None);
        }
        self.by_class[i].get_or_insert_with(Box::default)
    }

    /// Every (op, size class, stats) with something recorded, by class then op.
    pub fn class_entries(&self) -> impl Iterator<Item = (OpKind, usize, &OpStats)> {
        self.by_class.iter().enumerate().filter_map(|(i, s)| {
            let s = s.as_deref().filter(|s| !s.is_empty())?;
            let n = OpKind::ALL.len();
            Some((OpKind::ALL[i % n], i / n, s))
        })
    }

    /// Number of endpoints.
    pub fn endpoints(&self) -> usize {
        self.endpoints
    }

    /// The stats of `op` on endpoint `ep` (created on first use).
    pub fn cell(&mut self, op: OpKind, ep: usize) -> &mut OpStats {
        let i = op.index() * self.endpoints + ep.min(self.endpoints - 1);
        self.cells[i].get_or_insert_with(Box::default)
    }

    /// The stats of `op` on `ep`, if anything was recorded.
    pub fn get(&self, op: OpKind, ep: usize) -> Option<&OpStats> {
        let i = op.index() * self.endpoints + ep;
        self.cells.get(i)?.as_deref().filter(|s| !s.is_empty())
    }

    /// Record a mismatch (details kept up to the cap).
    pub fn mismatch(&mut self, m: MismatchReport) {
        if self.mismatches.len() < MAX_MISMATCHES {
            self.mismatches.push(m);
        }
    }

    /// Add everything `other` holds into `self`.
    pub fn merge(&mut self, other: &Recorder) {
        for op in OpKind::ALL {
            for ep in 0..other.endpoints {
                if let Some(s) = other.get(op, ep) {
                    self.cell(op, ep).merge(s);
                }
            }
        }
        for (op, class, s) in other.class_entries() {
            self.class_cell(op, class).merge(s);
        }
        for m in &other.mismatches {
            self.mismatch(m.clone());
        }
    }

    /// Zero everything, keeping allocations.
    pub fn reset(&mut self) {
        for s in self.cells.iter_mut().chain(&mut self.by_class).flatten() {
            s.reset();
        }
        self.mismatches.clear();
    }

    /// `op` summed over endpoints.
    pub fn op_total(&self, op: OpKind) -> Option<OpStats> {
        let mut out: Option<OpStats> = None;
        for ep in 0..self.endpoints {
            if let Some(s) = self.get(op, ep) {
                out.get_or_insert_with(OpStats::default).merge(s);
            }
        }
        out
    }

    /// Every (op, endpoint, stats) with something recorded.
    pub fn entries(&self) -> impl Iterator<Item = (OpKind, usize, &OpStats)> {
        OpKind::ALL.into_iter().flat_map(move |op| {
            (0..self.endpoints).filter_map(move |ep| self.get(op, ep).map(|s| (op, ep, s)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::{Rng, SeedableRng};
    use rand_pcg::Pcg64;

    /// A histogram's quantile is within its 0.1% precision of the exact order statistic.
    fn assert_close(got: u64, exact: u64) {
        let tol = (exact / 500).max(1);
        assert!(got.abs_diff(exact) <= tol, "got {got}, exact {exact}");
    }

    fn exact_quantile(sorted: &[u64], q: f64) -> u64 {
        // HDR's definition: the smallest value with at least q of the values at or below it.
        let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
        sorted[rank - 1]
    }

    #[test]
    fn quantiles_of_a_known_distribution() {
        // Uniform 1..=10_000 µs: p50 = 5 ms, p99 = 9.9 ms, exactly.
        let mut h = Histo::new();
        for us in 1..=10_000 {
            h.record(Duration::from_micros(us));
        }
        assert_eq!(h.count(), 10_000);
        assert_close(h.quantile_us(0.5), 5_000);
        assert_close(h.quantile_us(0.99), 9_900);
        assert_close(h.max_us(), 10_000);
    }

    #[test]
    fn quantiles_match_sorting_for_a_skewed_source() {
        // Exponential latencies (mean 2 ms) with a 1% tail of 200..400 ms stalls.
        let mut rng = Pcg64::seed_from_u64(9);
        let mut values = Vec::new();
        let mut h = Histo::new();
        for _ in 0..50_000 {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            let v = if rng.next_u64() % 100 == 0 {
                200_000 + rng.next_u64() % 200_000
            } else {
                (-(1.0 - u).ln() * 2_000.0) as u64 + 1
            };
            values.push(v);
            h.record_us(v);
        }
        values.sort_unstable();
        for q in [0.5, 0.9, 0.99, 0.999] {
            assert_close(h.quantile_us(q), exact_quantile(&values, q));
        }
    }

    #[test]
    fn merging_equals_recording_everything_in_one() {
        let mut parts = [Histo::new(), Histo::new(), Histo::new()];
        let mut all = Histo::new();
        for i in 0..30_000u64 {
            let v = (i * 7919) % 100_000 + 1;
            parts[(i % 3) as usize].record_us(v);
            all.record_us(v);
        }
        let mut merged = Histo::new();
        for p in &parts {
            merged.merge(p);
        }
        assert_eq!(merged, all);
        for q in [0.5, 0.99, 0.999] {
            assert_eq!(merged.quantile_us(q), all.quantile_us(q));
        }
    }

    #[test]
    fn histograms_round_trip_through_json_and_still_merge() {
        let mut h = Histo::new();
        for us in [3, 70, 900, 12_000, 500_000] {
            h.record_us(us);
        }
        let json = serde_json::to_string(&h).unwrap();
        assert!(json.contains("\"p50_us\":900"), "{json}");
        let back: Histo = serde_json::from_str(&json).unwrap();
        assert_eq!(back, h);
        let mut twice = back.clone();
        twice.merge(&h);
        assert_eq!(twice.count(), 10);
        assert_eq!(twice.max_us(), h.max_us());
        assert!(serde_json::from_str::<Histo>(r#"{"hdr":"not base64!"}"#).is_err());
    }

    #[test]
    fn histograms_grow_as_needed_and_compare_by_their_values() {
        let mut small = Histo::new();
        small.record_us(5);
        // One that grew to the full range, then forgot its values: larger, same content.
        let mut large = Histo::new();
        large.record_us(MAX_US);
        large.reset();
        large.record_us(5);
        assert!(large.0.distinct_values() > small.0.distinct_values());
        assert_eq!(small, large);
        assert_eq!(large, small);
        assert_eq!(
            small.encode(),
            large.encode(),
            "the same values encode the same"
        );
        large.record_us(6);
        assert_ne!(small, large);
        // Merging grows the smaller one.
        let mut m = Histo::new();
        m.merge(&large);
        assert_eq!((m.count(), m.max_us()), (2, 6));
    }

    #[test]
    fn out_of_range_values_saturate() {
        let mut h = Histo::new();
        h.record(Duration::ZERO);
        h.record(Duration::from_secs(10_000));
        assert_eq!(h.count(), 2);
        assert_eq!(h.min_us(), 1);
        assert!(h.max_us() >= MAX_US);
    }

    #[test]
    fn recorder_cells_merge_per_op_and_endpoint() {
        let mut a = Recorder::new(2);
        a.cell(OpKind::Get, 0).ops += 2;
        a.cell(OpKind::Get, 1).ops += 3;
        *a.cell(OpKind::Put, 1)
            .errors
            .entry("http 503".into())
            .or_default() += 1;
        a.cell(OpKind::Put, 1).ops += 1;
        let mut b = Recorder::new(2);
        b.merge(&a);
        b.merge(&a);
        assert_eq!(b.op_total(OpKind::Get).unwrap().ops, 10);
        assert_eq!(b.get(OpKind::Put, 1).unwrap().error_count(), 2);
        assert!(b.get(OpKind::Put, 0).is_none());
        assert_eq!(b.entries().count(), 3);
        b.reset();
        assert_eq!(b.entries().count(), 0);
    }

    #[test]
    fn recorders_travel_and_merge_exactly() {
        let mut a = Recorder::new(2);
        for i in 1..=500u64 {
            let c = a.cell(OpKind::Get, (i % 2) as usize);
            c.ops += 1;
            c.bytes += 10;
            c.latency.record_us(i * 37);
            a.class_cell(OpKind::Get, (i % 3) as usize)
                .latency
                .record_us(i * 37);
            a.class_cell(OpKind::Get, (i % 3) as usize).ops += 1;
        }
        a.cell(OpKind::Put, 1).throttled += 2;
        a.cell(OpKind::Put, 1).throttled_latency.record_us(5);
        a.mismatch(MismatchReport {
            key: "k".into(),
            offset: 1,
            expected: 2,
            found: 3,
        });
        let json = serde_json::to_string(&a).unwrap();
        let back: Recorder = serde_json::from_str(&json).unwrap();
        let mut twice = Recorder::new(2);
        twice.merge(&back);
        twice.merge(&a);
        let get = twice.op_total(OpKind::Get).unwrap();
        assert_eq!((get.ops, get.bytes), (1000, 10_000));
        let mut union = a.op_total(OpKind::Get).unwrap().latency;
        union.merge(&a.op_total(OpKind::Get).unwrap().latency);
        assert_eq!(get.latency, union);
        assert_eq!(twice.op_total(OpKind::Put).unwrap().throttled, 4);
        let classes: Vec<_> = twice.class_entries().map(|(_, c, s)| (c, s.ops)).collect();
        assert_eq!(classes, [(0, 332), (1, 334), (2, 334)]);
        assert_eq!(twice.mismatches.len(), 2);
        // Cells naming endpoints the recorder does not have are refused.
        let bad = json.replacen("\"endpoints\":2", "\"endpoints\":1", 1);
        assert!(serde_json::from_str::<Recorder>(&bad).is_err(), "{bad}");
    }
}
