//! The `ferry` command line: `ferry node ...` runs a storage node, `ferry proxy ...` the
//! frontend proxy, and `ferry` alone a local cluster of both, until SIGTERM or SIGINT.

use std::fs;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::cluster::{ClusterConfig, start_cluster};
use crate::limits::{self, ConnLimits};
use crate::logging::{self, LogArgs};
use crate::node::{NodeConfig, RuntimeKind, start_node};
use crate::proxy::{BackendConfig, ProxyConfig, ReloadSource, start_proxy};
use crate::store::DEFAULT_MIN_PART_SIZE;
use crate::tls::{TlsFiles, scheme};
use ferry_core::s3::sigv4::Credentials;

/// Ferry: S3 storage nodes and the proxy in front of them. Without a subcommand, runs a local
/// cluster (a proxy on 127.0.0.1:8078 in front of two nodes with data under ./ferry-data).
#[derive(Debug, Parser)]
#[command(name = "ferry", version, about, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// What to run (nothing: a local cluster).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Local cluster options (without a subcommand).
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Logging options (every command).
    #[command(flatten)]
    pub log: LogArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a storage node: the S3 API over a local store.
    Node(NodeArgs),
    /// Run the frontend proxy: one S3 endpoint in front of many backends.
    Proxy(ProxyArgs),
    /// Manage the users file that `ferry node --users` and `ferry proxy --users` read.
    #[command(subcommand)]
    User(UserCommand),
    /// Move every object whose owner changed to its owner under the current layout of a proxy's
    /// configuration (`--config proxy.toml`), so that the previous layouts can be removed.
    Rebalance(RebalanceArgs),
    /// Make the cluster key that nodes, proxies and `ferry rebalance` share.
    #[command(subcommand)]
    ClusterKey(ClusterKeyCommand),
}

/// `ferry cluster-key ...`.
#[derive(Debug, Subcommand)]
pub enum ClusterKeyCommand {
    /// Write a new cluster key file (readable by its owner only; an existing file is never
    /// replaced). Give the same file to every node (`--cluster-key`), proxy and rebalance.
    /// To rotate: add the new key as a second line everywhere, then make it the first line
    /// everywhere, then remove the old one.
    New {
        /// The file to write.
        file: PathBuf,
    },
}

/// The local cluster's key file, in its data directory.
pub const CLUSTER_KEY_FILE: &str = "cluster.key";

/// `ferry rebalance` options: how to move, and the proxy's own options, whose backends,
/// layouts and keys it moves objects between.
#[derive(Debug, Clone, Args)]
pub struct RebalanceArgs {
    /// Bytes a second at most, all moves together (`50MiB`, `100MB`, `1048576`)
    /// [default: no bound].
    #[arg(long, value_name = "BYTES", value_parser = parse_bandwidth)]
    pub max_bandwidth: Option<u64>,
    /// Objects moved at once (1 to 256).
    #[arg(long, value_name = "N", default_value_t = crate::proxy::rebalance::DEFAULT_CONCURRENCY,
          value_parser = parse_concurrency)]
    pub concurrency: usize,
    /// Count and list (on stdout) what would move; move nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// No progress line on stderr (there is none when stderr is not a terminal either).
    #[arg(long)]
    pub quiet: bool,
    /// Serve Prometheus /metrics (ferry_rebalance_*) on this address while it runs.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
    /// The proxy's options: --config FILE, or --backend ..., and the client keys.
    #[command(flatten)]
    pub proxy: ProxyArgs,
}

/// A `--concurrency` value: 1 to 256.
fn parse_concurrency(s: &str) -> Result<usize, String> {
    use crate::proxy::rebalance::MAX_CONCURRENCY;
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_CONCURRENCY).contains(&n) => Ok(n),
        _ => Err(format!("expected 1 to {MAX_CONCURRENCY}")),
    }
}

/// A `--max-bandwidth` value: a byte count a second, more than 0.
fn parse_bandwidth(s: &str) -> Result<u64, String> {
    let n = s
        .trim()
        .parse::<bytesize::ByteSize>()
        .map(|b| b.as_u64())
        .map_err(|e| format!("invalid byte count {s:?}: {e}"))?;
    if n == 0 {
        return Err("the bandwidth must be more than 0".into());
    }
    Ok(n)
}

/// `ferry user ...`.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Add a user with a generated key pair and canonical id; prints its keys.
    Add {
        /// The user's name (letters, digits, '.', '_', '-').
        name: String,
        /// The users file (created, readable by its owner only, if missing).
        #[arg(long, value_name = "FILE", default_value = "users.toml")]
        users: PathBuf,
    },
}

/// Options of `ferry` without a subcommand (the local cluster).
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// Where the nodes keep their data (and the generated credentials).
    #[arg(long, value_name = "DIR", default_value = "ferry-data")]
    pub data: PathBuf,
    /// The S3 endpoint's address.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8078")]
    pub listen: SocketAddr,
    /// Number of storage nodes.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub nodes: usize,
    /// Async runtime: tokio or smol.
    #[arg(long, value_name = "NAME", default_value_t = RuntimeKind::Tokio)]
    pub runtime: RuntimeKind,
    /// A users file (TOML, written by `ferry user add`): its users may sign requests too,
    /// each owning the buckets it creates.
    #[arg(long, value_name = "FILE")]
    pub users: Option<PathBuf>,
    /// HTTPS for the S3 endpoint.
    #[command(flatten)]
    pub tls: TlsArgs,
    /// SigV2 and virtual-hosted-style addressing (the proxy's; SigV2 on the nodes too).
    #[command(flatten)]
    pub auth: AuthArgs,
    /// The nodes' lifecycle worker.
    #[command(flatten)]
    pub lifecycle: LifecycleArgs,
    /// Every node's SSE-KMS keyring, as `ferry node --sse-kms-keyring`.
    #[arg(long, value_name = "FILE")]
    pub sse_kms_keyring: Option<PathBuf>,
}

/// The lifecycle worker of `ferry node` (and of the local cluster's nodes).
#[derive(Debug, Clone, Args)]
pub struct LifecycleArgs {
    /// Seconds between two passes of the lifecycle worker, which applies the buckets'
    /// lifecycle rules (expirations, aborts of incomplete uploads); it also runs once at start.
    #[arg(long, value_name = "SECS", default_value_t = 3600,
          value_parser = clap::value_parser!(u64).range(1..=MAX_LIFECYCLE_INTERVAL_SECS))]
    pub lifecycle_interval: u64,
    /// Testing aid only: a lifecycle "day" lasts this many seconds (expiration `Days` and
    /// `DaysAfterInitiation` count such days), so that tests see objects expire without waiting
    /// days. Leave it alone in production.
    #[arg(long, value_name = "SECS", default_value_t = 86_400,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub lifecycle_day_secs: u64,
}

/// The longest interval between lifecycle passes: a week.
const MAX_LIFECYCLE_INTERVAL_SECS: u64 = 7 * 86_400;

impl LifecycleArgs {
    /// The interval, as a duration.
    fn interval(&self) -> Duration {
        Duration::from_secs(self.lifecycle_interval)
    }
}

