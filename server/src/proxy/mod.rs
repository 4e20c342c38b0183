//! The frontend proxy (`ferry proxy`): one S3 endpoint in front of many backends.
//!
//! Every object request goes to the backend that weighted rendezvous hashing
//! ([`Placement`]) picks for its `(bucket, key)`, so proxies agree without sharing state.
//! Bodies stream through pooled buffers in both directions (no whole-object buffering); a
//! client that goes away mid-upload takes the backend request down with it, so no partial
//! object is ever committed. Bucket operations and listings fan out to every backend and are
//! merged; copies between backends are done by the proxy, streamed.
//!
//! The S3 front ([`crate::front`]) checks every client signature; the proxy's dispatch
//! ([`handler`]) then either forwards the request unchanged (passthrough, when the backend
//! shares the keys) or re-signs it with the backend's key (see [`forward`]). Health comes from active probes and failed connections;
//! a request for a backend that is down waits for it within the retry window (a restarting
//! node), then answers `503 SlowDown` with `Retry-After` (see [`backend::Backend::conn_until`]).

mod backend;
mod buckets;
mod config;
mod context;
mod copy;
mod cors;
mod encryption;
mod forward;
mod handler;
mod health;
mod layout;
mod lifecycle;
mod list;
mod metrics;
mod sign;
mod sync;
mod tagging;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use ferry_core::http::client::ClientConfig;
use ferry_core::http::head::HeadLimits;
use ferry_core::place::Placement;
use ferry_core::pool::BufferPool;
use ferry_core::rt::{Runtime, Signal};
use ferry_core::s3::sigv4::{Credentials, MemoryCredentials, SharedSigningKeyCache, sha256};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use ferry_net::NetRuntime;
use ferry_net::rustls::ClientConfig as TlsClientConfig;
use ferry_net::rustls::pki_types::ServerName;

use crate::front::Auth;
use crate::front::serve::Listen;
use crate::service::{self, Server, ServiceHandle};
use crate::tls::TlsFiles;

pub use config::{AuthMode, BackendConfig, BackendKind, DEFAULT_BUFFER_SIZE, Layout, ProxyConfig};
pub use handler::ProxyApi;

use backend::{Backend, BackendConnector, BackendLimits, TlsConnect, TlsConnecting};

/// Signing keys cached (one per access key, region and day).
const KEY_CACHE: usize = 64;

/// Descriptors a proxy's client connection may hold: its socket and the splice pipe it keeps
/// (two ends), and a backend connection with its own pipe (the default connection cap divides
/// the open-file limit by this).
const PROXY_FDS_PER_CONNECTION: u64 = 6;

/// The proxy's shared state: backends, placement, keys.
pub(crate) struct Proxy<R: Runtime> {
    pub rt: R,
    pub backends: Vec<Backend<R>>,
    pub placement: Placement,
    /// Placements of the layouts being drained, newest first (indices into `backends`).
    pub previous: Vec<Placement>,
    /// The clients' keys (to sign for backends that accept them).
    pub credentials: MemoryCredentials,
    /// Signing keys of outbound requests.
    pub keys: SharedSigningKeyCache,
    pub region: String,
    /// HMAC key of continuation tokens.
    pub token_key: [u8; 32],
    /// Size of re-framed aws-chunked chunks and other body buffers.
    pub buffer_size: usize,
    /// Bytes copied between backends by the proxy.
    pub copied: AtomicU64,
    /// The key the proxy signs its own requests with (CORS rules for anonymous preflights)
    /// where a backend shares the clients' keys: the first configured.
    pub own_key: String,
    /// Buckets' CORS rules, kept a few seconds (`cors`).
    pub cors: cors::CorsCache,
    /// Every client access key (configured and users'), for the proxy's own bucket checks
    /// (`sync::check`).
    pub client_keys: Vec<String>,
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

