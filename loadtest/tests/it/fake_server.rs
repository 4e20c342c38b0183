//! Against the fake server (which stores what it is sent and can misbehave): PUT bodies are
//! exactly the generated objects, verification catches a flipped byte (with its key and
//! offset), open-loop mode reports the queueing delay of a server stall, and operations are
//! spread over endpoints and reported per endpoint.

use std::time::Duration;

use ferry_core::fill::ShardedFill;
use ferry_core::s3::sigv4::Credentials;
use ferry_loadtest::config::{LoadConfig, ProgressMode, Workload};
use ferry_loadtest::endpoint::{Endpoint, EndpointPolicy};
use ferry_loadtest::keys::parse_object_key;
use ferry_loadtest::payload::Payload;
use ferry_loadtest::report::RunReport;
use ferry_loadtest::run::run_load;
use ferry_loadtest::size::SizeSpec;
use ferry_loadtest::stats::OpKind;
use ferry_net::NetRuntime;

use crate::fake_s3::{FakeS3, Faults, start_fake};

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

async fn run<R: NetRuntime>(rt: &R, cfg: LoadConfig, addr: std::net::SocketAddr) -> RunReport {
    run_load(rt.clone(), cfg, vec![Endpoint::from_addr(addr)], false)
        .await
        .expect("run")
}

const FLIPPED: u64 = 40_000;