/// `--tls-cert` and `--tls-key`: serve HTTPS instead of HTTP.
#[derive(Debug, Clone, Default, Args)]
pub struct TlsArgs {
    /// Serve HTTPS with this PEM certificate chain (leaf first); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

impl TlsArgs {
    /// The files, if given (clap makes sure they come together).
    pub fn files(&self) -> Option<TlsFiles> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(c), Some(k)) => Some(TlsFiles::new(c, k)),
            _ => None,
        }
    }
}

/// Limits on client connections, for `ferry node` and `ferry proxy` (see [`ConnLimits`]).
#[derive(Debug, Clone, Default, Args)]
pub struct LimitArgs {
    /// Most client connections open at once; past it a new connection takes the place of the
    /// one idle longest, or is closed at once [default: the open-file limit (raised to the hard
    /// limit at start) less 64, divided by 2 on a node, by 6 on the proxy]
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// A request head must arrive whole within this many milliseconds (from the connection's
    /// start for the first request) [default: 10000]
    #[arg(long, value_name = "MS")]
    pub header_timeout_ms: Option<u64>,
    /// A kept-alive connection waiting for its next request closes after this many
    /// milliseconds [default: 60000]
    #[arg(long, value_name = "MS")]
    pub idle_timeout_ms: Option<u64>,
    /// The reads of one request body may wait this many milliseconds in all before
    /// --min-body-rate applies [default: 30000]
    #[arg(long, value_name = "MS")]
    pub body_timeout_ms: Option<u64>,
    /// The slowest a request body may come, in bytes per second, once --body-timeout-ms is
    /// used up (0: that timeout bounds the whole body) [default: 1024]
    #[arg(long, value_name = "BYTES")]
    pub min_body_rate: Option<u64>,
}

impl LimitArgs {
    /// Set the limits given on the command line in `limits`.
    pub fn apply(&self, limits: &mut ConnLimits) {
        let ms = Duration::from_millis;
        if let Some(n) = self.max_connections {
            limits.max_connections = Some(n);
        }
        if let Some(t) = self.header_timeout_ms {
            limits.header_timeout = ms(t);
        }
        if let Some(t) = self.idle_timeout_ms {
            limits.idle_timeout = ms(t);
        }
        if let Some(t) = self.body_timeout_ms {
            limits.body_timeout = ms(t);
        }
        if let Some(r) = self.min_body_rate {
            limits.min_body_rate = r;
        }
    }
}

/// `ferry proxy` options.
#[derive(Debug, Clone, Args)]
pub struct ProxyArgs {
    /// Address of the S3 listener [default: 127.0.0.1:8078, or the config file's].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// A backend: ID=URL[,weight=W][,access-key=A,secret-key=S][,kind=ferry|s3]
    /// [,auth=auto|resign|passthrough][,region=R][,ca-cert=FILE][,insecure=true]. URL is
    /// http://HOST:PORT or https://HOST:PORT. Repeat for each backend.
    #[arg(long = "backend", value_name = "SPEC")]
    pub backends: Vec<String>,
    /// A TOML file with the same settings (listen, admin_listen, region, runtime, threads,
    /// buffer_size, connect_timeout_ms, io_timeout_ms, health_interval_ms, health_jitter_ms,
    /// backend_max_connections, backend_max_in_flight, retry_window_ms, max_connections, header_timeout_ms, idle_timeout_ms, body_timeout_ms, min_body_rate,
    /// token_secret, users, cluster_key_file, sigv2 (true/false), domains (a list),
    /// tls_cert, tls_key, [[credentials]] access_key/secret_key, [[backend]] id/url/weight/access_key/secret_key/
    /// kind/auth/region/ca_cert/insecure, [[layout]] version/backends); command-line options
    /// win. Read again on SIGHUP and POST /admin/reload (backends and layouts reload; the
    /// listeners, credentials and a few more need a restart).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address of the admin listener (/healthz, /readyz, /metrics); "none" for none
    /// [default: 127.0.0.1:8079].
    #[arg(long, value_name = "ADDR")]
    pub admin_listen: Option<String>,
    /// Async runtime: tokio or smol.
    #[arg(long, value_name = "NAME")]
    pub runtime: Option<RuntimeKind>,
    /// Region that client signatures are scoped to.
    #[arg(long, value_name = "REGION")]
    pub region: Option<String>,
    /// Runtime worker threads (0: one per CPU).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Size of the pooled buffers bodies stream through.
    #[arg(long, value_name = "BYTES")]
    pub buffer_size: Option<usize>,
    /// Backend connect timeout, in milliseconds.
    #[arg(long, value_name = "MS")]
    pub connect_timeout_ms: Option<u64>,
    /// Interval of backend health probes, in milliseconds.
    #[arg(long, value_name = "MS")]
    pub health_interval_ms: Option<u64>,
    /// Connections in use to one backend at most; more requests wait for one (within the
    /// retry window), then answer 503 SlowDown [default: 256].
    #[arg(long, value_name = "N")]
    pub backend_max_connections: Option<usize>,
    /// Requests in flight to one backend at most, waiting ones included; more answer
    /// 503 SlowDown at once [default: 1024].
    #[arg(long, value_name = "N")]
    pub backend_max_in_flight: Option<usize>,
    /// How long a request waits for a backend that is down (a restarting node) or sends an
    /// idempotent request again after its connection failed, in milliseconds; then
    /// 503 SlowDown [default: 2000].
    #[arg(long, value_name = "MS")]
    pub retry_window_ms: Option<u64>,
    /// Random extra wait added to each health-probe interval, up to this many milliseconds
    /// [default: 500].
    #[arg(long, value_name = "MS")]
    pub health_jitter_ms: Option<u64>,
    /// File with the access key and the secret key clients sign with, one per line (when the
    /// environment has neither FERRY_ACCESS_KEY/FERRY_SECRET_KEY nor
    /// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY).
    #[arg(long, value_name = "FILE")]
    pub credentials: Option<PathBuf>,
    /// A users file (TOML, written by `ferry user add`; `users` in the config file): its users
    /// may sign requests too. The nodes behind must read the same file: they decide what
    /// each user may do.
    #[arg(long, value_name = "FILE")]
    pub users: Option<PathBuf>,
    /// The cluster key file its Ferry nodes share (`cluster_key_file` in the config file, or
    /// FERRY_CLUSTER_KEY): the proxy seals with it what only the cluster may ask of a node.
    /// Needed with backends of kind ferry.
    #[arg(long, value_name = "FILE")]
    pub cluster_key: Option<PathBuf>,
    /// HTTPS for the S3 listener (the admin listener stays plain HTTP).
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Limits on client connections.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// SigV2 and virtual-hosted-style addressing.
    #[command(flatten)]
    pub auth: AuthArgs,
}

