//! The off-CPU view of a server's runtime: how long blocking work waits for a thread of the
//! blocking pool, and how many jobs wait or run there now. [`Metered`] wraps the runtime a
//! server is built on (`service.rs`), so every hand-off (`Runtime::unblock`: the node's file
//! I/O and metadata commits, the profiles) goes through it; each job's CPU time on the pool's
//! thread is added to the account of the request that handed it off ([`crate::cpu`]).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use embedded_io::ErrorKind;
use ferry_core::rt::{Clock, Runtime};
use ferry_net::NetRuntime;
use ferry_net::rustls::pki_types::ServerName;
use ferry_net::rustls::{ClientConfig, ServerConfig};

use crate::cpu;
use crate::metrics::{AtomicHistogram, counter, counter_seconds, family, gauge};

/// What a server's blocking pool has done, for `/metrics`.
#[derive(Debug, Default)]
pub(crate) struct PoolStats {
    /// From the hand-off to the job's start on a pool thread.
    wait: AtomicHistogram,
    /// Handed off, not started yet.
    queued: AtomicUsize,
    /// Running on a pool thread now.
    running: AtomicUsize,
    /// Jobs done.
    jobs: AtomicU64,
    /// CPU time the jobs took on the pool's threads (nanoseconds).
    cpu_ns: AtomicU64,
}

impl PoolStats {
    /// The blocking pool's metrics, named `<prefix>_blocking_...`.
    pub(crate) fn render(&self, o: &mut String, prefix: &str) {
        let name = format!("{prefix}_blocking_wait_seconds");
        family(
            o,
            &name,
            "histogram",
            "Time blocking work (file I/O, metadata commits) waited for a thread of the blocking pool.",
        );
        self.wait.snapshot().render(o, &name, "");
        gauge(
            o,
            &format!("{prefix}_blocking_queued"),
            "Blocking jobs handed off and waiting for a thread of the pool now.",
            self.queued.load(Ordering::Relaxed),
        );
        gauge(
            o,
            &format!("{prefix}_blocking_running"),
            "Blocking jobs running on a thread of the pool now.",
            self.running.load(Ordering::Relaxed),
        );
        counter(
            o,
            &format!("{prefix}_blocking_jobs_total"),
            "Blocking jobs done.",
            self.jobs.load(Ordering::Relaxed),
        );
        counter_seconds(
            o,
            &format!("{prefix}_blocking_cpu_seconds_total"),
            "CPU time of the blocking jobs on the pool's threads (also in the requests' CPU seconds).",
            self.cpu_ns.load(Ordering::Relaxed) as f64 / 1e9,
        );
    }
}

/// A runtime whose blocking hand-offs are measured ([`PoolStats`]) and charged to the request
/// that made them; everything else is `R`'s.
#[derive(Debug, Clone)]
pub(crate) struct Metered<R> {
    inner: R,
    stats: Arc<PoolStats>,
}

impl<R> Metered<R> {
    /// `inner`, measured.
    pub(crate) fn new(inner: R) -> Self {
        Self {
            inner,
            stats: Arc::default(),
        }
    }

    /// The blocking pool's figures.
    pub(crate) fn stats(&self) -> Arc<PoolStats> {
        self.stats.clone()
    }
}

impl<R: Clock> Clock for Metered<R> {
    fn now(&self) -> Duration {
        self.inner.now()
    }

    fn unix_time(&self) -> i64 {
        self.inner.unix_time()
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send + 'static {
        self.inner.sleep(duration)
    }
}

/// Counts a job out of `running` however it ends (a panic in the job included).
struct Running<'a>(&'a PoolStats);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
        self.0.jobs.fetch_add(1, Ordering::Relaxed);
    }
}

impl<R: Runtime> Runtime for Metered<R> {
    type Stream = R::Stream;
    type Listener = R::Listener;

    fn connect(
        &self,
        addr: SocketAddr,
    ) -> impl Future<Output = Result<R::Stream, ErrorKind>> + Send {
        self.inner.connect(addr)
    }

