//! The proxy reaching its backends over TLS (`https://` backend URLs), on both runtimes:
//! Ferry nodes serving HTTPS with a certificate made here, trusted through the backend's
//! `ca_cert`, in passthrough and re-sign modes (PUT, GET, multipart, list, copies between
//! backends, SSE-C without `--allow-sse-c-over-http`); a backend whose certificate is not
//! trusted is down (503, nothing stored) until `insecure = true`; a backend named by host gets
//! the name as SNI and its certificate checked against it; and a non-Ferry S3 server, moto,
//! over TLS in re-sign mode.

use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use ferry_core::place::Placement;
use ferry_server::proxy::AuthMode;
use ferry_server::{
    BackendConfig, NodeConfig, NodeHandle, ProxyConfig, ProxyHandle, RuntimeKind, start_node,
    start_proxy,
};

use crate::proxy_tls::{TestCert, https_client, s3_round_trips, self_signed, self_signed_for};
use crate::support::http::{Client as HttpClient, plain_get};
use crate::support::moto::Moto;
use crate::support::node::{MIN_PART, node_config};
use crate::support::process::{KEY_ENV, ready_addr, spawn_ferry, stop};
use crate::support::sdk;
use crate::support::{ACCESS_KEY, SECRET_KEY};

/// A node serving HTTPS with `cert`, on a data directory of its own.
struct TlsNode {
    handle: Option<NodeHandle>,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl TlsNode {
    fn start(rt: RuntimeKind, cert: &TestCert) -> Self {
        Self::start_with(rt, cert, |_| {})
    }

    fn start_with(rt: RuntimeKind, cert: &TestCert, tweak: impl FnOnce(&mut NodeConfig)) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut cfg = node_config(dir.path(), rt);
        cfg.fsync = false;
        cfg.threads = 1;
        cfg.min_part_size = MIN_PART;
        cfg.tls = Some(cert.files.clone());
        // SSE-C keys are taken because the connection is TLS, not by this testing option.
        cfg.allow_sse_c_over_http = false;
        tweak(&mut cfg);
        let handle = start_node(cfg).expect("node starts");
        Self {
            addr: handle.local_addr(),
            handle: Some(handle),
            _dir: dir,
        }
    }
}

impl Drop for TlsNode {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            h.stop();
        }
    }
}

/// A proxy on `rt` in front of `backends`.
fn proxy(rt: RuntimeKind, backends: Vec<BackendConfig>) -> ProxyHandle {
    proxy_with(rt, backends, |_| {})
}

/// [`proxy`], with `tweak` adjusting its configuration.
fn proxy_with(
    rt: RuntimeKind,
    backends: Vec<BackendConfig>,
    tweak: impl FnOnce(&mut ProxyConfig),
) -> ProxyHandle {
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
    cfg.buffer_size = 64 * 1024;
    tweak(&mut cfg);
    start_proxy(cfg).expect("proxy starts")
}

fn https_backend(id: &str, addr: SocketAddr, ca: Option<&Path>) -> BackendConfig {
    let mut b = BackendConfig::new(id, format!("https://{addr}"));
    b.ca_cert = ca.map(Path::to_path_buf);
    b
}

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

async fn get(c: &Client, bucket: &str, key: &str) -> Vec<u8> {
    let out = c.get_object().bucket(bucket).key(key).send().await;
    let out = out.unwrap_or_else(|e| panic!("GET {bucket}/{key}: {}", sdk::show(&e)));
    sdk::body_bytes(out.body).await
}