/// `--no-sigv2` and `--domain`, for `ferry node` and `ferry proxy`.
#[derive(Debug, Clone, Default, Args)]
pub struct AuthArgs {
    /// Refuse SigV2 signatures (`Authorization: AWS ...`, `Signature=` presigned URLs) with
    /// 403 AccessDenied; SigV4 only.
    #[arg(long)]
    pub no_sigv2: bool,
    /// A base domain for virtual-hosted-style requests: `Host: BUCKET.NAME[:port]` addresses
    /// BUCKET (a Host equal to NAME, or any other, is path-style). Repeatable.
    #[arg(long = "domain", value_name = "NAME")]
    pub domains: Vec<String>,
}

/// A `--domain` value: a host name, without port, scheme or path.
fn check_domain(d: &str) -> io::Result<()> {
    let ok = !d.is_empty()
        && d.len() <= 253
        && d.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    if ok {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("--domain {d:?}: expected a host name such as s3.example.com"),
        ))
    }
}

/// `ferry node` options.
#[derive(Debug, Clone, Args)]
pub struct NodeArgs {
    /// Directory of the store (created if missing).
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Async runtime: tokio or smol.
    #[arg(long, value_name = "NAME", default_value_t = RuntimeKind::Tokio)]
    pub runtime: RuntimeKind,
    /// Region that request signatures are scoped to.
    #[arg(long, value_name = "REGION", default_value = "us-east-1")]
    pub region: String,
    /// Runtime worker threads (0: one per CPU).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub threads: usize,
    /// Smallest size of every part but the last of a multipart upload.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MIN_PART_SIZE)]
    pub min_part_size: u64,
    /// File with the access key and the secret key, one per line (when the environment has
    /// neither FERRY_ACCESS_KEY/FERRY_SECRET_KEY nor AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY).
    #[arg(long, value_name = "FILE")]
    pub credentials: Option<PathBuf>,
    /// A users file (TOML, written by `ferry user add`): its users may sign requests too, each
    /// owning the buckets it creates. The proxies in front must read the same file.
    #[arg(long, value_name = "FILE")]
    pub users: Option<PathBuf>,
    /// The cluster key file (or FERRY_CLUSTER_KEY): what only the cluster may ask of the node
    /// (Ferry's x-ferry-* headers and parameters: a proxy's word on its client's address, a
    /// DeleteBucket's fence, a rebalance's placed versions) is taken only from requests sealed
    /// with it. Without it the node takes none, and no proxy can front it.
    #[arg(long, value_name = "FILE")]
    pub cluster_key: Option<PathBuf>,
    /// Do not fsync writes (tests and benchmarks only: a crash may lose acknowledged writes).
    #[arg(long)]
    pub no_fsync: bool,
    /// Write data files through the page cache instead of with O_DIRECT (a GET right after a
    /// PUT is then served from memory; a PUT costs more CPU).
    #[arg(long)]
    pub no_direct_io: bool,
    /// Hand every buffer of a streamed body to the blocking pool to be written instead of
    /// submitting the O_DIRECT writes through io_uring (to compare the two; kernels without
    /// io_uring take the blocking pool anyway).
    #[arg(long)]
    pub no_io_uring: bool,
    /// The SSE-S3 master key file: 64 hex digits (made with mode 0600 on first use if it does
    /// not exist). Default: DATA/sse-master.key.
    #[arg(long, value_name = "FILE")]
    pub sse_master_key: Option<std::path::PathBuf>,
    /// Take SSE-C keys over plain HTTP (tests only: the key crosses the network in the clear;
    /// without it such requests get 400 InvalidRequest, as on AWS).
    #[arg(long)]
    pub allow_sse_c_over_http: bool,
    /// The SSE-KMS keyring: TOML with `default = "ID"` and a `[keys]` table of ID = 64 hex
    /// digits, readable by its owner only (chmod 600). Without it, aws:kms requests are
    /// refused (400 KMS.NotFoundException).
    #[arg(long, value_name = "FILE")]
    pub sse_kms_keyring: Option<std::path::PathBuf>,
    /// Copy every GET body through pooled buffers instead of sending it from the data file
    /// with sendfile(2) (to compare the two; TLS connections always copy).
    #[arg(long)]
    pub no_sendfile: bool,
    /// Look objects up for GET and HEAD on the blocking-I/O pool instead of the runtime thread
    /// (for metadata on a slow disk, where a cold lookup would hold the thread's other
    /// connections).
    #[arg(long)]
    pub open_on_pool: bool,
    /// Address of the admin listener (/healthz, /readyz, /metrics, /debug/pprof/profile; plain
    /// HTTP, no authentication); "none" for none. Its address is in the "node listening" log
    /// event [default: 127.0.0.1:0, a free port].
    #[arg(long, value_name = "ADDR")]
    pub admin_listen: Option<String>,
    /// HTTPS for the S3 listener.
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Limits on client connections.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// SigV2 and virtual-hosted-style addressing.
    #[command(flatten)]
    pub auth: AuthArgs,
    /// The lifecycle worker.
    #[command(flatten)]
    pub lifecycle: LifecycleArgs,
}

/// Where the node's key came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// `FERRY_ACCESS_KEY` / `FERRY_SECRET_KEY`.
    FerryEnv,
    /// `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`.
    AwsEnv,
    /// `--credentials FILE`.
    File(PathBuf),
    /// `DIR/credentials`, written by an earlier start.
    Stored(PathBuf),
    /// `DIR/credentials`, generated now.
    Generated(PathBuf),
}

/// The access key and secret a node accepts, and where they came from.
#[derive(Clone, PartialEq, Eq)]
pub struct NodeCredentials {
    /// The access key id.
    pub access_key: String,
    /// The secret access key.
    pub secret_key: String,
    /// Where they came from.
    pub source: CredentialSource,
}

impl std::fmt::Debug for NodeCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeCredentials")
            .field("access_key", &self.access_key)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// The name of the generated credentials file in the data directory.
pub const CREDENTIALS_FILE: &str = "credentials";

/// Find the node's credentials: `FERRY_*` variables, else `AWS_*` variables, else `file`, else
/// `data_dir/credentials`, generated (mode 0600) when missing. `env` reads a variable.
pub fn resolve_credentials(
    env: &dyn Fn(&str) -> Option<String>,
    file: Option<&Path>,
    data_dir: &Path,
) -> io::Result<NodeCredentials> {
    let pair = |id: &str, secret: &str| match (env(id), env(secret)) {
        (Some(a), Some(s)) if !a.is_empty() && !s.is_empty() => Some((a, s)),
        _ => None,
    };
    if let Some((access_key, secret_key)) = pair("FERRY_ACCESS_KEY", "FERRY_SECRET_KEY") {
        return Ok(NodeCredentials {
            access_key,
            secret_key,
            source: CredentialSource::FerryEnv,
        });
    }
    if let Some((access_key, secret_key)) = pair("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY") {
        return Ok(NodeCredentials {
            access_key,
            secret_key,
            source: CredentialSource::AwsEnv,
        });
    }
    if let Some(path) = file {
        let (access_key, secret_key) = read_credentials(path)?;
        return Ok(NodeCredentials {
            access_key,
            secret_key,
            source: CredentialSource::File(path.to_owned()),
        });
    }
    let path = data_dir.join(CREDENTIALS_FILE);
    match read_credentials(&path) {
        Ok((access_key, secret_key)) => Ok(NodeCredentials {
            access_key,
            secret_key,
            source: CredentialSource::Stored(path),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let (access_key, secret_key) = crate::users::generate_credentials()?;
            crate::users::write_private(&path, format!("{access_key}\n{secret_key}\n").as_bytes())?;
            Ok(NodeCredentials {
                access_key,
                secret_key,
                source: CredentialSource::Generated(path),
            })
        }
        Err(e) => Err(e),
    }
}

/// Two non-empty lines: the access key, then the secret key.
fn read_credentials(path: &Path) -> io::Result<(String, String)> {
    let text = fs::read_to_string(path)?;
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    match (lines.next(), lines.next()) {
        (Some(a), Some(s)) => Ok((a.to_owned(), s.to_owned())),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: expected two lines, the access key and the secret key",
                path.display()
            ),
        )),
    }
}

