//! Placement of objects on backends: weighted rendezvous (highest-random-weight) hashing.
//!
//! Every backend scores every `(bucket, key)`; the highest score wins and the rest, in score
//! order, are the fallbacks. Adding or removing a backend only moves the keys it wins or held
//! (about `1/N` of them), and no table has to be shared between processes.
//!
//! Scores must be identical in every process and every release, or objects written by one
//! version would be looked for elsewhere by the next. Hence:
//! - the hash is XXH3-64 (`xxhash-rust`): a published, frozen algorithm with test vectors
//!   and implementations in other languages, unlike `core::hash` (unspecified, may change
//!   between Rust releases) or SipHash with per-process keys;
//! - the logarithm is `libm`'s pure-Rust `log`, bit-identical on every target, where the
//!   platform's libm may differ in the last bit;
//! - integers are hashed as explicit little-endian bytes.

use alloc::vec::Vec;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// A placement that cannot be built: no backend can take objects, or two share an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlacementError(pub &'static str);

impl core::fmt::Display for PlacementError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.0)
    }
}

impl core::error::Error for PlacementError {}

/// Seed for every hash here ("ferryHRW" read as a big-endian u64). Changing it moves every object.
pub const SEED: u64 = u64::from_be_bytes(*b"ferryHRW");

/// A set of weighted backends to place `(bucket, key)` pairs on.
#[derive(Debug, Clone)]
pub struct Placement {
    backends: Vec<Backend>,
}

#[derive(Debug, Clone, Copy)]
struct Backend {
    /// Hash of the backend's id: scores depend on the id, not on the backend's position.
    seed: u64,
    weight: f64,
}

impl Placement {
    /// Placement over `(id, weight)` pairs; results are indices into this slice.
    ///
    /// The id (e.g. a node name) decides the backend's scores, so it must stay the same across
    /// restarts; order does not matter. A weight of 0 keeps the backend out of every answer
    /// (draining). Errors (`InvalidArgument`): no backend with a positive weight, or two
    /// backends with the same id.
    pub fn new<I: AsRef<[u8]>>(backends: &[(I, u32)]) -> Result<Self, PlacementError> {
        let backends: Vec<Backend> = backends
            .iter()
            .map(|(id, weight)| Backend {
                seed: xxh3_64_with_seed(id.as_ref(), SEED),
                weight: f64::from(*weight),
            })
            .collect();
        if !backends.iter().any(|b| b.weight > 0.0) {
            return Err(invalid("placement needs a backend with a positive weight"));
        }
        let mut seeds: Vec<u64> = backends.iter().map(|b| b.seed).collect();
        seeds.sort_unstable();
        if seeds.windows(2).any(|w| w[0] == w[1]) {
            return Err(invalid("two placement backends share an id"));
        }
        Ok(Self { backends })
    }

    /// Number of backends (including those of weight 0).
    pub fn len(&self) -> usize {
        self.backends.len()
    }

    /// Whether there are no backends (never true for a constructed placement).
    pub fn is_empty(&self) -> bool {
        self.backends.is_empty()
    }

    /// The index of the backend that holds `(bucket, key)`.
    pub fn pick(&self, bucket: &str, key: &str) -> usize {
        let kh = key_hash(bucket, key);
        let mut best = (f64::NEG_INFINITY, 0);
        for (i, b) in self.backends.iter().enumerate() {
            if b.weight > 0.0 {
                let s = score(kh, b);
                if s > best.0 {
                    best = (s, i);
                }
            }
        }
        best.1
    }

    /// All backends of positive weight for `(bucket, key)`, best first: the fallback order.
    ///
    /// Replaces the contents of `out` (caller-owned, so a reused buffer does not allocate).
    pub fn ranked(&self, bucket: &str, key: &str, out: &mut Vec<usize>) {
        let kh = key_hash(bucket, key);
        out.clear();
        out.extend((0..self.backends.len()).filter(|&i| self.weight(i) > 0.0));
        // Scores are recomputed in the comparator: backends are few, and this needs no buffer.
        out.sort_unstable_by(|&a, &b| {
            let (sa, sb) = (self.score_at(kh, a), self.score_at(kh, b));
            sb.total_cmp(&sa).then(a.cmp(&b))
        });
    }

    fn weight(&self, i: usize) -> f64 {
        self.backends.get(i).map_or(0.0, |b| b.weight)
    }

    fn score_at(&self, kh: u64, i: usize) -> f64 {
        self.backends.get(i).map_or(0.0, |b| score(kh, b))
    }
}

/// The stable 64-bit hash of `(bucket, key)` that placement scores are derived from.
///
/// `xxh3(key, seed = xxh3(bucket, seed = SEED))`: the bucket hash as the key's seed keeps the
/// pair unambiguous (`("ab", "c")` and `("a", "bc")` differ) without copying into one buffer.
pub fn key_hash(bucket: &str, key: &str) -> u64 {
    xxh3_64_with_seed(key.as_bytes(), xxh3_64_with_seed(bucket.as_bytes(), SEED))
}

