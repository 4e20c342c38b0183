//! Ferry's server: the storage node ([`node`]) over its storage engine ([`store`]), the
//! frontend proxy ([`proxy`]), a local cluster of both ([`cluster`]), the limits on their
//! client connections ([`limits`]), the `ferry` command line ([`cli`]) and its logs
//! ([`logging`]).

pub mod cli;
pub mod cluster;
pub mod cluster_key;
mod front;
pub mod heap;
pub mod limits;
pub mod logging;
mod memory;
mod metrics;
pub mod node;
mod profile;
pub mod proxy;
mod service;
pub mod store;
pub mod tls;
pub mod users;
mod waits;

/// CPU time by request, on the thread CPU clock around each poll of a request's future
/// ([`ferry_cpu`], which `ferry-load` shares).
///
/// The front runs each request's future inside a `CpuAccount`; blocking work it hands to the
/// pool is measured on the pool's thread and added (`waits::Metered`), and so are the tasks it
/// spawns (a proxy's calls to several backends at once). Every task spawned outside a request
/// (a connection's engine, above all) is measured in a task account of its own; what a
/// connection spends between two requests — the previous answer's last flush, reading and
/// parsing the next head, a TLS handshake before the first — is charged to the request that
/// follows (`claim_current`, called by the front as a request starts and ends), so the
/// requests' figures include the engine's work for them. What runs elsewhere is in no
/// request's account: the runtimes' own scheduling and `epoll` calls between polls, the node's
/// `io_uring` reaper thread and the kernel's `io_uring` workers, jemalloc's background threads,
/// health probes, the node's lifecycle worker and the admin listener, and a connection's work
/// after its last request. Work one request does for others is in that request's account: the
/// leader of a group commit commits the whole group, and the task that drives an MD5 lane batch
/// hashes the other writes' chunks in it. The process's CPU clock (`process_cpu`,
/// `..._process_cpu_seconds_total` on `/metrics`) is the total those figures are a part of.
pub use ferry_cpu as cpu;

pub use cluster::{Cluster, ClusterConfig, start_cluster};
pub use ferry_core::s3::cluster::{ClusterKey, ClusterKeys};
pub use limits::ConnLimits;
pub use node::{DEFAULT_LIFECYCLE_INTERVAL, NodeConfig, NodeHandle, RuntimeKind, start_node};
pub use proxy::{BackendConfig, ProxyConfig, ProxyHandle, start_proxy};
pub use tls::TlsFiles;
pub use users::{User, Users};
