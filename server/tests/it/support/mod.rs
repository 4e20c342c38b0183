//! Shared by the integration tests: the key every server takes, servers on either runtime (a
//! storage node, the proxy in front of nodes, the `ferry` binary), one hand-written HTTP/1.1
//! client, an AWS SDK client, and test data.

/// Generate one `#[test]` per runtime for each listed test function `fn(RuntimeKind)`, named
/// `tokio::NAME` and `smol::NAME`.
macro_rules! on_both_runtimes {
    ($($name:ident),* $(,)?) => {
        mod tokio {
            $(#[test] fn $name() { super::$name(ferry_server::RuntimeKind::Tokio) })*
        }
        mod smol {
            $(#[test] fn $name() { super::$name(ferry_server::RuntimeKind::Smol) })*
        }
    };
}

/// Generate four `#[test]`s for each `async fn case(target: Target)` named: `case::tokio` and
/// `case::smol` run it against one node on each runtime, `case::proxy_tokio` and
/// `case::proxy_smol` through `ferry proxy` in front of [`sdk::PROXY_NODES`] nodes. After
/// `resign:`, two more, `case::resign_tokio` and `case::resign_smol`, through a proxy that
/// re-signs with the nodes' own keys.
macro_rules! on_every_target {
    (resign: $($case:ident),* $(,)?) => {$(
        on_every_target!(@case $case:
            tokio NODE_TOKIO, smol NODE_SMOL, proxy_tokio PROXY_TOKIO, proxy_smol PROXY_SMOL,
            resign_tokio RESIGN_TOKIO, resign_smol RESIGN_SMOL);
    )*};
    ($($case:ident),* $(,)?) => {$(
        on_every_target!(@case $case:
            tokio NODE_TOKIO, smol NODE_SMOL, proxy_tokio PROXY_TOKIO, proxy_smol PROXY_SMOL);
    )*};
    (@case $case:ident: $($name:ident $target:ident),+) => {
        mod $case {
            $(
                #[test]
                fn $name() {
                    $crate::support::sdk::block_on(
                        super::$case($crate::support::sdk::Target::$target),
                    );
                }
            )+
        }
    };
}

pub mod http;
pub mod moto;
pub mod node;
pub mod pprof;
pub mod process;
pub mod proxy;
pub mod relay;
pub mod sdk;
pub mod sigv4_oracle;
pub mod store;
pub mod tmpfs;

/// The access key every test server accepts (and its clients sign with).
pub const ACCESS_KEY: &str = "AKIAFERRYTESTKEY0001";
/// Its secret.
pub const SECRET_KEY: &str = "ferry+test/secret+key/0123456789abcdefghij";
/// The region the servers sign for.
pub const REGION: &str = "us-east-1";
/// The cluster key every test node and proxy shares (`FERRY_CLUSTER_KEY` for processes).
pub const CLUSTER_KEY: &str = "c1a5be1f00d0c1a5be1f00d0c1a5be1f00d0c1a5be1f00d0c1a5be1f00d0c1a5";

/// The cluster's seal (`x-ferry-cluster-auth`) of a request with `method`, `target` and these
/// `x-ferry-*` headers, made now with [`CLUSTER_KEY`]: what a proxy of the cluster adds.
pub fn seal(method: &str, target: &str, headers: &[(&str, &str)]) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let hs = headers.iter().map(|(n, v)| (*n, v.as_bytes()));
    cluster_keys().seal(method, target, hs, now)
}

/// A version id as a node might have given a second ago (ids are the inverted microseconds
/// of their sequence): a placement a node takes (it refuses ids newer than its clock allows).
pub fn recent_version_id() -> String {
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    format!("{:016x}", !(micros - 1_000_000))
}

/// A key file holding [`CLUSTER_KEY`] in `dir` (mode 0600, as the servers ask), for a proxy's
/// TOML (`cluster_key_file`) or `--cluster-key`; written once.
pub fn cluster_key_file(dir: &std::path::Path) -> std::path::PathBuf {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let path = dir.join("cluster.key");
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
    {
        Ok(mut f) => writeln!(f, "{CLUSTER_KEY}").expect("cluster key written"),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => panic!("cluster key file: {e}"),
    }
    path
}

/// [`CLUSTER_KEY`] as the servers take it (`NodeConfig::cluster_keys`,
/// `ProxyConfig::cluster_keys`).
pub fn cluster_keys() -> ferry_server::ClusterKeys {
    ferry_server::ClusterKeys::parse(CLUSTER_KEY).expect("the test cluster key")
}

/// A user of a users file, for tests with several users.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestUser {
    /// Its name (and display name).
    pub name: &'static str,
    /// Its access key.
    pub access_key: &'static str,
    /// Its secret.
    pub secret_key: &'static str,
}

impl TestUser {
    /// As the server takes it (canonical id derived from the access key).
    pub fn user(&self) -> ferry_server::User {
        ferry_server::User::new(self.name, self.access_key, self.secret_key)
    }

    /// Its canonical id.
    pub fn canonical_id(&self) -> String {
        self.user().canonical_id
    }
}

/// A second user.
pub const ALICE: TestUser = TestUser {
    name: "alice",
    access_key: "AKIAFERRYTESTALICE01",
    secret_key: "alice/secret+key/0123456789abcdefghijklm",
};

/// A third user.
pub const BOB: TestUser = TestUser {
    name: "bob",
    access_key: "AKIAFERRYTESTBOB0001",
    secret_key: "bob/secret+key/0123456789abcdefghijklmno",
};
