//! The lane scheduler shared by threads: streams of many writers hashed together.
//!
//! [`Md5Lanes`] is an [`Md5Scheduler`] behind a mutex, used by *combining*: a thread that
//! needs its chunks hashed (it wants its buffer back, or its digest) hashes, if nobody else
//! is, *every* queued chunk of every stream in one batch, outside the lock; a thread that finds
//! someone hashing waits for that driver, then drives itself if its chunk is still queued. So
//! while one thread hashes, the others' chunks pile up and the next batch takes them together
//! in SIMD lanes — and a lone stream never waits for company: its chunk is hashed at once, on
//! the one-lane path. The lock is held only to submit, take and give back batches.
//!
//! The waiting calls ([`wait_hashed`](Md5Lanes::wait_hashed), [`digest`](Md5Lanes::digest))
//! block: call them from a thread that may block (a runtime's blocking pool). An async task
//! uses [`submit`](Md5Lanes::submit), [`try_drive`](Md5Lanes::try_drive) and
//! [`try_digest`](Md5Lanes::try_digest), which never wait for another thread.

use core::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use super::Md5Digest;
use super::lanes::Backend;
use super::scheduler::{Md5Batch, Md5Scheduler, SchedulerError, StreamId};

/// What an [`Md5Lanes`] hashed so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaneStats {
    /// Batches hashed.
    pub batches: u64,
    /// Streams in those batches, summed (a stream counts once per batch it is in).
    pub streams: u64,
    /// Batches that held more than one stream (hashed side by side in lanes).
    pub shared_batches: u64,
    /// The most streams one batch held.
    pub widest: u64,
    /// Bytes hashed.
    pub bytes: u64,
}

#[derive(Default)]
struct Counters {
    batches: AtomicU64,
    streams: AtomicU64,
    shared_batches: AtomicU64,
    widest: AtomicU64,
    bytes: AtomicU64,
}

struct State<C> {
    sched: Md5Scheduler<C>,
    // A batch is out being hashed (by one driver at a time, so batches stay wide).
    driving: bool,
}

/// A lane scheduler shared between threads (see the [module](self) docs).
pub struct Md5Lanes<C> {
    state: Mutex<State<C>>,
    // Signalled whenever a batch comes back.
    done: Condvar,
    counters: Counters,
}

impl<C> core::fmt::Debug for Md5Lanes<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Md5Lanes")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl<C: AsRef<[u8]>> Default for Md5Lanes<C> {
    fn default() -> Self {
        Self::new()
    }
}

/// Gives the driver's turn back if hashing unwinds, so waiters are not stranded.
struct Turn<'a, C> {
    lanes: &'a Md5Lanes<C>,
    armed: bool,
}

impl<C> Drop for Turn<'_, C> {
    fn drop(&mut self) {
        if self.armed {
            self.lanes.lock().driving = false;
            self.lanes.done.notify_all();
        }
    }
}

impl<C> Md5Lanes<C> {
    fn lock(&self) -> MutexGuard<'_, State<C>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What was hashed so far.
    pub fn stats(&self) -> LaneStats {
        let c = &self.counters;
        LaneStats {
            batches: c.batches.load(Ordering::Relaxed),
            streams: c.streams.load(Ordering::Relaxed),
            shared_batches: c.shared_batches.load(Ordering::Relaxed),
            widest: c.widest.load(Ordering::Relaxed),
            bytes: c.bytes.load(Ordering::Relaxed),
        }
    }
}

impl<C: AsRef<[u8]>> Md5Lanes<C> {
    /// Lanes on the widest kernel this CPU runs.
    pub fn new() -> Self {
        Self::with_backend(Backend::detect())
    }

    /// Lanes on `backend`.
    pub fn with_backend(backend: Backend) -> Self {
        Self {
            state: Mutex::new(State {
                sched: Md5Scheduler::with_backend(backend),
                driving: false,
            }),
            done: Condvar::new(),
            counters: Counters::default(),
        }
    }