/// Two TLS nodes behind a plain-HTTP proxy, `auth` towards them.
fn tls_nodes(rt: RuntimeKind, auth: AuthMode) {
    let cert = self_signed();
    let nodes = [TlsNode::start(rt, &cert), TlsNode::start(rt, &cert)];
    let backends: Vec<BackendConfig> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut b = https_backend(&format!("node-{i}"), n.addr, Some(&cert.files.cert));
            b.auth = auth;
            b
        })
        .collect();
    let placement = Placement::new(&[("node-0", 1), ("node-1", 1)]).unwrap();
    let p = proxy(rt, backends);
    sdk::block_on(async {
        let c = sdk::client(p.local_addr());
        // PUT, GET, multipart, list (bucket "tls").
        s3_round_trips(&c).await;

        // Copies between the two backends, both ways, made by the proxy over TLS.
        let src_node = placement.pick("tls", "small");
        let other = (0..)
            .map(|i| format!("copy-{i}"))
            .find(|k| placement.pick("tls", k) != src_node)
            .unwrap();
        c.copy_object()
            .bucket("tls")
            .key(&other)
            .copy_source("tls/small")
            .send()
            .await
            .unwrap_or_else(|e| panic!("copy: {}", sdk::show(&e)));
        let small = get(&c, "tls", "small").await;
        assert!(get(&c, "tls", &other).await == small, "copy differs");
        let back = (0..)
            .map(|i| format!("back-{i}"))
            .find(|k| placement.pick("tls", k) == src_node)
            .unwrap();
        c.copy_object()
            .bucket("tls")
            .key(&back)
            .copy_source(format!("tls/{other}"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("copy back: {}", sdk::show(&e)));
        assert!(get(&c, "tls", &back).await == small, "copy back differs");

        // Each node holds what placement gave it: the proxy reached both over TLS.
        for (i, n) in nodes.iter().enumerate() {
            let direct = https_client(n.addr, Some(&cert.pem));
            let list = direct.list_objects_v2().bucket("tls").send().await.unwrap();
            for key in list.contents().iter().filter_map(|o| o.key()) {
                assert_eq!(placement.pick("tls", key), i, "{key} on node {i}");
            }
        }

        // SSE-C from a client on plain HTTP: refused, as AWS refuses it, though the hop to the
        // nodes is TLS (the nodes go by the proxy's sealed word on its client's connection;
        // end to end over TLS it works: `sse_c_through_the_clusters_proxy`).
        let (key, key_md5) = sse_c_key();
        let r = c
            .put_object()
            .bucket("tls")
            .key("sse-c")
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&key)
            .sse_customer_key_md5(&key_md5)
            .body(ByteStream::from_static(b"v"))
            .send()
            .await;
        sdk::assert_error(r, 400, Some("InvalidRequest"));
    });
    p.stop();
}

#[test]
fn passthrough_to_tls_nodes_on_tokio() {
    tls_nodes(RuntimeKind::Tokio, AuthMode::Passthrough);
}

#[test]
fn passthrough_to_tls_nodes_on_smol() {
    tls_nodes(RuntimeKind::Smol, AuthMode::Passthrough);
}

#[test]
fn resign_to_tls_nodes_on_tokio() {
    tls_nodes(RuntimeKind::Tokio, AuthMode::Resign);
}

#[test]
fn resign_to_tls_nodes_on_smol() {
    tls_nodes(RuntimeKind::Smol, AuthMode::Resign);
}

/// The SSE-C key of the tests, and its MD5 (both base64).
fn sse_c_key() -> (String, String) {
    let key = [7u8; 32];
    (sdk::b64(&key), sdk::b64(&ferry_core::md5::md5(&key)))
}

