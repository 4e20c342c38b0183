//! The storage node (`ferry node`): an S3 server over the local [`store`](crate::store).
//!
//! [`start_node`] opens the store, starts the chosen runtime on threads of its own and serves
//! the S3 API there until [`NodeHandle::stop`]. The request handling ([`handler`]) is written
//! once, generic over [`Runtime`]: tokio and smol are both compiled in and picked at run time.
//!
//! Every store call is blocking and runs through [`Runtime::unblock`]; bodies stream through
//! pooled 256 KiB buffers in both directions, so a request holds at most two of them.

pub(crate) mod body;
pub(crate) mod buckets;
pub(crate) mod handler;
pub(crate) mod headers;
mod multipart;
mod objects;

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use ferry_core::http::server::ServerConfig;
use ferry_core::rt::Signal;
use ferry_net::{NetRuntime, rustls};
use ferry_runtime::OnRuntime;

use crate::service::{ServiceThread, spawn_service};
use crate::store::{DEFAULT_MIN_PART_SIZE, Store, StoreConfig};
use crate::tls::TlsFiles;

pub use ferry_runtime::RuntimeKind;
pub use handler::NodeHandler;

/// How long a graceful stop lets requests in progress finish before dropping them.
const STOP_GRACE: Duration = Duration::from_secs(30);

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
    /// The region signatures are scoped to (default `us-east-1`).
    pub region: String,
    /// The runtime to serve on (default tokio).
    pub runtime: RuntimeKind,
    /// Smallest size of every part but the last of a multipart upload (default 5 MiB).
    pub min_part_size: u64,
    /// fsync data and metadata before acknowledging writes (default `true`).
    pub fsync: bool,
    /// Runtime worker threads; 0 means one per CPU.
    pub threads: usize,
    /// Serve HTTPS with this certificate and key (default: plain HTTP).
    pub tls: Option<TlsFiles>,
}

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
            region: "us-east-1".into(),
            runtime: RuntimeKind::Tokio,
            min_part_size: DEFAULT_MIN_PART_SIZE,
            fsync: true,
            threads: 0,
            tls: None,
        }
    }
}

/// A running node; its runtime runs on threads of its own. Dropping it stops the node.
#[derive(Debug)]
pub struct NodeHandle {
    local_addr: SocketAddr,
    service: ServiceThread,
}

impl NodeHandle {
    /// The address the node listens on (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Graceful stop: stop accepting, let requests in progress finish (up to 30 s), close idle
    /// connections, and join the runtime's threads.
    pub fn stop(mut self) {
        self.service.shutdown();
    }
}

/// Open the store in `cfg.data_dir`, start `cfg.runtime` and serve the S3 API on `cfg.listen`.
///
/// Returns once the node accepts connections; errors opening the store or binding the address
/// are returned here.
pub fn start_node(cfg: NodeConfig) -> io::Result<NodeHandle> {
    let store = Store::open_with(
        &cfg.data_dir,
        StoreConfig {
            min_part_size: cfg.min_part_size,
            fsync: cfg.fsync,
        },
    )?;
    let tls = cfg.tls.as_ref().map(TlsFiles::load).transpose()?;
    let (local_addr, service) = spawn_service("ferry-node", move |ready, stop| {
        let (kind, threads) = (cfg.runtime, cfg.threads);
        let node = Node {
            cfg,
            tls,
            store,
            ready,
            stop,
        };
        ferry_runtime::block_on(kind, threads, node)
    })?;
    Ok(NodeHandle {
        local_addr,
        service,
    })
}

/// [`run`]'s arguments, to run it on the runtime the configuration names.
struct Node {
    cfg: NodeConfig,
    tls: Option<Arc<rustls::ServerConfig>>,
    store: Store,
    ready: mpsc::Sender<io::Result<SocketAddr>>,
    stop: Arc<Signal>,
}

impl OnRuntime for Node {
    type Output = ();

    async fn run<R: NetRuntime>(self, rt: R) {
        run(rt, self.cfg, self.tls, self.store, self.ready, self.stop).await
    }
}

/// The node's life on runtime `rt`: serve until `stop` is set, then stop gracefully.
async fn run<R: NetRuntime>(
    rt: R,
    cfg: NodeConfig,
    tls: Option<Arc<rustls::ServerConfig>>,
    store: Store,
    ready: mpsc::Sender<io::Result<SocketAddr>>,
    stop: Arc<Signal>,
) {
    let handler = Arc::new(NodeHandler::new(rt.clone(), store, &cfg));
    let config = ServerConfig {
        // aws-chunked framing makes a 5 GiB object's body a little longer than 5 GiB; the
        // handler enforces the object size limit on the decoded length.
        max_body_len: body::MAX_OBJECT_SIZE + (64 << 20),
        ..ServerConfig::default()
    };
    let server = match ferry_net::serve(&rt, cfg.listen, tls, config, handler).await {
        Ok(s) => s,
        Err(kind) => {
            let kind = io::ErrorKind::from(kind);
            let _ = ready.send(Err(io::Error::new(
                kind,
                format!("cannot listen on {}: {kind}", cfg.listen),
            )));
            return;
        }
    };
    if ready.send(Ok(server.local_addr())).is_err() {
        // Nobody waits for the node any more.
        server.abort();
        return;
    }
    tracing::info!(
        listen = %server.local_addr(), data = %cfg.data_dir.display(),
        runtime = %cfg.runtime, fsync = cfg.fsync, "node listening"
    );
    stop.wait().await;
    tracing::info!(
        listen = %server.local_addr(), open_connections = server.active(),
        "node draining: no new connections, requests in flight may finish"
    );
    if server.stop(&rt, STOP_GRACE).await {
        tracing::info!(listen = %server.local_addr(), "node stopped");
    } else {
        tracing::warn!(
            listen = %server.local_addr(), grace = ?STOP_GRACE,
            "node stopped: requests still running after the grace period were dropped"
        );
    }
}