/// Weighted HRW score `-w / ln(u)`, with `u` in (0, 1) drawn from the hash of key and backend.
///
/// With this score a backend wins with probability `w / sum(w)` (the winner of independent
/// exponential races), so weights are respected without virtual nodes.
fn score(kh: u64, b: &Backend) -> f64 {
    let h = xxh3_64_with_seed(&kh.to_le_bytes(), b.seed);
    // The top 53 bits, centred in their interval: exact in an f64, never 0 or 1.
    let u = ((h >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64);
    -b.weight / libm::log(u)
}

fn invalid(what: &'static str) -> PlacementError {
    PlacementError(what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::String;

    const KEYS: usize = 100_000;

    fn keys() -> impl Iterator<Item = String> {
        (0..KEYS).map(|i| format!("dir/{i}/object.bin"))
    }

    /// Values pinned from an independent implementation (the C xxHash via Python's `xxhash`):
    ///
    /// ```text
    /// SEED = int.from_bytes(b"ferryHRW", "big")
    /// kh = xxh3_64_intdigest(b"2024/cat.jpg", seed=xxh3_64_intdigest(b"photos", seed=SEED))
    /// h  = xxh3_64_intdigest(struct.pack("<Q", kh), seed=xxh3_64_intdigest(id, seed=SEED))
    /// score = -w / math.log(((h >> 11) + 0.5) / 2**53)
    /// ```
    ///
    /// If this test fails, placement changed and stored objects would be looked for on the
    /// wrong backends.
    #[test]
    fn pinned_values() {
        assert_eq!(SEED, 0x6665_7272_7948_5257);
        assert_eq!(key_hash("photos", "2024/cat.jpg"), 0xaca9_597a_4897_bce5);
        assert_eq!(key_hash("photos", "a"), 0x7637_a753_6d51_220d);
        let p =
            Placement::new(&[("node-a", 1), ("node-b", 2), ("node-c", 1), ("node-d", 3)]).unwrap();
        let kh = key_hash("photos", "2024/cat.jpg");
        let s: Vec<f64> = p.backends.iter().map(|b| score(kh, b)).collect();
        let want = [
            12.215_259_492_872_2,
            24.672_747_823_580_895,
            0.643_807_881_828_571_1,
            7.413_954_246_376_919,
        ];
        for (got, want) in s.iter().zip(want) {
            assert!((got - want).abs() < 1e-9, "{got} != {want}");
        }
        let mut out = Vec::new();
        for (key, order) in [
            ("2024/cat.jpg", [1, 0, 3, 2]),
            ("a", [3, 1, 2, 0]),
            ("b", [1, 0, 3, 2]),
            ("c", [1, 3, 2, 0]),
            ("d", [3, 0, 1, 2]),
            ("f", [0, 3, 2, 1]),
        ] {
            p.ranked("photos", key, &mut out);
            assert_eq!(out, order, "{key}");
            assert_eq!(p.pick("photos", key), order[0]);
        }
    }

    #[test]
    fn bucket_and_key_do_not_run_together() {
        assert_ne!(key_hash("ab", "c"), key_hash("a", "bc"));
    }

    #[test]
    fn order_of_backends_does_not_matter() {
        let a = Placement::new(&[("x", 1), ("y", 2), ("z", 3)]).unwrap();
        let b = Placement::new(&[("z", 3), ("x", 1), ("y", 2)]).unwrap();
        let names = ["x", "y", "z"];
        let names_b = ["z", "x", "y"];
        for k in keys().take(1000) {
            assert_eq!(names[a.pick("b", &k)], names_b[b.pick("b", &k)]);
        }
    }

    #[test]
    fn adding_a_backend_moves_about_one_in_n_plus_one() {
        let ids: Vec<String> = (0..11).map(|i| format!("node-{i}")).collect();
        let before: Vec<(&str, u32)> = ids[..10].iter().map(|s| (s.as_str(), 1)).collect();
        let after: Vec<(&str, u32)> = ids.iter().map(|s| (s.as_str(), 1)).collect();
        let (p10, p11) = (
            Placement::new(&before).unwrap(),
            Placement::new(&after).unwrap(),
        );
        let mut moved = 0;
        for k in keys() {
            let (a, b) = (p10.pick("bkt", &k), p11.pick("bkt", &k));
            if a != b {
                // Keys only ever move to the new backend.
                assert_eq!(b, 10);
                moved += 1;
            }
        }
        let share = moved as f64 / KEYS as f64;
        // Expect 1/11 = 0.0909; binomial sd over 100k keys is 0.0009.
        assert!((share - 1.0 / 11.0).abs() < 0.005, "moved {share}");
    }

    #[test]
    fn weights_are_respected_within_two_percent() {
        // Shares 0.2, 0.2, 0.2, 0.4 (and 0 for the drained one): 2% of each share is over
        // three binomial standard deviations at 100k keys.
        let weights = [1u32, 1, 1, 2, 0];
        let backends: Vec<(String, u32)> = weights
            .iter()
            .enumerate()
            .map(|(i, &w)| (format!("node-{i}"), w))
            .collect();
        let p = Placement::new(&backends).unwrap();
        let mut counts = [0usize; 5];
        for k in keys() {
            counts[p.pick("weights", &k)] += 1;
        }
        let total: u32 = weights.iter().sum();
        for (i, &w) in weights.iter().enumerate() {
            let want = f64::from(w) / f64::from(total);
            let got = counts[i] as f64 / KEYS as f64;
            if w == 0 {
                assert_eq!(counts[i], 0);
            } else {
                assert!(
                    (got / want - 1.0).abs() < 0.02,
                    "backend {i}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn ranked_lists_every_live_backend_once_best_first() {
        let p = Placement::new(&[("a", 1), ("b", 0), ("c", 5), ("d", 2)]).unwrap();
        let mut out = alloc::vec![99];
        for k in keys().take(1000) {
            p.ranked("r", &k, &mut out);
            let mut sorted = out.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 2, 3]);
            assert_eq!(out[0], p.pick("r", &k));
        }
    }

    #[test]
    fn rejects_unusable_backend_sets() {
        let none: [(&str, u32); 0] = [];
        assert!(Placement::new(&none).is_err());
        assert!(Placement::new(&[("a", 0)]).is_err());
        let e = Placement::new(&[("a", 1), ("a", 2)]).unwrap_err();
        assert_eq!(e, PlacementError("two placement backends share an id"));
    }
}
