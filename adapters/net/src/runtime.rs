//! [`Net`]: an adapter made a `ferry_core::rt::Runtime`, with this crate's streams.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use embedded_io::ErrorKind;
use ferry_core::rt::{Clock, Runtime};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ServerConfig};

use crate::{Adapter, NetListener, NetRuntime, NetStream};

/// The runtime of adapter `A` (`Net<Tokio>`, `Net<Smol>`): its timers, tasks and blocking work,
/// and TCP or TLS [`NetStream`]s on its sockets.
#[derive(Debug, Clone)]
pub struct Net<A>(A);

impl<A: Adapter> Net<A> {
    /// The runtime of `adapter`.
    pub fn new(adapter: A) -> Self {
        Self(adapter)
    }

    /// The adapter (a tokio handle, a smol executor).
    pub fn adapter(&self) -> &A {
        &self.0
    }
}

impl<A: Adapter> Clock for Net<A> {
    fn now(&self) -> Duration {
        self.0.now()
    }

    fn unix_time(&self) -> i64 {
        ferry_core::rt::system_unix_time()
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send + 'static {
        self.0.sleep(duration)
    }
}

impl<A: Adapter> Runtime for Net<A> {
    type Stream = NetStream<A>;
    type Listener = NetListener<A>;

    async fn connect(&self, addr: SocketAddr) -> Result<NetStream<A>, ErrorKind> {
        NetStream::connect(&self.0, addr).await
    }

    async fn bind(&self, addr: SocketAddr) -> Result<NetListener<A>, ErrorKind> {
        NetListener::bind(&self.0, addr, None).await
    }

    fn unblock<T, F>(&self, f: F) -> impl Future<Output = T> + Send + 'static
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.0.unblock(f)
    }

    fn spawn<T, F>(&self, future: F) -> impl Future<Output = T> + Send + 'static
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        self.0.spawn(future)
    }
}

impl<A: Adapter> NetRuntime for Net<A> {
    async fn bind_tls(
        &self,
        addr: SocketAddr,
        config: Arc<ServerConfig>,
    ) -> Result<NetListener<A>, ErrorKind> {
        NetListener::bind(&self.0, addr, Some(config)).await
    }

    async fn connect_tls(
        &self,
        addr: SocketAddr,
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
    ) -> io::Result<NetStream<A>> {
        NetStream::connect_tls(&self.0, addr, config, name).await
    }
}
