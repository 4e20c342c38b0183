//! The runtime traits the adapters implement, and runtime-generic helpers built on them.
//!
//! Core never picks a runtime: `ferry-net` implements [`Runtime`] (sockets, timers, spawn,
//! blocking work) over the adapters `ferry-tokio` and `ferry-smol`, and a binary picks one at
//! run time. Everything generic — the
//! HTTP server and client engines, the accept loop, timeouts — is written once, here and in
//! [`crate::http`], over these traits.
//!
//! Every future a trait method returns is declared `Send`, and so is [`Stream`]'s I/O: plain
//! `embedded-io-async` futures are opaque and cannot be proven `Send` in generic code, which
//! would forbid spawning anything generic over a stream (a connection, a load-test worker).

use core::any::Any;
use core::fmt;
use core::future::Future;
use core::net::SocketAddr;
use core::pin::Pin;
use core::sync::atomic::{AtomicBool, Ordering};
use core::task::{Context, Poll};
use core::time::Duration;

use embedded_io::ErrorKind;
use embedded_io_async::{Read, Write};

/// A connected byte stream (TCP): `embedded-io-async` `Read + Write` whose futures are `Send`.
///
/// The `*_send` methods do what `read`, `write` and `flush` do; implementations forward to
/// them (for a concrete type the compiler sees that those futures are `Send`). Generic code in
/// core calls the `*_send` forms so that what it builds can be spawned.
pub trait Stream: Read + Write + Send {
    /// [`Read::read`], with a `Send` future.
    fn read_send(
        &mut self,
        buf: &mut [u8],
    ) -> impl Future<Output = Result<usize, Self::Error>> + Send;

    /// [`Write::write`], with a `Send` future.
    fn write_send(&mut self, buf: &[u8])
    -> impl Future<Output = Result<usize, Self::Error>> + Send;

    /// [`Write::flush`], with a `Send` future.
    fn flush_send(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Close the sending half (TCP FIN) while still reading, for a clean close.
    fn shutdown_write(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Wait until a read may find bytes (or the end), without holding a buffer: an idle
    /// connection calls this after a read would have waited, and takes its buffers only once
    /// it returns. A spurious return is allowed (the read that follows then waits). The
    /// default returns at once, so the caller's read waits instead, holding its buffer.
    fn readable(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        async { Ok(()) }
    }

    /// Move up to `max` bytes from this stream to `dst` inside the kernel: what
    /// [`Stream::splice_from`] does, seen from the source, so that a wrapper of the source
    /// (a time budget) can bound it. The default asks `dst`.
    fn splice_to<D: Stream>(
        &mut self,
        dst: &mut D,
        max: u64,
    ) -> impl Future<Output = Option<Result<u64, SpliceError<ErrorKind>>>> + Send
    where
        Self: Sized,
    {
        dst.splice_from(self, max)
    }

    /// This stream as [`Any`], so that an adapter can recognise a stream of its own type (and
    /// wrappers can hand out the stream they wrap) in [`Stream::splice_from`]. `None` by
    /// default.
    fn as_any_mut(&mut self) -> Option<&mut dyn Any> {
        None
    }

    /// Whether the stream is encrypted (TLS): what `aws:SecureTransport` tells a bucket policy.
    /// `false` by default.
    fn is_secure(&self) -> bool {
        false
    }

    /// The TLS version of an encrypted stream, as `s3:TlsVersion` tells it (`"1.2"`,
    /// `"1.3"`); `None` for a plain one, and by default.
    fn tls_version(&self) -> Option<&'static str> {
        None
    }

    /// Whether [`Stream::send_file`] can send on this stream (plain TCP on Linux): asked before
    /// a body is read into memory, so that a stream that cannot gets the copy instead.
    #[cfg(feature = "std")]
    fn can_send_file(&self) -> bool {
        false
    }

    /// Send up to `len` bytes of `file` from `offset` to this stream inside the kernel (Linux
    /// `sendfile(2)`), without copying them through user space: waits until the stream can
    /// take bytes, then sends what it takes at once and returns how many (`Ok(0)`: the file
    /// ended before `offset + len`). `None` when this stream cannot (the default; TLS; other
    /// systems), having sent nothing: the caller copies instead.
    #[cfg(feature = "std")]
    fn send_file(
        &mut self,
        file: &std::fs::File,
        offset: u64,
        len: u64,
    ) -> impl Future<Output = Option<Result<u64, Self::Error>>> + Send {
        let _ = (file, offset, len);
        async { None }
    }

    /// Move up to `max` bytes from `src` to this stream inside the kernel (Linux `splice(2)`
    /// through a pipe), without copying them through user space: at least one byte is read
    /// (waiting for it) and everything read is written before it returns. `None` when this pair
    /// of streams cannot (the default; TLS; other systems): the caller copies instead.
    /// `Some(Ok(0))`: `src` reached its end.
    fn splice_from<T: Stream>(
        &mut self,
        src: &mut T,
        max: u64,
    ) -> impl Future<Output = Option<Result<u64, SpliceError<ErrorKind>>>> + Send {
        let _ = (src, max);
        async { None }
    }
}

/// Which side of a [`Stream::splice_from`] failed (a proxy answers differently for each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpliceError<E> {
    /// Reading from the source, or waiting for it.
    Source(E),
    /// Writing to the destination.
    Sink(E),
}

