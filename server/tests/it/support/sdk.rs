//! The AWS SDK for Rust against a storage node on a temporary directory (or the local cluster:
//! the proxy in front of several), on either runtime: the client, error checks, checksums and
//! the decoding S3 asks of a client.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aws_credential_types::Credentials;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{BehaviorVersion, Region};
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::operation::copy_object::CopyObjectOutput;
use aws_sdk_s3::operation::head_object::HeadObjectOutput;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::ChecksumMode;
use ferry_core::place::Placement;
use ferry_server::{
    BackendConfig, Cluster, ClusterConfig, NodeConfig, NodeHandle, ProxyConfig, ProxyHandle,
    RuntimeKind, start_cluster, start_node, start_proxy,
};
use md5::{Digest, Md5};
use tempfile::TempDir;

use super::node::node_config;
use super::proxy::own_key;
use super::relay::Relay;
use super::{ACCESS_KEY, REGION, SECRET_KEY, TestUser};

/// S3's smallest part size (every part but the last).
pub const MIB5: u64 = 5 << 20;

/// Storage nodes behind the proxy of a proxy target.
pub const PROXY_NODES: usize = 3;

/// What a case talks to: one node, or the proxy in front of [`PROXY_NODES`] nodes, all on one
/// runtime. The proxy passes requests through to nodes that share its key (the local
/// cluster's setup), or re-signs them with keys of the nodes' own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The runtime of the node, or of the proxy and its nodes.
    pub runtime: RuntimeKind,
    /// Through `ferry proxy`.
    pub proxy: bool,
    /// Through a proxy that re-signs every request with its node's own key (each node knows
    /// only its key, so no client's signature could reach it unchanged).
    pub resign: bool,
}

impl Target {
    /// One node on tokio.
    pub const NODE_TOKIO: Self = Self::node(RuntimeKind::Tokio);
    /// One node on smol.
    pub const NODE_SMOL: Self = Self::node(RuntimeKind::Smol);
    /// The proxy and its nodes on tokio.
    pub const PROXY_TOKIO: Self = Self::proxy(RuntimeKind::Tokio);
    /// The proxy and its nodes on smol.
    pub const PROXY_SMOL: Self = Self::proxy(RuntimeKind::Smol);
    /// The re-signing proxy and its nodes on tokio.
    pub const RESIGN_TOKIO: Self = Self::resign(RuntimeKind::Tokio);
    /// The re-signing proxy and its nodes on smol.
    pub const RESIGN_SMOL: Self = Self::resign(RuntimeKind::Smol);

    const fn node(runtime: RuntimeKind) -> Self {
        Self {
            runtime,
            proxy: false,
            resign: false,
        }
    }

    const fn proxy(runtime: RuntimeKind) -> Self {
        Self {
            runtime,
            proxy: true,
            resign: false,
        }
    }

    const fn resign(runtime: RuntimeKind) -> Self {
        Self {
            runtime,
            proxy: true,
            resign: true,
        }
    }
}

/// Run a test's future on a fresh single-threaded tokio runtime (the SDK's runtime; the node
/// runs on threads of its own).
pub fn block_on<F: Future<Output = ()>>(f: F) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(f);
}

/// How to start a test node.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Smallest non-last part of a multipart upload.
    pub min_part_size: u64,
    /// fsync before acknowledging (off by default here: the crash test covers durability).
    pub fsync: bool,
    /// The node's region (the client signs for the same one).
    pub region: &'static str,
    /// Users besides the test key's (the proxy and every node know them).
    pub users: &'static [TestUser],
    /// Accept SigV2 (node and proxy).
    pub sigv2: bool,
    /// Virtual-hosted base domains (the node's, or the proxy's).
    pub domains: &'static [&'static str],
    /// The lifecycle worker's interval and day length in seconds (every node's); `None`: the
    /// node's defaults (a pass at start, then hourly; real days).
    pub lifecycle: Option<(Duration, u64)>,
    /// Nodes take SSE-C keys over plain HTTP (the test clients speak plain HTTP).
    pub sse_c_over_http: bool,
    /// Every node's SSE-KMS keyring, as the file's text (written with mode 0600 next to the
    /// data and passed to every node, also behind the proxy).
    pub sse_kms_keyring: Option<&'static str>,
}

