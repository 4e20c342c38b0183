//! A lane scheduler: independent streams share the multi-lane MD5 kernels.
//!
//! Each streaming hasher (an upload, a part, a generated body) is a stream: it [`submit`]s
//! chunks and, after its last one, [`finish`]es. Whoever drives the scheduler hashes *what is
//! queued at that moment*, from every stream, together in SIMD lanes
//! ([`super::lanes::update_lanes`]), as many chunks from each as the stream with the fewest
//! has, so the lanes run side by side to the end; a stream's digest is ready as soon as its last chunk is
//! hashed. Nothing ever waits for more streams to arrive: a lone stream's chunk is hashed on the
//! one-lane path at `md-5`'s speed.
//!
//! Sans-IO, like the rest of core: no threads, locks or wake-ups here. The intended use on a
//! runtime (tokio or smol alike) is *combining*: the scheduler sits behind a mutex; a task that
//! submits a chunk then drives —
//!
//! ```text
//! lock { sched.submit(id, chunk); batch = sched.take_batch() }   // cheap, under the lock
//! batch.hash()                                                     // the work, outside it
//! lock { sched.complete(batch) }                                   // digests become ready
//! ```
//!
//! — so while one task hashes a batch, others queue chunks that the next driver (often the
//! next submitter) takes together. A stream is in at most one batch at a time, which keeps
//! its chunks in order. [`Md5Scheduler::run_once`] is the three steps in one call. Chunks are
//! any `AsRef<[u8]>` (pooled buffers, `Bytes`, `Arc<[u8]>`); they are dropped once hashed.
//!
//! [`submit`]: Md5Scheduler::submit
//! [`finish`]: Md5Scheduler::finish

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::fmt;

use super::Md5Digest;
use super::lanes::{Backend, Md5State, update_lanes};

/// A stream's handle in one [`Md5Scheduler`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamId {
    index: u32,
    generation: u32,
}

/// Why a scheduler refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedulerError {
    /// The id is not an open stream of this scheduler (closed, taken, or never opened).
    UnknownStream,
    /// The stream was finished: no chunk may follow its last.
    Finished,
}

impl fmt::Display for SchedulerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::UnknownStream => "unknown MD5 stream",
            Self::Finished => "MD5 stream already finished",
        })
    }
}

impl core::error::Error for SchedulerError {}

struct Stream<C> {
    generation: u32,
    open: bool,
    // Out in a batch (which holds the state meanwhile).
    in_batch: bool,
    state: Md5State,
    chunks: VecDeque<C>,
    finished: bool,
    digest: Option<Md5Digest>,
}

/// Streams submit chunks; a driver hashes the chunks queued in every stream together.
pub struct Md5Scheduler<C> {
    backend: Backend,
    streams: Vec<Stream<C>>,
    free: Vec<u32>,
    // Emptied batches kept for their allocations.
    spare: Vec<Md5Batch<C>>,
}

impl<C> fmt::Debug for Md5Scheduler<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Md5Scheduler")
            .field("backend", &self.backend)
            .field("open", &(self.streams.len() - self.free.len()))
            .finish_non_exhaustive()
    }
}

impl<C: AsRef<[u8]>> Default for Md5Scheduler<C> {
    fn default() -> Self {
        Self::new()
    }
}

/// The chunks of several streams taken out of a scheduler to be hashed without it.
pub struct Md5Batch<C> {
    backend: Backend,
    ids: Vec<StreamId>,
    states: Vec<Md5State>,
    chunks: Vec<VecDeque<C>>,
    pos: Vec<usize>,
    hashed: bool,
}

impl<C> fmt::Debug for Md5Batch<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Md5Batch")
            .field("streams", &self.ids.len())
            .field("hashed", &self.hashed)
            .finish_non_exhaustive()
    }
}

impl<C: AsRef<[u8]>> Md5Batch<C> {
    /// Streams in the batch.
    pub fn streams(&self) -> usize {
        self.ids.len()
    }

    /// Bytes the batch hashes.
    pub fn bytes(&self) -> u64 {
        self.chunks
            .iter()
            .flatten()
            .map(|c| c.as_ref().len() as u64)
            .sum()
    }

