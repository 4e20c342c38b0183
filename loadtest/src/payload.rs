//! The content of object `id`: the fill of `(seed, id)`, with the object id stamped over its
//! first 8 bytes.
//!
//! The stamp names an object by its first bytes and makes every object of at least
//! [`STAMP_LEN`] bytes distinct from every other, whatever the fill. (The table-copy fill
//! needed it: a 4 KiB block was one of 16384 shard rotations, so among a few thousand 4 KiB
//! objects some were identical. The XOR fill gives block 0 of every object its own key, so the
//! fill alone is now distinct too.) Objects shorter than the stamp carry a prefix of it and
//! cannot all be distinct.

use ferry_core::fill::{Cursor, Mismatch, Object, ShardedFill};
use ferry_core::md5::{Backend, Md5Digest, Md5Sink, Md5State};
use ferry_core::pool::BufferPool;

/// Bytes of the id stamp at the start of every object.
pub const STAMP_LEN: u64 = 8;

/// Object `id` of a run with a given fill.
#[derive(Debug, Clone, Copy)]
pub struct Payload<'a> {
    object: Object<'a>,
}

impl<'a> Payload<'a> {
    /// Object `id` of `fill`.
    pub fn new(fill: &'a ShardedFill, id: u64) -> Self {
        Self {
            object: fill.object(id),
        }
    }

    /// The object's id.
    pub fn id(&self) -> u64 {
        self.object.id()
    }

    /// A cursor at `offset`.
    pub fn cursor(&self, offset: u64) -> PayloadCursor<'a> {
        PayloadCursor {
            inner: self.object.cursor(offset),
            stamp: self.object.id().to_le_bytes(),
        }
    }

    /// The first `len` bytes (tests and tools; the load path streams).
    pub fn generate(&self, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        self.cursor(0).fill(&mut v);
        v
    }

    /// The MD5 of the first `len` bytes, generated through a pooled buffer.
    pub fn md5(&self, len: u64) -> Md5Digest {
        let chunk = len.clamp(1, 256 << 10) as usize;
        let mut buf = BufferPool::global().get(chunk);
        let mut sink = Md5Sink::new();
        let mut cur = self.cursor(0);
        let mut left = len;
        while left > 0 {
            let n = left.min(chunk as u64) as usize;
            cur.fill(&mut buf[..n]);
            sink.update(&buf[..n]);
            left -= n as u64;
        }
        sink.finalize()
    }
}

/// The MD5s of byte ranges `(id, offset, len)` of payloads of `fill`, hashed together in SIMD
/// lanes (no whole body is generated): `out[i]` is the MD5 of
/// `Payload::new(fill, id).generate(offset + len)[offset..]`.
///
/// The stamped bytes a range covers are fed to its state first; the rest of the range is the
/// plain fill, which `ShardedFill::md5_update_many` generates 16 KiB at a time beside the lanes.
pub fn md5_many(fill: &ShardedFill, ranges: &[(u64, u64, u64)]) -> Vec<Md5Digest> {
    let mut states = vec![Md5State::new(); ranges.len()];
    let rest: Vec<(u64, u64, u64)> = ranges
        .iter()
        .zip(&mut states)
        .map(|(&(id, offset, len), state)| {
            let stamp = id.to_le_bytes();
            let from = offset.min(STAMP_LEN);
            let to = offset.saturating_add(len).min(STAMP_LEN);
            state.update(&stamp[from as usize..to as usize]);
            let skip = to - from;
            (id, offset + skip, len - skip)
        })
        .collect();
    fill.md5_update_many(Backend::detect(), &mut states, &rest);
    states.into_iter().map(Md5State::finalize).collect()
}

/// A position in a [`Payload`] that moves forward as bytes are filled or verified.
#[derive(Debug, Clone)]
pub struct PayloadCursor<'a> {
    inner: Cursor<'a>,
    stamp: [u8; STAMP_LEN as usize],
}

