//! The frontend proxy (`ferry proxy`): one S3 endpoint in front of many backends.
//!
//! Every object request goes to the backend that weighted rendezvous hashing
//! ([`Placement`]) picks for its `(bucket, key)`, so proxies agree without sharing state.
//! Bodies stream through pooled buffers in both directions (no whole-object buffering); a
//! client that goes away mid-upload takes the backend request down with it, so no partial
//! object is ever committed. Bucket operations and listings fan out to every backend and are
//! merged; copies between backends are done by the proxy, streamed.
//!
//! The proxy checks every client signature itself and then either forwards the request
//! unchanged (passthrough, when the backend shares the keys) or re-signs it with the
//! backend's key (see [`forward`]). Health comes from active probes and failed connections;
//! a backend that is down answers `503 ServiceUnavailable` at once.

mod admin;
mod backend;
mod buckets;
mod config;
mod copy;
mod forward;
mod handler;
mod health;
mod list;
mod metrics;
mod sign;

use std::io;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ferry_core::http::client::ClientConfig;
use ferry_core::http::head::HeadLimits;
use ferry_core::http::server::{ServerConfig, ServerHandle, serve};
use ferry_core::place::Placement;
use ferry_core::pool::BufferPool;
use ferry_core::rt::{Runtime, Signal};
use ferry_core::s3::request::AddressingConfig;
use ferry_core::s3::sigv4::{Credentials, MemoryCredentials, SharedSigningKeyCache, sha256};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use crate::node::handler::RequestIds;
use crate::service::{ServiceThread, spawn_service};
use crate::tls::TlsFiles;
use ferry_net::{NetRuntime, rustls};
use ferry_runtime::OnRuntime;

pub use config::{AuthMode, BackendConfig, BackendKind, DEFAULT_BUFFER_SIZE, ProxyConfig};
pub use handler::ProxyHandler;

use backend::Backend;
use metrics::Metrics;

/// How long a graceful stop lets requests in progress finish.
const STOP_GRACE: Duration = Duration::from_secs(30);
/// Signing keys cached (one per access key, region and day).
const KEY_CACHE: usize = 64;

/// The proxy's shared state: backends, placement, keys, metrics.
pub(crate) struct Proxy<R: Runtime> {
    pub rt: R,
    pub backends: Vec<Backend<R>>,
    pub placement: Placement,
    pub credentials: MemoryCredentials,
    pub keys: SharedSigningKeyCache,
    pub region: String,
    pub addressing: AddressingConfig,
    pub ids: RequestIds,
    /// HMAC key of continuation tokens.
    pub token_key: [u8; 32],
    /// Size of re-framed aws-chunked chunks and other body buffers.
    pub buffer_size: usize,
    pub metrics: Metrics,
    /// The S3 listener, once started (open connections for `/metrics`).
    pub server: OnceLock<ServerHandle>,
}

impl<R: Runtime> std::fmt::Debug for Proxy<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("backends", &self.backends)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> Proxy<R> {
    /// The index of the backend that holds `(bucket, key)`.
    pub fn pick(&self, bucket: &str, key: &str) -> usize {
        self.placement.pick(bucket, key)
    }

    /// The first healthy backend in the fallback order of `bucket` (bucket-level reads).
    pub fn any_healthy(&self, bucket: &str) -> S3Result<usize> {
        let mut order = Vec::with_capacity(self.backends.len());
        self.placement.ranked(bucket, "", &mut order);
        // Weight-0 backends still hold buckets: try them last.
        let rest: Vec<usize> = (0..self.backends.len())
            .filter(|i| !order.contains(i))
            .collect();
        order.extend(rest);
        order
            .into_iter()
            .find(|&i| self.backends.get(i).is_some_and(Backend::is_up))
            .ok_or_else(|| {
                S3Error::with_message(S3ErrorCode::ServiceUnavailable, "No backend is available.")
            })
    }

    /// The key to sign requests to backend `b` with, for a client that used `client_key`.
    pub fn credentials_for(&self, b: &Backend<R>, client_key: &str) -> S3Result<Credentials> {
        if let Some(c) = &b.credentials {
            return Ok(c.clone());
        }
        use ferry_core::s3::sigv4::CredentialStore as _;
        let secret = self
            .credentials
            .secret_key(client_key)
            .ok_or_else(|| S3Error::new(S3ErrorCode::InvalidAccessKeyId))?;
        Ok(Credentials::new(client_key, secret.into_owned()))
    }
}

