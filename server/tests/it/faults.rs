//! Faults against real processes on 127.0.0.1, and what must hold through them: nothing
//! acknowledged is lost, the failing part answers quickly with a clear error, the rest keeps
//! serving. A storage node killed with `kill -9` under load behind the proxy (and restarted
//! without restarting the proxy); a backend that accepts connections and never answers; a busy
//! backend whose connections are all in use (requests wait for one instead of failing).
//!
//! A full disk and trickling clients have their tests beside the code they exercise
//! (`store_full_disk`, `limits`).

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferry_core::place::Placement;
use ferry_server::{BackendConfig, ProxyConfig, RuntimeKind, start_proxy};

use crate::support::http::{Client, Response, metrics_after, plain_get, wait_until};
use crate::support::process::{KEY_ENV, ready_addr, spawn_ferry};
use crate::support::proxy::{Auth, Setup};
use crate::support::store::random_bytes;
use crate::support::{ACCESS_KEY, SECRET_KEY};

/// How long a single request may take before the test gives up on it: a bound, so that a hang
/// fails the test instead of stalling it.
const REQUEST_BOUND: Duration = Duration::from_secs(10);

/// A `ferry node` process (fsync on: what it acknowledges must survive `kill -9`).
struct NodeProcess {
    child: Child,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl NodeProcess {
    fn start(dir: tempfile::TempDir, listen: &str) -> Self {
        let data = dir.path().to_str().expect("utf-8 path").to_owned();
        let mut child = spawn_ferry(
            &[
                "node",
                "--data",
                &data,
                "--listen",
                listen,
                "--admin-listen",
                "none",
            ],
            &KEY_ENV,
        );
        let addr = ready_addr(&mut child, "ferry node listening on http://");
        Self { child, addr, dir }
    }

    fn kill9(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.dir
    }
}

fn client_of(addr: SocketAddr) -> Client {
    let c = Client::connect(addr);
    c.stream
        .set_read_timeout(Some(REQUEST_BOUND))
        .expect("read timeout");
    c
}

fn is_503(r: &Response) -> bool {
    r.status == 503 && r.error_code().as_deref() == Some("SlowDown")
}

/// Three node processes behind the proxy; writers PUT under load while node 1 is killed with
/// `kill -9`: its keys answer 503 (never a hang, never another error), the other nodes' keys
/// keep working, and after it restarts on the same port and data the proxy serves it again
/// without a restart; every acknowledged object reads back byte for byte.
fn node_killed_under_load(rt: RuntimeKind) {
    let mut nodes: Vec<Option<NodeProcess>> = (0..3)
        .map(|_| {
            Some(NodeProcess::start(
                tempfile::tempdir().unwrap(),
                "127.0.0.1:0",
            ))
        })
        .collect();
    let addrs: Vec<SocketAddr> = nodes.iter().flatten().map(|n| n.addr).collect();
    let ids = ["node-1", "node-2", "node-3"];
    let backends = ids
        .iter()
        .zip(&addrs)
        .map(|(id, a)| BackendConfig::new(*id, format!("http://{a}")))
        .collect();
    let mut cfg = ProxyConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        backends,
        ACCESS_KEY,
        SECRET_KEY,
    );
    cfg.cluster_keys = Some(crate::support::cluster_keys());
    cfg.runtime = rt;
    cfg.threads = 2;
    cfg.health_interval = Duration::from_millis(200);
    let proxy = start_proxy(cfg).expect("proxy");
    let placement = Placement::new(&ids.map(|i| (i, 1u32))).unwrap();
    let mut c = client_of(proxy.local_addr());
    assert_eq!(c.put("/faults", b"").status, 200);

    // Writers: distinct keys, each remembering what was acknowledged.
    let acked: Arc<Mutex<BTreeMap<String, Vec<u8>>>> = Arc::default();
    let unexpected: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (acked, unexpected, stop) = (acked.clone(), unexpected.clone(), stop.clone());
            let addr = proxy.local_addr();
            std::thread::spawn(move || {
                let mut c = client_of(addr);
                for i in 0u64.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let key = format!("w{w}-{i}");
                    let body = random_bytes(w * 1_000_000 + i, 16 * 1024 + (i as usize % 7) * 1000);
                    let r = c.put(&format!("/faults/{key}"), &body);
                    match r.status {
                        200 => {
                            acked.lock().unwrap().insert(key, body);
                        }
                        // The killed node's keys: the proxy says so at once.
                        _ if is_503(&r) => {}
                        _ => unexpected.lock().unwrap().push(format!("{key}: {r:?}")),
                    }
                    if r.header("connection") == Some("close") {
                        c = client_of(addr);
                    }
                }
            })
        })
        .collect();
    let acked_count = || acked.lock().unwrap().len();
    // Some writes on every node before the fault.
    wait_until(
        "40 writes acknowledged before the kill",
        Duration::from_secs(60),
        || acked_count() >= 40,
    );
    let dir = nodes[0].take().expect("node 1").kill9();
    let before_kill = acked_count();
    // Keys of node 1 answer 503; keys of the others are written and read.
    let on = |n: usize, p: &str| {
        (0..)
            .map(|i| format!("{p}{i}"))
            .find(|k| placement.pick("faults", k) == n)
            .unwrap()
    };
    let dead_key = on(0, "dead");
    let r = c.get(&format!("/faults/{dead_key}"));
    assert!(is_503(&r), "{r:?}");
    for n in [1, 2] {
        let k = on(n, "alive");
        assert_eq!(c.put(&format!("/faults/{k}"), b"still here").status, 200);
        assert_eq!(c.get(&format!("/faults/{k}")).body, b"still here");
    }
    wait_until(
        "40 more writes acknowledged with node 1 down",
        Duration::from_secs(60),
        || acked_count() >= before_kill + 40,
    );
    // Restarted on its port and data: served again, the proxy untouched.
    nodes[0] = Some(NodeProcess::start(dir, &addrs[0].to_string()));
    let mut served = false;
    for _ in 0..200 {
        let r = c.put(&format!("/faults/{dead_key}"), b"back");
        if r.status == 200 {
            served = true;
            break;
        }
        assert!(is_503(&r), "{r:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(served, "node 1 never served again");
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().expect("writer");
    }
    let unexpected = unexpected.lock().unwrap();
    assert!(unexpected.is_empty(), "{unexpected:?}");
    let acked = acked.lock().unwrap();
    let on_killed = acked
        .keys()
        .filter(|k| placement.pick("faults", k) == 0)
        .count();
    assert!(on_killed > 0, "no acknowledged write on the killed node");
    for (key, body) in acked.iter() {
        let r = c.get(&format!("/faults/{key}"));
        assert_eq!(r.status, 200, "{key}: {r:?}");
        assert!(r.body == *body, "{key}: {} bytes differ", body.len());
    }
    proxy.stop();
    for n in nodes.into_iter().flatten() {
        drop(n.kill9());
    }
}