/// An SSE-C PUT into `bucket`, read back with the key; a GET without it is refused.
async fn sse_c_round_trip(c: &Client, bucket: &str) {
    let (key, key_md5) = sse_c_key();
    let secret = data(200_000, 3);
    c.put_object()
        .bucket(bucket)
        .key("sse-c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&key)
        .sse_customer_key_md5(&key_md5)
        .body(ByteStream::from(secret.clone()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("SSE-C PUT: {}", sdk::show(&e)));
    let got = c
        .get_object()
        .bucket(bucket)
        .key("sse-c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&key)
        .sse_customer_key_md5(&key_md5)
        .send()
        .await
        .unwrap_or_else(|e| panic!("SSE-C GET: {}", sdk::show(&e)));
    assert!(
        sdk::body_bytes(got.body).await == secret,
        "SSE-C GET differs"
    );
    let r = c.get_object().bucket(bucket).key("sse-c").send().await;
    sdk::assert_error(r, 400, Some("InvalidRequest"));
}

/// Nodes go by the proxy's sealed word on the client's connection (the cluster key, which
/// every test node has): over TLS end to end (client to proxy, proxy to nodes) SSE-C works; a
/// client on plain HTTP to a proxy is refused as AWS refuses it, though the hop to the nodes is
/// TLS.
fn sse_c_through_the_clusters_proxy(rt: RuntimeKind) {
    let cert = self_signed();
    let nodes = [TlsNode::start(rt, &cert), TlsNode::start(rt, &cert)];
    let backends: Vec<BackendConfig> = (0..)
        .zip(&nodes)
        .map(|(i, n)| https_backend(&format!("node-{i}"), n.addr, Some(&cert.files.cert)))
        .collect();
    let tls_proxy = proxy_with(rt, backends.clone(), |c| c.tls = Some(cert.files.clone()));
    let plain_proxy = proxy(rt, backends);
    sdk::block_on(async {
        let c = https_client(tls_proxy.local_addr(), Some(&cert.pem));
        c.create_bucket().bucket("trusted").send().await.unwrap();
        sse_c_round_trip(&c, "trusted").await;

        let plain = sdk::client(plain_proxy.local_addr());
        let (key, key_md5) = sse_c_key();
        let r = plain
            .put_object()
            .bucket("trusted")
            .key("over-http")
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&key)
            .sse_customer_key_md5(&key_md5)
            .body(ByteStream::from_static(b"v"))
            .send()
            .await;
        sdk::assert_error(r, 400, Some("InvalidRequest"));
        let r = c
            .head_object()
            .bucket("trusted")
            .key("over-http")
            .send()
            .await;
        assert_eq!(sdk::status_of(&r.unwrap_err()), Some(404));
    });
    tls_proxy.stop();
    plain_proxy.stop();
}

#[test]
fn sse_c_through_the_clusters_proxy_on_tokio() {
    sse_c_through_the_clusters_proxy(RuntimeKind::Tokio);
}

#[test]
fn sse_c_through_the_clusters_proxy_on_smol() {
    sse_c_through_the_clusters_proxy(RuntimeKind::Smol);
}

/// A backend whose certificate the proxy does not trust is down: 503, nothing stored, and no
/// certificate detail in the answer. `insecure = true` reaches it.
fn untrusted_backend(rt: RuntimeKind) {
    let cert = self_signed();
    let node = TlsNode::start(rt, &cert);
    let untrusting = proxy(rt, vec![https_backend("n", node.addr, None)]);
    let direct = https_client(node.addr, Some(&cert.pem));
    sdk::block_on(async {
        let c = sdk::client(untrusting.local_addr());
        for _ in 0..3 {
            let r = c.create_bucket().bucket("untrusted").send().await;
            let e = r.unwrap_err();
            assert_eq!(sdk::status_of(&e), Some(503));
            let shown = sdk::show(&e);
            assert!(!shown.contains("UnknownIssuer"), "{shown}");
            assert!(
                !shown.to_ascii_lowercase().contains("certificate"),
                "{shown}"
            );
        }
        let r = c
            .put_object()
            .bucket("untrusted")
            .key("k")
            .body(ByteStream::from_static(b"v"))
            .send()
            .await;
        assert_eq!(sdk::status_of(&r.unwrap_err()), Some(503));
        let buckets = direct.list_buckets().send().await.unwrap();
        assert!(buckets.buckets().is_empty(), "{buckets:?}");
    });
    untrusting.stop();

    let mut b = https_backend("n", node.addr, None);
    b.insecure = true;
    let insecure = proxy(rt, vec![b]);
    sdk::block_on(async {
        let c = sdk::client(insecure.local_addr());
        c.create_bucket().bucket("insecure").send().await.unwrap();
        c.put_object()
            .bucket("insecure")
            .key("k")
            .body(ByteStream::from_static(b"v"))
            .send()
            .await
            .unwrap();
        for _ in 0..4 {
            assert_eq!(get(&c, "insecure", "k").await, b"v");
        }
        assert_eq!(get(&direct, "insecure", "k").await, b"v");
    });
    // The TLS connections were kept alive and reused: far fewer connects than requests.
    let metrics = plain_get(insecure.admin_addr().unwrap(), "/metrics").text();
    let counter = |name: &str| -> u64 {
        let prefix = format!("{name}{{backend=\"n\"}} ");
        metrics
            .lines()
            .find_map(|l| {
                l.split_once(&prefix)
                    .map(|(_, v)| v.trim().parse().unwrap())
            })
            .unwrap_or_else(|| panic!("no {name} in {metrics}"))
    };
    let (requests, connects) = (
        counter("backend_requests_total"),
        counter("backend_connects_total"),
    );
    assert!(requests >= 6 && connects * 2 <= requests, "{metrics}");
    insecure.stop();
}

#[test]
fn untrusted_backend_on_tokio() {
    untrusted_backend(RuntimeKind::Tokio);
}

#[test]
fn untrusted_backend_on_smol() {
    untrusted_backend(RuntimeKind::Smol);
}

/// A TCP relay to `to` that reads the server name (SNI) of each TLS ClientHello passing
/// through it: what name a client sent, seen from outside the client.
struct SniRelay {
    addr: SocketAddr,
    names: Arc<Mutex<Vec<Option<String>>>>,
    stop: Arc<AtomicBool>,
    accepting: Option<std::thread::JoinHandle<()>>,
}

impl SniRelay {
    /// A relay on the first address `localhost` resolves to (the one the proxy will use).
    fn start(to: SocketAddr) -> Self {
        let local = ("localhost", 0).to_socket_addrs().unwrap().next().unwrap();
        let listener = TcpListener::bind(local).unwrap();
        let addr = listener.local_addr().unwrap();
        let names = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let accepting = {
            let (names, stop) = (names.clone(), stop.clone());
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let Ok(conn) = conn else { continue };
                    let names = names.clone();
                    std::thread::spawn(move || Self::relay(conn, to, &names));
                }
            })
        };
        Self {
            addr,
            names,
            stop,
            accepting: Some(accepting),
        }
    }

    /// Read the ClientHello, note its SNI, then copy both ways until either side closes.
    fn relay(mut client: TcpStream, to: SocketAddr, names: &Mutex<Vec<Option<String>>>) {
        use std::io::{Read as _, Write as _};
        let Ok(mut server) = TcpStream::connect(to) else {
            return;
        };
        let mut acceptor = ferry_net::rustls::server::Acceptor::default();
        let mut hello = Vec::new();
        let mut chunk = [0u8; 4096];
        let name = loop {
            let n = match client.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            hello.extend_from_slice(&chunk[..n]);
            if acceptor.read_tls(&mut &chunk[..n]).is_err() {
                return;
            }
            match acceptor.accept() {
                Ok(Some(accepted)) => {
                    break accepted.client_hello().server_name().map(str::to_owned);
                }
                Ok(None) => {}
                Err(_) => return,
            }
        };
        names.lock().unwrap().push(name);
        if server.write_all(&hello).is_err() {
            return;
        }
        let (Ok(mut c2), Ok(mut s2)) = (client.try_clone(), server.try_clone()) else {
            return;
        };
        let back = std::thread::spawn(move || {
            let _ = std::io::copy(&mut s2, &mut c2);
            let _ = c2.shutdown(Shutdown::Both);
        });
        let _ = std::io::copy(&mut client, &mut server);
        let _ = server.shutdown(Shutdown::Both);
        let _ = back.join();
    }

    /// The server names sent so far, one per connection (`None`: no SNI).
    fn names(&self) -> Vec<Option<String>> {
        self.names.lock().unwrap().clone()
    }
}

