//! Random fill: the load tester's payloads, regenerable from `(seed, id, offset)`.
//!
//! One 4 KiB base block is generated per seed with PCG. An object is a run of 4 KiB blocks;
//! block `b` of object `id` is the base block XORed with a 64-byte key repeated over its 64
//! lines, the key derived from `(seed, id, b)` with splitmix64. Any offset of any object is
//! therefore regenerable alone in O(1) — so a reader verifies a whole GET, or a Range GET,
//! without storing the data, and multipart parts are generated in parallel.
//!
//! Why XOR: the source is 4 KiB and stays in L1, so filling is one load, one XOR and one store
//! per vector, and the stores are the whole cost. The table copy it replaced (256 shards of
//! 4 KiB, each block a shard rotated by whole lines and copied out) read a 1 MiB source at
//! random, which with the destination does not fit a 1 MiB L2: on the 2-core AMD EPYC of
//! `benches/README.md` (48 KiB L1d, 1 MiB L2) it ran at 0.56–0.61× of `copy_from_slice` at
//! 256 KiB, where this fill runs at 1.06–1.09× (2.1× at 1 MiB, 2.9–3× at 16 MiB, where the copy
//! is bound by reading its source from memory; `report fill`). It needs vectors: the portable
//! body (SSE2 on x86-64) gives 0.56× at 256 KiB, AVX2 1.07×, AVX-512F the figures above. The
//! kernel is picked once per [`ShardedFill`] (at run time with `std`, by compile-time target
//! features without); all give the same bytes.
//!
//! Uniqueness: the object's word and each block key's word 0 are bijections of the id and of
//! the block index, so the blocks of one object are pairwise distinct, block `b` of two objects
//! differs, and a deduplicating backend cannot fold a benchmark's data.

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use crate::md5::lanes::{Backend, Md5State, update_lanes};
use crate::md5::{Md5Digest, Md5Sink};
use crate::pool::{BufferPool, PooledBuf};

use kernel::Kernel;

/// Bytes per block (the base block's size; each block of an object has its own key).
pub const SHARD_SIZE: usize = 4096;

/// Cache lines per block.
const LINES: usize = SHARD_SIZE / 64;

/// Bytes of each range generated per round of [`ShardedFill::md5_update_many`].
const MD5_CHUNK: usize = 16 << 10;

/// The base block, as cache lines, aligned so that no vector load of it splits a line.
#[repr(align(64))]
struct Base([[u8; 64]; LINES]);

/// The fill for one seed: a 4 KiB base block; cheap to share (`&ShardedFill` or in an `Arc`).
pub struct ShardedFill {
    seed: u64,
    base: Box<Base>,
    kernel: Kernel,
}

impl fmt::Debug for ShardedFill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedFill")
            .field("seed", &self.seed)
            .field("kernel", &self.kernel)
            .finish_non_exhaustive()
    }
}

// splitmix64's finaliser: a well-known bijective mixer.
const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// splitmix64's increment (2^64 / golden ratio).
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// The word of object `id`: a bijection of `id` for a given seed.
fn object_word(seed: u64, id: u64) -> u64 {
    mix(seed ^ mix(id))
}

/// The 64-byte key of block `b` of the object whose word is `obj`.
///
/// `k0` is a bijection of `b` (for one object) and of `obj` (for one block), and word 0 is a
/// bijection of `k0`: two blocks of one object, or block `b` of two objects, never share a key.
/// The eight words are splitmix64's stream from `k0`.
#[inline(always)]
fn block_key(obj: u64, b: u64) -> [u8; 64] {
    let k0 = mix(obj ^ mix(b.wrapping_add(GOLDEN)));
    let mut key = [0u8; 64];
    for (j, k) in key.chunks_exact_mut(8).enumerate() {
        let w = mix(k0.wrapping_add(GOLDEN.wrapping_mul(j as u64 + 1)));
        k.copy_from_slice(&w.to_le_bytes());
    }
    key
}

