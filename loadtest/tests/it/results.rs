//! What the results say: throttled operations are their own result (a real proxy answering
//! `503 SlowDown`), the per-size-class breakdown adds up to the totals exactly, multipart
//! uploads are timed whole besides their parts, and `--autoterm` ends a steady run.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferry_core::s3::outbound::OutboundRequest;
use ferry_core::s3::sigv4::{Credentials, NoKeyCache, UNSIGNED_PAYLOAD};
use ferry_loadtest::config::{LoadConfig, ProgressMode, RuntimeKind, Workload};
use ferry_loadtest::control::{Observer, RunControl};
use ferry_loadtest::embedded::{EmbeddedOptions, embedded_cluster};
use ferry_loadtest::report::{Prepared, RunReport};
use ferry_loadtest::size::SizeSpec;
use ferry_loadtest::stats::{Histo, OpKind};
use ferry_server::{
    BackendConfig, NodeConfig, NodeHandle, ProxyConfig, ProxyHandle, start_node, start_proxy,
};

const KEY: (&str, &str) = ("results-key", "results-secret");
/// Bounds every wait of these tests: a hang guard, not a speed claim.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// A storage node behind a proxy allowed one request in flight to it.
struct Throttler {
    proxy: ProxyHandle,
    node: NodeHandle,
    _dir: tempfile::TempDir,
}