#[test]
fn node_killed_under_load_tokio() {
    node_killed_under_load(RuntimeKind::Tokio);
}

#[test]
fn node_killed_under_load_smol() {
    node_killed_under_load(RuntimeKind::Smol);
}

/// A backend that accepts connections and never answers: its keys answer 503 within the
/// proxy's I/O timeout, and while such a request waits, the other backends' keys are served.
fn hung_backend(rt: RuntimeKind) {
    let hung = TcpListener::bind("127.0.0.1:0").unwrap();
    let hung_addr = hung.local_addr().unwrap();
    let held: Arc<Mutex<Vec<std::net::TcpStream>>> = Arc::default();
    let holder = {
        let held = held.clone();
        std::thread::spawn(move || {
            for s in hung.incoming().flatten() {
                held.lock().unwrap().push(s);
            }
        })
    };
    drop(holder);
    let s = Setup::start_with(rt, 2, Auth::Passthrough, |cfg| {
        cfg.backends
            .push(BackendConfig::new("hung", format!("http://{hung_addr}")));
        cfg.io_timeout = Duration::from_secs(1);
        // Probes would find it out on their own; this test is about the request path.
        cfg.health_interval = Duration::from_secs(3600);
    });
    let ids = [("node-1", 1u32), ("node-2", 1), ("hung", 1)];
    let placement = Placement::new(&ids).unwrap();
    let on = |n: usize, p: &str| {
        (0..)
            .map(|i| format!("{p}{i}"))
            .find(|k| placement.pick("hung-b", k) == n)
            .unwrap()
    };
    let mut c = client_of(s.addr);
    // CreateBucket needs every backend: create it on the two real nodes directly.
    for n in &s.nodes {
        assert_eq!(n.client().put("/hung-b", b"").status, 200);
    }
    let hung_key = on(2, "h");
    let waiting = {
        let addr = s.addr;
        std::thread::spawn(move || client_of(addr).get(&format!("/hung-b/{hung_key}")))
    };
    for n in [0, 1] {
        let k = on(n, "ok");
        assert_eq!(c.put(&format!("/hung-b/{k}"), b"served").status, 200);
        assert_eq!(c.get(&format!("/hung-b/{k}")).body, b"served");
    }
    let r = waiting.join().expect("the waiting request");
    assert!(is_503(&r), "{r:?}");
    assert!(
        !held.lock().unwrap().is_empty(),
        "the proxy reached the hung backend"
    );
}

#[test]
fn hung_backend_tokio() {
    hung_backend(RuntimeKind::Tokio);
}

#[test]
fn hung_backend_smol() {
    hung_backend(RuntimeKind::Smol);
}

/// With one connection allowed per backend, eight concurrent requests to one backend wait
/// for it in turn and all succeed; the queue shows in the proxy's metrics and the backend is
/// never marked down.
#[test]
fn busy_backend_queues() {
    let s = Setup::start_with(RuntimeKind::Tokio, 1, Auth::Passthrough, |cfg| {
        cfg.backend_max_connections = 1;
    });
    let mut c = client_of(s.addr);
    assert_eq!(c.put("/busy", b"").status, 200);
    let body = random_bytes(9, 256 * 1024);
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let (addr, body) = (s.addr, body.clone());
            std::thread::spawn(move || {
                let mut c = client_of(addr);
                let r = c.put(&format!("/busy/k{i}"), &body);
                assert_eq!(r.status, 200, "{r:?}");
                assert_eq!(c.get(&format!("/busy/k{i}")).body, body);
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client");
    }
    let m = metrics_after(s.admin(), "ferry_proxy", 17);
    let queued = m
        .lines()
        .find_map(|l| l.strip_prefix("ferry_proxy_backend_queued_total{backend=\"node-1\"} "))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("queued counter in\n{m}"));
    assert!(queued > 0, "{m}");
    assert!(
        m.contains("ferry_proxy_backend_marked_down_total{backend=\"node-1\"} 0"),
        "{m}"
    );
    assert_eq!(plain_get(s.admin(), "/readyz").status, 200);
}
