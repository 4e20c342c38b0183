//! What `ferry proxy` needs: the library struct, `--backend` specs and the TOML file.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use ferry_core::s3::sigv4::Credentials;
use serde::Deserialize;

use crate::limits::ConnLimits;
use crate::tls::TlsFiles;
use crate::users::User;
use ferry_runtime::RuntimeKind;

/// Default size of the proxy's pooled I/O buffers (connection buffers, re-framed chunks).
pub const DEFAULT_BUFFER_SIZE: usize = 256 * 1024;

/// What a backend speaks, which decides how it is probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendKind {
    /// A Ferry storage node: probed with `GET /healthz`.
    #[default]
    Ferry,
    /// Any other S3 server: probed with `HEAD /` (any HTTP answer means it is up).
    S3,
}

impl FromStr for BackendKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ferry" => Ok(Self::Ferry),
            "s3" => Ok(Self::S3),
            other => Err(format!("unknown backend kind {other:?} (ferry or s3)")),
        }
    }
}

/// How requests are authenticated towards a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthMode {
    /// Passthrough when the backend has no credentials of its own (it shares the proxy's),
    /// re-sign otherwise.
    #[default]
    Auto,
    /// Always re-sign with the backend's credentials (or the client's key when it has none).
    Resign,
    /// Forward client-signed requests unchanged (the backend must share the proxy's keys and
    /// accept the client's `Host`, as a Ferry node with path-style addressing does).
    Passthrough,
}

impl FromStr for AuthMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "resign" => Ok(Self::Resign),
            "passthrough" => Ok(Self::Passthrough),
            other => Err(format!(
                "unknown auth mode {other:?} (auto, resign or passthrough)"
            )),
        }
    }
}

/// One backend: where it is, its placement weight and how to talk to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendConfig {
    /// Stable name: placement depends on it (not on the address), so keep it across restarts.
    pub id: String,
    /// `http://host:port` or `https://host:port`.
    pub url: String,
    /// Placement weight (0 drains it: no new keys, still a listing source).
    pub weight: u32,
    /// The backend's own key; `None` means it accepts the proxy's (clients') keys.
    pub credentials: Option<Credentials>,
    /// Ferry node or other S3 server.
    pub kind: BackendKind,
    /// Passthrough or re-sign.
    pub auth: AuthMode,
    /// Region to sign for (default: the proxy's).
    pub region: Option<String>,
    /// `https://` only: PEM certificates trusted for this backend, besides the webpki roots
    /// (a private CA, or the backend's self-signed certificate).
    pub ca_cert: Option<PathBuf>,
    /// `https://` only: accept any certificate (no verification; the handshake's signatures are
    /// still checked). Logged as a warning at start.
    pub insecure: bool,
}

