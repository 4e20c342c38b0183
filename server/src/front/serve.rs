//! Starting a front's two listeners (S3, optionally TLS; admin, plain on loopback) and
//! draining them at the end: the life cycle node and proxy share.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ferry_core::http::head::HeadLimits;
use ferry_core::http::server::{ServerConfig, ServerHandle, serve};
use ferry_core::rt::Clock;
use ferry_core::s3::body::MAX_OBJECT_SIZE;
use ferry_net::{NetRuntime, rustls};

use super::admin::AdminHandler;
use super::{Front, S3Api};
use crate::limits::ConnLimits;

/// Where a front listens.
#[derive(Debug, Clone)]
pub(crate) struct Listen {
    /// The S3 listener's address.
    pub s3: SocketAddr,
    /// HTTPS for the S3 listener.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The admin listener's address (plain HTTP), if any.
    pub admin: Option<SocketAddr>,
    /// Head limits of the S3 listener (the proxy sizes its connection buffers with them).
    pub head_limits: HeadLimits,
    /// Limits on the S3 listener's connections.
    pub limits: ConnLimits,
    /// Descriptors one S3 connection may hold, which the default connection cap divides the
    /// open-file limit by.
    pub fds_per_connection: u64,
}

/// Connections the admin listener keeps open at once: it serves monitoring, not clients.
const ADMIN_MAX_CONNECTIONS: usize = 64;

/// The HTTP engine's limits for an S3 listener.
pub(crate) fn s3_server_config(listen: &Listen) -> ServerConfig {
    let mut config = ServerConfig {
        head_limits: listen.head_limits,
        // aws-chunked framing makes a 5 GiB object's body a little longer than 5 GiB; the
        // body verifier enforces the object size limit on the decoded length.
        max_body_len: MAX_OBJECT_SIZE + (64 << 20),
        after_trim: Some(crate::memory::release_freed),
        ..ServerConfig::default()
    };
    listen.limits.apply(&mut config, listen.fds_per_connection);
    config
}

/// A front's running listeners.
#[derive(Debug)]
pub(crate) struct Listeners {
    /// The S3 listener.
    pub s3: ServerHandle,
    /// The admin listener.
    pub admin: Option<ServerHandle>,
}

fn bind_error<K>(addr: SocketAddr, kind: K) -> io::Error
where
    io::ErrorKind: From<K>,
{
    let kind = io::ErrorKind::from(kind);
    io::Error::new(kind, format!("cannot listen on {addr}: {kind}"))
}

/// Start serving `front` on the S3 listener and its admin side on the admin listener.
pub(crate) async fn start<R: NetRuntime, A: S3Api>(
    rt: &R,
    front: Arc<Front<A>>,
    listen: Listen,
) -> io::Result<Listeners> {
    let config = s3_server_config(&listen);
    let s3 = ferry_net::serve(rt, listen.s3, listen.tls, config, front.clone())
        .await
        .map_err(|k| bind_error(listen.s3, k))?;
    tracing::debug!(
        listen = %listen.s3, max_connections = config.max_connections,
        header_timeout = ?config.header_timeout, idle_timeout = ?config.idle_timeout,
        body_timeout = ?config.body_timeout, min_body_rate = config.min_body_rate,
        "connection limits"
    );
    front.listening(s3.clone());
    let admin = match listen.admin {
        None => None,
        Some(addr) => {
            let handler = Arc::new(AdminHandler::new(front, rt.clone()));
            let config = ServerConfig {
                max_connections: ADMIN_MAX_CONNECTIONS,
                ..ServerConfig::default()
            };
            match serve(rt, addr, config, handler).await {
                Ok(a) => Some(a),
                Err(kind) => {
                    s3.abort();
                    return Err(bind_error(addr, kind));
                }
            }
        }
    };
    Ok(Listeners { s3, admin })
}

impl Listeners {
    /// The S3 and admin addresses.
    pub(crate) fn addrs(&self) -> (SocketAddr, Option<SocketAddr>) {
        (
            self.s3.local_addr(),
            self.admin.as_ref().map(ServerHandle::local_addr),
        )
    }

    /// Stop at once: nobody waits for the server any more.
    pub(crate) fn abort(&self) {
        self.s3.abort();
        if let Some(a) = &self.admin {
            a.abort();
        }
    }

    /// Graceful stop of `server` (`node`, `proxy`): no new connections, requests in flight
    /// may finish within `grace`, then the admin listener goes; whether all finished in time.
    pub(crate) async fn drain<C: Clock>(self, clock: &C, grace: Duration, server: &str) -> bool {
        let listen = self.s3.local_addr();
        tracing::info!(
            listen = %listen, open_connections = self.s3.active(),
            "{server} draining: no new connections, requests in flight may finish"
        );
        let drained = self.s3.stop(clock, grace).await;
        if let Some(a) = &self.admin {
            a.stop(clock, Duration::from_secs(1)).await;
        }
        if drained {
            tracing::info!(listen = %listen, "{server} stopped");
        } else {
            tracing::warn!(
                listen = %listen, grace = ?grace,
                "{server} stopped: requests still running after the grace period were dropped"
            );
        }
        drained
    }
}
