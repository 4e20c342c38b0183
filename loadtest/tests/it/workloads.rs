//! Every workload against the embedded cluster (a proxy in front of two storage nodes, in
//! process), on both runtimes: operations happen,
//! none fails, bodies verify, and cleanup leaves the bucket empty.

use ferry_core::s3::sigv4::Credentials;
use ferry_loadtest::client::{ClientOptions, S3Client};
use ferry_loadtest::config::{LoadConfig, ProgressMode, RuntimeKind, Workload};
use ferry_loadtest::embedded::{EmbeddedCluster, EmbeddedOptions, embedded_cluster};
use ferry_loadtest::endpoint::{Endpoint, EndpointPolicy};
use ferry_loadtest::report::RunReport;
use ferry_loadtest::run::run_with;
use ferry_loadtest::size::SizeSpec;
use ferry_loadtest::stats::OpKind;

fn cluster(runtime: RuntimeKind) -> (EmbeddedCluster, EmbeddedOptions) {
    let opts = EmbeddedOptions {
        runtime,
        threads: 2,
        ..EmbeddedOptions::default()
    };
    (
        embedded_cluster(&opts).expect("start the embedded cluster"),
        opts,
    )
}

/// A small run of `workload`; `tweak` adjusts the defaults.
fn run_case(
    runtime: RuntimeKind,
    workload: Workload,
    tweak: impl FnOnce(&mut LoadConfig),
) -> RunReport {
    let (cluster, opts) = cluster(runtime);
    let mut cfg = LoadConfig::new(
        workload,
        cluster.endpoints()[0].clone(),
        Credentials::new(opts.access_key, opts.secret_key),
    );
    cfg.runtime = runtime;
    cfg.threads = 2;
    cfg.progress = ProgressMode::Off;
    cfg.concurrency = 4;
    cfg.size = SizeSpec::Fixed(16 << 10);
    cfg.objects = 12;
    cfg.ops = Some(40);
    tweak(&mut cfg);
    let report = run_with(cfg.clone(), true).expect("run");
    if cfg.cleanup {
        assert_eq!(
            remaining_keys(&cfg),
            Vec::<String>::new(),
            "cleanup left keys"
        );
    }
    cluster.stop();
    report
}

/// The keys under the run's prefix now, listed with a client of our own.
fn remaining_keys(cfg: &LoadConfig) -> Vec<String> {
    let endpoint = Endpoint::parse(&cfg.endpoints[0]).unwrap();
    let opts = ClientOptions {
        credentials: cfg.credentials.clone(),
        region: cfg.region.clone(),
        payload_sha256: false,
        md5: false,
        verify: true,
        expect_continue_from: None,
        seed: cfg.seed,
        sizes: None,
    };
    let (bucket, prefix) = (cfg.bucket.clone(), cfg.prefix.clone());
    ferry_tokio::block_on_threads(1, |rt| async move {
        let tls = ferry_net::client_config(None, true).unwrap();
        let client = S3Client::new(rt, vec![endpoint], EndpointPolicy::RoundRobin, opts, tls);
        let (res, page) = client.list_page(&bucket, &prefix, None, 1000).await;
        assert!(res.error.is_none(), "{:?}", res.error);
        page.keys
    })
    .unwrap()
}

/// `op` ran at least `min` times without an error.
fn assert_clean(report: &RunReport, op: OpKind, min: u64) {
    let s = report
        .op(op)
        .unwrap_or_else(|| panic!("no {op} operations:\n{}", report.summary()));
    assert!(
        s.ops >= min,
        "{} {op} operations:\n{}",
        s.ops,
        report.summary()
    );
    assert_eq!(s.error_count(), 0, "{op} errors:\n{}", report.summary());
    assert!(report.mismatches.is_empty());
}

fn put(rt: RuntimeKind) {
    let r = run_case(rt, Workload::Put, |c| {
        c.size = "1KiB..64KiB".parse().unwrap();
        // Bodies from 32 KiB up wait for 100 Continue.
        c.expect_continue_from = Some(32 << 10);
    });
    assert_clean(&r, OpKind::Put, 40);
    let put = r.op(OpKind::Put).unwrap();
    assert!(put.bytes >= 40 << 10, "{}", put.bytes);
    assert!(r.costs().fill_ns > 0);
    assert!(!r.series.is_empty());
}

