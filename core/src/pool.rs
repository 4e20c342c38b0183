//! Buffer pool: size classes of reusable byte buffers with bounded retention.
//!
//! Every body Ferry moves goes through buffers from here, so the hot path takes no lock: each
//! size class (powers of two from 4 KiB to 16 MiB by default) is a lock-free bounded queue
//! (`crossbeam_queue::ArrayQueue`). A buffer is zero-initialised once, when first allocated,
//! and is handed out again as it was left (contents unspecified, still safe Rust). Requests
//! above the largest class are allocated directly and freed on drop. What a burst left idle
//! goes back to the allocator with [`BufferPool::trim`] (the HTTP server calls it
//! periodically).
//!
//! Buffers of [`ALIGNED_MIN`] bytes and more start on an [`ALIGN`] boundary, so a store can
//! write them with `O_DIRECT` (which wants the memory, the file offset and the length aligned
//! to the device's block): each such allocation is [`ALIGN`] bytes longer and the buffer is the
//! aligned window in it (at most 6 % more memory), which needs no `unsafe` allocation code.

use alloc::boxed::Box;
use alloc::vec;
use core::fmt;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use crossbeam_queue::ArrayQueue;

/// The smallest size class: 4 KiB.
pub const MIN_CLASS_LOG2: u32 = 12;

/// Pooled buffers of at least [`ALIGNED_MIN`] bytes start on a multiple of this (4 KiB, the
/// largest block size `O_DIRECT` asks for on common devices).
pub const ALIGN: usize = 4096;

/// The smallest size class whose buffers are [`ALIGN`]ed: 64 KiB.
pub const ALIGNED_MIN: usize = 64 << 10;

/// Bytes allocated for a buffer of class size `size`: the aligned window and its slack.
const fn raw_len(size: usize) -> usize {
    if size >= ALIGNED_MIN {
        size + ALIGN
    } else {
        size
    }
}

/// The buffer in allocation `raw`: where it starts and how long it is (its class size).
fn window(raw: &[u8]) -> (usize, usize) {
    if raw.len() >= raw_len(ALIGNED_MIN) {
        // `align_offset` of a `u8` pointer is always computable, and below `ALIGN`.
        (
            raw.as_ptr().align_offset(ALIGN).min(ALIGN),
            raw.len() - ALIGN,
        )
    } else {
        (0, raw.len())
    }
}

/// A fresh allocation for class size `size`.
fn allocate(size: usize) -> Box<[u8]> {
    vec![0u8; raw_len(size)].into_boxed_slice()
}

/// How a [`BufferPool`] sizes its classes and bounds what it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// log2 of the largest class; requests above `1 << max_class_log2` bypass the pool.
    pub max_class_log2: u32,
    /// At most this many idle buffers are kept per class.
    pub max_per_class: usize,
    /// At most this many bytes are kept idle over all classes.
    pub max_retained_bytes: usize,
    /// Independent shards (each with its own queues and counters) that threads spread over so
    /// they do not contend on one cache line; `0` picks one per CPU (at least 1; 1 without `std`).
    pub shards: usize,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            max_class_log2: 24,
            max_per_class: 256,
            max_retained_bytes: 256 << 20,
            shards: 0,
        }
    }
}

/// A snapshot of a pool's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Calls to [`BufferPool::get`].
    pub gets: u64,
    /// Gets served by an idle buffer.
    pub hits: u64,
    /// Gets that allocated a fresh buffer (including oversize requests).
    pub misses: u64,
    /// Buffers that came back and were kept.
    pub returns: u64,
    /// Buffers that came back and were freed because their class or the byte cap was full.
    pub dropped_full: u64,
    /// Idle buffers freed by [`BufferPool::trim`].
    pub trimmed: u64,
    /// Bytes held by idle buffers now.
    pub bytes_retained: u64,
}

impl PoolStats {
    /// Hits over gets, in `[0, 1]` (0 before the first get).
    pub fn hit_rate(&self) -> f64 {
        if self.gets == 0 {
            0.0
        } else {
            self.hits as f64 / self.gets as f64
        }
    }
}

