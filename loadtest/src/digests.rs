//! The MD5s `--md5` needs, hashed many at a time in SIMD lanes straight from the fill.
//!
//! PUTs take object ids in order and an object's size is a function of `(seed, id)`, so the
//! digests of the objects about to be written are known before any worker asks for them. When
//! the id asked for comes within [`LOW_WATER`] of the last id hashed, the asking worker hashes
//! the next [`BATCH`] objects together (`payload::md5_many`: 16 lanes on AVX-512, each range
//! generated 16 KiB at a time beside the lanes) and leaves their digests for the workers that will write them.
//! Multipart uploads put the digests of their next parts here the same way.
//!
//! A digest is always of exactly the bytes sent: it is keyed by `(id, offset, len)`, and
//! anything not hashed ahead (a worker that overtook its batch, a retried part) is hashed on
//! the spot from the same fill.
//!
//! GETs and HEADs read the same objects again and again: the digest of a whole object, once
//! hashed for its PUT or its first read, is kept (up to [`KEPT_MAX`] objects) and every later
//! read of it compares its ETag with no hashing at all.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use ferry_core::fill::ShardedFill;
use ferry_core::md5::Md5Digest;

use crate::payload::md5_many;
use crate::size::SizeSpec;

/// Objects hashed together: one per lane of the widest kernel.
pub const BATCH: u64 = 16;
/// A new batch starts when fewer than this many ids beyond the one asked for are hashed.
pub const LOW_WATER: u64 = 2 * BATCH;
/// Digests of ids this far behind the one asked for are dropped (objects never written).
const EVICT_BEHIND: u64 = 4096;
/// Whole objects whose digests are kept for reads (about 4 MiB); past it a read of an object
/// not kept hashes it on the spot.
pub const KEPT_MAX: usize = 1 << 16;

/// A byte range of object `id`: `(id, offset, len)`.
pub type Range = (u64, u64, u64);

/// Digests hashed ahead, shared by the workers of one client.
#[derive(Debug)]
pub struct Digests {
    seed: u64,
    sizes: Option<SizeSpec>,
    ahead: Mutex<Ahead>,
}

#[derive(Debug, Default)]
struct Ahead {
    ready: HashMap<Range, Md5Digest>,
    /// Every PUT id below it has been claimed by a batch.
    frontier: u64,
    /// Whole objects' digests, for reads ([`Digests::for_read`]).
    kept: HashMap<Range, Md5Digest>,
    /// Ranges hashed alone, on one lane (none hashed ahead or kept).
    hashed_alone: u64,
}

impl Ahead {
    fn keep(&mut self, range: Range, digest: Md5Digest) {
        if self.kept.len() < KEPT_MAX || self.kept.contains_key(&range) {
            self.kept.insert(range, digest);
        }
    }
}

