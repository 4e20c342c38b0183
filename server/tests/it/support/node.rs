//! A storage node in the test process, on either runtime: alone, or behind a proxy (with a key
//! of its own, and restartable on the same port and data).

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use ferry_core::s3::sigv4::Credentials;
use ferry_server::{ConnLimits, NodeConfig, NodeHandle, RuntimeKind, start_node};

use super::http::Client;
use super::{ACCESS_KEY, SECRET_KEY};

/// Small parts so multipart tests stay small.
pub const MIN_PART: u64 = 1024;

/// A node's configuration on `dir`, listening on a free loopback port, with the test key.
pub fn node_config(dir: &Path, runtime: RuntimeKind) -> NodeConfig {
    let listen = "127.0.0.1:0".parse().expect("address");
    let mut cfg = NodeConfig::new(dir, listen, ACCESS_KEY, SECRET_KEY);
    cfg.runtime = runtime;
    cfg.cluster_keys = Some(super::cluster_keys());
    cfg
}

/// A running node on a fresh data directory.
#[derive(Debug)]
pub struct Node {
    /// The backend id a proxy knows it by.
    pub id: String,
    /// Where it listens (kept across a restart).
    pub addr: SocketAddr,
    /// Its data directory.
    pub dir: tempfile::TempDir,
    /// `None` once stopped.
    pub handle: Option<NodeHandle>,
    /// The key it accepts.
    pub access_key: String,
    /// Its secret.
    pub secret_key: String,
    runtime: RuntimeKind,
    threads: usize,
    /// Its connection limits.
    pub limits: ConnLimits,
    /// Whether it writes streamed bodies through `io_uring` (the default).
    pub io_uring: bool,
    /// Whether it takes SSE-C keys over plain HTTP (off by default).
    pub allow_sse_c_over_http: bool,
    /// Its SSE-KMS keyring file.
    pub sse_kms_keyring: Option<std::path::PathBuf>,
    /// Its users besides the primary one (whose key is `access_key`).
    pub users: Vec<ferry_server::User>,
}

impl Node {
    /// A node with the test key and two workers.
    pub fn start(runtime: RuntimeKind) -> Self {
        Self::start_with("node", runtime, (ACCESS_KEY, SECRET_KEY), 2)
    }

    /// A node with the test key, two workers and these connection limits.
    pub fn with_limits(runtime: RuntimeKind, limits: ConnLimits) -> Self {
        Self::start_configured("node", runtime, (ACCESS_KEY, SECRET_KEY), 2, limits)
    }

    /// A node behind a proxy: backend id `id`, `key` (access key and secret), one worker (a
    /// proxy test runs several).
    pub fn backend(id: &str, runtime: RuntimeKind, key: (&str, &str)) -> Self {
        Self::start_with(id, runtime, key, 1)
    }

    fn start_with(id: &str, runtime: RuntimeKind, key: (&str, &str), threads: usize) -> Self {
        Self::start_configured(id, runtime, key, threads, ConnLimits::default())
    }

    fn start_configured(
        id: &str,
        runtime: RuntimeKind,
        key: (&str, &str),
        threads: usize,
        limits: ConnLimits,
    ) -> Self {
        let mut n = Self {
            id: id.to_owned(),
            addr: "127.0.0.1:0".parse().expect("address"),
            dir: tempfile::tempdir().expect("temp dir"),
            handle: None,
            access_key: key.0.to_owned(),
            secret_key: key.1.to_owned(),
            runtime,
            threads,
            limits,
            io_uring: true,
            allow_sse_c_over_http: false,
            sse_kms_keyring: None,
            users: Vec::new(),
        };
        n.restart();
        n
    }

    /// Start (again) on the same address and data.
    pub fn restart(&mut self) {
        let mut cfg = node_config(self.dir.path(), self.runtime);
        cfg.listen = self.addr;
        cfg.access_key.clone_from(&self.access_key);
        cfg.secret_key.clone_from(&self.secret_key);
        cfg.fsync = false;
        cfg.min_part_size = MIN_PART;
        cfg.threads = self.threads;
        cfg.limits = self.limits;
        cfg.io_uring = self.io_uring;
        cfg.allow_sse_c_over_http = self.allow_sse_c_over_http;
        cfg.sse_kms_keyring.clone_from(&self.sse_kms_keyring);
        cfg.users.clone_from(&self.users);
        // The port may linger briefly after a stop.
        let mut tries = 0;
        let handle = loop {
            match start_node(cfg.clone()) {
                Ok(h) => break h,
                Err(_) if tries < 50 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => panic!("node starts: {e}"),
            }
        };
        self.addr = handle.local_addr();
        self.handle = Some(handle);
    }

    /// A node with the test key and two workers that hands every buffer of a streamed body
    /// to the blocking pool instead of `io_uring`.
    pub fn without_io_uring(runtime: RuntimeKind) -> Self {
        let mut n = Self::start(runtime);
        n.stop();
        n.io_uring = false;
        n.restart();
        n
    }

    /// Stop gracefully (if running).
    pub fn stop(&mut self) {
        if let Some(h) = self.handle.take() {
            h.stop();
        }
    }

    /// A client talking to the node directly, with the node's key.
    pub fn client(&self) -> Client {
        let mut c = Client::connect(self.addr);
        c.credentials = Credentials::new(&self.access_key, &self.secret_key);
        c
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop();
    }
}
