//! The bandwidth bound of a rebalance (`--max-bandwidth`): one token bucket shared by every
//! move in flight, so that their bytes together stay under the rate.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use ferry_core::rt::Clock;

/// A token bucket, sans I/O: `rate` bytes a second, up to `burst` saved up. Bytes are taken
/// before they are sent and may overdraw it; the overdraft is the wait. So by any time `t`
/// after its start, at most `burst + rate * t` bytes have been let through.
#[derive(Debug, Clone)]
pub(crate) struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Duration,
}

impl TokenBucket {
    /// Full at `now`.
    pub fn new(rate: u64, burst: u64, now: Duration) -> Self {
        Self {
            rate: rate.max(1) as f64,
            burst: burst as f64,
            tokens: burst as f64,
            last: now,
        }
    }

    /// Take `n` bytes at `now`: how long to wait before sending them (zero if the bucket
    /// held them).
    pub fn take(&mut self, n: u64, now: Duration) -> Duration {
        let elapsed = now.saturating_sub(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.tokens -= n as f64;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.rate)
        }
    }
}

/// A [`TokenBucket`] on a clock, shared by the moves.
#[derive(Debug)]
pub(crate) struct Throttle<C> {
    clock: C,
    bucket: Mutex<TokenBucket>,
}

impl<C: Clock> Throttle<C> {
    /// `rate` bytes a second; a burst of a quarter second's worth, at least `min_burst`.
    pub fn new(clock: C, rate: u64, min_burst: u64) -> Self {
        let bucket = TokenBucket::new(rate, (rate / 4).max(min_burst), clock.now());
        Self {
            clock,
            bucket: Mutex::new(bucket),
        }
    }

    /// Wait until `n` more bytes may go; whether they had to wait.
    pub async fn pass(&self, n: usize) -> bool {
        let wait = self
            .bucket
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(n as u64, self.clock.now());
        if wait.is_zero() {
            return false;
        }
        self.clock.sleep(wait).await;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the chunk sizes and their timing, the bytes whose wait has ended by time `t`
    /// are at most `burst + rate * t`, and a steady sender gets the whole rate.
    #[test]
    fn never_more_than_the_rate_and_the_burst() {
        let (rate, burst) = (1_000_000u64, 250_000u64);
        let mut b = TokenBucket::new(rate, burst, Duration::ZERO);
        // A sender that sends each chunk as soon as its wait ends.
        let mut now = Duration::ZERO;
        let mut sent = 0u64;
        for i in 0..2_000u64 {
            let n = 1 + (i * 7919) % 300_000;
            now += b.take(n, now);
            sent += n;
            let allowed = burst as f64 + rate as f64 * now.as_secs_f64();
            assert!(
                sent as f64 <= allowed + 1.0,
                "{sent} > {allowed} at {now:?}"
            );
        }
        // It ran at the rate: the bound is reached, not just respected.
        let allowed = burst as f64 + rate as f64 * now.as_secs_f64();
        assert!(sent as f64 > allowed * 0.99, "{sent} of {allowed}");
        // Idle time refills up to the burst only.
        let later = now + Duration::from_secs(100);
        assert_eq!(b.take(burst, later), Duration::ZERO);
        assert!(b.take(1_000, later) > Duration::ZERO);
    }
}