/// A source of time: monotonic for timeouts, wall clock for `Date` headers and SigV4.
pub trait Clock: Clone + Send + Sync + 'static {
    /// Monotonic time since an arbitrary origin fixed for the process.
    fn now(&self) -> Duration;

    /// Wall-clock time in Unix seconds.
    fn unix_time(&self) -> i64;

    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send + 'static;
}

/// A listening TCP socket.
///
/// Accepting is split in two so that whatever a connection needs before it can be served (a
/// TLS handshake) runs in that connection's own task, not in the accept loop: [`accept`]
/// only takes the socket, [`establish`] makes it a [`Stream`].
///
/// [`accept`]: Listener::accept
/// [`establish`]: Listener::establish
pub trait Listener: Send + Sync + 'static {
    /// The streams it accepts.
    type Stream: Stream + 'static;
    /// A connection as accepted, before [`Listener::establish`].
    type Accepted: Send + 'static;

    /// Wait for the next connection (with `TCP_NODELAY` set) and its peer address.
    fn accept(
        &self,
    ) -> impl Future<Output = Result<(Self::Accepted, SocketAddr), ErrorKind>> + Send;

    /// Make an accepted connection a stream: a TLS handshake, or nothing for plain TCP. The
    /// caller bounds it with a timeout; an error means the connection is dropped.
    fn establish(
        accepted: Self::Accepted,
    ) -> impl Future<Output = Result<Self::Stream, ErrorKind>> + Send + 'static;

    /// The address it listens on (with the port the OS picked for port 0).
    fn local_addr(&self) -> Result<SocketAddr, ErrorKind>;
}

/// An async runtime: a [`Clock`], TCP sockets, blocking work and task spawning.
pub trait Runtime: Clock {
    /// A TCP connection.
    type Stream: Stream + 'static;
    /// A listening socket producing [`Runtime::Stream`]s.
    type Listener: Listener<Stream = Self::Stream>;

    /// Connect to `addr` (with `TCP_NODELAY` set).
    fn connect(
        &self,
        addr: SocketAddr,
    ) -> impl Future<Output = Result<Self::Stream, ErrorKind>> + Send;

    /// Listen on `addr` (port 0 picks a free port).
    fn bind(
        &self,
        addr: SocketAddr,
    ) -> impl Future<Output = Result<Self::Listener, ErrorKind>> + Send;

    /// Run a blocking closure (file I/O, hashing a big buffer) off the reactor threads.
    fn unblock<T, F>(&self, f: F) -> impl Future<Output = T> + Send + 'static
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static;

    /// Start `future` as a task of its own; it runs to completion whether or not the returned
    /// handle is awaited (dropping the handle detaches it). Awaiting the handle gives the
    /// output; a panic in the task is resumed in the awaiting task.
    fn spawn<T, F>(&self, future: F) -> impl Future<Output = T> + Send + 'static
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static;
}

/// How client connections are opened ([`crate::http::client`]): [`Tcp`] is
/// [`Runtime::connect`]; an adapter may open other streams of the same type (TLS).
pub trait Connector<R: Runtime>: Send + Sync + 'static {
    /// Open a connection to `addr`, ready for HTTP (a TLS handshake included).
    fn connect(
        &self,
        rt: &R,
        addr: SocketAddr,
    ) -> impl Future<Output = Result<R::Stream, ErrorKind>> + Send;
}