/// [`Options::default`], for `..DEFAULT_OPTIONS` in constants.
pub const DEFAULT_OPTIONS: Options = Options {
    min_part_size: MIB5,
    fsync: false,
    region: REGION,
    users: &[],
    sigv2: true,
    domains: &[],
    lifecycle: None,
    sse_c_over_http: false,
    sse_kms_keyring: None,
};

impl Default for Options {
    fn default() -> Self {
        DEFAULT_OPTIONS
    }
}

/// What a [`TestNode`] runs: a node, a local cluster (proxy and nodes sharing its key), or a
/// proxy re-signing for nodes with keys of their own.
#[derive(Debug)]
enum Server {
    Node(NodeHandle),
    Cluster(Cluster),
    Resign {
        proxy: ProxyHandle,
        nodes: Vec<NodeHandle>,
        /// Between the proxy and each node: what the node received, whose signatures are
        /// checked with aws-sigv4 when the target stops.
        relays: Vec<Relay>,
    },
}

/// A node's configuration for `options`, on `dir`.
fn node_options(
    dir: &Path,
    runtime: RuntimeKind,
    options: Options,
    keyring: Option<&PathBuf>,
) -> NodeConfig {
    let mut cfg = node_config(dir, runtime);
    cfg.min_part_size = options.min_part_size;
    cfg.fsync = options.fsync;
    cfg.region = options.region.to_owned();
    cfg.users = options.users.iter().map(TestUser::user).collect();
    cfg.sigv2 = options.sigv2;
    cfg.domains = options.domains.iter().map(|d| (*d).to_owned()).collect();
    if let Some((interval, day_secs)) = options.lifecycle {
        cfg.lifecycle_interval = interval;
        cfg.lifecycle_day_secs = day_secs;
    }
    cfg.allow_sse_c_over_http = options.sse_c_over_http;
    cfg.sse_kms_keyring = keyring.cloned();
    // Many tests run at once on few cores: two workers each is plenty.
    cfg.threads = 2;
    cfg
}

