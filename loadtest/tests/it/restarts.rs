//! A rolling restart under load: `mixed` traffic through a proxy in front of three nodes while
//! each node in turn stops and starts again on the same address and data. The proxy waits for
//! a restarting node within its retry window, and answers `503 SlowDown` for what it cannot
//! replay (a PUT whose body had gone on a dead connection), which the load tester retries as
//! the SDKs do: zero failed operations, every read verified, the retries counted apart.
//!
//! Each restart must meet the load (the proxy's counters say so): operations answered before
//! the node stops, a request of the load held for it while it is down (the proxy marked it
//! down), the held requests going on once it is back (the node's retries), and operations
//! after, some on it. The load runs until the last restart is over.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ferry_core::s3::sigv4::Credentials;
use ferry_loadtest::config::{LoadConfig, ProgressMode, RuntimeKind, Workload};
use ferry_loadtest::control::RunControl;
use ferry_loadtest::run::run_controlled;
use ferry_loadtest::size::SizeSpec;
use ferry_loadtest::stats::OpKind;
use ferry_server::{BackendConfig, NodeConfig, NodeHandle, ProxyConfig, start_node, start_proxy};

const KEY: (&str, &str) = ("restart-key", "restart-secret");

fn node(dir: &Path, listen: SocketAddr, runtime: RuntimeKind) -> NodeHandle {
    let mut cfg = NodeConfig::new(dir, listen, KEY.0, KEY.1);
    cfg.cluster_keys = Some(crate::cluster_keys());
    cfg.runtime = runtime;
    cfg.threads = 1;
    cfg.fsync = false;
    // The port of the stopped process may linger a moment.
    for _ in 0..100 {
        if let Ok(h) = start_node(cfg.clone()) {
            return h;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("node on {listen} does not start");
}

/// Operations the proxy answers with success before, while and after each node is down.
const OPS_AROUND: u64 = 20;
/// The longest any awaited condition may take (a stuck load or node fails the test).
const WITHIN: Duration = Duration::from_secs(60);

fn rolling_restart(runtime: RuntimeKind) {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut nodes: Vec<Option<NodeHandle>> = dirs
        .iter()
        .map(|d| Some(node(d.path(), any, runtime)))
        .collect();
    let addrs: Vec<SocketAddr> = nodes
        .iter()
        .map(|n| n.as_ref().unwrap().local_addr())
        .collect();
    let backends = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| BackendConfig::new(format!("node-{i}"), format!("http://{a}")))
        .collect();
    let mut pcfg = ProxyConfig::new(any, backends, KEY.0, KEY.1);
    pcfg.cluster_keys = Some(crate::cluster_keys());
    pcfg.runtime = runtime;
    pcfg.threads = 2;
    pcfg.health_interval = Duration::from_millis(200);
    pcfg.health_jitter = Duration::from_millis(50);
    // A busy test machine can take a while to start a node again.
    pcfg.retry_window = Duration::from_secs(5);
    let proxy = start_proxy(pcfg).expect("proxy starts");
    let admin = proxy.admin_addr().expect("the proxy's admin listener");

    let mut cfg = LoadConfig::new(
        Workload::Mixed,
        format!("http://{}", proxy.local_addr()),
        Credentials::new(KEY.0, KEY.1),
    );
    cfg.runtime = runtime;
    cfg.threads = 1;
    cfg.progress = ProgressMode::Off;
    cfg.concurrency = 4;
    cfg.size = SizeSpec::Fixed(16 << 10);
    cfg.objects = 24;
    // Stopped once every restart is over; the duration only bounds a run that hangs.
    cfg.duration = Some(Duration::from_secs(300));
    cfg.retries = 8;
    let control = Arc::new(RunControl::new());
    let stop = control.clone();
    let load = std::thread::spawn(move || run_controlled(cfg, true, control));
    let metric = |name: &str, i: usize| {
        crate::admin_metric(
            admin,
            &format!("ferry_proxy_{name}{{backend=\"node-{i}\""),
            "",
        )
    };
    let answered = || crate::proxy_answered(admin);
    let mut log = Vec::new();
    for i in 0..3 {
        // Before: the load is being served.
        let mark = answered();
        crate::wait_until(
            &format!("{OPS_AROUND} operations before node-{i} stops"),
            WITHIN,
            || answered() >= mark + OPS_AROUND,
        );
        let retries = metric("backend_retries_total", i);
        let stopping = answered();
        if let Some(h) = nodes[i].take() {
            h.stop();
        }
        // During: the proxy sees the node down and holds a request of the load for it (it
        // waits for the node to come back). The node starts again at once: waiting longer
        // would make a restart of more than the proxy's retry window.
        crate::wait_until(
            &format!("a request held for node-{i} while it is down"),
            WITHIN,
            || metric("backend_up", i) == 0 && metric("backend_in_flight", i) >= 1,
        );
        nodes[i] = Some(node(dirs[i].path(), addrs[i], runtime));
        let during = answered() - stopping;
        // After: the held requests went on once it was back (each counted as a retry of the
        // node), and the load is served again, node-{i} included.
        let back = answered();
        let requests = metric("backend_requests_total", i);
        crate::wait_until(
            &format!("the requests held for node-{i} go on once it is back"),
            WITHIN,
            || metric("backend_retries_total", i) > retries,
        );
        crate::wait_until(
            &format!("{OPS_AROUND} operations after node-{i} is back, some on it"),
            WITHIN,
            || answered() >= back + OPS_AROUND && metric("backend_requests_total", i) > requests,
        );
        log.push(format!(
            "node-{i}: {during} operations answered from its stop to its start, {} retries",
            metric("backend_retries_total", i) - retries
        ));
    }
    stop.stop("every node has restarted");
    let report = load.join().unwrap().expect("the run");
    let summary = report.summary();
    crate::assert_no_failed_operations(&report);
    for op in [OpKind::Get, OpKind::Put] {
        let n = report.op(op).map_or(0, |s| s.ops);
        assert!(n > 0, "no {op} operations:\n{summary}");
    }
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("every node has restarted")),
        "the run ended before the restarts did: {:?}\n{summary}",
        report.notes
    );
    eprintln!("{}", log.join("; "));
    proxy.stop();
    for n in nodes.into_iter().flatten() {
        n.stop();
    }
}

#[test]
fn rolling_restart_tokio() {
    rolling_restart(RuntimeKind::Tokio);
}

#[test]
fn rolling_restart_smol() {
    rolling_restart(RuntimeKind::Smol);
}