/// Plain TCP connections, with [`Runtime::connect`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Tcp;

impl<R: Runtime> Connector<R> for Tcp {
    fn connect(
        &self,
        rt: &R,
        addr: SocketAddr,
    ) -> impl Future<Output = Result<R::Stream, ErrorKind>> + Send {
        rt.connect(addr)
    }
}

/// The wall clock in Unix seconds, from `std` (what the adapters' [`Clock::unix_time`] uses).
#[cfg(feature = "std")]
pub fn system_unix_time() -> i64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_secs()).map_or(i64::MIN, |s| -s),
    }
}

/// A future did not complete before its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimedOut;

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("timed out")
    }
}

// The combinators below are plain functions returning futures of their own, not `async fn`s:
// an `async fn` keeps its arguments beside the pinned copies it polls, so each layer of
// `timeout(race(..))` held its futures two or three times over (measured: a 1.2 KiB race
// became a 4 KiB timeout), and every idle connection carries such a wait in its task.

pin_project_lite::pin_project! {
    /// [`timeout`]'s future: `make` creates the timer the first time `future` is pending.
    struct Timeout<F, M, S> {
        #[pin]
        future: F,
        make: Option<M>,
        #[pin]
        timer: Option<S>,
    }
}

impl<F, M, S> Future for Timeout<F, M, S>
where
    F: Future,
    M: FnOnce() -> S,
    S: Future<Output = ()>,
{
    type Output = Result<F::Output, TimedOut>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Poll::Ready(v) = this.future.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        if let Some(make) = this.make.take() {
            this.timer.set(Some(make()));
        }
        match this.timer.as_pin_mut().map(|t| t.poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Err(TimedOut)),
            _ => Poll::Pending,
        }
    }
}

/// Run `future` for at most `duration`.
///
/// The future is polled first and the timer is only created if it is pending, so an operation
/// that completes at once (data already buffered) costs no timer. No allocation: both futures
/// live in the one returned.
pub fn timeout<C: Clock, F: Future>(
    clock: &C,
    duration: Duration,
    future: F,
) -> impl Future<Output = Result<F::Output, TimedOut>> {
    Timeout {
        future,
        make: Some(move || clock.sleep(duration)),
        timer: None,
    }
}

/// Run `future` until `deadline` (a [`Clock::now`] value); immediately [`TimedOut`] if it is
/// not ready and the deadline has passed.
pub fn timeout_at<C: Clock, F: Future>(
    clock: &C,
    deadline: Duration,
    future: F,
) -> impl Future<Output = Result<F::Output, TimedOut>> {
    let left = deadline.saturating_sub(clock.now());
    timeout(clock, left, future)
}

pin_project_lite::pin_project! {
    /// [`now_or_never`]'s future.
    struct NowOrNever<F> {
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for NowOrNever<F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().future.poll(cx) {
            Poll::Ready(v) => Poll::Ready(Some(v)),
            Poll::Pending => Poll::Ready(None),
        }
    }
}

/// Poll `future` once: its output if it is ready at once, `None` if it would wait (it is
/// then dropped, so it must be cancel-safe, as a socket read is).
pub fn now_or_never<F: Future>(future: F) -> impl Future<Output = Option<F::Output>> {
    NowOrNever { future }
}

/// One of two outcomes, from [`race`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Either<A, B> {
    /// The first future finished first.
    Left(A),
    /// The second future finished first.
    Right(B),
}

pin_project_lite::pin_project! {
    /// [`race`]'s future.
    struct Race<A, B> {
        #[pin]
        a: A,
        #[pin]
        b: B,
    }
}

impl<A: Future, B: Future> Future for Race<A, B> {
    type Output = Either<A::Output, B::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(v) = this.a.poll(cx) {
            return Poll::Ready(Either::Left(v));
        }
        this.b.poll(cx).map(Either::Right)
    }
}

/// Poll two futures until one is done (`a` first on every wake); the other is dropped.
pub fn race<A: Future, B: Future>(
    a: A,
    b: B,
) -> impl Future<Output = Either<A::Output, B::Output>> {
    Race { a, b }
}

