//! One backend at run time: its address, keys, health and keep-alive connection pool, and
//! how its connections are opened (plain TCP, or TLS for an `https://` backend).

use std::future::Future;
use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_lock::{Semaphore, SemaphoreGuardArc};

use ferry_core::http::HttpError;
use ferry_core::http::client::{ClientConfig, ClientConn, ClientPool, connect_with};
use ferry_core::rt::{Connector, Runtime, Signal, TimedOut, timeout};
use ferry_core::s3::sigv4::Credentials;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::config::{BackendConfig, BackendKind};
use crate::metrics::AtomicHistogram;

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

/// A connection in use, holding one of its backend's connection slots and one of its
/// in-flight places until it is given back or dropped.
pub(crate) struct BackendConn<R: Runtime> {
    conn: Conn<R>,
    _slot: SemaphoreGuardArc,
    _flight: InFlight,
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

/// One request in flight to a backend (waiting for it, for a connection, or exchanging).
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Why the proxy answered `503 SlowDown` for a backend (a label of the metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlowDownReason {
    /// Marked down, and not back within the retry window.
    Down,
    /// No free connection slot within the retry window.
    Busy,
    /// As many requests in flight as it may have.
    InFlight,
    /// The connection failed during the request, and the request could not go again.
    Failed,
    /// It answered 503 itself.
    Answered503,
}

impl SlowDownReason {
    /// Every reason, in the order of [`BackendStats::slow_down`].
    pub const ALL: [Self; 5] = [
        Self::Down,
        Self::Busy,
        Self::InFlight,
        Self::Failed,
        Self::Answered503,
    ];

    /// The metrics label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Down => "down",
            Self::Busy => "busy",
            Self::InFlight => "in_flight",
            Self::Failed => "failed",
            Self::Answered503 => "answered_503",
        }
    }
}

/// How much one backend may be asked of at once, and how long a request waits for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BackendLimits {
    /// Connections in use at most.
    pub max_connections: usize,
    /// Requests in flight at most (waiting ones included); more answer `503 SlowDown` at once.
    pub max_in_flight: usize,
    /// How long a request waits for the backend to come back, for a free connection, or
    /// retries a failed connection, before it answers `503 SlowDown`.
    pub retry_window: Duration,
}

/// How often a request waiting for a backend that is down looks whether a probe saw it up.
const WAIT_POLL: Duration = Duration::from_millis(20);

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
    /// Requests that waited for it to come back, or went again on a new connection.
    pub retries: AtomicU64,
    /// `503 SlowDown` answers, by [`SlowDownReason`] (in the order of `ALL`).
    pub slow_down: [AtomicU64; 5],
    /// Pooled connections reused (against `connects`: the pool's hit rate).
    pub reuses: AtomicU64,
    /// Client requests forwarded as they came (passthrough).
    pub passed_through: AtomicU64,
    /// Client requests forwarded signed again by the proxy.
    pub resigned: AtomicU64,
    /// Requests waiting for a free connection slot now.
    pub waiting: AtomicUsize,
    /// From asking for a connection to having one: a free slot, a pooled connection or a
    /// new one (connect and TLS handshake), waiting for the backend to come back.
    pub conn_wait: AtomicHistogram,
}

/// [`Backend`] state: probes (or a refused connection) found it down.
const DOWN: u8 = 0;
/// [`Backend`] state: it answers, and the proxy brings its buckets up to date before it takes
/// traffic (`proxy::sync`): the state at start, and after each time it was down.
const CHECKING: u8 = 1;
/// [`Backend`] state: it answers and takes traffic.
const UP: u8 = 2;
/// Everything a backend is made from: its configuration, where its URL resolved to, its
/// trust anchors and the proxy-wide settings it runs with. A reload keeps a backend (its
/// connections, health and counters) only when this is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BackendSpec {
    pub config: BackendConfig,
    /// `Host` header value (`host:port` of its URL).
    pub host: String,
    pub addr: SocketAddr,
    /// SHA-256 of its `ca_cert` file, if it has one.
    pub ca_digest: Option<[u8; 32]>,
    pub limits: BackendLimits,
    pub connect_timeout: Duration,
    pub io_timeout: Duration,
}