/// `ferry node`: start the node, print the ready line, wait for SIGTERM or SIGINT, stop
/// gracefully.
pub fn run_node(args: NodeArgs) -> io::Result<()> {
    // Before anything starts, so that a signal sent as soon as the node is ready stops it
    // gracefully instead of killing the process (and a SIGHUP is taken, see `wait_for_stop`).
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP])?;
    // Owner-only, whatever the umask, as the store's own directories.
    crate::store::perms::create_dir_all(&args.data)?;
    let creds = resolve_credentials(
        &|name| std::env::var(name).ok(),
        args.credentials.as_deref(),
        &args.data,
    )?;
    if let CredentialSource::Generated(path) = &creds.source {
        // Shown once to the person who started the node, on stderr (stdout carries only the
        // ready line); not a log event, so that no secret ends up in collected logs.
        eprintln!("generated credentials in {}", path.display());
        eprintln!("access key: {}", creds.access_key);
        eprintln!("secret key: {}", creds.secret_key);
    }
    let mut cfg = NodeConfig::new(&args.data, args.listen, creds.access_key, creds.secret_key);
    cfg.users = users_of(args.users.as_deref())?;
    cfg.cluster_keys = crate::cluster_key::load(args.cluster_key.as_deref(), &|name| {
        std::env::var(name).ok()
    })?;
    if cfg.cluster_keys.is_none() {
        tracing::warn!(
            "no cluster key (--cluster-key FILE or FERRY_CLUSTER_KEY): the node takes no \
             request of the cluster's, so no proxy can front it"
        );
    }
    cfg.region = args.region;
    cfg.runtime = args.runtime;
    cfg.threads = args.threads;
    cfg.min_part_size = args.min_part_size;
    cfg.fsync = !args.no_fsync;
    cfg.direct_io = !args.no_direct_io;
    cfg.io_uring = !args.no_io_uring;
    cfg.sse_master_key.clone_from(&args.sse_master_key);
    cfg.allow_sse_c_over_http = args.allow_sse_c_over_http;
    cfg.sse_kms_keyring.clone_from(&args.sse_kms_keyring);
    cfg.sendfile = !args.no_sendfile;
    cfg.open_inline = !args.open_on_pool;
    cfg.lifecycle_interval = args.lifecycle.interval();
    cfg.lifecycle_day_secs = args.lifecycle.lifecycle_day_secs;
    cfg.tls = args.tls.files();
    args.limits.apply(&mut cfg.limits);
    cfg.sigv2 = !args.auth.no_sigv2;
    for d in &args.auth.domains {
        check_domain(d)?;
    }
    cfg.domains.clone_from(&args.auth.domains);
    if let Some(a) = &args.admin_listen {
        cfg.admin_listen = admin_listen(a)?;
    }
    let scheme = scheme(cfg.tls.as_ref());
    let node = start_node(cfg)?;
    {
        let mut out = io::stdout().lock();
        writeln!(
            out,
            "ferry node listening on {scheme}://{}",
            node.local_addr()
        )?;
        out.flush()?;
    }
    wait_for_stop(&mut signals);
    node.stop();
    Ok(())
}

/// Block until SIGTERM or SIGINT arrives, and log which. A SIGHUP is logged and otherwise
/// ignored: a node (or the local cluster) has no configuration to reload, and a
/// `kill -HUP $(pidof ferry)` meant for the proxies must not stop it (its default action).
fn wait_for_stop(signals: &mut Signals) {
    for sig in signals.forever() {
        if sig == SIGHUP {
            tracing::info!(
                signal = "SIGHUP",
                "nothing to reload (only `ferry proxy` reloads its configuration)"
            );
            continue;
        }
        let name = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
        tracing::info!(signal = name, "stopping gracefully");
        return;
    }
}

/// The proxy's configuration from its options, the config file and the environment.
pub fn proxy_config(
    args: &ProxyArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> io::Result<ProxyConfig> {
    let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
    let mut cfg = match &args.config {
        Some(path) => ProxyConfig::from_toml(&fs::read_to_string(path)?)
            .map_err(|e| invalid(format!("{}: {e}", path.display())))?,
        None => {
            let mut c =
                ProxyConfig::new(SocketAddr::from(([127, 0, 0, 1], 8078)), Vec::new(), "", "");
            c.credentials.clear();
            c.admin_listen = Some(SocketAddr::from(([127, 0, 0, 1], 8079)));
            c
        }
    };
    if let Some(l) = args.listen {
        cfg.listen = l;
    }
    for spec in &args.backends {
        cfg.backends
            .push(BackendConfig::parse_spec(spec).map_err(invalid)?);
    }
    if let Some(a) = &args.admin_listen {
        cfg.admin_listen = admin_listen(a)?;
    }
    if let Some(r) = args.runtime {
        cfg.runtime = r;
    }
    if let Some(r) = &args.region {
        cfg.region.clone_from(r);
    }
    if let Some(t) = args.threads {
        cfg.threads = t;
    }
    if let Some(b) = args.buffer_size {
        cfg.buffer_size = b;
    }
    if let Some(n) = args.backend_max_connections {
        cfg.backend_max_connections = n;
    }
    if let Some(n) = args.backend_max_in_flight {
        cfg.backend_max_in_flight = n;
    }
    if let Some(ms) = args.retry_window_ms {
        cfg.retry_window = std::time::Duration::from_millis(ms);
    }
    if let Some(ms) = args.health_jitter_ms {
        cfg.health_jitter = std::time::Duration::from_millis(ms);
    }
    if let Some(ms) = args.connect_timeout_ms {
        cfg.connect_timeout = std::time::Duration::from_millis(ms);
    }
    if let Some(ms) = args.health_interval_ms {
        cfg.health_interval = std::time::Duration::from_millis(ms);
    }
    if let Some(tls) = args.tls.files() {
        cfg.tls = Some(tls);
    }
    if args.users.is_some() {
        cfg.users = users_of(args.users.as_deref())?;
    }
    args.limits.apply(&mut cfg.limits);
    if args.auth.no_sigv2 {
        cfg.sigv2 = false;
    }
    // The command line's file, else the config file's, else the environment's keys.
    if args.cluster_key.is_some() || cfg.cluster_keys.is_none() {
        let keys = crate::cluster_key::load(args.cluster_key.as_deref(), env)?;
        cfg.cluster_keys = keys.or(cfg.cluster_keys);
    }
    // Command-line domains add to the file's.
    cfg.domains.extend(args.auth.domains.iter().cloned());
    for d in &cfg.domains {
        check_domain(d)?;
    }
    // The environment's (or --credentials') key comes first; the file's keys are kept too.
    let has_env = |a: &str, s: &str| {
        env(a).is_some_and(|v| !v.is_empty()) && env(s).is_some_and(|v| !v.is_empty())
    };
    if has_env("FERRY_ACCESS_KEY", "FERRY_SECRET_KEY")
        || has_env("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
        || args.credentials.is_some()
    {
        // Never reaches the data directory: a key was found before.
        let c = resolve_credentials(env, args.credentials.as_deref(), Path::new("/nonexistent"))?;
        cfg.credentials
            .insert(0, Credentials::new(c.access_key, c.secret_key));
    }
    if cfg.credentials.is_empty() && cfg.users.is_empty() {
        return Err(invalid(
            "no client key: set FERRY_ACCESS_KEY and FERRY_SECRET_KEY, or pass --credentials \
             FILE, or list [[credentials]] in the config file"
                .into(),
        ));
    }
    cfg.validate().map_err(invalid)?;
    Ok(cfg)
}

/// An `--admin-listen` value: `IP:PORT`, or `none` (or empty) for no admin listener.
fn admin_listen(value: &str) -> io::Result<Option<SocketAddr>> {
    match value {
        "none" | "" => Ok(None),
        a => a.parse().map(Some).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("--admin-listen {a:?} is not IP:PORT"),
            )
        }),
    }
}

