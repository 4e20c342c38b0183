//! The client's own CPU time (`getrusage(RUSAGE_SELF)`: every thread of the process).

use std::time::Duration;

use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::time::TimeVal;
use serde::{Deserialize, Serialize};

/// User and system CPU time of this process so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTimes {
    /// Time in user mode.
    pub user: Duration,
    /// Time in the kernel.
    pub system: Duration,
}

fn duration(tv: TimeVal) -> Duration {
    let secs = u64::try_from(tv.tv_sec()).unwrap_or(0);
    let micros = u64::try_from(tv.tv_usec()).unwrap_or(0);
    Duration::from_secs(secs) + Duration::from_micros(micros)
}

impl CpuTimes {
    /// Now (zero if the system refuses to say).
    pub fn now() -> Self {
        match getrusage(UsageWho::RUSAGE_SELF) {
            Ok(u) => Self {
                user: duration(u.user_time()),
                system: duration(u.system_time()),
            },
            Err(_) => Self::default(),
        }
    }

    /// The CPU time spent since `earlier`.
    pub fn since(self, earlier: CpuTimes) -> CpuUsage {
        CpuUsage {
            user_s: self.user.saturating_sub(earlier.user).as_secs_f64(),
            system_s: self.system.saturating_sub(earlier.system).as_secs_f64(),
        }
    }
}

/// CPU seconds a run took, as reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUsage {
    /// User-mode seconds.
    pub user_s: f64,
    /// Kernel seconds.
    pub system_s: f64,
}

impl CpuUsage {
    /// User plus system seconds.
    pub fn total_s(&self) -> f64 {
        self.user_s + self.system_s
    }

    /// CPU seconds per GB (10^9 bytes) moved; `None` if nothing moved.
    pub fn per_gb(&self, bytes: u64) -> Option<f64> {
        (bytes > 0).then(|| self.total_s() / (bytes as f64 / 1e9))
    }

    /// Add `other` (runs of separate processes merged).
    pub fn add(&mut self, other: &CpuUsage) {
        self.user_s += other.user_s;
        self.system_s += other.system_s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPU time the calling thread has used (user and system).
    fn thread_cpu() -> Duration {
        let u = getrusage(UsageWho::RUSAGE_THREAD).expect("getrusage");
        duration(u.user_time()) + duration(u.system_time())
    }

    #[test]
    fn busy_work_shows_up_as_user_time() {
        let before = CpuTimes::now();
        // Busy work on another thread until its own clock shows 50 ms of it (how long that
        // takes is the machine's business; 60 s bound a hang guard): the process's time
        // counts every thread's, so it holds at least that much, mostly in user mode.
        let spun = std::thread::spawn(|| {
            let (start, deadline) = (
                thread_cpu(),
                std::time::Instant::now() + Duration::from_secs(60),
            );
            let mut x = 0u64;
            loop {
                let spun = thread_cpu().saturating_sub(start);
                if spun >= Duration::from_millis(50) {
                    return spun;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "{spun:?} of CPU in 60 s"
                );
                for _ in 0..100_000 {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                }
            }
        })
        .join()
        .unwrap();
        let used = CpuTimes::now().since(before);
        // Both clocks in microseconds: a few of rounding.
        assert!(
            used.total_s() >= spun.as_secs_f64() - 1e-5,
            "{used:?} < {spun:?}"
        );
        assert!(used.user_s > 0.0, "{used:?}");
        assert_eq!(used.per_gb(0), None);
        assert!((used.per_gb(2_000_000_000).unwrap() - used.total_s() / 2.0).abs() < 1e-9);
    }
}
