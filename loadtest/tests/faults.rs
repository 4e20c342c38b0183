//! Against a misbehaving fake server: verification catches a flipped byte (with its key and
//! offset), and open-loop mode reports the queueing delay of a server stall.

mod common;

use std::time::Duration;

use common::{Faults, start_fake};
use ferry_core::fill::ShardedFill;
use ferry_core::rt::Runtime;
use ferry_core::s3::sigv4::Credentials;
use ferry_loadtest::client::Endpoint;
use ferry_loadtest::config::{LoadConfig, ProgressMode, Workload};
use ferry_loadtest::keys::parse_object_key;
use ferry_loadtest::report::RunReport;
use ferry_loadtest::run::run_load;
use ferry_loadtest::size::SizeSpec;
use ferry_loadtest::stats::OpKind;

fn config(workload: Workload, addr: std::net::SocketAddr) -> LoadConfig {
    let mut cfg = LoadConfig::new(
        workload,
        format!("http://{addr}"),
        Credentials::new("test-key", "test-secret"),
    );
    cfg.progress = ProgressMode::Off;
    cfg.concurrency = 2;
    cfg.size = SizeSpec::Fixed(64 << 10);
    cfg.objects = 3;
    cfg
}

async fn run<R: Runtime>(rt: &R, cfg: LoadConfig, addr: std::net::SocketAddr) -> RunReport {
    run_load(rt.clone(), cfg, vec![Endpoint::from_addr(addr)], false)
        .await
        .expect("run")
}

const FLIPPED: u64 = 40_000;

async fn corruption_is_reported<R: Runtime>(rt: R) {
    let faults = Faults {
        corrupt_at: Some(FLIPPED),
        ..Faults::default()
    };
    let (server, _fake) = start_fake(&rt, faults).await;
    let addr = server.local_addr();
    let mut cfg = config(Workload::Get, addr);
    cfg.ops = Some(6);
    let seed = cfg.seed;
    let report = run(&rt, cfg.clone(), addr).await;
    let get = report.op(OpKind::Get).unwrap();
    assert_eq!(get.ops, 6);
    assert_eq!(
        get.errors.get("verify content"),
        Some(&6),
        "{:?}",
        get.errors
    );
    assert_eq!(get.bytes, 0, "failed GETs move no counted bytes");
    assert_eq!(report.mismatches.len(), 6);
    let fill = ShardedFill::new(seed);
    for m in &report.mismatches {
        let (id, size) = parse_object_key(&m.key).expect("a ferry-load key");
        assert!(id < 3 && size == 64 << 10, "{}", m.key);
        assert_eq!(m.offset, FLIPPED);
        let want = fill.object(id).generate(size as usize)[FLIPPED as usize];
        assert_eq!((m.expected, m.found), (want, want ^ 1));
    }
    let summary = report.summary();
    assert!(
        summary.contains(&format!("at offset {FLIPPED}")),
        "{summary}"
    );

    // The same corrupt server with verification off: nothing to report.
    cfg.verify = false;
    let report = run(&rt, cfg, addr).await;
    assert_eq!(report.op(OpKind::Get).unwrap().error_count(), 0);
    assert!(report.mismatches.is_empty());
    server.shutdown();
}

#[test]
fn corruption_is_reported_tokio() {
    ferry_tokio::block_on_threads(2, corruption_is_reported).unwrap();
}

#[test]
fn corruption_is_reported_smol() {
    ferry_smol::block_on_threads(2, corruption_is_reported).unwrap();
}

/// A server-wide 500 ms stall during a 2 s run: the open-loop latency (from each operation's
/// scheduled start) carries the queueing delay of the ~100 operations scheduled during the
/// stall into p99; the service time (from the actual start) and a closed-loop run only see the
/// two requests that were in flight, under 1% of the operations.
async fn open_loop_reports_queueing_delay<R: Runtime>(rt: R) {
    let stall = Duration::from_millis(500);
    let threshold_us = 300_000;
    let faults = Faults {
        stall: Some((50, stall)),
        ..Faults::default()
    };
    let (server, _fake) = start_fake(&rt, faults.clone()).await;
    let addr = server.local_addr();
    let mut cfg = config(Workload::Get, addr);
    cfg.size = SizeSpec::Fixed(1024);
    cfg.ops = Some(400);
    cfg.rate = Some(200.0);
    let open = run(&rt, cfg.clone(), addr).await;
    let get = open.op(OpKind::Get).unwrap();
    assert_eq!((get.ops, get.error_count()), (400, 0));
    let p99 = get.latency.quantile_us(0.99);
    assert!(
        p99 >= threshold_us,
        "open-loop p99 {p99} µs misses the stall"
    );
    let service_p99 = get.service.quantile_us(0.99);
    assert!(service_p99 < threshold_us, "service p99 {service_p99} µs");
    assert!(
        get.service.max_us() >= threshold_us,
        "a request saw the stall"
    );
    server.shutdown();

    let (server, _fake) = start_fake(&rt, faults).await;
    let addr = server.local_addr();
    cfg.rate = None;
    let closed = run(&rt, cfg, addr).await;
    let get = closed.op(OpKind::Get).unwrap();
    assert_eq!((get.ops, get.error_count()), (400, 0));
    let p99 = get.latency.quantile_us(0.99);
    assert!(p99 < threshold_us, "closed-loop p99 {p99} µs");
    assert!(get.latency.max_us() >= threshold_us, "the stall was seen");
    assert!(
        get.service.is_empty(),
        "no service histogram in closed loop"
    );
    server.shutdown();
}

#[test]
fn open_loop_reports_queueing_delay_tokio() {
    ferry_tokio::block_on_threads(2, open_loop_reports_queueing_delay).unwrap();
}

#[test]
fn open_loop_reports_queueing_delay_smol() {
    ferry_smol::block_on_threads(2, open_loop_reports_queueing_delay).unwrap();
}
