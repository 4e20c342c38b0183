//! `--embedded`: an in-process cluster in a temporary directory to load.
//!
//! The cluster is Ferry's own local cluster (`ferry_server::start_cluster`): a proxy in front
//! of two storage nodes, all in this process; the load goes to the proxy. It links the whole
//! server, so it is the feature `embedded` (on by default); a ferry-load built without it has
//! the same options, and [`embedded_cluster`] refuses with [`not_built_in`].

use std::io;

use crate::config::RuntimeKind;

pub use cluster::{EmbeddedCluster, embedded_cluster};

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

/// Why a ferry-load built without the feature `embedded` refuses `--embedded` (what
/// [`embedded_cluster`] returns there): it names the feature and what to do instead.
pub fn not_built_in() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "this ferry-load was built without it (cargo feature `embedded`, on by default): \
         give an --endpoint, or build ferry-load with its default features",
    )
}

#[cfg(feature = "embedded")]
mod cluster {
    use std::io;
    use std::net::SocketAddr;

    use ferry_server::{Cluster, ClusterConfig};
    use tempfile::TempDir;

    use super::EmbeddedOptions;

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
}

#[cfg(not(feature = "embedded"))]
mod cluster {
    use std::io;
    use std::path::Path;

    use super::EmbeddedOptions;

    /// No cluster: this ferry-load was built without one, and [`embedded_cluster`] refuses.
    #[derive(Debug)]
    pub enum EmbeddedCluster {}

    impl EmbeddedCluster {
        /// The URLs to load.
        pub fn endpoints(&self) -> &[String] {
            match *self {}
        }

        /// The data directory.
        pub fn data_dir(&self) -> &Path {
            match *self {}
        }

        /// Stop the proxy and the nodes, and delete the data.
        pub fn stop(self) {
            match self {}
        }
    }

    /// Refuse: this ferry-load was built without the embedded cluster ([`super::not_built_in`]).
    pub fn embedded_cluster(_: &EmbeddedOptions) -> io::Result<EmbeddedCluster> {
        Err(super::not_built_in())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The refusal itself, with or without the feature (CI builds the tests with it).
    #[test]
    fn the_refusal_names_the_feature_and_the_way_out() {
        let err = not_built_in();
        assert_eq!(err.kind(), io::ErrorKind::Unsupported);
        let msg = err.to_string();
        assert!(msg.contains("built without it"), "{msg}");
        assert!(msg.contains("feature `embedded`"), "{msg}");
        assert!(msg.contains("--endpoint"), "{msg}");
    }

    #[cfg(not(feature = "embedded"))]
    #[test]
    fn without_the_feature_it_refuses() {
        let err = embedded_cluster(&EmbeddedOptions::default()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Unsupported);
        assert_eq!(err.to_string(), not_built_in().to_string());
    }
}
