//! The proxy in the test process in front of storage nodes of its own.

use std::net::SocketAddr;
use std::time::Duration;

use ferry_core::place::Placement;
use ferry_core::s3::sigv4::Credentials;
use ferry_server::proxy::AuthMode;
use ferry_server::{BackendConfig, ProxyConfig, ProxyHandle, RuntimeKind, start_proxy};

use super::http::Client;
use super::node::Node;
use super::relay::Relay;
use super::sigv4_oracle;
use super::{ACCESS_KEY, REGION, SECRET_KEY};

/// A proxy in front of some nodes.
pub struct Setup {
    /// The nodes, `node-1` first.
    pub nodes: Vec<Node>,
    /// `None` once stopped.
    pub proxy: Option<ProxyHandle>,
    /// The proxy's S3 listener.
    pub addr: SocketAddr,
    /// The proxy's placement of keys on the nodes (indexes into `nodes`).
    pub placement: Placement,
    /// The relay in front of each node, which the proxy knows as the node's address (see
    /// [`Setup::start_with_nodes`]); none for a passthrough proxy unless
    /// [`Setup::start_relayed`].
    pub relays: Vec<Relay>,
    auth: Auth,
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

/// The key of its own node `i` (from 1) has behind a proxy that re-signs with it: access key
/// and secret.
pub fn own_key(i: usize) -> (String, String) {
    (format!("NODEKEY{i}"), format!("node-secret-{i}"))
}

impl Setup {
    /// A proxy on `runtime` in front of `nodes` nodes, authenticating towards them as `auth` says.
    pub fn start(runtime: RuntimeKind, nodes: usize, auth: Auth) -> Self {
        Self::start_with(runtime, nodes, auth, |_| {})
    }

    /// [`Setup::start`], with `tweak` adjusting the proxy's configuration (users it adds are
    /// the nodes' users too, unless they have keys of their own).
    pub fn start_with(
        runtime: RuntimeKind,
        nodes: usize,
        auth: Auth,
        tweak: impl FnOnce(&mut ProxyConfig),
    ) -> Self {
        Self::start_with_nodes(runtime, nodes, auth, None, tweak)
    }

    /// [`Setup::start_with`], the proxy reaching each node through a recording [`Relay`]
    /// (`relays[i]` in front of `nodes[i]`), whatever `auth` is. (A proxy that re-signs gets
    /// them anyway: see [`Setup::start_with_nodes`].)
    pub fn start_relayed(
        runtime: RuntimeKind,
        nodes: usize,
        auth: Auth,
        tweak: impl FnOnce(&mut ProxyConfig),
    ) -> Self {
        Self::start_inner(runtime, nodes, auth, None, tweak, true)
    }

    /// [`Setup::start_with`], each node restarted with `node`'s changes before the proxy starts.
    ///
    /// A proxy that re-signs (`Auth::Resign`, `Auth::OwnKeys`) reaches each node through a
    /// recording [`Relay`]; when the setup is dropped (unless the test is failing already),
    /// every request a node received must carry the signature `aws-sigv4` computes for it
    /// with the node's key ([`super::sigv4_oracle`]).
    pub fn start_with_nodes(
        runtime: RuntimeKind,
        nodes: usize,
        auth: Auth,
        node: Option<&dyn Fn(&mut Node)>,
        tweak: impl FnOnce(&mut ProxyConfig),
    ) -> Self {
        Self::start_inner(runtime, nodes, auth, node, tweak, auth != Auth::Passthrough)
    }

    fn start_inner(
        runtime: RuntimeKind,
        nodes: usize,
        auth: Auth,
        node: Option<&dyn Fn(&mut Node)>,
        tweak: impl FnOnce(&mut ProxyConfig),
        relayed: bool,
    ) -> Self {
        let mut nodes: Vec<Node> = (1..=nodes)
            .map(|i| {
                let (a, s) = match auth {
                    Auth::OwnKeys => own_key(i),
                    _ => (ACCESS_KEY.to_owned(), SECRET_KEY.to_owned()),
                };
                Node::backend(&format!("node-{i}"), runtime, (&a, &s))
            })
            .collect();
        let relays: Vec<Relay> = if relayed {
            nodes.iter().map(|n| Relay::start(n.addr)).collect()
        } else {
            Vec::new()
        };
        let backends: Vec<BackendConfig> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let url = relays
                    .get(i)
                    .map_or_else(|| format!("http://{}", n.addr), Relay::url);
                let mut b = BackendConfig::new(&n.id, url);
                match auth {
                    Auth::Passthrough => {}
                    Auth::Resign => b.auth = AuthMode::Resign,
                    Auth::OwnKeys => {
                        b.credentials = Some(Credentials::new(&n.access_key, &n.secret_key));
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
        cfg.cluster_keys = Some(crate::support::cluster_keys());
        cfg.runtime = runtime;
        cfg.threads = 2;
        cfg.health_interval = Duration::from_millis(200);
        // Small chunks so re-framed bodies have several.
        cfg.buffer_size = 64 * 1024;
        tweak(&mut cfg);
        // Nodes that share the proxy's key share its users too.
        let users = !cfg.users.is_empty() && auth != Auth::OwnKeys;
        if users || node.is_some() {
            for n in &mut nodes {
                n.stop();
                if users {
                    n.users.clone_from(&cfg.users);
                }
                if let Some(f) = node {
                    f(n);
                }
                n.restart();
            }
        }
        let proxy = start_proxy(cfg).expect("proxy starts");
        let ids: Vec<(&str, u32)> = nodes.iter().map(|n| (n.id.as_str(), 1)).collect();
        let placement = Placement::new(&ids).unwrap();
        Self {
            addr: proxy.local_addr(),
            proxy: Some(proxy),
            nodes,
            placement,
            relays,
            auth,
        }
    }

    /// A client of the proxy.
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

    /// The proxy's admin listener.
    pub fn admin(&self) -> SocketAddr {
        self.proxy.as_ref().unwrap().admin_addr().unwrap()
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        if let Some(p) = self.proxy.take() {
            p.stop();
        }
        if self.auth != Auth::Passthrough && !std::thread::panicking() {
            self.resigned_as_aws_signs();
        }
    }
}

impl Setup {
    /// Every request that reached node `i` through its relay carries aws-sigv4's signature
    /// with the node's key; unsigned ones are health probes, or browser uploads as their
    /// anonymous clients sent them.
    fn resigned_as_aws_signs(&self) {
        let mut signed = 0;
        for (i, relay) in self.relays.iter().enumerate() {
            let (access, secret) = match self.auth {
                Auth::OwnKeys => own_key(i + 1),
                _ => (ACCESS_KEY.to_owned(), SECRET_KEY.to_owned()),
            };
            let recorded = relay.recorded();
            let checked = sigv4_oracle::check(&recorded, &[(&access, &secret)], REGION);
            for r in &checked.unsigned {
                let probe = r.method == "GET" && r.target == "/healthz";
                assert!(
                    probe || sigv4_oracle::anonymous_form(r),
                    "an unsigned request reached node {i} of a re-signing proxy: {r:?}"
                );
            }
            assert_eq!(checked.signed + checked.unsigned.len(), recorded.len());
            signed += checked.signed;
        }
        assert!(signed > 0, "no signed request reached the nodes");
    }
}
