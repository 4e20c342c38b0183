//! `--embedded`: an in-process cluster in a temporary directory to load.
//!
//! The cluster is Ferry's own local cluster (`ferry_server::start_cluster`): a proxy in front
//! of two storage nodes, all in this process; the load goes to the proxy.

use std::io;
use std::net::SocketAddr;

use ferry_server::{Cluster, ClusterConfig};
use tempfile::TempDir;

use crate::config::RuntimeKind;

/// Credentials of an embedded cluster when none are given.
pub const EMBEDDED_ACCESS_KEY: &str = "ferry-load";
/// Secret of [`EMBEDDED_ACCESS_KEY`].
pub const EMBEDDED_SECRET_KEY: &str = "ferry-load-embedded-secret";

/// How the embedded cluster runs.
#[derive(Debug, Clone)]
pub struct EmbeddedOptions {
    /// Runtime of the nodes.
    pub runtime: RuntimeKind,
    /// Runtime threads per node (0: one per CPU).
    pub threads: usize,
    /// The key requests must be signed with.
    pub access_key: String,
    /// Its secret.
    pub secret_key: String,
    /// SigV4 region.
    pub region: String,
    /// fsync writes (off by default: the data is thrown away).
    pub fsync: bool,
    /// Smallest multipart part but the last (lowered so small test parts work).
    pub min_part_size: u64,
}

impl Default for EmbeddedOptions {
    fn default() -> Self {
        Self {
            runtime: RuntimeKind::Tokio,
            threads: 0,
            access_key: EMBEDDED_ACCESS_KEY.into(),
            secret_key: EMBEDDED_SECRET_KEY.into(),
            region: "us-east-1".into(),
            fsync: false,
            min_part_size: 1,
        }
    }
}

/// A running in-process cluster; stops (and deletes its data) when dropped.
#[derive(Debug)]
pub struct EmbeddedCluster {
    // Declared before the directory so the cluster stops before its data is deleted.
    cluster: Cluster,
    endpoints: Vec<String>,
    dir: TempDir,
}

impl EmbeddedCluster {
    /// The URLs to load (`http://127.0.0.1:PORT`).
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// The data directory.
    pub fn data_dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Stop the proxy and the nodes, and delete the data.
    pub fn stop(self) {
        self.cluster.stop();
    }
}

/// Start an in-process cluster (a proxy in front of two nodes) in a fresh temporary directory.
pub fn embedded_cluster(opts: &EmbeddedOptions) -> io::Result<EmbeddedCluster> {
    let dir = tempfile::Builder::new().prefix("ferry-load-").tempdir()?;
    let mut cfg = ClusterConfig::new(dir.path(), &opts.access_key, &opts.secret_key);
    cfg.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    cfg.admin_listen = None;
    cfg.region.clone_from(&opts.region);
    cfg.runtime = opts.runtime;
    cfg.threads = opts.threads;
    cfg.fsync = opts.fsync;
    cfg.min_part_size = Some(opts.min_part_size);
    let cluster = ferry_server::start_cluster(cfg)?;
    let endpoints = vec![format!("http://{}", cluster.endpoint())];
    Ok(EmbeddedCluster {
        cluster,
        endpoints,
        dir,
    })
}