/// `dst[i] = base[phase + i] ^ key[(phase + i) % 64]`: the bytes of one block from byte
/// `phase` on. Bytes before the first line boundary and after the last one go one at a
/// time; whole lines go 64 bytes at a time, which the `#[target_feature]` callers turn into
/// one or two vector registers per line.
///
/// Requires `phase + dst.len() <= SHARD_SIZE`.
#[inline(always)]
fn xor_block(dst: &mut [u8], base: &Base, key: &[u8; 64], phase: usize) {
    debug_assert!(phase + dst.len() <= SHARD_SIZE);
    let byte = |p: usize| base.0[p / 64][p % 64] ^ key[p % 64];
    let head = ((64 - phase % 64) % 64).min(dst.len());
    let (head_dst, rest) = dst.split_at_mut(head);
    for (i, d) in head_dst.iter_mut().enumerate() {
        *d = byte(phase + i);
    }
    // From here on the position is at a line boundary (or `rest` is empty).
    let first = (phase + head) / 64;
    let (lines, tail) = rest.as_chunks_mut::<64>();
    for (d, s) in lines.iter_mut().zip(&base.0[first.min(LINES)..]) {
        for ((d, s), k) in d.iter_mut().zip(s).zip(key) {
            *d = s ^ k;
        }
    }
    let at = (first + lines.len()) * 64;
    for (i, d) in tail.iter_mut().enumerate() {
        *d = byte(at + i);
    }
}

/// Fill `buf` with the bytes from `offset` on of the object whose word is `obj`: one key and
/// one [`xor_block`] per block touched. The kernels are this body compiled for each feature set.
#[inline(always)]
fn fill_span(base: &Base, obj: u64, offset: u64, buf: &mut [u8]) {
    let mut block = offset / SHARD_SIZE as u64;
    let mut phase = (offset % SHARD_SIZE as u64) as usize;
    let mut key = block_key(obj, block);
    let mut rest = buf;
    while !rest.is_empty() {
        let n = rest.len().min(SHARD_SIZE - phase);
        let (now, later) = rest.split_at_mut(n);
        block = block.wrapping_add(1);
        // The next key first: its multiplications overlap this block's stores.
        let next = block_key(obj, block);
        xor_block(now, base, &key, phase);
        key = next;
        phase = 0;
        rest = later;
    }
}

impl ShardedFill {
    /// The fill for `seed`: a 4 KiB base block from PCG, and the widest kernel this CPU runs.
    pub fn new(seed: u64) -> Self {
        Self::with_kernel(seed, Kernel::detect())
    }

    fn with_kernel(seed: u64, kernel: Kernel) -> Self {
        let mut base = Box::new(Base([[0; 64]; LINES]));
        let mut rng = Pcg64::seed_from_u64(seed);
        for line in &mut base.0 {
            rng.fill_bytes(line);
        }
        Self { seed, base, kernel }
    }