/// A running proxy; its runtime runs on threads of its own. Dropping it stops the proxy.
#[derive(Debug)]
pub struct ProxyHandle {
    local_addr: SocketAddr,
    admin_addr: Option<SocketAddr>,
    service: ServiceThread,
}

impl ProxyHandle {
    /// The S3 listener's address (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The admin listener's address, if it has one.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin_addr
    }

    /// Graceful stop: stop accepting, let requests in progress finish (up to 30 s), join the
    /// runtime's threads.
    pub fn stop(mut self) {
        self.service.shutdown();
    }
}

/// Resolved backends: `(config, host header, address)`.
type Resolved = Vec<(BackendConfig, String, SocketAddr)>;

/// Start the proxy on `cfg.runtime`; returns once both listeners accept connections.
pub fn start_proxy(cfg: ProxyConfig) -> io::Result<ProxyHandle> {
    cfg.validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut resolved: Resolved = Vec::new();
    for b in &cfg.backends {
        let (host, addr) = b.resolve()?;
        resolved.push((b.clone(), host, addr));
    }
    let tls = cfg.tls.as_ref().map(TlsFiles::load).transpose()?;
    let ((local_addr, admin_addr), service) = spawn_service("ferry-proxy", move |ready, stop| {
        let (kind, threads) = (cfg.runtime, cfg.threads);
        let proxy = ProxyTask {
            cfg,
            tls,
            resolved,
            ready,
            stop,
        };
        ferry_runtime::block_on(kind, threads, proxy)
    })?;
    Ok(ProxyHandle {
        local_addr,
        admin_addr,
        service,
    })
}

/// Head limits that make the engines' pooled connection buffers (`2 * max_head_len`) the
/// configured buffer size: bodies are relayed straight from those buffers.
fn head_limits(buffer_size: usize) -> HeadLimits {
    HeadLimits {
        max_head_len: (buffer_size / 2).max(HeadLimits::default().max_head_len),
        ..HeadLimits::default()
    }
}

/// The key continuation tokens are authenticated with.
fn token_key(cfg: &ProxyConfig) -> [u8; 32] {
    match &cfg.token_secret {
        Some(s) => sha256(s),
        None => {
            // Derived from the client keys, so identically configured proxies agree.
            let mut material = b"ferry-proxy-list-token\n".to_vec();
            let mut creds: Vec<&Credentials> = cfg.credentials.iter().collect();
            creds.sort_by(|a, b| a.access_key_id.cmp(&b.access_key_id));
            for c in creds {
                material.extend_from_slice(c.access_key_id.as_bytes());
                material.push(0);
                material.extend_from_slice(c.secret_access_key.as_bytes());
                material.push(0);
            }
            sha256(&material)
        }
    }
}

fn build<R: Runtime>(rt: R, cfg: &ProxyConfig, resolved: Resolved) -> S3Result<Proxy<R>> {
    let client = ClientConfig {
        head_limits: head_limits(cfg.buffer_size),
        connect_timeout: cfg.connect_timeout,
        read_timeout: cfg.io_timeout,
        write_timeout: cfg.io_timeout,
        ..ClientConfig::new(BufferPool::global())
    };
    let ids: Vec<(&str, u32)> = resolved
        .iter()
        .map(|(b, _, _)| (b.id.as_str(), b.weight))
        .collect();
    let placement = Placement::new(&ids)
        .map_err(|e| S3Error::with_message(S3ErrorCode::InvalidArgument, e.to_string()))?;
    let backends = resolved
        .iter()
        .map(|(b, host, addr)| {
            Backend::new(rt.clone(), b, host.clone(), *addr, &cfg.region, client)
        })
        .collect();
    let mut credentials = MemoryCredentials::new();
    for c in &cfg.credentials {
        credentials.insert(&c.access_key_id, &c.secret_access_key);
    }
    Ok(Proxy {
        rt,
        backends,
        placement,
        credentials,
        keys: SharedSigningKeyCache::new(KEY_CACHE),
        region: cfg.region.clone(),
        addressing: AddressingConfig::path_style(),
        ids: RequestIds::new(),
        token_key: token_key(cfg),
        buffer_size: cfg.buffer_size,
        metrics: Metrics::default(),
        server: OnceLock::new(),
    })
}