/// `ferry proxy`: start the proxy, print the ready line, reload the configuration on SIGHUP,
/// wait for SIGTERM or SIGINT, stop gracefully.
pub fn run_proxy(args: ProxyArgs) -> io::Result<()> {
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP])?;
    let mut cfg = proxy_config(&args, &|name| std::env::var(name).ok())?;
    // A reload reads the command line, the file and the environment again, as the start did.
    let again = args.clone();
    cfg.reload = Some(ReloadSource::new(move || {
        proxy_config(&again, &|name| std::env::var(name).ok()).map_err(|e| e.to_string())
    }));
    // The proxy logs its listeners (the admin one too) as it starts.
    let scheme = scheme(cfg.tls.as_ref());
    let proxy = start_proxy(cfg)?;
    {
        let mut out = io::stdout().lock();
        writeln!(
            out,
            "ferry proxy listening on {scheme}://{}",
            proxy.local_addr()
        )?;
        out.flush()?;
    }
    for sig in signals.forever() {
        if sig == SIGHUP {
            tracing::info!(signal = "SIGHUP", "reloading the configuration");
            // The proxy logs what changed, or why the file was refused.
            let _ = proxy.reload();
            continue;
        }
        let name = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
        tracing::info!(signal = name, "stopping gracefully");
        break;
    }
    proxy.stop();
    Ok(())
}

/// `ferry rebalance`: run the rebalance, print its summary; whether every object is now on
/// its owner (the exit status is 2 if not).
pub fn run_rebalance(args: RebalanceArgs) -> io::Result<bool> {
    use std::io::IsTerminal as _;

    use crate::proxy::rebalance::{RebalanceOptions, rebalance};
    let cfg = proxy_config(&args.proxy, &|name| std::env::var(name).ok())?;
    let opts = RebalanceOptions {
        max_bandwidth: args.max_bandwidth,
        concurrency: args.concurrency,
        dry_run: args.dry_run,
        progress_line: !args.quiet && io::stderr().is_terminal(),
        metrics_listen: args.metrics_listen,
    };
    let report = rebalance(cfg, opts)?;
    let mut out = io::stdout().lock();
    out.write_all(report.summary().as_bytes())?;
    out.flush()?;
    Ok(report.dry_run || report.previous_layouts_removable())
}

/// `ferry user ...`.
pub fn run_user(cmd: UserCommand) -> io::Result<()> {
    match cmd {
        UserCommand::Add { name, users } => {
            let user = crate::users::add_user(&users, &name)?;
            let mut out = io::stdout().lock();
            writeln!(out, "added user {} to {}", user.name, users.display())?;
            writeln!(out, "  access key:   {}", user.access_key)?;
            writeln!(out, "  secret key:   {}", user.secret_key)?;
            writeln!(out, "  canonical id: {}", user.canonical_id)?;
            writeln!(
                out,
                "restart the nodes and proxies that read {} for it to take effect",
                users.display()
            )?;
            out.flush()
        }
    }
}

/// `ferry cluster-key ...`.
pub fn run_cluster_key(cmd: ClusterKeyCommand) -> io::Result<()> {
    match cmd {
        ClusterKeyCommand::New { file } => {
            crate::cluster_key::create(&file)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", file.display())))?;
            let mut out = io::stdout().lock();
            writeln!(
                out,
                "wrote a new cluster key to {}: give it to every node (--cluster-key) and \
                 proxy (--cluster-key, cluster_key_file) of the cluster",
                file.display()
            )?;
            out.flush()
        }
    }
}

/// The users of `--users FILE`, none without it.
fn users_of(file: Option<&Path>) -> io::Result<Vec<crate::users::User>> {
    file.map_or_else(|| Ok(Vec::new()), crate::users::load_users)
}

