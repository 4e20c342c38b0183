//! Object sizes: fixed, log-uniform over a range, or weighted choices.
//!
//! The size of object `id` is a pure function of `(seed, id)`, so a reader that knows the
//! object id knows its size (the key carries both anyway, see [`crate::keys`]).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How object sizes are chosen (`--size`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum SizeSpec {
    /// Every object has this size: `1MiB`.
    Fixed(u64),
    /// Log-uniform between two bounds, both included: `4KiB..64MiB`.
    LogUniform {
        /// Smallest size (at least 1).
        min: u64,
        /// Largest size.
        max: u64,
    },
    /// One of several sizes with integer weights: `4KiB:50,1MiB:40,64MiB:10`.
    Weighted(Vec<(u64, u32)>),
}

/// Parse a byte count: `1048576`, `1MiB`, `4 KiB`, `1MB` (binary `KiB/MiB/GiB`, decimal
/// `K/KB/M/MB/G/GB`).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<bytesize::ByteSize>()
        .map(|b| b.as_u64())
        .map_err(|e| format!("invalid size {s:?}: {e}"))
}

/// A byte count as people read it (`1MiB`, `4KiB`, `1500B`).
pub fn format_bytes(n: u64) -> String {
    const UNITS: [(&str, u32); 4] = [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)];
    for (unit, shift) in UNITS {
        let scale = 1u64 << shift;
        if n >= scale && n.is_multiple_of(scale) {
            return format!("{}{unit}", n >> shift);
        }
    }
    format!("{n}B")
}

// splitmix64's finaliser: spreads (seed, id) over the whole u64 range.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform value in `[0, 1)` derived from `(seed, id)`.
fn unit(seed: u64, id: u64) -> f64 {
    let h = mix(seed ^ mix(id ^ 0x5a5a_1d1d_0f0f_3c3c));
    (h >> 11) as f64 / (1u64 << 53) as f64
}

impl SizeSpec {
    /// The size of object `id` in a run with `seed`.
    pub fn size_for(&self, seed: u64, id: u64) -> u64 {
        match self {
            Self::Fixed(n) => *n,
            Self::LogUniform { min, max } => {
                let (lo, hi) = ((*min as f64).ln(), ((*max + 1) as f64).ln());
                let v = (lo + unit(seed, id) * (hi - lo)).exp() as u64;
                v.clamp(*min, *max)
            }
            Self::Weighted(choices) => {
                let total: u64 = choices.iter().map(|&(_, w)| u64::from(w)).sum();
                let mut pick = (unit(seed, id) * total as f64) as u64;
                for &(size, w) in choices {
                    if pick < u64::from(w) {
                        return size;
                    }
                    pick -= u64::from(w);
                }
                choices.last().map_or(0, |&(s, _)| s)
            }
        }
    }

    /// The largest size this spec can produce.
    pub fn max(&self) -> u64 {
        match self {
            Self::Fixed(n) => *n,
            Self::LogUniform { max, .. } => *max,
            Self::Weighted(c) => c.iter().map(|&(s, _)| s).max().unwrap_or(0),
        }
    }
}

/// A range of object sizes whose operations are reported apart (`--size` ranges and weights).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeClass {
    /// Smallest size in the class.
    pub min: u64,
    /// Largest size in the class (included).
    pub max: u64,
    /// How reports name it: `64KiB` (a weighted size), `4KiB..16KiB` (from the first bound up
    /// to, not including, the second; the last class of a range includes its second bound).
    pub label: String,
}

impl SizeSpec {
    /// The classes a per-size breakdown reports: each weighted size, or the range cut at the
    /// powers of 4 (`1KiB`, `4KiB`, `16KiB`, ...); none for a fixed size (the totals say it).
    pub fn classes(&self) -> Vec<SizeClass> {
        match self {
            Self::Fixed(_) => Vec::new(),
            Self::Weighted(choices) => {
                let mut sizes: Vec<u64> = choices
                    .iter()
                    .filter(|&&(_, w)| w > 0)
                    .map(|&(s, _)| s)
                    .collect();
                sizes.sort_unstable();
                sizes.dedup();
                sizes
                    .into_iter()
                    .map(|s| SizeClass {
                        min: s,
                        max: s,
                        label: format_bytes(s),
                    })
                    .collect()
            }
            Self::LogUniform { min, max } => {
                let mut out = Vec::new();
                let mut lo = *min;
                loop {
                    // The next power of 4 above `lo`, or past the range.
                    let next = (0..32u32)
                        .map(|k| 1u64 << (2 * k))
                        .find(|&p| p > lo)
                        .unwrap_or(u64::MAX);
                    if next >= *max {
                        let label = if lo == *max {
                            format_bytes(lo)
                        } else {
                            format!("{}..{}", format_bytes(lo), format_bytes(*max))
                        };
                        out.push(SizeClass {
                            min: lo,
                            max: *max,
                            label,
                        });
                        return out;
                    }
                    out.push(SizeClass {
                        min: lo,
                        max: next - 1,
                        label: format!("{}..{}", format_bytes(lo), format_bytes(next)),
                    });
                    lo = next;
                }
            }
        }
    }
}

/// The index of the class of `classes` (sorted, as [`SizeSpec::classes`] makes them) that
/// holds `size`.
pub fn class_of(classes: &[SizeClass], size: u64) -> Option<usize> {
    let i = classes.partition_point(|c| c.max < size);
    classes.get(i).filter(|c| c.min <= size).map(|_| i)
}

