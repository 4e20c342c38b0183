//! Connecting, and the pool of idle keep-alive connections.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use core::net::SocketAddr;
use core::time::Duration;

use super::{ClientConfig, ClientConn};
use crate::http::error::HttpError;
use crate::rt::{Connector, Runtime, Tcp, TimedOut, timeout};

/// Connect to `addr` within the configured connect timeout.
pub async fn connect<R: Runtime>(
    rt: &R,
    addr: SocketAddr,
    config: ClientConfig,
) -> Result<ClientConn<R, R::Stream>, HttpError> {
    connect_with(rt, &Tcp, addr, config).await
}

/// Connect to `addr` with `connector` (TLS, say) within the configured connect timeout.
pub async fn connect_with<R: Runtime, K: Connector<R>>(
    rt: &R,
    connector: &K,
    addr: SocketAddr,
    config: ClientConfig,
) -> Result<ClientConn<R, R::Stream>, HttpError> {
    let stream = match timeout(rt, config.connect_timeout, connector.connect(rt, addr)).await {
        Ok(r) => r.map_err(HttpError::Io)?,
        Err(TimedOut) => return Err(HttpError::TimedOut),
    };
    Ok(ClientConn::new(rt.clone(), stream, Some(addr), config))
}

/// Idle connections of one address, oldest first, with the time each went idle.
type IdleQueue<R> = VecDeque<(Duration, ClientConn<R, <R as Runtime>::Stream>)>;

/// Idle keep-alive connections per address, bounded and expiring.
///
/// [`ClientPool::get`] reuses the most recently idle connection that has not expired (or
/// connects with its [`Connector`], plain TCP by default); [`ClientPool::put`] keeps a
/// connection only if it is reusable.
pub struct ClientPool<R: Runtime, K = Tcp> {
    rt: R,
    connector: K,
    config: ClientConfig,
    idle: spin::Mutex<BTreeMap<SocketAddr, IdleQueue<R>>>,
}

impl<R: Runtime, K: Connector<R>> core::fmt::Debug for ClientPool<R, K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClientPool")
            .field("config", &self.config)
            .field("idle", &self.idle_count())
            .finish()
    }
}

impl<R: Runtime> ClientPool<R> {
    /// An empty pool connecting with `rt` over plain TCP.
    pub fn new(rt: R, config: ClientConfig) -> Self {
        Self::with_connector(rt, Tcp, config)
    }
}

impl<R: Runtime, K: Connector<R>> ClientPool<R, K> {
    /// An empty pool opening connections with `connector`.
    pub fn with_connector(rt: R, connector: K, config: ClientConfig) -> Self {
        Self {
            rt,
            connector,
            config,
            idle: spin::Mutex::new(BTreeMap::new()),
        }
    }

    /// The runtime connections are made with.
    pub fn runtime(&self) -> &R {
        &self.rt
    }

    /// The configuration new connections get.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// A new connection to `addr`, never an idle one (to retry on after a kept-alive connection
    /// turned out closed).
    pub async fn connect(&self, addr: SocketAddr) -> Result<ClientConn<R, R::Stream>, HttpError> {
        connect_with(&self.rt, &self.connector, addr, self.config).await
    }

    /// After `error` on `conn`: if the failure only means the server had closed the kept-alive
    /// connection while it was idle ([`ClientConn::is_stale`]), replace `conn` with a new
    /// connection to the same address and return `true`: the caller sends the request once
    /// more (only if its body can be sent again). A new connection is never stale, so a
    /// request goes at most twice.
    pub async fn replace_stale(
        &self,
        conn: &mut ClientConn<R, R::Stream>,
        error: &HttpError,
    ) -> Result<bool, HttpError> {
        let Some(addr) = conn.peer().filter(|_| conn.is_stale(error)) else {
            return Ok(false);
        };
        *conn = self.connect(addr).await?;
        Ok(true)
    }

    /// A connection to `addr`: an idle one if any is fresh enough, else a new one.
    pub async fn get(&self, addr: SocketAddr) -> Result<ClientConn<R, R::Stream>, HttpError> {
        if let Some(conn) = self.take_idle(addr) {
            return Ok(conn);
        }
        self.connect(addr).await
    }

    fn take_idle(&self, addr: SocketAddr) -> Option<ClientConn<R, R::Stream>> {
        let now = self.rt.now();
        let mut expired = Vec::new();
        let conn = {
            let mut idle = self.idle.lock();
            let queue = idle.get_mut(&addr)?;
            while queue
                .front()
                .is_some_and(|(since, _)| now.saturating_sub(*since) >= self.config.idle_timeout)
            {
                expired.extend(queue.pop_front());
            }
            // The empty queue stays: re-creating it on every put would allocate per request.
            queue.pop_back().map(|(_, c)| c)
        };
        // Sockets are closed outside the lock.
        drop(expired);
        conn
    }

    /// Return a connection after use; kept only if reusable and there is room.
    pub fn put(&self, mut conn: ClientConn<R, R::Stream>) {
        let Some(addr) = conn.peer().filter(|_| conn.is_reusable()) else {
            return;
        };
        if self.config.max_idle_per_addr == 0 {
            return;
        }
        conn.release_buffer();
        let now = self.rt.now();
        let evicted = {
            let mut idle = self.idle.lock();
            let queue = idle.entry(addr).or_default();
            queue.push_back((now, conn));
            if queue.len() > self.config.max_idle_per_addr {
                queue.pop_front()
            } else {
                None
            }
        };
        drop(evicted);
    }

    /// Idle connections held now, over all addresses.
    pub fn idle_count(&self) -> usize {
        self.idle.lock().values().map(VecDeque::len).sum()
    }
}