impl BackendConfig {
    /// A Ferry node at `url` with weight 1, sharing the proxy's credentials.
    pub fn new(id: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            url: url.into(),
            weight: 1,
            credentials: None,
            kind: BackendKind::Ferry,
            auth: AuthMode::Auto,
            region: None,
            ca_cert: None,
            insecure: false,
        }
    }

    /// Parse `ID=URL[,weight=W][,access-key=A,secret-key=S][,kind=ferry|s3]`
    /// `[,auth=auto|resign|passthrough][,region=R][,ca-cert=FILE][,insecure=true]`.
    pub fn parse_spec(spec: &str) -> Result<Self, String> {
        let (id, rest) = spec
            .split_once('=')
            .ok_or_else(|| format!("backend {spec:?}: expected ID=URL[,option=value...]"))?;
        let mut parts = rest.split(',');
        let url = parts.next().unwrap_or_default();
        let mut b = Self::new(id.trim(), url.trim());
        let (mut access, mut secret) = (None, None);
        for opt in parts {
            let (name, value) = opt
                .split_once('=')
                .ok_or_else(|| format!("backend {id:?}: option {opt:?} is not name=value"))?;
            let value = value.trim();
            match name.trim() {
                "weight" => {
                    b.weight = value
                        .parse()
                        .map_err(|_| format!("backend {id:?}: weight {value:?} is not a number"))?;
                }
                "access-key" => access = Some(value.to_owned()),
                "secret-key" => secret = Some(value.to_owned()),
                "kind" => b.kind = value.parse()?,
                "auth" => b.auth = value.parse()?,
                "region" => b.region = Some(value.to_owned()),
                "ca-cert" => b.ca_cert = Some(PathBuf::from(value)),
                "insecure" => {
                    b.insecure = value.parse().map_err(|_| {
                        format!("backend {id:?}: insecure {value:?} is not true or false")
                    })?;
                }
                other => return Err(format!("backend {id:?}: unknown option {other:?}")),
            }
        }
        b.credentials = pair(id, access, secret)?;
        b.validate()?;
        Ok(b)
    }

    /// Check what can be checked without the network.
    pub fn validate(&self) -> Result<(), String> {
        if self.id.is_empty() {
            return Err("a backend needs a non-empty id".into());
        }
        let (tls, _) = split_url(&self.url).map_err(|e| format!("backend {:?}: {e}", self.id))?;
        if !tls && (self.ca_cert.is_some() || self.insecure) {
            return Err(format!(
                "backend {:?}: ca_cert and insecure are for https:// backends",
                self.id
            ));
        }
        if self.ca_cert.is_some() && self.insecure {
            return Err(format!(
                "backend {:?}: insecure skips verification, so a ca_cert would not be used",
                self.id
            ));
        }
        if self.auth == AuthMode::Passthrough && self.credentials.is_some() {
            return Err(format!(
                "backend {:?}: passthrough forwards the client's signature, so it cannot have \
                 credentials of its own",
                self.id
            ));
        }
        Ok(())
    }

    /// Whether client-signed requests are forwarded unchanged.
    pub fn passthrough(&self) -> bool {
        match self.auth {
            AuthMode::Auto => self.credentials.is_none() && self.kind == BackendKind::Ferry,
            AuthMode::Resign => false,
            AuthMode::Passthrough => true,
        }
    }

    /// Whether the URL is `https://`.
    pub fn is_tls(&self) -> bool {
        matches!(split_url(&self.url), Ok((true, _)))
    }

    /// The host of the URL without its port: the name a TLS backend's certificate must have
    /// (and the SNI, unless it is an IP address).
    pub fn host_name(&self) -> Option<&str> {
        let (_, authority) = split_url(&self.url).ok()?;
        authority.rsplit_once(':').map(|(h, _)| h)
    }

    /// The `Host` value and the socket address of the URL (resolves names).
    pub fn resolve(&self) -> std::io::Result<(String, SocketAddr)> {
        let (_, authority) = split_url(&self.url)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let addr = authority.to_socket_addrs()?.next().ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{authority} has no address"),
            )
        })?;
        Ok((authority.to_owned(), addr))
    }
}

fn pair(
    id: &str,
    access: Option<String>,
    secret: Option<String>,
) -> Result<Option<Credentials>, String> {
    match (access, secret) {
        (None, None) => Ok(None),
        (Some(a), Some(s)) if !a.is_empty() && !s.is_empty() => Ok(Some(Credentials::new(a, s))),
        _ => Err(format!(
            "backend {id:?}: access-key and secret-key go together"
        )),
    }
}

/// `http://host:port[/]` or `https://host:port[/]` → (is https, `host:port`).
fn split_url(url: &str) -> Result<(bool, &str), String> {
    let (tls, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else {
        return Err(format!(
            "{url:?}: only http:// and https:// URLs are supported"
        ));
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() || authority.contains(['/', '?', '#', '@']) {
        return Err(format!("{url:?}: expected http[s]://host:port"));
    }
    if !authority.rsplit_once(':').is_some_and(|(h, p)| {
        !h.is_empty() && !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())
    }) {
        return Err(format!("{url:?}: the port is required"));
    }
    Ok((tls, authority))
}

/// An earlier placement of the backends, still being drained: keys it placed may still live
/// on the backend it picked, so reads that miss fall back to it, deletes and overwrites clean
/// it up, and listings merge it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Distinct per layout; the current layout's is the highest.
    pub version: u64,
    /// `(backend id, weight)`: every id names a configured backend; ids left out weigh 0.
    pub weights: Vec<(String, u32)>,
}

/// Connections in use to one backend at most, by default.
pub const DEFAULT_BACKEND_MAX_CONNECTIONS: usize = 256;

/// Requests in flight to one backend at most (waiting ones included), by default.
pub const DEFAULT_BACKEND_MAX_IN_FLIGHT: usize = 1024;

/// Longest retry window and health-probe jitter accepted.
pub const MAX_PROXY_WAIT: Duration = Duration::from_secs(60);

