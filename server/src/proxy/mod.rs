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
mod client;
mod config;
mod context;
mod copy;
mod cors;
mod forward;
mod handler;
mod health;
mod layout;
mod list;
mod metrics;
pub mod rebalance;
mod reissue;
mod reload;
mod sign;
mod sync;
mod tagging;
mod transfer;
mod upload;
mod upload_tag;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};

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
pub use reload::ReloadSource;

use backend::{Backend, BackendConnector, BackendLimits, BackendSpec, TlsConnect, TlsConnecting};

/// Signing keys cached (one per access key, region and day).
const KEY_CACHE: usize = 64;

/// Descriptors a proxy's client connection may hold: its socket and the splice pipe it keeps
/// (two ends), and a backend connection with its own pipe (the default connection cap divides
/// the open-file limit by this).
const PROXY_FDS_PER_CONNECTION: u64 = 6;

/// What the proxy keeps for its whole life, whatever a reload changes: keys, region, caches,
/// counters. (Reloads change the backends and layouts: [`Proxy`].)
pub(crate) struct Shared<R: Runtime> {
    pub rt: R,
    /// The clients' keys (to sign for backends that accept them).
    pub credentials: MemoryCredentials,
    /// Signing keys of outbound requests.
    pub keys: SharedSigningKeyCache,
    pub region: String,
    /// Whether SigV2 is accepted (`ProxyConfig::sigv2`): in POST forms as in requests.
    pub sigv2: bool,
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
    /// Every backend id configured since the start, in the order first seen: a backend's
    /// `slot`, which names it in logs whichever configuration a request ran under.
    names: Mutex<Vec<Arc<str>>>,
}

impl<R: Runtime> Shared<R> {
    /// The slot of backend `id`: its place in [`Shared::names`], added if new.
    fn slot(&self, id: &str) -> usize {
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = names.iter().position(|n| &**n == id) {
            return i;
        }
        names.push(Arc::from(id));
        names.len() - 1
    }

    /// The id of the backend in `slot`.
    pub fn name_of(&self, slot: usize) -> Option<Arc<str>> {
        let names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        names.get(slot).cloned()
    }
}

/// One configuration of the proxy, as requests see it: the backends, the current placement
/// and the layouts being drained, over the [`Shared`] state (`p.shared`). A request takes
/// one snapshot when it starts and uses it to the end, so a reload never shows it half of a
/// change; a backend a reload removed lives on until the last request that had it finishes
/// (see `reload`).
pub(crate) struct Proxy<R: Runtime> {
    /// The state every snapshot shares.
    pub shared: Arc<Shared<R>>,
    pub backends: Vec<Arc<Backend<R>>>,
    pub placement: Placement,
    /// Placements of the layouts being drained, newest first (indices into `backends`).
    pub previous: Vec<Placement>,
    /// The current layout's version (0 without `[[layout]]` blocks).
    pub version: u64,
    /// The cluster's keys: what goes to a Ferry node with `x-ferry-*` headers is sealed with
    /// the first (`sign::seal`).
    pub cluster: Option<ferry_core::s3::cluster::ClusterKeys>,
}

impl<R: Runtime> std::fmt::Debug for Proxy<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("backends", &self.backends)
            .field("region", &self.shared.region)
            .field("version", &self.version)
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
        self.any_healthy_but(bucket, &[])
    }

    /// [`Proxy::any_healthy`] past the backends `tried` (which failed to answer).
    pub fn any_healthy_but(&self, bucket: &str, tried: &[usize]) -> S3Result<usize> {
        let mut order = Vec::with_capacity(self.backends.len());
        self.placement.ranked(bucket, "", &mut order);
        // Weight-0 backends still hold buckets: try them last.
        let rest: Vec<usize> = (0..self.backends.len())
            .filter(|i| !order.contains(i))
            .collect();
        order.extend(rest);
        order
            .into_iter()
            .find(|&i| !tried.contains(&i) && self.backends.get(i).is_some_and(|b| b.is_up()))
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
            .shared
            .credentials
            .secret_key(client_key)
            .ok_or_else(|| S3Error::new(S3ErrorCode::InvalidAccessKeyId))?;
        Ok(Credentials::new(client_key, secret.into_owned()))
    }
}

