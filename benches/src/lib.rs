//! The comparisons behind Ferry's benchmarks: each hot path beside its physical baseline.
//!
//! Criterion (`cargo bench -p ferry-benches`) and the `report` binary run the same [`Case`]s, so
//! the quick table and the detailed statistics always measure the same code.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry_core::fill::ShardedFill;
use ferry_core::http::chunked::{self, ChunkedDecoder};
use ferry_core::md5::Md5Sink;
use ferry_core::pool::{BufferPool, PoolConfig};
use md5::{Digest, Md5};

/// What one iteration of a case moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes per iteration (reported as GB/s).
    Bytes(u64),
    /// Operations per iteration (reported as Mops/s).
    Ops(u64),
}

/// A timed routine: run `iters` iterations and return the wall time they took.
pub type Routine = Box<dyn FnMut(u64) -> Duration + Send>;

/// One comparison: Ferry's code and its baseline, doing the same amount of work per iteration.
pub struct Case {
    /// Criterion group name, e.g. `fill/256KiB`.
    pub name: String,
    /// What an iteration moves.
    pub unit: Unit,
    /// Ferry's hot path.
    pub ferry: Routine,
    /// The physical baseline.
    pub baseline: Routine,
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Case")
            .field("name", &self.name)
            .field("unit", &self.unit)
            .finish()
    }
}

fn timed(mut body: impl FnMut() + Send + 'static) -> Routine {
    Box::new(move |iters| {
        let start = Instant::now();
        for _ in 0..iters {
            body();
        }
        start.elapsed()
    })
}

/// Run `body` on `threads` threads, `iters` times each, and return the wall time.
fn timed_threads(threads: usize, body: impl Fn() + Send + Sync + 'static) -> Routine {
    let body = Arc::new(body);
    Box::new(move |iters| {
        let barrier = Arc::new(std::sync::Barrier::new(threads + 1));
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (body, barrier) = (body.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    for _ in 0..iters {
                        body();
                    }
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for h in handles {
            h.join().expect("bench thread");
        }
        start.elapsed()
    })
}

fn size_name(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{}MiB", n >> 20)
    } else {
        format!("{}KiB", n >> 10)
    }
}

/// Fill a caller's buffer vs `copy_from_slice` of the same length.
pub fn fill_cases() -> Vec<Case> {
    let fill = Arc::new(ShardedFill::new(1));
    [64 << 10, 256 << 10, 1 << 20, 16 << 20]
        .into_iter()
        .map(|n: usize| {
            let f = fill.clone();
            let mut dst = vec![1u8; n];
            let mut id = 0u64;
            let mut dst2 = vec![1u8; n];
            let src = fill.object(u64::MAX).generate(n);
            Case {
                name: format!("fill/{}", size_name(n)),
                unit: Unit::Bytes(n as u64),
                ferry: timed(move || {
                    id = id.wrapping_add(1);
                    f.fill(black_box(id), 0, black_box(&mut dst));
                }),
                baseline: timed(move || black_box(&mut dst2).copy_from_slice(black_box(&src))),
            }
        })
        .collect()
}

/// A fresh object (allocate + fill) vs a fresh zeroed `vec![0u8; n]`.
pub fn fresh_object_cases() -> Vec<Case> {
    let fill = Arc::new(ShardedFill::new(2));
    [1 << 20, 16 << 20]
        .into_iter()
        .map(|n: usize| {
            let f = fill.clone();
            let mut id = 0u64;
            Case {
                name: format!("fresh_object/{}", size_name(n)),
                unit: Unit::Bytes(n as u64),
                ferry: timed(move || {
                    id = id.wrapping_add(1);
                    black_box(f.object(id).generate(n));
                }),
                baseline: timed(move || {
                    black_box(vec![0u8; black_box(n)]);
                }),
            }
        })
        .collect()
}

/// Streaming MD5 in 64 KiB updates vs one-shot `Md5::digest` of 1 MiB.
pub fn md5_cases() -> Vec<Case> {
    let n = 1 << 20;
    let data: Arc<[u8]> = ShardedFill::new(3).object(0).generate(n).into();
    let d2 = data.clone();
    vec![Case {
        name: "md5/1MiB_in_64KiB_updates".into(),
        unit: Unit::Bytes(n as u64),
        ferry: timed(move || {
            let mut sink = Md5Sink::new();
            for chunk in data.chunks(64 << 10) {
                sink.update(black_box(chunk));
            }
            black_box(sink.finalize());
        }),
        baseline: timed(move || {
            black_box(Md5::digest(black_box(&d2[..])));
        }),
    }]
}