    /// Every backend `(bucket, key)` may live on: its current owner first, then its owners
    /// under the layouts being drained, newest first, each once.
    pub fn owners(&self, bucket: &str, key: &str) -> Vec<usize> {
        let mut out = vec![self.pick(bucket, key)];
        for placement in &self.previous {
            let i = placement.pick(bucket, key);
            if !out.contains(&i) {
                out.push(i);
            }
        }
        out
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

    /// Wait for the backends being checked (each within the retry window since its check
    /// began: `Backend::checked`), so that requests that ask whether backends are up (fan-outs,
    /// reads from any backend) see the state the check leads to, not the check.
    pub async fn settle(&self) {
        for b in &self.backends {
            if b.is_checking() {
                b.checked().await;
            }
        }
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
pub type ProxyHandle = ServiceHandle;

/// Resolved backends: `(config, host header, address, TLS for an https:// one)`.
type Resolved = Vec<(BackendConfig, String, SocketAddr, Option<BackendTls>)>;

/// How the proxy speaks TLS to an `https://` backend: the trust anchors and the name its
/// certificate must have.
#[derive(Debug, Clone)]
struct BackendTls {
    config: Arc<TlsClientConfig>,
    name: ServerName<'static>,
}

impl BackendTls {
    /// For `b`, if its URL is `https://`: the webpki roots plus its `ca_cert`, or no
    /// verification with `insecure`; the URL's host as the expected name (and SNI, unless an
    /// IP address).
    fn of(b: &BackendConfig) -> io::Result<Option<Self>> {
        if !b.is_tls() {
            return Ok(None);
        }
        let ca = match &b.ca_cert {
            Some(path) => Some(std::fs::read(path).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("backend {:?}: ca_cert {}: {e}", b.id, path.display()),
                )
            })?),
            None => None,
        };
        let named = |e: io::Error| io::Error::new(e.kind(), format!("backend {:?}: {e}", b.id));
        let config = ferry_net::client_config(ca.as_deref(), b.insecure).map_err(named)?;
        let host = b.host_name().unwrap_or_default();
        let name = ferry_net::server_name(host).map_err(named)?;
        Ok(Some(Self { config, name }))
    }

    /// The connector of a backend on `R`.
    fn connector<R: NetRuntime>(&self) -> BackendConnector<R> {
        let (config, name) = (self.config.clone(), self.name.clone());
        let connect: Arc<TlsConnect<R>> = Arc::new(move |rt: R, addr| {
            let (config, name) = (config.clone(), name.clone());
            let connecting: TlsConnecting<R::Stream> =
                Box::pin(async move { rt.connect_tls(addr, config, name).await });
            connecting
        });
        BackendConnector::tls(connect)
    }
}

