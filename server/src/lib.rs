//! Ferry's server: the storage node ([`node`]) over its storage engine ([`store`]), the
//! frontend proxy ([`proxy`]), a local cluster of both ([`cluster`]), the limits on their
//! client connections ([`limits`]), the `ferry` command line ([`cli`]) and its logs
//! ([`logging`]).

pub mod cli;
pub mod cluster;
pub mod cluster_key;
pub mod cpu;
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

pub use cluster::{Cluster, ClusterConfig, start_cluster};
pub use ferry_core::s3::cluster::{ClusterKey, ClusterKeys};
pub use limits::ConnLimits;
pub use node::{DEFAULT_LIFECYCLE_INTERVAL, NodeConfig, NodeHandle, RuntimeKind, start_node};
pub use proxy::{BackendConfig, ProxyConfig, ProxyHandle, start_proxy};
pub use tls::TlsFiles;
pub use users::{User, Users};