    /// The seed the base block was generated from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The object with this id: its bytes are a pure function of `(seed, id, offset)`.
    pub fn object(&self, id: u64) -> Object<'_> {
        Object { fill: self, id }
    }

    /// Fill `buf` with the bytes of object `id` from `offset` on. Allocates nothing.
    pub fn fill(&self, id: u64, offset: u64, buf: &mut [u8]) {
        self.object(id).fill_at(offset, buf);
    }

    /// The MD5s of the objects `(id, len)`, many at a time in SIMD lanes, without generating
    /// whole bodies: `out[i]` equals `md5(&object(id).generate(len))`.
    pub fn md5_many(&self, objects: &[(u64, u64)]) -> Vec<Md5Digest> {
        self.md5_many_with(Backend::detect(), objects)
    }

    /// [`md5_many`](Self::md5_many) on a given MD5 backend.
    pub fn md5_many_with(&self, backend: Backend, objects: &[(u64, u64)]) -> Vec<Md5Digest> {
        let ranges: Vec<(u64, u64, u64)> = objects.iter().map(|&(id, len)| (id, 0, len)).collect();
        let mut states = vec![Md5State::new(); objects.len()];
        self.md5_update_many(backend, &mut states, &ranges);
        states.into_iter().map(Md5State::finalize).collect()
    }

    /// Feed `states[i]` the bytes of object `id` in `[offset, offset + len)` for each
    /// `ranges[i] = (id, offset, len)`, in SIMD lanes.
    ///
    /// Works in rounds: up to one range per lane is generated 16 KiB at a time into one
    /// scratch allocation (it stays in L2), the lanes hash those pieces together, and a range
    /// that is done hands its place to the next. The fill is an order of magnitude faster than
    /// the hashing, so this costs little over hashing bodies already in memory.
    ///
    /// The states may already hold bytes (a prefix the caller owns, e.g. a stamp), so a part
    /// of an object or an object whose first bytes differ from the fill is hashed the same way.
    ///
    /// Panics if `states` is shorter than `ranges`.
    pub fn md5_update_many(
        &self,
        backend: Backend,
        states: &mut [Md5State],
        ranges: &[(u64, u64, u64)],
    ) {
        assert!(states.len() >= ranges.len(), "one state per range");
        let states = &mut states[..ranges.len()];
        const NONE: usize = usize::MAX;
        // Small objects need no more scratch than their length.
        let Some(chunk) = ranges.iter().map(|r| r.2).max().filter(|&m| m > 0) else {
            return;
        };
        let chunk = chunk.min(MD5_CHUNK as u64) as usize;
        let width = backend.lanes().min(ranges.len());
        let mut scratch = vec![0u8; width * chunk];
        // Per slot: the range it holds (or NONE) and the bytes generated for this round.
        let mut held = vec![NONE; width];
        let mut ready = vec![0usize; width];
        // Per range: its slot (or NONE), cursor and bytes left.
        let mut slot_of = vec![NONE; ranges.len()];
        let mut feeds: Vec<(Cursor<'_>, u64)> = ranges
            .iter()
            .map(|&(id, offset, len)| (self.object(id).cursor(offset), len))
            .collect();
        let mut given = vec![false; width];
        let mut waiting = (0..ranges.len()).filter(|&i| ranges[i].2 > 0);
        loop {
            for (s, h) in held.iter_mut().enumerate() {
                if *h != NONE && feeds[*h].1 == 0 {
                    slot_of[*h] = NONE;
                    *h = NONE;
                }
                if *h == NONE
                    && let Some(i) = waiting.next()
                {
                    *h = i;
                    slot_of[i] = s;
                }
            }
            if held.iter().all(|&h| h == NONE) {
                break;
            }
            for ((&h, piece), n) in held
                .iter()
                .zip(scratch.chunks_exact_mut(chunk))
                .zip(&mut ready)
            {
                *n = 0;
                if h != NONE {
                    let (cursor, left) = &mut feeds[h];
                    *n = (*left).min(chunk as u64) as usize;
                    cursor.fill(&mut piece[..*n]);
                    *left -= *n as u64;
                }
            }
            given.fill(false);
            update_lanes(backend, states, |i| {
                let s = slot_of[i];
                if s == NONE || core::mem::replace(&mut given[s], true) {
                    return None;
                }
                Some(&scratch[s * chunk..s * chunk + ready[s]])
            });
        }
    }
}

/// One generated object: fill, generate, read or verify any part of it.
#[derive(Debug, Clone, Copy)]
pub struct Object<'a> {
    fill: &'a ShardedFill,
    id: u64,
}