/// One shard's queues, byte budget and counters, on cache lines of its own.
#[repr(align(128))]
struct Shard {
    classes: Box<[ArrayQueue<Box<[u8]>>]>,
    budget: usize,
    retained: AtomicUsize,
    gets: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    returns: AtomicU64,
    dropped_full: AtomicU64,
    trimmed: AtomicU64,
}

/// A thread-safe pool of byte buffers.
///
/// Buffers borrow the pool (`PooledBuf<'p>`), so the hot path touches no reference count; use
/// [`BufferPool::global`] or [`BufferPool::leak`] where a `'static` pool is needed.
pub struct BufferPool {
    config: PoolConfig,
    shards: Box<[Shard]>,
}

impl fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferPool")
            .field("config", &self.config)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Default for BufferPool {
    fn default() -> Self {
        Self::new(PoolConfig::default())
    }
}

#[cfg(feature = "std")]
fn default_shards() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

#[cfg(not(feature = "std"))]
fn default_shards() -> usize {
    1
}

/// The shard this thread prefers: threads are numbered round-robin on first use.
#[cfg(feature = "std")]
fn home_shard(n: usize) -> usize {
    use core::cell::Cell;
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::thread_local!(static HOME: Cell<usize> = const { Cell::new(usize::MAX) });
    HOME.with(|h| {
        let mut i = h.get();
        if i == usize::MAX {
            i = NEXT.fetch_add(1, Relaxed);
            h.set(i);
        }
        i % n
    })
}

#[cfg(not(feature = "std"))]
fn home_shard(_n: usize) -> usize {
    0
}

impl BufferPool {
    /// A pool with the given limits. `max_class_log2` is clamped to at least 12 (4 KiB).
    pub fn new(mut config: PoolConfig) -> Self {
        config.max_class_log2 = config.max_class_log2.clamp(MIN_CLASS_LOG2, usize::BITS - 2);
        if config.shards == 0 {
            config.shards = default_shards();
        }
        let n_classes = (config.max_class_log2 - MIN_CLASS_LOG2 + 1) as usize;
        // Limits are split evenly over the shards (rounded up so a class can hold one buffer).
        let budget = config.max_retained_bytes / config.shards;
        let per_class = config.max_per_class.div_ceil(config.shards);
        let shards = (0..config.shards)
            .map(|_| Shard {
                classes: (0..n_classes)
                    .map(|i| {
                        let size = 1usize << (i as u32 + MIN_CLASS_LOG2);
                        ArrayQueue::new(per_class.min(budget / size).max(1))
                    })
                    .collect(),
                budget,
                retained: AtomicUsize::new(0),
                gets: AtomicU64::new(0),
                hits: AtomicU64::new(0),
                misses: AtomicU64::new(0),
                returns: AtomicU64::new(0),
                dropped_full: AtomicU64::new(0),
                trimmed: AtomicU64::new(0),
            })
            .collect();
        Self { config, shards }
    }