/// Start the proxy on `cfg.runtime`; returns once both listeners accept connections.
pub fn start_proxy(cfg: ProxyConfig) -> io::Result<ProxyHandle> {
    cfg.validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut resolved: Resolved = Vec::new();
    for b in &cfg.backends {
        let (host, addr) = b.resolve()?;
        let tls = BackendTls::of(b)?;
        resolved.push((b.clone(), host, addr, tls));
    }
    let listen = Listen {
        s3: cfg.listen,
        tls: cfg.tls.as_ref().map(TlsFiles::load).transpose()?,
        admin: cfg.admin_listen,
        head_limits: head_limits(cfg.buffer_size),
        limits: cfg.limits,
        fds_per_connection: PROXY_FDS_PER_CONNECTION,
    };
    let (runtime, threads) = (cfg.runtime, cfg.threads);
    service::start(ProxyServer { cfg, resolved }, runtime, threads, listen)
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

fn build<R: NetRuntime>(rt: R, cfg: &ProxyConfig, resolved: Resolved) -> S3Result<Proxy<R>> {
    let client = ClientConfig {
        head_limits: head_limits(cfg.buffer_size),
        connect_timeout: cfg.connect_timeout,
        read_timeout: cfg.io_timeout,
        write_timeout: cfg.io_timeout,
        ..ClientConfig::new(BufferPool::global())
    };
    let ids: Vec<(&str, u32)> = resolved
        .iter()
        .map(|(b, _, _, _)| (b.id.as_str(), b.weight))
        .collect();
    let placement = Placement::new(&ids)
        .map_err(|e| S3Error::with_message(S3ErrorCode::InvalidArgument, e.to_string()))?;
    let mut previous = Vec::with_capacity(cfg.previous_layouts.len());
    for layout in &cfg.previous_layouts {
        // Over every backend, so that its indices are the backends' own.
        let ids: Vec<(&str, u32)> = resolved
            .iter()
            .map(|(b, _, _, _)| {
                let w = layout.weights.iter().find(|(id, _)| *id == b.id);
                (b.id.as_str(), w.map_or(0, |(_, w)| *w))
            })
            .collect();
        previous.push(Placement::new(&ids).map_err(|e| {
            S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                format!("layout {}: {e}", layout.version),
            )
        })?);
    }
    let backends = resolved
        .iter()
        .map(|(b, host, addr, tls)| {
            let connector = tls
                .as_ref()
                .map_or_else(BackendConnector::tcp, BackendTls::connector);
            Backend::new(
                rt.clone(),
                b,
                (host.clone(), *addr),
                &cfg.region,
                client,
                BackendLimits {
                    max_connections: cfg.backend_max_connections,
                    max_in_flight: cfg.backend_max_in_flight,
                    retry_window: cfg.retry_window,
                },
                connector,
            )
        })
        .collect();
    let mut credentials = MemoryCredentials::new();
    for c in &cfg.credentials {
        credentials.insert(&c.access_key_id, &c.secret_access_key);
    }
    for u in &cfg.users {
        credentials.insert(&u.access_key, &u.secret_key);
    }
    Ok(Proxy {
        rt,
        backends,
        placement,
        previous,
        credentials,
        keys: SharedSigningKeyCache::new(KEY_CACHE),
        region: cfg.region.clone(),
        token_key: token_key(cfg),
        buffer_size: cfg.buffer_size,
        copied: AtomicU64::new(0),
        own_key: cfg
            .credentials
            .first()
            .map(|c| c.access_key_id.clone())
            .or_else(|| cfg.users.first().map(|u| u.access_key.clone()))
            .unwrap_or_default(),
        cors: cors::CorsCache::default(),
        client_keys: cfg
            .credentials
            .iter()
            .map(|c| c.access_key_id.clone())
            .chain(cfg.users.iter().map(|u| u.access_key.clone()))
            .collect(),
    })
}

/// The proxy before it runs: its configuration and resolved backends.
struct ProxyServer {
    cfg: ProxyConfig,
    resolved: Resolved,
}

impl Server for ProxyServer {
    type Api<R: NetRuntime> = ProxyApi<R>;

    const NAME: &'static str = "proxy";

    fn build<R: NetRuntime>(self, rt: &R, stop: &Arc<Signal>) -> io::Result<(ProxyApi<R>, Auth)> {
        let cfg = self.cfg;
        let proxy = build(rt.clone(), &cfg, self.resolved)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let proxy = Arc::new(proxy);
        for b in &proxy.backends {
            let auth = if b.passthrough {
                "passthrough"
            } else {
                "resign"
            };
            let scheme = if b.is_tls() { "https" } else { "http" };
            tracing::info!(backend = %b.id, addr = %b.addr, auth = %auth, scheme, "backend configured");
        }
        for b in cfg.backends.iter().filter(|b| b.insecure) {
            tracing::warn!(
                backend = %b.id,
                "insecure = true: the backend's TLS certificate is not verified"
            );
        }
        // Detached: the probes stop with the stop signal.
        drop(rt.spawn(health::probe_loop(
            proxy.clone(),
            stop.clone(),
            cfg.health_interval,
            cfg.health_jitter,
        )));
        let auth = Auth::new(proxy.credentials.clone(), &cfg.region)
            .with_sigv2(cfg.sigv2)
            .with_domains(&cfg.domains);
        Ok((ProxyApi::new(proxy), auth))
    }
}