    /// The kernel batches use.
    pub fn backend(&self) -> Backend {
        self.lock().sched.backend()
    }

    /// Chunks queued in every stream now, not yet taken into a batch.
    pub fn queued_chunks(&self) -> usize {
        self.lock().sched.queued_total()
    }

    /// Open a stream with no bytes.
    pub fn open(&self) -> StreamId {
        self.lock().sched.open()
    }

    /// Queue the stream's next chunk (kept alive until hashed, then dropped).
    pub fn submit(&self, id: StreamId, chunk: C) -> Result<(), SchedulerError> {
        self.lock().sched.submit(id, chunk)
    }

    /// Chunks of `id` queued and not yet taken into a batch: a writer that lets its chunks
    /// wait (so batches are wider) drives when this grows.
    pub fn queued(&self, id: StreamId) -> Result<usize, SchedulerError> {
        self.lock().sched.queued(id)
    }

    /// Forget a stream (an aborted write); its queued chunks are dropped.
    pub fn cancel(&self, id: StreamId) -> Result<(), SchedulerError> {
        self.lock().sched.cancel(id)
    }

    /// Block until every chunk submitted to `id` so far is hashed (and dropped), hashing
    /// whatever is queued, from every stream, whenever nobody else is.
    pub fn wait_hashed(&self, id: StreamId) -> Result<(), SchedulerError> {
        drop(self.wait_until(self.lock(), id)?);
        Ok(())
    }

    /// Say `id`'s last chunk was submitted and block until its digest is ready; the stream is
    /// then closed.
    pub fn digest(&self, id: StreamId) -> Result<Md5Digest, SchedulerError> {
        let mut g = self.lock();
        g.sched.finish(id)?;
        // A finished stream whose chunks are all hashed has its digest.
        let mut g = self.wait_until(g, id)?;
        g.sched
            .take_digest(id)?
            .ok_or(SchedulerError::UnknownStream)
    }

    /// Say `id`'s last chunk was submitted, without waiting.
    pub fn finish(&self, id: StreamId) -> Result<(), SchedulerError> {
        self.lock().sched.finish(id)
    }

    /// `id`'s digest if it is ready (finished and hashed); the stream is then closed.
    pub fn try_digest(&self, id: StreamId) -> Result<Option<Md5Digest>, SchedulerError> {
        self.lock().sched.take_digest(id)
    }

    /// Hash one batch of what is queued now, unless another thread is hashing (then its
    /// next batch takes it); never waits. Returns the bytes hashed here.
    pub fn try_drive(&self) -> u64 {
        let mut g = self.lock();
        if g.driving {
            return 0;
        }
        let Some(batch) = g.sched.take_batch() else {
            return 0;
        };
        g.driving = true;
        drop(g);
        let (g, bytes) = self.drive(batch);
        drop(g);
        bytes
    }

    /// Hash `batch` (taken with the turn) outside the lock; give it back and the turn up.
    fn drive(&self, mut batch: Md5Batch<C>) -> (MutexGuard<'_, State<C>>, u64) {
        let mut turn = Turn {
            lanes: self,
            armed: true,
        };
        let bytes = batch.bytes();
        let streams = batch.streams() as u64;
        batch.hash();
        let c = &self.counters;
        c.batches.fetch_add(1, Ordering::Relaxed);
        c.streams.fetch_add(streams, Ordering::Relaxed);
        c.bytes.fetch_add(bytes, Ordering::Relaxed);
        c.widest.fetch_max(streams, Ordering::Relaxed);
        if streams > 1 {
            c.shared_batches.fetch_add(1, Ordering::Relaxed);
        }
        let mut g = self.lock();
        g.sched.complete(batch);
        g.driving = false;
        turn.armed = false;
        self.done.notify_all();
        (g, bytes)
    }