impl Digests {
    /// Digests of the objects of a run with `seed`; with `sizes`, PUTs are hashed ahead.
    pub fn new(seed: u64, sizes: Option<SizeSpec>) -> Self {
        Self {
            seed,
            sizes,
            ahead: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Ahead> {
        // Nothing panics while holding the lock; a poisoned one still holds valid digests.
        self.ahead
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The MD5 of a whole object about to be PUT, hashing the next objects with it when the
    /// ids ahead run low.
    pub fn for_put(&self, fill: &ShardedFill, id: u64, size: u64) -> Md5Digest {
        let Some(sizes) = self
            .sizes
            .as_ref()
            .filter(|s| s.size_for(self.seed, id) == size)
        else {
            return self.take(fill, (id, 0, size));
        };
        let own = (id, 0, size);
        let (hit, own_too, claimed) = {
            let mut ahead = self.lock();
            let hit = ahead.ready.remove(&own);
            // Claimed by a batch another worker is still hashing (or dropped): hash it here.
            let own_too = hit.is_none() && id < ahead.frontier;
            let mut claimed = 0..0;
            if ahead.frontier < id.saturating_add(LOW_WATER) {
                // Our own object leads the batch when nobody has claimed it yet.
                let start = if hit.is_none() && !own_too {
                    id
                } else {
                    ahead.frontier.max(id.saturating_add(1))
                };
                let len = if own_too { BATCH - 1 } else { BATCH };
                claimed = start..start.saturating_add(len);
                ahead.frontier = claimed.end;
                let floor = id.saturating_sub(EVICT_BEHIND);
                ahead.ready.retain(|&(i, _, _), _| i >= floor);
            }
            (hit, own_too, claimed)
        };
        let mut mine = hit;
        if !claimed.is_empty() {
            let mut ranges: Vec<Range> = Vec::with_capacity(BATCH as usize);
            if own_too {
                ranges.push(own);
            }
            ranges.extend(claimed.map(|i| (i, 0, sizes.size_for(self.seed, i))));
            let digests = md5_many(fill, &ranges);
            let mut ahead = self.lock();
            for (r, d) in ranges.into_iter().zip(digests) {
                if r == own && mine.is_none() {
                    mine = Some(d);
                } else {
                    ahead.ready.insert(r, d);
                }
            }
        }
        let d = mine.unwrap_or_else(|| self.range(fill, own));
        self.lock().keep(own, d);
        d
    }

    /// The MD5 of a whole object read back (a GET's or a HEAD's ETag check): kept since its
    /// PUT or its first read, else hashed now and kept.
    pub fn for_read(&self, fill: &ShardedFill, id: u64, size: u64) -> Md5Digest {
        let range = (id, 0, size);
        if let Some(&d) = self.lock().kept.get(&range) {
            return d;
        }
        let d = self.take(fill, range);
        self.lock().keep(range, d);
        d
    }

    /// Hash `ranges` together and keep their digests for [`take`](Self::take).
    pub fn hash_ahead(&self, fill: &ShardedFill, ranges: &[Range]) {
        let digests = md5_many(fill, ranges);
        let mut ahead = self.lock();
        // Parts of uploads that failed before sending them are never taken.
        if let Some(floor) = ranges
            .iter()
            .map(|r| r.0.saturating_sub(EVICT_BEHIND))
            .min()
        {
            ahead.ready.retain(|&(i, _, _), _| i >= floor);
        }
        ahead.ready.extend(ranges.iter().copied().zip(digests));
    }

    /// Keep `digest` as the MD5 of `range`, to be sent as it is (tests give a wrong one).
    pub fn insert(&self, range: Range, digest: Md5Digest) {
        self.lock().ready.insert(range, digest);
    }

    /// The MD5 of `range`: hashed ahead (and now taken), or hashed now.
    pub fn take(&self, fill: &ShardedFill, range: Range) -> Md5Digest {
        let hit = self.lock().ready.remove(&range);
        hit.unwrap_or_else(|| self.range(fill, range))
    }

    /// The MD5 of `range`, hashed now (one lane, generated 16 KiB at a time).
    pub fn range(&self, fill: &ShardedFill, range: Range) -> Md5Digest {
        self.lock().hashed_alone += 1;
        md5_many(fill, &[range])[0]
    }

    /// Ranges hashed alone so far (nothing hashed ahead or kept had them).
    pub fn hashed_alone(&self) -> u64 {
        self.lock().hashed_alone
    }

    /// Digests hashed ahead and not yet taken.
    pub fn pending(&self) -> usize {
        self.lock().ready.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::Payload;

    #[test]
    fn puts_in_any_order_get_their_own_digest() {
        let fill = ShardedFill::new(8);
        let sizes: SizeSpec = "1KiB..300KiB".parse().expect("size spec");
        let digests = Digests::new(8, Some(sizes.clone()));
        // In order, with gaps, out of order, repeated, and a size the spec does not give.
        let ids = (0..40).chain([100, 99, 101, 5, 5, 1000]).chain(60..90);
        for id in ids {
            let size = sizes.size_for(8, id);
            let want = Payload::new(&fill, id).md5(size);
            assert_eq!(digests.for_put(&fill, id, size), want, "id {id}");
            assert_eq!(digests.for_put(&fill, id, size + 1), {
                Payload::new(&fill, id).md5(size + 1)
            });
        }
        assert!(digests.pending() <= (LOW_WATER + BATCH) as usize * 3);
    }

    #[test]
    fn reads_hash_an_object_at_most_once() {
        let fill = ShardedFill::new(10);
        let sizes: SizeSpec = "1KiB..100KiB".parse().expect("size spec");
        let digests = Digests::new(10, Some(sizes.clone()));
        for id in 0..40 {
            digests.for_put(&fill, id, sizes.size_for(10, id));
        }
        let alone = digests.hashed_alone();
        // Objects PUT here: their digests were kept.
        for round in 0..3 {
            for id in (0..40).rev() {
                let size = sizes.size_for(10, id);
                let want = Payload::new(&fill, id).md5(size);
                assert_eq!(digests.for_read(&fill, id, size), want, "{round} {id}");
            }
        }
        assert_eq!(digests.hashed_alone(), alone);
        // Objects written elsewhere: hashed on their first read only.
        for _ in 0..3 {
            for id in 500..510 {
                let want = Payload::new(&fill, id).md5(5000);
                assert_eq!(digests.for_read(&fill, id, 5000), want);
            }
        }
        assert_eq!(digests.hashed_alone(), alone + 10);
        // Another size of the same object is another object.
        assert_eq!(
            digests.for_read(&fill, 500, 5001),
            Payload::new(&fill, 500).md5(5001)
        );
    }

    #[test]
    fn parts_hashed_ahead_are_taken_once() {
        let fill = ShardedFill::new(9);
        let digests = Digests::new(9, None);
        let parts: Vec<Range> = (0..20).map(|n| (7, n * 70_000, 70_000)).collect();
        digests.hash_ahead(&fill, &parts);
        assert_eq!(digests.pending(), 20);
        let whole = Payload::new(&fill, 7).generate(20 * 70_000);
        for &(id, offset, len) in &parts {
            let want = ferry_core::md5::md5(&whole[offset as usize..(offset + len) as usize]);
            assert_eq!(digests.take(&fill, (id, offset, len)), want);
            // Taken: asked again, it is hashed again, to the same value.
            assert_eq!(digests.take(&fill, (id, offset, len)), want);
        }
        assert_eq!(digests.pending(), 0);
    }
}
