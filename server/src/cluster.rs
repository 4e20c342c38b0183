//! A local cluster in one process: storage nodes behind a proxy (what `ferry` with no
//! subcommand runs, and the load tester's `--embedded`).

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use ferry_core::s3::cluster::ClusterKeys;

use crate::node::{DEFAULT_LIFECYCLE_INTERVAL, NodeConfig, NodeHandle, RuntimeKind, start_node};
use crate::proxy::{BackendConfig, ProxyConfig, ProxyHandle, start_proxy};
use crate::tls::TlsFiles;
use crate::users::User;

/// Everything a local cluster needs.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// Parent of the nodes' data directories (`node-1`, `node-2`, ...).
    pub data_dir: PathBuf,
    /// The proxy's S3 listener (default `127.0.0.1:8078`).
    pub listen: SocketAddr,
    /// The proxy's admin listener (default `127.0.0.1:0`; `None` for none).
    pub admin_listen: Option<SocketAddr>,
    /// Number of storage nodes (default 2).
    pub nodes: usize,
    /// The one key of the proxy and the nodes.
    pub access_key: String,
    /// Its secret.
    pub secret_key: String,
    /// Users besides the key's, from a users file: the proxy and every node know them.
    pub users: Vec<User>,
    /// Runtime of the proxy and the nodes.
    pub runtime: RuntimeKind,
    /// Worker threads of each runtime (0: one per CPU).
    pub threads: usize,
    /// fsync node writes (default `true`).
    pub fsync: bool,
    /// Smallest multipart part but the last (default the node's, 5 MiB).
    pub min_part_size: Option<u64>,
    /// The region the proxy and the nodes serve (default `us-east-1`).
    pub region: String,
    /// Serve HTTPS on the proxy's S3 listener with this certificate and key (default: plain
    /// HTTP; the nodes behind it stay plain on loopback).
    pub tls: Option<TlsFiles>,
    /// Accept SigV2 signatures, on the proxy and the nodes (default `true`).
    pub sigv2: bool,
    /// The proxy's virtual-hosted base domains (the nodes behind it are sent path-style).
    pub domains: Vec<String>,
    /// Every node's lifecycle interval (`NodeConfig::lifecycle_interval`).
    pub lifecycle_interval: Duration,
    /// Every node's lifecycle day, a testing aid (`NodeConfig::lifecycle_day_secs`).
    pub lifecycle_day_secs: u64,
    /// Every node takes SSE-C keys over plain HTTP, a testing aid
    /// (`NodeConfig::allow_sse_c_over_http`).
    pub allow_sse_c_over_http: bool,
    /// Every node's SSE-KMS keyring (`NodeConfig::sse_kms_keyring`): the same file for all,
    /// so an object reads back whichever node holds it.
    pub sse_kms_keyring: Option<PathBuf>,
    /// The key the proxy and the nodes share (`NodeConfig::cluster_keys`); `None`: a new one,
    /// in memory, for this run (`ferry` alone keeps one in its data directory).
    pub cluster_keys: Option<ClusterKeys>,
}

impl ClusterConfig {
    /// Two nodes under `data_dir` behind a proxy on 127.0.0.1:8078, with this key.
    pub fn new(
        data_dir: impl Into<PathBuf>,
        access_key: impl Into<String>,
        secret_key: impl Into<String>,
    ) -> Self {
        Self {
            data_dir: data_dir.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 8078)),
            admin_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            nodes: 2,
            access_key: access_key.into(),
            secret_key: secret_key.into(),
            users: Vec::new(),
            runtime: RuntimeKind::Tokio,
            threads: 0,
            fsync: true,
            min_part_size: None,
            region: "us-east-1".into(),
            tls: None,
            sigv2: true,
            domains: Vec::new(),
            lifecycle_interval: DEFAULT_LIFECYCLE_INTERVAL,
            lifecycle_day_secs: ferry_core::s3::xml::DAY_SECS,
            allow_sse_c_over_http: false,
            sse_kms_keyring: None,
            cluster_keys: None,
        }
    }
}

/// A running local cluster. Dropping it stops the proxy, then the nodes.
#[derive(Debug)]
pub struct Cluster {
    proxy: Option<ProxyHandle>,
    nodes: Vec<NodeHandle>,
}

impl Cluster {
    /// The S3 endpoint (the proxy).
    pub fn endpoint(&self) -> SocketAddr {
        self.proxy
            .as_ref()
            .map_or(SocketAddr::from(([0, 0, 0, 0], 0)), ProxyHandle::local_addr)
    }

    /// The proxy's admin listener.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.proxy.as_ref().and_then(ProxyHandle::admin_addr)
    }

    /// The storage nodes' addresses.
    pub fn node_addrs(&self) -> Vec<SocketAddr> {
        self.nodes.iter().map(NodeHandle::local_addr).collect()
    }

    /// Graceful stop of the proxy, then of the nodes.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(p) = self.proxy.take() {
            p.stop();
        }
        for n in self.nodes.drain(..) {
            n.stop();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Start `cfg.nodes` storage nodes on free ports and the proxy in front of them.
pub fn start_cluster(cfg: ClusterConfig) -> io::Result<Cluster> {
    if cfg.nodes == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a cluster needs at least one node",
        ));
    }
    let keys = match &cfg.cluster_keys {
        Some(keys) => keys.clone(),
        None => ClusterKeys::new(crate::cluster_key::generate()?),
    };
    let mut nodes = Vec::with_capacity(cfg.nodes);
    let mut backends = Vec::with_capacity(cfg.nodes);
    for i in 1..=cfg.nodes {
        let dir = cfg.data_dir.join(format!("node-{i}"));
        let mut n = NodeConfig::new(
            dir,
            SocketAddr::from(([127, 0, 0, 1], 0)),
            &cfg.access_key,
            &cfg.secret_key,
        );
        n.users.clone_from(&cfg.users);
        // The proxy in front seals its word on its clients' addresses (for the nodes' policy
        // conditions) and its DeleteBucket fences with the cluster's key.
        n.cluster_keys = Some(keys.clone());
        n.runtime = cfg.runtime;
        n.threads = cfg.threads;
        n.fsync = cfg.fsync;
        n.region.clone_from(&cfg.region);
        n.sigv2 = cfg.sigv2;
        n.lifecycle_interval = cfg.lifecycle_interval;
        n.lifecycle_day_secs = cfg.lifecycle_day_secs;
        n.allow_sse_c_over_http = cfg.allow_sse_c_over_http;
        n.sse_kms_keyring.clone_from(&cfg.sse_kms_keyring);
        if let Some(m) = cfg.min_part_size {
            n.min_part_size = m;
        }
        let node = start_node(n)?;
        // Placement follows the id, so a node keeps its keys whatever port it gets.
        backends.push(BackendConfig::new(
            format!("node-{i}"),
            format!("http://{}", node.local_addr()),
        ));
        nodes.push(node);
    }
    let mut p = ProxyConfig::new(cfg.listen, backends, &cfg.access_key, &cfg.secret_key);
    p.users = cfg.users;
    p.admin_listen = cfg.admin_listen;
    p.runtime = cfg.runtime;
    p.threads = cfg.threads;
    p.region = cfg.region;
    p.tls = cfg.tls;
    p.sigv2 = cfg.sigv2;
    p.domains = cfg.domains;
    p.cluster_keys = Some(keys);
    let proxy = start_proxy(p)?;
    Ok(Cluster {
        proxy: Some(proxy),
        nodes,
    })
}