    /// Block until `id`'s chunks are all hashed, driving whenever nobody else is.
    fn wait_until<'a>(
        &'a self,
        mut g: MutexGuard<'a, State<C>>,
        id: StreamId,
    ) -> Result<MutexGuard<'a, State<C>>, SchedulerError> {
        loop {
            if g.sched.is_hashed(id)? {
                return Ok(g);
            }
            if !g.driving
                && let Some(batch) = g.sched.take_batch()
            {
                g.driving = true;
                drop(g);
                g = self.drive(batch).0;
                continue;
            }
            // Someone is hashing (maybe our chunk): wait for their batch to come back.
            g = self.done.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::md5::md5;
    use alloc::sync::Arc;
    use alloc::vec;
    use alloc::vec::Vec;
    use std::sync::Barrier;
    use std::thread;

    #[test]
    fn a_lone_stream_hashes_itself_at_once() {
        let lanes = Md5Lanes::<Vec<u8>>::new();
        let id = lanes.open();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7) as u8).collect();
        for c in data.chunks(65_536) {
            lanes.submit(id, c.to_vec()).expect("open");
            lanes.wait_hashed(id).expect("open");
        }
        assert_eq!(lanes.digest(id), Ok(md5(&data)));
        let s = lanes.stats();
        assert_eq!((s.batches, s.streams, s.shared_batches), (5, 5, 0));
        assert_eq!(s.bytes, data.len() as u64);
        assert_eq!(lanes.try_digest(id), Err(SchedulerError::UnknownStream));
    }

    #[test]
    fn chunks_queued_together_are_hashed_in_one_batch() {
        let lanes = Md5Lanes::<Vec<u8>>::new();
        let ids: Vec<StreamId> = (0..16).map(|_| lanes.open()).collect();
        for (i, id) in ids.iter().enumerate() {
            lanes.submit(*id, vec![i as u8; 100_000 + i]).expect("open");
        }
        // The first to wait hashes everyone's chunk; the others find theirs done.
        for id in &ids {
            lanes.wait_hashed(*id).expect("open");
        }
        let s = lanes.stats();
        assert_eq!(
            (s.batches, s.streams, s.shared_batches, s.widest),
            (1, 16, 1, 16)
        );
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(lanes.digest(*id), Ok(md5(&vec![i as u8; 100_000 + i])));
        }
        // Finishing hashed nothing more: the streams' last chunks were already done.
        assert_eq!(lanes.stats().batches, 1);
    }

    #[test]
    fn try_drive_and_try_digest_never_wait() {
        let lanes = Md5Lanes::<Vec<u8>>::new();
        let (a, b) = (lanes.open(), lanes.open());
        lanes.submit(a, vec![1; 5000]).expect("open");
        lanes.submit(b, vec![2; 7000]).expect("open");
        lanes.finish(a).expect("open");
        assert_eq!(lanes.try_digest(a), Ok(None), "not hashed yet");
        assert_eq!(lanes.try_drive(), 12_000);
        assert_eq!(lanes.try_drive(), 0, "nothing queued");
        assert_eq!(lanes.try_digest(a), Ok(Some(md5(&[1; 5000]))));
        lanes.cancel(b).expect("open");
        assert_eq!(lanes.stats().shared_batches, 1);
    }

    #[test]
    fn many_threads_get_their_own_digests() {
        let lanes = Arc::new(Md5Lanes::<Vec<u8>>::new());
        let start = Arc::new(Barrier::new(16));
        let handles: Vec<_> = (0..16u32)
            .map(|t| {
                let (lanes, start) = (lanes.clone(), start.clone());
                thread::spawn(move || {
                    let data: Vec<u8> = (0..(200_000 + t * 9_973)).map(|i| (i ^ t) as u8).collect();
                    start.wait();
                    let id = lanes.open();
                    for c in data.chunks(16_384 + t as usize * 100) {
                        lanes.submit(id, c.to_vec()).expect("open");
                        lanes.wait_hashed(id).expect("open");
                    }
                    assert_eq!(lanes.digest(id), Ok(md5(&data)));
                    data.len() as u64
                })
            })
            .collect();
        let total: u64 = handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .sum();
        assert_eq!(
            lanes.stats().bytes,
            total,
            "every byte went through the lanes"
        );
    }
}
