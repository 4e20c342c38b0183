//! `--md5` against the embedded cluster (a proxy and two storage nodes over TCP): the nodes
//! refuse a PUT whose Content-MD5 is not its body's, so a clean run proves every digest hashed
//! ahead in SIMD lanes was right; a wrong digest is refused, and GET/HEAD ETags that are not the
//! expected object's are caught.

use ferry_core::md5::md5;
use ferry_core::s3::sigv4::Credentials;
use ferry_loadtest::client::{ClientOptions, OpResult, S3Client};
use ferry_loadtest::config::{LoadConfig, ProgressMode, RuntimeKind, Workload};
use ferry_loadtest::digests::{BATCH, LOW_WATER};
use ferry_loadtest::embedded::{EmbeddedOptions, embedded_cluster};
use ferry_loadtest::endpoint::{Endpoint, EndpointPolicy};
use ferry_loadtest::error::{OpError, VerifyError};
use ferry_loadtest::keys::object_key;
use ferry_loadtest::run::run_with;
use ferry_loadtest::size::SizeSpec;
use ferry_loadtest::stats::OpKind;

fn load_config(url: &str, opts: &EmbeddedOptions, workload: Workload) -> LoadConfig {
    let mut cfg = LoadConfig::new(
        workload,
        url.to_string(),
        Credentials::new(opts.access_key.clone(), opts.secret_key.clone()),
    );
    cfg.threads = 2;
    cfg.progress = ProgressMode::Off;
    cfg.concurrency = 6;
    cfg.md5 = true;
    cfg
}

fn clean(r: &ferry_loadtest::report::RunReport, op: OpKind, ops: u64) {
    let s = r
        .op(op)
        .unwrap_or_else(|| panic!("no {op}:\n{}", r.summary()));
    assert_eq!(s.ops, ops, "{}", r.summary());
    assert_eq!(s.error_count(), 0, "{op} errors:\n{}", r.summary());
    assert!(r.mismatches.is_empty());
}

/// Many PUTs of sizes around an MD5 block and a shard, each hashed ahead in a batch of 16:
/// the nodes accept every Content-MD5, and GETs then check each ETag.
#[test]
fn put_md5_digests_hashed_ahead_are_accepted() {
    let opts = EmbeddedOptions {
        threads: 2,
        ..EmbeddedOptions::default()
    };
    let cluster = embedded_cluster(&opts).unwrap();
    let url = &cluster.endpoints()[0];
    let sizes = "0:1,1:1,63:1,64:1,65:1,4095:1,4097:1,70001:1";
    let n = 4 * (BATCH + LOW_WATER);
    for (rt, prefix) in [(RuntimeKind::Tokio, "t/"), (RuntimeKind::Smol, "s/")] {
        let mut cfg = load_config(url, &opts, Workload::Put);
        cfg.runtime = rt;
        cfg.prefix = prefix.into();
        cfg.size = sizes.parse().unwrap();
        cfg.ops = Some(n);
        let r = run_with(cfg.clone(), true).unwrap();
        clean(&r, OpKind::Put, n);
        assert!(r.costs().hash_ns > 0);
        // Prepared objects read back: bodies verified and single-part ETags checked.
        let mut get = cfg.clone();
        get.workload = Workload::Get;
        get.objects = 40;
        get.ops = Some(60);
        let r = run_with(get, true).unwrap();
        clean(&r, OpKind::Get, 60);
    }
    cluster.stop();
}

/// Multipart parts hashed ahead 16 at a time (more parts than one batch).
#[test]
fn multipart_md5_over_more_than_one_batch() {
    let opts = EmbeddedOptions {
        threads: 2,
        ..EmbeddedOptions::default()
    };
    let cluster = embedded_cluster(&opts).unwrap();
    let mut cfg = load_config(&cluster.endpoints()[0], &opts, Workload::Multipart);
    cfg.parts = 2 * BATCH as u32 + 3;
    cfg.part_size = 4097;
    cfg.parts_in_flight = 3;
    cfg.concurrency = 2;
    cfg.ops = Some(3);
    let r = run_with(cfg, true).unwrap();
    clean(&r, OpKind::Multipart, 3);
    clean(&r, OpKind::Part, 3 * (2 * BATCH + 3));
    cluster.stop();
}