impl<'a> Object<'a> {
    /// The object's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// A cursor positioned at `offset` (O(1)).
    pub fn cursor(&self, offset: u64) -> Cursor<'a> {
        Cursor {
            fill: self.fill,
            obj: object_word(self.fill.seed, self.id),
            pos: offset,
        }
    }

    /// Fill `buf` with the object's bytes from `offset` on.
    pub fn fill_at(&self, offset: u64, buf: &mut [u8]) {
        self.cursor(offset).fill(buf);
    }

    /// Check `data` against the object's bytes from `offset` on.
    pub fn verify_at(&self, offset: u64, data: &[u8]) -> Result<(), Mismatch> {
        self.cursor(offset).verify(data)
    }

    /// The first `len` bytes in a fresh allocation (no zeroing: each 4 KiB is generated in an
    /// L1-resident scratch and appended).
    pub fn generate(&self, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len);
        let mut cur = self.cursor(0);
        let mut scratch = [0u8; SHARD_SIZE];
        while v.len() < len {
            let n = (len - v.len()).min(SHARD_SIZE);
            cur.fill(&mut scratch[..n]);
            v.extend_from_slice(&scratch[..n]);
        }
        v
    }

    /// The first `len` bytes in a buffer from `pool`.
    pub fn generate_pooled<'p>(&self, pool: &'p BufferPool, len: usize) -> PooledBuf<'p> {
        let mut buf = pool.get(len);
        self.fill_at(0, &mut buf);
        buf
    }

    /// The first `len` bytes and their MD5.
    pub fn generate_with_md5(&self, len: usize) -> (Vec<u8>, Md5Digest) {
        let data = self.generate(len);
        let digest = crate::md5::md5(&data);
        (data, digest)
    }

    /// The MD5 of the first `len` bytes, without keeping them (64 KiB generated at a time).
    pub fn md5(&self, len: u64) -> Md5Digest {
        let mut sink = Md5Sink::new();
        let mut cur = self.cursor(0);
        let mut scratch = vec![0u8; (64 << 10).min(len as usize)];
        let mut left = len;
        while left > 0 {
            let n = left.min(scratch.len() as u64) as usize;
            cur.fill(&mut scratch[..n]);
            sink.update(&scratch[..n]);
            left -= n as u64;
        }
        sink.finalize()
    }

    /// An `embedded_io::Read` body of `len` bytes.
    pub fn reader(&self, len: u64) -> ObjectReader<'a> {
        ObjectReader {
            cursor: self.cursor(0),
            remaining: len,
        }
    }
}

/// Where a verified body first differs from the expected bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mismatch {
    /// Offset within the object of the first differing byte.
    pub offset: u64,
    /// The byte expected there.
    pub expected: u8,
    /// The byte found.
    pub found: u8,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "byte {} differs: expected {:#04x}, found {:#04x}",
            self.offset, self.expected, self.found
        )
    }
}

impl core::error::Error for Mismatch {}

/// A position in an object that moves forward as bytes are filled or verified.
///
/// Holds nothing but the position: any offset costs the same (one key per 4 KiB block).
#[derive(Clone)]
pub struct Cursor<'a> {
    fill: &'a ShardedFill,
    obj: u64,
    pos: u64,
}

impl fmt::Debug for Cursor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cursor")
            .field("pos", &self.pos)
            .finish_non_exhaustive()
    }
}

impl Cursor<'_> {
    /// The object offset of the next byte.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Fill `buf` with the next bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        let fill = self.fill;
        fill.kernel.fill(&fill.base, self.obj, self.pos, buf);
        self.pos = self.pos.wrapping_add(buf.len() as u64);
    }

    /// Check `data` against the next bytes; the cursor moves past `data` either way.
    pub fn verify(&mut self, data: &[u8]) -> Result<(), Mismatch> {
        let start = self.pos;
        let mut want = [0u8; SHARD_SIZE];
        let mut at = 0;
        let mut bad = None;
        while at < data.len() && bad.is_none() {
            // Block by block: one block at a time in an L1 scratch.
            let phase = (self.pos % SHARD_SIZE as u64) as usize;
            let n = (data.len() - at).min(SHARD_SIZE - phase);
            let (want, got) = (&mut want[..n], &data[at..at + n]);
            self.fill(want);
            if want != got {
                let i = got
                    .iter()
                    .zip(&*want)
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                bad = Some(Mismatch {
                    offset: start.wrapping_add((at + i) as u64),
                    expected: want[i],
                    found: got[i],
                });
            }
            at += n;
        }
        self.pos = start.wrapping_add(data.len() as u64);
        bad.map_or(Ok(()), Err)
    }
}

