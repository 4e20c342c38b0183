//! The accept loop: one task per connection up to a cap, graceful and hard stops.

use alloc::sync::Arc;
use core::net::SocketAddr;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use core::time::Duration;

use embedded_io::ErrorKind;
use event_listener::{Event, IntoNotification as _};

use super::conn::serve_accepted;
use super::{Handler, POOL_TRIM_INTERVAL, ServerConfig};
use crate::rt::{Clock, Either, Listener, Runtime, Signal, race, timeout};

/// The first wait after an accept error that may last (out of descriptors); it doubles up to
/// [`ACCEPT_BACKOFF_MAX`] while errors go on.
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Counters and controls shared by the accept loop, its connections and the handle.
#[derive(Debug, Default)]
struct ServerShared {
    stop: Signal,
    abort: Signal,
    done: Signal,
    accepting: AtomicBool,
    accepted: AtomicU64,
    active: AtomicUsize,
    /// Connections closed at once because the cap was reached and none was idle.
    refused: AtomicU64,
    /// Idle connections closed to make room for new ones.
    evicted: AtomicU64,
    /// Connections waiting for a request listen here; each notification closes the one that
    /// has waited longest (listeners are notified in the order they started).
    idle: Event,
    /// Notified when a connection ends (the accept loop waits for it when out of descriptors).
    ended: Event,
}

impl ServerShared {
    fn connection_ended(&self) {
        let was = self.active.fetch_sub(1, Ordering::SeqCst);
        self.ended.notify(usize::MAX);
        if was == 1 && !self.accepting.load(Ordering::SeqCst) {
            self.done.set();
        }
    }

    /// Whether a new connection may be served with `max` the cap: below it, or at it if an
    /// idle connection makes room.
    fn admit(&self, max: usize) -> bool {
        let active = self.active.load(Ordering::SeqCst);
        if active < max {
            return true;
        }
        // An evicted connection ends as soon as its task runs, so the count may pass the cap
        // by the evictions in flight; the slack bounds that.
        let slack = max / 8 + 1;
        if active < max.saturating_add(slack) && self.evict_one() {
            return true;
        }
        self.refused.fetch_add(1, Ordering::Relaxed);
        false
    }

    /// Close the connection idle longest, if any is idle.
    fn evict_one(&self) -> bool {
        let evicted = self.idle.notify(1.additional()) > 0;
        if evicted {
            self.evicted.fetch_add(1, Ordering::Relaxed);
        }
        evicted
    }
}

/// Decrements the live-connection count even if the connection task panics.
struct ActiveGuard(Arc<ServerShared>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.connection_ended();
    }
}

/// A running server: its address, counters, and shutdown.
#[derive(Debug, Clone)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    shared: Arc<ServerShared>,
}

impl ServerHandle {
    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Connections open now.
    pub fn active(&self) -> usize {
        self.shared.active.load(Ordering::SeqCst)
    }

    /// Connections closed at once since the start: the cap was reached and none was idle.
    pub fn refused(&self) -> u64 {
        self.shared.refused.load(Ordering::Relaxed)
    }

    /// Idle connections closed since the start to make room for new ones.
    pub fn evicted(&self) -> u64 {
        self.shared.evicted.load(Ordering::Relaxed)
    }

    /// Graceful stop: no new connections; idle ones close now, busy ones after their request.
    pub fn shutdown(&self) {
        self.shared.stop.set();
    }

    /// Hard stop: also drop the connections still serving a request.
    pub fn abort(&self) {
        self.shared.stop.set();
        self.shared.abort.set();
    }

    /// Wait until the listener is closed and every connection has ended.
    pub async fn stopped(&self) {
        self.shared.done.wait().await;
    }

    /// Shut down, give busy connections `grace` to finish, then abort the rest; whether every
    /// connection finished within the grace period.
    pub async fn stop<C: Clock>(&self, clock: &C, grace: Duration) -> bool {
        self.shutdown();
        if timeout(clock, grace, self.stopped()).await.is_ok() {
            return true;
        }
        self.abort();
        self.stopped().await;
        false
    }
}

/// Bind `addr` and serve every connection with `handler` on `rt` until the handle stops it.
pub async fn serve<R, H>(
    rt: &R,
    addr: SocketAddr,
    config: ServerConfig,
    handler: Arc<H>,
) -> Result<ServerHandle, ErrorKind>
where
    R: Runtime,
    H: Handler + 'static,
{
    let listener = rt.bind(addr).await?;
    serve_listener(rt, listener, config, handler)
}

