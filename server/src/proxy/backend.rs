//! One backend at run time: its address, keys, health and keep-alive connection pool, and
//! how its connections are opened (plain TCP, or TLS for an `https://` backend).

use std::future::Future;
use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_lock::{Semaphore, SemaphoreGuardArc};

use ferry_core::http::HttpError;
use ferry_core::http::client::{ClientConfig, ClientConn, ClientPool, connect_with};
use ferry_core::rt::{Connector, Runtime, TimedOut, timeout};
use ferry_core::s3::sigv4::Credentials;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::config::{BackendConfig, BackendKind};

/// A connection to a backend.
pub(crate) type Conn<R> = ClientConn<R, <R as Runtime>::Stream>;

/// A TLS connect in progress (boxed: one per new connection, not per request).
pub(crate) type TlsConnecting<S> = Pin<Box<dyn Future<Output = std::io::Result<S>> + Send>>;

/// Opens a TLS connection to an address (handshake and certificate check included).
pub(crate) type TlsConnect<R> =
    dyn Fn(R, SocketAddr) -> TlsConnecting<<R as Runtime>::Stream> + Send + Sync;

/// How a backend's connections are opened: plain TCP, or TLS through a function made where
/// the runtime is known to speak TLS (`ferry_net::NetRuntime`), so that the proxy's code stays
/// generic over any `Runtime`. TLS streams are never spliced (`Stream::splice_from` declines
/// them): bodies to and from such a backend take the buffered path.
pub(crate) struct BackendConnector<R: Runtime> {
    tls: Option<Arc<TlsConnect<R>>>,
    /// Why the last TLS connect failed (an untrusted certificate, say): the log's reason,
    /// which the `ErrorKind` a connector returns cannot carry.
    last_error: Arc<Mutex<Option<String>>>,
}

impl<R: Runtime> Clone for BackendConnector<R> {
    fn clone(&self) -> Self {
        Self {
            tls: self.tls.clone(),
            last_error: self.last_error.clone(),
        }
    }
}

impl<R: Runtime> std::fmt::Debug for BackendConnector<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendConnector")
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> BackendConnector<R> {
    /// Plain TCP.
    pub fn tcp() -> Self {
        Self {
            tls: None,
            last_error: Arc::default(),
        }
    }

    /// TLS, with `connect`.
    pub fn tls(connect: Arc<TlsConnect<R>>) -> Self {
        Self {
            tls: Some(connect),
            last_error: Arc::default(),
        }
    }

    /// Whether connections speak TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// What went wrong with a connect that failed with `e`: for a TLS backend the I/O error's
    /// own words (`invalid peer certificate: UnknownIssuer`), which `e` lost.
    fn reason(&self, e: &HttpError) -> String {
        let tls = self
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match (e, tls) {
            (HttpError::Io(_), Some(why)) => why,
            _ => e.to_string(),
        }
    }
}

impl<R: Runtime> Connector<R> for BackendConnector<R> {
    async fn connect(&self, rt: &R, addr: SocketAddr) -> Result<R::Stream, embedded_io::ErrorKind> {
        let Some(tls) = &self.tls else {
            return rt.connect(addr).await;
        };
        let connecting = tls(rt.clone(), addr);
        connecting.await.map_err(|e| {
            let kind = embedded_io::Error::kind(&e);
            *self
                .last_error
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(e.to_string());
            kind
        })
    }
}

/// Connect timeouts in a row that mark a backend down. One can be a busy backend's full
/// accept queue; a refused connection marks it down at once.
const TIMEOUTS_TO_DOWN: u32 = 3;

/// A connection in use, holding one of its backend's connection slots until it is given back
/// or dropped.
pub(crate) struct BackendConn<R: Runtime> {
    conn: Conn<R>,
    _slot: SemaphoreGuardArc,
}

impl<R: Runtime> Deref for BackendConn<R> {
    type Target = Conn<R>;

    fn deref(&self) -> &Conn<R> {
        &self.conn
    }
}

impl<R: Runtime> DerefMut for BackendConn<R> {
    fn deref_mut(&mut self) -> &mut Conn<R> {
        &mut self.conn
    }
}