type Ready = mpsc::Sender<io::Result<(SocketAddr, Option<SocketAddr>)>>;

fn bind_error<K>(addr: SocketAddr, kind: K) -> io::Error
where
    io::ErrorKind: From<K>,
{
    let kind = io::ErrorKind::from(kind);
    io::Error::new(kind, format!("cannot listen on {addr}: {kind}"))
}

/// [`run`]'s arguments, to run it on the runtime the configuration names.
struct ProxyTask {
    cfg: ProxyConfig,
    tls: Option<Arc<rustls::ServerConfig>>,
    resolved: Resolved,
    ready: Ready,
    stop: Arc<Signal>,
}

impl OnRuntime for ProxyTask {
    type Output = ();

    async fn run<R: NetRuntime>(self, rt: R) {
        run(rt, self.cfg, self.tls, self.resolved, self.ready, self.stop).await
    }
}

/// The proxy's life on runtime `rt`: serve until `stop` is set, then stop gracefully.
async fn run<R: NetRuntime>(
    rt: R,
    cfg: ProxyConfig,
    tls: Option<Arc<rustls::ServerConfig>>,
    resolved: Resolved,
    ready: Ready,
    stop: Arc<Signal>,
) {
    let proxy = match build(rt.clone(), &cfg, resolved) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            let _ = ready.send(Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                e.to_string(),
            )));
            return;
        }
    };
    let server_config = ServerConfig {
        head_limits: head_limits(cfg.buffer_size),
        // aws-chunked framing makes a 5 GiB body a little longer.
        max_body_len: (5 << 30) + (64 << 20),
        ..ServerConfig::default()
    };
    let handler = Arc::new(ProxyHandler::new(proxy.clone()));
    // The S3 listener speaks TLS if configured; the admin one stays plain HTTP.
    let server = match ferry_net::serve(&rt, cfg.listen, tls, server_config, handler).await {
        Ok(s) => s,
        Err(kind) => {
            let _ = ready.send(Err(bind_error(cfg.listen, kind)));
            return;
        }
    };
    let _ = proxy.server.set(server.clone());
    let admin = match cfg.admin_listen {
        None => None,
        Some(addr) => {
            let h = Arc::new(admin::AdminHandler::new(proxy.clone()));
            match serve(&rt, addr, ServerConfig::default(), h).await {
                Ok(s) => Some(s),
                Err(kind) => {
                    server.abort();
                    let _ = ready.send(Err(bind_error(addr, kind)));
                    return;
                }
            }
        }
    };
    let health = rt.spawn(health::probe_loop(
        proxy.clone(),
        stop.clone(),
        cfg.health_interval,
    ));
    let addrs = (
        server.local_addr(),
        admin.as_ref().map(ServerHandle::local_addr),
    );
    if ready.send(Ok(addrs)).is_err() {
        server.abort();
        if let Some(a) = &admin {
            a.abort();
        }
        stop.set();
        health.await;
        return;
    }
    let admin_addr = addrs.1.map_or_else(|| "none".to_owned(), |a| a.to_string());
    tracing::info!(
        listen = %addrs.0, admin = %admin_addr, runtime = %cfg.runtime,
        backends = proxy.backends.len(), "proxy listening"
    );
    for b in &proxy.backends {
        let auth = if b.passthrough {
            "passthrough"
        } else {
            "resign"
        };
        tracing::info!(backend = %b.id, addr = %b.addr, auth = %auth, "backend configured");
    }
    stop.wait().await;
    tracing::info!(
        open_connections = server.active(),
        "proxy draining: no new connections, requests in flight may finish"
    );
    let drained = server.stop(&rt, STOP_GRACE).await;
    if let Some(a) = &admin {
        a.stop(&rt, Duration::from_secs(1)).await;
    }
    health.await;
    if drained {
        tracing::info!("proxy stopped");
    } else {
        tracing::warn!(grace = ?STOP_GRACE, "proxy stopped: requests still running after the grace period were dropped");
    }
}