/// Everything `ferry proxy` needs.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// The S3 listener (port 0 picks a free one).
    pub listen: SocketAddr,
    /// The admin listener (`/healthz`, `/readyz`, `/metrics`); `None` for none.
    pub admin_listen: Option<SocketAddr>,
    /// The backends, in any order (placement uses their ids).
    pub backends: Vec<BackendConfig>,
    /// Version of the current layout (the backends' weights); 0 unless `[[layout]]` set it.
    pub layout_version: u64,
    /// Earlier layouts still being drained, newest first (none by default).
    pub previous_layouts: Vec<Layout>,
    /// The keys clients sign with.
    pub credentials: Vec<Credentials>,
    /// The users of a users file (`--users`, `users` in TOML): their keys are accepted too.
    /// The nodes behind the proxy know the same users and decide what each may do; the proxy
    /// forwards every request with its signer's identity (passthrough, or re-signed with the
    /// signer's own key), so every backend must share the clients' keys.
    pub users: Vec<User>,
    /// The region client signatures are scoped to (default `us-east-1`).
    pub region: String,
    /// The runtime to serve on.
    pub runtime: RuntimeKind,
    /// Runtime worker threads; 0 means one per CPU.
    pub threads: usize,
    /// Size of the pooled buffers bodies stream through (default 256 KiB).
    pub buffer_size: usize,
    /// Connecting to a backend must succeed within this (default 500 ms): a dead backend
    /// answers 503 quickly.
    pub connect_timeout: Duration,
    /// Each backend read or write must complete within this (default 30 s).
    pub io_timeout: Duration,
    /// Interval of active health probes (default 2 s).
    pub health_interval: Duration,
    /// Random extra wait added to each health interval, up to this (default 500 ms), so that
    /// proxies started together do not probe in step. A backend that is down is probed four
    /// times as often (interval and jitter divided by 4).
    pub health_jitter: Duration,
    /// Connections in use to one backend at most (default 256); more requests wait for one,
    /// within the retry window, then answer `503 SlowDown`.
    pub backend_max_connections: usize,
    /// Requests in flight to one backend at most, waiting ones included (default 1024); more
    /// answer `503 SlowDown` at once.
    pub backend_max_in_flight: usize,
    /// How long a request waits for a backend that is down to come back, for a free
    /// connection, or sends an idempotent request again after its connection failed before
    /// any answer (default 2 s); then `503 SlowDown`. Zero: no waiting.
    pub retry_window: Duration,
    /// Key of the continuation-token HMAC; by default derived from the credentials, so that
    /// proxies configured alike accept each other's tokens.
    pub token_secret: Option<Vec<u8>>,
    /// Serve HTTPS on the S3 listener with this certificate and key (default: plain HTTP).
    pub tls: Option<TlsFiles>,
    /// Limits on client connections (count, head, body and idle timeouts).
    pub limits: ConnLimits,
    /// Accept SigV2 client signatures (default `true`; `--no-sigv2` turns it off).
    pub sigv2: bool,
    /// Base domains of virtual-hosted-style requests (`--domain`): `Host: BUCKET.DOMAIN`
    /// names BUCKET; none by default (path-style only).
    pub domains: Vec<String>,
    /// Where a reload (SIGHUP, `POST /admin/reload`, `ProxyHandle::reload`) reads the
    /// configuration again; `None`: reloads are refused. `ferry proxy` sets it to its command
    /// line and `--config` file.
    pub reload: Option<super::ReloadSource>,
    /// The cluster key its Ferry nodes share (`--cluster-key`, `cluster_key_file`,
    /// `FERRY_CLUSTER_KEY`): the proxy seals with it what only the cluster may ask of a node
    /// (its client's address and transport on every request, a DeleteBucket's fences, a
    /// rebalance's placed versions; `ferry_core::s3::cluster`). Needed with any backend of
    /// kind ferry; a reload reads it again.
    pub cluster_keys: Option<ferry_core::s3::cluster::ClusterKeys>,
}

impl ProxyConfig {
    /// Defaults for everything but the listener, the backends and one client key.
    pub fn new(
        listen: SocketAddr,
        backends: Vec<BackendConfig>,
        access_key: impl Into<String>,
        secret_key: impl Into<String>,
    ) -> Self {
        Self {
            listen,
            admin_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            backends,
            layout_version: 0,
            previous_layouts: Vec::new(),
            credentials: vec![Credentials::new(access_key, secret_key)],
            users: Vec::new(),
            region: "us-east-1".into(),
            runtime: RuntimeKind::Tokio,
            threads: 0,
            buffer_size: DEFAULT_BUFFER_SIZE,
            connect_timeout: Duration::from_millis(500),
            io_timeout: Duration::from_secs(30),
            health_interval: Duration::from_secs(2),
            health_jitter: Duration::from_millis(500),
            backend_max_connections: DEFAULT_BACKEND_MAX_CONNECTIONS,
            backend_max_in_flight: DEFAULT_BACKEND_MAX_IN_FLIGHT,
            retry_window: Duration::from_secs(2),
            token_secret: None,
            tls: None,
            limits: ConnLimits::default(),
            sigv2: true,
            domains: Vec::new(),
            reload: None,
            cluster_keys: None,
        }
    }

