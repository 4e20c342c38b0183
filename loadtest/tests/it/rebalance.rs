//! Changing the cluster's shape under load: `mixed` traffic, every read verified, through a
//! proxy while its configuration is reloaded with a new layout, `ferry rebalance` moves the
//! keys whose owner changed, and a second reload drops the old layout. Zero failed operations,
//! zero mismatches, and at the end every object on its owner alone, byte for byte. Once growing
//! from three nodes to four, once draining a fourth node away.
//!
//! Each change must meet the load (the proxy's counters say so): operations answered before
//! the new layout, under it before the moves, between the first move and a later one (with
//! requests to the node that joins or leaves meanwhile; the moves are paced by a bandwidth
//! bound so that they take a while), and after the old layout is dropped. The load runs
//! until then.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ferry_core::fill::ShardedFill;
use ferry_core::place::Placement;
use ferry_core::s3::outbound::OutboundRequest;
use ferry_core::s3::sigv4::{Credentials, NoKeyCache, UNSIGNED_PAYLOAD};
use ferry_loadtest::config::{LoadConfig, ProgressMode, RuntimeKind, Workload};
use ferry_loadtest::control::RunControl;
use ferry_loadtest::keys::parse_object_key;
use ferry_loadtest::payload::Payload;
use ferry_loadtest::run::run_controlled;
use ferry_loadtest::size::SizeSpec;
use ferry_loadtest::stats::OpKind;
use ferry_server::proxy::rebalance::{Progress, RebalanceOptions, rebalance_with};
use ferry_server::proxy::{Layout, ReloadSource};
use ferry_server::{BackendConfig, NodeConfig, NodeHandle, ProxyConfig, start_node, start_proxy};

const KEY: (&str, &str) = ("rebalance-key", "rebalance-secret");
const BUCKET: &str = "ferry-load";
const SEED: u64 = 11;
/// The bucket of objects the load does not touch, its objects and their size.
const BALLAST: &str = "ballast";
const BALLAST_OBJECTS: usize = 48;
const BALLAST_SIZE: usize = 32 << 10;
/// The rebalance's bandwidth bound, bytes a second.
const RATE: u64 = 64 << 10;
/// The node that joins (or leaves): the moves go to it (or come from it).
const MOVING: usize = 3;
/// Operations the proxy answers with success before, during and after each change.
const OPS_AROUND: u64 = 20;
/// The longest any awaited condition may take (a stuck load or rebalance fails the test).
const WITHIN: Duration = Duration::from_secs(60);

fn node(dir: &Path, runtime: RuntimeKind) -> NodeHandle {
    let mut cfg = NodeConfig::new(dir, "127.0.0.1:0".parse().unwrap(), KEY.0, KEY.1);
    cfg.cluster_keys = Some(crate::cluster_keys());
    cfg.runtime = runtime;
    cfg.threads = 1;
    cfg.fsync = false;
    start_node(cfg).expect("node starts")
}

/// The proxy's configuration over `addrs` (`node-0`, ...): declared `declared`, current layout
/// `current` (version `version`), previous layout `previous` (version `version - 1`) if any.
fn config(
    runtime: RuntimeKind,
    addrs: &[SocketAddr],
    declared: &[usize],
    current: &[usize],
    previous: &[usize],
    version: u64,
) -> ProxyConfig {
    let backends = declared
        .iter()
        .map(|&i| {
            let mut b = BackendConfig::new(format!("node-{i}"), format!("http://{}", addrs[i]));
            b.weight = u32::from(current.contains(&i));
            b
        })
        .collect();
    let mut cfg = ProxyConfig::new("127.0.0.1:0".parse().unwrap(), backends, KEY.0, KEY.1);
    cfg.cluster_keys = Some(crate::cluster_keys());
    cfg.runtime = runtime;
    cfg.threads = 2;
    cfg.health_interval = Duration::from_millis(200);
    cfg.health_jitter = Duration::from_millis(50);
    cfg.retry_window = Duration::from_secs(5);
    cfg.layout_version = version;
    if !previous.is_empty() {
        cfg.previous_layouts = vec![Layout {
            version: version - 1,
            weights: previous.iter().map(|&i| (format!("node-{i}"), 1)).collect(),
        }];
    }
    cfg
}

/// A signed request to `addr` with `body` (an unsigned payload) on a connection of its own:
/// status and body.
fn s3(addr: SocketAddr, method: &str, path: &str, query: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let mut req = OutboundRequest::new(method, path, query);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let creds = Credentials::new(KEY.0, KEY.1);
    req.sign(
        &addr.to_string(),
        UNSIGNED_PAYLOAD,
        &creds,
        "us-east-1",
        now,
        &mut NoKeyCache,
    )
    .unwrap();
    let mut head = format!("{method} {} HTTP/1.1\r\n", req.target());
    for h in req.views() {
        head.push_str(&format!(
            "{}: {}\r\n",
            h.name,
            String::from_utf8_lossy(h.value)
        ));
    }
    if method == "PUT" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.write_all(head.as_bytes()).unwrap();
    conn.write_all(body).unwrap();
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let status_line = String::from_utf8_lossy(&raw[..split]);
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    (status, raw[split + 4..].to_vec())
}