/// Counters of one backend, for `/metrics`.
#[derive(Debug, Default)]
pub(crate) struct BackendStats {
    /// Requests sent.
    pub requests: AtomicU64,
    /// Connections that could not be made or failed mid-exchange.
    pub failures: AtomicU64,
    /// New connections made (the rest reused a pooled one).
    pub connects: AtomicU64,
    /// Times it was marked down.
    pub marked_down: AtomicU64,
    /// Requests that waited for a free connection slot.
    pub queued: AtomicU64,
    /// Requests that found no free slot in time (answered 503 SlowDown).
    pub queue_timeouts: AtomicU64,
}

/// A backend: placement id, address, how to authenticate, health and pooled connections.
pub(crate) struct Backend<R: Runtime> {
    pub id: String,
    pub addr: SocketAddr,
    /// `Host` header value (`host:port` of its URL).
    pub host: String,
    pub kind: BackendKind,
    /// Forward client signatures unchanged.
    pub passthrough: bool,
    /// Its own key; `None`: it accepts the clients' keys.
    pub credentials: Option<Credentials>,
    /// Region to sign for.
    pub region: String,
    up: AtomicBool,
    /// Replaced (emptied) whenever health changes: pooled connections to a process that died
    /// are useless, and failing on each of them would delay recovery.
    pool: Mutex<Arc<ClientPool<R, BackendConnector<R>>>>,
    connector: BackendConnector<R>,
    rt: R,
    client: ClientConfig,
    /// Connections in use at most (idle pooled ones hold no slot): a busy backend makes
    /// requests wait here instead of taking ever more connects, which time out and would mark
    /// a healthy backend down.
    slots: Arc<Semaphore>,
    /// How long a request waits for a slot.
    queue_timeout: Duration,
    /// Connect timeouts in a row.
    timeouts: AtomicU32,
    pub stats: BackendStats,
}

