//! Ferry on smol: [`Smol`] implements `ferry_core::rt::Runtime` (TCP through `async-io`'s
//! `Async` and `embedded-io-adapters`' `FromFutures`, timers, an executor, `blocking`) and
//! `ferry_tls::TlsRuntime` (TLS through futures-rustls), and [`block_on`] runs a future with
//! that executor on one thread per CPU.
//!
//! Everything else (the accept loop, the HTTP engines, timeouts) is generic code in
//! `ferry-core`; a binary picks this runtime or `ferry-tokio` at run time.

use std::future::Future;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use embedded_io::ErrorType;
use embedded_io_adapters::futures_03::FromFutures;
use ferry_core::http::server::{Handler, ServerConfig, ServerHandle};
use ferry_core::rt::{Clock, Listener, Runtime, SpliceError, Stream};
use ferry_tls::TlsRuntime;
use ferry_tls::rustls;
use futures_rustls::TlsStream;
use rustls::pki_types::ServerName;
use smol::io::AsyncWriteExt;
use smol::{Async, Executor, Task, Timer};

pub use embedded_io::ErrorKind;

/// The smol runtime: an executor shared by the threads that run it.
#[derive(Debug, Clone)]
pub struct Smol {
    executor: Arc<Executor<'static>>,
}

impl Smol {
    /// A runtime spawning onto `executor` (which the caller runs, e.g. with [`block_on`]).
    pub fn new(executor: Arc<Executor<'static>>) -> Self {
        Self { executor }
    }

    /// The executor tasks are spawned onto.
    pub fn executor(&self) -> &Arc<Executor<'static>> {
        &self.executor
    }
}

#[cfg(target_os = "linux")]
mod splice;

/// A TCP connection (`TCP_NODELAY` set), plain or TLS, as an `embedded-io-async` stream.
pub struct SmolStream {
    conn: Conn,
    /// The pipe [`Stream::splice_from`] moves bytes through, made on first use.
    #[cfg(target_os = "linux")]
    pipe: ferry_core::pipe::PipeSlot,
}

enum Conn {
    Tcp(FromFutures<Async<TcpStream>>),
    /// Boxed: rustls' state is large, and only TLS connections pay for it.
    Tls(Box<FromFutures<TlsStream<Async<TcpStream>>>>),
}

impl std::fmt::Debug for SmolStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmolStream")
            .field("tcp", self.get_ref())
            .field("tls", &self.is_tls())
            .finish()
    }
}

impl SmolStream {
    fn from_conn(conn: Conn) -> Self {
        Self {
            conn,
            #[cfg(target_os = "linux")]
            pipe: Default::default(),
        }
    }

    /// Wrap a connected socket, setting `TCP_NODELAY` (small responses must not wait).
    pub fn new(tcp: Async<TcpStream>) -> std::io::Result<Self> {
        tcp.get_ref().set_nodelay(true)?;
        Ok(Self::from_conn(Conn::Tcp(FromFutures::new(tcp))))
    }

    fn tls(tls: TlsStream<Async<TcpStream>>) -> Self {
        Self::from_conn(Conn::Tls(Box::new(FromFutures::new(tls))))
    }

    /// The socket (under TLS, if any).
    pub fn get_ref(&self) -> &TcpStream {
        match &self.conn {
            Conn::Tcp(s) => s.inner().get_ref(),
            Conn::Tls(s) => s.inner().get_ref().0.get_ref(),
        }
    }

    /// Whether the connection speaks TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self.conn, Conn::Tls(_))
    }
}

impl ErrorType for SmolStream {
    type Error = std::io::Error;
}

impl embedded_io_async::Read for SmolStream {
    async fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.conn {
            Conn::Tcp(s) => s.read(buf).await,
            Conn::Tls(s) => s.read(buf).await,
        }
    }
}