/// A one-way flag that tasks can wait on: set once, wakes every waiter.
///
/// Used for server shutdown: the accept loop and idle connections wait on it without a `Box`
/// per wait (stack listeners).
#[derive(Debug, Default)]
pub struct Signal {
    set: AtomicBool,
    event: event_listener::Event,
}

impl Signal {
    /// An unset signal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Set the flag and wake every waiter; later waits return at once.
    pub fn set(&self) {
        self.set.store(true, Ordering::SeqCst);
        self.event.notify(usize::MAX);
    }

    /// Whether [`Signal::set`] has been called.
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }

    /// Wait until the flag is set.
    pub async fn wait(&self) {
        while !self.is_set() {
            event_listener::listener!(self.event => listener);
            // Checked again after registering, so a `set` in between is not missed.
            if self.is_set() {
                break;
            }
            listener.await;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use alloc::sync::Arc;
    use core::future::poll_fn;
    use core::pin::pin;
    use core::sync::atomic::AtomicU64;
    use core::task::{Context, Waker};

    /// Drive a future to completion on this thread; panics if it stalls (nothing in the unit
    /// tests waits on real I/O, so a future pending many times in a row is a bug).
    pub(crate) fn block_on<F: Future>(f: F) -> F::Output {
        let mut f = pin!(f);
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..1_000_000 {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
        }
        panic!("future stalled");
    }

    /// A clock the test moves by hand; `sleep` completes once the clock has passed its end.
    /// An `auto` clock jumps to the end of any sleep that is polled (time passes only while
    /// everything else waits), so timeouts fire without real waiting.
    #[derive(Debug, Clone, Default)]
    pub(crate) struct TestClock {
        nanos: Arc<AtomicU64>,
        auto: bool,
    }

    impl TestClock {
        pub(crate) fn auto() -> Self {
            Self {
                auto: true,
                ..Self::default()
            }
        }

        pub(crate) fn advance(&self, d: Duration) {
            self.nanos.fetch_add(d.as_nanos() as u64, Ordering::SeqCst);
        }
    }

    impl Clock for TestClock {
        fn now(&self) -> Duration {
            Duration::from_nanos(self.nanos.load(Ordering::SeqCst))
        }
        fn unix_time(&self) -> i64 {
            784_111_777 + self.now().as_secs() as i64
        }
        fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send + 'static {
            let end = self.now() + duration;
            let clock = self.clone();
            poll_fn(move |_| {
                if clock.auto && clock.now() < end {
                    clock.nanos.store(end.as_nanos() as u64, Ordering::SeqCst);
                }
                if clock.now() >= end {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
        }
    }

    #[test]
    fn timeout_passes_ready_futures_through() {
        let clock = TestClock::default();
        assert_eq!(
            block_on(timeout(&clock, Duration::ZERO, async { 7 })),
            Ok(7)
        );
    }

    #[test]
    fn timeout_fires_when_the_clock_passes() {
        let clock = TestClock::default();
        let c = clock.clone();
        let got = block_on(async move {
            let never = core::future::pending::<()>();
            let mut t = pin!(timeout(&c, Duration::from_secs(5), never));
            // Pending until the clock moves past the deadline.
            let first = poll_fn(|cx| Poll::Ready(t.as_mut().poll(cx))).await;
            assert!(first.is_pending());
            c.advance(Duration::from_secs(5));
            t.await
        });
        assert_eq!(got, Err(TimedOut));
        let d = clock.now() + Duration::from_secs(1);
        clock.advance(Duration::from_secs(2));
        let late = block_on(timeout_at(&clock, d, core::future::pending::<()>()));
        assert_eq!(late, Err(TimedOut));
    }

    #[test]
    fn race_prefers_the_first_and_drops_the_other() {
        let got = block_on(race(async { 1 }, async { 2 }));
        assert_eq!(got, Either::Left(1));
        let got = block_on(race(core::future::pending::<u8>(), async { 2 }));
        assert_eq!(got, Either::Right(2));
    }

    #[test]
    fn signal_wakes_waiters_set_before_and_after() {
        let s = Signal::new();
        let mut w = pin!(s.wait());
        let mut cx = Context::from_waker(Waker::noop());
        assert!(w.as_mut().poll(&mut cx).is_pending());
        s.set();
        assert!(w.as_mut().poll(&mut cx).is_ready());
        assert!(s.is_set());
        block_on(s.wait());
    }
}
