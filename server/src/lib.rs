//! Ferry's server: so far the storage node's engine ([`store`]).

pub mod store;