    /// A pool that lives for the rest of the process, for buffers that must be `'static`.
    pub fn leak(config: PoolConfig) -> &'static BufferPool {
        Box::leak(Box::new(Self::new(config)))
    }

    /// The process-wide default pool (default [`PoolConfig`]).
    #[cfg(feature = "std")]
    pub fn global() -> &'static BufferPool {
        static GLOBAL: std::sync::OnceLock<BufferPool> = std::sync::OnceLock::new();
        GLOBAL.get_or_init(BufferPool::default)
    }

    /// The limits this pool was built with (with `shards` resolved).
    pub fn config(&self) -> PoolConfig {
        self.config
    }

    /// The class that serves a request of `len` bytes, if any.
    fn class_for(&self, len: usize) -> Option<usize> {
        let log2 = len
            .max(1)
            .next_power_of_two()
            .trailing_zeros()
            .max(MIN_CLASS_LOG2);
        (log2 <= self.config.max_class_log2).then(|| (log2 - MIN_CLASS_LOG2) as usize)
    }

    /// A buffer of exactly `len` bytes; its contents are unspecified (not zeroed on reuse).
    pub fn get(&self, len: usize) -> PooledBuf<'_> {
        let n = self.shards.len();
        let home = home_shard(n);
        let shard = &self.shards[home];
        shard.gets.fetch_add(1, Relaxed);
        let Some(class) = self.class_for(len) else {
            shard.misses.fetch_add(1, Relaxed);
            return PooledBuf::new(allocate(len), len, None);
        };
        // Home shard first, then the others, so buffers freed on other threads are found.
        for i in 0..n {
            let s = &self.shards[(home + i) % n];
            if let Some(buf) = s.classes[class].pop() {
                s.retained.fetch_sub(buf.len(), Relaxed);
                shard.hits.fetch_add(1, Relaxed);
                return PooledBuf::new(buf, len, Some(self));
            }
        }
        shard.misses.fetch_add(1, Relaxed);
        let buf = allocate(1 << (class as u32 + MIN_CLASS_LOG2));
        PooledBuf::new(buf, len, Some(self))
    }

    /// Give a buffer back: kept if its class and the byte budget have room, freed otherwise.
    fn put(&self, buf: Box<[u8]>, size: usize) {
        let Some(class) = self
            .class_for(size)
            .filter(|&c| size == 1 << (c as u32 + MIN_CLASS_LOG2))
        else {
            return; // not a class size: never retained
        };
        let shard = &self.shards[home_shard(self.shards.len())];
        // Reserve the bytes first so concurrent returns cannot overshoot the budget.
        let size = buf.len();
        let prev = shard.retained.fetch_add(size, Relaxed);
        if prev + size > shard.budget {
            shard.retained.fetch_sub(size, Relaxed);
            shard.dropped_full.fetch_add(1, Relaxed);
            return;
        }
        if shard.classes[class].push(buf).is_ok() {
            shard.returns.fetch_add(1, Relaxed);
        } else {
            shard.retained.fetch_sub(size, Relaxed);
            shard.dropped_full.fetch_add(1, Relaxed);
        }
    }

    /// Free idle buffers, the largest first, until at most `keep` bytes stay idle; returns
    /// the bytes freed. Without it a pool keeps what its busiest moment left idle (up to its
    /// limits) for ever.
    pub fn trim(&self, keep: usize) -> usize {
        let idle = |p: &Self| {
            p.shards
                .iter()
                .map(|s| s.retained.load(Relaxed))
                .sum::<usize>()
        };
        let mut left = idle(self);
        let mut freed = 0;
        let n_classes = self.shards.first().map_or(0, |s| s.classes.len());
        for class in (0..n_classes).rev() {
            for shard in self.shards.iter() {
                while left > keep {
                    let Some(buf) = shard.classes[class].pop() else {
                        break;
                    };
                    shard.retained.fetch_sub(buf.len(), Relaxed);
                    shard.trimmed.fetch_add(1, Relaxed);
                    left = left.saturating_sub(buf.len());
                    freed += buf.len();
                }
            }
        }
        freed
    }

    /// The counters now, summed over shards.
    pub fn stats(&self) -> PoolStats {
        let mut t = PoolStats::default();
        for s in self.shards.iter() {
            t.gets += s.gets.load(Relaxed);
            t.hits += s.hits.load(Relaxed);
            t.misses += s.misses.load(Relaxed);
            t.returns += s.returns.load(Relaxed);
            t.dropped_full += s.dropped_full.load(Relaxed);
            t.trimmed += s.trimmed.load(Relaxed);
            t.bytes_retained += s.retained.load(Relaxed) as u64;
        }
        t
    }
}

/// A buffer on loan from a [`BufferPool`]; derefs to its length and goes back to the pool on drop.
///
/// One of at least [`ALIGNED_MIN`] bytes of capacity starts on an [`ALIGN`] boundary.
pub struct PooledBuf<'p> {
    // The allocation; the buffer is `buf[start..start + capacity]`.
    buf: Box<[u8]>,
    start: usize,
    capacity: usize,
    len: usize,
    pool: Option<&'p BufferPool>,
}

impl<'p> PooledBuf<'p> {
    fn new(buf: Box<[u8]>, len: usize, pool: Option<&'p BufferPool>) -> Self {
        let (start, capacity) = window(&buf);
        Self {
            buf,
            start,
            capacity,
            len,
            pool,
        }
    }

