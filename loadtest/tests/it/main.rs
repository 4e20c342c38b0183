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

/// What the admin listener at `admin` (a proxy's) counts now: the sum of the values of its
/// metric lines that start with `start` and contain `with` (`""`: any).
fn admin_metric(admin: std::net::SocketAddr, start: &str, with: &str) -> u64 {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(admin).expect("the admin listener");
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("read timeout");
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: admin\r\n\r\n")
        .expect("ask for the metrics");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("the metrics");
    text.lines()
        .filter(|l| l.starts_with(start) && l.contains(with))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// Requests the proxy whose admin listener is `admin` answered with success (2xx): the load's
/// operations it completed (the proxy's own requests to its backends are not counted here).
fn proxy_answered(admin: std::net::SocketAddr) -> u64 {
    admin_metric(admin, "ferry_proxy_requests_total{", "status=\"2")
}

/// Poll `cond` every 10 ms until it holds; fail the test, saying `what` was awaited, once
/// `within` has passed without it.
fn wait_until(what: &str, within: std::time::Duration, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + within;
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "not within {within:?}: {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
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