/// Serve every connection `listener` accepts (a TLS listener from an adapter, say) with
/// `handler` on `rt` until the handle stops it.
///
/// Each connection is established ([`Listener::establish`]: the TLS handshake) in its own
/// task, within [`ServerConfig::header_timeout`]; one that fails or times out is dropped. At
/// most [`ServerConfig::max_connections`] are served at once (see there). Meanwhile the pool
/// is trimmed to [`ServerConfig::pool_idle_bytes`] every [`POOL_TRIM_INTERVAL`].
pub fn serve_listener<R, L, H>(
    rt: &R,
    listener: L,
    config: ServerConfig,
    handler: Arc<H>,
) -> Result<ServerHandle, ErrorKind>
where
    R: Runtime,
    L: Listener,
    H: Handler + 'static,
{
    let local_addr = listener.local_addr()?;
    let shared = Arc::new(ServerShared::default());
    shared.accepting.store(true, Ordering::SeqCst);
    if config.pool_idle_bytes != usize::MAX {
        let trim = trim_pool(rt.clone(), config, shared.clone());
        drop(rt.spawn(trim));
    }
    // Dropping the join handle detaches the loop; the handle controls it.
    drop(rt.spawn(accept_loop(
        rt.clone(),
        listener,
        config,
        handler,
        shared.clone(),
    )));
    Ok(ServerHandle { local_addr, shared })
}

/// Trim the pool to [`ServerConfig::pool_idle_bytes`] every [`POOL_TRIM_INTERVAL`] (then call
/// [`ServerConfig::after_trim`]) until the server stops.
async fn trim_pool<R: Runtime>(rt: R, config: ServerConfig, shared: Arc<ServerShared>) {
    while let Either::Left(()) = race(rt.sleep(POOL_TRIM_INTERVAL), shared.stop.wait()).await {
        config.pool.trim(config.pool_idle_bytes);
        if let Some(after) = config.after_trim {
            after();
        }
    }
}

async fn accept_loop<R: Runtime, L: Listener, H: Handler + 'static>(
    rt: R,
    listener: L,
    config: ServerConfig,
    handler: Arc<H>,
    shared: Arc<ServerShared>,
) {
    let config = Arc::new(config);
    let mut backoff = ACCEPT_BACKOFF_MIN;
    while !shared.stop.is_set() {
        match race(listener.accept(), shared.stop.wait()).await {
            Either::Left(Ok((accepted, peer))) => {
                backoff = ACCEPT_BACKOFF_MIN;
                shared.accepted.fetch_add(1, Ordering::SeqCst);
                if !shared.admit(config.max_connections) {
                    // Closed before any byte is read or written: a refusal costs no task.
                    drop(accepted);
                    continue;
                }
                shared.active.fetch_add(1, Ordering::SeqCst);
                let guard = ActiveGuard(shared.clone());
                let (clock, config, handler) = (rt.clone(), config.clone(), handler.clone());
                drop(rt.spawn(async move {
                    let shared = &*guard.0;
                    let conn = async {
                        // Plain TCP is ready at once (no timer); a connection still in its
                        // handshake has no request yet, so a stop drops it.
                        let setup = timeout(&clock, config.header_timeout, L::establish(accepted));
                        if let Either::Left(Ok(Ok(stream))) = race(setup, shared.stop.wait()).await
                        {
                            let (config, handler) = (&*config, &*handler);
                            serve_accepted(
                                clock.clone(),
                                stream,
                                peer,
                                config,
                                handler,
                                &shared.stop,
                                &shared.idle,
                            )
                            .await;
                        }
                    };
                    race(conn, shared.abort.wait()).await;
                    drop(guard);
                }));
            }
            // A connection that went away before it was accepted: the next one is another.
            Either::Left(Err(
                ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::Interrupted,
            )) => {}
            // Out of descriptors or memory: the connection stays queued and the listener
            // readable, so trying again at once would spin. Make room (an idle connection
            // goes) and wait for a connection to end, or a growing while for descriptors
            // held elsewhere.
            Either::Left(Err(_)) => {
                shared.evict_one();
                let ended = async {
                    event_listener::listener!(shared.ended => ended);
                    ended.await;
                };
                let pause = race(race(ended, rt.sleep(backoff)), shared.stop.wait());
                pause.await;
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
            }
            Either::Right(()) => break,
        }
    }
    drop(listener);
    shared.accepting.store(false, Ordering::SeqCst);
    if shared.active.load(Ordering::SeqCst) == 0 {
        shared.done.set();
    }
}