impl Server {
    fn start(dir: &Path, target: Target, options: Options) -> Self {
        let keyring = options.sse_kms_keyring.map(|text| {
            use std::io::Write as _;
            use std::os::unix::fs::OpenOptionsExt as _;
            let path = dir.join("sse-kms-keyring.toml");
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&path)
                .expect("keyring file");
            f.write_all(text.as_bytes()).expect("keyring written");
            path
        });
        if target.resign {
            return Self::start_resign(dir, target, options, keyring.as_ref());
        }
        if target.proxy {
            let mut cfg = ClusterConfig::new(dir, ACCESS_KEY, SECRET_KEY);
            cfg.listen = "127.0.0.1:0".parse().expect("address");
            cfg.admin_listen = None;
            cfg.nodes = PROXY_NODES;
            cfg.runtime = target.runtime;
            cfg.threads = 2;
            cfg.fsync = options.fsync;
            cfg.min_part_size = Some(options.min_part_size);
            cfg.region = options.region.to_owned();
            cfg.users = options.users.iter().map(TestUser::user).collect();
            cfg.sigv2 = options.sigv2;
            cfg.domains = options.domains.iter().map(|d| (*d).to_owned()).collect();
            if let Some((interval, day_secs)) = options.lifecycle {
                cfg.lifecycle_interval = interval;
                cfg.lifecycle_day_secs = day_secs;
            }
            cfg.allow_sse_c_over_http = options.sse_c_over_http;
            cfg.sse_kms_keyring = keyring;
            cfg.cluster_keys = Some(super::cluster_keys());
            return Self::Cluster(start_cluster(cfg).expect("start cluster"));
        }
        Self::Node(
            start_node(node_options(dir, target.runtime, options, keyring.as_ref()))
                .expect("start node"),
        )
    }

    /// [`PROXY_NODES`] nodes in `dir/node-N` (as the local cluster lays them out), each
    /// knowing only a key of its own, and a proxy re-signing for them with those keys; the
    /// proxy alone knows the clients' keys. It reaches each node through a recording
    /// [`Relay`].
    fn start_resign(
        dir: &Path,
        target: Target,
        options: Options,
        keyring: Option<&PathBuf>,
    ) -> Self {
        let mut nodes = Vec::with_capacity(PROXY_NODES);
        let mut relays = Vec::with_capacity(PROXY_NODES);
        let mut backends = Vec::with_capacity(PROXY_NODES);
        for i in 1..=PROXY_NODES {
            let mut cfg = node_options(
                &dir.join(format!("node-{i}")),
                target.runtime,
                options,
                keyring,
            );
            (cfg.access_key, cfg.secret_key) = own_key(i);
            // The proxy's users are its own: each node serves only the proxy.
            cfg.users.clear();
            // The proxy seals its word on its clients (address, TLS), as in the local cluster.
            cfg.cluster_keys = Some(super::cluster_keys());
            let node = start_node(cfg).expect("start node");
            let relay = Relay::start(node.local_addr());
            let mut b = BackendConfig::new(format!("node-{i}"), relay.url());
            relays.push(relay);
            let (access, secret) = own_key(i);
            b.credentials = Some(ferry_core::s3::sigv4::Credentials::new(&access, &secret));
            backends.push(b);
            nodes.push(node);
        }
        let mut cfg = ProxyConfig::new(
            "127.0.0.1:0".parse().expect("address"),
            backends,
            ACCESS_KEY,
            SECRET_KEY,
        );
        cfg.cluster_keys = Some(crate::support::cluster_keys());
        cfg.admin_listen = None;
        cfg.runtime = target.runtime;
        cfg.threads = 2;
        cfg.region = options.region.to_owned();
        cfg.users = options.users.iter().map(TestUser::user).collect();
        cfg.sigv2 = options.sigv2;
        cfg.domains = options.domains.iter().map(|d| (*d).to_owned()).collect();
        let proxy = start_proxy(cfg).expect("start proxy");
        Self::Resign {
            proxy,
            nodes,
            relays,
        }
    }

    /// The S3 endpoint: the node, or the proxy.
    fn addr(&self) -> SocketAddr {
        match self {
            Self::Node(h) => h.local_addr(),
            Self::Cluster(c) => c.endpoint(),
            Self::Resign { proxy, .. } => proxy.local_addr(),
        }
    }

    /// Behind a proxy, its nodes (`node-1` first): address, access key and secret.
    fn nodes(&self) -> Vec<(SocketAddr, String, String)> {
        match self {
            Self::Node(_) => Vec::new(),
            Self::Cluster(c) => c
                .node_addrs()
                .into_iter()
                .map(|a| (a, ACCESS_KEY.to_owned(), SECRET_KEY.to_owned()))
                .collect(),
            Self::Resign { nodes, .. } => nodes
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let (access, secret) = own_key(i + 1);
                    (n.local_addr(), access, secret)
                })
                .collect(),
        }
    }

    /// Stop; behind a re-signing proxy, check every signature its nodes received (unless the
    /// test is failing already), with the nodes' keys, in `region`.
    fn stop(self, region: &str) {
        match self {
            Self::Node(h) => h.stop(),
            Self::Cluster(c) => c.stop(),
            Self::Resign {
                proxy,
                nodes,
                relays,
            } => {
                proxy.stop();
                for n in nodes {
                    n.stop();
                }
                if !std::thread::panicking() {
                    resigned_as_aws_signs(&relays, region);
                }
            }
        }
    }
}

/// Every request the nodes behind a re-signing proxy received through `relays` (node `i`'s
/// key for relay `i`) carries the signature aws-sigv4 makes of it; the only unsigned ones are
/// health probes (`GET /healthz`) and browser uploads as their anonymous clients sent them.
fn resigned_as_aws_signs(relays: &[Relay], region: &str) {
    let mut signed = 0;
    for (i, relay) in relays.iter().enumerate() {
        let (access, secret) = own_key(i + 1);
        let recorded = relay.recorded();
        let checked = super::sigv4_oracle::check(&recorded, &[(&access, &secret)], region);
        for r in &checked.unsigned {
            let probe = r.method == "GET" && r.target == "/healthz";
            assert!(
                probe || super::sigv4_oracle::anonymous_form(r),
                "an unsigned request reached node-{}: {r:?}",
                i + 1
            );
        }
        assert_eq!(checked.signed + checked.unsigned.len(), recorded.len());
        signed += checked.signed;
    }
    assert!(signed > 0, "no signed request reached a node");
}

/// A storage node serving a temporary directory (or the proxy in front of several, each on a
/// directory of its own below it), and an SDK client for it.
#[derive(Debug)]
pub struct TestNode {
    /// The SDK client (path-style, SigV4 with the test key, no retries).
    pub client: Client,
    /// Where the node (or the proxy) listens.
    pub addr: SocketAddr,
    /// What runs.
    pub target: Target,
    options: Options,
    server: Option<Server>,
    dir: TempDir,
}

