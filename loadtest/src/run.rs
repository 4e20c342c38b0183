//! The engine: create buckets, prepare objects, run the workers (closed or open loop) while a
//! reporter collects their samples each second, then clean up.
//!
//! Workers push one small [`Sample`] per operation into their own queue; the reporter drains
//! the queues once a second into HDR histograms. Workers never touch a histogram, so the
//! memory of a run does not grow with its concurrency.

use std::io::{self, IsTerminal as _, Write as _};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ferry_core::rt::{Either, Signal, Stream as _, TimedOut, race, timeout};
use ferry_net::{NetRuntime, rustls};
use ferry_runtime::OnRuntime;
use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use crate::client::{ClientOptions, OpResult, S3Client};
use crate::config::{LoadConfig, ProgressMode, Share, Workload};
use crate::control::{Interval, RunControl, SeriesAt};
use crate::endpoint::Endpoint;
use crate::error::{OpError, VerifyError};
use crate::keys::{object_key, parse_object_key};
use crate::report::{Prepared, RunInfo, RunReport, Series, SeriesPoint, fmt_us};
use crate::rusage::CpuTimes;
use crate::size::{SizeClass, class_of};
use crate::stats::{Costs, Histo, OpKind, OpStats, Recorder};

/// One finished operation, as a worker hands it to the reporter.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Operation type.
    pub op: OpKind,
    /// Endpoint index.
    pub endpoint: usize,
    /// From the intended start (open loop) or the actual start to the end.
    pub latency: Duration,
    /// Open loop: from the actual start to the end.
    pub service: Option<Duration>,
    /// To the response head (GET), from the same origin as `latency`.
    pub ttfb: Option<Duration>,
    /// Payload bytes moved (successful operations).
    pub bytes: u64,
    /// Why it failed.
    pub error: Option<OpError>,
    /// Client-side work.
    pub costs: Costs,
    /// The size class of the object (`--size` ranges and weights), for the per-size
    /// breakdown.
    pub size_class: Option<usize>,
}

impl Sample {
    /// Add the sample to `rec`: to its operation type and endpoint, and to its size class.
    pub fn record(&self, rec: &mut Recorder) {
        self.record_into(rec.cell(self.op, self.endpoint));
        if let Some(c) = self.size_class {
            self.record_into(rec.class_cell(self.op, c));
        }
        if let Some(OpError::Verify(VerifyError::Mismatch(m))) = &self.error {
            rec.mismatch(m.clone());
        }
    }