impl FromStr for SizeSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if let Some((lo, hi)) = s.split_once("..") {
            let (min, max) = (parse_bytes(lo)?, parse_bytes(hi)?);
            if min == 0 || min > max {
                return Err(format!(
                    "size range {s:?} must have 0 < min <= max (log-uniform needs min >= 1)"
                ));
            }
            return Ok(Self::LogUniform { min, max });
        }
        if s.contains(':') {
            let mut choices = Vec::new();
            for part in s.split(',') {
                let (size, weight) = part
                    .split_once(':')
                    .ok_or_else(|| format!("weighted size {part:?} must be SIZE:WEIGHT"))?;
                let weight: u32 = weight
                    .trim()
                    .parse()
                    .map_err(|_| format!("invalid weight in {part:?}"))?;
                choices.push((parse_bytes(size)?, weight));
            }
            if choices.iter().all(|&(_, w)| w == 0) {
                return Err(format!("weighted sizes {s:?} need a non-zero weight"));
            }
            return Ok(Self::Weighted(choices));
        }
        parse_bytes(s).map(Self::Fixed)
    }
}

impl fmt::Display for SizeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fixed(n) => f.write_str(&format_bytes(*n)),
            Self::LogUniform { min, max } => {
                write!(f, "{}..{}", format_bytes(*min), format_bytes(*max))
            }
            Self::Weighted(c) => {
                for (i, (size, w)) in c.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{}:{w}", format_bytes(*size))?;
                }
                Ok(())
            }
        }
    }
}

impl TryFrom<String> for SizeSpec {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<SizeSpec> for String {
    fn from(s: SizeSpec) -> String {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_forms() {
        assert_eq!("1MiB".parse(), Ok(SizeSpec::Fixed(1 << 20)));
        assert_eq!("4096".parse(), Ok(SizeSpec::Fixed(4096)));
        assert_eq!("1MB".parse(), Ok(SizeSpec::Fixed(1_000_000)));
        assert_eq!(
            "4KiB..64MiB".parse(),
            Ok(SizeSpec::LogUniform {
                min: 4 << 10,
                max: 64 << 20
            })
        );
        assert_eq!(
            "4KiB:50,1MiB:40,64MiB:10".parse(),
            Ok(SizeSpec::Weighted(vec![
                (4 << 10, 50),
                (1 << 20, 40),
                (64 << 20, 10)
            ]))
        );
        for bad in ["", "x", "0..1", "5..4", "1MiB:x", "1MiB:0", "1MiB:1,oops"] {
            assert!(bad.parse::<SizeSpec>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in ["1MiB", "1500B", "4KiB..64MiB", "4KiB:50,1MiB:40,64MiB:10"] {
            let spec: SizeSpec = s.parse().unwrap();
            assert_eq!(spec.to_string(), s);
            assert_eq!(spec.to_string().parse::<SizeSpec>(), Ok(spec));
        }
    }

    #[test]
    fn sizes_are_deterministic_and_within_bounds() {
        let spec: SizeSpec = "4KiB..64MiB".parse().unwrap();
        let mut below_1m = 0;
        for id in 0..10_000 {
            let n = spec.size_for(7, id);
            assert_eq!(n, spec.size_for(7, id));
            assert!((4 << 10..=64 << 20).contains(&n));
            below_1m += u32::from(n < 1 << 20);
        }
        // Log-uniform: 4 KiB..1 MiB spans 8 of the 14 doublings, so ~57% fall below 1 MiB.
        assert!((5_200..6_200).contains(&below_1m), "{below_1m}");
        assert_ne!(
            (0..100).map(|i| spec.size_for(1, i)).collect::<Vec<_>>(),
            (0..100).map(|i| spec.size_for(2, i)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn size_classes() {
        let labels = |spec: &str| -> Vec<String> {
            let spec: SizeSpec = spec.parse().unwrap();
            spec.classes().into_iter().map(|c| c.label).collect()
        };
        assert!(labels("1MiB").is_empty());
        assert_eq!(labels("1MiB:1,4KiB:5,1MiB:2,9:0"), ["4KiB", "1MiB"]);
        assert_eq!(
            labels("4KiB..1MiB"),
            [
                "4KiB..16KiB",
                "16KiB..64KiB",
                "64KiB..256KiB",
                "256KiB..1MiB"
            ]
        );
        assert_eq!(labels("5000..20000"), ["5000B..16KiB", "16KiB..20000B"]);
        assert_eq!(labels("1KiB..1KiB"), ["1KiB"]);
        // Every size the spec makes falls in exactly one class, the one class_of names.
        for spec in ["1..100000", "4KiB..64MiB", "4KiB:50,1MiB:40,64MiB:10"] {
            let spec: SizeSpec = spec.parse().unwrap();
            let classes = spec.classes();
            for w in classes.windows(2) {
                assert!(w[0].max < w[1].min, "{spec}: sorted and disjoint");
                if matches!(spec, SizeSpec::LogUniform { .. }) {
                    assert_eq!(w[0].max + 1, w[1].min, "{spec}: a range leaves no gap");
                }
            }
            for id in 0..2_000 {
                let size = spec.size_for(1, id);
                let i = class_of(&classes, size).unwrap_or_else(|| panic!("{spec}: {size}"));
                assert!((classes[i].min..=classes[i].max).contains(&size));
            }
            assert_eq!(class_of(&classes, spec.max() + 1), None);
        }
    }

    #[test]
    fn weights_are_respected() {
        let spec: SizeSpec = "1:50,2:40,3:10,4:0".parse().unwrap();
        let mut counts = [0u32; 5];
        for id in 0..20_000 {
            counts[spec.size_for(3, id) as usize] += 1;
        }
        assert_eq!(counts[0] + counts[4], 0);
        for (size, want) in [(1, 10_000), (2, 8_000), (3, 2_000)] {
            let got = counts[size];
            assert!(
                got.abs_diff(want) < want / 10,
                "size {size}: {got} vs {want}"
            );
        }
    }
}