/// Every key of the load's bucket on node `addr`.
fn keys_on(addr: SocketAddr) -> Vec<String> {
    let mut out = Vec::new();
    let mut after = String::new();
    loop {
        let query = format!("list-type=2&start-after={after}");
        let (status, body) = s3(addr, "GET", &format!("/{BUCKET}"), &query, b"");
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let text = String::from_utf8(body).unwrap();
        let page: Vec<String> = text
            .split("<Key>")
            .skip(1)
            .map(|s| s.split("</Key>").next().unwrap().to_owned())
            .collect();
        out.extend(page.iter().cloned());
        if !text.contains("<IsTruncated>true</IsTruncated>") {
            return out;
        }
        after = ferry_core::s3::uri::encode(page.last().unwrap()).to_string();
    }
}

/// At the end: every object of the load on its owner under `owners` (indices into `addrs`, all
/// weighted alike) and nowhere else, each byte what ferry-load wrote.
fn every_object_on_its_owner(addrs: &[SocketAddr], owners: &[usize]) -> usize {
    let ids: Vec<(String, u32)> = owners.iter().map(|&i| (format!("node-{i}"), 1)).collect();
    let placement = Placement::new(&ids).unwrap();
    let fill = ShardedFill::new(SEED);
    let mut total = 0;
    for (i, &addr) in addrs.iter().enumerate() {
        for key in keys_on(addr) {
            let owner = owners[placement.pick(BUCKET, &key)];
            assert_eq!(owner, i, "{key} is on node-{i}, its owner is node-{owner}");
            let (id, size) = parse_object_key(&key).expect("a ferry-load key");
            let path = format!("/{BUCKET}/{}", ferry_core::s3::uri::encode_path(&key));
            let (status, body) = s3(addr, "GET", &path, "", b"");
            assert_eq!(status, 200, "{key}");
            let size = usize::try_from(size).unwrap();
            assert!(
                body == Payload::new(&fill, id).generate(size),
                "{key} differs"
            );
            total += 1;
        }
    }
    total
}

/// What the test changes the shape from and to.
struct Shape {
    nodes: usize,
    before: Vec<usize>,
    after: Vec<usize>,
}