    fn record_into(&self, cell: &mut OpStats) {
        cell.costs.add(&self.costs);
        // A throttled operation is its own result: it did no work to time with the others.
        if self.error.as_ref().is_some_and(OpError::is_throttling) {
            cell.throttled += 1;
            cell.throttled_latency.record(self.latency);
            return;
        }
        cell.ops += 1;
        cell.latency.record(self.latency);
        if let Some(s) = self.service {
            cell.service.record(s);
        }
        if let Some(t) = self.ttfb {
            cell.ttfb.record(t);
        }
        match &self.error {
            None => cell.bytes += self.bytes,
            Some(e) => *cell.errors.entry(e.kind()).or_default() += 1,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; a poisoned one still holds valid data.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

// splitmix64's finaliser, to derive per-worker random streams from the seed.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// State shared by the workers and the reporter.
struct Shared<R: NetRuntime> {
    cfg: LoadConfig,
    client: Arc<S3Client<R>>,
    buckets: Vec<String>,
    /// Start of the measured phase (runtime clock).
    t0: Duration,
    deadline: Option<Duration>,
    /// Operation tickets: bound `--ops` and give each open-loop operation its slot.
    next_op: AtomicU64,
    /// Ids of new objects (after the prepared ones).
    next_id: AtomicU64,
    /// Delete workload: the next prepared object to delete.
    next_delete: AtomicU64,
    /// Mixed workload: existing objects not in use by an operation now.
    live: Mutex<Vec<u64>>,
    /// The delete workload ran out of objects.
    exhausted: AtomicBool,
    /// One sample queue per worker.
    queues: Vec<Mutex<Vec<Sample>>>,
    /// The per-size classes of `--size` (empty for a fixed size).
    classes: Vec<SizeClass>,
    /// Start gate, early stop, observers.
    control: Arc<RunControl>,
}

impl<R: NetRuntime> Shared<R> {
    fn rt(&self) -> &R {
        self.client.runtime()
    }

    fn bucket(&self, id: u64) -> &str {
        &self.buckets[(id % self.buckets.len() as u64) as usize]
    }

    fn size(&self, id: u64) -> u64 {
        self.cfg.size.size_for(self.cfg.seed, id)
    }

    fn key(&self, id: u64, size: u64) -> String {
        object_key(&self.cfg.prefix, id, size)
    }

    /// Object `n` of this run (of its share of a run across machines).
    fn id(&self, n: u64) -> u64 {
        self.cfg.id_base() + n
    }

    /// The next operation's intended start (`None` in closed loop), or `None` at the end.
    fn ticket(&self) -> Option<Option<Duration>> {
        if self.exhausted.load(Ordering::Relaxed) || self.control.stopped() {
            return None;
        }
        let k = self.next_op.fetch_add(1, Ordering::Relaxed);
        if self.cfg.ops.is_some_and(|max| k >= max) {
            return None;
        }
        let intended = self
            .cfg
            .rate
            .map(|r| self.t0 + Duration::from_secs_f64(k as f64 / r));
        let when = intended.unwrap_or_else(|| self.rt().now());
        if self.deadline.is_some_and(|d| when >= d) {
            return None;
        }
        Some(intended)
    }

    /// The sample of an operation on an object of `size` bytes (if it has one).
    fn sample(
        &self,
        op: OpKind,
        size: Option<u64>,
        res: OpResult,
        origin: Duration,
        started: Duration,
    ) -> Sample {
        let ended = self.rt().now();
        Sample {
            op,
            endpoint: res.endpoint,
            latency: ended.saturating_sub(origin),
            service: self.cfg.rate.map(|_| ended.saturating_sub(started)),
            ttfb: res
                .head_at
                .filter(|_| op == OpKind::Get)
                .map(|h| h.saturating_sub(origin)),
            bytes: res.bytes,
            error: res.error,
            costs: res.costs,
            size_class: size.and_then(|n| class_of(&self.classes, n)),
        }
    }

    async fn put(&self, id: u64, origin: Duration, started: Duration) -> Sample {
        let size = self.size(id);
        let key = self.key(id, size);
        let bucket = self.bucket(id);
        let res = self
            .retrying(|| self.client.put_object(bucket, &key, id, size))
            .await;
        self.sample(OpKind::Put, Some(size), res, origin, started)
    }

    async fn get(&self, id: u64, origin: Duration, started: Duration) -> Sample {
        let size = self.size(id);
        let key = self.key(id, size);
        let bucket = self.bucket(id);
        let res = self
            .retrying(|| self.client.get_object(bucket, &key, id, size))
            .await;
        self.sample(OpKind::Get, Some(size), res, origin, started)
    }

    async fn stat(&self, id: u64, origin: Duration, started: Duration) -> Sample {
        let size = self.size(id);
        let key = self.key(id, size);
        let bucket = self.bucket(id);
        let res = self
            .retrying(|| self.client.stat_object(bucket, &key, id, size))
            .await;
        self.sample(OpKind::Stat, Some(size), res, origin, started)
    }

    async fn delete(&self, id: u64, origin: Duration, started: Duration) -> Sample {
        let size = self.size(id);
        let key = self.key(id, size);
        let bucket = self.bucket(id);
        let res = self
            .retrying(|| self.client.delete_object(bucket, &key))
            .await;
        self.sample(OpKind::Delete, Some(size), res, origin, started)
    }

    /// Run `op` (an idempotent object operation) again after a retryable failure, up to
    /// `--retries` times, after an exponential backoff with jitter as the AWS SDKs do:
    /// a throttling answer (`503 SlowDown`, `429`: a server shedding load or a node
    /// restarting) or a lost connection. Other failures (4xx, wrong content) are final at
    /// once. Retries and throttling answers are counted in the result's costs, apart from
    /// failures; latency covers every attempt.
    async fn retrying<F, Fut>(&self, mut op: F) -> OpResult
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = OpResult>,
    {
        let mut retries = 0u64;
        let mut costs = crate::stats::Costs::default();
        let mut attempt = 0u32;
        loop {
            // The client's CPU time for this operation: its polls on the thread CPU clock.
            let cpu = ferry_cpu::CpuAccount::new();
            let mut res = cpu.measure(op()).await;
            res.costs.cpu_ns += u64::try_from(cpu.total().as_nanos()).unwrap_or(u64::MAX);
            let again =
                attempt < self.cfg.retries && res.error.as_ref().is_some_and(OpError::is_retryable);
            if !again {
                costs.add(&res.costs);
                costs.retries += retries;
                res.costs = costs;
                return res;
            }
            costs.add(&res.costs);
            if res.error.as_ref().is_some_and(OpError::is_throttling) {
                costs.throttled_retries += 1;
            }
            retries += 1;
            let wait = backoff(attempt, self.rt().now());
            attempt += 1;
            self.rt().sleep(wait).await;
        }
    }

    /// Take a live object for exclusive use (mixed workload).
    fn take_live(&self, rng: &mut Pcg64) -> Option<u64> {
        let mut live = lock(&self.live);
        if live.is_empty() {
            return None;
        }
        let i = (rng.next_u64() % live.len() as u64) as usize;
        Some(live.swap_remove(i))
    }

    fn give_live(&self, id: u64) {
        lock(&self.live).push(id);
    }

    /// One operation of the workload into `out`; `false` when there is nothing left to do.
    async fn one_op(
        &self,
        worker: &mut WorkerState,
        origin: Duration,
        started: Duration,
        out: &mut Vec<Sample>,
    ) -> bool {
        let cfg = &self.cfg;
        match cfg.workload {
            Workload::Put => {
                let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                out.push(self.put(id, origin, started).await);
            }
            Workload::Get => {
                let id = self.id(worker.rng.next_u64() % cfg.objects);
                out.push(self.get(id, origin, started).await);
            }
            Workload::Stat => {
                let id = self.id(worker.rng.next_u64() % cfg.objects);
                out.push(self.stat(id, origin, started).await);
            }
            Workload::Delete => {
                let n = self.next_delete.fetch_add(1, Ordering::Relaxed);
                if n >= cfg.objects {
                    self.exhausted.store(true, Ordering::Relaxed);
                    return false;
                }
                out.push(self.delete(self.id(n), origin, started).await);
            }
            Workload::List => {
                let bucket = &self.buckets[worker.index % self.buckets.len()];
                let (res, page) = self
                    .client
                    .list_page(
                        bucket,
                        &cfg.prefix,
                        worker.list_token.as_deref(),
                        cfg.list_max_keys,
                    )
                    .await;
                worker.list_token = page.next;
                out.push(self.sample(OpKind::List, None, res, origin, started));
            }
            Workload::Multipart => {
                let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                let size = cfg.part_size * u64::from(cfg.parts);
                let key = self.key(id, size);
                let (res, parts) = self
                    .client
                    .multipart_upload(
                        self.bucket(id),
                        &key,
                        id,
                        cfg.part_size,
                        cfg.parts,
                        cfg.parts_in_flight,
                    )
                    .await;
                for p in parts {
                    let mut s = self.sample(OpKind::Part, None, p.result, p.started, p.started);
                    s.latency = p.ended.saturating_sub(p.started);
                    s.service = None;
                    out.push(s);
                }
                out.push(self.sample(OpKind::Multipart, None, res, origin, started));
            }
            Workload::Mixed => {
                let m = cfg.mix;
                let mut pick = worker.rng.next_u64() % m.total();
                let choose = |w: u32, pick: &mut u64| {
                    if *pick < u64::from(w) {
                        true
                    } else {
                        *pick -= u64::from(w);
                        false
                    }
                };
                let op = if choose(m.get, &mut pick) {
                    OpKind::Get
                } else if choose(m.stat, &mut pick) {
                    OpKind::Stat
                } else if choose(m.put, &mut pick) {
                    OpKind::Put
                } else {
                    OpKind::Delete
                };
                // Reads and deletes need an existing object; with none free, put one.
                let leased = match op {
                    OpKind::Put => None,
                    _ => self.take_live(&mut worker.rng),
                };
                let sample = match (op, leased) {
                    (OpKind::Get, Some(id)) => self.get(id, origin, started).await,
                    (OpKind::Stat, Some(id)) => self.stat(id, origin, started).await,
                    (OpKind::Delete, Some(id)) => self.delete(id, origin, started).await,
                    _ => {
                        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                        let s = self.put(id, origin, started).await;
                        if s.error.is_none() {
                            self.give_live(id);
                        }
                        s
                    }
                };
                if let Some(id) = leased {
                    // A deleted object leaves the set; a failed delete keeps it.
                    if sample.op != OpKind::Delete || sample.error.is_some() {
                        self.give_live(id);
                    }
                }
                out.push(sample);
            }
        }
        true
    }
}

/// The pause before retry `attempt` (0 first): a random time (from `seed`) between half and
/// all of a cap of 100 ms doubling up to 2 s, so that clients turned away together do not come
/// back together.
fn backoff(attempt: u32, seed: Duration) -> Duration {
    const BASE: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(2);
    let cap = BASE.saturating_mul(1u32 << attempt.min(16)).min(MAX);
    let nanos = u64::try_from(cap.as_nanos()).unwrap_or(u64::MAX).max(1);
    let r = mix(u64::try_from(seed.as_nanos()).unwrap_or(0) ^ u64::from(attempt));
    // At least half the cap: a retry right away would find the same state.
    Duration::from_nanos(nanos / 2 + r % (nanos / 2 + 1))
}

/// What a worker keeps between operations.
struct WorkerState {
    index: usize,
    rng: Pcg64,
    list_token: Option<String>,
}

async fn worker<R: NetRuntime>(sh: Arc<Shared<R>>, index: usize) {
    let mut state = WorkerState {
        index,
        // Each worker of each share (agent) has its own random stream.
        rng: Pcg64::seed_from_u64(mix(sh.cfg.seed
            ^ mix(index as u64 + 1)
            ^ mix(sh.cfg.id_base()))),
        list_token: None,
    };
    let mut local = Vec::with_capacity(8);
    while let Some(intended) = sh.ticket() {
        if let Some(at) = intended {
            let now = sh.rt().now();
            if at > now {
                sh.rt().sleep(at - now).await;
            }
        }
        let started = sh.rt().now();
        let origin = intended.unwrap_or(started);
        local.clear();
        let more = sh.one_op(&mut state, origin, started, &mut local).await;
        lock(&sh.queues[index]).append(&mut local);
        if !more {
            break;
        }
    }
}

/// A progress line: the interval's rates and the run's totals so far.
fn progress_line(
    point: &SeriesPoint,
    what: &str,
    ops: u64,
    errors: u64,
    throttled: u64,
    p99_us: u64,
) -> String {
    let throttled = if throttled > 0 {
        format!("  throttled {throttled}")
    } else {
        String::new()
    };
    format!(
        "[{:>6.1}s]{what} {:>9.1} ops/s {:>9.1} MB/s  ops {ops}  errors {errors}{throttled}  p99 {}",
        point.t_s,
        point.ops_per_s(),
        point.mb_per_s(),
        fmt_us(p99_us)
    )
}

/// The live progress display.
pub(crate) struct Progress {
    mode: ProgressMode,
    tty: bool,
}

impl Progress {
    pub(crate) fn new(mode: ProgressMode) -> Self {
        Self {
            mode,
            tty: mode == ProgressMode::Auto && std::io::stderr().is_terminal(),
        }
    }

    /// Show the interval `point` (`what` after its time) and the run's `totals` so far.
    pub(crate) fn show(&self, point: &SeriesPoint, what: &str, totals: &Recorder) {
        if self.mode == ProgressMode::Off {
            return;
        }
        let mut all = Histo::new();
        let (mut ops, mut errors, mut throttled) = (0, 0, 0);
        for op in OpKind::ALL.into_iter().filter(|o| o.counts_in_total()) {
            if let Some(s) = totals.op_total(op) {
                all.merge(&s.latency);
                ops += s.ops;
                errors += s.error_count();
                throttled += s.throttled;
            }
        }
        let p99 = all.quantile_us(0.99);
        self.line(&progress_line(point, what, ops, errors, throttled, p99));
    }

    /// Show `line` (`\r`-updated on a terminal).
    pub(crate) fn line(&self, line: &str) {
        if self.mode == ProgressMode::Off {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = if self.tty {
            write!(err, "\r\x1b[2K{line}")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
    }

    pub(crate) fn finish(&self) {
        if self.tty {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// Collect the workers' samples once a second until `done`; the totals and the series.
///
/// Each interval goes to the run's observers as it ends (an agent sends it to its
/// coordinator), and into the series by [`Series::add`], the rule a coordinator merging many
/// agents' intervals follows too.
async fn reporter<R: NetRuntime>(sh: Arc<Shared<R>>, done: Arc<Signal>) -> (Recorder, Series) {
    let endpoints = sh.client.endpoints().len();
    let mut totals = Recorder::new(endpoints);
    let mut interval = Recorder::new(endpoints);
    let mut series = Series::default();
    // Seconds of the series so far.
    let mut seconds = 0usize;
    let mut spare: Vec<Sample> = Vec::new();
    let progress = Progress::new(sh.cfg.progress);
    let mut last = sh.t0;
    for tick in 1u64.. {
        let at = sh.t0 + Duration::from_secs(tick);
        let wait = at.saturating_sub(sh.rt().now());
        let finished = matches!(
            race(done.wait(), sh.rt().sleep(wait)).await,
            Either::Left(())
        );
        interval.reset();
        for q in &sh.queues {
            std::mem::swap(&mut *lock(q), &mut spare);
            for s in spare.drain(..) {
                s.record(&mut interval);
            }
        }
        totals.merge(&interval);
        let now = sh.rt().now();
        let dt = now.saturating_sub(last).as_secs_f64();
        last = now;
        let t_s = now.saturating_sub(sh.t0).as_secs_f64();
        // The operations still in flight at the deadline end a moment later: a sliver of an
        // interval would show as a spike, so it joins the second before it. An empty last
        // interval adds no point.
        let sliver = finished && dt < 0.5 && seconds > 0;
        let index = if sliver {
            Some(seconds - 1)
        } else if !finished || interval.entries().next().is_some() {
            seconds += 1;
            Some(seconds - 1)
        } else {
            None
        };
        let point = SeriesPoint::from_interval(t_s, dt, &interval);
        if let Some(index) = index {
            if !series.fits(index) {
                // Merging every pair of points takes seconds: not on a thread running the load.
                let mut s = std::mem::take(&mut series);
                series = sh
                    .rt()
                    .unblock(move || {
                        let _ = s.make_room(index);
                        s
                    })
                    .await;
            }
            // Locally made histograms always decode.
            let _ = series.add(index, &point);
        }
        sh.control.interval(&Interval {
            tick,
            at: index.map(|index| SeriesAt {
                index,
                t_s,
                dt_s: dt,
            }),
            delta: &interval,
            last: finished,
        });
        // The sliver that ends the run says nothing per second (the summary follows).
        if !sliver {
            progress.show(&point, "", &totals);
        }
        if finished {
            break;
        }
    }
    progress.finish();
    (totals, series)
}

/// Put objects `0..objects` before the measured phase.
async fn prepare<R: NetRuntime>(sh: &Arc<Shared<R>>) -> Result<Prepared, String> {
    let start = sh.rt().now();
    let next = Arc::new(AtomicU64::new(0));
    let failure: Arc<Mutex<Option<String>>> = Arc::default();
    let bytes = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..sh.cfg.concurrency.min(sh.cfg.objects as usize).max(1) {
        let (sh, next, failure, bytes) = (sh.clone(), next.clone(), failure.clone(), bytes.clone());
        tasks.push(sh.rt().clone().spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= sh.cfg.objects || lock(&failure).is_some() || sh.control.stopped() {
                    break;
                }
                let id = sh.id(n);
                let now = sh.rt().now();
                let s = sh.put(id, now, now).await;
                match s.error {
                    None => bytes.fetch_add(s.bytes, Ordering::Relaxed),
                    Some(e) => {
                        let key = sh.key(id, sh.size(id));
                        lock(&failure).get_or_insert(format!("preparing {key}: {e}"));
                        break;
                    }
                };
            }
        }));
    }
    for t in tasks {
        t.await;
    }
    if let Some(e) = lock(&failure).take() {
        return Err(e);
    }
    Ok(Prepared {
        objects: sh.cfg.objects,
        bytes: bytes.load(Ordering::Relaxed),
        seconds: sh.rt().now().saturating_sub(start).as_secs_f64(),
    })
}

/// Delete every object of ours under the prefix, a page of the listing at a time (memory does
/// not grow with the objects a run made); a note on failure.
///
/// Ours: keys [`object_key`] made with an id of this run's share, so that an agent never
/// deletes what another agent of the same run may still be using.
async fn cleanup<R: NetRuntime>(sh: &Arc<Shared<R>>) -> Option<String> {
    let ids = match sh.cfg.share {
        Some(s) => s.id_base()..=s.id_base() + (Share::SPAN - 1),
        None => 0..=u64::MAX,
    };
    let (mut listed, mut failed) = (0usize, 0u64);
    for bucket in &sh.buckets {
        let mut token: Option<String> = None;
        loop {
            let (res, page) = sh
                .client
                .list_page(bucket, &sh.cfg.prefix, token.as_deref(), 1000)
                .await;
            if let Some(e) = res.error {
                return Some(format!("cleanup: listing {bucket} failed: {e}"));
            }
            let keys: Vec<String> = page
                .keys
                .into_iter()
                .filter(|k| parse_object_key(k).is_some_and(|(id, _)| ids.contains(&id)))
                .collect();
            listed += keys.len();
            // A listing continues after its last key: deleting the page's keys first is safe.
            failed += delete_keys(sh, bucket, keys).await;
            token = page.next;
            if token.is_none() {
                break;
            }
        }
    }
    match failed {
        0 => None,
        n => Some(format!("cleanup: {n} of {listed} deletes failed")),
    }
}

/// Delete `keys` of `bucket` with the run's concurrency; how many deletes failed.
async fn delete_keys<R: NetRuntime>(sh: &Arc<Shared<R>>, bucket: &str, keys: Vec<String>) -> u64 {
    let keys = Arc::new(keys);
    let bucket: Arc<str> = bucket.into();
    let next = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..sh.cfg.concurrency.min(keys.len()) {
        let (sh, keys, bucket) = (sh.clone(), keys.clone(), bucket.clone());
        let (next, failed) = (next.clone(), failed.clone());
        tasks.push(sh.rt().clone().spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(key) = keys.get(i) else {
                    break;
                };
                if sh.client.delete_object(&bucket, key).await.error.is_some() {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for t in tasks {
        t.await;
    }
    failed.load(Ordering::Relaxed)
}

/// How long the TLS check of each `https://` endpoint may take.
const TLS_CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// The TLS configuration of `cfg`: the webpki roots and `--ca-cert`'s (or the certificates a
/// coordinator sent), or `--insecure`.
pub fn tls_config(cfg: &LoadConfig) -> Result<Arc<rustls::ClientConfig>, String> {
    let ca = match (&cfg.ca_pem, &cfg.ca_cert) {
        (Some(pem), _) => Some(pem.as_bytes().to_vec()),
        (None, Some(p)) => {
            Some(std::fs::read(p).map_err(|e| format!("--ca-cert {}: {e}", p.display()))?)
        }
        (None, None) => None,
    };
    ferry_net::client_config(ca.as_deref(), cfg.insecure).map_err(|e| match &cfg.ca_cert {
        Some(p) => format!("--ca-cert {}: {e}", p.display()),
        None => e.to_string(),
    })
}

/// Handshake once with each `https://` endpoint, so that a certificate that is not trusted
/// stops the run at once, saying so, rather than failing every operation.
async fn check_tls<R: NetRuntime>(
    rt: &R,
    endpoints: &[Endpoint],
    tls: &Arc<rustls::ClientConfig>,
) -> Result<(), String> {
    for ep in endpoints {
        let Some(name) = &ep.tls else { continue };
        let handshake = rt.connect_tls(ep.addr, tls.clone(), name.clone());
        match timeout(rt, TLS_CHECK_TIMEOUT, handshake).await {
            Ok(Ok(mut stream)) => {
                let _ = stream.shutdown_write().await;
            }
            Ok(Err(e)) => return Err(tls_failure(&ep.url, &e)),
            Err(TimedOut) => {
                return Err(format!(
                    "{}: no TLS handshake within {} s",
                    ep.url,
                    TLS_CHECK_TIMEOUT.as_secs()
                ));
            }
        }
    }
    Ok(())
}

fn tls_failure(url: &str, e: &io::Error) -> String {
    let rejected = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .is_some_and(|r| matches!(r, rustls::Error::InvalidCertificate(_)));
    if rejected {
        format!(
            "{url}: TLS certificate not trusted: {e} (trust its CA with --ca-cert FILE, or \
             accept any certificate with --insecure)"
        )
    } else {
        format!("{url}: TLS handshake failed: {e}")
    }
}

/// Run a load test on `rt` against `endpoints`.
pub async fn run_load<R: NetRuntime>(
    rt: R,
    cfg: LoadConfig,
    endpoints: Vec<Endpoint>,
    embedded: bool,
) -> Result<RunReport, String> {
    let control = Arc::new(RunControl::local(cfg.autoterm));
    run_load_with(rt, cfg, endpoints, embedded, control).await
}

/// [`run_load`] driven by `control`: a start gate, an early stop, observers of each interval.
pub async fn run_load_with<R: NetRuntime>(
    rt: R,
    cfg: LoadConfig,
    endpoints: Vec<Endpoint>,
    embedded: bool,
    control: Arc<RunControl>,
) -> Result<RunReport, String> {
    cfg.validate()?;
    let tls = tls_config(&cfg)?;
    check_tls(&rt, &endpoints, &tls).await?;
    let urls: Vec<String> = endpoints.iter().map(|e| e.url.clone()).collect();
    let client = Arc::new(S3Client::new(
        rt.clone(),
        endpoints,
        cfg.endpoint_policy,
        ClientOptions {
            credentials: cfg.credentials.clone(),
            region: cfg.region.clone(),
            payload_sha256: cfg.payload_sha256,
            md5: cfg.md5,
            verify: cfg.verify,
            expect_continue_from: cfg.expect_continue_from,
            seed: cfg.seed,
            // PUTs of whole objects (and preparation) take ids in order: with `--md5`, their
            // digests are hashed ahead.
            sizes: Some(cfg.size.clone()),
        },
        tls,
    ));
    let buckets = cfg.bucket_names();
    for b in &buckets {
        client
            .create_bucket(b)
            .await
            .map_err(|e| format!("creating bucket {b}: {e}"))?;
    }
    let info = run_info(&cfg, &buckets, embedded);
    // Multipart objects have one size, listings none.
    let classes = match cfg.workload {
        Workload::Multipart | Workload::List => Vec::new(),
        _ => cfg.size.classes(),
    };
    let first_new = cfg.id_base()
        + if cfg.workload.prepares() {
            cfg.objects
        } else {
            0
        };
    let mut sh = Shared {
        client,
        buckets,
        t0: Duration::ZERO,
        deadline: None,
        next_op: AtomicU64::new(0),
        next_id: AtomicU64::new(first_new),
        next_delete: AtomicU64::new(0),
        live: Mutex::new(Vec::new()),
        exhausted: AtomicBool::new(false),
        queues: (0..cfg.concurrency).map(|_| Mutex::default()).collect(),
        cfg,
        classes,
        control: control.clone(),
    };
    let prepared = if sh.cfg.workload.prepares() {
        let shared = Arc::new(sh);
        let p = prepare(&shared).await;
        sh = Arc::into_inner(shared).ok_or("preparation tasks outlived their run")?;
        Some(p?)
    } else {
        None
    };
    if sh.cfg.workload == Workload::Mixed {
        *lock(&sh.live) = (0..sh.cfg.objects).map(|n| sh.id(n)).collect();
    }
    control.prepared(prepared.as_ref());
    if let Some(gate) = control.gate() {
        match gate.wait().await {
            Ok(at) => rt.sleep(at.saturating_duration_since(Instant::now())).await,
            Err(why) => {
                let sh = Arc::new(sh);
                if sh.cfg.cleanup
                    && let Some(note) = cleanup(&sh).await
                {
                    return Err(format!("{why} ({note})"));
                }
                return Err(why);
            }
        }
    }
    let duration = sh.cfg.duration_limit();
    let started_unix = rt.unix_time();
    let cpu_before = CpuTimes::now();
    sh.t0 = rt.now();
    control.started();
    sh.deadline = duration.map(|d| sh.t0 + d);
    let sh = Arc::new(sh);
    let done = Arc::new(Signal::new());
    let report_task = rt.spawn(reporter(sh.clone(), done.clone()));
    let workers: Vec<_> = (0..sh.cfg.concurrency)
        .map(|i| rt.spawn(worker(sh.clone(), i)))
        .collect();
    for w in workers {
        w.await;
    }
    let elapsed = rt.now().saturating_sub(sh.t0);
    let cpu = CpuTimes::now().since(cpu_before);
    done.set();
    let (totals, series) = report_task.await;
    let mut report = RunReport::new(info, urls, &totals);
    report.set_size_classes(&sh.classes, &totals);
    report.started_unix = started_unix;
    report.elapsed_s = elapsed.as_secs_f64();
    report.set_series(series);
    report.cpu = cpu;
    report.prepared = prepared;
    if let Some(why) = control.stop_reason() {
        report.notes.push(format!(
            "stopped after {:.1}s: {why}",
            elapsed.as_secs_f64()
        ));
    }
    if sh.exhausted.load(Ordering::Relaxed) {
        report.notes.push(format!(
            "the delete workload ran out of objects after {}: raise --objects for longer runs",
            sh.cfg.objects
        ));
    }
    control.measured(&report);
    if sh.cfg.cleanup {
        let began = rt.now();
        if let Some(note) = cleanup(&sh).await {
            report.notes.push(note);
        }
        report.cleanup_s = Some(rt.now().saturating_sub(began).as_secs_f64());
    }
    Ok(report)
}

pub(crate) fn run_info(cfg: &LoadConfig, buckets: &[String], embedded: bool) -> RunInfo {
    RunInfo {
        workload: cfg.workload.name().into(),
        concurrency: cfg.concurrency,
        size: match cfg.workload {
            Workload::Multipart => format!(
                "{} x {}",
                cfg.parts,
                crate::size::format_bytes(cfg.part_size)
            ),
            Workload::Delete | Workload::List | Workload::Stat => {
                format!("{} (prepared)", cfg.size)
            }
            _ => cfg.size.to_string(),
        },
        rate: cfg.rate,
        duration_s: cfg.duration.map(|d| d.as_secs_f64()),
        ops_limit: cfg.ops,
        objects: if cfg.workload.prepares() {
            cfg.objects
        } else {
            0
        },
        runtime: cfg.runtime.to_string(),
        seed: cfg.seed,
        verify: cfg.verify,
        md5: cfg.md5,
        payload_sha256: cfg.payload_sha256,
        buckets: buckets.to_vec(),
        prefix: cfg.prefix.clone(),
        mix: (cfg.workload == Workload::Mixed).then(|| cfg.mix.to_string()),
        multipart: (cfg.workload == Workload::Multipart).then_some((
            cfg.parts,
            cfg.part_size,
            cfg.parts_in_flight,
        )),
        embedded,
    }
}

/// Resolve the endpoints and run on the configured runtime (blocking).
pub fn run(cfg: LoadConfig) -> Result<RunReport, String> {
    run_with(cfg, false)
}

/// [`run`], saying whether the endpoints are an in-process cluster.
pub fn run_with(cfg: LoadConfig, embedded: bool) -> Result<RunReport, String> {
    let control = Arc::new(RunControl::local(cfg.autoterm));
    run_controlled(cfg, embedded, control)
}

/// [`run_with`] driven by `control` (see [`run_load_with`]).
pub fn run_controlled(
    cfg: LoadConfig,
    embedded: bool,
    control: Arc<RunControl>,
) -> Result<RunReport, String> {
    cfg.validate()?;
    let endpoints = cfg
        .endpoints
        .iter()
        .map(|u| Endpoint::parse(u))
        .collect::<Result<Vec<_>, _>>()?;
    let (kind, threads) = (cfg.runtime, cfg.threads);
    let load = Load {
        cfg,
        endpoints,
        embedded,
        control,
    };
    ferry_runtime::block_on(kind, threads, load)
        .map_err(|e| format!("cannot start the runtime: {e}"))?
}

/// [`run_load`]'s arguments, to run it on the runtime the configuration names.
struct Load {
    cfg: LoadConfig,
    endpoints: Vec<Endpoint>,
    embedded: bool,
    control: Arc<RunControl>,
}

impl OnRuntime for Load {
    type Output = Result<RunReport, String>;

    async fn run<R: NetRuntime>(self, rt: R) -> Result<RunReport, String> {
        run_load_with(rt, self.cfg, self.endpoints, self.embedded, self.control).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pauses of retry `attempt` for 1000 seeds (the caller's clock readings).
    fn pauses(attempt: u32) -> Vec<Duration> {
        (0..1000u64)
            .map(|i| backoff(attempt, Duration::from_nanos(1_000_003 * i + 17)))
            .collect()
    }

    #[test]
    fn backoff_doubles_to_its_cap_with_jitter_in_the_upper_half() {
        let ms = Duration::from_millis;
        let caps = [100, 200, 400, 800, 1600, 2000, 2000].map(ms);
        for (attempt, cap) in (0u32..)
            .zip(caps)
            .chain([(31, ms(2000)), (u32::MAX, ms(2000))])
        {
            let p = pauses(attempt);
            let (lo, hi) = (p.iter().min().unwrap(), p.iter().max().unwrap());
            assert!(
                *lo >= cap / 2 && *hi <= cap,
                "attempt {attempt}: {lo:?}..{hi:?}"
            );
            // The jitter covers the range: near both ends, and nearly every seed differs.
            assert!(
                *lo < cap * 11 / 20 && *hi > cap * 19 / 20,
                "{attempt}: {lo:?}..{hi:?}"
            );
            let mut distinct = p.clone();
            distinct.sort();
            distinct.dedup();
            assert!(
                distinct.len() > 990,
                "attempt {attempt}: {}",
                distinct.len()
            );
        }
        // Deterministic in its seed, and the attempt is part of it: a client's successive
        // pauses are not the same fraction of their caps.
        assert_eq!(pauses(2), pauses(2));
        let same = pauses(2)
            .iter()
            .zip(pauses(3))
            .filter(|(a, b)| **a * 2 == *b)
            .count();
        assert!(same < 10, "{same} of 1000 seeds");
    }
}
