//! `ferry-load overhead`: the same workload straight to a storage node and through a proxy in
//! front of it, in alternating rounds, both sides added up exactly, on both runtimes.

use std::net::SocketAddr;
use std::process::Command;

use ferry_loadtest::config::RuntimeKind;
use ferry_loadtest::overhead::OverheadReport;
use ferry_loadtest::stats::OpKind;
use ferry_server::{BackendConfig, NodeConfig, ProxyConfig, start_node, start_proxy};

const KEY: (&str, &str) = ("overhead-key", "overhead-secret");

fn direct_and_via_a_proxy(rt: RuntimeKind) {
    let dir = tempfile::tempdir().unwrap();
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut ncfg = NodeConfig::new(dir.path().join("node"), any, KEY.0, KEY.1);
    ncfg.cluster_keys = Some(crate::cluster_keys());
    ncfg.runtime = rt;
    ncfg.threads = 1;
    ncfg.fsync = false;
    let node = start_node(ncfg).expect("node");
    let direct = format!("http://{}", node.local_addr());
    let mut pcfg = ProxyConfig::new(any, vec![BackendConfig::new("n1", &direct)], KEY.0, KEY.1);
    pcfg.cluster_keys = Some(crate::cluster_keys());
    pcfg.runtime = rt;
    pcfg.threads = 1;
    pcfg.admin_listen = None;
    let proxy = start_proxy(pcfg).expect("proxy");
    let via = format!("http://{}", proxy.local_addr());
    let json = dir.path().join("overhead.json");
    let out = Command::new(env!("CARGO_BIN_EXE_ferry-load"))
        .args(["overhead", "--direct", &direct, "--via", &via])
        .args(["--workload", "get", "--rounds", "3", "--ops", "20"])
        .args(["-c", "2", "--objects", "5", "--size", "8KiB", "--md5"])
        .args(["--access-key", KEY.0, "--secret-key", KEY.1])
        .args(["--runtime", rt.as_str(), "--threads", "1"])
        .args(["--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for row in ["ops/s", "MB/s", "p50", "p99", "errors"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(row)),
            "no {row} row:\n{stdout}"
        );
    }
    assert!(stdout.contains("via/direct"), "{stdout}");
    // Three rounds each, alternating: direct first, then via first, then direct first.
    let rounds: Vec<&str> = stderr.lines().filter(|l| l.starts_with("round ")).collect();
    let want: Vec<String> = [
        (1, &direct),
        (1, &via),
        (2, &via),
        (2, &direct),
        (3, &direct),
        (3, &via),
    ]
    .iter()
    .map(|(r, u)| format!("round {r}/3: {u}"))
    .collect();
    assert_eq!(rounds, want, "{stderr}");

    let r: OverheadReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for (side, url) in [(&r.direct, &direct), (&r.via, &via)] {
        let get = side.op(OpKind::Get).unwrap();
        assert_eq!((get.ops, get.error_count()), (60, 0), "{}", side.summary());
        assert_eq!(get.bytes, 60 * 8192);
        assert_eq!(get.latency.count(), 60);
        assert_eq!(side.merged_runs, 3);
        assert_eq!(&side.endpoints, std::slice::from_ref(url));
        assert!(side.elapsed_s > 0.0);
    }
    let ratio = |name: &str| {
        r.ratios
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no {name} ratio: {:?}", r.ratios))
    };
    for name in ["ops/s", "p50", "p99"] {
        let v = ratio(name);
        assert!(v.is_finite() && v > 0.0, "{name}: {v}");
    }
    proxy.stop();
    node.stop();
}

on_both_runtimes!(direct_and_via_a_proxy);
