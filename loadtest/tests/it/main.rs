//! ferry-load's integration tests, in one test binary (one link): a module per subject.

/// A test module's cases, each `fn case(RuntimeKind)`, as tests on both runtimes (`tokio::case`,
/// `smol::case`); the module must have `RuntimeKind` in scope.
macro_rules! on_both_runtimes {
    ($($case:ident),* $(,)?) => {
        mod tokio {
            $(#[test] fn $case() { super::$case(super::RuntimeKind::Tokio) })*
        }
        mod smol {
            $(#[test] fn $case() { super::$case(super::RuntimeKind::Smol) })*
        }
    };
}

mod agents;
mod cli;
mod fake_s3;
mod fake_server;
mod md5;
mod objects;
mod overhead;
mod rebalance;
mod restarts;
mod results;
mod tls;
mod workloads;
