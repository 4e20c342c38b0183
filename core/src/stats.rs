//! Statistics for comparing runs of a benchmark: the median and a spread of each side, and the
//! Mann-Whitney U test of whether one side tends to be larger than the other.
//!
//! Mann-Whitney rather than Welch's t: it compares ranks, so one run disturbed by a neighbour's
//! build (a long tail, not a shift) does not decide the answer, and it assumes no normal
//! distribution of throughputs or latencies. Its p-value is exact (the distribution of U
//! counted over every arrangement) when no value is tied and the sides are small, else the
//! normal approximation with tie and continuity corrections. With few runs it can never say
//! "significant": two-sided, 3 runs against 3 gives p = 0.1 at best and 4 against 4 gives
//! 0.029, so a comparison at the 5% level needs at least 4 runs a side.

use alloc::vec::Vec;

/// Two-sided p-values below this are called significant.
pub const ALPHA: f64 = 0.05;

/// Sides whose arrangements are counted exactly (when no value is tied).
const EXACT_MAX: usize = 30;

/// The median and spread of one side's values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// How many values.
    pub n: usize,
    /// Their median (the mean of the middle two for an even count).
    pub median: f64,
    /// The median absolute deviation from the median (0 for one value).
    pub mad: f64,
}

/// The median of `values` (0 for none).
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v.get(n / 2).copied().unwrap_or(0.0),
        _ => {
            let (a, b) = (v.get(n / 2 - 1), v.get(n / 2));
            a.zip(b).map_or(0.0, |(a, b)| (a + b) / 2.0)
        }
    }
}

/// The median and median absolute deviation of `values`.
pub fn summarize(values: &[f64]) -> Summary {
    let m = median(values);
    let deviations: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
    Summary {
        n: values.len(),
        median: m,
        mad: median(&deviations),
    }
}

/// The outcome of a Mann-Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of the first side: how many (a, b) pairs have a above b, ties counting one half.
    pub u: f64,
    /// The two-sided p-value: how likely a difference at least this large is when both
    /// sides come from one distribution. 1 when either side is empty or every value is equal.
    pub p: f64,
    /// Whether `p` is exact, not the normal approximation.
    pub exact: bool,
}

impl MannWhitney {
    /// Whether the difference is significant at the 5% level ([`ALPHA`]).
    pub fn significant(&self) -> bool {
        self.p < ALPHA
    }
}

/// Rank `a` and `b` together (mid-ranks for ties): the rank sum of `a`, and the sum of
/// `t^3 - t` over groups of `t` tied values (for the variance's correction).
fn ranks(a: &[f64], b: &[f64]) -> (f64, f64) {
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|v| (*v, true))
        .chain(b.iter().map(|v| (*v, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut rank_sum, mut ties) = (0.0, 0.0);
    let mut i = 0;
    while i < all.len() {
        let mut j = i + 1;
        while all.get(j).is_some_and(|x| x.0 == all[i].0) {
            j += 1;
        }
        // Positions i..j (ranks i+1..=j) share their mean rank.
        let mid = (i + 1 + j) as f64 / 2.0;
        let in_a = all
            .get(i..j)
            .map_or(0, |g| g.iter().filter(|x| x.1).count());
        rank_sum += mid * in_a as f64;
        let t = (j - i) as f64;
        ties += t * t * t - t;
        i = j;
    }
    (rank_sum, ties)
}

/// How many arrangements of `m` values of one side and `n` of the other give each U
/// (`0..=m*n`), by the recurrence f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u).
fn u_counts(m: usize, n: usize) -> Vec<f64> {
    // prev[j][u]: arrangements of (i-1) and j values; cur for i.
    let width = m * n + 1;
    let mut prev: Vec<Vec<f64>> = (0..=n)
        .map(|_| {
            let mut row = alloc::vec![0.0; width];
            row[0] = 1.0;
            row
        })
        .collect();
    for _i in 1..=m {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
        for j in 0..=n {
            let mut row = alloc::vec![0.0; width];
            for (u, slot) in row.iter_mut().enumerate() {
                // The largest value is from the first side (it beats all j others) or not.
                let first = if u >= j { prev[j][u - j] } else { 0.0 };
                let second = if j > 0 { cur[j - 1][u] } else { 0.0 };
                *slot = first + second;
            }
            cur.push(row);
        }
        prev = cur;
    }
    prev.pop().unwrap_or_default()
}

/// The Mann-Whitney U test of `a` against `b`, two-sided.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> MannWhitney {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return MannWhitney {
            u: 0.0,
            p: 1.0,
            exact: true,
        };
    }
    let (rank_sum, ties) = ranks(a, b);
    let (mf, nf) = (m as f64, n as f64);
    let u = rank_sum - mf * (mf + 1.0) / 2.0;
    if ties == 0.0 && m <= EXACT_MAX && n <= EXACT_MAX {
        let counts = u_counts(m, n);
        let total: f64 = counts.iter().sum();
        // U is a whole number without ties.
        let k = u as usize;
        let below: f64 = counts.iter().take(k + 1).sum();
        let above: f64 = counts.iter().skip(k).sum();
        let p = (2.0 * below.min(above) / total).min(1.0);
        return MannWhitney { u, p, exact: true };
    }
    MannWhitney {
        u,
        p: normal_p(u, mf, nf, ties),
        exact: false,
    }
}

