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
    assert_eq!(
        (r.workload.as_str(), r.rounds, &r.direct_url, &r.via_url),
        ("get", 3, &direct, &via)
    );
    for (side, url) in [(&r.direct, &direct), (&r.via, &via)] {
        let summary = side.summary();
        let get = side.op(OpKind::Get).unwrap();
        assert_eq!((get.ops, get.error_count()), (60, 0), "{summary}");
        assert_eq!((get.throttled, side.total().ops), (0, 60), "{summary}");
        assert_eq!(get.bytes, 60 * 8192);
        assert_eq!(get.latency.count(), 60);
        assert_eq!(side.merged_runs, 3);
        assert_eq!(&side.endpoints, std::slice::from_ref(url));
        assert!(side.elapsed_s > 0.0);
        // Every operation verified: each body compared whole, none differing.
        assert!(side.run.verify && side.run.md5, "{:?}", side.run);
        assert_eq!(get.costs.verified_bytes, get.bytes, "{summary}");
        assert!(side.mismatches.is_empty(), "{:?}", side.mismatches);
        // The client's CPU: the process's over the measured phases, and the operations' own,
        // which is part of it (10 µs of rounding allowed per run).
        let (process, ops) = (side.cpu.total_s(), get.costs.cpu_ns as f64 / 1e9);
        assert!(
            side.cpu.user_s >= 0.0 && side.cpu.system_s >= 0.0 && process > 0.0,
            "{:?}",
            side.cpu
        );
        assert!(ops > 0.0, "no CPU time for the operations: {:?}", get.costs);
        assert!(
            ops <= process + 1e-5 * f64::from(side.merged_runs),
            "the operations took {ops} s of CPU, the whole client {process} s"
        );
        assert_eq!(side.costs().cpu_ns, get.costs.cpu_ns);
    }
    // Each side went where it says: the proxy served the via side's GETs, the node both sides'.
    let gets = |admin: SocketAddr, prefix: &str| {
        crate::admin_metric(
            admin,
            &format!("{prefix}_requests_total{{operation=\"GetObject\",status=\"200\"}}"),
            "",
        )
    };
    assert_eq!(gets(proxy.admin_addr().unwrap(), "ferry_proxy"), 60);
    assert_eq!(gets(node.admin_addr().unwrap(), "ferry_node"), 120);
    // The ratios are via over direct, of the figures of the two sides; those whose direct
    // figure is 0 (errors, throttled) have none.
    let names: Vec<&str> = r.ratios.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "ops/s", "MB/s", "p50", "p90", "p99", "p99.9", "max", "ttfb p50"
        ],
        "{:?}",
        r.ratios
    );
    let ratio = |name: &str| r.ratios.iter().find(|(n, _)| n == name).unwrap().1;
    let (d, v) = (r.direct.total(), r.via.total());
    let per_s = |n: u64, side: &ferry_loadtest::report::RunReport| n as f64 / side.elapsed_s;
    let expected = [
        ("ops/s", per_s(v.ops, &r.via) / per_s(d.ops, &r.direct)),
        ("MB/s", per_s(v.bytes, &r.via) / per_s(d.bytes, &r.direct)),
        (
            "p50",
            v.latency.quantile_us(0.5) as f64 / d.latency.quantile_us(0.5) as f64,
        ),
        (
            "p99",
            v.latency.quantile_us(0.99) as f64 / d.latency.quantile_us(0.99) as f64,
        ),
        ("max", v.latency.max_us() as f64 / d.latency.max_us() as f64),
    ];
    for (name, want) in expected {
        let got = ratio(name);
        assert!(
            got.is_finite() && got > 0.0 && (got - want).abs() <= 1e-9 * want,
            "{name}: {got}, the sides give {want}"
        );
    }
    proxy.stop();
    node.stop();
}

on_both_runtimes!(direct_and_via_a_proxy);
