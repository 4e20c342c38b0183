//! Sharded random fill: the load tester's payloads, regenerable from `(seed, id, offset)`.
//!
//! A table of 256 shards of 4 KiB is generated once per seed with PCG. An object is a run of
//! 4 KiB blocks; block `b` of object `id` is one shard rotated by a byte offset, both taken
//! from word `b` of a PCG stream that belongs to that object. Filling is therefore two
//! `memcpy`s per block from a 1 MiB table (no allocation, no per-byte work), and any offset of
//! any object can be regenerated alone — so a reader verifies a whole GET, or a Range GET,
//! without storing the data, and multipart parts are generated in parallel.
//!
//! The rotation (by whole 64-byte lines) makes 256 × 64 distinct blocks instead of 256, so a
//! deduplicating backend cannot fold a benchmark's data down to one megabyte.

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use crate::md5::lanes::{Backend, Md5State, update_lanes};
use crate::md5::{Md5Digest, Md5Sink};
use crate::pool::{BufferPool, PooledBuf};

/// Bytes per shard and per block.
pub const SHARD_SIZE: usize = 4096;
/// Shards in the table.
pub const SHARDS: usize = 256;

/// The shard table for one seed; cheap to share (`&ShardedFill` or in an `Arc`).
pub struct ShardedFill {
    seed: u64,
    table: Box<[u8]>,
}

impl fmt::Debug for ShardedFill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedFill")
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

// splitmix64's finaliser: a well-known bijective mixer for deriving per-object PCG parameters.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl ShardedFill {
    /// Generate the shard table for `seed` (1 MiB, once).
    pub fn new(seed: u64) -> Self {
        let mut table = vec![0u8; SHARDS * SHARD_SIZE].into_boxed_slice();
        Pcg64::seed_from_u64(seed).fill_bytes(&mut table);
        Self { seed, table }
    }

    /// The seed the table was generated from.
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

    fn shard(&self, s: usize) -> &[u8] {
        &self.table[s * SHARD_SIZE..(s + 1) * SHARD_SIZE]
    }

    /// The MD5s of the objects `(id, len)`, many at a time in SIMD lanes, without generating
    /// their bodies: `out[i]` equals `md5(&object(id).generate(len))`.
    ///
    /// Each lane reads its object's bytes in place from the shard table (a rotated block is
    /// two slices of one shard, both whole 64-byte blocks), so nothing is copied at all.
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
    /// `ranges[i] = (id, offset, len)`, in SIMD lanes, reading the shard table in place.
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
        let mut feeds: Vec<BlockFeed<'_>> = ranges
            .iter()
            .map(|&(id, offset, len)| BlockFeed {
                cursor: self.object(id).cursor(offset),
                left: len,
                second: None,
            })
            .collect();
        update_lanes(backend, &mut states[..ranges.len()], |i| feeds[i].next());
    }
}

/// An object's bytes as slices of the shard table, at most one 4 KiB block per slice pair.
struct BlockFeed<'a> {
    cursor: Cursor<'a>,
    left: u64,
    // The second half of a rotated block, handed out on the next call.
    second: Option<&'a [u8]>,
}

impl<'a> BlockFeed<'a> {
    fn next(&mut self) -> Option<&'a [u8]> {
        if let Some(s) = self.second.take() {
            return Some(s);
        }
        if self.left == 0 {
            return None;
        }
        let in_block = (self.cursor.position() % SHARD_SIZE as u64) as usize;
        let n = self.left.min((SHARD_SIZE - in_block) as u64) as usize;
        self.left -= n as u64;
        let mut first = None;
        let second = &mut self.second;
        // `walk` within one block hands out one or two slices (the rotation wraps once).
        self.cursor.walk(n, |seg| match first {
            None => first = Some(seg),
            Some(_) => *second = Some(seg),
        });
        first
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

    /// A cursor positioned at `offset`.
    pub fn cursor(&self, offset: u64) -> Cursor<'a> {
        Cursor::new(*self, offset)
    }

    /// Fill `buf` with the object's bytes from `offset` on.
    pub fn fill_at(&self, offset: u64, buf: &mut [u8]) {
        self.cursor(offset).fill(buf);
    }

    /// Check `data` against the object's bytes from `offset` on.
    pub fn verify_at(&self, offset: u64, data: &[u8]) -> Result<(), Mismatch> {
        self.cursor(offset).verify(data)
    }

    /// The first `len` bytes in a fresh allocation (no zeroing: bytes are written once).
    pub fn generate(&self, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len);
        self.cursor(0).walk(len, |seg| v.extend_from_slice(seg));
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

    /// The MD5 of the first `len` bytes, without keeping them.
    pub fn md5(&self, len: u64) -> Md5Digest {
        let mut sink = Md5Sink::new();
        let mut cur = self.cursor(0);
        let mut left = len;
        while left > 0 {
            let n = left.min(1 << 20) as usize;
            cur.walk(n, |seg| sink.update(seg));
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
/// Keeps the object's PCG stream at the current block, so sequential use costs one
/// `next_u64` per 4 KiB; positioning costs one O(log n) PCG jump.
#[derive(Clone)]
pub struct Cursor<'a> {
    fill: &'a ShardedFill,
    rng: Pcg64,
    word: u64,
    next: u64,
    pos: u64,
}

impl fmt::Debug for Cursor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cursor")
            .field("pos", &self.pos)
            .finish_non_exhaustive()
    }
}

