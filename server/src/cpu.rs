//! CPU time by request: the thread CPU clock (`CLOCK_THREAD_CPUTIME_ID`, user and kernel time
//! of the calling thread) read before and after each poll of a request's future, the deltas
//! summed into the request's [`CpuAccount`].
//!
//! On a work-stealing runtime a request runs on whichever worker polls it, a slice at a time,
//! between other requests' slices: only the clock of the thread it is on, around each poll,
//! tells its share. Blocking work it hands to the blocking pool is added too, measured on the
//! pool's thread ([`current`] names the account of the request being polled, which a hand-off
//! takes along: `crate::waits::Metered`). What runs elsewhere is not in any request's account:
//! the connection engine before the request's head is parsed (accept, TLS handshakes, reading
//! and parsing the head, idle keep-alive waits), the runtimes' own scheduling and `epoll` calls,
//! the node's `io_uring` reaper thread and the kernel's `io_uring` workers, jemalloc's
//! background threads, health probes and the admin listener. Work one request does for others
//! is in that request's account: the leader of a group commit commits the whole group, and the
//! task that drives an MD5 lane batch hashes the other writes' chunks in it. The process's own
//! CPU clock ([`process_cpu`], `..._process_cpu_seconds_total` on `/metrics`) is the total
//! those figures are a part of.
//!
//! The cost: two `clock_gettime` calls per poll (a system call for a thread's CPU clock, about
//! 0.2 µs each on x86-64 Linux).

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use rustix::time::{ClockId, Timespec, clock_gettime};

fn duration(t: Timespec) -> Duration {
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let nanos = u32::try_from(t.tv_nsec).unwrap_or(0);
    Duration::new(secs, nanos)
}

/// CPU time the calling thread has used (user and system).
pub fn thread_cpu() -> Duration {
    duration(clock_gettime(ClockId::ThreadCPUTime))
}

/// CPU time the whole process has used (every thread, user and system).
pub fn process_cpu() -> Duration {
    duration(clock_gettime(ClockId::ProcessCPUTime))
}

/// CPU time summed for one request (or any unit of work), shared by its future and the
/// blocking work it hands off.
#[derive(Debug, Clone, Default)]
pub struct CpuAccount(Arc<AtomicU64>);

impl CpuAccount {
    /// An empty account.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add `d`.
    pub fn add(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.0.fetch_add(ns, Ordering::Relaxed);
    }

    /// What it holds so far.
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }

    /// `future`, with the thread CPU time of each of its polls added to this account.
    pub fn measure<F: Future>(&self, future: F) -> Measured<F> {
        Measured {
            inner: future,
            account: self.clone(),
        }
    }

    /// Run `f` on this thread, adding the CPU time it takes to the account.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        let start = thread_cpu();
        let out = f();
        self.add(thread_cpu().saturating_sub(start));
        out
    }
}

thread_local! {
    /// The account of the future being polled on this thread, if a [`Measured`] polls it.
    static CURRENT: RefCell<Option<CpuAccount>> = const { RefCell::new(None) };
}

/// The account of the request being polled on this thread now, for work it hands off.
pub fn current() -> Option<CpuAccount> {
    CURRENT.with(|c| c.borrow().clone())
}

pin_project_lite::pin_project! {
    /// A future whose polls are timed on the thread CPU clock ([`CpuAccount::measure`]).
    /// A `Measured` inside another adds its polls to both accounts.
    #[derive(Debug)]
    pub struct Measured<F> {
        #[pin]
        inner: F,
        account: CpuAccount,
    }
}

impl<F: Future> Future for Measured<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let outer = CURRENT.with(|c| c.replace(Some(this.account.clone())));
        let start = thread_cpu();
        let r = this.inner.poll(cx);
        this.account.add(thread_cpu().saturating_sub(start));
        CURRENT.with(|c| *c.borrow_mut() = outer);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    /// About `d` of CPU time on this thread.
    fn spin(d: Duration) -> u64 {
        let start = thread_cpu();
        let mut x = 1u64;
        while thread_cpu() - start < d {
            for _ in 0..1000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
        }
        std::hint::black_box(x)
    }

    /// Ready on its third poll, spinning 20 ms of CPU in each.
    struct Busy(u32);

    impl Future for Busy {
        type Output = u32;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
            spin(Duration::from_millis(20));
            assert!(current().is_some(), "polled inside a Measured");
            self.0 += 1;
            if self.0 == 3 {
                Poll::Ready(self.0)
            } else {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }

    #[test]
    fn polls_are_summed_and_time_between_them_is_not() {
        let account = CpuAccount::new();
        let mut f = Box::pin(account.measure(Busy(0)));
        let mut cx = Context::from_waker(Waker::noop());
        let mut polls = 0;
        loop {
            polls += 1;
            if let Poll::Ready(n) = f.as_mut().poll(&mut cx) {
                assert_eq!(n, 3);
                break;
            }
            // CPU spent between polls belongs to nobody's account.
            spin(Duration::from_millis(30));
        }
        assert_eq!(polls, 3);
        let got = account.total();
        // Three polls of at least 20 ms; the 60 ms spun between them are not counted.
        assert!(got >= Duration::from_millis(60), "{got:?}");
        assert!(got < Duration::from_millis(130), "{got:?}");
        assert!(current().is_none(), "the account is unset after the poll");
    }

    #[test]
    fn work_on_another_thread_is_added_through_the_account() {
        let account = CpuAccount::new();
        let handed = account.clone();
        std::thread::spawn(move || handed.run(|| spin(Duration::from_millis(30))))
            .join()
            .unwrap();
        assert!(account.total() >= Duration::from_millis(30));
        assert!(process_cpu() >= account.total());
    }
}