/// The two-sided p-value of `u` by the normal approximation (tie and continuity corrected);
/// 1 when every value is equal.
fn normal_p(u: f64, m: f64, n: f64, ties: f64) -> f64 {
    let total = m + n;
    let var = m * n / 12.0 * ((total + 1.0) - ties / (total * (total - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u - m * n / 2.0).abs() - 0.5).max(0.0) / libm::sqrt(var);
    libm::erfc(z / core::f64::consts::SQRT_2).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_spreads() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        let s = summarize(&[10.0, 12.0, 11.0, 50.0, 9.0]);
        assert_eq!((s.n, s.median), (5, 11.0));
        // Deviations 1, 1, 0, 39, 2: the outlier does not move the spread much.
        assert_eq!(s.mad, 1.0);
        assert_eq!(summarize(&[7.0]).mad, 0.0);
    }

    #[test]
    fn exact_p_values_match_the_tables() {
        // Fully separated sides: 2 arrangements of C(m+n, m) are as extreme, two-sided.
        let r = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
        assert!(r.exact);
        assert_eq!(r.u, 0.0);
        assert!((r.p - 2.0 / 20.0).abs() < 1e-12, "{r:?}");
        assert!(!r.significant(), "3 runs a side can never be significant");
        let r = mann_whitney(&[5.0, 6.0, 7.0, 8.0], &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(r.u, 16.0);
        assert!((r.p - 2.0 / 70.0).abs() < 1e-12, "{r:?}");
        assert!(r.significant());
        // m = n = 5, U = 4: P(U <= 4) = 12/252 (Mann and Whitney's table), two-sided 0.0952.
        let r = mann_whitney(&[1.0, 2.0, 3.0, 4.5, 7.0], &[4.0, 5.0, 6.0, 8.0, 9.0]);
        assert_eq!(r.u, 4.0);
        assert!((r.p - 24.0 / 252.0).abs() < 1e-12, "{r:?}");
        // The counts of every U add up to C(m+n, m).
        let c = u_counts(6, 4);
        assert_eq!(c.iter().sum::<f64>(), 210.0);
        assert_eq!(c.len(), 25);
        assert_eq!(c.first(), c.last(), "symmetric");
    }

    #[test]
    fn identical_sides_are_not_significant() {
        let a = [100.0, 103.0, 98.0, 101.0, 99.0, 102.0];
        let r = mann_whitney(&a, &a);
        assert!(!r.exact, "ties: the normal approximation");
        assert!(r.p > 0.9, "{r:?}");
        let r = mann_whitney(&[5.0; 4], &[5.0; 4]);
        assert_eq!(r.p, 1.0);
        assert_eq!(mann_whitney(&[], &[1.0]).p, 1.0);
        // One run a side: nothing can be concluded.
        assert_eq!(mann_whitney(&[1.0], &[2.0]).p, 1.0);
    }

    #[test]
    fn the_normal_approximation_agrees_with_the_exact_test() {
        // Overlapping sides without ties (odd against even values), 12 a side.
        let a: Vec<f64> = (0..12).map(|i| f64::from(i) * 2.0 + 7.0).collect();
        let b: Vec<f64> = (0..12).map(|i| f64::from(i) * 2.0).collect();
        let exact = mann_whitney(&a, &b);
        assert!(exact.exact);
        let approx = normal_p(exact.u, 12.0, 12.0, 0.0);
        assert!(exact.p > 0.001 && exact.p < 0.2, "{exact:?}");
        assert!((exact.p - approx).abs() < 0.01, "{exact:?} {approx}");
        // Sides past the exact limit take the approximation: a shift of a third of the range.
        let a: Vec<f64> = (0..40).map(|i| f64::from(i) * 3.0 + 41.0).collect();
        let b: Vec<f64> = (0..40).map(|i| f64::from(i) * 3.0).collect();
        let r = mann_whitney(&a, &b);
        assert!(!r.exact && r.significant(), "{r:?}");
        let r = mann_whitney(&a, &a);
        assert!(!r.significant(), "{r:?}");
    }
}