/// A backend: placement id, address, how to authenticate, health and pooled connections.
pub(crate) struct Backend<R: Runtime> {
    pub id: String,
    /// The tag of its upload ids (`ferry_core::s3::upload_id::tag` of its id).
    pub upload_tag: String,
    /// What it was made from.
    pub spec: BackendSpec,
    /// Its place among every backend id the proxy has had (`Shared::name_of`): what names it
    /// in a request's log once the request is done, whatever configuration is current then.
    pub slot: usize,
    /// Set once a reload has removed or replaced it: its health probes stop (requests that
    /// still hold it finish on it).
    retired: Signal,
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
    /// [`DOWN`], [`CHECKING`] or [`UP`].
    state: AtomicU8,
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
    /// Requests in flight now, and at most.
    in_flight: Arc<AtomicUsize>,
    max_in_flight: usize,
    /// How long a request waits for a slot, for the backend to come back, or retries.
    retry_window: Duration,
    /// When it was last marked down, or began its check (runtime clock, nanoseconds): requests
    /// wait for it a retry window from then at most.
    since: AtomicU64,
    /// Connect timeouts in a row.
    timeouts: AtomicU32,
    pub stats: BackendStats,
}

impl<R: Runtime> std::fmt::Debug for Backend<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("id", &self.id)
            .field("addr", &self.addr)
            .field("state", &self.state_name())
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> Backend<R> {
    /// A backend from its resolved configuration: to be checked (its buckets brought up to
    /// date, `proxy::sync`) before it takes traffic, once a probe finds it answering.
    pub fn new(
        rt: R,
        spec: BackendSpec,
        slot: usize,
        region: &str,
        client: ClientConfig,
        connector: BackendConnector<R>,
    ) -> Self {
        let since = u64::try_from(rt.now().as_nanos()).unwrap_or(u64::MAX);
        let cfg = &spec.config;
        let limits = spec.limits;
        Self {
            id: cfg.id.clone(),
            upload_tag: ferry_core::s3::upload_id::tag(&cfg.id),
            addr: spec.addr,
            host: spec.host.clone(),
            kind: cfg.kind,
            passthrough: cfg.passthrough(),
            credentials: cfg.credentials.clone(),
            region: cfg.region.clone().unwrap_or_else(|| region.to_owned()),
            state: AtomicU8::new(CHECKING),
            pool: Mutex::new(Arc::new(ClientPool::with_connector(
                rt.clone(),
                connector.clone(),
                client,
            ))),
            connector,
            rt,
            client,
            slots: Arc::new(Semaphore::new(limits.max_connections.max(1))),
            in_flight: Arc::default(),
            max_in_flight: limits.max_in_flight.max(1),
            retry_window: limits.retry_window,
            since: AtomicU64::new(since),
            timeouts: AtomicU32::new(0),
            stats: BackendStats::default(),
            spec,
            slot,
            retired: Signal::new(),
        }
    }

    /// Take it out of service: a reload removed or replaced it (its probes stop).
    pub fn retire(&self) {
        self.retired.set();
    }

    /// Wait until it is retired.
    pub async fn retired(&self) {
        self.retired.wait().await;
    }

    /// Whether it takes traffic: healthy, and checked since it last came up.
    pub fn is_up(&self) -> bool {
        self.state.load(Ordering::Relaxed) == UP
    }

    /// Whether it answers but waits for its check before it takes traffic.
    pub fn is_checking(&self) -> bool {
        self.state.load(Ordering::Relaxed) == CHECKING
    }

    /// `up`, `checking` or `down`.
    pub fn state_name(&self) -> &'static str {
        match self.state.load(Ordering::Relaxed) {
            UP => "up",
            CHECKING => "checking",
            _ => "down",
        }
    }

    /// Whether requests `for_check` (the check's own) or any others may use it now.
    fn serves(&self, for_check: bool) -> bool {
        match self.state.load(Ordering::Relaxed) {
            UP => true,
            CHECKING => for_check,
            _ => false,
        }
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
        if self.state.swap(DOWN, Ordering::SeqCst) != DOWN {
            self.stamp();
            self.stats.marked_down.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(backend = %self.id, addr = %self.addr, reason = %reason, "backend down");
            self.flush_pool();
        }
    }

    /// A probe found it answering: a backend that was down is checked before it takes traffic
    /// again ([`Backend::admit`]); connections pooled before are dropped.
    pub fn mark_up(&self) {
        if self
            .state
            .compare_exchange(DOWN, CHECKING, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            self.stamp();
            tracing::info!(backend = %self.id, addr = %self.addr, "backend answering; checking its buckets");
            self.flush_pool();
        }
    }

    /// Remember that its state changed now (see `since`).
    fn stamp(&self) {
        let now = u64::try_from(self.rt.now().as_nanos()).unwrap_or(u64::MAX);
        self.since.store(now, Ordering::SeqCst);
    }

    /// Wait while it is being checked, within the retry window since its check began (a check
    /// that takes longer, or keeps failing, is not waited for); whether it takes traffic then.
    pub async fn checked(&self) -> bool {
        if !self.is_checking() {
            return self.is_up();
        }
        self.wait_up(self.deadline(), false).await
    }

    /// Its check passed: it takes traffic (unless it went down meanwhile).
    pub fn admit(&self) {
        if self
            .state
            .compare_exchange(CHECKING, UP, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            tracing::info!(backend = %self.id, addr = %self.addr, "backend up");
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

    /// When a request starting now stops waiting for or retrying this backend.
    pub fn deadline(&self) -> Duration {
        self.rt.now() + self.retry_window
    }

    /// Requests in flight to it now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// A connection: a pooled one, or a new one within the connect timeout, once one of the
    /// backend's connection slots is free. Waits within the retry window (see
    /// [`Backend::conn_until`]).
    pub async fn conn(&self) -> S3Result<BackendConn<R>> {
        self.conn_until(self.deadline()).await
    }

    /// [`Backend::conn`], waiting until `deadline` at most: for the backend to be seen up
    /// again by a probe if it is down (a restarting node), for a free connection slot, and
    /// connecting again when a connect fails. Then `503 SlowDown`; at once beyond the
    /// in-flight limit. Nothing has been sent when this fails, so any request may wait here.
    pub async fn conn_until(&self, deadline: Duration) -> S3Result<BackendConn<R>> {
        self.conn_for(deadline, false).await
    }

    /// [`Backend::conn_until`] for the requests of its check (`proxy::sync`), which it takes
    /// while [`Backend::is_checking`], and of the checks of the others (which read from it).
    pub async fn conn_for_check(&self, deadline: Duration) -> S3Result<BackendConn<R>> {
        self.conn_for(deadline, true).await
    }

    async fn conn_for(&self, deadline: Duration, for_check: bool) -> S3Result<BackendConn<R>> {
        let flight = self.enter()?;
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        let asked = self.rt.now();
        let slot = match self.slots.try_acquire_arc() {
            Some(s) => s,
            None => {
                self.stats.queued.fetch_add(1, Ordering::Relaxed);
                self.stats.waiting.fetch_add(1, Ordering::Relaxed);
                let wait = deadline.saturating_sub(self.rt.now());
                let got = timeout(&self.rt, wait, self.slots.acquire_arc()).await;
                self.stats.waiting.fetch_sub(1, Ordering::Relaxed);
                match got {
                    Ok(s) => s,
                    Err(TimedOut) => {
                        self.stats.queue_timeouts.fetch_add(1, Ordering::Relaxed);
                        return Err(self.slow_down(SlowDownReason::Busy));
                    }
                }
            }
        };
        let conn = self.connect_until(deadline, false, for_check).await?;
        let waited = self.rt.now().saturating_sub(asked);
        self.stats.conn_wait.observe(waited);
        Ok(BackendConn {
            conn,
            _slot: slot,
            _flight: flight,
        })
    }

    /// A new connection in place of `conn`, which failed before any answer came (its slot
    /// is kept), within `deadline`; for requests that may go again (`for_check`: as in
    /// [`Backend::conn_for_check`]).
    pub async fn reconnect(
        &self,
        conn: &mut BackendConn<R>,
        deadline: Duration,
        for_check: bool,
    ) -> S3Result<()> {
        self.stats.retries.fetch_add(1, Ordering::Relaxed);
        if self.rt.now() >= deadline {
            return Err(self.slow_down(SlowDownReason::Failed));
        }
        // A kept-alive connection that failed unanswered: the backend likely restarted, and
        // its other idle connections are as dead (a body sent on one could not be replayed).
        if conn.conn.requests() > 1 {
            self.flush_pool();
        }
        conn.conn = self.connect_until(deadline, true, for_check).await?;
        Ok(())
    }

    /// Take an in-flight place, or `SlowDown` beyond the limit.
    fn enter(&self) -> S3Result<InFlight> {
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed);
        let flight = InFlight(self.in_flight.clone());
        if now >= self.max_in_flight {
            return Err(self.slow_down(SlowDownReason::InFlight));
        }
        Ok(flight)
    }

    /// A connection (pooled unless `fresh`), waiting for the backend to come back (to be up,
    /// or only answering for a request `for_check`) and connecting again until `deadline`.
    async fn connect_until(
        &self,
        deadline: Duration,
        fresh: bool,
        for_check: bool,
    ) -> S3Result<Conn<R>> {
        loop {
            if !self.serves(for_check) && !self.wait_up(deadline, for_check).await {
                return Err(self.slow_down(SlowDownReason::Down));
            }
            let pool = self.pool();
            let got = if fresh {
                pool.connect(self.addr).await
            } else {
                pool.get(self.addr).await
            };
            match got {
                Ok(conn) => {
                    // A pooled connection has served requests before.
                    if conn.requests() == 0 {
                        self.stats.connects.fetch_add(1, Ordering::Relaxed);
                    } else {
                        self.stats.reuses.fetch_add(1, Ordering::Relaxed);
                    }
                    self.timeouts.store(0, Ordering::Relaxed);
                    return Ok(conn);
                }
                Err(e) => {
                    self.connect_failed(&e);
                    if self.rt.now() >= deadline {
                        return Err(self.slow_down(SlowDownReason::Down));
                    }
                    self.stats.retries.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Wait until a probe sees it up (a request `for_check`: answering), `deadline` passes, or
    /// it has been down or checked for a whole retry window (a backend down for long answers at
    /// once); whether it serves the request now.
    async fn wait_up(&self, deadline: Duration, for_check: bool) -> bool {
        let mut waited = false;
        loop {
            let since = Duration::from_nanos(self.since.load(Ordering::SeqCst));
            let until = deadline.min(since + self.retry_window);
            if self.serves(for_check) {
                if waited {
                    self.stats.retries.fetch_add(1, Ordering::Relaxed);
                }
                return true;
            }
            let now = self.rt.now();
            if now >= until {
                return false;
            }
            waited = true;
            self.rt.sleep(WAIT_POLL.min(until - now)).await;
        }
    }

    /// The `503 SlowDown` error for `reason`, counted.
    pub fn slow_down(&self, reason: SlowDownReason) -> S3Error {
        if let Some(c) = SlowDownReason::ALL
            .iter()
            .position(|r| *r == reason)
            .and_then(|i| self.stats.slow_down.get(i))
        {
            c.fetch_add(1, Ordering::Relaxed);
        }
        let why = match reason {
            SlowDownReason::Down => "is unavailable",
            SlowDownReason::Busy | SlowDownReason::InFlight => "is busy",
            SlowDownReason::Failed => "failed during the request",
            SlowDownReason::Answered503 => "is overloaded",
        };
        S3Error::with_message(
            S3ErrorCode::SlowDown,
            format!(
                "Backend {} {why}; please reduce your request rate.",
                self.id
            ),
        )
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
                Err(self.slow_down(SlowDownReason::Down))
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

    /// The error for requests it cannot serve now (not counted: for the entries of a
    /// document, or a request that did not wait).
    pub fn unavailable(&self) -> S3Error {
        S3Error::with_message(
            S3ErrorCode::SlowDown,
            format!(
                "Backend {} is unavailable; please reduce your request rate.",
                self.id
            ),
        )
    }

    /// The client configuration its connections use.
    pub fn client_config(&self) -> ClientConfig {
        self.client
    }
}
