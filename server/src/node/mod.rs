//! The storage node (`ferry node`): an S3 server over the local [`store`](crate::store).
//!
//! [`start_node`] opens the store, starts the chosen runtime on threads of its own and serves
//! the S3 API there until [`NodeHandle::stop`], with the admin listener beside it. The S3 front
//! ([`crate::front`]) authenticates and routes; the node implements the operations
//! ([`handler`] dispatches to [`buckets`], [`objects`], [`multipart`], [`tagging`] and
//! [`lifecycle`]) once, generic over
//! [`Runtime`]: tokio and smol are both compiled in and picked at run time.
//!
//! Every store call is blocking and runs through [`Runtime::unblock`]; bodies stream through
//! pooled 256 KiB buffers in both directions, so a request holds at most two of them.

mod access;
mod acl;
mod attributes;
pub(crate) mod body;
pub(crate) mod buckets;
mod context;
mod expected_owner;
pub(crate) mod handler;
mod lifecycle;
mod lifecycle_worker;
mod lock;
mod metrics;
mod multipart;
mod objects;
mod owner;
mod policy;
mod post;
mod request_headers;
mod response_headers;
mod settings;
mod sse;
mod tagging;

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ferry_core::http::head::HeadLimits;
use ferry_core::rt::Signal;
use ferry_net::NetRuntime;

use crate::front::Auth;
use crate::front::serve::Listen;
use crate::limits::ConnLimits;
use crate::service::{self, Server, ServiceHandle};
use crate::store::{DEFAULT_MIN_PART_SIZE, Store, StoreConfig};
use crate::tls::TlsFiles;
use crate::users::{User, Users};

pub use context::NodeApi;
pub use ferry_runtime::RuntimeKind;

/// Everything `ferry node` needs.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// Where the store lives (created if missing).
    pub data_dir: PathBuf,
    /// Address to listen on; port 0 picks a free one.
    pub listen: SocketAddr,
    /// The one access key id requests must be signed with.
    pub access_key: String,
    /// Its secret.
    pub secret_key: String,
    /// Users besides the primary one (whose key is `access_key`), from a users file: each may
    /// sign requests, and owns the buckets it creates.
    pub users: Vec<User>,
    /// The cluster's keys (`--cluster-key`, `FERRY_CLUSTER_KEY`): what only the cluster may ask
    /// — Ferry's `x-ferry-*` headers and query parameters: placing a version, fencing a
    /// bucket, reading an SSE-KMS context, a proxy's word on its client's address and
    /// transport — is taken only from a request sealed with one of them
    /// (`ferry_core::s3::cluster`); without, such a request is refused (403). `None` (the
    /// default): the node takes no such request, so no proxy can front it.
    pub cluster_keys: Option<ferry_core::s3::cluster::ClusterKeys>,
    /// The region signatures are scoped to (default `us-east-1`).
    pub region: String,
    /// The runtime to serve on (default tokio).
    pub runtime: RuntimeKind,
    /// Smallest size of every part but the last of a multipart upload (default 5 MiB).
    pub min_part_size: u64,
    /// fsync data and metadata before acknowledging writes (default `true`).
    pub fsync: bool,
    /// Write data files with `O_DIRECT` where the file system takes it (default `true`; see
    /// `StoreConfig::direct_io`).
    pub direct_io: bool,
    /// Submit streamed bodies' `O_DIRECT` writes through `io_uring` from the connection's task
    /// (default `true`; see `StoreConfig::io_uring`); `false` hands every buffer to the
    /// blocking pool.
    pub io_uring: bool,
    /// Send GET bodies from the data files with `sendfile(2)` on plain TCP connections on
    /// Linux (default `true`); `false` copies every body through pooled buffers.
    pub sendfile: bool,
    /// GET and HEAD look the object up in the metadata database and open its data file on the
    /// runtime thread, as nginx opens files on its event loop (default `true`): a hop to the
    /// blocking pool and back costs more than both when the page cache holds them, which it
    /// does for what is read or written often. A cold lookup then holds the thread's other
    /// connections for one disk read; `false` sends every lookup to the blocking pool. Data is
    /// always read on the blocking pool or sent with `sendfile(2)`.
    pub open_inline: bool,
    /// Runtime worker threads; 0 means one per CPU.
    pub threads: usize,
    /// Serve HTTPS with this certificate and key (default: plain HTTP).
    pub tls: Option<TlsFiles>,
    /// The admin listener (`/healthz`, `/readyz`, `/metrics`, `/debug/pprof/profile`; plain
    /// HTTP, no authentication): default `127.0.0.1:0`; `None` for none.
    pub admin_listen: Option<SocketAddr>,
    /// Limits on client connections (count, head, body and idle timeouts).
    pub limits: ConnLimits,
    /// Accept SigV2 signatures (default `true`; `--no-sigv2` turns it off).
    pub sigv2: bool,
    /// Base domains of virtual-hosted-style requests (`--domain`): `Host: BUCKET.DOMAIN`
    /// names BUCKET; none by default (path-style only).
    pub domains: Vec<String>,
    /// How often the lifecycle worker applies the buckets' lifecycle rules (default 1 hour;
    /// it also runs once at start).
    pub lifecycle_interval: Duration,
    /// The length of a lifecycle "day" in seconds (default 86,400). A testing aid only, as
    /// Ceph RGW's `rgw_lc_debug_interval`: with N, `Days` and `DaysAfterInitiation` count
    /// N-second days (and expiry dates round up to multiples of N seconds).
    pub lifecycle_day_secs: u64,
    /// The SSE-S3 master key file (`--sse-master-key`): 64 hex digits, made with mode 0600 on
    /// first use if missing. Default `DATA/sse-master.key`.
    pub sse_master_key: Option<PathBuf>,
    /// Take SSE-C keys over plain HTTP (`--allow-sse-c-over-http`; default `false`: such a
    /// request is refused with `400 InvalidRequest`, as AWS does). For tests only: the key
    /// crosses the network in the clear.
    pub allow_sse_c_over_http: bool,
    /// The SSE-KMS keyring (`--sse-kms-keyring`): TOML, `default = "ID"` and `[keys]` of id
    /// = 64 hex digits, readable by its owner only ([`crate::store::Keyring`]). The node
    /// refuses to start on a malformed or too open file. `None`: SSE-KMS requests are
    /// refused (`400 KMS.NotFoundException`).
    pub sse_kms_keyring: Option<PathBuf>,
}