impl Throttler {
    fn start(runtime: RuntimeKind) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let mut ncfg = NodeConfig::new(dir.path(), any, KEY.0, KEY.1);
        ncfg.cluster_keys = Some(crate::cluster_keys());
        ncfg.runtime = runtime;
        ncfg.threads = 1;
        ncfg.fsync = false;
        let node = start_node(ncfg).expect("node starts");
        let backend = BackendConfig::new("node-1", format!("http://{}", node.local_addr()));
        let mut pcfg = ProxyConfig::new(any, vec![backend], KEY.0, KEY.1);
        pcfg.cluster_keys = Some(crate::cluster_keys());
        pcfg.runtime = runtime;
        pcfg.threads = 1;
        pcfg.admin_listen = Some(any);
        pcfg.backend_max_connections = 1;
        pcfg.backend_max_in_flight = 1;
        // No health probe takes the one slot.
        pcfg.health_interval = Duration::from_secs(3600);
        let proxy = start_proxy(pcfg).expect("proxy starts");
        Self {
            proxy,
            node,
            _dir: dir,
        }
    }

    fn config(&self, runtime: RuntimeKind) -> LoadConfig {
        let mut cfg = LoadConfig::new(
            Workload::Put,
            format!("http://{}", self.proxy.local_addr()),
            Credentials::new(KEY.0, KEY.1),
        );
        cfg.runtime = runtime;
        cfg.threads = 2;
        cfg.progress = ProgressMode::Off;
        cfg.concurrency = 3;
        cfg.size = SizeSpec::Fixed(8 << 10);
        cfg.ops = Some(12);
        cfg.bucket = "throttled".into();
        cfg
    }

    /// A Prometheus figure of the proxy's admin listener.
    fn metric(&self, name: &str) -> Option<u64> {
        let admin = self.proxy.admin_addr().expect("an admin listener");
        let mut s = TcpStream::connect(admin).ok()?;
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: admin\r\n\r\n")
            .ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
    }

    fn wait_for(&self, name: &str, at_least: u64) {
        let deadline = Instant::now() + HANG_GUARD;
        while self.metric(name).unwrap_or(0) < at_least {
            assert!(Instant::now() < deadline, "{name} never reached {at_least}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A PUT whose head the node has and whose body is not sent: while it is held, the proxy
    /// has no slot for the node and answers every other request `503 SlowDown` at once.
    fn hold(&self) -> Hold {
        let addr = self.proxy.local_addr();
        let host = addr.to_string();
        let mut req = OutboundRequest::new("PUT", "/throttled/held", "");
        req.sign(
            &host,
            UNSIGNED_PAYLOAD,
            &Credentials::new(KEY.0, KEY.1),
            "us-east-1",
            unix_now(),
            &mut NoKeyCache,
        )
        .unwrap();
        let mut head = format!("PUT {} HTTP/1.1\r\n", req.target());
        for h in req.views() {
            head.push_str(&format!(
                "{}: {}\r\n",
                h.name,
                String::from_utf8_lossy(h.value)
            ));
        }
        head.push_str("Content-Length: 4\r\n\r\n");
        let before = self
            .metric("ferry_proxy_backend_requests_total{backend=\"node-1\"}")
            .unwrap_or(0);
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(head.as_bytes()).unwrap();
        self.wait_for(
            "ferry_proxy_backend_requests_total{backend=\"node-1\"}",
            before + 1,
        );
        self.wait_for("ferry_proxy_backend_in_flight{backend=\"node-1\"}", 1);
        Hold(s)
    }

    fn slow_downs(&self) -> u64 {
        self.metric("ferry_proxy_backend_slow_down_total{backend=\"node-1\",reason=\"in_flight\"}")
            .unwrap_or(0)
    }

    fn stop(self) {
        self.proxy.stop();
        self.node.stop();
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The held PUT (see [`Throttler::hold`]).
struct Hold(TcpStream);

impl Hold {
    fn release(mut self) {
        self.0.write_all(b"done").unwrap();
        self.0.set_read_timeout(Some(HANG_GUARD)).unwrap();
        let mut status = [0u8; 12];
        self.0.read_exact(&mut status).unwrap();
        assert_eq!(&status[9..12], b"200", "the held PUT completes");
    }
}

/// Holds the node's slot once the run's bucket exists, before the measured phase.
struct HoldWhenPrepared {
    throttler: Arc<Throttler>,
    held: Arc<Mutex<Option<Hold>>>,
}

impl Observer for HoldWhenPrepared {
    fn prepared(&self, _: Option<&Prepared>) {
        *self.held.lock().unwrap() = Some(self.throttler.hold());
    }
}

/// Run `cfg` against the throttler with `control`, on the configured runtime.
fn run_controlled(cfg: LoadConfig, control: Arc<RunControl>) -> RunReport {
    ferry_loadtest::run::run_controlled(cfg, false, control).expect("the run")
}

fn throttled_operations_are_their_own_result(rt: RuntimeKind) {
    let t = Arc::new(Throttler::start(rt));
    let held = Arc::new(Mutex::new(None));
    let observer = || HoldWhenPrepared {
        throttler: t.clone(),
        held: held.clone(),
    };

    // Held for the whole run, no retries: every operation ends throttled.
    let mut cfg = t.config(rt);
    cfg.retries = 0;
    cfg.cleanup = false;
    let r = run_controlled(cfg, Arc::new(RunControl::new().with_observer(observer())));
    let summary = r.summary();
    let put = r.op(OpKind::Put).expect("put stats");
    assert_eq!((put.ops, put.throttled), (0, 12), "{summary}");
    assert_eq!(put.throttled_latency.count(), 12);
    assert_eq!(put.latency.count(), 0, "no throttled answer in the latency");
    assert!(
        put.errors.is_empty(),
        "throttling is not a failure: {summary}"
    );
    assert_eq!((put.bytes, put.costs.retries), (0, 0));
    assert!(!r.all_succeeded());
    assert!(
        summary.contains("12 operations ended throttled"),
        "{summary}"
    );
    let in_series: u64 = r
        .series
        .iter()
        .flat_map(|p| &p.ops)
        .map(|o| o.throttled)
        .sum();
    assert_eq!(in_series, 12, "the series counts them too");
    held.lock().unwrap().take().expect("held").release();

    // Held until three requests were turned away, with retries: all succeed, and the
    // throttling answers are counted as retries.
    let before = t.slow_downs();
    let mut cfg = t.config(rt);
    cfg.retries = 30;
    let releaser = {
        let (t, held) = (t.clone(), held.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + HANG_GUARD;
            while t.slow_downs() < before + 3 {
                assert!(Instant::now() < deadline, "no request was throttled");
                std::thread::sleep(Duration::from_millis(5));
            }
            loop {
                if let Some(h) = held.lock().unwrap().take() {
                    break h.release();
                }
                assert!(Instant::now() < deadline, "never held");
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let r = run_controlled(cfg, Arc::new(RunControl::new().with_observer(observer())));
    releaser.join().unwrap();
    let summary = r.summary();
    let put = r.op(OpKind::Put).expect("put stats");
    assert_eq!((put.ops, put.throttled), (12, 0), "{summary}");
    assert_eq!((put.error_count(), put.bytes), (0, 12 * (8 << 10)));
    assert_eq!(put.latency.count(), 12);
    assert!(put.costs.throttled_retries >= 3, "{summary}");
    assert!(put.costs.retries >= put.costs.throttled_retries);
    assert!(r.all_succeeded(), "{summary}");
    assert!(
        summary.contains("answers retried after a backoff"),
        "{summary}"
    );
    if let Ok(t) = Arc::try_unwrap(t) {
        t.stop();
    }
}

/// A small run of `workload` against a fresh embedded cluster.
fn embedded_run(
    rt: RuntimeKind,
    workload: Workload,
    tweak: impl FnOnce(&mut LoadConfig),
) -> RunReport {
    let opts = EmbeddedOptions {
        runtime: rt,
        threads: 2,
        ..EmbeddedOptions::default()
    };
    let cluster = embedded_cluster(&opts).expect("the embedded cluster");
    let mut cfg = LoadConfig::new(
        workload,
        cluster.endpoints()[0].clone(),
        Credentials::new(opts.access_key, opts.secret_key),
    );
    cfg.runtime = rt;
    cfg.threads = 2;
    cfg.progress = ProgressMode::Off;
    cfg.concurrency = 4;
    cfg.objects = 16;
    cfg.ops = Some(60);
    tweak(&mut cfg);
    let r = ferry_loadtest::run::run_with(cfg, true).expect("the run");
    cluster.stop();
    r
}

fn size_classes_add_up_to_the_totals(rt: RuntimeKind) {
    for (spec, labels) in [
        ("4KiB:3,64KiB:1", &["4KiB", "64KiB"][..]),
        (
            "1KiB..64KiB",
            &["1KiB..4KiB", "4KiB..16KiB", "16KiB..64KiB"][..],
        ),
    ] {
        let r = embedded_run(rt, Workload::Mixed, |c| {
            c.size = spec.parse().unwrap();
            c.mix = "get=2,put=1".parse().unwrap();
        });
        let summary = r.summary();
        assert!(r.all_succeeded(), "{summary}");
        assert!(summary.contains("per size class:"), "{summary}");
        for op in [OpKind::Get, OpKind::Put] {
            let total = r.op(op).unwrap();
            let classes: Vec<_> = r.size_classes.iter().filter(|e| e.op == op).collect();
            assert!(!classes.is_empty(), "{op}: {summary}");
            for e in &classes {
                assert!(labels.contains(&e.class.as_str()), "{}", e.class);
                let s = &e.stats;
                assert!(s.bytes >= s.ops * e.min_bytes && s.bytes <= s.ops * e.max_bytes);
            }
            // Every operation is in exactly one class: counts, bytes and histograms add up.
            let ops: u64 = classes.iter().map(|e| e.stats.ops).sum();
            let bytes: u64 = classes.iter().map(|e| e.stats.bytes).sum();
            let mut latency = Histo::new();
            for e in &classes {
                latency.merge(&e.stats.latency);
            }
            assert_eq!((ops, bytes), (total.ops, total.bytes), "{op}");
            assert_eq!(latency, total.latency, "{op}");
        }
        let back: RunReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.size_classes, r.size_classes);
    }
    // A fixed size has nothing to break down.
    let r = embedded_run(rt, Workload::Put, |c| c.size = SizeSpec::Fixed(4096));
    assert!(r.size_classes.is_empty());
    assert!(!r.summary().contains("per size class"));
}

fn multipart_uploads_are_timed_whole(rt: RuntimeKind) {
    let r = embedded_run(rt, Workload::Multipart, |c| {
        c.parts = 3;
        c.part_size = 32 << 10;
        c.parts_in_flight = 1;
        c.ops = Some(6);
        c.concurrency = 2;
    });
    assert!(r.all_succeeded(), "{}", r.summary());
    let (whole, part) = (
        r.op(OpKind::Multipart).unwrap(),
        r.op(OpKind::Part).unwrap(),
    );
    assert_eq!((whole.latency.count(), part.latency.count()), (6, 18));
    // One part at a time: an upload (initiate to complete) lasts at least its three parts,
    // so at least three times the shortest part, and as long as its longest one.
    assert!(
        whole.latency.min_us() >= 3 * part.latency.min_us(),
        "{}",
        r.summary()
    );
    assert!(whole.latency.max_us() >= part.latency.max_us());
    assert_eq!(whole.bytes, 6 * 3 * (32 << 10));
}

fn autoterm_ends_a_steady_run(rt: RuntimeKind) {
    // An open loop at 40 ops/s completes 40 operations a second whatever the machine's speed:
    // throughput is steady from the first seconds.
    let r = embedded_run(rt, Workload::Put, |c| {
        c.size = SizeSpec::Fixed(4096);
        c.rate = Some(40.0);
        c.ops = None;
        c.duration = Some(Duration::from_secs(120));
        c.autoterm = Some("3s,40".parse().unwrap());
    });
    let summary = r.summary();
    assert!(r.all_succeeded(), "{summary}");
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("--autoterm: throughput stable within 40% for 3 s")),
        "{summary}"
    );
    // Ended by --autoterm, not by --duration: before the 120 s the run was given (the bound
    // is the behaviour, one-sided; how soon it ended is not asserted).
    assert!(r.elapsed_s < 120.0, "{summary}");
}

on_both_runtimes!(
    throttled_operations_are_their_own_result,
    size_classes_add_up_to_the_totals,
    multipart_uploads_are_timed_whole,
    autoterm_ends_a_steady_run,
);