impl<R: Runtime> std::fmt::Debug for Backend<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("id", &self.id)
            .field("addr", &self.addr)
            .field("up", &self.is_up())
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> Backend<R> {
    /// A backend from its configuration, resolved to `(Host header, address)`, assumed up
    /// until a probe or a connection says otherwise.
    pub fn new(
        rt: R,
        cfg: &BackendConfig,
        (host, addr): (String, SocketAddr),
        region: &str,
        client: ClientConfig,
        max_connections: usize,
        connector: BackendConnector<R>,
    ) -> Self {
        Self {
            id: cfg.id.clone(),
            addr,
            host,
            kind: cfg.kind,
            passthrough: cfg.passthrough(),
            credentials: cfg.credentials.clone(),
            region: cfg.region.clone().unwrap_or_else(|| region.to_owned()),
            up: AtomicBool::new(true),
            pool: Mutex::new(Arc::new(ClientPool::with_connector(
                rt.clone(),
                connector.clone(),
                client,
            ))),
            connector,
            rt,
            client,
            slots: Arc::new(Semaphore::new(max_connections.max(1))),
            queue_timeout: client.read_timeout,
            timeouts: AtomicU32::new(0),
            stats: BackendStats::default(),
        }
    }

    /// Whether it is considered healthy.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    fn pool(&self) -> Arc<ClientPool<R, BackendConnector<R>>> {
        self.pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn flush_pool(&self) {
        let fresh = Arc::new(ClientPool::with_connector(
            self.rt.clone(),
            self.connector.clone(),
            self.client,
        ));
        let old = std::mem::replace(
            &mut *self.pool.lock().unwrap_or_else(PoisonError::into_inner),
            fresh,
        );
        // Sockets close outside the lock.
        drop(old);
    }

    /// Mark it down (a probe failed or it refused a connection: `reason`); its idle
    /// connections go. Only the transition is logged.
    pub fn mark_down(&self, reason: &dyn std::fmt::Display) {
        if self.up.swap(false, Ordering::SeqCst) {
            self.stats.marked_down.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(backend = %self.id, addr = %self.addr, reason = %reason, "backend down");
            self.flush_pool();
        }
    }

    /// Mark it up (a probe succeeded); connections pooled before are dropped.
    pub fn mark_up(&self) {
        if !self.up.swap(true, Ordering::SeqCst) {
            tracing::info!(backend = %self.id, addr = %self.addr, "backend up");
            self.flush_pool();
        }
    }

    /// Count a failed connect: a refused one marks the backend down at once, timeouts only
    /// [`TIMEOUTS_TO_DOWN`] in a row (the health probe decides in between).
    fn connect_failed(&self, e: &HttpError) {
        self.stats.failures.fetch_add(1, Ordering::Relaxed);
        let why = self.connector.reason(e);
        tracing::warn!(backend = %self.id, addr = %self.addr, error = %why, "backend connect failed");
        let timed_out = matches!(e, HttpError::TimedOut);
        if !timed_out || self.timeouts.fetch_add(1, Ordering::Relaxed) + 1 >= TIMEOUTS_TO_DOWN {
            self.mark_down(&format_args!("connect failed: {why}"));
        }
    }

    /// A new connection of its own, outside the pool and its slots (a health probe); a failure
    /// says why (the TLS reason, if any).
    pub async fn connect_fresh(&self) -> Result<Conn<R>, String> {
        connect_with(&self.rt, &self.connector, self.addr, self.client)
            .await
            .map_err(|e| self.connector.reason(&e))
    }

    /// Whether its connections speak TLS.
    pub fn is_tls(&self) -> bool {
        self.connector.is_tls()
    }

    /// A connection: a pooled one, or a new one within the connect timeout, once one of the
    /// backend's connection slots is free. A backend marked down is `ServiceUnavailable` at
    /// once; no free slot within the I/O timeout is `SlowDown`.
    pub async fn conn(&self) -> S3Result<BackendConn<R>> {
        if !self.is_up() {
            return Err(self.unavailable());
        }
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        let slot = match self.slots.try_acquire_arc() {
            Some(s) => s,
            None => {
                self.stats.queued.fetch_add(1, Ordering::Relaxed);
                match timeout(&self.rt, self.queue_timeout, self.slots.acquire_arc()).await {
                    Ok(s) => s,
                    Err(TimedOut) => {
                        self.stats.queue_timeouts.fetch_add(1, Ordering::Relaxed);
                        return Err(S3Error::with_message(
                            S3ErrorCode::SlowDown,
                            format!("Backend {} is busy; please retry.", self.id),
                        ));
                    }
                }
            }
        };
        match self.pool().get(self.addr).await {
            Ok(conn) => {
                // A pooled connection has served requests before.
                if conn.requests() == 0 {
                    self.stats.connects.fetch_add(1, Ordering::Relaxed);
                }
                self.timeouts.store(0, Ordering::Relaxed);
                Ok(BackendConn { conn, _slot: slot })
            }
            Err(e) => {
                self.connect_failed(&e);
                Err(self.unavailable())
            }
        }
    }

    /// After `error` on `conn`: a new connection in its place if `conn` had only gone stale
    /// in the pool (see `ClientPool::replace_stale`); `Ok(false)` if the error stands. A
    /// failed connect marks the backend down.
    pub async fn replace_stale(
        &self,
        conn: &mut BackendConn<R>,
        error: &HttpError,
    ) -> S3Result<bool> {
        match self.pool().replace_stale(&mut conn.conn, error).await {
            Ok(replaced) => {
                if replaced {
                    self.stats.connects.fetch_add(1, Ordering::Relaxed);
                }
                Ok(replaced)
            }
            Err(e) => {
                self.connect_failed(&e);
                Err(self.unavailable())
            }
        }
    }

    /// Give a connection back (kept only if reusable); its slot is free again.
    pub fn put(&self, conn: BackendConn<R>) {
        self.pool().put(conn.conn);
    }

    /// Count a failed exchange (the connection is dropped by the caller).
    pub fn failed(&self, _e: &HttpError) {
        self.stats.failures.fetch_add(1, Ordering::Relaxed);
    }

    /// The error for requests it cannot serve now.
    pub fn unavailable(&self) -> S3Error {
        S3Error::with_message(
            S3ErrorCode::ServiceUnavailable,
            format!("Backend {} is unavailable; please retry.", self.id),
        )
    }

    /// The client configuration its connections use.
    pub fn client_config(&self) -> ClientConfig {
        self.client
    }
}