/// The lifecycle worker's default interval.
pub const DEFAULT_LIFECYCLE_INTERVAL: Duration = Duration::from_secs(3600);

/// Descriptors a node's connection may hold: its socket, and a data file while a request reads
/// or writes one (the default connection cap divides the open-file limit by this).
const NODE_FDS_PER_CONNECTION: u64 = 2;

impl NodeConfig {
    /// A configuration with the defaults for everything but the store, address and key.
    pub fn new(
        data_dir: impl Into<PathBuf>,
        listen: SocketAddr,
        access_key: impl Into<String>,
        secret_key: impl Into<String>,
    ) -> Self {
        Self {
            data_dir: data_dir.into(),
            listen,
            access_key: access_key.into(),
            secret_key: secret_key.into(),
            users: Vec::new(),
            cluster_keys: None,
            region: "us-east-1".into(),
            runtime: RuntimeKind::Tokio,
            min_part_size: DEFAULT_MIN_PART_SIZE,
            fsync: true,
            direct_io: true,
            io_uring: true,
            sendfile: true,
            open_inline: true,
            threads: 0,
            tls: None,
            admin_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            limits: ConnLimits::default(),
            sigv2: true,
            domains: Vec::new(),
            lifecycle_interval: DEFAULT_LIFECYCLE_INTERVAL,
            lifecycle_day_secs: ferry_core::s3::xml::DAY_SECS,
            sse_master_key: None,
            allow_sse_c_over_http: false,
            sse_kms_keyring: None,
        }
    }
}

/// A running node; its runtime runs on threads of its own. Dropping it stops the node.
pub type NodeHandle = ServiceHandle;

/// Open the store in `cfg.data_dir`, start `cfg.runtime` and serve the S3 API on `cfg.listen`
/// (and the admin side on `cfg.admin_listen`).
///
/// Returns once the node accepts connections; errors opening the store or binding the address
/// are returned here.
pub fn start_node(cfg: NodeConfig) -> io::Result<NodeHandle> {
    cfg.limits
        .validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let store = Store::open_with(
        &cfg.data_dir,
        StoreConfig {
            min_part_size: cfg.min_part_size,
            fsync: cfg.fsync,
            direct_io: cfg.direct_io,
            io_uring: cfg.io_uring,
        },
    )?;
    if let Some(path) = &cfg.sse_master_key {
        store.use_master_key_file(path.clone());
    }
    store.check_master_key()?;
    if let Some(path) = &cfg.sse_kms_keyring {
        store.use_kms_keyring(crate::store::Keyring::load(path)?);
    }
    let listen = Listen {
        s3: cfg.listen,
        tls: cfg.tls.as_ref().map(TlsFiles::load).transpose()?,
        admin: cfg.admin_listen,
        head_limits: HeadLimits::default(),
        limits: cfg.limits,
        fds_per_connection: NODE_FDS_PER_CONNECTION,
    };
    let (runtime, threads) = (cfg.runtime, cfg.threads);
    service::start(Node { cfg, store }, runtime, threads, listen)
}

/// The node before it runs: its configuration and its open store.
struct Node {
    cfg: NodeConfig,
    store: Store,
}

impl Server for Node {
    type Api<R: NetRuntime> = NodeApi<R>;

    const NAME: &'static str = "node";

    fn build<R: NetRuntime>(self, rt: &R, stop: &Arc<Signal>) -> io::Result<(NodeApi<R>, Auth)> {
        let cfg = self.cfg;
        tracing::info!(data = %cfg.data_dir.display(), fsync = cfg.fsync, "store opened");
        let primary = User::primary(&cfg.access_key, &cfg.secret_key);
        let users = Users::new(primary, &cfg.users)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let auth = Auth::new(users.credentials(), &cfg.region)
            .with_sigv2(cfg.sigv2)
            .with_domains(&cfg.domains);
        let api = NodeApi::new(rt.clone(), self.store, &cfg, users);
        // Detached: the worker stops with the stop signal (between batches of a pass).
        drop(rt.spawn(lifecycle_worker::run(
            rt.clone(),
            api.store.downgrade(),
            api.lifecycle.clone(),
            stop.clone(),
            cfg.lifecycle_interval,
            cfg.lifecycle_day_secs,
        )));
        Ok((api, auth))
    }
}