/// Pool `get` + drop of 256 KiB vs a fresh `vec![0u8; 256 KiB]`, on 1 and 2 threads.
pub fn pool_cases() -> Vec<Case> {
    const N: usize = 256 << 10;
    [1usize, 2]
        .into_iter()
        .map(|threads| {
            let pool = BufferPool::leak(PoolConfig::default());
            Case {
                name: format!(
                    "pool_256KiB/{threads}_thread{}",
                    if threads > 1 { "s" } else { "" }
                ),
                unit: Unit::Ops(threads as u64),
                ferry: timed_threads(threads, move || drop(black_box(pool.get(black_box(N))))),
                baseline: timed_threads(threads, || drop(black_box(vec![0u8; black_box(N)]))),
            }
        })
        .collect()
}

/// Chunked decode of a 1 MiB body sent in 64 KiB chunks (copying out) vs memcpy of 1 MiB.
pub fn chunked_cases() -> Vec<Case> {
    let n = 1 << 20;
    let body = ShardedFill::new(4).object(0).generate(n);
    let mut wire = Vec::with_capacity(n + 1024);
    for chunk in body.chunks(64 << 10) {
        chunked::write_chunk(&mut wire, chunk);
    }
    chunked::write_last_chunk(&mut wire, &[]).expect("no trailers");
    let mut out = vec![0u8; n];
    let mut out2 = vec![0u8; n];
    vec![Case {
        name: "chunked_decode/1MiB_64KiB_chunks".into(),
        unit: Unit::Bytes(n as u64),
        ferry: timed(move || {
            let mut dec = ChunkedDecoder::default();
            let p = dec
                .decode(black_box(&wire), black_box(&mut out))
                .expect("valid body");
            assert!(p.done && p.produced == n);
        }),
        baseline: timed(move || black_box(&mut out2).copy_from_slice(black_box(&body))),
    }]
}

/// Every case of the core data path, in report order.
pub fn all_cases() -> Vec<Case> {
    let mut v = fill_cases();
    v.extend(fresh_object_cases());
    v.extend(md5_cases());
    v.extend(pool_cases());
    v.extend(chunked_cases());
    v
}

/// Rate of `iters` iterations of `unit` in `elapsed`: GB/s for bytes, Mops/s for operations.
pub fn rate(unit: Unit, iters: u64, elapsed: Duration) -> f64 {
    let per_iter = match unit {
        Unit::Bytes(b) => b as f64 / 1e9,
        Unit::Ops(o) => o as f64 / 1e6,
    };
    per_iter * iters as f64 / elapsed.as_secs_f64().max(1e-12)
}

/// Iterations of `routine` that take about `target` (at least one).
pub fn calibrate(routine: &mut Routine, target: Duration) -> u64 {
    let mut iters = 1u64;
    loop {
        let t = routine(iters);
        if t >= target / 4 || iters >= 1 << 40 {
            let scale = target.as_secs_f64() / t.as_secs_f64().max(1e-9);
            return ((iters as f64 * scale) as u64).max(1);
        }
        iters *= 4;
    }
}

/// Ferry's and the baseline's rates, measured in alternating rounds (median of `rounds`).
pub fn measure(case: &mut Case, per_round: Duration, rounds: usize) -> (f64, f64) {
    let fi = calibrate(&mut case.ferry, per_round);
    let bi = calibrate(&mut case.baseline, per_round);
    let mut f = Vec::with_capacity(rounds);
    let mut b = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        f.push(rate(case.unit, fi, (case.ferry)(fi)));
        b.push(rate(case.unit, bi, (case.baseline)(bi)));
    }
    (median(&mut f), median(&mut b))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_runs_and_reports_a_positive_rate() {
        for mut case in all_cases() {
            let (f, b) = measure(&mut case, Duration::from_millis(2), 1);
            assert!(f > 0.0 && b > 0.0, "{}: {f} {b}", case.name);
        }
    }

    #[test]
    fn rate_units() {
        assert_eq!(
            rate(Unit::Bytes(1_000_000_000), 2, Duration::from_secs(1)),
            2.0
        );
        assert_eq!(rate(Unit::Ops(3), 1_000_000, Duration::from_secs(3)), 1.0);
    }
}