/// `mixed` traffic through one proxy while the shape changes: reload with the new layout and
/// the old one as previous, rebalance, reload with the new layout alone (and only its
/// backends).
fn change_shape_under_load(runtime: RuntimeKind, shape: &Shape) {
    let dirs: Vec<tempfile::TempDir> = (0..shape.nodes)
        .map(|_| tempfile::tempdir().unwrap())
        .collect();
    let nodes: Vec<NodeHandle> = dirs.iter().map(|d| node(d.path(), runtime)).collect();
    let addrs: Vec<SocketAddr> = nodes.iter().map(NodeHandle::local_addr).collect();
    let all: Vec<usize> = (0..shape.nodes).collect();
    let (before, after) = (&shape.before, &shape.after);
    let first = config(runtime, &addrs, before, before, &[], 1);
    let current = Arc::new(Mutex::new(first.clone()));
    let mut first = first;
    let source = current.clone();
    first.reload = Some(ReloadSource::new(move || {
        Ok(source
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone())
    }));
    let proxy = start_proxy(first).expect("proxy starts");
    let admin = proxy.admin_addr().expect("the proxy's admin listener");
    let answered = || crate::proxy_answered(admin);
    // Requests the proxy sent to the node that joins or leaves (its reads, writes, and the
    // deletes of a key's earlier copies): what the moves bring to it or take from it.
    let moving = || {
        crate::admin_metric(
            admin,
            &format!("ferry_proxy_backend_requests_total{{backend=\"node-{MOVING}\""),
            "",
        )
    };

    // Objects the load does not touch, in a bucket of their own, so that there are moves to
    // make whatever the load rewrites meanwhile: a quarter of them change owner.
    let through = proxy.local_addr();
    assert_eq!(s3(through, "PUT", &format!("/{BALLAST}"), "", b"").0, 200);
    let ballast = vec![b'b'; BALLAST_SIZE];
    for i in 0..BALLAST_OBJECTS {
        let (status, body) = s3(through, "PUT", &format!("/{BALLAST}/b{i:03}"), "", &ballast);
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    }

    let mut cfg = LoadConfig::new(
        Workload::Mixed,
        format!("http://{}", proxy.local_addr()),
        Credentials::new(KEY.0, KEY.1),
    );
    cfg.runtime = runtime;
    cfg.threads = 1;
    cfg.progress = ProgressMode::Off;
    cfg.concurrency = 4;
    cfg.size = SizeSpec::LogUniform {
        min: 1 << 10,
        max: 48 << 10,
    };
    cfg.objects = 60;
    // Stopped once the shape has changed; the duration only bounds a run that hangs.
    cfg.duration = Some(Duration::from_secs(300));
    cfg.retries = 8;
    cfg.seed = SEED;
    cfg.verify = true;
    // The objects stay, to be checked on their owners.
    cfg.cleanup = false;
    let control = Arc::new(RunControl::new());
    let stop = control.clone();
    let load = std::thread::spawn(move || run_controlled(cfg, true, control));
    // Before: the load is served under the first layout.
    let mark = answered();
    crate::wait_until("operations before the new layout", WITHIN, || {
        answered() >= mark + OPS_AROUND
    });

    // The new layout, the old one drained; the load is served under it before the moves.
    let drained = config(runtime, &addrs, &all, after, before, 2);
    *current.lock().unwrap() = drained.clone();
    let changed = proxy.reload().expect("the new layout applies");
    assert!(changed.contains("layout: 1 -> 2"), "{changed}");
    let mark = answered();
    crate::wait_until("operations under the new layout", WITHIN, || {
        answered() >= mark + OPS_AROUND
    });
    // During: the moves, paced by a bandwidth bound so that they take a while (a burst of 16
    // KiB, then 64 KiB/s: the ballast alone, about 384 KiB to move, takes about 6 s), must
    // interleave with the load: after the first move, operations answered and requests to the
    // moving node, then more moves.
    let progress = Arc::new(Progress::default());
    let mut paced = drained.clone();
    paced.buffer_size = 16 << 10;
    let opts = RebalanceOptions {
        max_bandwidth: Some(RATE),
        ..RebalanceOptions::default()
    };
    let moves = {
        let progress = progress.clone();
        std::thread::spawn(move || rebalance_with(paced, opts, progress))
    };
    let moved = || progress.moved_objects.load(Ordering::Relaxed);
    crate::wait_until("the first move", WITHIN, || {
        moved() >= 1 || moves.is_finished()
    });
    let (first, mark, to_moving) = (moved(), answered(), moving());
    crate::wait_until(
        "operations and requests to the moving node during the moves",
        WITHIN,
        || (answered() >= mark + OPS_AROUND && moving() > to_moving) || moves.is_finished(),
    );
    let (during, at) = (answered() - mark, moved());
    let report = moves.join().unwrap().expect("the rebalance runs");
    assert_eq!(report.errors, 0, "{:?}", report.error_messages);
    assert!(
        first >= 1 && during >= OPS_AROUND && at < report.moved_objects,
        "the moves did not interleave with the load: {during} operations answered from move \
         {first} to move {at} of {}:\n{}",
        report.moved_objects,
        report.summary()
    );
    assert!(report.previous_layouts_removable(), "{}", report.summary());
    // The old layout goes, and the backends out of the new one; the load goes on.
    *current.lock().unwrap() = config(runtime, &addrs, after, after, &[], 2);
    proxy.reload().expect("dropping the old layout applies");
    let mark = answered();
    crate::wait_until("operations after the old layout is gone", WITHIN, || {
        answered() >= mark + OPS_AROUND
    });
    stop.stop("the shape has changed");

    let run = load.join().unwrap().expect("the run");
    let summary = run.summary();
    crate::assert_no_failed_operations(&run);
    for op in [OpKind::Get, OpKind::Put, OpKind::Delete] {
        assert!(run.op(op).is_some_and(|s| s.ops > 0), "no {op}:\n{summary}");
    }
    assert!(
        run.notes
            .iter()
            .any(|n| n.contains("the shape has changed")),
        "the run ended before the shape had changed: {:?}\n{summary}",
        run.notes
    );
    eprintln!(
        "{} moved at {} KiB/s; {during} operations answered from move {first} to move {at}",
        report.moved_objects,
        RATE >> 10
    );
    proxy.stop();
    let objects = every_object_on_its_owner(&addrs, after);
    assert!(objects > 0);
    for n in nodes {
        n.stop();
    }
}

on_both_runtimes!(
    adding_a_fourth_node_under_load,
    draining_a_node_away_under_load
);

fn adding_a_fourth_node_under_load(runtime: RuntimeKind) {
    let shape = Shape {
        nodes: 4,
        before: vec![0, 1, 2],
        after: vec![0, 1, 2, 3],
    };
    change_shape_under_load(runtime, &shape);
}

fn draining_a_node_away_under_load(runtime: RuntimeKind) {
    let shape = Shape {
        nodes: 4,
        before: vec![0, 1, 2, 3],
        after: vec![0, 1, 2],
    };
    change_shape_under_load(runtime, &shape);
}