impl embedded_io_async::Write for SmolStream {
    async fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.conn {
            Conn::Tcp(s) => s.write(buf).await,
            Conn::Tls(s) => {
                // The engines never flush (TCP needs no flush): a TLS write is sent before it
                // returns, so no record waits in rustls' buffer.
                let n = s.write(buf).await?;
                s.flush().await?;
                Ok(n)
            }
        }
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.conn {
            Conn::Tcp(s) => s.flush().await,
            Conn::Tls(s) => s.flush().await,
        }
    }
}

// The concrete futures are `Send`; saying so here lets generic code spawn them.
impl Stream for SmolStream {
    async fn read_send(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        embedded_io_async::Read::read(self, buf).await
    }

    async fn write_send(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        embedded_io_async::Write::write(self, buf).await
    }

    async fn flush_send(&mut self) -> std::io::Result<()> {
        embedded_io_async::Write::flush(self).await
    }

    async fn shutdown_write(&mut self) -> std::io::Result<()> {
        match &mut self.conn {
            Conn::Tcp(s) => s.inner().get_ref().shutdown(Shutdown::Write),
            // Sends close_notify, then shuts the socket down for writing.
            Conn::Tls(s) => s.inner_mut().close().await,
        }
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }

    /// Between two plain TCP connections of this adapter only (TLS bytes must be decrypted).
    #[cfg(target_os = "linux")]
    async fn splice_from<T: Stream>(
        &mut self,
        src: &mut T,
        max: u64,
    ) -> Option<Result<u64, SpliceError<ErrorKind>>> {
        let from = src.as_any_mut()?.downcast_mut::<SmolStream>()?;
        let (Conn::Tcp(from), Conn::Tcp(to)) = (&from.conn, &self.conn) else {
            return None;
        };
        let pipe = self.pipe.get()?;
        let r = splice::round(from.inner(), to.inner(), pipe, max).await;
        self.pipe.keep_if(&r);
        Some(r)
    }
}

/// A listening socket, serving plain TCP or TLS.
#[derive(Debug)]
pub struct SmolListener {
    tcp: Async<TcpListener>,
    tls: Option<Arc<rustls::ServerConfig>>,
}

/// A connection accepted by a [`SmolListener`], before its TLS handshake if it has one.
#[derive(Debug)]
pub struct SmolAccepted(Accepted);

#[derive(Debug)]
enum Accepted {
    Plain(SmolStream),
    Tls(Async<TcpStream>, Arc<rustls::ServerConfig>),
}

impl Listener for SmolListener {
    type Stream = SmolStream;
    type Accepted = SmolAccepted;

    async fn accept(&self) -> Result<(SmolAccepted, SocketAddr), ErrorKind> {
        let (tcp, peer) = self.tcp.accept().await.map_err(kind)?;
        let accepted = match &self.tls {
            None => Accepted::Plain(SmolStream::new(tcp).map_err(kind)?),
            Some(config) => {
                tcp.get_ref().set_nodelay(true).map_err(kind)?;
                Accepted::Tls(tcp, config.clone())
            }
        };
        Ok((SmolAccepted(accepted), peer))
    }

    async fn establish(accepted: SmolAccepted) -> Result<SmolStream, ErrorKind> {
        match accepted.0 {
            Accepted::Plain(stream) => Ok(stream),
            Accepted::Tls(tcp, config) => {
                let tls = futures_rustls::TlsAcceptor::from(config)
                    .accept(tcp)
                    .await
                    .map_err(kind)?;
                Ok(SmolStream::tls(TlsStream::Server(tls)))
            }
        }
    }

    fn local_addr(&self) -> Result<SocketAddr, ErrorKind> {
        self.tcp.get_ref().local_addr().map_err(kind)
    }
}

fn kind(e: std::io::Error) -> ErrorKind {
    embedded_io::Error::kind(&e)
}

/// The start of monotonic time for [`Clock::now`].
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

impl Clock for Smol {
    fn now(&self) -> Duration {
        origin().elapsed()
    }

    fn unix_time(&self) -> i64 {
        ferry_core::rt::system_unix_time()
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send + 'static {
        let timer = Timer::after(duration);
        async move {
            timer.await;
        }
    }
}

