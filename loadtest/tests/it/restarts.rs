//! A rolling restart under load: `mixed` traffic through a proxy in front of three nodes while
//! each node in turn stops and starts again on the same address and data. The proxy waits for
//! a restarting node within its retry window, and answers `503 SlowDown` for what it cannot
//! replay (a PUT whose body had gone on a dead connection), which the load tester retries as
//! the SDKs do: zero failed operations, every read verified, the retries counted apart.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use ferry_core::s3::sigv4::Credentials;
use ferry_loadtest::config::{LoadConfig, ProgressMode, RuntimeKind, Workload};
use ferry_loadtest::run::run_with;
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
    pcfg.admin_listen = None;
    pcfg.health_interval = Duration::from_millis(200);
    pcfg.health_jitter = Duration::from_millis(50);
    // A busy test machine can take a while to start a node again.
    pcfg.retry_window = Duration::from_secs(5);
    let proxy = start_proxy(pcfg).expect("proxy starts");

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
    cfg.duration = Some(Duration::from_secs(6));
    cfg.retries = 8;
    let load = std::thread::spawn(move || run_with(cfg, true));
    for i in 0..3 {
        std::thread::sleep(Duration::from_millis(800));
        if let Some(h) = nodes[i].take() {
            h.stop();
        }
        nodes[i] = Some(node(dirs[i].path(), addrs[i], runtime));
    }
    let report = load.join().unwrap().expect("the run");
    let summary = report.summary();
    crate::assert_no_failed_operations(&report);
    for op in [OpKind::Get, OpKind::Put] {
        let n = report.op(op).map_or(0, |s| s.ops);
        assert!(n > 0, "no {op} operations:\n{summary}");
    }
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