impl TestNode {
    /// A node (or proxy) with the default options.
    pub fn start(target: Target) -> Self {
        Self::start_with(target, Options::default())
    }

    /// A node (or proxy) with `options` (for every node behind a proxy).
    pub fn start_with(target: Target, options: Options) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let server = Server::start(dir.path(), target, options);
        let addr = server.addr();
        Self {
            client: client_in(addr, options.region),
            addr,
            target,
            options,
            server: Some(server),
            dir,
        }
    }

    /// Stop gracefully and start again on the same directories (new ports; a proxy is
    /// restarted with its nodes, so it knows their new addresses).
    pub fn restart(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop(self.options.region);
        }
        let server = Server::start(self.dir.path(), self.target, self.options);
        self.addr = server.addr();
        self.client = client_in(self.addr, self.options.region);
        self.server = Some(server);
    }

    /// Behind a proxy, whether objects `a` and `b` (bucket, key) live on different nodes, so
    /// that a copy between them goes through the proxy; `None` on a single node.
    pub fn apart(&self, a: (&str, &str), b: (&str, &str)) -> Option<bool> {
        if !self.target.proxy {
            return None;
        }
        // The local cluster's backend ids, which placement hashes.
        let ids: Vec<String> = (1..=PROXY_NODES).map(|i| format!("node-{i}")).collect();
        let weighted: Vec<(&str, u32)> = ids.iter().map(|id| (id.as_str(), 1)).collect();
        let placement = Placement::new(&weighted).expect("placement");
        Some(placement.pick(a.0, a.1) != placement.pick(b.0, b.1))
    }

    /// A key of `bucket`, `prefix` and a number, that lives apart from object `near` (bucket,
    /// key) behind a proxy, or beside it (`apart: false`); `prefix` itself on a single node.
    pub fn key_placed(
        &self,
        bucket: &str,
        prefix: &str,
        near: (&str, &str),
        apart: bool,
    ) -> String {
        if !self.target.proxy {
            return prefix.to_owned();
        }
        (0..)
            .map(|i| format!("{prefix}-{i}"))
            .find(|k| self.apart(near, (bucket, k)) == Some(apart))
            .expect("a key")
    }

    /// Behind a proxy, the nodes (`0` for `node-1`) that hold `bucket/key`, asked directly
    /// with each node's key: those whose HEAD is not `404` (an SSE-C object answers `400`
    /// without its key). Where the proxy really put an object, beside where placement says.
    pub async fn holders(&self, bucket: &str, key: &str) -> Vec<usize> {
        let nodes = self.server.as_ref().map(Server::nodes).unwrap_or_default();
        let mut out = Vec::new();
        for (i, (addr, access, secret)) in nodes.into_iter().enumerate() {
            let creds = Credentials::new(access, secret, None, None, "node-key");
            let node = Client::from_conf(
                config(addr)
                    .region(Region::new(self.options.region))
                    .credentials_provider(creds)
                    .build(),
            );
            match node.head_object().bucket(bucket).key(key).send().await {
                Ok(_) => out.push(i),
                Err(e) => match status_of(&e) {
                    Some(404) => {}
                    Some(400) => out.push(i),
                    _ => panic!("HEAD {bucket}/{key} on node {i}: {}", show(&e)),
                },
            }
        }
        out
    }

    /// Whether objects `a` and `b` (bucket, key) live on the same node (always on a single
    /// node).
    pub fn same_node(&self, a: (&str, &str), b: (&str, &str)) -> bool {
        self.apart(a, b) != Some(true)
    }

    /// The admin listener of a single node (`None` through the proxy, whose test cluster has
    /// none).
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        match self.server.as_ref()? {
            Server::Node(h) => h.admin_addr(),
            Server::Cluster(_) | Server::Resign { .. } => None,
        }
    }

    /// An SDK client that signs as `user`.
    pub fn client_as(&self, user: &TestUser) -> Client {
        let creds = Credentials::new(user.access_key, user.secret_key, None, None, user.name);
        Client::from_conf(
            config(self.addr)
                .region(Region::new(self.options.region))
                .credentials_provider(creds)
                .build(),
        )
    }

    /// The directory the node (or every node of the proxy, each below it) stores in.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Create `bucket`, panicking on failure.
    pub async fn bucket(&self, bucket: &str) {
        self.client
            .create_bucket()
            .bucket(bucket)
            .send()
            .await
            .unwrap_or_else(|e| panic!("create bucket {bucket}: {}", show(&e)));
    }

    /// PUT `body` at `bucket/key`, returning the ETag.
    pub async fn put(&self, bucket: &str, key: &str, body: impl Into<Vec<u8>>) -> String {
        let out = self
            .client
            .put_object()
            .bucket(bucket)
            .key(key)
            .body(ByteStream::from(body.into()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("put {bucket}/{key}: {}", show(&e)));
        out.e_tag().expect("PutObject ETag").to_owned()
    }

    /// CopyObject `source` (`bucket/key`, encoded) to `bucket/key`.
    pub async fn copy(&self, bucket: &str, key: &str, source: &str) -> CopyObjectOutput {
        self.client
            .copy_object()
            .bucket(bucket)
            .key(key)
            .copy_source(source)
            .send()
            .await
            .unwrap_or_else(|e| panic!("copy {source} to {bucket}/{key}: {}", show(&e)))
    }

    /// HEAD `bucket/key`.
    pub async fn head(&self, bucket: &str, key: &str) -> HeadObjectOutput {
        self.client
            .head_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
            .unwrap_or_else(|e| panic!("head {bucket}/{key}: {}", show(&e)))
    }

    /// The CRC32 stored with `bucket/key` (HEAD with checksum mode).
    pub async fn crc32_of(&self, bucket: &str, key: &str) -> Option<String> {
        self.client
            .head_object()
            .bucket(bucket)
            .key(key)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap_or_else(|e| panic!("head {bucket}/{key}: {}", show(&e)))
            .checksum_crc32()
            .map(str::to_owned)
    }

    /// GET `bucket/key` whole.
    pub async fn get(&self, bucket: &str, key: &str) -> Vec<u8> {
        let out = self
            .client
            .get_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
            .unwrap_or_else(|e| panic!("get {bucket}/{key}: {}", show(&e)));
        body_bytes(out.body).await
    }
}