    /// Hash every chunk into its stream's state, streams side by side in SIMD lanes.
    pub fn hash(&mut self) {
        if self.hashed {
            return;
        }
        let chunks = &self.chunks;
        let pos = &mut self.pos;
        pos.clear();
        pos.resize(chunks.len(), 0);
        update_lanes(self.backend, &mut self.states, |i| {
            let c = chunks[i].get(pos[i])?;
            pos[i] += 1;
            Some(c.as_ref())
        });
        self.hashed = true;
    }
}

impl<C: AsRef<[u8]>> Md5Scheduler<C> {
    /// A scheduler on the widest kernel this CPU runs.
    pub fn new() -> Self {
        Self::with_backend(Backend::detect())
    }

    /// A scheduler on `backend`.
    pub fn with_backend(backend: Backend) -> Self {
        Self {
            backend,
            streams: Vec::new(),
            free: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// The kernel batches use.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Open a stream with no bytes.
    pub fn open(&mut self) -> StreamId {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.streams.push(Stream {
                    generation: 0,
                    open: false,
                    in_batch: false,
                    state: Md5State::new(),
                    chunks: VecDeque::new(),
                    finished: false,
                    digest: None,
                });
                (self.streams.len() - 1) as u32
            }
        };
        let s = &mut self.streams[index as usize];
        s.open = true;
        s.state = Md5State::new();
        s.finished = false;
        s.digest = None;
        StreamId {
            index,
            generation: s.generation,
        }
    }

    fn stream(&mut self, id: StreamId) -> Result<&mut Stream<C>, SchedulerError> {
        self.streams
            .get_mut(id.index as usize)
            .filter(|s| s.open && s.generation == id.generation)
            .ok_or(SchedulerError::UnknownStream)
    }

    /// Queue the stream's next chunk; it is hashed by the next batch taken.
    pub fn submit(&mut self, id: StreamId, chunk: C) -> Result<(), SchedulerError> {
        let s = self.stream(id)?;
        if s.finished {
            return Err(SchedulerError::Finished);
        }
        s.chunks.push_back(chunk);
        Ok(())
    }

    /// Say the stream's last chunk was submitted: its digest is ready once that is hashed.
    pub fn finish(&mut self, id: StreamId) -> Result<(), SchedulerError> {
        let s = self.stream(id)?;
        s.finished = true;
        Self::settle(s);
        Ok(())
    }

    /// The stream's digest, once its last chunk is hashed; the stream is then closed.
    pub fn take_digest(&mut self, id: StreamId) -> Result<Option<Md5Digest>, SchedulerError> {
        let s = self.stream(id)?;
        let Some(d) = s.digest.take() else {
            return Ok(None);
        };
        self.close(id.index);
        Ok(Some(d))
    }

    /// Whether every chunk submitted to the stream so far is hashed (none queued, none out
    /// in a batch): its chunks were dropped, so buffers lent to it are free again.
    pub fn is_hashed(&self, id: StreamId) -> Result<bool, SchedulerError> {
        let s = self
            .streams
            .get(id.index as usize)
            .filter(|s| s.open && s.generation == id.generation)
            .ok_or(SchedulerError::UnknownStream)?;
        Ok(!s.in_batch && s.chunks.is_empty())
    }

    /// Chunks of the stream queued and not yet taken into a batch.
    pub fn queued(&self, id: StreamId) -> Result<usize, SchedulerError> {
        self.streams
            .get(id.index as usize)
            .filter(|s| s.open && s.generation == id.generation)
            .map(|s| s.chunks.len())
            .ok_or(SchedulerError::UnknownStream)
    }

    /// Forget a stream (an aborted upload): queued chunks are dropped. A batch that holds
    /// some of its chunks still hashes them, and its result is then ignored.
    pub fn cancel(&mut self, id: StreamId) -> Result<(), SchedulerError> {
        self.stream(id)?;
        self.close(id.index);
        Ok(())
    }

    fn close(&mut self, index: u32) {
        let s = &mut self.streams[index as usize];
        s.open = false;
        s.chunks.clear();
        s.digest = None;
        s.generation = s.generation.wrapping_add(1);
        // A stream out in a batch is freed when the batch comes back.
        if !s.in_batch {
            self.free.push(index);
        }
    }