/// `ferry` alone: a local cluster (two nodes behind a proxy) until SIGTERM or SIGINT.
pub fn run_cluster(args: ClusterArgs) -> io::Result<()> {
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP])?;
    // Owner-only, whatever the umask, as the store's own directories.
    crate::store::perms::create_dir_all(&args.data)?;
    let creds = resolve_credentials(&|name| std::env::var(name).ok(), None, &args.data)?;
    let mut cfg = ClusterConfig::new(&args.data, &creds.access_key, &creds.secret_key);
    cfg.listen = args.listen;
    cfg.nodes = args.nodes;
    cfg.runtime = args.runtime;
    cfg.users = users_of(args.users.as_deref())?;
    cfg.tls = args.tls.files();
    cfg.sigv2 = !args.auth.no_sigv2;
    cfg.lifecycle_interval = args.lifecycle.interval();
    cfg.lifecycle_day_secs = args.lifecycle.lifecycle_day_secs;
    cfg.sse_kms_keyring.clone_from(&args.sse_kms_keyring);
    for d in &args.auth.domains {
        check_domain(d)?;
    }
    cfg.domains.clone_from(&args.auth.domains);
    // The environment's key, else the one made in the data directory on the first start (kept,
    // so that a `ferry node` or `ferry rebalance` can join this cluster later).
    cfg.cluster_keys = match crate::cluster_key::load(None, &|name| std::env::var(name).ok())? {
        Some(keys) => Some(keys),
        None => Some(crate::cluster_key::load_or_create(
            &args.data.join(CLUSTER_KEY_FILE),
        )?),
    };
    let scheme = scheme(cfg.tls.as_ref());
    let cluster = start_cluster(cfg)?;
    let endpoint = format!("{scheme}://{}", cluster.endpoint());
    {
        let mut out = io::stdout().lock();
        writeln!(
            out,
            "Ferry is running: S3 endpoint {endpoint} ({} storage nodes, data in {})",
            args.nodes,
            args.data.display()
        )?;
        match &creds.source {
            CredentialSource::Generated(p) | CredentialSource::Stored(p) => {
                writeln!(out, "credentials (stored in {}):", p.display())?;
            }
            _ => writeln!(out, "credentials (from the environment):")?,
        }
        writeln!(out, "  access key: {}", creds.access_key)?;
        writeln!(out, "  secret key: {}", creds.secret_key)?;
        if let Some(a) = cluster.admin_addr() {
            writeln!(out, "metrics: http://{a}/metrics")?;
        }
        writeln!(out, "try:")?;
        writeln!(
            out,
            "  export AWS_ACCESS_KEY_ID={} AWS_SECRET_ACCESS_KEY={} AWS_DEFAULT_REGION=us-east-1",
            creds.access_key, creds.secret_key
        )?;
        if let Some(cert) = &args.tls.tls_cert {
            // A self-signed certificate is its own CA.
            writeln!(out, "  export AWS_CA_BUNDLE={}", cert.display())?;
        }
        writeln!(out, "  aws --endpoint-url {endpoint} s3 mb s3://demo")?;
        writeln!(
            out,
            "  aws --endpoint-url {endpoint} s3 cp ./some-file s3://demo/"
        )?;
        writeln!(out, "  aws --endpoint-url {endpoint} s3 ls s3://demo/")?;
        out.flush()?;
    }
    wait_for_stop(&mut signals);
    cluster.stop();
    Ok(())
}