impl Runtime for Smol {
    type Stream = SmolStream;
    type Listener = SmolListener;

    async fn connect(&self, addr: SocketAddr) -> Result<SmolStream, ErrorKind> {
        let tcp = Async::<TcpStream>::connect(addr).await.map_err(kind)?;
        SmolStream::new(tcp).map_err(kind)
    }

    async fn bind(&self, addr: SocketAddr) -> Result<SmolListener, ErrorKind> {
        Ok(SmolListener {
            tcp: Async::<TcpListener>::bind(addr).map_err(kind)?,
            tls: None,
        })
    }

    fn unblock<T, F>(&self, f: F) -> impl Future<Output = T> + Send + 'static
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        smol::unblock(f)
    }

    fn spawn<T, F>(&self, future: F) -> impl Future<Output = T> + Send + 'static
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        JoinHandle(Some(self.executor.spawn(future)))
    }
}

impl TlsRuntime for Smol {
    async fn bind_tls(
        &self,
        addr: SocketAddr,
        config: Arc<rustls::ServerConfig>,
    ) -> Result<SmolListener, ErrorKind> {
        Ok(SmolListener {
            tcp: Async::<TcpListener>::bind(addr).map_err(kind)?,
            tls: Some(config),
        })
    }

    async fn connect_tls(
        &self,
        addr: SocketAddr,
        config: Arc<rustls::ClientConfig>,
        name: ServerName<'static>,
    ) -> std::io::Result<SmolStream> {
        let tcp = Async::<TcpStream>::connect(addr).await?;
        tcp.get_ref().set_nodelay(true)?;
        let tls = futures_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await?;
        Ok(SmolStream::tls(TlsStream::Client(tls)))
    }
}

/// A smol task that is detached, not cancelled, when its handle is dropped (as on tokio).
struct JoinHandle<T>(Option<Task<T>>);

impl<T> Future for JoinHandle<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match self.0.as_mut() {
            Some(task) => Pin::new(task).poll(cx),
            None => Poll::Pending,
        }
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.detach();
        }
    }
}

/// Run `main` with a new executor driven by one thread per CPU (the calling thread among
/// them) and return its output; the worker threads stop when `main` returns.
pub fn block_on<F, Fut>(main: F) -> std::io::Result<Fut::Output>
where
    F: FnOnce(Smol) -> Fut,
    Fut: Future,
{
    block_on_threads(0, main)
}

/// [`block_on`] with `threads` threads in all (0: one per CPU).
pub fn block_on_threads<F, Fut>(threads: usize, main: F) -> std::io::Result<Fut::Output>
where
    F: FnOnce(Smol) -> Fut,
    Fut: Future,
{
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    };
    let executor = Arc::new(Executor::new());
    let (stop, stopped) = smol::channel::bounded::<()>(1);
    let mut workers = Vec::new();
    for i in 1..threads {
        let (executor, stopped) = (executor.clone(), stopped.clone());
        let worker = std::thread::Builder::new()
            .name(format!("ferry-smol-{i}"))
            .spawn(move || smol::block_on(executor.run(stopped.recv())));
        match worker {
            Ok(w) => workers.push(w),
            Err(e) => {
                drop(stop);
                return Err(e);
            }
        }
    }
    let out = smol::block_on(executor.run(main(Smol::new(executor.clone()))));
    // Closing the channel ends every worker's `run`.
    drop(stop);
    for w in workers {
        let _ = w.join();
    }
    Ok(out)
}

/// Serve HTTP on `addr` with `handler` (see `ferry_core::http::server::serve`).
pub async fn serve<H: Handler + 'static>(
    rt: &Smol,
    addr: SocketAddr,
    config: ServerConfig,
    handler: Arc<H>,
) -> Result<ServerHandle, ErrorKind> {
    ferry_core::http::server::serve(rt, addr, config, handler).await
}

/// Connect to `addr` (`TCP_NODELAY` set).
pub async fn connect(rt: &Smol, addr: SocketAddr) -> Result<SmolStream, ErrorKind> {
    rt.connect(addr).await
}