impl Drop for SniRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.accepting.take() {
            let _ = t.join();
        }
    }
}

/// A backend named by host (`https://localhost:PORT`): the proxy sends the name as SNI and
/// checks the certificate against it — a certificate for `localhost` alone (no IP address) is
/// trusted, one for another name is not (503, nothing stored), whatever the address.
fn a_backend_by_host_name(rt: RuntimeKind) {
    let good = self_signed_for(&["localhost"]);
    let node = TlsNode::start(rt, &good);
    let relay = SniRelay::start(node.addr);
    let by_name = |relay: &SniRelay, ca: &Path| {
        let mut b = BackendConfig::new("n", format!("https://localhost:{}", relay.addr.port()));
        b.ca_cert = Some(ca.to_path_buf());
        b
    };
    let p = proxy(rt, vec![by_name(&relay, &good.files.cert)]);
    sdk::block_on(async {
        let c = sdk::client(p.local_addr());
        c.create_bucket()
            .bucket("named")
            .send()
            .await
            .unwrap_or_else(|e| panic!("create: {}", sdk::show(&e)));
        let body = data(70_000, 3);
        c.put_object()
            .bucket("named")
            .key("k")
            .body(ByteStream::from(body.clone()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("PUT: {}", sdk::show(&e)));
        assert!(get(&c, "named", "k").await == body, "GET differs");
    });
    p.stop();
    let names = relay.names();
    assert!(
        !names.is_empty(),
        "no TLS connection went through the relay"
    );
    assert!(
        names.iter().all(|n| n.as_deref() == Some("localhost")),
        "{names:?}"
    );

    // The same address, trusting a certificate for another name only.
    let other = self_signed_for(&["other.example"]);
    let wrong_node = TlsNode::start(rt, &other);
    let wrong_relay = SniRelay::start(wrong_node.addr);
    let b = by_name(&wrong_relay, &other.files.cert);
    // No waiting for a backend that will not come up.
    let p = proxy_with(rt, vec![b], |cfg| cfg.retry_window = Duration::ZERO);
    sdk::block_on(async {
        let c = sdk::client(p.local_addr());
        let r = c.create_bucket().bucket("wrong").send().await;
        assert_eq!(sdk::status_of(&r.unwrap_err()), Some(503));
    });
    // The 503 may come before the proxy's first check of the backend has connected (with no
    // retry window, a backend not yet seen up is refused at once): wait for that handshake.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while wrong_relay.names().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the proxy never tried the backend"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    p.stop();
    // Nothing reached that node: seen through a proxy that checks no certificate.
    let mut lax = https_backend("n", wrong_node.addr, None);
    lax.insecure = true;
    let p = proxy(rt, vec![lax]);
    sdk::block_on(async {
        let buckets = sdk::client(p.local_addr()).list_buckets().send().await;
        let buckets = buckets.unwrap_or_else(|e| panic!("list: {}", sdk::show(&e)));
        assert!(buckets.buckets().is_empty(), "{buckets:?}");
    });
    p.stop();
    let names = wrong_relay.names();
    assert!(
        !names.is_empty() && names.iter().all(|n| n.as_deref() == Some("localhost")),
        "{names:?}"
    );
}

#[test]
fn a_backend_by_host_name_on_tokio() {
    a_backend_by_host_name(RuntimeKind::Tokio);
}

#[test]
fn a_backend_by_host_name_on_smol() {
    a_backend_by_host_name(RuntimeKind::Smol);
}

/// A certificate that does not name the backend's host (only `localhost`, the URL says
/// 127.0.0.1) is refused even with the right `ca_cert`: the IP address is checked.
#[test]
fn a_certificate_for_another_name_is_refused() {
    let test_cert = self_signed_for(&["localhost"]);
    let node = TlsNode::start(RuntimeKind::Tokio, &test_cert);
    let p = proxy(
        RuntimeKind::Tokio,
        vec![https_backend("n", node.addr, Some(&test_cert.files.cert))],
    );
    sdk::block_on(async {
        let c = sdk::client(p.local_addr());
        let r = c.create_bucket().bucket("named").send().await;
        assert_eq!(sdk::status_of(&r.unwrap_err()), Some(503));
    });
    p.stop();
}

fn resign_to_moto_over_tls(rt: RuntimeKind) {
    let cert = self_signed();
    let moto = Moto::start_tls(&cert.files.cert, &cert.files.key);
    let p = proxy(rt, vec![moto.backend("moto", Some(&cert.files.cert))]);
    sdk::block_on(async {
        let c = sdk::client(p.local_addr());
        c.create_bucket()
            .bucket("moto-tls")
            .send()
            .await
            .unwrap_or_else(|e| panic!("create: {}", sdk::show(&e)));
        let body = data(300_000, 9);
        for key in ["a", "b"] {
            c.put_object()
                .bucket("moto-tls")
                .key(key)
                .body(ByteStream::from(body.clone()))
                .send()
                .await
                .unwrap_or_else(|e| panic!("PUT {key}: {}", sdk::show(&e)));
        }
        assert!(get(&c, "moto-tls", "a").await == body, "GET differs");
        let list = c.list_objects_v2().bucket("moto-tls").send().await.unwrap();
        let keys: Vec<&str> = list.contents().iter().filter_map(|o| o.key()).collect();
        assert_eq!(keys, ["a", "b"]);
    });
    p.stop();
}

#[test]
fn resign_to_moto_over_tls_on_tokio() {
    resign_to_moto_over_tls(RuntimeKind::Tokio);
}

#[test]
fn resign_to_moto_over_tls_on_smol() {
    resign_to_moto_over_tls(RuntimeKind::Smol);
}

/// The `ferry` binary with an untrusted backend: the reason is logged when it goes down, not
/// once per request; an `insecure` backend is a warning at start.
#[test]
fn an_untrusted_backend_is_logged_once() {
    let cert = self_signed();
    let node = TlsNode::start(RuntimeKind::Tokio, &cert);
    let bad = format!("bad=https://{}", node.addr);
    let lax = format!("lax=https://{},insecure=true", node.addr);
    let mut child = spawn_ferry(
        &[
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "none",
            "--backend",
            &bad,
            "--backend",
            &lax,
            "--log-format",
            "json",
        ],
        &KEY_ENV,
    );
    let addr = ready_addr(&mut child, "ferry proxy listening on http://");
    let mut c = HttpClient::connect(addr);
    for i in 0..8 {
        // CreateBucket goes to every backend: the untrusted one fails it.
        let r = c.put(&format!("/bucket-{i}"), b"");
        r.expect_error(503, "SlowDown");
        assert!(!r.text().contains("UnknownIssuer"), "{}", r.text());
    }
    drop(c);
    let stderr = stop(child, "-TERM");
    let events: Vec<serde_json::Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let down: Vec<_> = events
        .iter()
        .filter(|e| e["message"] == "backend down" && e["backend"] == "bad")
        .collect();
    assert_eq!(down.len(), 1, "{stderr}");
    let reason = down[0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("UnknownIssuer"), "{reason}");
    let mentions = stderr
        .lines()
        .filter(|l| l.contains("UnknownIssuer"))
        .count();
    assert!(mentions < 4, "logged per request: {stderr}");
    // Nor are its 503s, each request's (at `debug`: the transition was logged).
    let per_request = events
        .iter()
        .filter(|e| e["level"] == "WARN" && e["message"] == "request failed")
        .count();
    assert_eq!(per_request, 0, "503s logged per request at warn: {stderr}");
    assert!(
        events.iter().any(|e| e["backend"] == "lax"
            && e["level"] == "WARN"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("insecure"))),
        "{stderr}"
    );
    assert!(
        !events
            .iter()
            .any(|e| e["message"] == "backend down" && e["backend"] == "lax"),
        "{stderr}"
    );
}

/// A `ca_cert` that cannot be read or holds no certificate stops the start, naming the backend.
#[test]
fn an_unusable_ca_cert_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let start = |ca: &Path| {
        let mut b = BackendConfig::new("n", "https://127.0.0.1:1");
        b.ca_cert = Some(ca.to_path_buf());
        let mut cfg = ProxyConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            vec![b],
            ACCESS_KEY,
            SECRET_KEY,
        );
        cfg.cluster_keys = Some(crate::support::cluster_keys());
        start_proxy(cfg).map(|p| p.stop()).unwrap_err().to_string()
    };
    let missing = dir.path().join("missing.pem");
    let err = start(&missing);
    assert!(
        err.contains("missing.pem") && err.contains("\"n\""),
        "{err}"
    );
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "no certificate here").unwrap();
    let err = start(&empty);
    assert!(err.contains("CA certificate"), "{err}");
}