/// The `ferry` program.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = logging::init(&cli.log) {
        eprintln!("ferry: {e}");
        return ExitCode::FAILURE;
    }
    // Connections, backend connections and files all take descriptors, and the default
    // connection cap is derived from this limit.
    match limits::raise_fd_limit() {
        Ok((before, after)) if before != after => {
            tracing::info!(?before, ?after, "open-file limit raised to the hard limit");
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "cannot raise the open-file limit"),
    }
    let done = |r: io::Result<()>| r.map(|()| ExitCode::SUCCESS);
    let result = match cli.command {
        Some(Command::Node(args)) => done(run_node(args)),
        Some(Command::Proxy(args)) => done(run_proxy(args)),
        Some(Command::User(cmd)) => done(run_user(cmd)),
        Some(Command::ClusterKey(cmd)) => done(run_cluster_key(cmd)),
        // Some objects could not be moved: not a failure, but not done either.
        Some(Command::Rebalance(args)) => run_rebalance(args).map(|complete| {
            if complete {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            }
        }),
        None => done(run_cluster(cli.cluster)),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            tracing::error!(error = %e, "ferry stopped on an error");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A cluster key, as `FERRY_CLUSTER_KEY` holds it.
    const CLUSTER_KEY: &str = "4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f";

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn credentials_come_from_env_then_file_then_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        let both = env(&[
            ("FERRY_ACCESS_KEY", "fa"),
            ("FERRY_SECRET_KEY", "fs"),
            ("AWS_ACCESS_KEY_ID", "aa"),
            ("AWS_SECRET_ACCESS_KEY", "as"),
        ]);
        let c = resolve_credentials(&both, None, dir.path()).unwrap();
        assert_eq!(
            (c.access_key.as_str(), c.source),
            ("fa", CredentialSource::FerryEnv)
        );
        // Half a FERRY pair does not count.
        let aws = env(&[
            ("FERRY_ACCESS_KEY", "fa"),
            ("AWS_ACCESS_KEY_ID", "aa"),
            ("AWS_SECRET_ACCESS_KEY", "as"),
        ]);
        let c = resolve_credentials(&aws, None, dir.path()).unwrap();
        assert_eq!(
            (c.secret_key.as_str(), c.source),
            ("as", CredentialSource::AwsEnv)
        );

        let file = dir.path().join("keys");
        fs::write(&file, "  AKID\n\nSECRET  \n").unwrap();
        let c = resolve_credentials(&env(&[]), Some(&file), dir.path()).unwrap();
        assert_eq!(
            (c.access_key.as_str(), c.secret_key.as_str()),
            ("AKID", "SECRET")
        );
        fs::write(&file, "only one line\n").unwrap();
        let e = resolve_credentials(&env(&[]), Some(&file), dir.path()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(dir.path().join(CREDENTIALS_FILE).metadata().is_err());
    }

    #[test]
    fn generated_credentials_are_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = resolve_credentials(&env(&[]), None, dir.path()).unwrap();
        let path = dir.path().join(CREDENTIALS_FILE);
        assert_eq!(first.source, CredentialSource::Generated(path.clone()));
        assert_eq!(first.access_key.len(), 20);
        assert_eq!(first.secret_key.len(), 40);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = path.metadata().unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = resolve_credentials(&env(&[]), None, dir.path()).unwrap();
        assert_eq!(again.source, CredentialSource::Stored(path));
        assert_eq!(
            (again.access_key, again.secret_key),
            (first.access_key, first.secret_key)
        );
    }

    #[test]
    fn command_line_parses_as_the_contract_says() {
        let cli = Cli::try_parse_from([
            "ferry",
            "node",
            "--data",
            "/tmp/d",
            "--listen",
            "127.0.0.1:0",
            "--runtime",
            "smol",
            "--min-part-size",
            "1024",
        ])
        .unwrap();
        let Some(Command::Node(a)) = cli.command else {
            panic!("not a node command");
        };
        assert_eq!(a.runtime, RuntimeKind::Smol);
        assert_eq!(a.min_part_size, 1024);
        let mut limits = ConnLimits::default();
        a.limits.apply(&mut limits);
        assert_eq!(
            limits,
            ConnLimits::default(),
            "no limit option: the defaults"
        );
        assert_eq!(a.region, "us-east-1");
        assert_eq!(a.threads, 0);
        assert!(Cli::try_parse_from(["ferry", "node", "--data", "d", "--listen", "x:1"]).is_err());
        assert!(
            Cli::try_parse_from([
                "ferry",
                "node",
                "--data",
                "d",
                "--listen",
                "127.0.0.1:1",
                "--runtime",
                "glommio"
            ])
            .is_err()
        );
    }

    #[test]
    fn lifecycle_options_are_finite_and_go_to_nodes_and_the_local_cluster() {
        let node = |extra: &[&str]| {
            let mut args = vec!["ferry", "node", "--data", "d", "--listen", "127.0.0.1:0"];
            args.extend_from_slice(extra);
            Cli::try_parse_from(args)
        };
        let Some(Command::Node(a)) = node(&[]).unwrap().command else {
            panic!("not a node command");
        };
        assert_eq!(
            a.lifecycle.interval(),
            crate::node::DEFAULT_LIFECYCLE_INTERVAL
        );
        assert_eq!(a.lifecycle.lifecycle_day_secs, 86_400);
        let parsed = node(&["--lifecycle-interval", "5", "--lifecycle-day-secs", "2"]).unwrap();
        let Some(Command::Node(a)) = parsed.command else {
            panic!("not a node command");
        };
        assert_eq!(a.lifecycle.interval(), Duration::from_secs(5));
        assert_eq!(a.lifecycle.lifecycle_day_secs, 2);
        for bad in [
            ["--lifecycle-interval", "0"],
            ["--lifecycle-interval", "604801"],
            ["--lifecycle-day-secs", "0"],
            ["--lifecycle-day-secs", "86401"],
        ] {
            assert!(node(&bad).is_err(), "{bad:?}");
        }
        let cli = Cli::try_parse_from(["ferry", "--lifecycle-day-secs", "3"]).unwrap();
        assert_eq!(cli.cluster.lifecycle.lifecycle_day_secs, 3);
    }

    #[test]
    fn log_options_go_with_every_command() {
        use crate::logging::LogFormat;
        let cli = Cli::try_parse_from(["ferry", "--log-format", "json", "--access-log"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.log.log_format, LogFormat::Json);
        assert!(cli.log.access_log);
        let cli = Cli::try_parse_from([
            "ferry",
            "node",
            "--data",
            "d",
            "--listen",
            "127.0.0.1:0",
            "--log-level",
            "debug",
        ])
        .unwrap();
        assert!(matches!(cli.command, Some(Command::Node(_))));
        assert_eq!(cli.log.log_level.as_deref(), Some("debug"));
        assert_eq!(cli.log.log_format, LogFormat::Text);
        assert!(!cli.log.access_log);
        // After the subcommand (before it they would be the local cluster's).
        let cli = Cli::try_parse_from(["ferry", "proxy", "--log-format", "json", "--access-log"])
            .unwrap();
        assert!(matches!(cli.command, Some(Command::Proxy(_))));
        assert!(cli.log.access_log && cli.log.log_format == LogFormat::Json);
        assert!(Cli::try_parse_from(["ferry", "--log-format", "xml"]).is_err());
    }

    #[test]
    fn proxy_command_line_and_credentials() {
        let cli = Cli::try_parse_from([
            "ferry",
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "a=http://127.0.0.1:9001",
            "--backend",
            "b=http://127.0.0.1:9002,weight=2",
            "--admin-listen",
            "none",
        ])
        .unwrap();
        let Some(Command::Proxy(args)) = cli.command else {
            panic!("not a proxy command");
        };
        let keys = env(&[
            ("FERRY_ACCESS_KEY", "fa"),
            ("FERRY_SECRET_KEY", "fs"),
            ("FERRY_CLUSTER_KEY", CLUSTER_KEY),
        ]);
        let cfg = proxy_config(&args, &keys).unwrap();
        assert_eq!(cfg.backends.len(), 2);
        assert_eq!(cfg.backends[1].weight, 2);
        assert_eq!(cfg.admin_listen, None);
        assert_eq!(cfg.credentials, [Credentials::new("fa", "fs")]);
        // No key anywhere: refused.
        assert!(proxy_config(&args, &env(&[])).is_err());
        // No cluster key, or a bad one, for Ferry backends: refused, saying which.
        let keyless = env(&[("FERRY_ACCESS_KEY", "fa"), ("FERRY_SECRET_KEY", "fs")]);
        let e = proxy_config(&args, &keyless).unwrap_err().to_string();
        assert!(e.contains("cluster key"), "{e}");
        let bad = env(&[
            ("FERRY_ACCESS_KEY", "fa"),
            ("FERRY_SECRET_KEY", "fs"),
            ("FERRY_CLUSTER_KEY", "not hex"),
        ]);
        let e = proxy_config(&args, &bad).unwrap_err().to_string();
        assert!(
            e.contains("FERRY_CLUSTER_KEY") && !e.contains("not hex"),
            "{e}"
        );
        // `ferry cluster-key new FILE` writes a key file the proxy takes.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.key");
        let Some(Command::ClusterKey(cmd)) =
            Cli::try_parse_from(["ferry", "cluster-key", "new", file.to_str().unwrap()])
                .unwrap()
                .command
        else {
            panic!("not a cluster-key command");
        };
        run_cluster_key(cmd).unwrap();
        let with_file = Cli::try_parse_from([
            "ferry",
            "proxy",
            "--backend",
            "a=http://127.0.0.1:9001",
            "--cluster-key",
            file.to_str().unwrap(),
        ])
        .unwrap();
        let Some(Command::Proxy(file_args)) = with_file.command else {
            panic!("not a proxy command");
        };
        assert!(
            proxy_config(&file_args, &keyless)
                .unwrap()
                .cluster_keys
                .is_some()
        );
        // No backend: refused.
        let cli = Cli::try_parse_from(["ferry", "proxy"]).unwrap();
        let Some(Command::Proxy(args)) = cli.command else {
            panic!("not a proxy command");
        };
        assert!(proxy_config(&args, &keys).is_err());
        // No subcommand: the local cluster, with its defaults.
        let cli = Cli::try_parse_from(["ferry"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.cluster.listen, "127.0.0.1:8078".parse().unwrap());
        assert_eq!(cli.cluster.nodes, 2);
        assert_eq!(cli.cluster.tls.files(), None);
    }

    #[test]
    fn connection_limits_on_both_commands_and_over_the_file() {
        let flags = [
            "--max-connections",
            "100",
            "--header-timeout-ms",
            "1500",
            "--idle-timeout-ms",
            "2500",
            "--body-timeout-ms",
            "3500",
            "--min-body-rate",
            "64",
        ];
        let want = ConnLimits {
            max_connections: Some(100),
            header_timeout: Duration::from_millis(1500),
            idle_timeout: Duration::from_millis(2500),
            body_timeout: Duration::from_millis(3500),
            min_body_rate: 64,
        };
        let node = ["ferry", "node", "--data", "d", "--listen", "127.0.0.1:0"];
        let Some(Command::Node(args)) = Cli::try_parse_from(node.iter().chain(&flags))
            .unwrap()
            .command
        else {
            panic!("not a node command");
        };
        let mut limits = ConnLimits::default();
        args.limits.apply(&mut limits);
        assert_eq!(limits, want);
        let keys = env(&[
            ("FERRY_ACCESS_KEY", "fa"),
            ("FERRY_SECRET_KEY", "fs"),
            ("FERRY_CLUSTER_KEY", CLUSTER_KEY),
        ]);
        let proxy = ["ferry", "proxy", "--backend", "a=http://127.0.0.1:9001"];
        let Some(Command::Proxy(args)) = Cli::try_parse_from(proxy.iter().chain(&flags))
            .unwrap()
            .command
        else {
            panic!("not a proxy command");
        };
        assert_eq!(proxy_config(&args, &keys).unwrap().limits, want);
        // The file's values, with one option from the command line on top.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("proxy.toml");
        fs::write(
            &file,
            "max_connections = 7\nidle_timeout_ms = 900\n\
             [[backend]]\nid = \"a\"\nurl = \"http://127.0.0.1:9001\"\n",
        )
        .unwrap();
        let path = file.to_str().unwrap();
        let args = ["ferry", "proxy", "--config", path, "--max-connections", "9"];
        let Some(Command::Proxy(args)) = Cli::try_parse_from(args).unwrap().command else {
            panic!("not a proxy command");
        };
        let limits = proxy_config(&args, &keys).unwrap().limits;
        assert_eq!(limits.max_connections, Some(9));
        assert_eq!(limits.idle_timeout, Duration::from_millis(900));
        assert_eq!(limits.header_timeout, ConnLimits::default().header_timeout);
        // A zero timeout is refused.
        let args = ["ferry", "proxy", "--config", path, "--idle-timeout-ms", "0"];
        let Some(Command::Proxy(args)) = Cli::try_parse_from(args).unwrap().command else {
            panic!("not a proxy command");
        };
        assert!(proxy_config(&args, &keys).is_err());
    }

    #[test]
    fn sigv2_and_domains_on_both_commands_and_over_the_file() {
        let node = ["ferry", "node", "--data", "d", "--listen", "127.0.0.1:0"];
        let Some(Command::Node(args)) = Cli::try_parse_from(node).unwrap().command else {
            panic!("not a node command");
        };
        assert_eq!((args.auth.no_sigv2, args.auth.domains.len()), (false, 0));
        let flags = [
            "--no-sigv2",
            "--domain",
            "s3.example.com",
            "--domain",
            "s3.local",
        ];
        let Some(Command::Node(args)) = Cli::try_parse_from(node.iter().chain(&flags))
            .unwrap()
            .command
        else {
            panic!("not a node command");
        };
        assert!(args.auth.no_sigv2);
        assert_eq!(args.auth.domains, ["s3.example.com", "s3.local"]);
        let cli = Cli::try_parse_from(["ferry", "--domain", "s3.local", "--no-sigv2"]).unwrap();
        assert!(cli.command.is_none() && cli.cluster.auth.no_sigv2);
        assert_eq!(cli.cluster.auth.domains, ["s3.local"]);
        let keys = env(&[
            ("FERRY_ACCESS_KEY", "fa"),
            ("FERRY_SECRET_KEY", "fs"),
            ("FERRY_CLUSTER_KEY", CLUSTER_KEY),
        ]);
        let proxy = ["ferry", "proxy", "--backend", "a=http://127.0.0.1:9001"];
        let Some(Command::Proxy(args)) = Cli::try_parse_from(proxy).unwrap().command else {
            panic!("not a proxy command");
        };
        let cfg = proxy_config(&args, &keys).unwrap();
        assert!(cfg.sigv2 && cfg.domains.is_empty());
        // The file's domains, and the command line's added; the file turns SigV2 off.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("proxy.toml");
        fs::write(
            &file,
            "sigv2 = false\ndomains = [\"s3.example.com\"]\n\
             [[backend]]\nid = \"a\"\nurl = \"http://127.0.0.1:9001\"\n",
        )
        .unwrap();
        let path = file.to_str().unwrap();
        let args = ["ferry", "proxy", "--config", path, "--domain", "s3.local"];
        let Some(Command::Proxy(args)) = Cli::try_parse_from(args).unwrap().command else {
            panic!("not a proxy command");
        };
        let cfg = proxy_config(&args, &keys).unwrap();
        assert!(!cfg.sigv2);
        assert_eq!(cfg.domains, ["s3.example.com", "s3.local"]);
        // A domain with a port, a scheme or an empty label is refused.
        for bad in ["s3.local:9000", "http://s3.local", "s3..local", ""] {
            let args = proxy.iter().copied().chain(["--domain", bad]);
            let Some(Command::Proxy(args)) = Cli::try_parse_from(args).unwrap().command else {
                panic!("not a proxy command");
            };
            assert!(proxy_config(&args, &keys).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn rebalance_takes_the_proxys_options_and_finite_bounds() {
        let cli = Cli::try_parse_from([
            "ferry",
            "rebalance",
            "--config",
            "proxy.toml",
            "--max-bandwidth",
            "50MiB",
            "--concurrency",
            "8",
            "--dry-run",
            "--metrics-listen",
            "127.0.0.1:9101",
        ])
        .unwrap();
        let Some(Command::Rebalance(a)) = cli.command else {
            panic!("not a rebalance command");
        };
        assert_eq!(a.max_bandwidth, Some(50 << 20));
        assert_eq!(a.concurrency, 8);
        assert!(a.dry_run && !a.quiet);
        assert_eq!(a.proxy.config, Some(PathBuf::from("proxy.toml")));
        assert_eq!(a.metrics_listen, Some("127.0.0.1:9101".parse().unwrap()));
        let cli = Cli::try_parse_from(["ferry", "rebalance", "--backend", "a=http://h:1"]).unwrap();
        let Some(Command::Rebalance(a)) = cli.command else {
            panic!("not a rebalance command");
        };
        assert_eq!(
            (a.max_bandwidth, a.concurrency),
            (None, crate::proxy::rebalance::DEFAULT_CONCURRENCY)
        );
        for bad in [
            ["--max-bandwidth", "0"],
            ["--max-bandwidth", "fast"],
            ["--concurrency", "0"],
            ["--concurrency", "257"],
        ] {
            let args = ["ferry", "rebalance", "--config", "p.toml"]
                .into_iter()
                .chain(bad);
            assert!(Cli::try_parse_from(args).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn tls_options_come_in_pairs() {
        let tls = ["--tls-cert", "c.pem", "--tls-key", "k.pem"];
        let want = Some(TlsFiles::new("c.pem", "k.pem"));
        let backend = ["--backend", "a=http://127.0.0.1:9001"];
        let cli =
            Cli::try_parse_from(["ferry", "proxy"].iter().chain(&backend).chain(&tls)).unwrap();
        let Some(Command::Proxy(args)) = cli.command else {
            panic!("not a proxy command");
        };
        let keys = env(&[
            ("FERRY_ACCESS_KEY", "fa"),
            ("FERRY_SECRET_KEY", "fs"),
            ("FERRY_CLUSTER_KEY", CLUSTER_KEY),
        ]);
        assert_eq!(proxy_config(&args, &keys).unwrap().tls, want);
        let node = ["ferry", "node", "--data", "d", "--listen", "127.0.0.1:0"];
        let cli = Cli::try_parse_from(node.iter().chain(&tls)).unwrap();
        let Some(Command::Node(args)) = cli.command else {
            panic!("not a node command");
        };
        assert_eq!(args.tls.files(), want);
        let cli = Cli::try_parse_from(["ferry"].iter().chain(&tls)).unwrap();
        assert_eq!(cli.cluster.tls.files(), want);
        // One without the other is refused.
        for half in [&tls[..2], &tls[2..]] {
            let args = ["ferry", "proxy"].iter().chain(&backend).chain(half);
            assert!(Cli::try_parse_from(args).is_err(), "{half:?}");
            assert!(Cli::try_parse_from(["ferry"].iter().chain(half)).is_err());
        }
    }
}