/// An object body as an `embedded_io::Read` of a fixed length.
#[derive(Debug, Clone)]
pub struct ObjectReader<'a> {
    cursor: Cursor<'a>,
    remaining: u64,
}

impl ObjectReader<'_> {
    /// Bytes not yet read.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }
}

impl embedded_io::ErrorType for ObjectReader<'_> {
    type Error = core::convert::Infallible;
}

impl embedded_io::Read for ObjectReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let n = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        self.cursor.fill(&mut buf[..n]);
        self.remaining -= n as u64;
        Ok(n)
    }
}

/// The fill kernels: [`fill_span`] compiled for AVX-512F, for AVX2 and for the baseline target,
/// and the proof that the CPU runs the one chosen.
///
/// The fill's only `unsafe` lives here: calling a `#[target_feature]` function, sound because
/// a [`Kernel`] exists only for a feature set the CPU has (checked at run time with `std`, at
/// compile time without). Written by hand because no crate does this (an XOR of a small
/// L1-resident block with a repeated key); the vector code itself is LLVM's, from the
/// `[u8; 64]` lines of [`xor_block`] compiled with the wider features enabled (the portable
/// body alone gets SSE2 on x86-64).
mod kernel {
    #![allow(unsafe_code)]

    use super::{Base, fill_span};