impl Drop for TestNode {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop(self.options.region);
        }
    }
}

/// An SDK client for a node at `addr`: path-style, plain HTTP, the test key, no retries (a
/// retried request would hide the first answer), generous timeouts so nothing hangs forever.
/// A test node (or proxy) whose users are ALICE and BOB besides the primary one: the tests of
/// policies, ACLs, users and the public access block.
pub fn with_users(target: Target) -> TestNode {
    TestNode::start_with(
        target,
        Options {
            users: &[crate::support::ALICE, crate::support::BOB],
            ..Options::default()
        },
    )
}

/// PutBucketPolicy, which must succeed.
pub async fn set_policy(c: &Client, bucket: &str, policy: &str) {
    c.put_bucket_policy()
        .bucket(bucket)
        .policy(policy)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put policy on {bucket}: {}", show(&e)));
}

/// PutObject of `key` whose body is the key itself, which must succeed.
pub async fn put_key(c: &Client, bucket: &str, key: &str) {
    c.put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(key.as_bytes().to_vec()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put {bucket}/{key}: {}", show(&e)));
}

pub fn client(addr: SocketAddr) -> Client {
    Client::from_conf(config(addr).build())
}

/// [`client`], signing for `region`.
pub fn client_in(addr: SocketAddr, region: &'static str) -> Client {
    Client::from_conf(config(addr).region(Region::new(region)).build())
}

/// The SDK configuration [`client`] uses, to adjust before building.
pub fn config(addr: SocketAddr) -> aws_sdk_s3::config::Builder {
    let creds = Credentials::new(ACCESS_KEY, SECRET_KEY, None, None, "ferry-tests");
    aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .endpoint_url(format!("http://{addr}"))
        .force_path_style(true)
        .credentials_provider(creds)
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .retry_config(RetryConfig::disabled())
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(10))
                .operation_attempt_timeout(Duration::from_secs(120))
                .build(),
        )
}

/// Read a response body to the end.
pub async fn body_bytes(body: ByteStream) -> Vec<u8> {
    body.collect()
        .await
        .expect("read body")
        .into_bytes()
        .to_vec()
}

/// Hex MD5 of `data`.
pub fn md5_hex(data: &[u8]) -> String {
    hex(&Md5::digest(data))
}