fn verify_error(res: &OpResult) -> Option<&VerifyError> {
    match &res.error {
        Some(OpError::Verify(v)) => Some(v),
        _ => None,
    }
}

/// A wrong Content-MD5 is refused by the node (`BadDigest`); an object whose content is not
/// what its key says fails GET (bytes, or the ETag without verification) and HEAD (the ETag).
#[test]
fn wrong_digests_are_refused_and_wrong_etags_caught() {
    let opts = EmbeddedOptions {
        threads: 2,
        ..EmbeddedOptions::default()
    };
    let cluster = embedded_cluster(&opts).unwrap();
    let url = cluster.endpoints()[0].clone();
    let client_opts = |verify: bool| ClientOptions {
        credentials: Credentials::new(opts.access_key.clone(), opts.secret_key.clone()),
        region: opts.region.clone(),
        payload_sha256: false,
        md5: true,
        verify,
        expect_continue_from: None,
        seed: 1,
        sizes: Some(SizeSpec::Fixed(70_001)),
    };
    let (o1, o2) = (client_opts(true), client_opts(false));
    ferry_tokio::block_on_threads(2, move |rt| async move {
        let tls = ferry_net::client_config(None, true).unwrap();
        let c = S3Client::new(
            rt.clone(),
            vec![Endpoint::parse(&url).unwrap()],
            EndpointPolicy::RoundRobin,
            o1,
            tls.clone(),
        );
        let endpoint = Endpoint::parse(&url).unwrap();
        let unverified = S3Client::new(rt, vec![endpoint], EndpointPolicy::RoundRobin, o2, tls);
        c.create_bucket("md5").await.unwrap();
        let size = 70_001;

        // A corrupted digest in the place of object 3's: the node refuses the PUT.
        let good = c.payload(3).md5(size);
        let mut bad = good;
        bad[0] ^= 1;
        c.digests().insert((3, 0, size), bad);
        let key3 = object_key("p/", 3, size);
        let res = c.put_object("md5", &key3, 3, size).await;
        match &res.error {
            Some(OpError::Http {
                code: Some(code), ..
            }) => assert_eq!(code, "BadDigest"),
            other => panic!("a wrong Content-MD5 was not refused: {other:?}"),
        }
        // The right one (hashed ahead with the next objects) is accepted.
        assert!(c.put_object("md5", &key3, 3, size).await.error.is_none());
        assert_eq!(
            c.digests()
                .range(&ferry_core::fill::ShardedFill::new(1), (3, 0, size)),
            good
        );
        assert_eq!(good, md5(&c.payload(3).generate(size as usize)));

        // Object 5's content under object 6's key: bytes and ETags are object 5's.
        let key6 = object_key("p/", 6, size);
        assert!(c.put_object("md5", &key6, 5, size).await.error.is_none());
        let get = c.get_object("md5", &key6, 6, size).await;
        assert!(
            matches!(verify_error(&get), Some(VerifyError::Mismatch(_))),
            "{get:?}"
        );
        let get = unverified.get_object("md5", &key6, 6, size).await;
        assert!(
            matches!(verify_error(&get), Some(VerifyError::ETag { .. })),
            "{get:?}"
        );
        let head = c.stat_object("md5", &key6, 6, size).await;
        assert!(
            matches!(verify_error(&head), Some(VerifyError::ETag { .. })),
            "{head:?}"
        );
        // The true object checks clean either way.
        for client in [&c, &unverified] {
            assert!(
                client
                    .get_object("md5", &key3, 3, size)
                    .await
                    .error
                    .is_none()
            );
            assert!(
                client
                    .stat_object("md5", &key3, 3, size)
                    .await
                    .error
                    .is_none()
            );
        }
        for key in [&key3, &key6] {
            assert!(c.delete_object("md5", key).await.error.is_none());
        }
        c.delete_bucket("md5").await.unwrap();
    })
    .unwrap();
    cluster.stop();
}