    /// A configuration from a TOML document (see `ferry proxy --help`); keys it omits keep
    /// their defaults, and `credentials` may be empty (the caller adds the environment's).
    pub fn from_toml(text: &str) -> Result<Self, String> {
        let f: FileConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        let parse_addr = |what: &str, v: &str| {
            v.parse::<SocketAddr>()
                .map_err(|_| format!("{what} {v:?} is not IP:PORT"))
        };
        let listen = match &f.listen {
            Some(v) => parse_addr("listen", v)?,
            None => SocketAddr::from(([127, 0, 0, 1], 8078)),
        };
        let mut cfg = Self::new(listen, Vec::new(), "", "");
        cfg.credentials.clear();
        if let Some(v) = &f.admin_listen {
            cfg.admin_listen = if v.is_empty() {
                None
            } else {
                Some(parse_addr("admin_listen", v)?)
            };
        }
        if let Some(r) = f.region {
            cfg.region = r;
        }
        if let Some(r) = &f.runtime {
            cfg.runtime = r.parse()?;
        }
        if let Some(t) = f.threads {
            cfg.threads = t;
        }
        if let Some(b) = f.buffer_size {
            cfg.buffer_size = b;
        }
        if let Some(ms) = f.connect_timeout_ms {
            cfg.connect_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = f.io_timeout_ms {
            cfg.io_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = f.health_interval_ms {
            cfg.health_interval = Duration::from_millis(ms);
        }
        if let Some(n) = f.backend_max_connections {
            cfg.backend_max_connections = n;
        }
        if let Some(n) = f.backend_max_in_flight {
            cfg.backend_max_in_flight = n;
        }
        if let Some(ms) = f.retry_window_ms {
            cfg.retry_window = Duration::from_millis(ms);
        }
        if let Some(ms) = f.health_jitter_ms {
            cfg.health_jitter = Duration::from_millis(ms);
        }
        if let Some(n) = f.max_connections {
            cfg.limits.max_connections = Some(n);
        }
        if let Some(ms) = f.header_timeout_ms {
            cfg.limits.header_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = f.idle_timeout_ms {
            cfg.limits.idle_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = f.body_timeout_ms {
            cfg.limits.body_timeout = Duration::from_millis(ms);
        }
        if let Some(rate) = f.min_body_rate {
            cfg.limits.min_body_rate = rate;
        }
        cfg.token_secret = f.token_secret.map(String::into_bytes);
        if let Some(on) = f.sigv2 {
            cfg.sigv2 = on;
        }
        cfg.domains = f.domains;
        cfg.tls = TlsFiles::pair(f.tls_cert, f.tls_key, "tls_cert and tls_key")?;
        if let Some(path) = &f.users {
            cfg.users = crate::users::load_users(path).map_err(|e| e.to_string())?;
        }
        if let Some(path) = &f.cluster_key_file {
            cfg.cluster_keys =
                crate::cluster_key::load(Some(path), &|_| None).map_err(|e| e.to_string())?;
        }
        for c in f.credentials {
            cfg.credentials
                .push(Credentials::new(c.access_key, c.secret_key));
        }
        for b in f.backend {
            let mut out = BackendConfig::new(b.id, b.url);
            out.weight = b.weight.unwrap_or(1);
            out.credentials = pair(&out.id, b.access_key, b.secret_key)?;
            if let Some(k) = &b.kind {
                out.kind = k.parse()?;
            }
            if let Some(a) = &b.auth {
                out.auth = a.parse()?;
            }
            out.region = b.region;
            out.ca_cert = b.ca_cert;
            out.insecure = b.insecure.unwrap_or(false);
            out.validate()?;
            if !f.layout.is_empty() && b.weight.is_some() {
                return Err(format!(
                    "backend {:?}: with [[layout]] blocks, weights are set in the layouts",
                    out.id
                ));
            }
            cfg.backends.push(out);
        }
        cfg.apply_layouts(f.layout)?;
        Ok(cfg)
    }

    /// `[[layout]]` blocks: the newest sets the backends' weights (a backend it leaves out
    /// weighs 0: no new keys), the others are drained, newest first.
    fn apply_layouts(&mut self, mut layouts: Vec<FileLayout>) -> Result<(), String> {
        if layouts.is_empty() {
            return Ok(());
        }
        layouts.sort_by_key(|l| std::cmp::Reverse(l.version));
        let mut layouts = layouts.into_iter().map(|l| Layout {
            version: l.version,
            weights: l.backends.into_iter().collect(),
        });
        let current = layouts.next().unwrap_or(Layout {
            version: 0,
            weights: Vec::new(),
        });
        self.layout_version = current.version;
        for b in &mut self.backends {
            b.weight = current
                .weights
                .iter()
                .find(|(id, _)| *id == b.id)
                .map_or(0, |(_, w)| *w);
        }
        self.check_layout(&current)?;
        self.previous_layouts = layouts.collect();
        Ok(())
    }

    /// A layout names only configured backends and gives one of them a positive weight.
    fn check_layout(&self, l: &Layout) -> Result<(), String> {
        for (id, _) in &l.weights {
            if !self.backends.iter().any(|b| b.id == *id) {
                return Err(format!(
                    "layout {}: backend {id:?} is not configured",
                    l.version
                ));
            }
        }
        if !l.weights.iter().any(|(_, w)| *w > 0) {
            return Err(format!(
                "layout {}: no backend has a positive weight",
                l.version
            ));
        }
        Ok(())
    }

    /// Check the whole configuration (the proxy refuses to start otherwise).
    pub fn validate(&self) -> Result<(), String> {
        if self.backends.is_empty() {
            return Err("the proxy needs at least one backend".into());
        }
        for (i, b) in self.backends.iter().enumerate() {
            b.validate()?;
            // Upload ids name their backend by this tag (`upload`).
            let tag = ferry_core::s3::upload_id::tag(&b.id);
            if let Some(a) = self.backends[..i]
                .iter()
                .find(|a| a.id != b.id && ferry_core::s3::upload_id::tag(&a.id) == tag)
            {
                return Err(format!(
                    "backends {:?} and {:?} would tag their multipart upload ids alike: rename one",
                    a.id, b.id
                ));
            }
        }
        let mut last = self.layout_version;
        for l in &self.previous_layouts {
            if l.version >= last {
                return Err(format!(
                    "layout {}: versions must be distinct, the current layout ({}) the newest, \
                     and previous layouts listed newest first",
                    l.version, self.layout_version
                ));
            }
            last = l.version;
            self.check_layout(l)?;
        }
        if self.credentials.is_empty() && self.users.is_empty() {
            return Err("the proxy needs at least one client key".into());
        }
        if !self.users.is_empty()
            && let Some(b) = self.backends.iter().find(|b| b.credentials.is_some())
        {
            return Err(format!(
                "backend {:?} signs with a key of its own, so it cannot tell the users of the \
                 users file apart: with users, every backend must be a Ferry node sharing the \
                 users file",
                b.id
            ));
        }
        if self.cluster_keys.is_none()
            && let Some(b) = self.backends.iter().find(|b| b.kind == BackendKind::Ferry)
        {
            return Err(format!(
                "backend {:?} is a Ferry node, which takes the proxy's own headers (its \
                 client's address, DeleteBucket's fences) only when sealed with the cluster key: \
                 give the proxy the nodes' key (--cluster-key FILE, cluster_key_file, or \
                 FERRY_CLUSTER_KEY; `ferry cluster-key new FILE` makes one)",
                b.id
            ));
        }
        if self.backend_max_connections == 0 || self.backend_max_in_flight == 0 {
            return Err(
                "backend_max_connections and backend_max_in_flight must be at least 1".into(),
            );
        }
        for (name, d) in [
            ("retry_window", self.retry_window),
            ("health_jitter", self.health_jitter),
        ] {
            if d > MAX_PROXY_WAIT {
                return Err(format!("{name} must be at most {MAX_PROXY_WAIT:?}"));
            }
        }
        if self.buffer_size < 16 * 1024 || self.buffer_size > 16 << 20 {
            return Err("buffer_size must be between 16 KiB and 16 MiB".into());
        }
        self.limits.validate()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    admin_listen: Option<String>,
    region: Option<String>,
    runtime: Option<String>,
    threads: Option<usize>,
    buffer_size: Option<usize>,
    connect_timeout_ms: Option<u64>,
    io_timeout_ms: Option<u64>,
    backend_max_connections: Option<usize>,
    backend_max_in_flight: Option<usize>,
    retry_window_ms: Option<u64>,
    health_jitter_ms: Option<u64>,
    health_interval_ms: Option<u64>,
    max_connections: Option<usize>,
    header_timeout_ms: Option<u64>,
    idle_timeout_ms: Option<u64>,
    body_timeout_ms: Option<u64>,
    min_body_rate: Option<u64>,
    token_secret: Option<String>,
    users: Option<PathBuf>,
    cluster_key_file: Option<PathBuf>,
    sigv2: Option<bool>,
    #[serde(default)]
    domains: Vec<String>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    #[serde(default)]
    credentials: Vec<FileCredentials>,
    #[serde(default)]
    backend: Vec<FileBackend>,
    #[serde(default)]
    layout: Vec<FileLayout>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLayout {
    version: u64,
    /// Backend id → weight.
    backends: std::collections::BTreeMap<String, u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCredentials {
    access_key: String,
    secret_key: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileBackend {
    id: String,
    url: String,
    weight: Option<u32>,
    access_key: Option<String>,
    secret_key: Option<String>,
    kind: Option<String>,
    auth: Option<String>,
    region: Option<String>,
    ca_cert: Option<PathBuf>,
    insecure: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A configuration from TOML, with a cluster key (which Ferry backends need).
    fn parsed(text: &str) -> Result<ProxyConfig, String> {
        let mut cfg = ProxyConfig::from_toml(text)?;
        cfg.cluster_keys = Some(ferry_core::s3::cluster::ClusterKeys::new(
            ferry_core::s3::cluster::ClusterKey::from_bytes([7; 32]),
        ));
        Ok(cfg)
    }

    #[test]
    fn ferry_backends_need_the_cluster_key() {
        let backends = "[[credentials]]\naccess_key = \"k\"\nsecret_key = \"s\"\n\
                        [[backend]]\nid = \"n1\"\nurl = \"http://127.0.0.1:1\"\n";
        let e = ProxyConfig::from_toml(backends)
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(
            e.contains("\"n1\" is a Ferry node") && e.contains("cluster key"),
            "{e}"
        );
        // Other S3 servers do not take Ferry's headers: no key needed.
        let s3 = format!("{backends}kind = \"s3\"\n");
        ProxyConfig::from_toml(&s3).unwrap().validate().unwrap();
        // The file's key, read as a node reads it (owner-only).
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cluster.key");
        crate::cluster_key::create(&file).unwrap();
        let with = format!(
            "cluster_key_file = {:?}\n{backends}",
            file.display().to_string()
        );
        let cfg = ProxyConfig::from_toml(&with).unwrap();
        cfg.validate().unwrap();
        assert!(cfg.cluster_keys.is_some());
        let missing = format!("cluster_key_file = \"/nonexistent/k\"\n{backends}");
        assert!(
            ProxyConfig::from_toml(&missing)
                .unwrap_err()
                .contains("/nonexistent/k")
        );
    }

    #[test]
    fn users_need_backends_that_see_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("users.toml");
        std::fs::write(
            &path,
            "[[user]]\nname = \"alice\"\naccess_key = \"AKA\"\nsecret_key = \"sa\"\n",
        )
        .unwrap();
        let text = format!(
            "users = {:?}\n[[backend]]\nid = \"n1\"\nurl = \"http://127.0.0.1:9001\"\n",
            path.display().to_string()
        );
        let cfg = parsed(&text).unwrap();
        assert_eq!(cfg.users.len(), 1);
        assert_eq!(cfg.users[0].name, "alice");
        // The users' keys are enough: no other client key is needed.
        cfg.validate().unwrap();
        let mut own_key = cfg.clone();
        own_key.backends[0].credentials = Some(Credentials::new("B", "sb"));
        let e = own_key.validate().unwrap_err();
        assert!(e.contains("key of its own"), "{e}");
        let missing = parsed("users = \"/nonexistent/users.toml\"\n");
        assert!(missing.unwrap_err().contains("/nonexistent/users.toml"));
    }

    #[test]
    fn backend_specs() {
        let b = BackendConfig::parse_spec("n1=http://127.0.0.1:9001").unwrap();
        assert_eq!((b.id.as_str(), b.weight), ("n1", 1));
        assert!(b.passthrough());
        assert_eq!(b.resolve().unwrap().0, "127.0.0.1:9001");
        let b = BackendConfig::parse_spec(
            "m=http://localhost:5000/,weight=3,access-key=A,secret-key=S,kind=s3,region=eu-west-1",
        )
        .unwrap();
        assert_eq!(b.weight, 3);
        assert_eq!(b.kind, BackendKind::S3);
        assert_eq!(b.credentials, Some(Credentials::new("A", "S")));
        assert_eq!(b.region.as_deref(), Some("eu-west-1"));
        assert!(!b.passthrough());
        let b =
            BackendConfig::parse_spec("t=https://node1.example:9443,ca-cert=/etc/ca.pem").unwrap();
        assert!(b.is_tls());
        assert_eq!(b.host_name(), Some("node1.example"));
        assert_eq!(b.ca_cert, Some(PathBuf::from("/etc/ca.pem")));
        assert!(!b.insecure);
        let b = BackendConfig::parse_spec("t=https://[::1]:9443,insecure=true").unwrap();
        assert_eq!((b.host_name(), b.insecure), (Some("[::1]"), true));
        assert!(!BackendConfig::parse_spec("p=http://h:1").unwrap().is_tls());
        for bad in [
            "nourl",
            "x=ftp://h:1",
            "x=https://h",
            "x=http://h:1,ca-cert=/etc/ca.pem",
            "x=http://h:1,insecure=true",
            "x=https://h:1,insecure=yes",
            "x=https://h:1,insecure=true,ca-cert=/etc/ca.pem",
            "x=http://h",
            "x=http://h:1/path",
            "x=http://h:1,weight=heavy",
            "x=http://h:1,access-key=A",
            "x=http://h:1,colour=red",
            "x=http://h:1,auth=passthrough,access-key=A,secret-key=S",
            "=http://h:1",
        ] {
            assert!(BackendConfig::parse_spec(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn toml_file() {
        let cfg = parsed(
            r#"
            listen = "0.0.0.0:9000"
            admin_listen = ""
            runtime = "smol"
            buffer_size = 131072
            health_interval_ms = 500
            max_connections = 5000
            header_timeout_ms = 5000
            idle_timeout_ms = 30000
            body_timeout_ms = 20000
            min_body_rate = 4096
            tls_cert = "/etc/ferry/cert.pem"
            tls_key = "/etc/ferry/key.pem"
            [[credentials]]
            access_key = "AK"
            secret_key = "SK"
            [[backend]]
            id = "a"
            url = "http://127.0.0.1:1"
            [[backend]]
            id = "b"
            url = "http://127.0.0.1:2"
            weight = 2
            auth = "resign"
            [[backend]]
            id = "c"
            url = "https://node-c.example:9443"
            ca_cert = "/etc/ferry/ca.pem"
            [[backend]]
            id = "d"
            url = "https://127.0.0.1:9443"
            insecure = true
            "#,
        )
        .unwrap();
        assert_eq!(cfg.listen.port(), 9000);
        assert_eq!(cfg.admin_listen, None);
        assert_eq!(cfg.runtime, RuntimeKind::Smol);
        assert_eq!(cfg.buffer_size, 131_072);
        assert_eq!(cfg.health_interval, Duration::from_millis(500));
        let limits = ConnLimits {
            max_connections: Some(5000),
            header_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(20),
            min_body_rate: 4096,
        };
        assert_eq!(cfg.limits, limits);
        assert_eq!(
            cfg.tls,
            Some(TlsFiles::new("/etc/ferry/cert.pem", "/etc/ferry/key.pem"))
        );
        assert_eq!(cfg.credentials, [Credentials::new("AK", "SK")]);
        assert_eq!(cfg.backends.len(), 4);
        assert_eq!(cfg.backends[1].weight, 2);
        assert!(!cfg.backends[1].is_tls());
        assert_eq!(
            cfg.backends[2].ca_cert,
            Some(PathBuf::from("/etc/ferry/ca.pem"))
        );
        assert!(cfg.backends[2].is_tls() && !cfg.backends[2].insecure);
        assert!(cfg.backends[3].insecure);
        let err =
            parsed("[[backend]]\nid = \"x\"\nurl = \"http://h:1\"\ninsecure = true").unwrap_err();
        assert!(err.contains("https://"), "{err}");
        assert!(!cfg.backends[1].passthrough());
        cfg.validate().unwrap();
        assert!(parsed("colour = 1").is_err());
        assert!(parsed("[[backend]]\nid = \"x\"\nurl = \"ftp://h:1\"").is_err());
        let err = parsed("tls_cert = \"c.pem\"").unwrap_err();
        assert!(err.contains("tls_cert and tls_key go together"), "{err}");
        let empty = parsed("").unwrap();
        assert!(empty.validate().is_err());
        assert_eq!(empty.tls, None);
        assert_eq!(empty.limits, ConnLimits::default());
        let mut zero = cfg.clone();
        zero.limits.max_connections = Some(0);
        assert!(zero.validate().unwrap_err().contains("max_connections"));
    }

    #[test]
    fn layouts() {
        let backends = "[[backend]]\nid = \"a\"\nurl = \"http://127.0.0.1:1\"\n\
                        [[backend]]\nid = \"b\"\nurl = \"http://127.0.0.1:2\"\n\
                        [[backend]]\nid = \"c\"\nurl = \"http://127.0.0.1:3\"\n\
                        [[credentials]]\naccess_key = \"AK\"\nsecret_key = \"SK\"\n";
        // Without layouts: one layout, the backends' weights, version 0.
        let cfg = parsed(backends).unwrap();
        assert_eq!((cfg.layout_version, cfg.previous_layouts.len()), (0, 0));
        assert!(cfg.backends.iter().all(|b| b.weight == 1));
        // Growing from a and b to a, b and c (2 weighs twice); listed in any order.
        let grow = format!(
            "{backends}[[layout]]\nversion = 1\nbackends = {{ a = 1, b = 1 }}\n\
             [[layout]]\nversion = 3\nbackends = {{ a = 1, b = 1, c = 2 }}\n"
        );
        let cfg = parsed(&grow).unwrap();
        cfg.validate().unwrap();
        assert_eq!(cfg.layout_version, 3);
        let w: Vec<u32> = cfg.backends.iter().map(|b| b.weight).collect();
        assert_eq!(w, [1, 1, 2]);
        assert_eq!(
            cfg.previous_layouts,
            [Layout {
                version: 1,
                weights: vec![("a".into(), 1), ("b".into(), 1)],
            }]
        );
        // Removing c: it weighs 0 now (no new keys) and is drained.
        let shrink = format!(
            "{backends}[[layout]]\nversion = 4\nbackends = {{ a = 1, b = 1 }}\n\
             [[layout]]\nversion = 3\nbackends = {{ a = 1, b = 1, c = 1 }}\n"
        );
        let cfg = parsed(&shrink).unwrap();
        cfg.validate().unwrap();
        assert_eq!(cfg.backends[2].weight, 0);
        for (bad, why) in [
            (
                "[[layout]]\nversion = 1\nbackends = { a = 1, z = 1 }\n",
                "\"z\" is not configured",
            ),
            (
                "[[layout]]\nversion = 1\nbackends = { a = 0 }\n",
                "positive weight",
            ),
            (
                "[[layout]]\nversion = 2\nbackends = { a = 1 }\n\
                 [[layout]]\nversion = 1\nbackends = { d = 1 }\n",
                "\"d\" is not configured",
            ),
            (
                "[[layout]]\nversion = 2\nbackends = { a = 1 }\n\
                 [[layout]]\nversion = 2\nbackends = { b = 1 }\n",
                "distinct",
            ),
        ] {
            let e = parsed(&format!("{backends}{bad}"))
                .and_then(|c| c.validate().map(|()| c))
                .unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        // Weights live in the layouts once there are layouts.
        let e = parsed(
            "[[backend]]\nid = \"a\"\nurl = \"http://127.0.0.1:1\"\nweight = 2\n\
             [[layout]]\nversion = 1\nbackends = { a = 1 }\n",
        )
        .unwrap_err();
        assert!(e.contains("weights are set in the layouts"), "{e}");
        // Previous layouts must be older than the current one (set by the library too).
        let mut cfg = parsed(&grow).unwrap();
        cfg.layout_version = 1;
        assert!(cfg.validate().unwrap_err().contains("distinct"));
    }

    #[test]
    fn restart_and_overload_options() {
        let toml = "retry_window_ms = 750\nbackend_max_in_flight = 9\nhealth_jitter_ms = 40\n\
                    [[backend]]\nid = \"a\"\nurl = \"http://127.0.0.1:1\"\n\
                    [[credentials]]\naccess_key = \"k\"\nsecret_key = \"s\"\n";
        let cfg = parsed(toml).unwrap();
        assert_eq!(cfg.retry_window, Duration::from_millis(750));
        assert_eq!(cfg.backend_max_in_flight, 9);
        assert_eq!(cfg.health_jitter, Duration::from_millis(40));
        cfg.validate().unwrap();
        let defaults = parsed("").unwrap();
        assert_eq!(defaults.retry_window, Duration::from_secs(2));
        assert_eq!(
            defaults.backend_max_in_flight,
            DEFAULT_BACKEND_MAX_IN_FLIGHT
        );
        let mut bad = cfg.clone();
        bad.retry_window = Duration::from_secs(61);
        assert!(bad.validate().unwrap_err().contains("retry_window"));
        let mut bad = cfg;
        bad.backend_max_in_flight = 0;
        assert!(
            bad.validate()
                .unwrap_err()
                .contains("backend_max_in_flight")
        );
    }
}
