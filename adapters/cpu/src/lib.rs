//! Ferry's CPU clocks: the thread CPU clock (`CLOCK_THREAD_CPUTIME_ID`, user and kernel time of
//! the calling thread), the process's, and [`CpuAccount`]: the CPU time of one unit of work (a
//! request, an operation), the thread CPU clock read before and after each poll of its future
//! ([`CpuAccount::measure`]) and the deltas summed.
//!
//! On a work-stealing runtime a future runs on whichever worker polls it, a slice at a time,
//! between other futures' slices: only the clock of the thread it is on, around each poll,
//! tells its share. Blocking work it hands to another thread is added too, measured there
//! ([`current`] names the account of the future being polled, which a hand-off takes along;
//! [`CpuAccount::run`]). A [`CpuAccount::task`] is the account of a task serving several units
//! of work in turn (a connection's engine, its requests): what it spends between them is
//! claimed by the one that follows ([`claim_current`]). [`process_cpu`] is the total all such
//! figures are a part of.
//!
//! Its users: `ferry`'s servers, per request (`ferry_server::cpu` tells what a request's
//! account holds), and `ferry-load`, per operation.
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
pub struct CpuAccount(Arc<Counts>);

#[derive(Debug, Default)]
struct Counts {
    /// Nanoseconds spent.
    total: AtomicU64,
    /// Of a task's account: nanoseconds the requests it served have claimed ([`claim_current`]).
    claimed: AtomicU64,
    /// A task's account (its spare time goes to the requests it serves), not a request's.
    task: bool,
}

impl CpuAccount {
    /// An empty account (a request's).
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty account of a task spawned outside any request (a connection's engine): what it
    /// spends outside its requests is theirs to claim.
    pub fn task() -> Self {
        Self(Arc::new(Counts {
            task: true,
            ..Counts::default()
        }))
    }

    /// Whether it is a [`CpuAccount::task`] account.
    pub fn is_task(&self) -> bool {
        self.0.task
    }

    /// Add `d`.
    pub fn add(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.0.total.fetch_add(ns, Ordering::Relaxed);
    }

    /// What it holds so far.
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.0.total.load(Ordering::Relaxed))
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
    /// The account of the future being polled on this thread, if a [`Measured`] polls it, and
    /// the thread's CPU clock when that poll began.
    static CURRENT: RefCell<Option<(CpuAccount, Duration)>> = const { RefCell::new(None) };
}

/// The account of the request (or task) being polled on this thread now, for work it hands off.
pub fn current() -> Option<CpuAccount> {
    CURRENT.with(|c| c.borrow().as_ref().map(|(a, _)| a.clone()))
}

/// Of the task being polled on this thread (outside any request's own [`Measured`]): the CPU
/// time it has spent, this poll so far included, that no request has claimed yet, now claimed.
/// Zero outside a task's account. A request calls it as it starts (what the engine spent for it
/// is then its own) and as it ends (its own polls, nested in the task's, are not the next one's).
pub fn claim_current() -> Duration {
    let Some((account, started)) = CURRENT.with(|c| c.borrow().clone()) else {
        return Duration::ZERO;
    };
    if !account.is_task() {
        return Duration::ZERO;
    }
    let so_far = account.total() + thread_cpu().saturating_sub(started);
    let so_far = u64::try_from(so_far.as_nanos()).unwrap_or(u64::MAX);
    let before = account.0.claimed.fetch_max(so_far, Ordering::Relaxed);
    Duration::from_nanos(so_far.saturating_sub(before))
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
        let start = thread_cpu();
        let outer = CURRENT.with(|c| c.replace(Some((this.account.clone(), start))));
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
        // Three polls of at least 20 ms; the 60 ms spun between them are not counted. On the
        // thread's CPU clock, which only the spins advance: each bound is 30 ms of CPU from what
        // a miscount would give (a poll missed, or the time between polls counted: 120 ms), not
        // a claim on speed.
        assert!(got >= Duration::from_millis(60), "{got:?}");
        assert!(got < Duration::from_millis(90), "{got:?}");
        assert!(current().is_none(), "the account is unset after the poll");
    }

    #[test]
    fn a_tasks_spare_time_is_claimed_once_by_the_request_it_serves() {
        let task = CpuAccount::task();
        let request = CpuAccount::new();
        let r = request.clone();
        let mut f = Box::pin(task.measure(async move {
            // The engine's work before the request (its head), then the request's own, claimed
            // as it ends (it is in the request's account already), then the engine's work
            // before the next request: only that is the next one's.
            spin(Duration::from_millis(50));
            r.add(claim_current());
            r.measure(async { spin(Duration::from_millis(100)) }).await;
            claim_current();
            spin(Duration::from_millis(50));
            claim_current()
        }));
        let mut cx = Context::from_waker(Waker::noop());
        let Poll::Ready(next) = f.as_mut().poll(&mut cx) else {
            panic!("the task has nothing to wait for");
        };
        // On the thread's CPU clock, which only the spins advance: each bound is 50 ms of CPU
        // from what a miscount would give (the request's 100 ms in the next one's share, or a
        // share counted twice), not a claim on speed.
        assert!(next >= Duration::from_millis(50), "{next:?}");
        assert!(next < Duration::from_millis(100), "{next:?}");
        let got = request.total();
        assert!(got >= Duration::from_millis(150), "{got:?}");
        assert!(got < Duration::from_millis(200), "{got:?}");
        // A request's own account, or none, has nothing to claim.
        assert_eq!(claim_current(), Duration::ZERO);
        let mut inner = Box::pin(CpuAccount::new().measure(async { claim_current() }));
        assert_eq!(inner.as_mut().poll(&mut cx), Poll::Ready(Duration::ZERO));
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
