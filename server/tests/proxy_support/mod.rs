//! Shared by the proxy tests: storage nodes (restartable on their port) behind a proxy, and
//! the node tests' signing client.

#![allow(dead_code, unused_imports)]

#[path = "../node_support/mod.rs"]
pub mod node_support;

use std::net::SocketAddr;
use std::time::Duration;

use ferry_core::place::Placement;
use ferry_server::proxy::AuthMode;
use ferry_server::{
    BackendConfig, NodeConfig, NodeHandle, ProxyConfig, ProxyHandle, RuntimeKind, start_node,
    start_proxy,
};
pub use node_support::{ACCESS_KEY, Client, MIN_PART, Payload, Response, SECRET_KEY};

/// One storage node that can be stopped and started again on the same port and data.
pub struct TestNode {
    pub id: String,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    pub handle: Option<NodeHandle>,
    pub runtime: RuntimeKind,
    /// The node's own key (the proxy's unless a test says otherwise).
    pub access_key: String,
    pub secret_key: String,
}

impl TestNode {
    pub fn start(id: &str, runtime: RuntimeKind, access_key: &str, secret_key: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut n = Self {
            id: id.to_owned(),
            addr: "127.0.0.1:0".parse().unwrap(),
            dir,
            handle: None,
            runtime,
            access_key: access_key.to_owned(),
            secret_key: secret_key.to_owned(),
        };
        n.restart();
        n
    }

    /// Start (again) on the same address and data.
    pub fn restart(&mut self) {
        let mut cfg = NodeConfig::new(
            self.dir.path(),
            self.addr,
            &self.access_key,
            &self.secret_key,
        );
        cfg.runtime = self.runtime;
        cfg.fsync = false;
        cfg.min_part_size = MIN_PART;
        cfg.threads = 1;
        // The port may linger briefly after a stop.
        let mut tries = 0;
        let handle = loop {
            match start_node(cfg.clone()) {
                Ok(h) => break h,
                Err(e) if tries < 50 => {
                    tries += 1;
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => panic!("node restarts: {e}"),
            }
        };
        self.addr = handle.local_addr();
        self.handle = Some(handle);
    }

    pub fn stop(&mut self) {
        if let Some(h) = self.handle.take() {
            h.stop();
        }
    }

    /// A client talking to the node directly, with the node's key.
    pub fn client(&self) -> Client {
        let mut c = Client::connect(self.addr);
        c.credentials = ferry_core::s3::sigv4::Credentials::new(&self.access_key, &self.secret_key);
        c
    }
}

impl Drop for TestNode {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A proxy in front of some nodes.
pub struct Setup {
    pub nodes: Vec<TestNode>,
    pub proxy: Option<ProxyHandle>,
    pub addr: SocketAddr,
    pub placement: Placement,
}

/// How the proxy authenticates towards the nodes in a setup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// Nodes share the proxy's key; requests are forwarded unchanged.
    Passthrough,
    /// Nodes share the proxy's key; requests are re-signed.
    Resign,
    /// Nodes have keys of their own; requests are re-signed with them.
    OwnKeys,
}

impl Setup {
    pub fn start(runtime: RuntimeKind, nodes: usize, auth: Auth) -> Self {
        Self::start_with(runtime, nodes, auth, |_| {})
    }

    /// [`Setup::start`], with `tweak` adjusting the proxy's configuration.
    pub fn start_with(
        runtime: RuntimeKind,
        nodes: usize,
        auth: Auth,
        tweak: impl FnOnce(&mut ProxyConfig),
    ) -> Self {
        let nodes: Vec<TestNode> = (1..=nodes)
            .map(|i| {
                let (a, s) = match auth {
                    Auth::OwnKeys => (format!("NODEKEY{i}"), format!("node-secret-{i}")),
                    _ => (ACCESS_KEY.to_owned(), SECRET_KEY.to_owned()),
                };
                TestNode::start(&format!("node-{i}"), runtime, &a, &s)
            })
            .collect();
        let backends: Vec<BackendConfig> = nodes
            .iter()
            .map(|n| {
                let mut b = BackendConfig::new(&n.id, format!("http://{}", n.addr));
                match auth {
                    Auth::Passthrough => {}
                    Auth::Resign => b.auth = AuthMode::Resign,
                    Auth::OwnKeys => {
                        b.credentials = Some(ferry_core::s3::sigv4::Credentials::new(
                            &n.access_key,
                            &n.secret_key,
                        ));
                    }
                }
                b
            })
            .collect();
        let mut cfg = ProxyConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            backends,
            ACCESS_KEY,
            SECRET_KEY,
        );
        cfg.runtime = runtime;
        cfg.threads = 2;
        cfg.health_interval = Duration::from_millis(200);
        // Small chunks so re-framed bodies have several.
        cfg.buffer_size = 64 * 1024;
        tweak(&mut cfg);
        let proxy = start_proxy(cfg).expect("proxy starts");
        let ids: Vec<(&str, u32)> = nodes.iter().map(|n| (n.id.as_str(), 1)).collect();
        let placement = Placement::new(&ids).unwrap();
        Self {
            addr: proxy.local_addr(),
            proxy: Some(proxy),
            nodes,
            placement,
        }
    }

    pub fn client(&self) -> Client {
        Client::connect(self.addr)
    }

    /// The node that holds `(bucket, key)`.
    pub fn node_of(&self, bucket: &str, key: &str) -> usize {
        self.placement.pick(bucket, key)
    }

    /// A key with this prefix placed on node `want`.
    pub fn key_on(&self, bucket: &str, prefix: &str, want: usize) -> String {
        (0..)
            .map(|i| format!("{prefix}{i}"))
            .find(|k| self.node_of(bucket, k) == want)
            .unwrap()
    }

    pub fn admin(&self) -> SocketAddr {
        self.proxy.as_ref().unwrap().admin_addr().unwrap()
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        if let Some(p) = self.proxy.take() {
            p.stop();
        }
    }
}

/// `GET path` on a plain HTTP address (admin endpoints): status and body.
pub fn plain_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut c = Client::connect(addr);
    c.send_raw(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes());
    let r = c.read_response(false);
    (r.status, r.text())
}
