//! Ferry's server: the storage node ([`node`]) over its storage engine ([`store`]), and the
//! `ferry` command line ([`cli`]).

pub mod cli;
pub mod node;
pub mod store;

pub use node::{NodeConfig, NodeHandle, RuntimeKind, start_node};