/// The ETag S3 gives a single-part object: its quoted hex MD5.
pub fn etag_of(data: &[u8]) -> String {
    format!("\"{}\"", md5_hex(data))
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A short description of an SDK error: status, code, message.
pub fn show<E: ProvideErrorMetadata + std::fmt::Debug, R: std::fmt::Debug>(
    e: &SdkError<E, R>,
) -> String {
    match e {
        SdkError::ServiceError(s) => format!(
            "service error {:?}: {:?} {:?}",
            s.raw(),
            e.code(),
            e.message()
        ),
        other => format!("{other:?}"),
    }
}

/// The HTTP status of a failed request, if a response came back.
pub fn status_of<E>(e: &SdkError<E, aws_sdk_s3::config::http::HttpResponse>) -> Option<u16> {
    e.raw_response().map(|r| r.status().as_u16())
}

/// Check that a request failed with this HTTP status and (for responses with a body) this S3
/// error code, via `ProvideErrorMetadata::code()`. `code: None` is for HEAD errors and 304s,
/// which have no body to carry a code.
#[track_caller]
pub fn assert_error<T: std::fmt::Debug, E: ProvideErrorMetadata + std::fmt::Debug>(
    result: Result<T, SdkError<E, aws_sdk_s3::config::http::HttpResponse>>,
    status: u16,
    code: Option<&str>,
) {
    match result {
        Ok(v) => panic!("expected {status} {code:?}, got success: {v:?}"),
        Err(e) => {
            assert_eq!(
                status_of(&e),
                Some(status),
                "wrong status for {code:?}: {}",
                show(&e)
            );
            if let Some(code) = code {
                assert_eq!(e.code(), Some(code), "wrong code: {}", show(&e));
            }
        }
    }
}

/// Check an S3 error code and status (the common case of [`assert_error`]).
#[track_caller]
pub fn assert_code<T: std::fmt::Debug, E: ProvideErrorMetadata + std::fmt::Debug>(
    result: Result<T, SdkError<E, aws_sdk_s3::config::http::HttpResponse>>,
    status: u16,
    code: &str,
) {
    assert_error(result, status, Some(code));
}

/// `n` bytes of a simple, position-dependent pattern (so misplaced bytes show).
pub fn pattern(n: usize, salt: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt) ^ ((i >> 8) as u8))
        .collect()
}

/// Percent-encode a key for `x-amz-copy-source` (everything but unreserved characters and `/`).
pub fn encode_key(key: &str) -> String {
    const SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~')
        .remove(b'/');
    percent_encoding::utf8_percent_encode(key, SET).to_string()
}

/// Decode a value S3 returned with `encoding-type=url`: form encoding, where `+` is a space
/// (as botocore's `unquote_plus` reads it; a literal `+` comes as `%2B`).
pub fn decode_url(value: &str) -> String {
    percent_encoding::percent_decode_str(&value.replace('+', " "))
        .decode_utf8()
        .expect("UTF-8 after decoding")
        .into_owned()
}

/// Decode a metadata value S3 returned: as is, or RFC 2047 encoded words
/// (`=?UTF-8?B?...?=` / `=?UTF-8?Q?...?=`), which is how S3 returns non-ASCII values.
pub fn decode_rfc2047(value: &str) -> String {
    use base64::Engine;
    let mut out = String::new();
    for word in value.split_whitespace() {
        let inner = word
            .strip_prefix("=?")
            .and_then(|w| w.strip_suffix("?="))
            .and_then(|w| {
                let mut it = w.splitn(3, '?');
                Some((it.next()?, it.next()?, it.next()?))
            });
        let Some((charset, enc, text)) = inner else {
            return value.to_owned();
        };
        assert!(charset.eq_ignore_ascii_case("UTF-8"), "charset {charset}");
        let bytes = if enc.eq_ignore_ascii_case("B") {
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .expect("base64 encoded word")
        } else {
            assert!(enc.eq_ignore_ascii_case("Q"), "encoding {enc}");
            let t = text.replace('_', " ").replace('=', "%");
            percent_encoding::percent_decode_str(&t).collect()
        };
        out.push_str(&String::from_utf8(bytes).expect("UTF-8 encoded word"));
    }
    out
}

/// Base64 of a big-endian checksum as S3 writes it in `x-amz-checksum-*`.
pub fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `x-amz-checksum-crc32` of `data`.
pub fn crc32_b64(data: &[u8]) -> String {
    let v = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32IsoHdlc, data) as u32;
    b64(&v.to_be_bytes())
}