async fn corruption_is_reported<R: NetRuntime>(rt: R) {
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
        let want = Payload::new(&fill, id).generate(size as usize)[FLIPPED as usize];
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

/// A server-wide 500 ms stall during a 2 s run at 200 operations a second: the open-loop
/// latency (from each operation's scheduled start) carries the queueing delay of the ~100
/// operations scheduled during the stall into p99; the service time (from the actual start)
/// does not carry it, nor does a closed-loop run's latency.
///
/// What is asserted holds however fast the machine runs: lower bounds the stall itself forces,
/// and sums over each worker's operations, which cannot overlap when timed from their actual
/// starts. (How long the other requests take is the machine's speed, not asserted.)
async fn open_loop_reports_queueing_delay<R: NetRuntime>(rt: R) {
    let stall = Duration::from_millis(500);
    let stall_us = stall.as_micros() as u64;
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
    let workers = cfg.concurrency as f64;
    let open = run(&rt, cfg.clone(), addr).await;
    let get = open.op(OpKind::Get).unwrap();
    assert_eq!((get.ops, get.error_count()), (400, 0));
    // Every operation has a service time, never more than its latency (it starts later), so
    // the latency is at least the service time at every quantile.
    assert_eq!((get.latency.count(), get.service.count()), (400, 400));
    for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
        let (l, s) = (get.latency.quantile_us(q), get.service.quantile_us(q));
        assert!(l >= s, "q {q}: latency {l} µs, service {s} µs");
    }
    // The stalled request was held the whole stall, and its service time counts it.
    assert!(get.service.max_us() >= stall_us, "{get:?}");
    // Both workers wait for the stall's end (one held, the other's request arriving during
    // it), so each of the ~50 operations scheduled in its first half starts half a stall late
    // at least: far more than the 1% above p99. (A slower machine only makes them later.)
    let p99 = get.latency.quantile_us(0.99);
    assert!(
        p99 >= stall_us / 2,
        "open-loop p99 {p99} µs misses the stall"
    );
    // Service times are timed from the actual starts: a worker's do not overlap, so they add up
    // to no more than the run's length per worker (the histogram's mean is exact to 0.1%, and a
    // value may be rounded up a microsecond).
    let sum_s = |h: &ferry_loadtest::stats::Histo| h.mean_us() * h.count() as f64 / 1e6;
    let bound = workers * open.elapsed_s * 1.001 + 400e-6;
    assert!(
        sum_s(&get.service) <= bound,
        "service times add up to {} s, {workers} workers ran {} s",
        sum_s(&get.service),
        open.elapsed_s
    );
    // While the latencies, from the scheduled starts, overlap: the ~100 operations queued
    // behind the stall wait 25 s together at least, far more than the workers' whole run.
    assert!(
        sum_s(&get.latency) > workers * open.elapsed_s,
        "latencies add up to {} s only, {workers} workers ran {} s",
        sum_s(&get.latency),
        open.elapsed_s
    );
    server.shutdown();

    let (server, _fake) = start_fake(&rt, faults).await;
    let addr = server.local_addr();
    cfg.rate = None;
    let closed = run(&rt, cfg, addr).await;
    let get = closed.op(OpKind::Get).unwrap();
    assert_eq!((get.ops, get.error_count()), (400, 0));
    assert!(
        get.service.is_empty(),
        "no service histogram in closed loop"
    );
    // The stalled request's latency counts the stall...
    assert!(get.latency.max_us() >= stall_us, "the stall was seen");
    // ...but nothing queues: closed-loop latencies are timed from the actual starts too, so a
    // worker's add up to no more than the run's length.
    let bound = workers * closed.elapsed_s * 1.001 + 400e-6;
    assert!(
        sum_s(&get.latency) <= bound,
        "closed-loop latencies add up to {} s, {workers} workers ran {} s",
        sum_s(&get.latency),
        closed.elapsed_s
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

/// What a put run sends is the generated object, byte for byte, under a key naming it.
async fn put_bodies_are_the_generated_objects<R: NetRuntime>(rt: R) {
    let (server, fake) = start_fake(&rt, Faults::default()).await;
    let addr = server.local_addr();
    let mut cfg = config(Workload::Put, addr);
    cfg.size = "1..100KiB".parse().unwrap();
    cfg.ops = Some(20);
    cfg.cleanup = false;
    cfg.seed = 77;
    let report = run(&rt, cfg.clone(), addr).await;
    assert_eq!(report.op(OpKind::Put).unwrap().error_count(), 0);
    let fill = ShardedFill::new(77);
    let keys = fake.keys(&cfg.bucket);
    assert_eq!(keys.len(), 20);
    let mut total = 0;
    for key in keys {
        let (id, size) = parse_object_key(&key).unwrap();
        assert_eq!(size, cfg.size.size_for(77, id));
        let stored = fake.object(&cfg.bucket, &key).unwrap();
        assert!(
            stored == Payload::new(&fill, id).generate(size as usize),
            "{key}"
        );
        total += size;
    }
    assert_eq!(report.op(OpKind::Put).unwrap().bytes, total);
    server.shutdown();
}

#[test]
fn put_bodies_are_the_generated_objects_tokio() {
    ferry_tokio::block_on_threads(2, put_bodies_are_the_generated_objects).unwrap();
}

#[test]
fn put_bodies_are_the_generated_objects_smol() {
    ferry_smol::block_on_threads(2, put_bodies_are_the_generated_objects).unwrap();
}

/// Two endpoints: round-robin alternates, least-busy uses both, and the report breaks the
/// operations down per endpoint.
async fn operations_spread_over_endpoints<R: NetRuntime>(rt: R) {
    let (s1, f1) = start_fake(&rt, Faults::default()).await;
    let (s2, f2) = start_fake(&rt, Faults::default()).await;
    let (a1, a2) = (s1.local_addr(), s2.local_addr());
    for policy in [EndpointPolicy::RoundRobin, EndpointPolicy::LeastBusy] {
        let mut cfg = config(Workload::Put, a1);
        cfg.endpoints.push(format!("http://{a2}"));
        cfg.endpoint_policy = policy;
        cfg.size = SizeSpec::Fixed(1000);
        cfg.ops = Some(20);
        cfg.cleanup = false;
        cfg.prefix = format!("{policy:?}/");
        let eps = vec![Endpoint::from_addr(a1), Endpoint::from_addr(a2)];
        let report = run_load(rt.clone(), cfg.clone(), eps, false).await.unwrap();
        let per = report.endpoint_totals();
        assert_eq!(per.len(), 2);
        assert_eq!(per[0].ops + per[1].ops, 20);
        let stored = |f: &FakeS3<R>| {
            f.keys(&cfg.bucket)
                .iter()
                .filter(|k| k.starts_with(&cfg.prefix))
                .count() as u64
        };
        assert_eq!((stored(&f1), stored(&f2)), (per[0].ops, per[1].ops));
        match policy {
            EndpointPolicy::RoundRobin => assert_eq!((per[0].ops, per[1].ops), (10, 10)),
            EndpointPolicy::LeastBusy => assert!(per[0].ops > 0 && per[1].ops > 0),
        }
        let summary = report.summary();
        assert!(summary.contains("per endpoint"), "{summary}");
    }
    s1.shutdown();
    s2.shutdown();
}

#[test]
fn operations_spread_over_endpoints_tokio() {
    ferry_tokio::block_on_threads(2, operations_spread_over_endpoints).unwrap();
}

#[test]
fn operations_spread_over_endpoints_smol() {
    ferry_smol::block_on_threads(2, operations_spread_over_endpoints).unwrap();
}

/// With `--md5`, a GET whose ETag is not the MD5 of the content is an error; without, the
/// ETag is not looked at.
async fn wrong_etags_are_caught_with_md5<R: NetRuntime>(rt: R) {
    let faults = Faults {
        wrong_etag: true,
        ..Faults::default()
    };
    let (server, _fake) = start_fake(&rt, faults).await;
    let addr = server.local_addr();
    let mut cfg = config(Workload::Get, addr);
    cfg.ops = Some(5);
    cfg.md5 = true;
    let report = run(&rt, cfg.clone(), addr).await;
    let get = report.op(OpKind::Get).unwrap();
    assert_eq!(get.errors.get("verify etag"), Some(&5), "{:?}", get.errors);
    cfg.md5 = false;
    let report = run(&rt, cfg, addr).await;
    assert_eq!(report.op(OpKind::Get).unwrap().error_count(), 0);
    server.shutdown();
}

#[test]
fn wrong_etags_are_caught_with_md5_tokio() {
    ferry_tokio::block_on_threads(2, wrong_etags_are_caught_with_md5).unwrap();
}

#[test]
fn wrong_etags_are_caught_with_md5_smol() {
    ferry_smol::block_on_threads(2, wrong_etags_are_caught_with_md5).unwrap();
}

/// A server that closes idle kept-alive connections: the next request on such a connection
/// fails before any answer, and goes again on a new connection instead of counting an error.
async fn closed_idle_connections_are_retried<R: NetRuntime>(rt: R) {
    let faults = Faults {
        idle_close: Some(Duration::from_millis(20)),
        ..Faults::default()
    };
    let (server, _fake) = start_fake(&rt, faults).await;
    let addr = server.local_addr();
    let mut cfg = config(Workload::Get, addr);
    cfg.concurrency = 1;
    cfg.ops = Some(5);
    // 10 operations a second: each connection sits idle ~100 ms, past the server's 20 ms.
    cfg.rate = Some(10.0);
    let report = run(&rt, cfg, addr).await;
    let get = report.op(OpKind::Get).unwrap();
    assert_eq!(get.ops, 5);
    assert!(get.errors.is_empty(), "{:?}", get.errors);
    let costs = report.costs();
    // At least one connection sat idle past the server's close (most do, at this rate).
    assert!(costs.reconnects >= 1, "reconnects: {}", costs.reconnects);
    assert!(report.summary().contains("sent again on a new connection"));
    server.stop(&rt, Duration::from_secs(5)).await;
}

#[test]
fn closed_idle_connections_are_retried_tokio() {
    ferry_tokio::block_on_threads(2, closed_idle_connections_are_retried).unwrap();
}

#[test]
fn closed_idle_connections_are_retried_smol() {
    ferry_smol::block_on_threads(2, closed_idle_connections_are_retried).unwrap();
}
