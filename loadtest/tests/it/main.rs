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

/// A run under a cluster that changes (restarts, reloads, rebalancing) had no client errors:
/// zero failed and zero throttled operations (a `503 SlowDown` still there after the last retry
/// counts as throttled, not failed) and zero verification mismatches. Retries are allowed; how
/// many there were is in the message.
fn assert_no_failed_operations(report: &ferry_loadtest::report::RunReport) {
    let costs = report.costs();
    let (failed, throttled) = (report.error_count(), report.throttled_count());
    assert!(
        failed == 0 && throttled == 0 && report.mismatches.is_empty(),
        "{failed} failed, {throttled} throttled, {} mismatched operations \
         ({} retries, {} of them after a throttling answer):\n{}",
        report.mismatches.len(),
        costs.retries,
        costs.throttled_retries,
        report.summary()
    );
}

/// The cluster key of the tests' nodes and proxies (`NodeConfig::cluster_keys`).
fn cluster_keys() -> ferry_server::ClusterKeys {
    ferry_server::ClusterKeys::parse(&"6b".repeat(32)).expect("a cluster key")
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