fn keep_data_keeps_the_objects(rt: RuntimeKind) {
    let (cluster, opts) = cluster(rt);
    let mut cfg = LoadConfig::new(
        Workload::Put,
        cluster.endpoints()[0].clone(),
        Credentials::new(opts.access_key, opts.secret_key),
    );
    cfg.runtime = rt;
    cfg.threads = 2;
    cfg.progress = ProgressMode::Off;
    cfg.concurrency = 3;
    cfg.size = SizeSpec::Fixed(1000);
    cfg.ops = Some(9);
    cfg.cleanup = false;
    let r = run_with(cfg.clone(), true).unwrap();
    assert_clean(&r, OpKind::Put, 9);
    let keys = remaining_keys(&cfg);
    let ids: Vec<_> = keys
        .iter()
        .map(|k| ferry_loadtest::keys::parse_object_key(k).unwrap())
        .collect();
    assert_eq!(ids, (0..9).map(|id| (id, 1000)).collect::<Vec<_>>());
    cluster.stop();
}

fn put_signed_with_md5(rt: RuntimeKind) {
    // The node checks Content-MD5 and the signed SHA-256 of every body.
    let r = run_case(rt, Workload::Put, |c| {
        c.md5 = true;
        c.payload_sha256 = true;
        c.ops = Some(12);
        c.size = SizeSpec::Fixed(300 << 10);
    });
    assert_clean(&r, OpKind::Put, 12);
    assert!(r.costs().hash_ns > 0);
}

fn get(rt: RuntimeKind) {
    let r = run_case(rt, Workload::Get, |c| c.md5 = true);
    assert_clean(&r, OpKind::Get, 40);
    let get = r.op(OpKind::Get).unwrap();
    assert_eq!(get.bytes, 40 * (16 << 10));
    assert_eq!(r.costs().verified_bytes, get.bytes);
    assert_eq!(get.ttfb.count(), 40);
    assert_eq!(r.prepared.unwrap().objects, 12);
}

fn stat(rt: RuntimeKind) {
    let r = run_case(rt, Workload::Stat, |_| {});
    assert_clean(&r, OpKind::Stat, 40);
}

fn delete(rt: RuntimeKind) {
    let r = run_case(rt, Workload::Delete, |c| c.ops = None);
    assert_clean(&r, OpKind::Delete, 12);
    assert_eq!(r.op(OpKind::Delete).unwrap().ops, 12, "each object once");
    assert!(r.notes.iter().any(|n| n.contains("ran out of objects")));
}

fn list(rt: RuntimeKind) {
    let r = run_case(rt, Workload::List, |c| {
        c.objects = 30;
        c.list_max_keys = 7;
        c.ops = Some(10);
        c.size = SizeSpec::Fixed(100);
    });
    assert_clean(&r, OpKind::List, 10);
}

fn mixed(rt: RuntimeKind) {
    let r = run_case(rt, Workload::Mixed, |c| c.ops = Some(80));
    let total = r.total();
    assert_eq!(total.ops, 80);
    assert_eq!(total.error_count(), 0, "{}", r.summary());
    for op in [OpKind::Get, OpKind::Stat, OpKind::Put] {
        assert_clean(&r, op, 1);
    }
}

fn multipart(rt: RuntimeKind) {
    let r = run_case(rt, Workload::Multipart, |c| {
        c.parts = 3;
        c.part_size = 64 << 10;
        c.parts_in_flight = 2;
        c.ops = Some(4);
        c.md5 = true;
    });
    assert_clean(&r, OpKind::Multipart, 4);
    assert_clean(&r, OpKind::Part, 12);
    assert_eq!(r.op(OpKind::Multipart).unwrap().bytes, 4 * 3 * (64 << 10));
    assert_eq!(
        r.total().bytes,
        4 * 3 * (64 << 10),
        "parts are not counted twice"
    );
}

on_both_runtimes!(
    put,
    keep_data_keeps_the_objects,
    put_signed_with_md5,
    get,
    stat,
    delete,
    list,
    mixed,
    multipart
);