impl<'a> Cursor<'a> {
    fn new(obj: Object<'a>, offset: u64) -> Self {
        let seed = obj.fill.seed;
        let state = u128::from(mix(seed ^ mix(obj.id))) << 64 | u128::from(mix(!seed ^ obj.id));
        // A PCG stream per object (the increment is derived from the id), positioned at the block.
        let mut rng = Pcg64::new(state, u128::from(obj.id));
        let block = offset / SHARD_SIZE as u64;
        rng.advance(u128::from(block));
        let word = rng.next_u64();
        let next = rng.next_u64();
        Self {
            fill: obj.fill,
            rng,
            word,
            next,
            pos: offset,
        }
    }

    /// The object offset of the next byte.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Hand the next `n` bytes to `sink` as slices of the shard table, in order.
    #[inline]
    fn walk(&mut self, mut n: usize, mut sink: impl FnMut(&'a [u8])) {
        while n > 0 {
            let in_block = (self.pos % SHARD_SIZE as u64) as usize;
            let shard = self.fill.shard((self.word & 0xff) as usize);
            // Rotations are whole cache lines: a misaligned source splits every vector load.
            let start = ((((self.word >> 8) as usize) & 63) * 64 + in_block) % SHARD_SIZE;
            let take = n.min(SHARD_SIZE - in_block);
            let first = take.min(SHARD_SIZE - start);
            sink(&shard[start..start + first]);
            if take > first {
                sink(&shard[..take - first]);
            }
            n -= take;
            self.pos += take as u64;
            if in_block + take == SHARD_SIZE {
                self.word = self.next;
                self.next = self.rng.next_u64();
                prefetch(self.fill.shard((self.next & 0xff) as usize));
            }
        }
    }

    /// Fill `buf` with the next bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut at = 0;
        self.walk(buf.len(), |seg| {
            buf[at..at + seg.len()].copy_from_slice(seg);
            at += seg.len();
        });
    }

    /// Check `data` against the next bytes; the cursor moves past `data` either way.
    pub fn verify(&mut self, data: &[u8]) -> Result<(), Mismatch> {
        let mut at = 0;
        let mut bad = None;
        let base = self.pos;
        self.walk(data.len(), |seg| {
            let got = &data[at..at + seg.len()];
            if bad.is_none() && got != seg {
                let i = got.iter().zip(seg).position(|(a, b)| a != b).unwrap_or(0);
                bad = Some(Mismatch {
                    offset: base + (at + i) as u64,
                    expected: seg[i],
                    found: got[i],
                });
            }
            at += seg.len();
        });
        bad.map_or(Ok(()), Err)
    }
}

/// Ask for the next block's shard while this one is copied: blocks jump across the table, so
/// the hardware prefetcher cannot guess them.
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch(shard: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for line in (0..shard.len()).step_by(64) {
        // SAFETY: a prefetch is only a hint; it never faults and reads nothing into the program.
        // (It is `unsafe` solely for its `#[target_feature(enable = "sse")]`, which x86_64 has.)
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                shard.as_ptr().wrapping_add(line).cast(),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = shard;
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

#[cfg(test)]
mod tests {
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
    fn rotation_multiplies_distinct_blocks() {
        // 16384 blocks of one object. Shards alone could give at most 256 distinct blocks;
        // 256 shards x 64 rotations give 16384 kinds, of which 16384 draws hit ~63%.
        let fill = ShardedFill::new(3);
        let mut cur = fill.object(0).cursor(0);
        let mut block = [0u8; SHARD_SIZE];
        let mut seen = BTreeSet::new();
        for _ in 0..16_384 {
            cur.fill(&mut block);
            seen.insert(crate::md5::md5(&block));
        }
        assert!(
            (9_500..=11_200).contains(&seen.len()),
            "{} distinct blocks",
            seen.len()
        );
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
        // Edge sizes around one MD5 block and around a shard, at offsets inside blocks.
        let fill = ShardedFill::new(21);
        let lens = [0u64, 1, 63, 64, 65, 4095, 4096, 4097, 10_000, 70_001];
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
