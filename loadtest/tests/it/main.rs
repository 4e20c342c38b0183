//! ferry-load's integration tests, in one test binary (one link): a module per subject.

mod cli;
mod fake_s3;
mod fake_server;
mod md5;
mod objects;
mod rebalance;
mod restarts;
mod tls;
mod workloads;
