//! Ferry on tokio: [`Tokio`] is a `ferry_net::Adapter` (tokio's TCP sockets as futures-io ones
//! through `tokio-util`'s `compat`, its readiness, timers, `spawn`, `spawn_blocking`), and
//! [`block_on_threads`] runs a future on a multi-threaded runtime, given `Net<Tokio>`.
//!
//! `ferry-net` makes the runtime, streams, listeners, TLS and splice of it, `ferry-core` has the
//! accept loop, the HTTP engines and timeouts; a binary picks this runtime or `ferry-smol`.

use std::future::{Future, poll_fn};
use std::io;
use std::net::SocketAddr;
#[cfg(target_os = "linux")]
use std::os::fd::{AsFd, BorrowedFd};
use std::pin::Pin;
use std::sync::OnceLock;
use std::time::Duration;

use ferry_net::{Adapter, Net, NetListener, NetStream};
use tokio::io::AsyncWrite;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio_util::compat::{Compat, TokioAsyncReadCompatExt};

/// A TCP connection on tokio, plain or TLS.
pub type TokioStream = NetStream<Tokio>;
/// A listening socket on tokio, plain or TLS.
pub type TokioListener = NetListener<Tokio>;

/// The tokio runtime, by handle.
#[derive(Debug, Clone)]
pub struct Tokio {
    handle: Handle,
}

impl Tokio {
    /// The runtime this code runs on; panics outside a tokio runtime, like `Handle::current`.
    pub fn current() -> Self {
        Self::from_handle(Handle::current())
    }

    /// A specific runtime.
    pub fn from_handle(handle: Handle) -> Self {
        Self { handle }
    }

    /// The underlying handle.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }
}

impl Adapter for Tokio {
    type Socket = Compat<TcpStream>;
    type TcpListener = TcpListener;

    async fn connect_tcp(&self, addr: SocketAddr) -> io::Result<Compat<TcpStream>> {
        let tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        Ok(tcp.compat())
    }

    async fn bind_tcp(&self, addr: SocketAddr) -> io::Result<TcpListener> {
        TcpListener::from_std(ferry_net::bind_tcp_listener(addr)?)
    }

    async fn accept_tcp(listener: &TcpListener) -> io::Result<(Compat<TcpStream>, SocketAddr)> {
        let (tcp, peer) = listener.accept().await?;
        tcp.set_nodelay(true)?;
        Ok((tcp.compat(), peer))
    }

    fn listener_addr(listener: &TcpListener) -> io::Result<SocketAddr> {
        listener.local_addr()
    }

    async fn shutdown_write(socket: &mut Compat<TcpStream>) -> io::Result<()> {
        poll_fn(|cx| Pin::new(socket.get_mut()).poll_shutdown(cx)).await
    }

    // tokio clears the readiness it caches when a read would block, so this waits for news.
    async fn readable(socket: &Compat<TcpStream>) -> io::Result<()> {
        socket.get_ref().readable().await
    }

    #[cfg(target_os = "linux")]
    async fn read_with<T: Send>(
        socket: &Compat<TcpStream>,
        op: impl FnMut(BorrowedFd<'_>) -> io::Result<T> + Send,
    ) -> io::Result<T> {
        ready_with(socket.get_ref(), tokio::io::Interest::READABLE, op).await
    }

    #[cfg(target_os = "linux")]
    async fn write_with<T: Send>(
        socket: &Compat<TcpStream>,
        op: impl FnMut(BorrowedFd<'_>) -> io::Result<T> + Send,
    ) -> io::Result<T> {
        ready_with(socket.get_ref(), tokio::io::Interest::WRITABLE, op).await
    }

    fn now(&self) -> Duration {
        // tokio's clock, which tokio's timers use (and which a test may pause).
        static ORIGIN: OnceLock<tokio::time::Instant> = OnceLock::new();
        let origin = *ORIGIN.get_or_init(tokio::time::Instant::now);
        tokio::time::Instant::now().duration_since(origin)
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send + 'static {
        // The timer registers with the runtime it is created in.
        let _entered = self.handle.enter();
        tokio::time::sleep(duration)
    }

    fn unblock<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> impl Future<Output = T> + Send + 'static {
        join(self.handle.spawn_blocking(f))
    }

    fn spawn<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> impl Future<Output = T> + Send + 'static {
        join(self.handle.spawn(future))
    }
}

/// Wait for `interest`, then run `op` on the socket; again while it would block.
#[cfg(target_os = "linux")]
async fn ready_with<T>(
    tcp: &TcpStream,
    interest: tokio::io::Interest,
    mut op: impl FnMut(BorrowedFd<'_>) -> io::Result<T>,
) -> io::Result<T> {
    loop {
        tcp.ready(interest).await?;
        // `try_io` clears the readiness tokio cached when `op` would block.
        match tcp.try_io(interest, || op(tcp.as_fd())) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

/// A task's output; its panic is resumed here. Dropping the handle detaches the task.
async fn join<T>(handle: tokio::task::JoinHandle<T>) -> T {
    match handle.await {
        Ok(v) => v,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(e) => panic!("task cancelled by runtime shutdown: {e}"),
        },
    }
}

/// Run `main` on a new multi-threaded tokio runtime with `threads` workers (0: one per CPU)
/// and return its output.
pub fn block_on_threads<Fut: Future>(
    threads: usize,
    main: impl FnOnce(Net<Tokio>) -> Fut,
) -> io::Result<Fut::Output> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all().thread_name("ferry-tokio");
    if threads > 0 {
        builder.worker_threads(threads);
    }
    let rt = builder.build()?;
    let tokio = Tokio::from_handle(rt.handle().clone());
    Ok(rt.block_on(main(Net::new(tokio))))
}