/// `x-amz-checksum-crc32c` of `data`.
pub fn crc32c_b64(data: &[u8]) -> String {
    let v = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, data) as u32;
    b64(&v.to_be_bytes())
}

/// `x-amz-checksum-sha256` of `data`.
pub fn sha256_b64(data: &[u8]) -> String {
    use sha2::Digest as _;
    b64(&sha2::Sha256::digest(data))
}

/// An SDK interceptor that keeps the headers of the last request sent, to check what the SDK
/// put on the wire (aws-chunked encoding, trailers, checksum headers).
#[derive(Debug, Clone, Default)]
pub struct RequestRecorder(std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>);

impl RequestRecorder {
    /// The last request's header `name` (lower case); several fields are joined with `,`.
    pub fn header(&self, name: &str) -> Option<String> {
        let headers = self.0.lock().expect("recorder lock");
        let values: Vec<&str> = headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect();
        (!values.is_empty()).then(|| values.join(","))
    }
}

impl aws_sdk_s3::config::Intercept for RequestRecorder {
    fn name(&self) -> &'static str {
        "RequestRecorder"
    }

    fn read_before_transmit(
        &self,
        context: &aws_sdk_s3::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _components: &aws_sdk_s3::config::RuntimeComponents,
        _cfg: &mut aws_sdk_s3::config::ConfigBag,
    ) -> Result<(), aws_sdk_s3::error::BoxError> {
        let headers = context
            .request()
            .headers()
            .iter()
            .map(|(n, v)| (n.to_ascii_lowercase(), v.to_owned()))
            .collect();
        *self.0.lock().expect("recorder lock") = headers;
        Ok(())
    }
}

/// A client for `addr` that records its requests' headers.
pub fn recording_client(addr: SocketAddr) -> (Client, RequestRecorder) {
    let rec = RequestRecorder::default();
    let client = Client::from_conf(config(addr).interceptor(rec.clone()).build());
    (client, rec)
}

/// Sign a body-less request in headers with `aws-sigv4` at `time` (the SDK always signs with
/// the current time): the headers to add (`authorization`, `x-amz-date`, `x-amz-content-sha256`).
pub fn sign_headers_at(
    method: &str,
    url: &str,
    time: std::time::SystemTime,
) -> Vec<(String, String)> {
    use aws_sigv4::http_request::{
        PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
        UriPathNormalizationMode, sign,
    };
    use aws_sigv4::sign::v4;
    let identity = Credentials::new(ACCESS_KEY, SECRET_KEY, None, None, "sigv4").into();
    let mut settings = SigningSettings::default();
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(REGION)
        .name("s3")
        .time(time)
        .settings(settings)
        .build()
        .expect("signing params")
        .into();
    let request = SignableRequest::new(method, url, std::iter::empty(), SignableBody::Bytes(&[]))
        .expect("signable request");
    let (instructions, _) = sign(request, &params).expect("sign").into_parts();
    let (headers, _) = instructions.into_parts();
    headers
        .iter()
        .map(|h| (h.name().to_owned(), h.value().to_owned()))
        .collect()
}

/// Run a python3 script (a boto3 client's steps) with `args` on the blocking pool; it must
/// exit successfully and print `ok` first.
/// What every boto3 script starts with: imports, and `c`, a boto3 S3 client of `ep` signing
/// with the test key (SigV4, path-style, one attempt per call).
pub const BOTO3_PRELUDE: &str = r#"
import base64, hashlib, io, json, sys
import boto3
from botocore.config import Config
ep, ak, sk = sys.argv[1:4]
c = boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="us-east-1",
                 config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                               retries={"max_attempts": 1}))
"#;

/// Run `script` after [`BOTO3_PRELUDE`] against `n`; it fails the test unless it exits 0.
pub async fn run_boto3(n: &TestNode, script: &str) {
    run_python(
        format!("{BOTO3_PRELUDE}{script}"),
        vec![
            n.endpoint(),
            crate::support::ACCESS_KEY.to_owned(),
            crate::support::SECRET_KEY.to_owned(),
        ],
    )
    .await;
}

pub async fn run_python(script: impl Into<String>, args: Vec<String>) {
    let script = script.into();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("python3")
            .arg("-c")
            .arg(script)
            .args(&args)
            .output()
            .expect("python3 runs")
    })
    .await
    .expect("joined");
    assert!(
        out.status.success() && out.stdout.starts_with(b"ok"),
        "python script failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