    /// Whether no chunk is queued (batches out may still be hashing).
    pub fn is_idle(&self) -> bool {
        self.streams.iter().all(|s| s.chunks.is_empty())
    }

    /// Chunks of every stream queued and not yet taken into a batch (a gauge of the lanes'
    /// queue).
    pub fn queued_total(&self) -> usize {
        self.streams.iter().map(|s| s.chunks.len()).sum()
    }

    /// Take the queued chunks of every stream not already in a batch: as many from each as
    /// the stream with the fewest has queued (all of a lone stream's).
    ///
    /// Taking the same number from each keeps the lanes side by side to the end of the batch:
    /// taking all, a stream with four chunks queued beside streams with one hashed three of
    /// them alone, on the one-lane path, while the others' next chunks waited for the next
    /// batch. What is left stays queued, in order, for the next batch.
    ///
    /// `None` when nothing is queued. Hash the batch ([`Md5Batch::hash`], e.g. outside the
    /// lock that guards the scheduler) and give it back with [`complete`](Self::complete).
    pub fn take_batch(&mut self) -> Option<Md5Batch<C>> {
        let eligible = |s: &Stream<C>| s.open && !s.in_batch && !s.chunks.is_empty();
        let each = self
            .streams
            .iter()
            .filter(|s| eligible(s))
            .map(|s| s.chunks.len())
            .min()?;
        let mut batch = self.spare.pop().unwrap_or_else(|| Md5Batch {
            backend: self.backend,
            ids: Vec::new(),
            states: Vec::new(),
            chunks: Vec::new(),
            pos: Vec::new(),
            hashed: false,
        });
        batch.hashed = false;
        for (index, s) in self.streams.iter_mut().enumerate() {
            // A stream in another batch keeps its chunks, in order, for the next one.
            if !eligible(s) {
                continue;
            }
            s.in_batch = true;
            batch.ids.push(StreamId {
                index: index as u32,
                generation: s.generation,
            });
            batch.states.push(core::mem::take(&mut s.state));
            batch.chunks.push(if s.chunks.len() == each {
                core::mem::take(&mut s.chunks)
            } else {
                s.chunks.drain(..each).collect()
            });
        }
        Some(batch)
    }

    /// Give a batch back: its streams' states return, and finished streams get their digest.
    ///
    /// A batch not yet hashed is hashed here.
    pub fn complete(&mut self, mut batch: Md5Batch<C>) {
        batch.hash();
        for ((id, state), mut queue) in batch
            .ids
            .drain(..)
            .zip(batch.states.drain(..))
            .zip(batch.chunks.drain(..))
        {
            let s = &mut self.streams[id.index as usize];
            s.in_batch = false;
            if !s.open || s.generation != id.generation {
                // Cancelled while out: its slot can now be reused.
                self.free.push(id.index);
                continue;
            }
            s.state = state;
            queue.clear();
            if s.chunks.is_empty() {
                // Hand the emptied queue's allocation back to the stream.
                core::mem::swap(&mut queue, &mut s.chunks);
            }
            Self::settle(s);
        }
        self.spare.push(batch);
    }

    /// Hash one batch of what is queued now ([`take_batch`](Self::take_batch)); the bytes
    /// hashed.
    pub fn run_once(&mut self) -> u64 {
        let Some(mut batch) = self.take_batch() else {
            return 0;
        };
        let bytes = batch.bytes();
        batch.hash();
        self.complete(batch);
        bytes
    }