    fn bind(
        &self,
        addr: SocketAddr,
    ) -> impl Future<Output = Result<R::Listener, ErrorKind>> + Send {
        self.inner.bind(addr)
    }

    fn unblock<T, F>(&self, f: F) -> impl Future<Output = T> + Send + 'static
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let stats = self.stats.clone();
        let account = cpu::current();
        let handed = Instant::now();
        stats.queued.fetch_add(1, Ordering::Relaxed);
        self.inner.unblock(move || {
            stats.queued.fetch_sub(1, Ordering::Relaxed);
            stats.wait.observe(handed.elapsed());
            stats.running.fetch_add(1, Ordering::Relaxed);
            let _running = Running(&stats);
            let start = cpu::thread_cpu();
            let out = f();
            let spent = cpu::thread_cpu().saturating_sub(start);
            let ns = u64::try_from(spent.as_nanos()).unwrap_or(u64::MAX);
            stats.cpu_ns.fetch_add(ns, Ordering::Relaxed);
            if let Some(a) = account {
                a.add(spent);
            }
            out
        })
    }

    fn spawn<T, F>(&self, future: F) -> impl Future<Output = T> + Send + 'static
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        // Spawned by a request (a proxy's calls to several backends): its work is the
        // request's. Otherwise (a connection's engine, a loop beside the requests): an account
        // of the task's own, whose spare time the requests it serves claim (`cpu`).
        let account = cpu::current()
            .filter(|a| !a.is_task())
            .unwrap_or_else(cpu::CpuAccount::task);
        self.inner.spawn(account.measure(future))
    }
}

impl<R: NetRuntime> NetRuntime for Metered<R> {
    fn bind_tls(
        &self,
        addr: SocketAddr,
        config: Arc<ServerConfig>,
    ) -> impl Future<Output = Result<R::Listener, ErrorKind>> + Send {
        self.inner.bind_tls(addr, config)
    }

    fn connect_tls(
        &self,
        addr: SocketAddr,
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
    ) -> impl Future<Output = io::Result<R::Stream>> + Send {
        self.inner.connect_tls(addr, config, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_runtime::RuntimeKind;

    /// Blocking jobs handed off from inside a measured future: counted, their wait observed,
    /// their CPU time charged to the request's account; nothing left queued or running.
    #[test]
    fn hand_offs_are_counted_and_charged() {
        struct Check;
        impl ferry_runtime::OnRuntime for Check {
            type Output = (Duration, Arc<PoolStats>);
            async fn run<R: NetRuntime>(self, rt: R) -> Self::Output {
                let rt = Metered::new(rt);
                let account = cpu::CpuAccount::new();
                let r = rt.clone();
                account
                    .measure(async move {
                        for _ in 0..4 {
                            r.unblock(|| {
                                let start = cpu::thread_cpu();
                                while cpu::thread_cpu() - start < Duration::from_millis(10) {}
                            })
                            .await;
                        }
                    })
                    .await;
                (account.total(), rt.stats())
            }
        }
        for kind in [RuntimeKind::Tokio, RuntimeKind::Smol] {
            let (charged, stats) = ferry_runtime::block_on(kind, 1, Check).expect("runtime");
            assert!(charged >= Duration::from_millis(40), "{kind}: {charged:?}");
            assert_eq!(stats.jobs.load(Ordering::Relaxed), 4);
            assert_eq!(stats.queued.load(Ordering::Relaxed), 0);
            assert_eq!(stats.running.load(Ordering::Relaxed), 0);
            assert_eq!(stats.wait.snapshot().count(), 4);
            let mut o = String::new();
            stats.render(&mut o, "ferry_node");
            assert!(o.contains("ferry_node_blocking_jobs_total 4\n"), "{o}");
            assert!(
                o.contains("ferry_node_blocking_wait_seconds_count 4\n"),
                "{o}"
            );
        }
    }
}
