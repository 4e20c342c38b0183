//! `--autoterm[=WINDOW,TOLERANCE]`: end a run once its throughput has been stable.
//!
//! The detector is fed one figure per second of the run (operations and bytes, summed over
//! every agent when a coordinator drives the run) and knows nothing of where they come from,
//! so a local run and a run across machines stop by the same rule.
//!
//! The rule: the last `WINDOW` seconds are cut into blocks (five when the window allows it,
//! at least one second each); the run is stable when every block's operations per second, and
//! its bytes per second when the workload moves bytes, are within `TOLERANCE` percent of the
//! whole window's. Blocks rather than single seconds, because one second of a busy client
//! machine can be off by more than a steady server ever is over two.

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// When to call throughput stable (`--autoterm[=WINDOW,TOLERANCE]`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AutotermSpec {
    /// How long throughput must have been stable (whole seconds, at least 2).
    pub window: Duration,
    /// How far each block may be from the window's mean, in percent.
    pub tolerance_pct: f64,
}

impl AutotermSpec {
    /// The window when none is given.
    pub const DEFAULT_WINDOW: Duration = Duration::from_secs(10);
    /// The tolerance when none is given, percent.
    pub const DEFAULT_TOLERANCE_PCT: f64 = 7.5;
    /// Longest window accepted: an hour of per-second figures.
    pub const MAX_WINDOW: Duration = Duration::from_secs(3600);
    /// How long a run with `--autoterm` may go when neither `--duration` nor `--ops` bounds
    /// it.
    pub const DEFAULT_CAP: Duration = Duration::from_secs(15 * 60);
}

impl Default for AutotermSpec {
    fn default() -> Self {
        Self {
            window: Self::DEFAULT_WINDOW,
            tolerance_pct: Self::DEFAULT_TOLERANCE_PCT,
        }
    }
}

impl FromStr for AutotermSpec {
    type Err = String;

    /// `""` (the defaults), `WINDOW` or `WINDOW,TOLERANCE`: `20s`, `30s,5`, `1m,2.5%`.
    fn from_str(s: &str) -> Result<Self, String> {
        let mut spec = Self::default();
        let s = s.trim();
        if s.is_empty() {
            return Ok(spec);
        }
        let (window, tolerance) = match s.split_once(',') {
            Some((w, t)) => (w.trim(), Some(t.trim())),
            None => (s, None),
        };
        if !window.is_empty() {
            spec.window = humantime::parse_duration(window)
                .map_err(|e| format!("--autoterm window {window:?}: {e}"))?;
        }
        if spec.window < Duration::from_secs(2) || spec.window > Self::MAX_WINDOW {
            return Err(format!(
                "--autoterm window must be 2s..{}s",
                Self::MAX_WINDOW.as_secs()
            ));
        }
        if spec.window.subsec_nanos() != 0 {
            return Err("--autoterm window must be whole seconds".into());
        }
        if let Some(t) = tolerance {
            let t = t.strip_suffix('%').unwrap_or(t).trim();
            spec.tolerance_pct = t
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0 && *v < 100.0)
                .ok_or_else(|| {
                    format!("--autoterm tolerance {t:?} must be a percentage in (0, 100)")
                })?;
        }
        Ok(spec)
    }
}

impl fmt::Display for AutotermSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s,{}%", self.window.as_secs(), self.tolerance_pct)
    }
}

/// One second of the run as the detector sees it.
#[derive(Debug, Clone, Copy)]
struct Second {
    ops: u64,
    bytes: u64,
    dt_s: f64,
}

/// The stability detector: feed it each second's figures, it says when to stop.
#[derive(Debug)]
pub struct Autoterm {
    spec: AutotermSpec,
    seconds: VecDeque<Second>,
}

impl Autoterm {
    /// A detector for `spec`.
    pub fn new(spec: AutotermSpec) -> Self {
        Self {
            spec,
            seconds: VecDeque::new(),
        }
    }

    fn window_len(&self) -> usize {
        usize::try_from(self.spec.window.as_secs())
            .unwrap_or(usize::MAX)
            .max(2)
    }