    /// Finalize a finished stream whose chunks are all hashed.
    fn settle(s: &mut Stream<C>) {
        if s.finished && !s.in_batch && s.chunks.is_empty() && s.digest.is_none() {
            s.digest = Some(core::mem::take(&mut s.state).finalize());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::md5::{Digest, Md5};
    use alloc::vec;
    use proptest::prelude::*;

    fn reference(data: &[u8]) -> Md5Digest {
        Md5::digest(data).into()
    }

    #[test]
    fn a_lone_stream_is_hashed_when_driven() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        for backend in Backend::available() {
            let mut s = Md5Scheduler::<&[u8]>::with_backend(backend);
            let id = s.open();
            for chunk in data.chunks(65_536) {
                s.submit(id, chunk).expect("open");
                assert_eq!(s.run_once(), chunk.len() as u64);
                assert!(s.is_idle());
            }
            assert_eq!(s.take_digest(id), Ok(None), "not finished yet");
            s.finish(id).expect("open");
            assert_eq!(s.take_digest(id), Ok(Some(reference(&data))));
            assert_eq!(s.take_digest(id), Err(SchedulerError::UnknownStream));
        }
    }

    #[test]
    fn a_batch_takes_as_many_chunks_from_each_stream_as_the_fewest_queued() {
        let mut s = Md5Scheduler::<Vec<u8>>::new();
        let (a, b, c) = (s.open(), s.open(), s.open());
        for i in 0..4u8 {
            s.submit(a, vec![i; 1000]).expect("open");
        }
        for i in 0..2u8 {
            s.submit(b, vec![10 + i; 1000]).expect("open");
        }
        let batch = s.take_batch().expect("queued");
        assert_eq!(
            (batch.streams(), batch.bytes()),
            (2, 4000),
            "two chunks each"
        );
        assert_eq!((s.queued(a), s.queued(b)), (Ok(2), Ok(0)));
        // c queues while the batch is out; the next batch takes one chunk of a beside it.
        s.submit(c, vec![20; 1000]).expect("open");
        s.complete(batch);
        let batch = s.take_batch().expect("queued");
        assert_eq!((batch.streams(), batch.bytes()), (2, 2000));
        s.complete(batch);
        assert_eq!(s.queued(a), Ok(1));
        // Alone, a stream's whole queue goes in one batch.
        s.submit(a, vec![4; 1000]).expect("open");
        assert_eq!(s.run_once(), 2000);
        for id in [a, b, c] {
            s.finish(id).expect("open");
        }
        let a_bytes: Vec<u8> = (0..5u8).flat_map(|i| [i; 1000]).collect();
        assert_eq!(s.take_digest(a), Ok(Some(reference(&a_bytes))));
        let b_bytes: Vec<u8> = (0..2u8).flat_map(|i| [10 + i; 1000]).collect();
        assert_eq!(s.take_digest(b), Ok(Some(reference(&b_bytes))));
        assert_eq!(s.take_digest(c), Ok(Some(reference(&[20; 1000]))));
    }

    #[test]
    fn digest_is_ready_when_the_last_chunk_is_hashed_not_when_others_are() {
        let mut s = Md5Scheduler::<Vec<u8>>::new();
        let (a, b) = (s.open(), s.open());
        s.submit(a, vec![1; 5000]).expect("open");
        s.submit(b, vec![2; 100_000]).expect("open");
        s.finish(a).expect("open");
        assert_eq!(s.submit(a, vec![3]), Err(SchedulerError::Finished));
        s.run_once();
        assert_eq!(s.take_digest(a), Ok(Some(reference(&[1; 5000]))));
        assert_eq!(s.take_digest(b), Ok(None));
        s.submit(b, vec![2; 1]).expect("open");
        s.finish(b).expect("open");
        assert_eq!(s.take_digest(b), Ok(None), "a chunk is still queued");
        s.run_once();
        let mut want = vec![2; 100_000];
        want.push(2);
        assert_eq!(s.take_digest(b), Ok(Some(reference(&want))));
    }

    #[test]
    fn queued_total_counts_every_stream() {
        let mut s: Md5Scheduler<&[u8]> = Md5Scheduler::new();
        let (a, b) = (s.open(), s.open());
        assert_eq!(s.queued_total(), 0);
        s.submit(a, b"one").unwrap();
        s.submit(a, b"two").unwrap();
        s.submit(b, b"three").unwrap();
        assert_eq!(s.queued_total(), 3);
        let batch = s.take_batch().expect("queued");
        // As many from each as the fewest queued: one each, one of a's left.
        assert_eq!(s.queued_total(), 1);
        s.complete(batch);
        assert_eq!(s.queued_total(), 1);
    }

    #[test]
    fn queued_counts_chunks_until_a_batch_takes_them() {
        let mut s = Md5Scheduler::<Vec<u8>>::new();
        let (a, b) = (s.open(), s.open());
        for n in 1..=3 {
            s.submit(a, vec![7; 1000]).expect("open");
            assert_eq!(s.queued(a), Ok(n));
        }
        assert_eq!(s.queued(b), Ok(0));
        let batch = s.take_batch().expect("chunks queued");
        assert_eq!(s.queued(a), Ok(0), "taken into the batch");
        s.submit(a, vec![8; 10]).expect("open");
        assert_eq!(s.queued(a), Ok(1), "queued beside the batch out");
        s.complete(batch);
        s.cancel(b).expect("open");
        assert_eq!(s.queued(b), Err(SchedulerError::UnknownStream));
    }

    #[test]
    fn empty_stream_and_cancel() {
        let mut s = Md5Scheduler::<Vec<u8>>::new();
        let e = s.open();
        s.finish(e).expect("open");
        assert_eq!(s.take_digest(e), Ok(Some(reference(b""))));
        let c = s.open();
        s.submit(c, vec![1; 100]).expect("open");
        let batch = s.take_batch().expect("queued");
        s.cancel(c).expect("open");
        s.complete(batch);
        assert_eq!(s.take_digest(c), Err(SchedulerError::UnknownStream));
        // Its slot comes back with a new generation.
        let d = s.open();
        assert_ne!(d, c);
        s.submit(d, vec![7; 10]).expect("open");
        s.finish(d).expect("open");
        s.run_once();
        assert_eq!(s.take_digest(d), Ok(Some(reference(&[7; 10]))));
    }

    #[test]
    fn chunks_submitted_while_a_batch_is_out_wait_for_the_next() {
        let mut s = Md5Scheduler::<Vec<u8>>::new();
        let (a, b) = (s.open(), s.open());
        s.submit(a, vec![1; 3000]).expect("open");
        let mut first = s.take_batch().expect("queued");
        assert_eq!(first.streams(), 1);
        s.submit(a, vec![2; 70]).expect("open");
        s.submit(b, vec![3; 64]).expect("open");
        // `a` is out: the second batch takes only `b`, so `a`'s chunks stay in order.
        let second = s.take_batch().expect("queued");
        assert_eq!(second.streams(), 1);
        first.hash();
        assert_eq!(s.is_hashed(a), Ok(false), "out in a batch");
        assert_eq!(s.is_hashed(b), Ok(false), "out in a batch");
        s.complete(second);
        assert_eq!(s.is_hashed(b), Ok(true));
        assert_eq!(s.is_hashed(a), Ok(false), "still out");
        s.complete(first);
        assert_eq!(s.is_hashed(a), Ok(false), "its second chunk is queued");
        s.finish(a).expect("open");
        s.run_once();
        let mut want = vec![1; 3000];
        want.extend_from_slice(&[2; 70]);
        assert_eq!(s.take_digest(a), Ok(Some(reference(&want))));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn interleaved_streams_equal_md5_crate(
            lens in proptest::collection::vec(0usize..100_000, 1..=20),
            chunk in 1usize..40_000,
            drive_every in 1usize..6,
        ) {
            for backend in Backend::available() {
                let mut s = Md5Scheduler::<Vec<u8>>::with_backend(backend);
                let data: Vec<Vec<u8>> = lens
                    .iter()
                    .enumerate()
                    .map(|(i, &n)| (0..n).map(|j| (j * 13 + i) as u8).collect())
                    .collect();
                let ids: Vec<StreamId> = data.iter().map(|_| s.open()).collect();
                let mut at = vec![0usize; data.len()];
                let mut step = 0;
                // Round-robin submission of unequal chunks; drive every few submissions.
                while at.iter().zip(&data).any(|(a, d)| *a < d.len()) {
                    for (i, d) in data.iter().enumerate() {
                        let c = (chunk + i * 17).min(d.len() - at[i]);
                        if c > 0 {
                            s.submit(ids[i], d[at[i]..at[i] + c].to_vec()).expect("open");
                            at[i] += c;
                        }
                        if at[i] == d.len() {
                            let _ = s.finish(ids[i]);
                        }
                        step += 1;
                        if step % drive_every == 0 {
                            s.run_once();
                        }
                    }
                }
                // A batch takes as many chunks from each stream as the fewest queued: drive
                // until nothing is left.
                while !s.is_idle() {
                    s.run_once();
                }
                for (id, d) in ids.iter().zip(&data) {
                    prop_assert_eq!(s.take_digest(*id), Ok(Some(reference(d))));
                }
            }
        }
    }
}
