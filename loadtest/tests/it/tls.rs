//! ferry-load against a local cluster whose proxy serves HTTPS with a self-signed certificate
//! made here, on both runtimes: put then get (verified) with `--insecure` and with
//! `--ca-cert`, without a single error; with neither, the run stops at once saying the
//! certificate is not trusted. The binary takes the same options.

use std::process::Command;

use ferry_core::s3::sigv4::Credentials;
use ferry_loadtest::config::{LoadConfig, ProgressMode, RuntimeKind, Workload};
use ferry_loadtest::report::RunReport;
use ferry_loadtest::run::run_with;
use ferry_loadtest::size::SizeSpec;
use ferry_loadtest::stats::OpKind;
use ferry_server::{Cluster, ClusterConfig, TlsFiles, start_cluster};

const ACCESS_KEY: &str = "tls-test";
const SECRET_KEY: &str = "tls-test-secret";

/// A cluster whose proxy serves HTTPS; its `https://127.0.0.1:PORT` URL and the certificate.
struct TlsCluster {
    cluster: Cluster,
    url: String,
    cert: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn tls_cluster(runtime: RuntimeKind) -> TlsCluster {
    let dir = tempfile::tempdir().unwrap();
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let ck = rcgen::generate_simple_self_signed(names).unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    let mut cfg = ClusterConfig::new(dir.path().join("data"), ACCESS_KEY, SECRET_KEY);
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    cfg.admin_listen = None;
    cfg.runtime = runtime;
    cfg.threads = 1;
    cfg.fsync = false;
    cfg.min_part_size = Some(1);
    cfg.tls = Some(TlsFiles::new(&cert, &key));
    let cluster = start_cluster(cfg).expect("cluster starts");
    // The certificate names 127.0.0.1 too (`localhost` may resolve to ::1 first elsewhere).
    let url = format!("https://{}", cluster.endpoint());
    TlsCluster {
        cluster,
        url,
        cert,
        _dir: dir,
    }
}

fn config(url: &str, runtime: RuntimeKind, workload: Workload) -> LoadConfig {
    let mut cfg = LoadConfig::new(workload, url, Credentials::new(ACCESS_KEY, SECRET_KEY));
    cfg.runtime = runtime;
    cfg.threads = 1;
    cfg.progress = ProgressMode::Off;
    cfg.concurrency = 3;
    cfg.size = SizeSpec::Fixed(100_000);
    cfg.objects = 6;
    cfg.ops = Some(20);
    cfg
}

fn assert_clean(r: &RunReport, op: OpKind) {
    let s = r
        .op(op)
        .unwrap_or_else(|| panic!("no {op}:\n{}", r.summary()));
    assert_eq!(s.ops, 20, "{}", r.summary());
    assert_eq!(s.error_count(), 0, "{}", r.summary());
    assert!(r.mismatches.is_empty());
}

fn put_then_get_over_tls(runtime: RuntimeKind) {
    let c = tls_cluster(runtime);
    let trust: [&dyn Fn(&mut LoadConfig); 2] = [&|cfg| cfg.insecure = true, &|cfg| {
        cfg.ca_cert = Some(c.cert.clone())
    }];
    for set_trust in trust {
        let mut put = config(&c.url, runtime, Workload::Put);
        set_trust(&mut put);
        assert_clean(&run_with(put, false).expect("put run"), OpKind::Put);
        let mut get = config(&c.url, runtime, Workload::Get);
        set_trust(&mut get);
        let r = run_with(get, false).expect("get run");
        assert_clean(&r, OpKind::Get);
        assert_eq!(
            r.costs().verified_bytes,
            20 * 100_000,
            "every byte verified"
        );
    }
    // Neither: refused before any operation, with the reason and the way out.
    let err = run_with(config(&c.url, runtime, Workload::Put), false).unwrap_err();
    assert!(err.contains("certificate not trusted"), "{err}");
    assert!(err.contains("UnknownIssuer"), "{err}");
    assert!(err.contains("--ca-cert"), "{err}");
    c.cluster.stop();
}

#[test]
fn put_then_get_over_tls_on_tokio() {
    put_then_get_over_tls(RuntimeKind::Tokio);
}

#[test]
fn put_then_get_over_tls_on_smol() {
    put_then_get_over_tls(RuntimeKind::Smol);
}

#[test]
fn the_binary_takes_ca_cert_and_insecure() {
    let c = tls_cluster(RuntimeKind::Tokio);
    let run = |extra: &[&str]| {
        let args = [
            "put",
            "--endpoint",
            &c.url,
            "--access-key",
            ACCESS_KEY,
            "--secret-key",
            SECRET_KEY,
            "--ops",
            "6",
            "-c",
            "2",
            "--threads",
            "1",
            "--size",
            "4KiB",
            "--quiet",
        ];
        Command::new(env!("CARGO_BIN_EXE_ferry-load"))
            .args(args)
            .args(extra)
            .output()
            .expect("run ferry-load")
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let cert = c.cert.to_str().unwrap();
    let ok = run(&["--ca-cert", cert]);
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    let ok = run(&["--insecure"]);
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    let refused = run(&[]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("certificate not trusted"),
        "{}",
        text(&refused.stderr)
    );
    // Both at once make no sense.
    let both = run(&["--insecure", "--ca-cert", cert]);
    assert!(!both.status.success());
    c.cluster.stop();
}