    /// Add one interval (`ops` operations and `bytes` bytes over `dt_s` seconds); the reason
    /// to stop, once the window is stable.
    pub fn push(&mut self, ops: u64, bytes: u64, dt_s: f64) -> Option<String> {
        let n = self.window_len();
        let block = (n / 5).max(1);
        let blocks = n / block;
        let span = blocks * block;
        self.seconds.push_back(Second { ops, bytes, dt_s });
        while self.seconds.len() > span {
            self.seconds.pop_front();
        }
        if self.seconds.len() < span {
            return None;
        }
        let rate = |secs: &[Second], f: fn(&Second) -> u64| {
            let t: f64 = secs.iter().map(|s| s.dt_s).sum();
            let n: u64 = secs.iter().map(f).sum();
            if t > 0.0 { n as f64 / t } else { 0.0 }
        };
        let all: Vec<Second> = self.seconds.iter().copied().collect();
        let ops_rate = rate(&all, |s| s.ops);
        // Nothing happening is not a steady state worth reporting.
        if ops_rate <= 0.0 {
            return None;
        }
        let bytes_rate = rate(&all, |s| s.bytes);
        let tol = self.spec.tolerance_pct / 100.0;
        let within = |v: f64, mean: f64| (v - mean).abs() <= tol * mean;
        for b in all.chunks(block) {
            if !within(rate(b, |s| s.ops), ops_rate) {
                return None;
            }
            if bytes_rate > 0.0 && !within(rate(b, |s| s.bytes), bytes_rate) {
                return None;
            }
        }
        Some(format!(
            "--autoterm: throughput stable within {}% for {} s ({:.1} ops/s, {:.1} MB/s)",
            self.spec.tolerance_pct,
            span,
            ops_rate,
            bytes_rate / 1e6
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        assert_eq!("".parse(), Ok(AutotermSpec::default()));
        let s: AutotermSpec = "30s,5".parse().unwrap();
        assert_eq!((s.window.as_secs(), s.tolerance_pct), (30, 5.0));
        let s: AutotermSpec = "1m,2.5%".parse().unwrap();
        assert_eq!((s.window.as_secs(), s.tolerance_pct), (60, 2.5));
        let s: AutotermSpec = "20s".parse().unwrap();
        assert_eq!(s.tolerance_pct, AutotermSpec::DEFAULT_TOLERANCE_PCT);
        assert_eq!(s.to_string().parse(), Ok(s));
        for bad in ["1s", "2h", "soon", "10s,0", "10s,100", "10s,x", "2.5s"] {
            assert!(bad.parse::<AutotermSpec>().is_err(), "{bad:?}");
        }
    }

    fn spec(window: u64, tol: f64) -> Autoterm {
        Autoterm::new(AutotermSpec {
            window: Duration::from_secs(window),
            tolerance_pct: tol,
        })
    }

    #[test]
    fn a_steady_run_stops_when_the_window_is_full() {
        let mut a = spec(10, 5.0);
        // Per-second noise of ±8%, which 2-second blocks average out to ±2%.
        let ops = [108, 92, 104, 96, 108, 92, 100, 100, 97, 103];
        for (i, &n) in ops.iter().enumerate() {
            let out = a.push(n, n * 1000, 1.0);
            assert_eq!(out.is_some(), i == ops.len() - 1, "second {i}: {out:?}");
        }
        let why = a.push(100, 100_000, 1.0).unwrap();
        assert!(why.contains("stable within 5% for 10 s"), "{why}");
        assert!(why.contains("99.2 ops/s"), "the window's mean: {why}");
    }

    #[test]
    fn a_ramp_or_a_stall_does_not_stop() {
        let mut a = spec(10, 5.0);
        for n in 0..60u64 {
            assert_eq!(a.push(100 + 5 * n, 0, 1.0), None, "ramp at {n}");
        }
        let mut a = spec(5, 10.0);
        for _ in 0..20 {
            assert_eq!(a.push(0, 0, 1.0), None, "nothing happening");
        }
        // Steady operations but bytes that swing: not stable.
        let mut a = spec(4, 10.0);
        for n in 0..20u64 {
            assert_eq!(
                a.push(100, if n % 2 == 0 { 1 } else { 1_000_000 }, 1.0),
                None
            );
        }
    }

    #[test]
    fn a_change_in_the_window_delays_the_stop() {
        let mut a = spec(5, 10.0);
        for _ in 0..4 {
            assert_eq!(a.push(100, 0, 1.0), None);
        }
        // A slow second: the window holding it is not stable, the next five steady ones are.
        assert_eq!(a.push(50, 0, 1.0), None);
        for i in 0..4 {
            assert_eq!(a.push(100, 0, 1.0), None, "{i}");
        }
        assert!(a.push(100, 0, 1.0).is_some());
    }

    #[test]
    fn intervals_of_other_lengths_count_by_their_rate() {
        let mut a = spec(2, 5.0);
        assert_eq!(a.push(50, 0, 0.5), None);
        assert!(a.push(100, 0, 1.0).is_some(), "100 ops/s both times");
    }
}