    /// Bytes the buffer can hold without reallocation (its size class).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Change the visible length, up to [`capacity`](Self::capacity); new bytes are unspecified.
    ///
    /// Returns `false` (and leaves the length) if `len` exceeds the capacity.
    pub fn set_len(&mut self, len: usize) -> bool {
        if len > self.capacity {
            return false;
        }
        self.len = len;
        true
    }

    /// The whole buffer, up to its capacity, for reads that do not know their length ahead.
    pub fn spare_mut(&mut self) -> &mut [u8] {
        let (start, cap) = (self.start, self.capacity);
        &mut self.buf[start..start + cap]
    }
}

impl PooledBuf<'static> {
    /// Hand the buffer on as `bytes::Bytes` without copying; it returns to the pool when the
    /// last `Bytes` referring to it is dropped.
    pub fn into_bytes(self) -> bytes::Bytes {
        bytes::Bytes::from_owner(self)
    }
}

impl Deref for PooledBuf<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
}

impl DerefMut for PooledBuf<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        let (start, len) = (self.start, self.len);
        &mut self.buf[start..start + len]
    }
}

impl AsRef<[u8]> for PooledBuf<'_> {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl AsMut<[u8]> for PooledBuf<'_> {
    fn as_mut(&mut self) -> &mut [u8] {
        self
    }
}

impl fmt::Debug for PooledBuf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PooledBuf")
            .field("len", &self.len)
            .field("capacity", &self.capacity)
            .field("pooled", &self.pool.is_some())
            .finish()
    }
}

