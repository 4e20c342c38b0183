//! The accept loop: one task per connection, graceful and hard stops.

use alloc::sync::Arc;
use core::net::SocketAddr;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use core::time::Duration;

use embedded_io::ErrorKind;

use super::conn::serve_connection_from;
use super::{Handler, ServerConfig};
use crate::rt::{Clock, Either, Listener, Runtime, Signal, race, timeout};

/// Counters and controls shared by the accept loop, its connections and the handle.
#[derive(Debug, Default)]
struct ServerShared {
    stop: Signal,
    abort: Signal,
    done: Signal,
    accepting: AtomicBool,
    accepted: AtomicU64,
    active: AtomicUsize,
}

impl ServerShared {
    fn connection_ended(&self) {
        if self.active.fetch_sub(1, Ordering::SeqCst) == 1 && !self.accepting.load(Ordering::SeqCst)
        {
            self.done.set();
        }
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
/// task, within [`ServerConfig::header_timeout`]; one that fails or times out is dropped.
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

async fn accept_loop<R: Runtime, L: Listener, H: Handler + 'static>(
    rt: R,
    listener: L,
    config: ServerConfig,
    handler: Arc<H>,
    shared: Arc<ServerShared>,
) {
    let config = Arc::new(config);
    while !shared.stop.is_set() {
        match race(listener.accept(), shared.stop.wait()).await {
            Either::Left(Ok((accepted, peer))) => {
                shared.accepted.fetch_add(1, Ordering::SeqCst);
                shared.active.fetch_add(1, Ordering::SeqCst);
                let guard = ActiveGuard(shared.clone());
                let (clock, config, handler) = (rt.clone(), config.clone(), handler.clone());
                drop(rt.spawn(async move {
                    let stop = &guard.0.stop;
                    let conn = async {
                        // Plain TCP is ready at once (no timer); a connection still in its
                        // handshake has no request yet, so a stop drops it.
                        let setup = timeout(&clock, config.header_timeout, L::establish(accepted));
                        if let Either::Left(Ok(Ok(stream))) = race(setup, stop.wait()).await {
                            let (config, handler) = (&*config, &*handler);
                            serve_connection_from(
                                clock.clone(),
                                stream,
                                Some(peer),
                                config,
                                handler,
                                Some(stop),
                            )
                            .await;
                        }
                    };
                    race(conn, guard.0.abort.wait()).await;
                    drop(guard);
                }));
            }
            // Out of descriptors or a connection reset before accept: back off briefly.
            Either::Left(Err(_)) => {
                let _ = race(rt.sleep(Duration::from_millis(10)), shared.stop.wait()).await;
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