/// A running proxy; its runtime runs on threads of its own. Dropping it stops the proxy.
#[derive(Debug)]
pub struct ProxyHandle {
    service: ServiceHandle,
    reloads: Arc<reload::Requests>,
}

impl ProxyHandle {
    /// The S3 listener's address (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.service.local_addr()
    }

    /// The admin listener's address, if it has one.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.service.admin_addr()
    }

    /// Load the configuration again from its source ([`ProxyConfig::reload`]) and apply it
    /// (what SIGHUP and `POST /admin/reload` do); waits until it is applied, saying what
    /// changed, or refused, saying why (the configuration in use is then kept).
    pub fn reload(&self) -> Result<String, String> {
        self.reloads.request().wait()
    }

    /// Graceful stop: stop accepting, let requests in progress finish (up to 30 s), close idle
    /// connections, and join the runtime's threads.
    pub fn stop(self) {
        self.service.stop();
    }
}

/// A configured backend, resolved: what decides whether a reload keeps its [`Backend`], and
/// how to speak TLS to it.
pub(crate) struct Resolved {
    spec: BackendSpec,
    tls: Option<BackendTls>,
}

/// Resolve every backend of `cfg` (names, TLS files): blocking, and the reason a start or a
/// reload is refused when something does not resolve or load.
pub(crate) fn resolve(cfg: &ProxyConfig) -> io::Result<Vec<Resolved>> {
    let mut out = Vec::with_capacity(cfg.backends.len());
    for b in &cfg.backends {
        let (host, addr) = b.resolve().map_err(|e| {
            io::Error::new(e.kind(), format!("backend {:?} ({}): {e}", b.id, b.url))
        })?;
        let (tls, ca_digest) = match BackendTls::of(b)? {
            Some((tls, digest)) => (Some(tls), digest),
            None => (None, None),
        };
        let spec = BackendSpec {
            config: b.clone(),
            host,
            addr,
            ca_digest,
            limits: BackendLimits {
                max_connections: cfg.backend_max_connections,
                max_in_flight: cfg.backend_max_in_flight,
                retry_window: cfg.retry_window,
            },
            connect_timeout: cfg.connect_timeout,
            io_timeout: cfg.io_timeout,
        };
        out.push(Resolved { spec, tls });
    }
    Ok(out)
}

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
    /// IP address). With the SHA-256 of the `ca_cert` file, so that a reload sees a file
    /// whose certificates changed.
    fn of(b: &BackendConfig) -> io::Result<Option<(Self, Option<[u8; 32]>)>> {
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
        Ok(Some((Self { config, name }, ca.as_deref().map(sha256))))
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
    let resolved = resolve(&cfg)?;
    let listen = Listen {
        s3: cfg.listen,
        tls: cfg.tls.as_ref().map(TlsFiles::load).transpose()?,
        admin: cfg.admin_listen,
        head_limits: head_limits(cfg.buffer_size),
        limits: cfg.limits,
        fds_per_connection: PROXY_FDS_PER_CONNECTION,
    };
    let (runtime, threads) = (cfg.runtime, cfg.threads);
    let reloads = Arc::new(reload::Requests::default());
    let server = ProxyServer {
        cfg,
        resolved,
        reloads: reloads.clone(),
    };
    let service = service::start(server, runtime, threads, listen)?;
    Ok(ProxyHandle { service, reloads })
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

/// The state that outlives reloads, for `cfg`.
pub(crate) fn shared<R: Runtime>(rt: R, cfg: &ProxyConfig) -> Shared<R> {
    let mut credentials = MemoryCredentials::new();
    for c in &cfg.credentials {
        credentials.insert(&c.access_key_id, &c.secret_access_key);
    }
    for u in &cfg.users {
        credentials.insert(&u.access_key, &u.secret_key);
    }
    Shared {
        rt,
        credentials,
        keys: SharedSigningKeyCache::new(KEY_CACHE),
        region: cfg.region.clone(),
        sigv2: cfg.sigv2,
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
        names: Mutex::new(Vec::new()),
    }
}

/// The placement of `layout` (`(id, weight)`; ids it leaves out weigh 0) over `backends`, so
/// that its indices are the backends' own.
fn layout_placement(backends: &[Resolved], layout: &Layout) -> Result<Placement, String> {
    let ids: Vec<(&str, u32)> = backends
        .iter()
        .map(|r| {
            let id = r.spec.config.id.as_str();
            let w = layout.weights.iter().find(|(l, _)| l == id);
            (id, w.map_or(0, |(_, w)| *w))
        })
        .collect();
    Placement::new(&ids).map_err(|e| format!("layout {}: {e}", layout.version))
}

/// The proxy as `cfg` configures it, over `shared`. A backend of `old` whose configuration
/// and address are unchanged is kept as it is (its connections, health and counters); the
/// others are made anew, assumed up until a probe says otherwise.
pub(crate) fn snapshot<R: NetRuntime>(
    shared: &Arc<Shared<R>>,
    cfg: &ProxyConfig,
    resolved: &[Resolved],
    old: &[Arc<Backend<R>>],
) -> Result<Proxy<R>, String> {
    let current = Layout {
        version: cfg.layout_version,
        weights: resolved
            .iter()
            .map(|r| (r.spec.config.id.clone(), r.spec.config.weight))
            .collect(),
    };
    let placement = layout_placement(resolved, &current)?;
    let previous = cfg
        .previous_layouts
        .iter()
        .map(|l| layout_placement(resolved, l))
        .collect::<Result<Vec<_>, _>>()?;
    let backends = resolved
        .iter()
        .map(|r| match old.iter().find(|b| b.spec == r.spec) {
            Some(kept) => kept.clone(),
            None => {
                let client = ClientConfig {
                    head_limits: head_limits(shared.buffer_size),
                    connect_timeout: r.spec.connect_timeout,
                    read_timeout: r.spec.io_timeout,
                    write_timeout: r.spec.io_timeout,
                    ..ClientConfig::new(BufferPool::global())
                };
                let connector = r
                    .tls
                    .as_ref()
                    .map_or_else(BackendConnector::tcp, BackendTls::connector);
                let slot = shared.slot(&r.spec.config.id);
                Arc::new(Backend::new(
                    shared.rt.clone(),
                    r.spec.clone(),
                    slot,
                    &shared.region,
                    client,
                    connector,
                ))
            }
        })
        .collect();
    Ok(Proxy {
        shared: shared.clone(),
        backends,
        placement,
        previous,
        version: cfg.layout_version,
        cluster: cfg.cluster_keys.clone(),
    })
}

/// Log a backend as it starts being used.
fn log_configured<R: Runtime>(b: &Backend<R>) {
    let auth = if b.passthrough {
        "passthrough"
    } else {
        "resign"
    };
    let scheme = if b.is_tls() { "https" } else { "http" };
    tracing::info!(backend = %b.id, addr = %b.addr, auth = %auth, scheme, "backend configured");
    if b.spec.config.insecure {
        tracing::warn!(
            backend = %b.id,
            "insecure = true: the backend's TLS certificate is not verified"
        );
    }
}

/// The proxy before it runs: its configuration and resolved backends.
struct ProxyServer {
    cfg: ProxyConfig,
    resolved: Vec<Resolved>,
    reloads: Arc<reload::Requests>,
}

impl Server for ProxyServer {
    type Api<R: NetRuntime> = ProxyApi<R>;

    const NAME: &'static str = "proxy";

    fn build<R: NetRuntime>(self, rt: &R, stop: &Arc<Signal>) -> io::Result<(ProxyApi<R>, Auth)> {
        let cfg = self.cfg;
        let shared = Arc::new(shared(rt.clone(), &cfg));
        let proxy = snapshot(&shared, &cfg, &self.resolved, &[])
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let health = health::Schedule {
            interval: cfg.health_interval,
            jitter: cfg.health_jitter,
        };
        let auth = Auth::new(proxy.shared.credentials.clone(), &cfg.region)
            .with_sigv2(cfg.sigv2)
            .with_domains(&cfg.domains);
        let live = Arc::new(reload::Live::new(proxy));
        for b in &live.load().backends {
            log_configured(b);
            // Detached: each probe stops with the stop signal, or when a reload retires it.
            let current = live.clone();
            health::spawn_probe(rt, b.clone(), stop.clone(), health, move || current.load());
        }
        let reloader = Arc::new(reload::Reloader::new(
            rt.clone(),
            stop.clone(),
            live.clone(),
            cfg,
            health,
        ));
        // Detached too: it stops with the stop signal.
        drop(rt.spawn(reload::serve(reloader.clone(), self.reloads.clone())));
        Ok((ProxyApi::new(live, reloader, self.reloads), auth))
    }
}
