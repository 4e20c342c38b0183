//! Ferry on tokio: [`Tokio`] implements `ferry_core::rt::Runtime` (TCP through
//! `embedded-io-adapters`' `FromTokio`, timers, `spawn`, `spawn_blocking`), and [`block_on`]
//! runs a future on a multi-threaded runtime.
//!
//! Everything else (the accept loop, the HTTP engines, timeouts) is generic code in
//! `ferry-core`; a binary picks this runtime or `ferry-smol` at run time.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use embedded_io::ErrorType;
use embedded_io_adapters::tokio_1::FromTokio;
use ferry_core::http::server::{Handler, ServerConfig, ServerHandle};
use ferry_core::rt::{Clock, Listener, Runtime, Stream};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;

pub use embedded_io::ErrorKind;

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

/// A TCP connection (`TCP_NODELAY` set), as an `embedded-io-async` stream.
pub struct TokioStream(FromTokio<TcpStream>);

impl std::fmt::Debug for TokioStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("TokioStream").field(self.get_ref()).finish()
    }
}

impl TokioStream {
    /// Wrap a connected socket, setting `TCP_NODELAY` (small responses must not wait).
    pub fn new(tcp: TcpStream) -> std::io::Result<Self> {
        tcp.set_nodelay(true)?;
        Ok(Self(FromTokio::new(tcp)))
    }

    /// The socket.
    pub fn get_ref(&self) -> &TcpStream {
        self.0.inner()
    }
}

impl ErrorType for TokioStream {
    type Error = std::io::Error;
}

impl embedded_io_async::Read for TokioStream {
    async fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf).await
    }
}

impl embedded_io_async::Write for TokioStream {
    async fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf).await
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().await
    }
}

// The concrete futures are `Send`; saying so here lets generic code spawn them.
impl Stream for TokioStream {
    async fn read_send(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        embedded_io_async::Read::read(&mut self.0, buf).await
    }

    async fn write_send(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        embedded_io_async::Write::write(&mut self.0, buf).await
    }

    async fn flush_send(&mut self) -> std::io::Result<()> {
        embedded_io_async::Write::flush(&mut self.0).await
    }

    async fn shutdown_write(&mut self) -> std::io::Result<()> {
        self.0.inner_mut().shutdown().await
    }
}

/// A listening socket.
#[derive(Debug)]
pub struct TokioListener(TcpListener);

impl Listener for TokioListener {
    type Stream = TokioStream;

    async fn accept(&self) -> Result<(TokioStream, SocketAddr), ErrorKind> {
        let (tcp, peer) = self.0.accept().await.map_err(kind)?;
        Ok((TokioStream::new(tcp).map_err(kind)?, peer))
    }

    fn local_addr(&self) -> Result<SocketAddr, ErrorKind> {
        self.0.local_addr().map_err(kind)
    }
}

fn kind(e: std::io::Error) -> ErrorKind {
    embedded_io::Error::kind(&e)
}

/// The start of monotonic time for [`Clock::now`].
fn origin() -> tokio::time::Instant {
    static ORIGIN: OnceLock<tokio::time::Instant> = OnceLock::new();
    *ORIGIN.get_or_init(tokio::time::Instant::now)
}

impl Clock for Tokio {
    fn now(&self) -> Duration {
        tokio::time::Instant::now().duration_since(origin())
    }

    fn unix_time(&self) -> i64 {
        ferry_core::rt::system_unix_time()
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send + 'static {
        // The timer registers with the runtime it is created in.
        let _entered = self.handle.enter();
        tokio::time::sleep(duration)
    }
}

impl Runtime for Tokio {
    type Stream = TokioStream;
    type Listener = TokioListener;

    async fn connect(&self, addr: SocketAddr) -> Result<TokioStream, ErrorKind> {
        let tcp = TcpStream::connect(addr).await.map_err(kind)?;
        TokioStream::new(tcp).map_err(kind)
    }

    async fn bind(&self, addr: SocketAddr) -> Result<TokioListener, ErrorKind> {
        Ok(TokioListener(TcpListener::bind(addr).await.map_err(kind)?))
    }

    fn unblock<T, F>(&self, f: F) -> impl Future<Output = T> + Send + 'static
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        join(self.handle.spawn_blocking(f))
    }

    fn spawn<T, F>(&self, future: F) -> impl Future<Output = T> + Send + 'static
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        join(self.handle.spawn(future))
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

/// Run `main` on a new multi-threaded tokio runtime (one worker per CPU) and return its output.
pub fn block_on<F, Fut>(main: F) -> std::io::Result<Fut::Output>
where
    F: FnOnce(Tokio) -> Fut,
    Fut: Future,
{
    block_on_threads(0, main)
}

/// [`block_on`] with `threads` workers (0: one per CPU).
pub fn block_on_threads<F, Fut>(threads: usize, main: F) -> std::io::Result<Fut::Output>
where
    F: FnOnce(Tokio) -> Fut,
    Fut: Future,
{
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all().thread_name("ferry-tokio");
    if threads > 0 {
        builder.worker_threads(threads);
    }
    let rt = builder.build()?;
    let tokio = Tokio::from_handle(rt.handle().clone());
    Ok(rt.block_on(main(tokio)))
}

/// Serve HTTP on `addr` with `handler` (see `ferry_core::http::server::serve`).
pub async fn serve<H: Handler + 'static>(
    rt: &Tokio,
    addr: SocketAddr,
    config: ServerConfig,
    handler: Arc<H>,
) -> Result<ServerHandle, ErrorKind> {
    ferry_core::http::server::serve(rt, addr, config, handler).await
}

/// Connect to `addr` (`TCP_NODELAY` set).
pub async fn connect(rt: &Tokio, addr: SocketAddr) -> Result<TokioStream, ErrorKind> {
    rt.connect(addr).await
}