    /// A kernel by name, available or not.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) enum KernelKind {
        /// The portable body (SSE2 on x86-64).
        Scalar,
        /// 256-bit registers, two per line (x86-64, AVX2).
        Avx2,
        /// One 512-bit register per line (x86-64, AVX-512F).
        Avx512,
    }

    impl KernelKind {
        /// Every kind, slowest first.
        #[cfg(test)]
        pub(super) const ALL: [Self; 3] = [Self::Scalar, Self::Avx2, Self::Avx512];

        fn is_available(self) -> bool {
            match self {
                Self::Scalar => true,
                Self::Avx2 => x86_feature!("avx2"),
                Self::Avx512 => x86_feature!("avx512f"),
            }
        }
    }

    /// A kernel this CPU runs: the only way to reach the `#[target_feature]` functions.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) struct Kernel {
        // Invariant: `kind.is_available()`.
        kind: KernelKind,
    }

    impl Kernel {
        /// The widest kernel this CPU runs.
        pub(super) fn detect() -> Self {
            let kind = [KernelKind::Avx512, KernelKind::Avx2]
                .into_iter()
                .find(|k| k.is_available())
                .unwrap_or(KernelKind::Scalar);
            Self { kind }
        }

        /// `kind`, if this CPU runs it (tests force each one this way).
        #[cfg(test)]
        pub(super) fn new(kind: KernelKind) -> Option<Self> {
            kind.is_available().then_some(Self { kind })
        }

        /// [`fill_span`] on this kernel.
        pub(super) fn fill(self, base: &Base, obj: u64, offset: u64, buf: &mut [u8]) {
            match self.kind {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `self.kind` is available (the invariant of `Kernel`): the CPU has AVX-512F.
                KernelKind::Avx512 => unsafe { avx512(base, obj, offset, buf) },
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `self.kind` is available (the invariant of `Kernel`): the CPU has AVX2.
                KernelKind::Avx2 => unsafe { avx2(base, obj, offset, buf) },
                _ => fill_span(base, obj, offset, buf),
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn avx512(base: &Base, obj: u64, offset: u64, buf: &mut [u8]) {
        fill_span(base, obj, offset, buf);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn avx2(base: &Base, obj: u64, offset: u64, buf: &mut [u8]) {
        fill_span(base, obj, offset, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::kernel::KernelKind;
    use super::*;
    use alloc::collections::BTreeSet;
    use embedded_io::Read;
    use proptest::prelude::*;

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let a = ShardedFill::new(1).object(7).generate(10_000);
        let b = ShardedFill::new(1).object(7).generate(10_000);
        let c = ShardedFill::new(2).object(7).generate(10_000);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn ten_thousand_objects_of_64k_are_pairwise_distinct() {
        let fill = ShardedFill::new(42);
        let mut buf = vec![0u8; 64 << 10];
        let mut seen = BTreeSet::new();
        for id in 0..10_000 {
            fill.fill(id, 0, &mut buf);
            assert!(
                seen.insert(crate::md5::md5(&buf)),
                "object {id} repeats an earlier one"
            );
        }
    }

    #[test]
    fn all_blocks_of_one_object_are_distinct() {
        // 16384 blocks (64 MiB) of one object: every key is different, so every block is.
        let fill = ShardedFill::new(3);
        let mut cur = fill.object(0).cursor(0);
        let mut block = [0u8; SHARD_SIZE];
        let mut seen = BTreeSet::new();
        for b in 0..16_384 {
            cur.fill(&mut block);
            assert!(seen.insert(crate::md5::md5(&block)), "block {b} repeats");
        }
    }

    #[test]
    fn block_keys_are_distinct_in_word_zero() {
        // Word 0 alone tells blocks apart: within an object and across objects at one block.
        let fill = ShardedFill::new(4);
        let obj = object_word(fill.seed, 5);
        let word0 = |obj, b| u64::from_le_bytes(block_key(obj, b)[..8].try_into().expect("8"));
        let within: BTreeSet<u64> = (0..100_000).map(|b| word0(obj, b)).collect();
        assert_eq!(within.len(), 100_000);
        let across: BTreeSet<u64> = (0..100_000)
            .map(|id| word0(object_word(fill.seed, id), 7))
            .collect();
        assert_eq!(across.len(), 100_000);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn every_kernel_gives_the_same_bytes(
            id in any::<u64>(),
            off in 0u64..(1 << 40),
            len in 0usize..20_000,
        ) {
            let want = ShardedFill::with_kernel(8, Kernel::new(KernelKind::Scalar).expect("scalar"));
            let mut expected = vec![0u8; len];
            want.fill(id, off, &mut expected);
            let mut got = vec![0u8; len];
            for kind in KernelKind::ALL {
                let Some(kernel) = Kernel::new(kind) else { continue };
                let fill = ShardedFill::with_kernel(8, kernel);
                got.fill(0);
                fill.fill(id, off, &mut got);
                prop_assert_eq!(&got, &expected, "{:?}", kind);
            }
        }
    }

    #[test]
    fn the_kernels_this_cpu_has_are_detected() {
        let kernel = Kernel::detect();
        #[cfg(all(target_arch = "x86_64", feature = "std"))]
        if std::is_x86_feature_detected!("avx512f") {
            assert_eq!(Some(kernel), Kernel::new(KernelKind::Avx512));
        }
        assert_eq!(ShardedFill::new(1).kernel, kernel);
    }

    proptest! {
        #[test]
        fn any_range_regenerates_alone(id in any::<u64>(), off in 0u64..100_000, len in 0usize..20_000) {
            let fill = ShardedFill::new(9);
            let whole = fill.object(id).generate(off as usize + len);
            let mut part = vec![0u8; len];
            fill.fill(id, off, &mut part);
            prop_assert_eq!(&part[..], &whole[off as usize..]);
            prop_assert_eq!(fill.object(id).verify_at(off, &part), Ok(()));
        }

        #[test]
        fn reader_in_random_pieces_equals_generate(
            len in 0u64..50_000,
            pieces in proptest::collection::vec(1usize..9000, 1..40),
        ) {
            let fill = ShardedFill::new(5);
            let obj = fill.object(11);
            let mut r = obj.reader(len);
            let mut got = Vec::new();
            let mut buf = vec![0u8; 9000];
            for p in pieces.iter().cycle() {
                let n = r.read(&mut buf[..*p]).expect("infallible");
                if n == 0 { break; }
                got.extend_from_slice(&buf[..n]);
            }
            prop_assert_eq!(got, obj.generate(len as usize));
        }
    }

    #[test]
    fn verify_reports_first_corrupt_offset() {
        let fill = ShardedFill::new(1);
        let obj = fill.object(99);
        let mut data = obj.generate(3 * SHARD_SIZE + 17);
        assert_eq!(obj.verify_at(0, &data), Ok(()));
        data[5000] ^= 1;
        data[9000] ^= 1;
        let e = obj.verify_at(0, &data).expect_err("corrupted");
        assert_eq!(e.offset, 5000);
        assert_eq!(e.found, e.expected ^ 1);
        // Streamed verification of the tail alone reports the absolute offset.
        let mut cur = obj.cursor(8000);
        assert_eq!(cur.verify(&data[8000..8500]), Ok(()));
        assert_eq!(cur.verify(&data[8500..]).map_err(|m| m.offset), Err(9000));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]

        #[test]
        fn md5_many_equals_md5_of_generate(
            objects in proptest::collection::vec((any::<u64>(), 0u64..100_000), 1..=18),
        ) {
            let fill = ShardedFill::new(12);
            let want: Vec<Md5Digest> = objects
                .iter()
                .map(|&(id, len)| crate::md5::md5(&fill.object(id).generate(len as usize)))
                .collect();
            for backend in Backend::available() {
                prop_assert_eq!(&fill.md5_many_with(backend, &objects), &want, "{:?}", backend);
            }
        }
    }

    #[test]
    fn md5_update_many_equals_md5_of_ranges_after_a_prefix() {
        // Edge sizes around one MD5 block, a fill block and a round's chunk, at offsets inside
        // blocks; more ranges than lanes, so ranges take the places of finished ones.
        let fill = ShardedFill::new(21);
        let lens = [
            0u64, 1, 63, 64, 65, 4095, 4096, 4097, 10_000, 16_384, 16_385, 70_001,
        ];
        let mut ranges = Vec::new();
        for (k, &len) in lens.iter().enumerate() {
            for offset in [0u64, 1, 8, 4093, 8192] {
                ranges.push((k as u64 * 31 + offset, offset, len));
            }
        }
        for backend in Backend::available() {
            for prefix in [&b""[..], b"12345678", &[7u8; 70]] {
                let mut states = vec![Md5State::new(); ranges.len()];
                for s in &mut states {
                    s.update(prefix);
                }
                fill.md5_update_many(backend, &mut states, &ranges);
                for (s, &(id, offset, len)) in states.into_iter().zip(&ranges) {
                    let mut bytes = prefix.to_vec();
                    let mut body = vec![0u8; len as usize];
                    fill.fill(id, offset, &mut body);
                    bytes.extend_from_slice(&body);
                    assert_eq!(
                        s.finalize(),
                        crate::md5::md5(&bytes),
                        "{backend:?} {id} {offset} {len} prefix {}",
                        prefix.len()
                    );
                }
            }
        }
    }

    #[test]
    fn md5_many_of_sixteen_one_mib_objects() {
        let fill = ShardedFill::new(13);
        let objects: Vec<(u64, u64)> = (0..16).map(|id| (id, 1 << 20)).collect();
        let got = fill.md5_many(&objects);
        for (&(id, len), d) in objects.iter().zip(&got) {
            assert_eq!(*d, fill.object(id).md5(len));
        }
        assert!(fill.md5_many(&[]).is_empty());
    }

    #[test]
    fn generate_variants_agree() {
        let fill = ShardedFill::new(77);
        let obj = fill.object(1);
        let pool = BufferPool::default();
        let plain = obj.generate(300_000);
        assert_eq!(&obj.generate_pooled(&pool, 300_000)[..], &plain[..]);
        let (data, digest) = obj.generate_with_md5(300_000);
        assert_eq!(data, plain);
        assert_eq!(digest, crate::md5::md5(&plain));
        assert_eq!(obj.md5(300_000), digest);
    }
}
