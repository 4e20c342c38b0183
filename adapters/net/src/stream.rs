//! [`NetStream`]: a TCP connection, plain or TLS, of any adapter.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use embedded_io::{ErrorKind, ErrorType};
use embedded_io_adapters::futures_03::FromFutures;
use ferry_core::rt::{SpliceError, Stream};
use futures_io::AsyncWrite;
use futures_rustls::TlsStream;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;

use crate::{Adapter, kind};

/// A TCP connection (`TCP_NODELAY` set), plain or TLS, as an `embedded-io-async` stream: the
/// `rt::Stream` of the adapter `A`.
pub struct NetStream<A: Adapter> {
    conn: Conn<A::Socket>,
    /// The pipe [`Stream::splice_from`] moves bytes through, made on first use.
    #[cfg(target_os = "linux")]
    pipe: crate::pipe::PipeSlot,
}

enum Conn<S> {
    Tcp(FromFutures<S>),
    /// Boxed: rustls' state is large, and only TLS connections pay for it.
    Tls(Box<FromFutures<TlsStream<S>>>),
}

impl<A: Adapter> fmt::Debug for NetStream<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetStream")
            .field("tcp", self.get_ref())
            .field("tls", &self.is_tls())
            .finish()
    }
}

impl<A: Adapter> NetStream<A> {
    fn from_conn(conn: Conn<A::Socket>) -> Self {
        Self {
            conn,
            #[cfg(target_os = "linux")]
            pipe: Default::default(),
        }
    }

    /// A plain TCP stream on a connected socket (with `TCP_NODELAY` set, as the adapter's are).
    pub fn tcp(socket: A::Socket) -> Self {
        Self::from_conn(Conn::Tcp(FromFutures::new(socket)))
    }

    pub(crate) fn tls(tls: TlsStream<A::Socket>) -> Self {
        Self::from_conn(Conn::Tls(Box::new(FromFutures::new(tls))))
    }

    /// Connect to `addr` with plain TCP.
    pub async fn connect(adapter: &A, addr: SocketAddr) -> Result<Self, ErrorKind> {
        adapter.connect_tcp(addr).await.map(Self::tcp).map_err(kind)
    }

    /// Connect to `addr` and complete a TLS handshake for `name`.
    pub async fn connect_tls(
        adapter: &A,
        addr: SocketAddr,
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
    ) -> io::Result<Self> {
        let tcp = adapter.connect_tcp(addr).await?;
        let tls = futures_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await?;
        Ok(Self::tls(TlsStream::Client(tls)))
    }

    /// The socket (under TLS, if any).
    pub fn get_ref(&self) -> &A::Socket {
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

impl<A: Adapter> ErrorType for NetStream<A> {
    type Error = io::Error;
}

impl<A: Adapter> embedded_io_async::Read for NetStream<A> {
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // tokio's sockets wait for readiness even to read nothing, and may wait forever at the
        // end of the stream (as `FromTokio` notes); nothing to read is nothing read, at once.
        if buf.is_empty() {
            return Ok(0);
        }
        match &mut self.conn {
            Conn::Tcp(s) => s.read(buf).await,
            Conn::Tls(s) => s.read(buf).await,
        }
    }
}

impl<A: Adapter> embedded_io_async::Write for NetStream<A> {
    async fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
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

    async fn flush(&mut self) -> io::Result<()> {
        match &mut self.conn {
            Conn::Tcp(s) => s.flush().await,
            Conn::Tls(s) => s.flush().await,
        }
    }
}

// The futures are `Send` for every adapter's sockets; saying so here lets generic code spawn
// them.
impl<A: Adapter> Stream for NetStream<A> {
    async fn read_send(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        embedded_io_async::Read::read(self, buf).await
    }

    async fn write_send(&mut self, buf: &[u8]) -> io::Result<usize> {
        embedded_io_async::Write::write(self, buf).await
    }

    async fn flush_send(&mut self) -> io::Result<()> {
        embedded_io_async::Write::flush(self).await
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        match &mut self.conn {
            Conn::Tcp(s) => A::shutdown_write(s.inner_mut()).await,
            // Sends close_notify, then closes the socket as futures-io does: tokio's (through
            // `compat`) shuts down for writing, smol's `Async` only flushes.
            Conn::Tls(s) => poll_fn(|cx| Pin::new(s.inner_mut()).poll_close(cx)).await,
        }
    }

    /// The socket's readiness, under TLS too: the engine asks only after a read would have
    /// waited, so rustls holds no complete record then and more must come from the socket.
    async fn readable(&mut self) -> io::Result<()> {
        A::readable(self.get_ref()).await
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }

    fn is_secure(&self) -> bool {
        matches!(self.conn, Conn::Tls(_))
    }

    /// The negotiated version, once the handshake is done (it is before a server reads).
    fn tls_version(&self) -> Option<&'static str> {
        let Conn::Tls(s) = &self.conn else {
            return None;
        };
        Some(match s.inner().get_ref().1.protocol_version()? {
            rustls::ProtocolVersion::TLSv1_3 => "1.3",
            rustls::ProtocolVersion::TLSv1_2 => "1.2",
            rustls::ProtocolVersion::TLSv1_1 => "1.1",
            rustls::ProtocolVersion::TLSv1_0 => "1.0",
            _ => return None,
        })
    }

    #[cfg(target_os = "linux")]
    fn can_send_file(&self) -> bool {
        matches!(self.conn, Conn::Tcp(_))
    }

    /// Plain TCP only (TLS bytes must be encrypted in user space).
    #[cfg(target_os = "linux")]
    async fn send_file(
        &mut self,
        file: &std::fs::File,
        offset: u64,
        len: u64,
    ) -> Option<io::Result<u64>> {
        let Conn::Tcp(to) = &self.conn else {
            return None;
        };
        Some(crate::pipe::send_file::<A>(to.inner(), file, offset, len).await)
    }

    /// Between two plain TCP connections of the same adapter only (TLS bytes must be
    /// decrypted).
    #[cfg(target_os = "linux")]
    async fn splice_from<T: Stream>(
        &mut self,
        src: &mut T,
        max: u64,
    ) -> Option<Result<u64, SpliceError<ErrorKind>>> {
        let from = src.as_any_mut()?.downcast_mut::<Self>()?;
        let (Conn::Tcp(from), Conn::Tcp(to)) = (&from.conn, &self.conn) else {
            return None;
        };
        let pipe = self.pipe.get()?;
        let r = crate::pipe::round::<A>(from.inner(), to.inner(), pipe, max).await;
        self.pipe.keep_if(&r);
        Some(r)
    }
}
