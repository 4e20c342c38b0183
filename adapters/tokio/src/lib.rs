//! Ferry on tokio: [`Tokio`] implements `ferry_core::rt::Runtime` (TCP through
//! `embedded-io-adapters`' `FromTokio`, timers, `spawn`, `spawn_blocking`) and
//! `ferry_tls::TlsRuntime` (TLS through tokio-rustls), and [`block_on`] runs a future on a
//! multi-threaded runtime.
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
use ferry_core::rt::{Clock, Listener, Runtime, SpliceError, Stream};
use ferry_tls::TlsRuntime;
use ferry_tls::rustls;
use rustls::pki_types::ServerName;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio_rustls::TlsStream;

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

#[cfg(target_os = "linux")]
mod splice;

/// A TCP connection (`TCP_NODELAY` set), plain or TLS, as an `embedded-io-async` stream.
pub struct TokioStream {
    conn: Conn,
    /// The pipe [`Stream::splice_from`] moves bytes through, made on first use.
    #[cfg(target_os = "linux")]
    pipe: ferry_core::pipe::PipeSlot,
}

enum Conn {
    Tcp(FromTokio<TcpStream>),
    /// Boxed: rustls' state is large, and only TLS connections pay for it.
    Tls(Box<FromTokio<TlsStream<TcpStream>>>),
}

impl std::fmt::Debug for TokioStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokioStream")
            .field("tcp", self.get_ref())
            .field("tls", &self.is_tls())
            .finish()
    }
}

impl TokioStream {
    fn from_conn(conn: Conn) -> Self {
        Self {
            conn,
            #[cfg(target_os = "linux")]
            pipe: Default::default(),
        }
    }

    /// Wrap a connected socket, setting `TCP_NODELAY` (small responses must not wait).
    pub fn new(tcp: TcpStream) -> std::io::Result<Self> {
        tcp.set_nodelay(true)?;
        Ok(Self::from_conn(Conn::Tcp(FromTokio::new(tcp))))
    }

    fn tls(tls: TlsStream<TcpStream>) -> Self {
        Self::from_conn(Conn::Tls(Box::new(FromTokio::new(tls))))
    }

    /// The socket (under TLS, if any).
    pub fn get_ref(&self) -> &TcpStream {
        match &self.conn {
            Conn::Tcp(s) => s.inner(),
            Conn::Tls(s) => s.inner().get_ref().0,
        }
    }

    /// Whether the connection speaks TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self.conn, Conn::Tls(_))
    }
}

impl ErrorType for TokioStream {
    type Error = std::io::Error;
}

impl embedded_io_async::Read for TokioStream {
    async fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.conn {
            Conn::Tcp(s) => s.read(buf).await,
            Conn::Tls(s) => s.read(buf).await,
        }
    }
}

impl embedded_io_async::Write for TokioStream {
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
impl Stream for TokioStream {
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
            Conn::Tcp(s) => s.inner_mut().shutdown().await,
            // Sends close_notify, then shuts the socket down for writing.
            Conn::Tls(s) => s.inner_mut().shutdown().await,
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
        let from = src.as_any_mut()?.downcast_mut::<TokioStream>()?;
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
pub struct TokioListener {
    tcp: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
}

/// A connection accepted by a [`TokioListener`], before its TLS handshake if it has one.
#[derive(Debug)]
pub struct TokioAccepted(Accepted);

#[derive(Debug)]
enum Accepted {
    Plain(TokioStream),
    Tls(TcpStream, Arc<rustls::ServerConfig>),
}

impl Listener for TokioListener {
    type Stream = TokioStream;
    type Accepted = TokioAccepted;

    async fn accept(&self) -> Result<(TokioAccepted, SocketAddr), ErrorKind> {
        let (tcp, peer) = self.tcp.accept().await.map_err(kind)?;
        let accepted = match &self.tls {
            None => Accepted::Plain(TokioStream::new(tcp).map_err(kind)?),
            Some(config) => {
                tcp.set_nodelay(true).map_err(kind)?;
                Accepted::Tls(tcp, config.clone())
            }
        };
        Ok((TokioAccepted(accepted), peer))
    }

    async fn establish(accepted: TokioAccepted) -> Result<TokioStream, ErrorKind> {
        match accepted.0 {
            Accepted::Plain(stream) => Ok(stream),
            Accepted::Tls(tcp, config) => {
                let tls = tokio_rustls::TlsAcceptor::from(config)
                    .accept(tcp)
                    .await
                    .map_err(kind)?;
                Ok(TokioStream::tls(TlsStream::Server(tls)))
            }
        }
    }

    fn local_addr(&self) -> Result<SocketAddr, ErrorKind> {
        self.tcp.local_addr().map_err(kind)
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
        Ok(TokioListener {
            tcp: TcpListener::bind(addr).await.map_err(kind)?,
            tls: None,
        })
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

impl TlsRuntime for Tokio {
    async fn bind_tls(
        &self,
        addr: SocketAddr,
        config: Arc<rustls::ServerConfig>,
    ) -> Result<TokioListener, ErrorKind> {
        Ok(TokioListener {
            tcp: TcpListener::bind(addr).await.map_err(kind)?,
            tls: Some(config),
        })
    }

    async fn connect_tls(
        &self,
        addr: SocketAddr,
        config: Arc<rustls::ClientConfig>,
        name: ServerName<'static>,
    ) -> std::io::Result<TokioStream> {
        let tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let tls = tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await?;
        Ok(TokioStream::tls(TlsStream::Client(tls)))
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