impl Drop for PooledBuf<'_> {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.put(core::mem::take(&mut self.buf), self.capacity);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn small_pool() -> BufferPool {
        BufferPool::new(PoolConfig {
            max_class_log2: 16,
            max_per_class: 2,
            max_retained_bytes: 256 << 10,
            shards: 1,
        })
    }

    #[test]
    fn get_derefs_to_exact_len_and_rounds_capacity_up() {
        let pool = small_pool();
        for (len, cap) in [
            (0, 4096),
            (1, 4096),
            (4096, 4096),
            (4097, 8192),
            (65536, 65536),
        ] {
            let b = pool.get(len);
            assert_eq!(b.len(), len);
            assert_eq!(b.capacity(), cap, "len {len}");
        }
    }

    #[test]
    fn reuse_is_a_hit_and_keeps_contents() {
        let pool = small_pool();
        let mut b = pool.get(5000);
        b.fill(0xAB);
        drop(b);
        let b = pool.get(6000);
        assert!(b[..5000].iter().all(|&x| x == 0xAB), "reused, not zeroed");
        let s = pool.stats();
        assert_eq!((s.gets, s.hits, s.misses, s.returns), (2, 1, 1, 1));
        assert_eq!(s.bytes_retained, 0, "the buffer is on loan again");
        drop(b);
        assert_eq!(pool.stats().bytes_retained, 8192);
        assert!((pool.stats().hit_rate() - 0.5).abs() < 1e-9);
    }

    #[test]
    fn oversize_requests_bypass_the_pool() {
        let pool = small_pool();
        let b = pool.get((64 << 10) + 1);
        assert_eq!(b.len(), (64 << 10) + 1);
        drop(b);
        let s = pool.stats();
        assert_eq!((s.misses, s.returns, s.bytes_retained), (1, 0, 0));
    }

    #[test]
    fn retention_is_capped_per_class_and_in_bytes() {
        let pool = small_pool();
        // Three 4 KiB buffers at once: only two fit the class.
        let bufs: Vec<_> = (0..3).map(|_| pool.get(4096)).collect();
        drop(bufs);
        let s = pool.stats();
        assert_eq!((s.returns, s.dropped_full, s.bytes_retained), (2, 1, 8192));

        // 64 KiB class: the byte cap (256 KiB) minus the 8 KiB held allows three more.
        let big: Vec<_> = (0..5).map(|_| pool.get(65536)).collect();
        drop(big);
        let s = pool.stats();
        assert!(s.bytes_retained <= 256 << 10, "{s:?}");
        assert_eq!(
            s.returns,
            2 + 2,
            "64 KiB class holds at most max_per_class = 2"
        );
        assert_eq!(s.dropped_full, 1 + 3);
    }

    #[test]
    fn trim_frees_idle_buffers_largest_first_down_to_the_bound() {
        let pool = small_pool();
        let bufs: Vec<_> = [4096, 4096, 65536, 65536, 16384]
            .iter()
            .map(|&n| pool.get(n))
            .collect();
        drop(bufs);
        // Retained bytes are what the pool holds: a 64 KiB buffer's allocation has its
        // alignment slack.
        let big = (65536 + ALIGN) as u64;
        let idle = 2 * 4096 + 2 * big + 16384;
        assert_eq!(pool.stats().bytes_retained, idle);
        assert_eq!(pool.trim(usize::MAX), 0);
        // Both 64 KiB buffers go first; the 16 KiB one brings it under 20 KiB.
        assert_eq!(pool.trim(20_000) as u64, 2 * big + 16384);
        let s = pool.stats();
        assert_eq!((s.bytes_retained, s.trimmed), (8192, 3));
        // Buffers on loan are not the pool's to free; it keeps serving.
        let held = pool.get(4096);
        assert_eq!(pool.trim(0), 4096);
        drop(held);
        assert_eq!(pool.stats().bytes_retained, 4096);
        assert_eq!(pool.get(4096).len(), 4096);
    }

    #[test]
    fn large_buffers_start_on_an_aligned_boundary() {
        let pool = BufferPool::default();
        for len in [ALIGNED_MIN, 100_000, 256 << 10, 1 << 20, 20 << 20] {
            for _ in 0..3 {
                let mut b = pool.get(len);
                assert_eq!(b.as_ptr() as usize % ALIGN, 0, "{len}");
                assert_eq!(b.spare_mut().as_ptr() as usize % ALIGN, 0, "{len}");
                assert_eq!(b.len(), len);
                assert!(b.capacity() >= len);
                b.spare_mut().fill(7);
            }
        }
        let b = pool.get(4096);
        assert_eq!((b.len(), b.capacity()), (4096, 4096));
    }

    #[test]
    fn set_len_and_spare_stay_within_capacity() {
        let pool = small_pool();
        let mut b = pool.get(10);
        assert_eq!(b.spare_mut().len(), 4096);
        assert!(b.set_len(4096));
        assert_eq!(b.len(), 4096);
        assert!(!b.set_len(4097));
        assert_eq!(b.len(), 4096);
    }

    #[test]
    fn bytes_handoff_returns_buffer_when_last_clone_drops() {
        let pool: &'static BufferPool =
            alloc::boxed::Box::leak(alloc::boxed::Box::new(small_pool()));
        let mut b = pool.get(4096);
        b[0] = 7;
        let ptr = b.as_ptr();
        let bytes = b.into_bytes();
        assert_eq!(bytes.as_ptr(), ptr, "no copy");
        let clone = bytes.slice(0..1);
        drop(bytes);
        assert_eq!(pool.stats().returns, 0, "still referenced");
        assert_eq!(clone[0], 7);
        drop(clone);
        assert_eq!(pool.stats().returns, 1);
    }

    #[cfg(feature = "std")]
    #[test]
    fn concurrent_use_keeps_counters_consistent() {
        let pool = BufferPool::new(PoolConfig {
            max_class_log2: 20,
            max_per_class: 8,
            max_retained_bytes: 1 << 20,
            shards: 2,
        });
        std::thread::scope(|s| {
            for t in 0..4 {
                let pool = &pool;
                s.spawn(move || {
                    for i in 0..2000 {
                        let mut b = pool.get(4096 << ((i + t) % 5));
                        b[0] = i as u8;
                    }
                });
            }
        });
        let s = pool.stats();
        assert_eq!(s.gets, 8000);
        assert_eq!(s.hits + s.misses, s.gets);
        assert_eq!(s.returns + s.dropped_full, s.gets, "every buffer came back");
        assert!(s.bytes_retained <= 1 << 20);
        assert!(s.hit_rate() > 0.5, "{s:?}");
    }

    #[cfg(feature = "std")]
    #[test]
    fn global_pool_is_shared() {
        let a = BufferPool::global();
        let before = a.stats().gets;
        drop(BufferPool::global().get(100));
        assert!(a.stats().gets > before);
    }
}