impl PayloadCursor<'_> {
    /// The object offset of the next byte.
    pub fn position(&self) -> u64 {
        self.inner.position()
    }

    /// The stamp bytes from the current position on (empty past the stamp), by value.
    fn stamp_ahead(&self) -> ([u8; STAMP_LEN as usize], usize) {
        let pos = usize::try_from(self.position()).unwrap_or(usize::MAX);
        let from = pos.min(STAMP_LEN as usize);
        (self.stamp, from)
    }

    /// Fill `buf` with the next bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        let (stamp, from) = self.stamp_ahead();
        self.inner.fill(buf);
        let n = (stamp.len() - from).min(buf.len());
        buf[..n].copy_from_slice(&stamp[from..from + n]);
    }

    /// Check `data` against the next bytes; the cursor moves past `data` either way.
    pub fn verify(&mut self, data: &[u8]) -> Result<(), Mismatch> {
        let base = self.position();
        let (stamp, from) = self.stamp_ahead();
        let n = (stamp.len() - from).min(data.len());
        let (head, want) = (&data[..n], &stamp[from..from + n]);
        let bad = head
            .iter()
            .zip(want)
            .position(|(a, b)| a != b)
            .map(|i| Mismatch {
                offset: base + i as u64,
                expected: want[i],
                found: head[i],
            });
        // Step the fill over the stamped bytes, then compare the rest with it.
        let mut skip = [0u8; STAMP_LEN as usize];
        self.inner.fill(&mut skip[..n]);
        let rest = self.inner.verify(&data[n..]);
        match bad {
            Some(m) => Err(m),
            None => rest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn stamp_then_fill() {
        let fill = ShardedFill::new(3);
        let p = Payload::new(&fill, 0x0102_0304_0506_0708);
        let data = p.generate(10_000);
        assert_eq!(&data[..8], &0x0102_0304_0506_0708u64.to_le_bytes());
        assert_eq!(
            &data[8..],
            &fill.object(0x0102_0304_0506_0708).generate(10_000)[8..]
        );
        // Shorter than the stamp: a prefix of it.
        assert_eq!(p.generate(3), [8, 7, 6]);
    }

    #[test]
    fn fill_and_verify_agree_in_any_pieces() {
        let fill = ShardedFill::new(4);
        let p = Payload::new(&fill, 77);
        let whole = p.generate(20_000);
        for piece in [1, 3, 7, 8, 9, 4096, 5000] {
            let mut filled = Vec::new();
            let mut c = p.cursor(0);
            let mut v = p.cursor(0);
            for chunk in whole.chunks(piece) {
                let mut buf = vec![0; chunk.len()];
                c.fill(&mut buf);
                filled.extend_from_slice(&buf);
                assert_eq!(v.verify(chunk), Ok(()));
            }
            assert_eq!(filled, whole, "pieces of {piece}");
        }
        for start in [0, 5, 8, 4095] {
            assert_eq!(p.cursor(start).verify(&whole[start as usize..]), Ok(()));
        }
        assert_eq!(p.md5(20_000), ferry_core::md5::md5(&whole));
    }

    #[test]
    fn verify_reports_the_first_difference_in_the_stamp_or_after() {
        let fill = ShardedFill::new(4);
        let p = Payload::new(&fill, 77);
        let whole = p.generate(9_000);
        for at in [0usize, 5, 7, 8, 4_200] {
            let mut bad = whole.clone();
            bad[at] ^= 0x40;
            let mut c = p.cursor(0);
            let got = bad.chunks(6).map(|ch| c.verify(ch)).find_map(Result::err);
            assert_eq!(
                got,
                Some(Mismatch {
                    offset: at as u64,
                    expected: whole[at],
                    found: whole[at] ^ 0x40
                })
            );
        }
    }

    #[test]
    fn md5_many_equals_md5_of_the_generated_bytes() {
        // Sizes around the stamp, one MD5 block and a shard; ranges starting inside the stamp.
        let fill = ShardedFill::new(6);
        let mut ranges = Vec::new();
        for (k, len) in [0u64, 1, 7, 8, 9, 63, 64, 65, 4095, 4097, 300_001]
            .into_iter()
            .enumerate()
        {
            for offset in [0u64, 3, 8, 100, 4096] {
                ranges.push((k as u64 * 1_000_003 + offset, offset, len));
            }
        }
        let got = md5_many(&fill, &ranges);
        for (&(id, offset, len), d) in ranges.iter().zip(&got) {
            let whole = Payload::new(&fill, id).generate((offset + len) as usize);
            assert_eq!(
                *d,
                ferry_core::md5::md5(&whole[offset as usize..]),
                "{id} {offset} {len}"
            );
            if offset == 0 {
                assert_eq!(*d, Payload::new(&fill, id).md5(len));
            }
        }
    }

    #[test]
    fn single_block_objects_are_distinct() {
        // The XOR fill's block 0 has a key of its own per object, so even the raw fill is
        // distinct; the stamp keeps them so whatever the fill.
        let fill = ShardedFill::new(5);
        let raw: HashSet<Vec<u8>> = (0..3_000)
            .map(|id| fill.object(id).generate(4096))
            .collect();
        assert_eq!(raw.len(), 3_000);
        let stamped: HashSet<Vec<u8>> = (0..3_000)
            .map(|id| Payload::new(&fill, id).generate(4096))
            .collect();
        assert_eq!(stamped.len(), 3_000);
    }
}
