//! What Ferry's runtime adapters share, written once: the runtime [`Net`] (`ferry_core::rt`'s
//! `Runtime`), its TCP-or-TLS [`NetStream`] and [`NetListener`], the `splice(2)` round between
//! two sockets ([`pipe`]), and rustls on `ring` ([`tls`]).
//!
//! An adapter (`ferry-tokio`, `ferry-smol`) implements only [`Adapter`], what differs between
//! runtimes: how to connect, bind and accept a TCP socket speaking `futures-io`, how to wait for
//! its readiness around a non-blocking system call, timers, tasks and blocking work. On that
//! socket TLS is futures-rustls whatever the runtime, and `embedded-io-adapters`' `FromFutures`
//! makes either an `embedded-io-async` stream.
//!
//! `ferry-core` stays free of I/O: a TLS stream is just another `rt::Stream`, its handshake runs
//! in `rt::Listener::establish` (in the connection's own task, under the server's head timeout)
//! or in an `rt::Connector` ([`TlsConnector`], under the client's connect timeout).

mod listener;
#[cfg(target_os = "linux")]
pub mod pipe;
mod runtime;
mod stream;
pub mod tls;

use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
#[cfg(target_os = "linux")]
use std::os::fd::BorrowedFd;
use std::sync::Arc;
use std::time::Duration;

use embedded_io::ErrorKind;
use ferry_core::http::server::{Handler, ServerConfig as HttpConfig, ServerHandle, serve_listener};
use ferry_core::rt::Runtime;
use futures_io::{AsyncRead, AsyncWrite};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ServerConfig};

pub use listener::{NetAccepted, NetListener};
pub use runtime::Net;
pub use rustls;
pub use stream::NetStream;
pub use tls::{
    TlsConnector, client_config, provider, server_config, server_config_from_files, server_name,
};

/// Connections the kernel queues for a listener before it accepts them (`listen(2)`'s backlog;
/// Linux caps it at `net.core.somaxconn`, 4096 by default). The standard library's 128 let
/// 1,000 clients connecting at once overflow the queue: with SYN cookies some of them then got
/// a reset on their first request.
pub const LISTEN_BACKLOG: i32 = 4096;

/// A non-blocking TCP listener on `addr` with a [`LISTEN_BACKLOG`] queue (and `SO_REUSEADDR`,
/// as the standard library sets it), for an adapter to register with its reactor. socket2
/// because `std` fixes the backlog at 128.
pub fn bind_tcp_listener(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    #[cfg(unix)]
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// What a runtime adapter provides; [`Net`] makes a `ferry_core::rt::Runtime` of it.
///
/// `Runtime` is implemented here, once, for `Net<A>` rather than by each adapter: the two
/// implementations would differ only in what this trait asks for.
pub trait Adapter: Clone + Send + Sync + fmt::Debug + 'static {
    /// A connected TCP socket.
    type Socket: AsyncRead + AsyncWrite + Unpin + Send + Sync + fmt::Debug + 'static;
    /// A listening TCP socket.
    type TcpListener: Send + Sync + fmt::Debug + 'static;

    /// Connect to `addr`, with `TCP_NODELAY` set (small responses must not wait).
    fn connect_tcp(
        &self,
        addr: SocketAddr,
    ) -> impl Future<Output = io::Result<Self::Socket>> + Send;

    /// Listen on `addr` (port 0 picks a free port).
    fn bind_tcp(
        &self,
        addr: SocketAddr,
    ) -> impl Future<Output = io::Result<Self::TcpListener>> + Send;

    /// The next connection on `listener`, with `TCP_NODELAY` set, and its peer's address.
    fn accept_tcp(
        listener: &Self::TcpListener,
    ) -> impl Future<Output = io::Result<(Self::Socket, SocketAddr)>> + Send;

    /// The address `listener` listens on.
    fn listener_addr(listener: &Self::TcpListener) -> io::Result<SocketAddr>;

    /// Close the sending half of `socket` (TCP FIN).
    fn shutdown_write(socket: &mut Self::Socket) -> impl Future<Output = io::Result<()>> + Send;

    /// Wait until `socket` is readable (bytes, the end, or an error), with no system call if
    /// the runtime knows it already; a spurious return is allowed (`Stream::readable`).
    fn readable(socket: &Self::Socket) -> impl Future<Output = io::Result<()>> + Send;

    /// Run `op`, a non-blocking system call on `socket`'s descriptor, until it does not fail
    /// with `WouldBlock`, waiting for `socket` to be readable in between.
    #[cfg(target_os = "linux")]
    fn read_with<T: Send>(
        socket: &Self::Socket,
        op: impl FnMut(BorrowedFd<'_>) -> io::Result<T> + Send,
    ) -> impl Future<Output = io::Result<T>> + Send;

    /// [`Adapter::read_with`], waiting for `socket` to be writable.
    #[cfg(target_os = "linux")]
    fn write_with<T: Send>(
        socket: &Self::Socket,
        op: impl FnMut(BorrowedFd<'_>) -> io::Result<T> + Send,
    ) -> impl Future<Output = io::Result<T>> + Send;

    /// Monotonic time since an origin fixed for the process (`Clock::now`).
    fn now(&self) -> Duration;

    /// A future that completes after `duration` (`Clock::sleep`).
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send + 'static;

    /// Run a blocking closure off the reactor threads (`Runtime::unblock`).
    fn unblock<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> impl Future<Output = T> + Send + 'static;

    /// Start `future` as a task that runs whether or not the handle is awaited, resuming its
    /// panic in the awaiting task (`Runtime::spawn`).
    fn spawn<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> impl Future<Output = T> + Send + 'static;
}

/// A runtime that can listen and connect with TLS; its streams are plain TCP or TLS. Every
/// adapter's [`Net`] is one; code generic over the runtime names this.
pub trait NetRuntime: Runtime {
    /// Listen on `addr` and serve TLS with `config`. The handshake is the listener's
    /// `establish`, which the server runs in each connection's own task.
    fn bind_tls(
        &self,
        addr: SocketAddr,
        config: Arc<ServerConfig>,
    ) -> impl Future<Output = Result<Self::Listener, ErrorKind>> + Send;

    /// Connect to `addr` and complete a TLS handshake for `name`; a failed one says why (an
    /// untrusted certificate, say). The caller bounds it with a timeout.
    fn connect_tls(
        &self,
        addr: SocketAddr,
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
    ) -> impl Future<Output = io::Result<Self::Stream>> + Send;
}

/// Listen on `addr`: with TLS if `config` is given, plain TCP otherwise.
pub async fn bind<R: NetRuntime>(
    rt: &R,
    addr: SocketAddr,
    config: Option<Arc<ServerConfig>>,
) -> Result<R::Listener, ErrorKind> {
    match config {
        Some(c) => rt.bind_tls(addr, c).await,
        None => rt.bind(addr).await,
    }
}

/// Serve HTTP on `addr` with `handler`: over TLS if `tls` is given, plain TCP otherwise (see
/// `ferry_core::http::server::serve_listener`).
pub async fn serve<R: NetRuntime, H: Handler + 'static>(
    rt: &R,
    addr: SocketAddr,
    tls: Option<Arc<ServerConfig>>,
    config: HttpConfig,
    handler: Arc<H>,
) -> Result<ServerHandle, ErrorKind> {
    let listener = bind(rt, addr, tls).await?;
    serve_listener(rt, listener, config, handler)
}

fn kind(e: io::Error) -> ErrorKind {
    embedded_io::Error::kind(&e)
}
